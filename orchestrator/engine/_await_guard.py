"""A node that awaits anything but its context's slot primitives is refused at the slot barrier.

A node's step ends when it awaits ``ctx.next_slot()`` or ``ctx.idle()`` (or returns), and
the driver waits at the slot barrier until every woken node has done so. A node that
awaits anything else -- ``trio.sleep(1)``, a ``trio.Event``, a lock -- leaves the slotted
model: nothing in it will ever wake that node, and the barrier would wait for it until
the watchdog's wall-clock limit (``_watchdog``).

The guard is a task of the run's nursery that waits for Trio's loop to go idle (every task
blocked: ``trio.testing.wait_all_tasks_blocked``). When that happens while the driver waits
at the barrier for nodes still mid-step, no such node can move except through what it
awaits outside its context: the guard names the first one, what it awaited and the line
that awaited it, and ends the run with :class:`~slotnet.errors.ForeignAwait` at once.

It costs nothing per slot or hop: while a run moves, some task is always runnable (a node,
or the driver the last parked node woke), so Trio never finds the loop idle and the guard
never runs. Where the loop idles outside a barrier (a shard waiting for its coordinator,
a transport waiting on a socket), the guard looks again :data:`POLL` seconds later.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

import trio
from trio.testing import wait_all_tasks_blocked

from slotnet.errors import ForeignAwait, user_frame_of

from ._watchdog import _coro_frames

__all__ = ["POLL", "guard", "refusal"]

#: How long the guard waits before it looks again after an idle loop outside a barrier (seconds).
POLL = 0.005


async def guard(net: Any) -> None:
    """Watch ``net`` (a :class:`~._network.Network`) for the whole run; cancelled with the run's nursery."""
    runtime = net.runtime
    while True:
        await wait_all_tasks_blocked()
        if runtime.at_barrier():
            stuck = net.mid_step()
            if stuck:
                runtime.fail(refusal(stuck[0][0], net.clock.slot, stuck[0][1]))
                return
        await trio.sleep(POLL)


def refusal(node: int, slot: int, task: Any) -> ForeignAwait:
    """The error for ``node``, mid-step in ``slot`` and blocked in ``task`` on something else than its context."""
    frames = _coro_frames(task.coro) if task is not None else []
    what, where = _awaited(frames)
    at = f" at {where}" if where else ""
    return ForeignAwait(node, slot, (
        f"node {node} awaited {what}{at} in slot {slot}: a node may await only its context's slot primitives "
        f"(ctx.next_slot(), ctx.idle()), never trio.sleep, an event or any other awaitable"))


def _awaited(frames: list[FrameType]) -> tuple[str, str | None]:
    """What the node's innermost own frame awaits (``trio.sleep``), and that frame as ``FILE:LINE in FUNCTION``."""
    got = user_frame_of([(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames])
    if got is None:
        return "something other than its context", None
    file, line, func = got
    where = f"{file}:{line} in {func}"
    mine = max((i for i, f in enumerate(frames) if f.f_lineno == line and f.f_code.co_name == func), default=None)
    if mine is None or mine + 1 >= len(frames):
        return "something other than its context", where
    callee = frames[mine + 1]
    module = str(callee.f_globals.get("__name__", ""))
    public = [p for p in module.split(".") if p and not p.startswith("_")]
    return ".".join([*public[:1], callee.f_code.co_qualname]), where
