"""How nodes' events reach the reporter, and who consumes a closed slot.

Events reach the reporter directly, or batched per slot as a shard does.

A reporter is split along the slot: its handlers *accumulate* events, and
``end_slot``/``metrics``/``invariants`` *finalise* once every event of the slot is in.
In one process the handlers are called as nodes record (``direct``). When nodes live in
other processes, each shard batches its slot's events into one msgpack frame and the
central reporter replays every shard's frame in node order before closing the slot
(``buffered``). Reporters never depend on the order of one slot's events (the
determinism tests shuffle the scheduler to hold them to it), so both give identical
results; ``RunSpec(observer="buffered")`` runs the shard path in one process.

Once every event of a slot is in, the slot is closed by one sequence,
:meth:`SlotObservers.close_slot`, which both runners call (the one-process driver and
the shard coordinator): the reporter's ``end_slot``, the trace writer, the progress line,
the caller's ``on_slot``, then the stability monitor, in that order. Each is a
:class:`SlotObserver`; any of them may stop the run after the slot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Protocol

from slotnet.errors import SlotnetError
from slotnet.fabric import decode, encode

from ._progress import Progress
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["OBSERVERS", "SlotBatch", "SlotObserver", "SlotObservers"]

#: The observer modes a run spec may name.
OBSERVERS = ("direct", "buffered")

_node_then_seq = itemgetter(0, 1)


class SlotBatch:
    """One slot's events of a shard, encoded as they would cross a process boundary.

    Node events are replayed in node order (a node's own events keep their order); the
    messages faults destroyed in the slot (``on_lost``) are replayed first, in a
    canonical order, as the in-process transport reports them before nodes run.
    """

    __slots__ = ("_events", "_handlers", "_lost", "_on_lost")

    def __init__(self, handlers: Mapping[str, Callable[..., None]],
                 on_lost: Callable[..., None] | None = None) -> None:
        self._handlers = handlers
        self._on_lost = on_lost
        self._events: list[tuple[int, int, str, bytes]] = []
        self._lost: list[bytes] = []

    def kinds(self) -> frozenset[str]:
        """The event kinds this batch takes."""
        return frozenset(self._handlers)

    def record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        """Keep an event of ``slot`` (its values as wire bytes).

        Raises:
            SlotnetError: for an event kind the reporter does not handle.
        """
        if kind not in self._handlers:
            raise SlotnetError(f"node {node} recorded unknown event {kind!r} in slot {slot}")
        self._events.append((node, len(self._events), kind, encode((slot, values))))

    def lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """Keep a message a fault destroyed."""
        self._lost.append(encode((slot, sender, port, receiver, message, cause)))

    def frame(self) -> bytes:
        """The slot's events as one frame (what a shard publishes); the batch is emptied."""
        out = encode((sorted(self._lost), [(n, k, data) for n, _, k, data in sorted(self._events, key=_node_then_seq)]))
        self._events.clear()
        self._lost.clear()
        return out

    def replay(self, frames: list[bytes]) -> None:
        """Apply every shard's frame of the slot to the reporter: losses, then events in node order."""
        parts = [decode(f) for f in frames]
        if self._on_lost is not None:
            for data in sorted(x for lost, _ in parts for x in lost):
                self._on_lost(*decode(data))
        events = [e for _, evs in parts for e in evs]
        events.sort(key=itemgetter(0))  # stable: a node's own events keep their order
        handlers = self._handlers
        for node, kind, data in events:
            slot, values = decode(data)
            handlers[kind](node, slot, *values)

    def flush(self) -> None:
        """In one process: this batch is the only frame of the slot."""
        if self._events or self._lost:
            self.replay([self.frame()])


class SlotObserver(Protocol):
    """A consumer of closed slots (a reporter, a trace writer, a live plot, a checker)."""

    def close_slot(self, slot: int) -> bool:
        """Every event of ``slot`` is in; False stops the run after it."""

    def close(self) -> None:
        """The run is over (also after an error)."""


class SlotObservers:
    """The observers of a run, closed slot after slot in one fixed order."""

    def __init__(self, observers: Sequence[SlotObserver]) -> None:
        self.observers = list(observers)

    @classmethod
    def of_run(cls, reporter: Any, monitor: StabilityMonitor, *, tracer: Tracer | None = None,
               progress: Progress | None = None, on_slot: Callable[[int], None] | None = None) -> SlotObservers:
        """A run's observers: the reporter, the trace writer, the progress line, ``on_slot``, and
        last the stability monitor (it samples the backlog the reporter's ``end_slot`` left)."""
        chain: list[SlotObserver] = [_Reporter(reporter)]
        if tracer is not None:
            chain.append(tracer)
        if progress is not None:
            chain.append(_Progress(progress))
        if on_slot is not None:
            chain.append(_Callback(on_slot))
        chain.append(_Stability(monitor, reporter))
        return cls(chain)

    def close_slot(self, slot: int) -> bool:
        """Close ``slot`` at every observer (all of them, whatever one says); whether the run goes on."""
        go = True
        for observer in self.observers:
            go = observer.close_slot(slot) and go
        return go

    def close(self) -> None:
        """The run is over: every observer is closed, in order."""
        for observer in self.observers:
            observer.close()


class _Reporter:
    """The reporter finalises the slot's metrics."""

    def __init__(self, reporter: Any) -> None:
        self.reporter = reporter

    def close_slot(self, slot: int) -> bool:
        self.reporter.end_slot(slot)
        return True

    def close(self) -> None:
        pass


class _Progress:
    """The ``slot i/N`` line on a terminal, and a stop the user asked for (:meth:`Progress.request_stop`)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def close_slot(self, slot: int) -> bool:
        self.progress.update(slot)
        return not self.progress.stop_requested  # Ctrl-C on `slotnet run`: stop after this slot

    def close(self) -> None:
        self.progress.close()


class _Callback:
    """The caller's ``on_slot(slot)``."""

    def __init__(self, on_slot: Callable[[int], None]) -> None:
        self.on_slot = on_slot

    def close_slot(self, slot: int) -> bool:
        self.on_slot(slot)
        return True

    def close(self) -> None:
        pass


class _Stability:
    """The stability monitor samples the backlog; past its cap it stops the run."""

    def __init__(self, monitor: StabilityMonitor, reporter: Any) -> None:
        self.monitor = monitor
        self.reporter = reporter

    def close_slot(self, slot: int) -> bool:
        return self.monitor.sample(slot, self.reporter.backlog())

    def close(self) -> None:
        pass
