"""The slot barrier between the driver and the node tasks.

Every node task runs one *step* per slot in which it is awake and then parks in
``ctx.next_slot()`` (wake me next slot) or ``ctx.idle(until)`` (wake me when a message
arrives, or at slot ``until``). The driver wakes the nodes due in a slot with their
inboxes, waits until every one of them has parked again, and only then delivers the
slot's traffic. Idle nodes are never touched, so they cost nothing per slot.

Parking uses Trio's low-level ``wait_task_rescheduled``; cancellation (shutdown, a crash
fault) aborts a park cleanly, so a crash really is a cancel scope.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

if TYPE_CHECKING:
    from ._context import NodeContext

__all__ = ["SlotRuntime", "Undecoded"]

_EMPTY: tuple[()] = ()


class SlotRuntime:
    """Bookkeeping of who is running, who is due, and the driver's park."""

    def __init__(self) -> None:
        self.running = 0
        self.active: list[NodeContext] = []  # parked in next_slot(): due next slot
        #: (slot, node, incarnation, ctx): a restarted node's new context never ties with a
        #: stale timer of its old one, so contexts are never compared
        self.timers: list[tuple[int, int, int, NodeContext]] = []
        self._driver: Task | None = None
        self._driver_parked = False
        self.wakeups = 0

    # -- called from node tasks -------------------------------------------------------
    def step_done(self) -> None:
        """A node finished its step (parked or returned)."""
        self.running -= 1
        if self.running == 0 and self._driver_parked:
            self._driver_parked = False
            assert self._driver is not None
            reschedule(self._driver)

    def add_timer(self, slot: int, ctx: NodeContext) -> None:
        heapq.heappush(self.timers, (slot, ctx.node, ctx.incarnation, ctx))

    # -- called from the driver ---------------------------------------------------------
    def wake(self, slot: int, deliveries: Sequence[tuple[int, list[tuple[int, Any]] | Undecoded]],
             contexts: Sequence[NodeContext | None]) -> int:
        """Wake everything due at ``slot``; returns how many nodes were woken."""
        n = 0
        for r, inbox in deliveries:
            ctx = contexts[r]  # deliveries only name nodes hosted here
            assert ctx is not None
            if ctx._parked:
                ctx._wake_slot = slot
                ctx._wake(inbox)
                n += 1
            else:
                ctx._unread(inbox)
        active, self.active = self.active, []
        for ctx in active:
            if ctx._parked and ctx._wake_slot != slot:
                ctx._wake_slot = slot
                ctx._wake(_EMPTY)
                n += 1
        timers = self.timers
        while timers and timers[0][0] <= slot:
            due, _, _, ctx = heapq.heappop(timers)
            if ctx._parked and ctx._timer == due and ctx._wake_slot != slot:
                ctx._wake_slot = slot
                ctx._wake(_EMPTY)
                n += 1
        self.running += n
        self.wakeups += n
        return n

    def next_due(self) -> int | None:
        """Earliest slot at which something is due without any traffic (None: nothing)."""
        if self.active:
            return -1
        while self.timers and not (self.timers[0][3]._parked and self.timers[0][3]._timer == self.timers[0][0]):
            heapq.heappop(self.timers)
        return self.timers[0][0] if self.timers else None

    async def wait_quiescent(self) -> None:
        """Park the driver until every running node has parked or returned."""
        if self.running == 0:
            await trio.lowlevel.checkpoint()
            return
        self._driver = current_task()
        self._driver_parked = True

        def abort(_: Any) -> Abort:
            self._driver_parked = False
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)


class Undecoded(Protocol):
    """An inbox still to decode (the in-process transport's frames): ``decode()`` gives
    it, and so does iterating."""

    def decode(self) -> list[tuple[int, Any]]: ...
    def __iter__(self) -> Iterator[tuple[int, Any]]: ...


class _Decoding(outcome.Outcome[Any]):
    """The outcome of a park whose inbox is still frames: the woken task decodes them
    itself, as it reads the outcome, so that only running nodes hold decoded inboxes."""

    __slots__ = ("_inbox",)

    def __init__(self, inbox: Undecoded) -> None:
        self._inbox = inbox

    def unwrap(self) -> list[tuple[int, Any]]:
        return self._inbox.decode()

    def send(self, gen: Any) -> Any:
        return gen.send(self.unwrap())

    async def asend(self, agen: Any) -> Any:
        return await agen.asend(self.unwrap())


def resume(task: Task, value: Any) -> None:
    """Reschedule a parked node task with ``value`` as the result of its park: an inbox
    (list or tuple), or an :class:`Undecoded` one that the task decodes when it runs."""
    reschedule(task, outcome.Value(value) if isinstance(value, (list, tuple)) else _Decoding(value))
