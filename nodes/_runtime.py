"""The slot barrier between the driver and the node tasks.

Every node task runs one *step* per slot in which it is awake and then parks in
``ctx.next_slot()`` (wake me next slot) or ``ctx.idle(until)`` (wake me when a message
arrives, or at slot ``until``). The driver wakes the nodes due in a slot with their
inboxes, waits until every one of them has parked again, and only then delivers the
slot's traffic. Idle nodes are never touched, so they cost nothing per slot.

Each node has a :class:`Parking` record, owned by the runtime: its task, whether it is
parked, the slot it was last woken in and its timer. The context only asks the record to
park; the runtime (and, through it, the driver: stalls, the end of a run) is the only
writer of the record.

A park is one Trio ``wait_task_rescheduled`` trap, taken without the wrapper coroutine
and the per-park objects Trio's public ``wait_task_rescheduled`` adds: the record itself
is the awaitable, it yields Trio's own ``WaitTaskRescheduled`` message with itself as the
abort callback, and the driver resumes the task with the inbox itself -- a list, or frames the woken task
decodes (:class:`Undecoded`) -- where Trio passes an ``Outcome`` through to the parked
coroutine. Anything else that reschedules a parked node (a cancellation, the end of the
run) sends an ``Outcome``, which the record unwraps as Trio's trap would. Cancellation
(shutdown, a crash fault) aborts a park cleanly, so a crash really is a cancel scope.

That fast path uses two private names of Trio (``GLOBAL_RUN_CONTEXT`` and
``WaitTaskRescheduled``), at the versions pyproject allows. Where either is missing (a
Trio that moved them), or where :data:`FAST_PARK` is set False, a park is Trio's public
``wait_task_rescheduled`` and a wake-up its public ``reschedule`` with the inbox wrapped
in an ``outcome.Value``: slower, with the same results (the same tasks woken in the same
order with the same inboxes).
"""

from __future__ import annotations

import heapq
import importlib
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Protocol

import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from slotnet.errors import SlotnetError


def _private(module: str, name: str) -> Any:
    """A private name of Trio's, or None where this Trio lacks it (the fast path is then off)."""
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:  # pragma: no cover - a Trio that moved the module
        return None


#: where trio.lowlevel.reschedule finds the running run
GLOBAL_RUN_CONTEXT: Any = _private("trio._core._run", "GLOBAL_RUN_CONTEXT")
#: the message every Trio park yields to the run loop
WaitTaskRescheduled: Any = _private("trio._core._traps", "WaitTaskRescheduled")

__all__ = ["FAST_PARK", "Parking", "SlotRuntime", "Undecoded"]

#: Whether parks and wake-ups take the fast path through Trio's privates (True where this
#: Trio has them). Set it False before a run to take the public API instead.
FAST_PARK: bool = GLOBAL_RUN_CONTEXT is not None and WaitTaskRescheduled is not None

_EMPTY: tuple[()] = ()
_SUCCEEDED = Abort.SUCCEEDED
_VALUE = outcome.Value
_ERROR = outcome.Error

#: One park message for every park. The run loop reads a yielded message's ``abort_func``
#: at once, before any other task runs (``task._abort_func = msg.abort_func`` in the same
#: step), so one message serves every park: each writes its own record in first. (Where
#: Trio's message has no instance dict to write, each park makes its own.)
_TRAP = WaitTaskRescheduled(None) if WaitTaskRescheduled is not None else None  # each park writes its own
_TRAP_FIELDS: dict[str, Any] | None = getattr(_TRAP, "__dict__", None)


def _trap(rec: Parking) -> Any:
    """Trio's park message with ``rec`` as its abort callback."""
    fields = _TRAP_FIELDS
    if fields is None:
        return WaitTaskRescheduled(rec)
    fields["abort_func"] = rec
    return _TRAP


def _rescheduler() -> Callable[[Task, Any], None]:
    """The running Trio run's own ``reschedule``: what ``trio.lowlevel.reschedule`` calls,
    looked up once per wake-up of the driver instead of once per woken task (the public
    function finds the run in a thread-local each time). Without the fast path: the public
    ``reschedule`` with the inbox wrapped in an ``outcome.Value``."""
    if not FAST_PARK:
        return _public_wake
    runner = getattr(GLOBAL_RUN_CONTEXT, "runner", None)
    return reschedule if runner is None else runner.reschedule


def _public_wake(task: Task, inbox: Any) -> None:
    """Wake ``task`` with ``inbox`` through Trio's public API (the fallback path)."""
    reschedule(task, outcome.Value(inbox))


#: A timer entry's fields: its slot above _TIMER_SHIFT bits, then the node (below 2**24,
#: the largest topology's), then the incarnation (below 2**20). Below 2**16 slots an entry
#: fits a 60-bit int (32 bytes).
_INCARNATION_BITS = 20
_NODE_SHIFT = _INCARNATION_BITS
_NODE_MASK = (1 << 24) - 1
_INCARNATION_MASK = (1 << _INCARNATION_BITS) - 1
_TIMER_SHIFT = _NODE_SHIFT + 24


def _timer(slot: int, node: int, incarnation: int) -> int:
    """A timer entry: ordered as ``(slot, node, incarnation)`` would be.

    Raises:
        SlotnetError: the node's incarnation does not fit its field (over a million restarts).
    """
    if incarnation > _INCARNATION_MASK:
        raise SlotnetError(f"node {node} has restarted {incarnation:,} times: at most {_INCARNATION_MASK:,} are supported")
    return slot << _TIMER_SHIFT | node << _NODE_SHIFT | incarnation


class Undecoded(Protocol):
    """An inbox still to decode (the in-process transport's frames): ``decode()`` gives
    it, and so does iterating."""

    def decode(self) -> list[tuple[int, Any]]: ...
    def __iter__(self) -> Iterator[tuple[int, Any]]: ...


class Parking:
    """One node task's parking record (one per context; the runtime keeps it).

    ``await record`` parks the task once: the awaitable protocol below. ``task`` is set
    when the node's task starts; ``parked`` while it waits; ``wake_slot`` is the last slot
    it was woken in (a node due twice in a slot is woken once); ``timer`` the slot an
    ``idle(until)`` asked for; ``since`` the slot of its last ``idle()`` (-1: none yet).
    """

    __slots__ = ("node", "incarnation", "task", "parked", "wake_slot", "timer", "since", "runtime")

    def __init__(self, runtime: SlotRuntime, node: int, incarnation: int) -> None:
        self.node = node
        self.incarnation = incarnation
        self.runtime = runtime
        self.task: Task | None = None
        self.parked = False
        self.wake_slot = -1
        self.timer: int | None = None
        self.since = -1

    # -- called from the node's task (through its context) ----------------------------
    def next_slot(self) -> Parking:
        """Due next slot; park (``await`` the result)."""
        runtime = self.runtime
        runtime.active.append(self)
        self.parked = True
        runtime.step_done()
        return self

    def idle(self, until: int | None, slot: int) -> Parking:
        """Due at a message, or at slot ``until`` (a later one than ``slot``); park."""
        runtime = self.runtime
        self.since = slot
        if until is not None:
            if until == slot + 1:  # due next slot in any case: next_slot(), without a timer
                runtime.active.append(self)
            else:
                self.timer = until
                heapq.heappush(runtime.timers, _timer(until, self.node, self.incarnation))
        self.parked = True
        runtime.step_done()
        return self

    # -- the awaitable: one Trio park ---------------------------------------------------
    def __await__(self) -> Generator[Any, Any, Any]:
        """Park once: yield Trio's park message, then end the ``await`` with the inbox the
        task was resumed with (an ``Outcome`` is unwrapped: a cancellation, the run's end).

        (A generator, about 200 bytes while a node is parked. The record as its own
        iterator, a ``send`` that raises ``StopIteration``, would save them but costs more:
        in the pure build that raise makes the parked coroutine's frame object, about 500
        bytes, and in the compiled one a traceback frame on every wake-up.)"""
        if not FAST_PARK:
            value = yield from wait_task_rescheduled(self).__await__()  # unwraps the Outcome
            if type(value) is list or type(value) is tuple:
                return value
            return value.decode()
        value = yield _trap(self)
        kind = type(value)
        if kind is list or kind is tuple:
            return value
        if kind is _VALUE or kind is _ERROR:
            # Not held in this frame while it raises: the error's traceback holds the frame,
            # and a frame holding the error would make a cycle that only the cyclic GC,
            # held back during the slot loop, frees (about 0.4 KiB a node at a run's end).
            held = [value]
            value = None
            return held.pop().unwrap()
        return value.decode()  # frames: decoded by the woken task itself

    def __call__(self, _raise_cancel: Any) -> Abort:
        """Trio's abort callback: the park is cancelled (a crash, the run's shutdown)."""
        self.parked = False
        self.timer = None
        return _SUCCEEDED


class SlotRuntime:
    """Bookkeeping of who is running, who is due, and the driver's park.

    Args:
        n_nodes: node ids run below this.
        on_unread: ``(node, inbox)``, for an inbox that reached a node not parked (crashed,
            finished, or not started yet).
    """

    def __init__(self, n_nodes: int = 0, on_unread: Callable[[int, Any], None] | None = None) -> None:
        self.running = 0
        self.active: list[Parking] = []  # parked in next_slot(): due next slot
        #: a heap of timers, each one int (:func:`_timer`: slot, node, incarnation, in that
        #: order of significance): one object a sleeping node, not a tuple and its fields;
        #: a stale timer (of an incarnation that ended, or one a wake-up or a stall
        #: replaced) is dropped when it comes up
        self.timers: list[int] = []
        #: node -> its current context's parking record (None: not hosted here)
        self.records: list[Parking | None] = [None] * n_nodes
        self._on_unread = on_unread
        self._driver: Task | None = None
        self._driver_parked = False
        self.wakeups = 0
        #: node steps finished so far (a shard's heartbeat reports it: progress inside a slot)
        self.steps = 0

    def register(self, node: int, incarnation: int) -> Parking:
        """A new parking record for ``node``'s new context (it replaces the old one's)."""
        if node >= len(self.records):
            self.records.extend([None] * (node + 1 - len(self.records)))
        rec = self.records[node] = Parking(self, node, incarnation)
        return rec

    # -- called from node tasks -------------------------------------------------------
    def attach(self, node: int, task: Task, counted: bool = False) -> None:
        """``node``'s task has started (it runs its first step now); ``counted``: its
        starter already counted it as running (it spawned it without waiting)."""
        rec = self.records[node]
        assert rec is not None
        rec.task = task
        if not counted:
            self.running += 1

    def step_done(self) -> None:
        """A node finished its step (parked or returned)."""
        self.running -= 1
        self.steps += 1
        if self.running == 0 and self._driver_parked:
            self._driver_parked = False
            assert self._driver is not None
            reschedule(self._driver)

    # -- called from the driver ---------------------------------------------------------
    def wake(self, slot: int, deliveries: Sequence[tuple[int, list[tuple[int, Any]] | Undecoded]]) -> int:
        """Wake everything due at ``slot``; returns how many nodes were woken."""
        n = 0
        records = self.records
        wake_task = _rescheduler()
        for r, inbox in deliveries:
            rec = records[r]  # deliveries only name nodes hosted here
            assert rec is not None
            if rec.parked:
                rec.parked = False
                rec.timer = None
                rec.wake_slot = slot
                wake_task(rec.task, inbox)  # type: ignore[arg-type]  # Parking.send takes the inbox itself
                n += 1
            else:
                self._unread(r, inbox)
        active, self.active = self.active, []
        for rec in active:
            if rec.parked and rec.wake_slot != slot:
                rec.parked = False
                rec.timer = None
                rec.wake_slot = slot
                wake_task(rec.task, _EMPTY)  # type: ignore[arg-type]
                n += 1
        timers = self.timers
        while timers and timers[0] >> _TIMER_SHIFT <= slot:
            entry = heapq.heappop(timers)
            due = entry >> _TIMER_SHIFT
            rec = self._timed(entry)
            if rec is not None and rec.parked and rec.timer == due and rec.wake_slot != slot:
                rec.parked = False
                rec.timer = None
                rec.wake_slot = slot
                wake_task(rec.task, _EMPTY)  # type: ignore[arg-type]
                n += 1
        self.running += n
        self.wakeups += n
        return n

    def _unread(self, node: int, inbox: Any) -> None:
        if self._on_unread is not None:
            self._on_unread(node, inbox)

    def next_due(self) -> int | None:
        """Earliest slot at which something is due without any traffic (None: nothing)."""
        if self.active:
            return -1
        timers = self.timers
        while timers:
            rec = self._timed(timers[0])
            if rec is not None and rec.parked and rec.timer == timers[0] >> _TIMER_SHIFT:
                return timers[0] >> _TIMER_SHIFT
            heapq.heappop(timers)
        return None

    def _timed(self, entry: int) -> Parking | None:
        """The record a timer entry is for (None: its incarnation has ended)."""
        node, incarnation = entry >> _NODE_SHIFT & _NODE_MASK, entry & _INCARNATION_MASK
        rec = self.records[node] if node < len(self.records) else None
        return rec if rec is not None and rec.incarnation == incarnation else None

    def hold(self, node: int, until: int) -> bool:
        """A stall of ``node`` over slots ..``until`` begins: it leaves the due list, and a
        timer due in the stall moves to ``until + 1``. Returns whether it was due next slot."""
        rec = self.records[node]
        assert rec is not None
        due = rec in self.active
        if due:
            self.active.remove(rec)
        if rec.timer is not None and rec.timer <= until:
            rec.timer = until + 1
            heapq.heappush(self.timers, _timer(until + 1, rec.node, rec.incarnation))
        return due

    def release(self, node: int, due: bool) -> None:
        """A stall of ``node`` ends: due next slot again if it was when the stall began."""
        rec = self.records[node]
        assert rec is not None
        if due and rec.parked:
            self.active.append(rec)

    def parked(self) -> list[Parking]:
        """The records of the node tasks parked now."""
        return [rec for rec in self.records if rec is not None and rec.parked and rec.task is not None]

    def resume(self, rec: Parking, value: outcome.Outcome[Any]) -> None:
        """Resume a parked node task with ``value`` (an ``Outcome``), whatever it waits for."""
        rec.parked = False
        rec.timer = None
        self.running += 1
        reschedule(rec.task, value)  # type: ignore[arg-type]

    def at_barrier(self) -> bool:
        """Whether the driver waits at the slot barrier for node tasks still mid-step."""
        return self._driver_parked and self.running > 0

    def fail(self, exc: BaseException) -> None:
        """End the driver's wait at the barrier with ``exc`` (the watchdog's error); nothing
        if the driver is not waiting there."""
        if self._driver_parked and self._driver is not None:
            self._driver_parked = False
            reschedule(self._driver, outcome.Error(exc))

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
