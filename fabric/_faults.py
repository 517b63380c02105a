"""Fault schedules: registered fault kinds, parsed, validated, applied.

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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ._errors import FaultSpecError
from ._topology import Topology

__all__ = [
    "DEFAULT_DETECT",
    "FAULT_KINDS",
    "NOTE_CAUSES",
    "FaultEvent",
    "FaultKind",
    "FaultSchedule",
    "FaultTarget",
    "LossStage",
    "LossWindow",
    "MessageStage",
    "MessageWindow",
    "PortTimeline",
    "SpanEdge",
    "SpanFault",
    "WindowStage",
    "fault_draw",
    "loss_draw",
    "parse_nodes",
    "register_fault_kind",
]

_MASK = (1 << 64) - 1

#: Slots a node takes to see that a port died (or came back), unless the schedule says.
DEFAULT_DETECT = 1

#: Causes the transport reports through its loss callback that are not losses: a copy a
#: ``dup`` fault added, a message a ``delay`` fault held back.
NOTE_CAUSES = frozenset({"dup", "delay"})

#: Per node, the slots at which its dead-port mask changes and the masks from then on.
PortTimeline = dict[int, tuple[tuple[int, ...], tuple[int, ...]]]


def _mix(x: int) -> int:
    """splitmix64 finaliser: a fast, well-spread 64-bit hash step."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def loss_draw(seed: int, slot: int, receiver: int, in_port: int, k: int) -> float:
    """A uniform draw in [0, 1) fixed by its arguments alone."""
    h = _mix(seed & _MASK)
    for v in (slot, receiver, in_port, k):
        h = _mix(h ^ (v & _MASK))
    return (h >> 11) / float(1 << 53)


def fault_draw(seed: int, salt: int, slot: int, receiver: int, in_port: int, k: int) -> float:
    """:func:`loss_draw` on a stream of its own for each ``salt`` (one per kind and window)."""
    return loss_draw(_mix((seed ^ (salt * 0x2545F4914F6CDD1D)) & _MASK), slot, receiver, in_port, k)


def _num(x: float) -> str:
    """A rate as short as it reads back exactly (``0.01``, ``1``, ``0.123456789``)."""
    g = f"{x:g}"
    return g if float(g) == x else repr(x)


class FaultTarget(Protocol):
    """What control faults act on (the orchestrator's network implements it)."""

    def set_link(self, node: int, port: int, up: bool) -> None: ...
    def is_alive(self, node: int) -> bool: ...
    def crash(self, node: int) -> None: ...
    def recover(self, node: int) -> None: ...
    def cut(self, nodes: frozenset[int], down: bool) -> None: ...
    def stall(self, node: int, on: bool, until: int) -> None: ...


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """A scheduled control fault: ``kind`` names a registered control :class:`FaultKind`."""

    kind: str
    slot: int
    node: int
    port: int | None = None

    def describe(self) -> str:
        where = f"{self.node}:{self.port}" if self.port is not None else f"{self.node}"
        return f"{self.kind}@{self.slot}:{where}"

    def sort_key(self) -> tuple[Any, ...]:
        return (0, self.node, self.port or 0)


def _span_text(start: int, until: int | None) -> str:
    return "" if start == 0 and until is None else f"@{start}" + ("" if until is None else f"-{until}")


@dataclass(frozen=True, slots=True)
class LossWindow:
    """Random message loss with probability ``rate`` in slots ``[start, until)``."""

    rate: float
    start: int = 0
    until: int | None = None
    kind = "loss"

    def active(self, slot: int) -> bool:
        return slot >= self.start and (self.until is None or slot < self.until)

    def describe(self) -> str:
        return f"loss={_num(self.rate)}{_span_text(self.start, self.until)}"


@dataclass(frozen=True, slots=True)
class MessageWindow:
    """A message fault other than loss (``dup``, ``delay``, ``corrupt``) in slots ``[start, until)``.

    ``slots`` is a delay's extra slots; ``undetected`` marks a corruption the checksum misses.
    """

    kind: str
    rate: float
    start: int = 0
    until: int | None = None
    slots: int = 0
    undetected: bool = False

    def active(self, slot: int) -> bool:
        return slot >= self.start and (self.until is None or slot < self.until)

    def describe(self) -> str:
        arg = f":{self.slots}" if self.kind == "delay" else (":undetected" if self.undetected else "")
        return f"{self.kind}={_num(self.rate)}{arg}{_span_text(self.start, self.until)}"


def _nodes_text(nodes: tuple[int, ...]) -> str:
    """Sorted node ids as ranges: ``(0, 1, 2, 5)`` -> ``0-2,5``."""
    parts: list[str] = []
    i = 0
    while i < len(nodes):
        j = i
        while j + 1 < len(nodes) and nodes[j + 1] == nodes[j] + 1:
            j += 1
        parts.append(str(nodes[i]) if i == j else f"{nodes[i]}-{nodes[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True, slots=True)
class SpanFault:
    """A control fault in force in slots ``start .. end`` (both included): a partition or a stall."""

    kind: str
    start: int
    end: int
    nodes: tuple[int, ...]

    def describe(self) -> str:
        return f"{self.kind}@{self.start}:{self.end}:{_nodes_text(self.nodes)}"


@dataclass(frozen=True, slots=True)
class SpanEdge:
    """Where a span begins (its first slot) or ends (the slot after its last), for the injector."""

    span: SpanFault
    slot: int
    begin: bool

    @property
    def kind(self) -> str:
        return self.span.kind

    def describe(self) -> str:
        return self.span.describe() + ("" if self.begin else " (end)")

    def sort_key(self) -> tuple[Any, ...]:
        return (1, self.begin, self.span.start, self.span.nodes)


class MessageStage(Protocol):
    """One step of the transport's per-message fault pipeline.

    ``effect`` says what a hit does: ``lose`` (the message is destroyed with the cause
    :meth:`judge` returns), ``corrupt`` or ``garble`` (bytes flipped after or before the
    checksum), ``dup`` (a copy follows), ``delay`` (held back ``slots`` slots).
    """

    effect: str
    slots: int

    def active(self, slot: int) -> bool:
        """Whether the stage can touch a message sent in ``slot``."""

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int) -> str | None:
        """The cause if the stage hits the ``k``-th message of the receiver's batch, else None."""


class LossStage:
    """Random loss: windows combine independently into one rate per slot."""

    __slots__ = ("windows",)
    effect = "lose"
    slots = 0

    def __init__(self, windows: Iterable[LossWindow]) -> None:
        self.windows = tuple(windows)

    def rate(self, slot: int) -> float:
        keep = 1.0
        for w in self.windows:
            if w.active(slot):
                keep *= 1.0 - w.rate
        return 1.0 - keep

    def active(self, slot: int) -> bool:
        return any(w.active(slot) and w.rate > 0.0 for w in self.windows)

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int) -> str | None:
        rate = self.rate(slot)
        return "loss" if rate > 0.0 and loss_draw(seed, slot, receiver, in_port, k) < rate else None


class WindowStage:
    """One ``dup``/``delay``/``corrupt`` window, drawing on its own stream (``salt``)."""

    __slots__ = ("window", "salt", "effect", "slots", "cause")

    def __init__(self, window: MessageWindow, salt: int) -> None:
        self.window = window
        self.salt = salt
        self.slots = window.slots
        if window.kind == "corrupt":
            self.effect, self.cause = ("garble", "undecodable") if window.undetected else ("corrupt", "corrupt")
        else:
            self.effect = self.cause = window.kind

    def active(self, slot: int) -> bool:
        return self.window.rate > 0.0 and self.window.active(slot)

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int) -> str | None:
        hit = fault_draw(seed, self.salt, slot, receiver, in_port, k) < self.window.rate
        return self.cause if hit else None


class FaultKind:
    """A registered fault kind: its syntax, its JSON form, its checks and its effect.

    Control kinds produce :class:`FaultEvent` entries (or :class:`SpanFault` ones, applied
    as two :class:`SpanEdge`) applied at their slot through a :class:`FaultTarget`;
    message kinds produce window entries that the transport turns into
    :class:`MessageStage` objects.
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
    #: order among control kinds of one slot
    order: int = 0
    #: what a control kind switches, for the schedule's consistency check: ("node" or
    #: "link", the state it sets: True up, False down); None: not checked
    sets: tuple[str, bool] | None = None
    #: the fields its JSON object may have besides "kind"
    json_fields: tuple[str, ...] = ("slot", "node", "port")

    _EVENT = re.compile(r"^([a-z-]+)@(\d+):(\d+)(?::(\d+))?$")

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

    def stage(self, entries: tuple[Any, ...]) -> MessageStage:
        """The transport's pipeline stage for all entries of this kind (message kinds)."""
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

    def apply(self, entry: Any, target: FaultTarget) -> None:
        target.set_link(entry.node, entry.port, self.up)


class _CrashKind(FaultKind):
    name, syntax, order, sets = "crash", "crash@SLOT:NODE", 2, ("node", False)

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

    def stage(self, entries: tuple[Any, ...]) -> MessageStage:
        raise NotImplementedError  # one WindowStage per window: see FaultSchedule.message_stages


class _LossKind(_WindowKind):
    bucket = "loss"

    def __init__(self) -> None:
        super().__init__("loss")

    def make(self, rate: float, start: int, until: int | None, arg: Any) -> Any:
        return LossWindow(rate, start, until)

    def stage(self, entries: tuple[Any, ...]) -> MessageStage:
        return LossStage(entries)


class _DelayKind(_WindowKind):
    arg_syntax = ":SLOTS"
    json_fields = ("rate", "slots", "from", "until")

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
    arg_syntax = "[:undetected]"
    json_fields = ("rate", "undetected", "from", "until")

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
           _LossKind(), _WindowKind("dup"), _DelayKind("delay"), _CorruptKind("corrupt"), _PartitionKind(),
           _StallKind()):
    register_fault_kind(_k)

#: The order message stages run in: destroyed first, then copied, then held back.
_STAGE_ORDER = ("corrupt", "dup", "delay")


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
        return any(w.kind == "corrupt" for w in self.windows)

    def message_stages(self) -> list[MessageStage]:
        """The transport's per-message pipeline, in a fixed order: loss, corrupt, dup, delay.

        Each window after loss draws on a stream of its own (salted by kind and its place
        among the schedule's windows), so adding a window never changes another's draws.
        """
        stages: list[MessageStage] = [FAULT_KINDS["loss"].stage(self.loss)] if self.loss else []
        for kind in _STAGE_ORDER:
            for i, w in enumerate(self.windows):
                if w.kind == kind:
                    stages.append(WindowStage(w, 1 + _STAGE_ORDER.index(kind) * 1_000_003 + i))
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
                    key: tuple[str, Any] = ("link", _link_key(topology, ev.node, ev.port))  # either end names it
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

    def loss_rate(self, slot: int) -> float:
        """Total loss probability in force at ``slot`` (windows combine independently)."""
        return LossStage(self.loss).rate(slot)

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

    def port_timeline(self, topology: Topology) -> PortTimeline:
        """Which ports of each node are dead, slot by slot, as the schedule alone fixes it.

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
        changes: dict[int, list[tuple[str, Any, int]]] = {}
        for ev in self.events:
            sets = FAULT_KINDS[ev.kind].sets
            if sets is None:
                continue
            what, up = sets
            key = _link_key(topology, ev.node, ev.port) if what == "link" else ev.node
            changes.setdefault(ev.slot, []).append((what, key, -1 if up else 1))
        for sp in self.spans:
            if sp.kind == "partition":
                inside = set(sp.nodes)
                cut = {_link_key(topology, v, p.index) for v in sp.nodes for p in topology.ports(v)
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
                    if links.get(_link_key(topology, v, p.index), 0) > 0 or nodes.get(p.neighbour, 0) > 0:
                        mask |= 1 << p.index
                sl, ms = series.setdefault(v, ([], []))
                if (ms[-1] if ms else 0) != mask:
                    if sl and sl[-1] == slot:
                        ms[-1] = mask
                    else:
                        sl.append(slot)
                        ms.append(mask)
        return {v: (tuple(sl), tuple(ms)) for v, (sl, ms) in sorted(series.items()) if sl}


def _link_key(topology: Topology, node: int, port: int | None) -> tuple[tuple[int, int], tuple[int, int]]:
    """Both ends of the link at ``(node, port)``, the smaller first: either end names it."""
    assert port is not None
    nb = topology.neighbour(node, port)
    assert nb is not None  # validated before
    a, b = (node, port), (nb, topology.reverse_port(node, port))
    return (a, b) if a <= b else (b, a)


def _parse_one(text: str) -> tuple[FaultKind, Any]:
    for kind in FAULT_KINDS.values():
        entry = kind.parse(text)
        if entry is not None:
            return kind, entry
    known = ", ".join([k.syntax for k in FAULT_KINDS.values()] + ["detect=SLOTS|never"])
    raise FaultSpecError(f"fault {text!r} not understood (expected one of: {known})")


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
