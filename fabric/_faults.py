"""Fault schedules: registered fault kinds, parsed, validated, applied.

This module holds :class:`FaultSchedule` (parsing, validation, the failure-detection
timeline, the message pipeline's stages in their kinds' order); the entries, message
stages and verdicts are in :mod:`._fault_entries`, the registered kinds in
:mod:`._fault_kinds` (their names are re-exported here, so ``from ._faults import ...``
keeps working), and the pipeline that applies the verdicts in :mod:`._pipeline`.

A :class:`FaultSchedule` is part of a run spec: static data validated against the
topology before the run, plus deterministic decisions. Each fault kind is a registered
:class:`FaultKind` that parses its CLI text and JSON form, validates an entry, and
either acts on the network at a slot (*control* kinds: links, nodes, partitions, stalls
— applied by the orchestrator's injector through :class:`FaultTarget`) or judges
messages in flight (*message* kinds — applied by the transport as a pipeline of
:class:`MessageStage`). Random decisions hash ``(seed, slot, receiver, in_port, k)``
(salted per kind and window), so they depend neither on the order in which nodes run
nor on how nodes are spread over processes: message faults are judged where a message
is delivered, from the bytes it carries, so a sharded run judges them exactly as one
process does. Adding a fault kind is registering one more :class:`FaultKind`.

Entry syntax (CLI ``--fault`` or a JSON list in ``--faults FILE``)::

    link-down@SLOT:NODE:PORT     both directions of the link leave service at SLOT
    link-up@SLOT:NODE:PORT       ... and return at SLOT
    crash@SLOT:NODE              the node loses its state and stops at SLOT
    recover@SLOT:NODE            the node restarts from scratch at SLOT
    partition@FROM:TO:NODES      every link between NODES (0-31, 0,5,9, 0-3,8) and the
                                 other nodes is down in slots FROM..TO (both included)
    stall@FROM:TO:NODE           the node misses slots FROM..TO, its state kept
    loss=RATE[@FROM[-UNTIL]]     each message is lost with probability RATE
    dup=RATE[@...]               ... delivered twice (the copy follows on its link)
    delay=RATE:SLOTS[@...]       ... held back SLOTS extra slots
    corrupt=RATE[:undetected][@...]  ... has its bytes flipped on the wire
    detect=SLOTS|never           how long a node takes to see a dead port (default 1)

A message window ``@FROM-UNTIL`` covers slots ``FROM .. UNTIL-1`` (the slot a message
is sent in); ``@FROM`` runs to the end. JSON forms: ``{"kind": "link-down", "slot": 5,
"node": 3, "port": 1}``, ``{"kind": "loss", "rate": 0.01, "from": 0, "until": 100}``,
``{"kind": "delay", "rate": 0.1, "slots": 3}``, ``{"kind": "corrupt", "rate": 0.1,
"undetected": true}``, ``{"kind": "partition", "from": 10, "to": 20, "nodes": "0-31"}``
(or a list of node ids), ``{"kind": "stall", "from": 10, "to": 20, "node": 3}``,
``{"kind": "detect", "slots": 2}`` (or ``"never"``). Slots and nodes are JSON integers,
rates JSON numbers; any other field is refused.

What the message kinds model:

* ``dup``: the message is delivered on time, and a copy of it follows on the same link
  in the next slot the link carries nothing else (a spurious retransmission), so a
  link never hands its receiver more than its one unit per slot.
* ``delay``: the message is held at the receiving end of its link and handed over
  ``SLOTS`` slots late, in the first slot from then on in which its link carries
  nothing else (several held messages of one link go one per slot, oldest first). Link
  capacity is respected on the slot it is finally carried, so no receiver ever gets
  more than one unit per in-port and slot; the sender's capacity is not charged twice.
* ``corrupt``: frames carry a CRC-32 (added at send time, only in runs that schedule a
  corrupt fault); bytes are flipped on the wire, the receiver's check fails and the
  message is dropped as lost cause ``corrupt``.
* ``corrupt=RATE:undetected``: the bytes are garbled *before* the checksum is taken, so
  the link check passes and garbage reaches the receiving fabric. Its decode refuses
  the bytes (the garbling always leaves a malformed msgpack frame) and the fabric
  rejects the message before the node sees it: counted (lost cause ``undecodable``,
  corrupted ``undetected``) and traced, never a crash. The fabric rejects rather than
  hand the node a sentinel: a node would need code for a value that no scheme can act
  on, and a garbled message that still decoded to a well-formed, different message is
  not modelled (no receiver could tell it from a real one).

What the span kinds model:

* ``partition``: a link-level cut, both directions of every link between the set and
  the rest; messages on it are lost (cause ``partition``) as on a down link.
* ``stall``: the node is not woken in slots FROM..TO (a long pause: swapping, a GC, a
  hung process) but keeps its state, queues included, and its timers fire at TO+1. Its
  inbox is *lost* (cause ``stalled``) rather than kept: a stalled node reads nothing,
  and handing it FROM..TO's traffic at once when it resumes would give it up to
  TO-FROM+1 units per in-port in one slot, breaking the one-unit-per-link contract every
  scheme relies on (a deflection node has no buffer to absorb them). Its neighbours see
  the port to it dead, so a scheme that uses the failure detector stops sending to it.

A schedule is checked against the run before it starts: every entry names a real node
(and port) and lies inside the run, and the control events of each node and link
alternate as they must (a ``recover`` follows a ``crash`` of that node, a ``link-up`` a
``link-down`` of that link — from either end — and nothing goes down twice). A stall
needs its node up for the whole stall. Partitions combine with link faults: a link is
down while any of them holds it down.

Failure detection. The static schedule fixes, for every node and slot, which of its
ports are *dead* (the link is down, or the neighbour is crashed or stalled):
:meth:`FaultSchedule.port_timeline`. A node's context shows that state ``detect``
slots late (``detect=never``: every port always looks alive, the behaviour before
detection existed). A message lost on a port its sender's context already showed dead
is counted as *avoidable* (see :class:`~slotnet.fabric.FaultLedger`).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import FaultSpecError
from ._fault_entries import (
    Copy,
    FaultEvent,
    FaultTarget,
    Flip,
    Hold,
    Lose,
    LossStage,
    LossWindow,
    MessageStage,
    MessageWindow,
    SpanEdge,
    SpanFault,
    Verdict,
    WindowStage,
    fault_draw,
    loss_draw,
)
from ._fault_kinds import FAULT_KINDS, FaultKind, _check_fields, parse_nodes, register_fault_kind
from ._topology import Topology

__all__ = [
    "DEFAULT_DETECT",
    "FAULT_KINDS",
    "NOTE_CAUSES",
    "Copy",
    "FaultEvent",
    "FaultKind",
    "FaultSchedule",
    "FaultTarget",
    "Flip",
    "Hold",
    "Lose",
    "LossStage",
    "LossWindow",
    "MessageStage",
    "MessageWindow",
    "PortTimeline",
    "SpanEdge",
    "SpanFault",
    "Verdict",
    "WindowStage",
    "fault_draw",
    "loss_draw",
    "parse_nodes",
    "register_fault_kind",
]


#: Slots a node takes to see that a port died (or came back), unless the schedule says.
DEFAULT_DETECT = 1

#: Causes the transport reports through its loss callback that are not losses: a copy a
#: ``dup`` fault added, a message a ``delay`` fault held back (each kind's ``note_cause``).
NOTE_CAUSES = frozenset(k.note_cause for k in FAULT_KINDS.values() if k.note_cause)

class PortTimeline(dict[int, tuple[tuple[int, ...], tuple[int, ...]]]):
    """Per node, the slots at which its dead-port mask changes and the masks from then on.

    Built once per schedule and topology (:meth:`FaultSchedule.port_timeline`) and read by
    everyone who needs the schedule's view of dead ports: a node's context (through the
    failure detector's delay), the transport judging a loss, and ``explore``.
    """

    def dead_mask(self, node: int, slot: int) -> int:
        """The ports of ``node`` dead in ``slot`` (bit ``p`` for port ``p``), as the schedule fixes them."""
        line = self.get(node)
        if line is None:
            return 0
        i = bisect_right(line[0], slot) - 1
        return line[1][i] if i >= 0 else 0


def _detect_value(x: Any, where: str) -> int | None:
    """A detection delay: an integer >= 0, or None for ``never``."""
    if x is None or x == "never":
        return None
    if isinstance(x, str) and x.strip().isdigit():
        return int(x)
    if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
        return x
    raise FaultSpecError(f"{where}: detection delay must be a whole number of slots >= 0 or 'never', got {x!r}")


@dataclass(frozen=True)
class FaultSchedule:
    """Every fault of a run: timed control events, spans, message-fault windows, detection.

    ``detect`` is the slots a node takes to see a dead port (None: never).
    """

    events: tuple[FaultEvent, ...] = ()
    loss: tuple[LossWindow, ...] = ()
    windows: tuple[MessageWindow, ...] = ()
    spans: tuple[SpanFault, ...] = ()
    detect: int | None = DEFAULT_DETECT
    by_slot: dict[int, tuple[Any, ...]] = field(default_factory=dict, compare=False)
    _timelines: dict[str, PortTimeline] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for ev in self.events:
            if not isinstance(ev, FaultEvent) or FAULT_KINDS.get(ev.kind) is None or FAULT_KINDS[ev.kind].plane != "control":
                raise FaultSpecError(f"schedule entry {ev!r} is not a control fault event (known: "
                                     f"{', '.join(k for k, v in FAULT_KINDS.items() if v.plane == 'control')})")
        for sp in self.spans:
            if not isinstance(sp, SpanFault) or FAULT_KINDS.get(sp.kind) is None:
                raise FaultSpecError(f"schedule entry {sp!r} is not a partition or stall")
        for w in self.windows:
            if not isinstance(w, MessageWindow) or FAULT_KINDS.get(w.kind) is None:
                raise FaultSpecError(f"schedule entry {w!r} is not a message fault window")
        if self.detect is not None:
            _detect_value(self.detect, "schedule")
        marks: list[Any] = list(self.events)
        for sp in self.spans:
            marks += [SpanEdge(sp, sp.start, True), SpanEdge(sp, sp.end + 1, False)]
        grouped: dict[int, list[Any]] = {}
        for ev in sorted(marks, key=lambda e: (e.slot, FAULT_KINDS[e.kind].order, e.sort_key())):
            grouped.setdefault(ev.slot, []).append(ev)
        object.__setattr__(self, "by_slot", {s: tuple(v) for s, v in grouped.items()})

    @property
    def empty(self) -> bool:
        """No fault at all (the detection setting alone is no fault)."""
        return not self.events and not self.loss and not self.windows and not self.spans

    @property
    def checksums(self) -> bool:
        """Whether frames must carry a checksum (a corrupt fault is scheduled)."""
        return any(FAULT_KINDS[w.kind].checksums for w in self.windows)

    def message_stages(self) -> list[MessageStage]:
        """The transport's per-message pipeline: each message kind's stages (:meth:`FaultKind.stages`),
        the kinds in their :attr:`~FaultKind.order` (loss, corrupt, dup, delay).

        Each window after loss draws on a stream of its own (salted by kind and its place
        among the schedule's windows), so adding a window never changes another's draws.
        """
        stages: list[MessageStage] = []
        for kind in sorted((k for k in FAULT_KINDS.values() if k.plane == "message"), key=lambda k: k.order):
            entries = [(i, e) for i, e in enumerate(getattr(self, kind.bucket)) if e.kind == kind.name]
            if entries:
                stages += kind.stages(entries)
        return stages

    @classmethod
    def parse(cls, entries: Iterable[str] = (), file: str | Path | None = None,
              detect: int | str | None = "default") -> FaultSchedule:
        """Build a schedule from CLI strings and/or a JSON file.

        Args:
            entries: fault texts such as ``crash@10:3`` (a ``detect=N`` text sets detection).
            file: a JSON list of fault objects.
            detect: the detection delay (``--detect``): slots >= 0, ``"never"`` or None;
                ``"default"``: what the entries say, else 1.

        Raises:
            FaultSpecError: naming the malformed entry.
        """
        if isinstance(entries, str):
            entries = [entries]
        found: dict[str, list[Any]] = {"events": [], "loss": [], "windows": [], "spans": []}
        settings: list[tuple[str, int | None]] = []
        for text in entries:
            if not isinstance(text, str):
                raise FaultSpecError(f"fault {text!r} must be a string such as 'crash@10:3'")
            text = text.strip()
            if text.startswith("detect="):
                settings.append((text, _detect_value(text[7:], f"fault {text!r}")))
                continue
            kind, entry = _parse_one(text)
            found[kind.bucket].append(entry)
        if file is not None:
            _parse_file(Path(file), found, settings)
        if detect != "default":
            settings.append((f"--detect {detect}", _detect_value(detect, "--detect")))
        chosen = {v for _, v in settings}
        if len(chosen) > 1:
            raise FaultSpecError(f"detection delay given twice, differently: {' and '.join(w for w, _ in settings)}")
        value = chosen.pop() if chosen else DEFAULT_DETECT
        return cls(tuple(found["events"]), tuple(found["loss"]), tuple(found["windows"]), tuple(found["spans"]),
                   detect=value)

    def validate(self, topology: Topology, slots: int) -> None:
        """Check every entry names a real node/port and a slot inside the run.

        Raises:
            FaultSpecError: naming the first bad entry.
        """
        for ev in self.events:
            FAULT_KINDS[ev.kind].validate(ev, topology, slots)
        others: tuple[Any, ...] = (*self.loss, *self.windows, *self.spans)
        for entry in others:
            FAULT_KINDS[entry.kind].validate(entry, topology, slots)
        self._check_sequence(topology)
        self._check_stalls()

    def _check_sequence(self, topology: Topology) -> None:
        """Each node's and link's events alternate down/up, in the order the run applies them.

        Raises:
            FaultSpecError: naming the event that contradicts an earlier one (or has none before it).
        """
        last: dict[tuple[str, Any], FaultEvent] = {}  # (what, which) -> the event that last switched it
        for slot in sorted(self.by_slot):
            for ev in self.by_slot[slot]:
                sets = FAULT_KINDS[ev.kind].sets
                if sets is None:
                    continue
                what, up = sets
                if what == "link":
                    key: tuple[str, Any] = ("link", topology.link_key(ev.node, ev.port))  # either end names it
                    name, opener = f"link {ev.node}:{ev.port}", "link-down"
                else:
                    key, name, opener = ("node", ev.node), f"node {ev.node}", "crash"
                prev = last.get(key)
                prev_sets = FAULT_KINDS[prev.kind].sets if prev is not None else None
                was_up = True if prev_sets is None else prev_sets[1]
                if was_up == up:
                    since = f"since {prev.describe()}" if prev is not None else f"(no {opener} before it)"
                    raise FaultSpecError(f"fault {ev.describe()}: {name} is already {'up' if up else 'down'} "
                                         f"at slot {ev.slot} {since}")
                last[key] = ev

    def _check_stalls(self) -> None:
        """A stall needs its node up throughout, and one node's stalls may not overlap.

        Raises:
            FaultSpecError: naming the stall and the crash, recover or stall in its way.
        """
        stalls = sorted((sp for sp in self.spans if sp.kind == "stall"), key=lambda sp: (sp.nodes[0], sp.start))
        for a, b in zip(stalls, stalls[1:]):
            if a.nodes == b.nodes and b.start <= a.end:
                raise FaultSpecError(f"fault {b.describe()}: node {b.nodes[0]} is already stalled at slot {b.start} "
                                     f"by {a.describe()}")
        for sp in stalls:
            v = sp.nodes[0]
            mine = sorted((ev for ev in self.events if ev.node == v and ev.kind in ("crash", "recover")),
                          key=lambda ev: (ev.slot, FAULT_KINDS[ev.kind].order))
            before = [ev for ev in mine if ev.slot < sp.start]
            if before and before[-1].kind == "crash":
                raise FaultSpecError(f"fault {sp.describe()}: node {v} is down at slot {sp.start} "
                                     f"(since {before[-1].describe()})")
            during = [ev for ev in mine if sp.start <= ev.slot <= sp.end]
            if during:
                raise FaultSpecError(f"fault {sp.describe()}: node {v} cannot {during[0].kind} while stalled "
                                     f"({during[0].describe()})")

    def to_list(self) -> list[str]:
        """The schedule in CLI syntax (for reports, traces and shards: it parses back to itself)."""
        out = [ev.describe() for ev in sorted(self.events, key=lambda e: e.slot)]
        out += [sp.describe() for sp in sorted(self.spans, key=lambda s: s.start)]
        out += [w.describe() for w in self.loss] + [w.describe() for w in self.windows]
        if self.detect != DEFAULT_DETECT:
            out.append(f"detect={'never' if self.detect is None else self.detect}")
        return out

    def entries(self) -> list[tuple[str, str]]:
        """``(kind, text)`` of every fault, in :meth:`to_list` order (the detection setting left out)."""
        out = [(ev.kind, ev.describe()) for ev in sorted(self.events, key=lambda e: e.slot)]
        out += [(sp.kind, sp.describe()) for sp in sorted(self.spans, key=lambda s: s.start)]
        windows: tuple[Any, ...] = (*self.loss, *self.windows)
        return out + [(w.kind, w.describe()) for w in windows]

    def impacts(self) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
        """``(kind, text, ledger entries)`` of every fault, in :meth:`entries` order: what each
        entry accounts for in the ledger, as its kind says (:meth:`FaultKind.impact`)."""
        out: list[Any] = sorted(self.events, key=lambda e: e.slot) + sorted(self.spans, key=lambda s: s.start)
        out += [*self.loss, *self.windows]
        return [(e.kind, e.describe(), FAULT_KINDS[e.kind].impact(e)) for e in out]

    def port_timeline(self, topology: Topology) -> PortTimeline:
        """Which ports of each node are dead, slot by slot, as the schedule alone fixes it.

        Built once per topology and kept: every reader of one run shares one timeline.

        A port is dead in a slot while its link is down (``link-down``, ``partition``) or the
        neighbour it leads to is crashed or stalled. Only nodes with a port that is ever
        dead appear; for them, ``(slots, masks)``: from ``slots[i]`` on (until the next
        change) bit ``p`` of ``masks[i]`` is set for each dead port ``p``.

        Example:
            >>> from slotnet.fabric import parse_topology
            >>> s = FaultSchedule.parse(["crash@5:1", "recover@9:1"])
            >>> s.port_timeline(parse_topology("hypercube:2"))[0]
            ((5, 9), (1, 0))
        """
        built = self._timelines.get(topology.spec)
        if built is None:
            built = self._timelines[topology.spec] = self._build_timeline(topology)
        return built

    def _build_timeline(self, topology: Topology) -> PortTimeline:
        changes: dict[int, list[tuple[str, Any, int]]] = {}
        for ev in self.events:
            sets = FAULT_KINDS[ev.kind].sets
            if sets is None:
                continue
            what, up = sets
            key: Any = ev.node
            if what == "link":
                assert ev.port is not None  # a link event names its port (validated at parse)
                key = topology.link_key(ev.node, ev.port)
            changes.setdefault(ev.slot, []).append((what, key, -1 if up else 1))
        for sp in self.spans:
            if sp.kind == "partition":
                inside = set(sp.nodes)
                cut = {topology.link_key(v, p.index) for v in sp.nodes for p in topology.ports(v)
                       if p.neighbour not in inside}
                for key in cut:
                    changes.setdefault(sp.start, []).append(("link", key, 1))
                    changes.setdefault(sp.end + 1, []).append(("link", key, -1))
            else:
                changes.setdefault(sp.start, []).append(("node", sp.nodes[0], 1))
                changes.setdefault(sp.end + 1, []).append(("node", sp.nodes[0], -1))
        links: dict[Any, int] = {}
        nodes: dict[int, int] = {}
        series: dict[int, tuple[list[int], list[int]]] = {}
        for slot in sorted(changes):
            touched: set[int] = set()
            for what, key, delta in changes[slot]:
                book: dict[Any, int] = links if what == "link" else nodes
                book[key] = book.get(key, 0) + delta
                if what == "link":
                    touched.update((key[0][0], key[1][0]))
                else:
                    touched.update(p.neighbour for p in topology.ports(key))
            for v in touched:
                mask = 0
                for p in topology.ports(v):
                    if links.get(topology.link_key(v, p.index), 0) > 0 or nodes.get(p.neighbour, 0) > 0:
                        mask |= 1 << p.index
                sl, ms = series.setdefault(v, ([], []))
                if (ms[-1] if ms else 0) != mask:
                    if sl and sl[-1] == slot:
                        ms[-1] = mask
                    else:
                        sl.append(slot)
                        ms.append(mask)
        return PortTimeline({v: (tuple(sl), tuple(ms)) for v, (sl, ms) in sorted(series.items()) if sl})


def _parse_one(text: str) -> tuple[FaultKind, Any]:
    for kind in FAULT_KINDS.values():
        entry = kind.parse(text)
        if entry is not None:
            return kind, entry
    known = ", ".join([k.syntax for k in FAULT_KINDS.values()] + ["detect=SLOTS|never"])
    raise FaultSpecError(f"fault {text!r} not understood (expected one of: {known})")

def _parse_file(path: Path, found: dict[str, list[Any]], settings: list[tuple[str, int | None]]) -> None:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: not a JSON text ({exc})") from None
    if not isinstance(data, list):
        raise FaultSpecError(f"fault file {str(path)!r}: expected a JSON list of fault objects")
    for i, item in enumerate(data):
        where = f"fault file {str(path)!r} entry {i}"
        if not isinstance(item, dict) or "kind" not in item:
            raise FaultSpecError(f"{where}: expected an object with a 'kind'")
        if item["kind"] == "detect":
            _check_fields(item, ("slots",), where)
            if "slots" not in item:
                raise FaultSpecError(f"{where}: detect needs 'slots' (a whole number of slots >= 0, or \"never\")")
            settings.append((f"{where} (detect)", _detect_value(item["slots"], where)))
            continue
        kind = FAULT_KINDS.get(item["kind"]) if isinstance(item["kind"], str) else None
        if kind is None:
            raise FaultSpecError(f"{where}: unknown kind {item['kind']!r} (known: {', '.join(FAULT_KINDS)}, detect)")
        found[kind.bucket].append(kind.from_json(item, where))
