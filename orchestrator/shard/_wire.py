"""What crosses from the coordinator to a shard and back, as plain data.

The run spec goes to every shard field by field, read off ``dataclasses.fields(RunSpec)``:
each field is sent unless :data:`NOT_SENT` names it with the reason, so a field added to
:class:`RunSpec` reaches the shards without an edit here (and a test holds every field to
one of the two). The fault schedule travels as its entries' values, not as text to parse
again; the trace as its selection (nodes, slot window, kinds): a shard writes no file, it
hands its events to the coordinator. At the end of the run a shard's fault ledger comes
back as its books.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import astuple, fields
from typing import Any

from slotnet.fabric import FaultEvent, FaultLedger, FaultSchedule, LossWindow, MessageWindow, SpanFault

from ..engine._spec import RunSpec, TraceSpec

__all__ = ["FAULT_DERIVED", "FAULT_ENTRIES", "FAULT_SETTINGS", "NOT_SENT", "faults_from_wire", "faults_to_wire",
           "ledger_from_wire", "ledger_to_wire", "sent_fields", "spec_from_wire", "spec_to_wire"]

#: The fields of :class:`RunSpec` a shard is not sent, and why.
NOT_SENT = {
    "transport": "a factory of the coordinator's process; a spec with shards > 1 may not name one",
    "observer": "a shard always batches its events; the coordinator replays them",
    "shards": "a shard runs its share as one process",
    "broker": "the coordinator's connection; a shard is given its broker when it is started",
}

#: The entry class of each part of a :class:`FaultSchedule` that holds entries.
FAULT_ENTRIES: dict[str, type] = {"events": FaultEvent, "loss": LossWindow, "windows": MessageWindow, "spans": SpanFault}
#: The parts of a :class:`FaultSchedule` that are settings, not entries (sent as they are).
FAULT_SETTINGS = ("detect",)
#: The parts of a :class:`FaultSchedule` it derives from the others (not sent).
FAULT_DERIVED = ("by_slot", "_timelines")


def faults_to_wire(faults: FaultSchedule) -> dict[str, Any]:
    """The schedule as plain data: each entry's field values, and the detection setting."""
    out: dict[str, Any] = {part: [astuple(entry) for entry in getattr(faults, part)] for part in FAULT_ENTRIES}
    out.update({name: getattr(faults, name) for name in FAULT_SETTINGS})
    return out


def faults_from_wire(d: Mapping[str, Any]) -> FaultSchedule:
    """The schedule :func:`faults_to_wire` describes (equal to the one sent)."""
    fields: dict[str, Any] = {part: tuple(cls(*values) for values in d[part]) for part, cls in FAULT_ENTRIES.items()}
    fields.update({name: d[name] for name in FAULT_SETTINGS})
    return FaultSchedule(**fields)


def _trace_to_wire(trace: TraceSpec | None) -> dict[str, Any] | None:
    if trace is None:
        return None
    return {"nodes": None if trace.nodes is None else sorted(trace.nodes), "slots": trace.slots,
            "kinds": None if trace.kinds is None else sorted(trace.kinds)}


def _trace_from_wire(d: Mapping[str, Any] | None) -> TraceSpec | None:
    """The trace selection; no path (a shard writes no file)."""
    if d is None:
        return None
    return TraceSpec("", None if d["nodes"] is None else frozenset(d["nodes"]),
                     None if d["slots"] is None else (d["slots"][0], d["slots"][1]),
                     None if d["kinds"] is None else frozenset(d["kinds"]))


def _same(x: Any) -> Any:
    return x


#: How the fields that are not plain data travel: (to the wire, back).
_CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "params": (dict, dict),
    "load": (dict, dict),
    "faults": (faults_to_wire, faults_from_wire),
    "trace": (_trace_to_wire, _trace_from_wire),
}


def sent_fields() -> list[str]:
    """The fields of :class:`RunSpec` that go to shards, in declaration order."""
    return [f.name for f in fields(RunSpec) if f.name not in NOT_SENT]


def spec_to_wire(spec: RunSpec) -> dict[str, Any]:
    """What a shard needs of the spec: every field but those of :data:`NOT_SENT`."""
    return {name: _CODECS.get(name, (_same, _same))[0](getattr(spec, name)) for name in sent_fields()}


def spec_from_wire(d: Mapping[str, Any]) -> RunSpec:
    """The spec a shard runs (one process's share: the fields not sent keep their defaults)."""
    return RunSpec(**{name: _CODECS.get(name, (_same, _same))[1](d[name]) for name in sent_fields()})


def ledger_to_wire(ledger: FaultLedger) -> dict[str, dict[str, int]]:
    """A ledger's books as plain ``{cause: count}`` dicts (the avoidable sub-counts ride in ``lost``)."""
    return {book: dict(getattr(ledger, book)) for book in FaultLedger.__slots__}


def ledger_from_wire(books: Mapping[str, Mapping[str, int]]) -> FaultLedger:
    """The ledger :func:`ledger_to_wire` describes."""
    ledger = FaultLedger()
    for book, counts in books.items():
        for cause, n in counts.items():
            ledger.add(book, cause, n)
    return ledger
