"""The registered fault kinds: each kind's CLI syntax, JSON form, checks and effect.

A :class:`FaultKind` parses its text (``crash@10:3``, ``loss=0.01@50-300``) and JSON
object, validates an entry against the topology and the run, and either acts on the
network at a slot through a :class:`~._fault_entries.FaultTarget` (*control* kinds:
``link-down``/``link-up``, ``crash``/``recover``, ``partition``, ``stall``) or yields
the stages of the message pipeline (*message* kinds: ``loss``, ``dup``, ``delay``,
``corrupt``), each returning its kind's verdict (:class:`~._fault_entries.Lose`,
:class:`~._fault_entries.Copy`, :class:`~._fault_entries.Hold`,
:class:`~._fault_entries.Flip`) and running in its kind's :attr:`FaultKind.order`.
:data:`FAULT_KINDS` holds them by name; adding a kind is :func:`register_fault_kind`. The syntax and what each kind models are documented in
:mod:`._faults`, beside the schedule that holds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._errors import FaultSpecError
from ._fault_entries import (
    Copy,
    FaultEvent,
    FaultTarget,
    Flip,
    Hold,
    LossStage,
    LossWindow,
    MessageStage,
    MessageWindow,
    SpanFault,
    Verdict,
    WindowStage,
)
from ._topology import Topology

__all__ = ["FAULT_KINDS", "FaultKind", "parse_nodes", "register_fault_kind"]


class FaultKind:
    """A registered fault kind: its syntax, its JSON form, its checks and its effect.

    Control kinds produce :class:`FaultEvent` entries (or :class:`SpanFault` ones, applied
    as two :class:`SpanEdge`) applied at their slot through a :class:`FaultTarget`;
    message kinds produce window entries and turn them into the :class:`MessageStage`
    objects of the transport's message pipeline (:meth:`stages`), in their :attr:`order`.
    """

    name: str = ""
    syntax: str = ""
    plane: str = "control"
    #: the :class:`FaultSchedule` field its entries go to
    bucket: str = "events"
    #: applied after the slot's delivery (a restarted node reads no stale inbox)
    after_delivery: bool = False
    #: needs a port (link kinds)
    with_port: bool = False
    #: control kinds: the order among the control faults of one slot; message kinds: the
    #: place of their stages in the message pipeline (loss 0, corrupt 1, dup 2, delay 3:
    #: a message is destroyed first, then copied, then held back)
    order: int = 0
    #: what a control kind switches, for the schedule's consistency check: ("node" or
    #: "link", the state it sets: True up, False down); None: not checked
    sets: tuple[str, bool] | None = None
    #: the fields its JSON object may have besides "kind"
    json_fields: tuple[str, ...] = ("slot", "node", "port")
    #: the ledger entries (book, cause) its entries account for in ``fault_impact``
    books: tuple[tuple[str, str], ...] = ()
    #: the cause the transport reports for what the kind does that is no loss (a copy, a
    #: message held back); None: everything it reports is a loss
    note_cause: str | None = None
    #: frames must carry a checksum in a run that schedules an entry of this kind
    checksums: bool = False

    _EVENT = re.compile(r"^([a-z-]+)@(\d+):(\d+)(?::(\d+))?$")

    def impact(self, entry: Any) -> tuple[tuple[str, str], ...]:
        """The ledger entries (book, cause) that ``entry`` of this kind accounts for."""
        return self.books

    def parse(self, text: str) -> Any | None:
        """The entry ``text`` describes, None if it is not of this kind.

        Raises:
            FaultSpecError: if it is of this kind but malformed.
        """
        m = self._EVENT.match(text)
        if m is None or m.group(1) != self.name:
            return None
        _, slot, node, port = m.groups()
        if self.with_port and port is None:
            raise FaultSpecError(f"fault {text!r}: {self.name} needs SLOT:NODE:PORT")
        if not self.with_port and port is not None:
            raise FaultSpecError(f"fault {text!r}: {self.name} takes SLOT:NODE, not a port")
        return FaultEvent(self.name, int(slot), int(node), None if port is None else int(port))

    def from_json(self, item: Mapping[str, Any], where: str) -> Any:
        """The entry of a JSON object ``item``.

        Raises:
            FaultSpecError: naming ``where`` and what is wrong.
        """
        _check_fields(item, self.json_fields if self.with_port else ("slot", "node"), where)
        try:
            slot, node = _strict_int(item["slot"]), _strict_int(item["node"])
            port = item.get("port")
            port = None if port is None else _strict_int(port)
        except (KeyError, TypeError, ValueError):
            need = " and 'port'" if self.with_port else ""
            raise FaultSpecError(f"{where}: needs integer 'slot' and 'node'{need}") from None
        if self.with_port and port is None:
            raise FaultSpecError(f"{where}: {self.name} needs a 'port'")
        if port is not None and port < 0:
            raise FaultSpecError(f"{where}: port must be >= 0")
        if slot < 0 or node < 0:
            raise FaultSpecError(f"{where}: slot and node must be >= 0")
        return FaultEvent(self.name, slot, node, port)

    def validate(self, entry: Any, topology: Topology, slots: int) -> None:
        """Check the entry names a real node (and port) and a slot inside the run."""
        ev: FaultEvent = entry
        if not 0 <= ev.node < topology.n_nodes:
            raise FaultSpecError(f"fault {ev.describe()}: node {ev.node} not in 0..{topology.n_nodes - 1}")
        if ev.port is not None and topology.neighbour(ev.node, ev.port) is None:
            raise FaultSpecError(f"fault {ev.describe()}: node {ev.node} has no port {ev.port}")
        if ev.slot >= slots:
            raise FaultSpecError(f"fault {ev.describe()}: slot {ev.slot} is past the run's {slots} slots")

    def apply(self, entry: Any, target: FaultTarget) -> None:
        """Act on the network (control kinds)."""
        raise NotImplementedError

    def takes_effect(self, entry: Any, target: FaultTarget) -> bool:
        """Whether applying ``entry`` now changes anything (traced only if so)."""
        return True

    def touches(self, entry: Any, topology: Topology) -> tuple[int, ...]:
        """The nodes whose traces show ``entry`` being applied."""
        return (entry.node,)

    def trace_fields(self, entry: Any) -> dict[str, Any]:
        """The fields of the ``fault`` trace event written when ``entry`` is applied."""
        return {"fault": entry.kind, "port": entry.port}

    def stages(self, entries: list[tuple[int, Any]]) -> list[MessageStage]:
        """The message pipeline's stages for this kind's entries (message kinds).

        Args:
            entries: ``(index, entry)`` of each entry of this kind, ``index`` its place in
                the schedule's field for the kind (:attr:`bucket`).
        """
        raise NotImplementedError


def _strict_int(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"not an integer: {x!r}")
    return x


def _check_fields(item: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    extra = sorted(str(k) for k in item if k != "kind" and k not in allowed)
    if extra:
        raise FaultSpecError(f"{where}: unknown field {', '.join(map(repr, extra))} "
                             f"(a {item['kind']} fault takes {', '.join(allowed)})")


class _LinkKind(FaultKind):
    with_port = True

    def __init__(self, name: str, up: bool, order: int) -> None:
        self.name, self.up, self.order = name, up, order
        self.syntax = f"{name}@SLOT:NODE:PORT"
        self.sets = ("link", up)
        self.books = () if up else (("lost", "link_down"),)

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.set_link(entry.node, entry.port, self.up)


class _CrashKind(FaultKind):
    name, syntax, order, sets = "crash", "crash@SLOT:NODE", 2, ("node", False)
    books = (("lost", "node_down"), ("lost", "crash"))

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.crash(entry.node)


class _RecoverKind(FaultKind):
    name, syntax, order, after_delivery, sets = "recover", "recover@SLOT:NODE", 3, True, ("node", True)

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.recover(entry.node)

    def takes_effect(self, entry: Any, target: FaultTarget) -> bool:
        return not target.is_alive(entry.node)


# -- message kinds -------------------------------------------------------------------------
class _WindowKind(FaultKind):
    """``NAME=RATE[:ARG][@FROM[-UNTIL]]``: a message fault with a rate and an optional window."""

    plane, bucket = "message", "windows"
    json_fields: tuple[str, ...] = ("rate", "from", "until")
    #: what follows the rate (``:SLOTS``, ``:undetected``), for messages
    arg_syntax = ""

    def __init__(self, name: str) -> None:
        self.name = name
        self.syntax = f"{name}=RATE{self.arg_syntax}[@FROM[-UNTIL]]"
        self._re = re.compile(rf"^{re.escape(name)}=([^@]*)(?:@(.*))?$")

    def parse(self, text: str) -> Any | None:
        m = self._re.match(text)
        if m is None:
            return None
        rate, *args = m.group(1).split(":")
        start = until = None
        if m.group(2) is not None:
            w = re.fullmatch(r"(\d+)(?:-(\d+))?", m.group(2))
            if w is None:
                raise FaultSpecError(f"fault {text!r}: {self.name} window {m.group(2)!r} must be FROM or FROM-UNTIL "
                                     "(integer slots >= 0)")
            start, until = w.groups()
        return self.build(text, rate, self.arg_text(text, args), start, until)

    def arg_text(self, text: str, args: list[str]) -> Any:
        """What follows the rate, checked (no argument by default)."""
        if args:
            raise FaultSpecError(f"fault {text!r}: {self.name} takes {self.syntax}, not {':'.join(args)!r} after the rate")
        return None

    def arg_json(self, item: Mapping[str, Any], where: str) -> Any:
        return None

    def from_json(self, item: Mapping[str, Any], where: str) -> Any:
        _check_fields(item, self.json_fields, where)
        rate = item.get("rate")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise FaultSpecError(f"{where}: {self.name} 'rate' must be a JSON number in [0, 1], got {rate!r}")
        for key in ("from", "until"):
            v = item.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise FaultSpecError(f"{where}: {self.name} {key!r} must be an integer slot >= 0, got {v!r}")
        return self.build(where, rate, self.arg_json(item, where), item.get("from"), item.get("until"))

    def build(self, text: str, rate: Any, arg: Any, start: Any, until: Any) -> Any:
        r, s, u = _window(text, self.name, rate, start, until)
        return self.make(r, s, u, arg)

    def make(self, rate: float, start: int, until: int | None, arg: Any) -> Any:
        return MessageWindow(self.name, rate, start, until)

    def validate(self, entry: Any, topology: Topology, slots: int) -> None:
        """A window must overlap the run (slots ``0 .. slots - 1``)."""
        if entry.start >= slots:
            raise FaultSpecError(f"fault {entry.describe()}: the window starts at slot {entry.start}, after the run's "
                                 f"{slots} slots (0..{slots - 1})")

    #: what each hit of one of its windows does (window kinds without their own stages())
    verdict: Verdict | None = None

    def stages(self, entries: list[tuple[int, Any]]) -> list[MessageStage]:
        """One stage per window, each drawing on its own stream: salted by the kind's order
        and the window's place among the schedule's windows, so adding a window never
        changes another's draws."""
        return [WindowStage(w, 1 + (self.order - 1) * 1_000_003 + i, self.verdict_of(w)) for i, w in entries]

    def verdict_of(self, window: Any) -> Verdict:
        """What a hit of ``window`` does."""
        if self.verdict is None:
            raise NotImplementedError(f"fault kind {self.name!r} declares no verdict")
        return self.verdict


class _LossKind(_WindowKind):
    bucket, order = "loss", 0
    books = (("lost", "loss"),)

    def __init__(self) -> None:
        super().__init__("loss")

    def make(self, rate: float, start: int, until: int | None, arg: Any) -> Any:
        return LossWindow(rate, start, until)

    def stages(self, entries: list[tuple[int, Any]]) -> list[MessageStage]:
        """One stage for every loss window: they combine into one rate per slot (one draw)."""
        return [LossStage(w for _, w in entries)]


class _DupKind(_WindowKind):
    order, verdict = 2, Copy()
    books = (("duplicated", "dup"),)
    note_cause = "dup"


class _DelayKind(_WindowKind):
    order = 3
    arg_syntax = ":SLOTS"
    json_fields = ("rate", "slots", "from", "until")
    books = (("delayed", "delay"),)
    note_cause = "delay"

    def verdict_of(self, window: Any) -> Verdict:
        return Hold(window.slots)

    def arg_text(self, text: str, args: list[str]) -> Any:
        if len(args) != 1:
            raise FaultSpecError(f"fault {text!r}: delay takes {self.syntax} (the extra slots after the rate)")
        return _delay_slots(text, args[0])

    def arg_json(self, item: Mapping[str, Any], where: str) -> Any:
        return _delay_slots(where, item.get("slots"))

    def make(self, rate: float, start: int, until: int | None, arg: Any) -> Any:
        return MessageWindow("delay", rate, start, until, slots=arg)


def _delay_slots(text: str, x: Any) -> int:
    if isinstance(x, str) and re.fullmatch(r"-?\d+", x.strip()):
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise FaultSpecError(f"fault {text!r}: delay must be a whole number of slots >= 1, got {x!r}")
    if x < 0:
        raise FaultSpecError(f"fault {text!r}: delay must be a whole number of slots >= 1, got a negative delay {x}")
    if x == 0:
        raise FaultSpecError(f"fault {text!r}: delay must be a whole number of slots >= 1, got 0 (no delay)")
    return x


class _CorruptKind(_WindowKind):
    order = 1
    checksums = True
    arg_syntax = "[:undetected]"
    json_fields = ("rate", "undetected", "from", "until")
    books = (("corrupted", "corrupt"), ("lost", "corrupt"))

    def impact(self, entry: Any) -> tuple[tuple[str, str], ...]:
        """A detected corruption is dropped by the checksum; an undetected one by the decoder."""
        return (("corrupted", "undetected"), ("lost", "undecodable")) if entry.undetected else self.books

    def arg_text(self, text: str, args: list[str]) -> Any:
        if args == ["undetected"]:
            return True
        if args:
            raise FaultSpecError(f"fault {text!r}: corrupt takes {self.syntax}, not {':'.join(args)!r} after the rate")
        return False

    def arg_json(self, item: Mapping[str, Any], where: str) -> Any:
        v = item.get("undetected", False)
        if not isinstance(v, bool):
            raise FaultSpecError(f"{where}: corrupt 'undetected' must be true or false, got {v!r}")
        return v

    def make(self, rate: float, start: int, until: int | None, arg: Any) -> Any:
        return MessageWindow("corrupt", rate, start, until, undetected=arg)

    def verdict_of(self, window: Any) -> Verdict:
        return Flip(detected=not window.undetected)


# -- span kinds -----------------------------------------------------------------------------
class _SpanKind(FaultKind):
    """``NAME@FROM:TO:WHO``: a control fault over slots FROM..TO, both included."""

    bucket = "spans"
    what = "NODES"

    def __init__(self) -> None:
        self.syntax = f"{self.name}@FROM:TO:{self.what}"
        self._re = re.compile(rf"^{re.escape(self.name)}@(.*)$")

    def parse(self, text: str) -> Any | None:
        m = self._re.match(text)
        if m is None:
            return None
        parts = m.group(1).split(":")
        if len(parts) != 3:
            raise FaultSpecError(f"fault {text!r}: {self.name} needs FROM:TO:{self.what}")
        for name, x in (("FROM", parts[0]), ("TO", parts[1])):
            if not x.isdigit():
                raise FaultSpecError(f"fault {text!r}: {self.name} {name} must be an integer slot >= 0, got {x!r}")
        return self.build(text, int(parts[0]), int(parts[1]), self.nodes_text(text, parts[2]))

    def nodes_text(self, text: str, who: str) -> tuple[int, ...]:
        return parse_nodes(who, f"fault {text!r}")

    def nodes_json(self, item: Mapping[str, Any], where: str) -> tuple[int, ...]:
        raise NotImplementedError

    def from_json(self, item: Mapping[str, Any], where: str) -> Any:
        _check_fields(item, self.json_fields, where)
        try:
            start, end = _strict_int(item["from"]), _strict_int(item["to"])
        except (KeyError, TypeError):
            raise FaultSpecError(f"{where}: {self.name} needs integer 'from' and 'to' slots") from None
        if start < 0 or end < 0:
            raise FaultSpecError(f"{where}: {self.name} 'from' and 'to' must be slots >= 0")
        return self.build(where, start, end, self.nodes_json(item, where))

    def build(self, text: str, start: int, end: int, nodes: tuple[int, ...]) -> SpanFault:
        if end < start:
            raise FaultSpecError(f"fault {text!r}: {self.name} range {start}..{end} is reversed "
                                 f"(it ends at slot {end}, before it begins at {start})")
        return SpanFault(self.name, start, end, nodes)

    def validate(self, entry: Any, topology: Topology, slots: int) -> None:
        span: SpanFault = entry
        for v in span.nodes:
            if not 0 <= v < topology.n_nodes:
                raise FaultSpecError(f"fault {span.describe()}: node {v} not in 0..{topology.n_nodes - 1}")
        for name, s in (("begins", span.start), ("ends", span.end)):
            if s >= slots:
                raise FaultSpecError(f"fault {span.describe()}: it {name} at slot {s}, past the run's {slots} slots "
                                     f"(0..{slots - 1})")

    def touches(self, entry: Any, topology: Topology) -> tuple[int, ...]:
        return entry.span.nodes

    def trace_fields(self, entry: Any) -> dict[str, Any]:
        span = entry.span
        return {"fault": self.name if entry.begin else f"{self.name}-end", "first": span.start, "last": span.end}


class _PartitionKind(_SpanKind):
    name, order = "partition", 1
    json_fields = ("from", "to", "nodes")
    books = (("lost", "partition"),)

    def nodes_json(self, item: Mapping[str, Any], where: str) -> tuple[int, ...]:
        nodes = item.get("nodes")
        if isinstance(nodes, str):
            return parse_nodes(nodes, where)
        if not isinstance(nodes, list) or not nodes or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in nodes):
            raise FaultSpecError(f"{where}: partition 'nodes' must be a non-empty list of node ids >= 0 "
                                 f"or a text such as '0-31' or '0,5,9', got {nodes!r}")
        return tuple(sorted(set(nodes)))

    def validate(self, entry: Any, topology: Topology, slots: int) -> None:
        super().validate(entry, topology, slots)
        if len(entry.nodes) == topology.n_nodes:
            raise FaultSpecError(f"fault {entry.describe()}: the set holds every node of {topology.spec}, "
                                 "so it cuts no link")

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.cut(frozenset(entry.span.nodes), entry.begin)

    def touches(self, entry: Any, topology: Topology) -> tuple[int, ...]:
        """Both ends of every cut link: the set's boundary, inside and outside."""
        inside = set(entry.span.nodes)
        out: set[int] = set()
        for v in entry.span.nodes:
            for p in topology.ports(v):
                if p.neighbour not in inside:
                    out.update((v, p.neighbour))
        return tuple(sorted(out))


class _StallKind(_SpanKind):
    name, order, what = "stall", 2, "NODE"
    json_fields = ("from", "to", "node")
    books = (("lost", "stalled"),)

    def nodes_text(self, text: str, who: str) -> tuple[int, ...]:
        if not who.isdigit():
            raise FaultSpecError(f"fault {text!r}: stall NODE must be one node id >= 0, got {who!r}")
        return (int(who),)

    def nodes_json(self, item: Mapping[str, Any], where: str) -> tuple[int, ...]:
        v = item.get("node")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise FaultSpecError(f"{where}: stall 'node' must be a node id >= 0, got {v!r}")
        return (v,)

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.stall(entry.span.nodes[0], entry.begin, entry.span.end)

    def takes_effect(self, entry: Any, target: FaultTarget) -> bool:
        return target.is_alive(entry.span.nodes[0])


def parse_nodes(text: str, where: str) -> tuple[int, ...]:
    """Node ids from ``0-31``, ``0,5,9`` or ``0-3,8`` (sorted, without repeats).

    Raises:
        FaultSpecError: for an empty set or item, a reversed range or a non-integer.

    Example:
        >>> parse_nodes("8,0-3,2", "x")
        (0, 1, 2, 3, 8)
    """
    if not text.strip():
        raise FaultSpecError(f"{where}: the node set is empty")
    out: set[int] = set()
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
        if m is None:
            what = "an empty item" if not item.strip() else repr(item.strip())
            raise FaultSpecError(f"{where}: node set {text!r} has {what}; write node ids and ranges "
                                 "such as 0-31 or 0,5,9")
        a = int(m.group(1))
        b = a if m.group(2) is None else int(m.group(2))
        if b < a:
            raise FaultSpecError(f"{where}: node range {a}-{b} is reversed")
        out.update(range(a, b + 1))
    return tuple(sorted(out))


#: Every known fault kind by name, in registration order.
FAULT_KINDS: dict[str, FaultKind] = {}


def register_fault_kind(kind: FaultKind) -> FaultKind:
    """Make ``kind`` known to schedules, the CLI and the JSON file form."""
    FAULT_KINDS[kind.name] = kind
    return kind


for _k in (_LinkKind("link-down", False, 0), _LinkKind("link-up", True, 1), _CrashKind(), _RecoverKind(),
           _LossKind(), _DupKind("dup"), _DelayKind("delay"), _CorruptKind("corrupt"), _PartitionKind(),
           _StallKind()):
    register_fault_kind(_k)


def _window(text: str, name: str, rate: Any, start: Any, until: Any) -> tuple[float, int, int | None]:
    try:
        if isinstance(rate, bool):
            raise TypeError
        r = float(rate)
    except (TypeError, ValueError):
        raise FaultSpecError(f"fault {text!r}: {name} rate {rate!r} is not a number") from None
    if not 0.0 <= r <= 1.0:
        raise FaultSpecError(f"fault {text!r}: {name} rate must be in [0, 1], got {r:g}")
    s = _slot_bound(start, text, name)
    u = _slot_bound(until, text, name)
    s = 0 if s is None else s
    if u is not None and u <= s:
        raise FaultSpecError(f"fault {text!r}: {name} window end {u} must be after its start {s}")
    return r, s, u


def _slot_bound(x: Any, text: str, name: str) -> int | None:
    if x is None:
        return None
    if isinstance(x, str) and x.isdigit():
        return int(x)
    if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
        return x
    raise FaultSpecError(f"fault {text!r}: {name} window bounds must be integer slots >= 0, got {x!r}")
