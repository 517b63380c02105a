"""Fault schedules: registered fault kinds, parsed, validated, applied.

A :class:`FaultSchedule` is part of a run spec: static data validated against the
topology before the run, plus deterministic decisions. Each fault kind is a registered
:class:`FaultKind` that parses its CLI text and JSON form, validates an entry, and
either acts on the network at a slot (*control* kinds: links, nodes — applied by the
orchestrator's injector through :class:`FaultTarget`) or judges messages in flight
(*message* kinds — applied by the transport as a pipeline of :class:`MessageStage`).
Random decisions hash ``(seed, slot, receiver, in_port, k)``, so they depend neither on
the order in which nodes run nor on how nodes are spread over processes. Adding a
fault kind is registering one more :class:`FaultKind`.

Entry syntax (CLI ``--fault`` or a JSON list in ``--faults FILE``)::

    link-down@SLOT:NODE:PORT    both directions of the link leave service at SLOT
    link-up@SLOT:NODE:PORT      ... and return at SLOT
    crash@SLOT:NODE             the node loses its state and stops at SLOT
    recover@SLOT:NODE           the node restarts from scratch at SLOT
    loss=RATE[@FROM[-UNTIL]]    each message is lost with probability RATE

JSON form: ``{"kind": "link-down", "slot": 5, "node": 3, "port": 1}``,
``{"kind": "loss", "rate": 0.01, "from": 0, "until": 100}`` (slots and nodes JSON
integers, a rate a JSON number; any other field is refused).

A schedule is checked against the run before it starts: every entry names a real node
(and port) and lies inside the run, and the control events of each node and link
alternate as they must (a ``recover`` follows a ``crash`` of that node, a ``link-up`` a
``link-down`` of that link — from either end — and nothing goes down twice).
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
    "FAULT_KINDS",
    "FaultEvent",
    "FaultKind",
    "FaultSchedule",
    "FaultTarget",
    "LossStage",
    "LossWindow",
    "MessageStage",
    "loss_draw",
    "register_fault_kind",
]

_MASK = (1 << 64) - 1


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


class FaultTarget(Protocol):
    """What control faults act on (the orchestrator's network implements it)."""

    def set_link(self, node: int, port: int, up: bool) -> None: ...
    def is_alive(self, node: int) -> bool: ...
    def crash(self, node: int) -> None: ...
    def recover(self, node: int) -> None: ...


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


@dataclass(frozen=True, slots=True)
class LossWindow:
    """Random message loss with probability ``rate`` in slots ``[start, until)``."""

    rate: float
    start: int = 0
    until: int | None = None

    def active(self, slot: int) -> bool:
        return slot >= self.start and (self.until is None or slot < self.until)

    def describe(self) -> str:
        span = "" if self.start == 0 and self.until is None else f"@{self.start}" + (
            "" if self.until is None else f"-{self.until}")
        return f"loss={self.rate:g}{span}"


class MessageStage(Protocol):
    """One step of the transport's per-message fault pipeline."""

    def active(self, slot: int) -> bool:
        """Whether the stage can touch a message sent in ``slot``."""

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int) -> str | None:
        """The cause that destroys the ``k``-th message of the link's batch, or None."""


class LossStage:
    """Random loss: windows combine independently into one rate per slot."""

    __slots__ = ("windows",)

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


class FaultKind:
    """A registered fault kind: its syntax, its JSON form, its checks and its effect.

    Control kinds produce :class:`FaultEvent` entries applied at their slot through a
    :class:`FaultTarget`; message kinds produce window entries that the transport turns
    into one :class:`MessageStage`.
    """

    name: str = ""
    syntax: str = ""
    plane: str = "control"
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


class _LossKind(FaultKind):
    name, syntax, plane = "loss", "loss=RATE[@FROM[-UNTIL]]", "message"
    _LOSS = re.compile(r"^loss=([0-9.eE+-]+)(?:@(\d+)(?:-(\d+))?)?$")

    def parse(self, text: str) -> Any | None:
        m = self._LOSS.match(text)
        if m is None:
            return None
        return _loss_window(text, m.group(1), m.group(2), m.group(3))

    json_fields = ("rate", "from", "until")

    def from_json(self, item: Mapping[str, Any], where: str) -> Any:
        _check_fields(item, self.json_fields, where)
        rate = item.get("rate")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise FaultSpecError(f"{where}: loss 'rate' must be a JSON number in [0, 1], got {rate!r}")
        for key in ("from", "until"):
            v = item.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise FaultSpecError(f"{where}: loss {key!r} must be an integer slot >= 0, got {v!r}")
        return _loss_window(where, rate, item.get("from"), item.get("until"))

    def validate(self, entry: Any, topology: Topology, slots: int) -> None:
        """A window must overlap the run (slots ``0 .. slots - 1``)."""
        w: LossWindow = entry
        if w.start >= slots:
            raise FaultSpecError(f"fault {w.describe()}: the window starts at slot {w.start}, after the run's "
                                 f"{slots} slots (0..{slots - 1})")

    def stage(self, entries: tuple[Any, ...]) -> MessageStage:
        return LossStage(entries)


#: Every known fault kind by name, in registration order.
FAULT_KINDS: dict[str, FaultKind] = {}


def register_fault_kind(kind: FaultKind) -> FaultKind:
    """Make ``kind`` known to schedules, the CLI and the JSON file form."""
    FAULT_KINDS[kind.name] = kind
    return kind


for _k in (_LinkKind("link-down", False, 0), _LinkKind("link-up", True, 1), _CrashKind(), _RecoverKind(), _LossKind()):
    register_fault_kind(_k)


@dataclass(frozen=True)
class FaultSchedule:
    """Every fault of a run: timed control events and message-fault windows by kind."""

    events: tuple[FaultEvent, ...] = ()
    loss: tuple[LossWindow, ...] = ()
    by_slot: dict[int, tuple[FaultEvent, ...]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for ev in self.events:
            if not isinstance(ev, FaultEvent) or FAULT_KINDS.get(ev.kind) is None or FAULT_KINDS[ev.kind].plane != "control":
                raise FaultSpecError(f"schedule entry {ev!r} is not a control fault event (known: "
                                     f"{', '.join(k for k, v in FAULT_KINDS.items() if v.plane == 'control')})")
        grouped: dict[int, list[FaultEvent]] = {}
        for ev in sorted(self.events, key=lambda e: (e.slot, FAULT_KINDS[e.kind].order, e.node, e.port or 0)):
            grouped.setdefault(ev.slot, []).append(ev)
        object.__setattr__(self, "by_slot", {s: tuple(v) for s, v in grouped.items()})

    @property
    def empty(self) -> bool:
        return not self.events and not self.loss

    def message_stages(self) -> list[MessageStage]:
        """The transport's per-message pipeline, in a fixed order of kinds."""
        return [FAULT_KINDS["loss"].stage(self.loss)] if self.loss else []

    @classmethod
    def parse(cls, entries: Iterable[str] = (), file: str | Path | None = None) -> FaultSchedule:
        """Build a schedule from CLI strings and/or a JSON file.

        Raises:
            FaultSpecError: naming the malformed entry.
        """
        if isinstance(entries, str):
            entries = [entries]
        events: list[FaultEvent] = []
        loss: list[LossWindow] = []
        for text in entries:
            if not isinstance(text, str):
                raise FaultSpecError(f"fault {text!r} must be a string such as 'crash@10:3'")
            entry = _parse_one(text.strip())
            (loss if isinstance(entry, LossWindow) else events).append(entry)
        if file is not None:
            fe, fl = _parse_file(Path(file))
            events += fe
            loss += fl
        return cls(tuple(events), tuple(loss))

    def validate(self, topology: Topology, slots: int) -> None:
        """Check every entry names a real node/port and a slot inside the run.

        Raises:
            FaultSpecError: naming the first bad entry.
        """
        for ev in self.events:
            FAULT_KINDS[ev.kind].validate(ev, topology, slots)
        for w in self.loss:
            FAULT_KINDS["loss"].validate(w, topology, slots)
        self._check_sequence(topology)

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
                    nb = topology.neighbour(ev.node, ev.port or 0)
                    assert ev.port is not None and nb is not None  # validated above
                    ends = ((ev.node, ev.port), (nb, topology.reverse_port(ev.node, ev.port)))
                    key: tuple[str, Any] = ("link", min(ends))  # either end names the link
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

    def loss_rate(self, slot: int) -> float:
        """Total loss probability in force at ``slot`` (windows combine independently)."""
        return LossStage(self.loss).rate(slot)

    def to_list(self) -> list[str]:
        """The schedule in CLI syntax (for reports and traces)."""
        return [ev.describe() for ev in sorted(self.events, key=lambda e: e.slot)] + [w.describe() for w in self.loss]


def _parse_one(text: str) -> Any:
    for kind in FAULT_KINDS.values():
        entry = kind.parse(text)
        if entry is not None:
            return entry
    known = ", ".join(k.syntax for k in FAULT_KINDS.values())
    raise FaultSpecError(f"fault {text!r} not understood (expected one of: {known})")


def _loss_window(text: str, rate: Any, start: Any, until: Any) -> LossWindow:
    try:
        if isinstance(rate, bool):
            raise TypeError
        r = float(rate)
    except (TypeError, ValueError):
        raise FaultSpecError(f"fault {text!r}: loss rate {rate!r} is not a number") from None
    if not 0.0 <= r <= 1.0:
        raise FaultSpecError(f"fault {text!r}: loss rate must be in [0, 1], got {r:g}")
    s = _slot_bound(start, text)
    u = _slot_bound(until, text)
    s = 0 if s is None else s
    if u is not None and u <= s:
        raise FaultSpecError(f"fault {text!r}: loss window end {u} must be after its start {s}")
    return LossWindow(r, s, u)


def _slot_bound(x: Any, text: str) -> int | None:
    if x is None:
        return None
    if isinstance(x, str) and x.isdigit():
        return int(x)
    if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
        return x
    raise FaultSpecError(f"fault {text!r}: loss window bounds must be integer slots >= 0, got {x!r}")


def _parse_file(path: Path) -> tuple[list[FaultEvent], list[LossWindow]]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: not a JSON text ({exc})") from None
    if not isinstance(data, list):
        raise FaultSpecError(f"fault file {str(path)!r}: expected a JSON list of fault objects")
    events: list[FaultEvent] = []
    loss: list[LossWindow] = []
    for i, item in enumerate(data):
        where = f"fault file {str(path)!r} entry {i}"
        if not isinstance(item, dict) or "kind" not in item:
            raise FaultSpecError(f"{where}: expected an object with a 'kind'")
        kind = FAULT_KINDS.get(item["kind"]) if isinstance(item["kind"], str) else None
        if kind is None:
            raise FaultSpecError(f"{where}: unknown kind {item['kind']!r} (known: {', '.join(FAULT_KINDS)})")
        entry = kind.from_json(item, where)
        (loss if isinstance(entry, LossWindow) else events).append(entry)
    return events, loss
