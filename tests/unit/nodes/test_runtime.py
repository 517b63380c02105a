"""The node runtime's parking records: one Trio park per ``await``, woken with the inbox itself.

The runtime owns each node's record (task, parked, wake slot, timer); the context only
asks it to park, and the driver's side (``wake``, ``hold``/``release`` for a stall,
``resume`` at the end of a run) is the only writer while a node is parked.
"""

from __future__ import annotations

import outcome
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.errors import SlotnetError
from slotnet.nodes import _runtime
from slotnet.nodes._runtime import Parking, SlotRuntime, _timer


class _Frames:
    """An inbox still to decode, as the in-process transport hands one over."""

    def __init__(self, inbox):
        self.inbox = inbox
        self.decoded = 0

    def decode(self):
        self.decoded += 1
        return self.inbox


async def _nodes(runtime: SlotRuntime, nursery: trio.Nursery, bodies) -> list[Parking]:
    """Start one task per body(record) and let each run to its first park."""
    records = []
    for v, body in enumerate(bodies):
        rec = runtime.register(v, 0)
        records.append(rec)

        async def main(v=v, body=body, task_status=trio.TASK_STATUS_IGNORED):
            runtime.attach(v, trio.lowlevel.current_task())
            task_status.started()
            await body(runtime.records[v])
            runtime.step_done()

        await nursery.start(main)
    await runtime.wait_quiescent()
    return records


async def test_a_parked_node_gets_its_inbox_and_is_woken_once_per_slot():
    got: list = []
    unread: list = []
    runtime = SlotRuntime(3, lambda node, inbox: unread.append((node, inbox)))

    async def body(rec):
        while True:
            got.append((rec.node, await rec.next_slot()))

    async with trio.open_nursery() as nursery:
        records = await _nodes(runtime, nursery, [body, body])
        assert all(r.parked for r in records) and runtime.running == 0
        frames = _Frames([(0, "a")])
        # node 0 has traffic and is due (next_slot): woken once, with its inbox
        assert runtime.wake(1, [(0, frames), (1, [(2, "b")])]) == 2
        await runtime.wait_quiescent()
        assert sorted(got) == [(0, [(0, "a")]), (1, [(2, "b")])] and frames.decoded == 1  # Trio picks the order
        assert [r.wake_slot for r in records] == [1, 1]
        assert runtime.wake(2, []) == 2  # due again, with nothing
        await runtime.wait_quiescent()
        assert sorted(got[2:]) == [(0, ()), (1, ())]
        nursery.cancel_scope.cancel()
    assert runtime.wakeups == 4 and unread == []


async def test_a_timer_wakes_at_its_slot_and_a_message_before_it_cancels_it():
    got: list = []
    runtime = SlotRuntime(1)

    async def body(rec):
        got.append(await rec.idle(5, 0))
        got.append(await rec.idle(9, 3))
        got.append(await rec.idle(None, 9))

    async with trio.open_nursery() as nursery:
        (rec,) = await _nodes(runtime, nursery, [body])
        assert rec.timer == 5 and runtime.next_due() == 5
        assert runtime.wake(4, []) == 0
        assert runtime.wake(5, []) == 1
        await runtime.wait_quiescent()
        assert got == [()] and rec.timer == 9
        assert runtime.wake(6, [(0, [(1, "m")])]) == 1  # a message before slot 9
        await runtime.wait_quiescent()
        assert got[1] == [(1, "m")] and rec.timer is None
        assert runtime.wake(9, []) == 0  # the stale timer wakes nothing
        assert runtime.next_due() is None and rec.parked
        nursery.cancel_scope.cancel()


async def test_cancelling_a_parked_node_unparks_its_record_and_its_mail_goes_unread():
    unread: list = []
    runtime = SlotRuntime(1, lambda node, inbox: unread.append((node, inbox)))
    cancelled: list = []

    async def body(rec):
        with trio.CancelScope() as scope:
            cancelled.append(scope)
            await rec.idle(7, 0)
        cancelled.append("after")

    async with trio.open_nursery() as nursery:
        (rec,) = await _nodes(runtime, nursery, [body])
        cancelled[0].cancel()
        assert not rec.parked and rec.timer is None  # the abort callback ran at once
        runtime.running += 1  # the task runs again, to its end
        await runtime.wait_quiescent()
        assert cancelled[-1] == "after"
        assert runtime.wake(7, [(0, [(0, "late")])]) == 0
    assert unread == [(0, [(0, "late")])]


async def test_a_stall_takes_a_due_node_off_the_list_and_moves_its_timer():
    runtime = SlotRuntime(2)
    got: list = []

    async def due(rec):
        got.append(("due", await rec.next_slot()))

    async def timed(rec):
        got.append(("timed", await rec.idle(4, 0)))

    async with trio.open_nursery() as nursery:
        a, b = await _nodes(runtime, nursery, [due, timed])
        assert runtime.hold(0, 5) is True and runtime.hold(1, 5) is False
        assert b.timer == 6
        assert runtime.wake(1, []) == 0 and runtime.wake(4, []) == 0
        runtime.release(0, True)
        assert runtime.wake(6, []) == 2
        await runtime.wait_quiescent()
    assert sorted(got) == [("due", ()), ("timed", ())]


async def test_resume_ends_a_parked_node_with_the_outcome_it_is_given():
    runtime = SlotRuntime(1)
    seen: list = []

    async def body(rec):
        try:
            await rec.next_slot()
        except KeyError as exc:
            seen.append(exc)

    async with trio.open_nursery() as nursery:
        await _nodes(runtime, nursery, [body])
        (rec,) = runtime.parked()
        runtime.resume(rec, outcome.Error(KeyError("end")))
        await runtime.wait_quiescent()
    assert [str(e) for e in seen] == ["'end'"] and runtime.parked() == []


async def test_a_value_outcome_is_unwrapped():
    runtime = SlotRuntime(1)
    seen: list = []

    async def body(rec):
        seen.append(await rec.next_slot())

    async with trio.open_nursery() as nursery:
        (rec,) = await _nodes(runtime, nursery, [body])
        runtime.resume(rec, outcome.Value([(3, "x")]))
        await runtime.wait_quiescent()
    assert seen == [[(3, "x")]]


def test_a_park_yields_trios_message_with_its_record_as_the_abort_callback():
    """What the run loop sees: a WaitTaskRescheduled naming the record; what the await returns: the inbox."""
    from trio._core._traps import WaitTaskRescheduled

    runtime = SlotRuntime(2)
    a, b = runtime.register(0, 0), runtime.register(1, 0)
    for rec, value, inbox in ((a, [(0, 1)], [(0, 1)]), (b, _Frames([(2, 3)]), [(2, 3)]),
                              (a, outcome.Value(()), ())):
        park = rec.__await__()
        trap = next(park)
        assert type(trap) is WaitTaskRescheduled and trap.abort_func is rec
        with pytest.raises(StopIteration) as stop:
            park.send(value)
        assert stop.value.value == inbox
    park = b.__await__()
    next(park)
    with pytest.raises(ValueError, match="boom"):
        park.throw(ValueError("boom"))
    assert b(None) is trio.lowlevel.Abort.SUCCEEDED and not b.parked


def test_records_are_registered_by_node_id_beyond_the_first_size():
    runtime = SlotRuntime()
    assert runtime.records == [] and runtime.running == 0 and runtime.wakeups == 0
    rec = runtime.register(5, 0)
    assert len(runtime.records) == 6 and runtime.records[5] is rec and runtime.records[:5] == [None] * 5
    assert runtime.register(6, 2) is runtime.records[6] and len(runtime.records) == 7
    again = runtime.register(5, 1)  # a restart: the new context's record replaces the old one's
    assert runtime.records[5] is again is not rec and (again.node, again.incarnation) == (5, 1)
    assert (again.task, again.parked, again.wake_slot, again.timer) == (None, False, -1, None)


def test_a_stall_moves_a_timer_due_in_it_and_release_restores_only_what_was_due():
    runtime = SlotRuntime(4)
    idle, busy = runtime.register(0, 0), runtime.register(1, 0)
    idle.idle(5, 1)  # asleep until slot 5
    busy.next_slot()  # due next slot
    assert runtime.next_due() == -1  # something is due at once
    assert runtime.hold(1, 6) is True and runtime.active == []
    assert runtime.hold(0, 5) is False  # the stall covers slot 5: the timer moves past it
    assert idle.timer == 6 and _timer(6, 0, 0) in runtime.timers
    assert runtime.next_due() == 6  # the stale entry for slot 5 is dropped, not reported
    runtime.release(0, False)  # not due when the stall began: stays asleep
    assert runtime.active == []
    runtime.release(1, True)
    assert runtime.active == [busy]
    later = runtime.register(2, 0)
    later.idle(9, 1)
    assert runtime.hold(2, 8) is False and later.timer == 9  # a timer after the stall stays


async def test_a_woken_or_resumed_record_is_unparked_with_no_timer_and_counted_running():
    runtime = SlotRuntime(3)
    got: list = []

    async def timed(rec):
        got.append(await rec.idle(5, 0))
        got.append(await rec.idle(8, 5))

    async def due(rec):
        got.append(await rec.next_slot())
        got.append(await rec.idle(9, 5))

    async with trio.open_nursery() as nursery:
        records = await _nodes(runtime, nursery, [timed, timed, due])
        assert runtime.wake(5, []) == 3  # two timers and one due node
        assert [(r.parked, r.timer, r.wake_slot) for r in records] == [(False, None, 5)] * 3
        assert runtime.running == 3
        await runtime.wait_quiescent()
        assert [r.timer for r in records] == [8, 8, 9] and all(r.parked for r in records)
        runtime.resume(records[0], outcome.Value(["x"]))
        runtime.resume(records[2], outcome.Value(["y"]))
        assert runtime.running == 2
        assert [(r.parked, r.timer) for r in records] == [(False, None), (True, 8), (False, None)]
        await runtime.wait_quiescent()
        nursery.cancel_scope.cancel()
    assert got[:3] == [(), (), ()] and sorted(got[3:]) == [["x"], ["y"]]  # Trio picks the order


async def test_wake_reschedules_through_the_running_runs_own_method():
    """Inside a run, the runtime wakes tasks with the run's ``reschedule`` (what
    ``trio.lowlevel.reschedule`` calls); outside one it falls back to the public function,
    which refuses as Trio does."""
    from trio._core._run import GLOBAL_RUN_CONTEXT

    from slotnet.nodes import _runtime

    assert _runtime._rescheduler() == GLOBAL_RUN_CONTEXT.runner.reschedule


def test_outside_a_run_waking_a_parked_record_is_refused_as_trio_refuses():
    from slotnet.nodes import _runtime

    assert _runtime._rescheduler() is trio.lowlevel.reschedule
    runtime = SlotRuntime(1)
    rec = runtime.register(0, 0)
    rec.parked = True
    with pytest.raises(RuntimeError, match="must be called from async context"):
        runtime.wake(1, [(0, [(0, "m")])])


@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**24 - 1), st.integers(0, 2**20 - 1)),
                min_size=2, max_size=20))
@settings(max_examples=60, deadline=None)
def test_timer_entries_order_as_their_fields(fields):
    """A timer entry (one int) orders as its (slot, node, incarnation) tuple, and gives its slot back."""
    assert sorted(fields, key=lambda f: _timer(*f)) == sorted(fields)
    assert all(_timer(*f) >> _runtime._TIMER_SHIFT == f[0] for f in fields)


def test_a_timer_of_an_ended_incarnation_wakes_nothing():
    """A node restarted while its old incarnation slept: the old timer is dropped, never woken."""
    runtime = SlotRuntime(2)
    old = runtime.register(1, 0)
    old.idle(9, 0)
    assert runtime.next_due() == 9
    runtime.register(1, 1)  # the new incarnation replaces the record
    assert runtime.next_due() is None and runtime.timers == []
    assert runtime.wake(9, []) == 0


def test_an_absurd_incarnation_is_refused():
    """An incarnation beyond the timer's field is a one-line error, not a wrong wake-up."""
    with pytest.raises(SlotnetError, match=r"^node 3 has restarted 1,048,576 times"):
        _timer(5, 3, 2**20)
