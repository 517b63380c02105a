"""Fault entries, message stages and their verdicts: what a schedule holds and how a message is judged.

The static data of a :class:`~slotnet.fabric.FaultSchedule` (timed control events,
partition and stall spans, message-fault windows), the :class:`FaultTarget` control
faults act on, and the stages of the per-message pipeline (:mod:`._pipeline`) with their
deterministic draws and the verdicts they return (:class:`Lose`, :class:`Copy`,
:class:`Hold`, :class:`Flip`): a decision hashes ``(seed, slot, receiver, in_port, k)``,
salted per kind and window (see :mod:`._faults`). Kinds that parse and validate these
entries, and make the stages, are in :mod:`._fault_kinds`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Copy",
    "FaultEvent",
    "FaultTarget",
    "Flip",
    "Hold",
    "Lose",
    "LossStage",
    "LossWindow",
    "MessageStage",
    "MessageWindow",
    "SpanEdge",
    "SpanFault",
    "Verdict",
    "WindowStage",
    "fault_draw",
    "loss_draw",
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


@dataclass(frozen=True, slots=True)
class Lose:
    """A stage's verdict: the message is destroyed, lost to ``cause``."""

    cause: str


@dataclass(frozen=True, slots=True)
class Copy:
    """A stage's verdict: the message is delivered, and a copy follows on its link (``dup``)."""


@dataclass(frozen=True, slots=True)
class Hold:
    """A stage's verdict: the message is held back ``slots`` extra slots (``delay``)."""

    slots: int


@dataclass(frozen=True, slots=True)
class Flip:
    """A stage's verdict: bytes are flipped on the wire; ``detected``: after the checksum was
    taken (the receiver's check fails), else before it (the check passes, the decode refuses)."""

    detected: bool


#: What a message stage decides for one message (None: it does not touch it).
Verdict = Lose | Copy | Hold | Flip


class MessageStage(Protocol):
    """One step of the transport's per-message fault pipeline (:mod:`._pipeline`).

    :meth:`judge` returns the :data:`Verdict` of a hit: :class:`Lose`, :class:`Copy`,
    :class:`Hold` or :class:`Flip`; the pipeline applies it.
    """

    def active(self, slot: int) -> bool:
        """Whether the stage can touch a message sent in ``slot``."""

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int, sent: int | None = None) -> Verdict | None:
        """The verdict if the stage hits the ``k``-th message of the receiver's batch, else None.

        ``slot`` is the message's last tick on the wire (what its draws are keyed by);
        ``sent`` the slot its sender started it (None: ``slot``), whose windows judge it.
        The pipeline asks only the stages :meth:`active` in ``sent``.
        """


class LossStage:
    """Random loss: windows combine independently into one rate per slot."""

    __slots__ = ("windows",)
    #: the verdict of every hit
    verdict = Lose("loss")

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

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int, sent: int | None = None) -> Verdict | None:
        rate = self.rate(slot if sent is None else sent)
        return self.verdict if rate > 0.0 and loss_draw(seed, slot, receiver, in_port, k) < rate else None


class WindowStage:
    """One message-fault window (``dup``, ``delay``, ``corrupt``, ...) whose hits all get one
    ``verdict`` (its kind's), drawing on its own stream (``salt``)."""

    __slots__ = ("window", "salt", "verdict")

    def __init__(self, window: MessageWindow, salt: int, verdict: Verdict) -> None:
        self.window = window
        self.salt = salt
        self.verdict = verdict

    def active(self, slot: int) -> bool:
        return self.window.rate > 0.0 and self.window.active(slot)

    def judge(self, seed: int, slot: int, receiver: int, in_port: int, k: int, sent: int | None = None) -> Verdict | None:
        hit = fault_draw(seed, self.salt, slot, receiver, in_port, k) < self.window.rate
        return self.verdict if hit else None
