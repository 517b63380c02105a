"""The watchdog: a node that holds the run past a wall-clock limit is named, not waited for.

A node's step runs until it awaits its context (``ctx.next_slot()``, ``ctx.idle()``).
A step that never does -- a loop without ``await``, or an ``await`` of anything else
(``trio.sleep(3600)``, an event no one sets) -- would hang the whole run: the slot barrier
waits for every woken node. The watchdog is a thread that looks, a few times a second,
at the runtime's counters (the slot, the wake-ups, the nodes still mid-step); when a node
is mid-step and nothing has moved for ``limit`` seconds it ends the run with a
:class:`~slotnet.errors.NodeTimeout` naming the node, the slot and the line:

* if the event loop answers (it is idle: the node awaits something else -- which the await
  guard, ``_await_guard``, refuses at once, so this is the watchdog's fallback), the error
  is thrown into the driver's wait from inside the loop, and the node is cancelled with
  the rest of the run;
* if it does not (a node holds it, looping without awaiting), the watchdog interrupts the
  main thread (as Ctrl-C would: the node's loop is broken where it runs), and the driver
  turns that interrupt into the error. Where the run is not in the main thread, it cannot
  be interrupted: the error is raised when the node lets go, if ever. A node stopped in
  a debugger (``breakpoint()``) is never taken for one that holds the loop.

It costs nothing per slot: the thread reads three counters.
"""

from __future__ import annotations

import _thread
import ctypes
import gc
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import trio

from slotnet.errors import NodeTimeout, user_frame_of

__all__ = ["Watchdog", "watching"]

#: How often the thread looks, at most (seconds); a shorter limit looks more often.
POLL = 0.25


class Watchdog:
    """One run's watchdog (see the module docstring); :func:`watching` runs it."""

    def __init__(self, limit: float, net: Any) -> None:
        self.limit = limit
        self.net = net
        self.runtime = net.runtime
        #: the error it raised into the run, or will have the driver raise (None: never fired)
        self.fired: NodeTimeout | None = None
        self._stop = threading.Event()
        self._token = trio.lowlevel.current_trio_token()
        self._main = threading.current_thread() is threading.main_thread()
        self._loop_thread = threading.get_ident()
        self._thread = threading.Thread(target=self._watch, name="slotnet-watchdog", daemon=True)

    def _progress(self) -> tuple[int, int, int]:
        rt = self.runtime
        return self.net.clock.slot, rt.wakeups, rt.running

    def _watch(self) -> None:
        poll = min(POLL, self.limit / 4)
        last, since = self._progress(), time.monotonic()
        while not self._stop.wait(poll):
            now = self._progress()
            if now != last or self.runtime.running <= 0:
                last, since = now, time.monotonic()
                continue
            if time.monotonic() - since < self.limit:
                continue
            answered = threading.Event()
            try:
                self._token.run_sync_soon(self._in_loop, answered, now)
            except trio.RunFinishedError:
                return
            if answered.wait(max(poll, min(1.0, self.limit))):
                if self.fired is not None:
                    return
                last, since = self._progress(), time.monotonic()  # it moved on meanwhile
                continue
            if _debugging(sys._current_frames().get(self._loop_thread)):
                last, since = self._progress(), time.monotonic()  # a debugger holds it: no hog
                continue
            self._hog()
            return

    def _in_loop(self, answered: threading.Event, seen: tuple[int, int, int]) -> None:
        """In the event loop: it is free, so the nodes mid-step await something else."""
        answered.set()
        if self.fired is not None or self._progress() != seen or self.runtime.running <= 0:
            return  # it moved on meanwhile
        stuck = self.net.mid_step()
        if not stuck:
            return
        node, task = stuck[0]
        where = _where(_coro_frames(task.coro)) if task is not None else None
        at = f" (at {where})" if where else ""
        slot = self.net.clock.slot
        self.fired = NodeTimeout(node, slot, (
            f"node {node} awaited something other than its context's slot primitives in slot {slot}{at} and did not "
            f"come back within {self.limit:g} s: a node may await only ctx.next_slot() and ctx.idle() (not trio.sleep "
            f"or any other Trio primitive); --node-timeout S sets the limit"))
        self.runtime.fail(self.fired)

    def _hog(self) -> None:
        """The loop does not answer: a node holds it. Name it and interrupt the loop's thread (the
        main thread by its interrupt, another thread by an asynchronous exception)."""
        frame = sys._current_frames().get(self._loop_thread)
        node = _node_of(frame)
        if node is None:  # no Python frame of node_main (the compiled build): whose coroutine runs this stack
            stack = {id(f) for f in _stack(frame)}
            node = next((v for v, task in self.net.mid_step()
                         if task is not None and any(id(f) in stack for f in _coro_frames(task.coro))), None)
        where = _where(_stack(frame))
        at = f" (at {where})" if where else ""
        slot = self.net.clock.slot
        who = f"node {node}" if node is not None else "a node"
        self.fired = NodeTimeout(node, slot, (
            f"{who} held the run for more than {self.limit:g} s of wall-clock time in slot {slot} without awaiting "
            f"its context{at}: each step must end with `await ctx.next_slot()` or `await ctx.idle()`; "
            f"--node-timeout S sets the limit"))
        if self._main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            _thread.interrupt_main()  # also ends a blocking call (time.sleep) in the node
        else:  # another thread, or SIGINT ignored (a worker process): raise into the loop's thread
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._loop_thread), ctypes.py_object(KeyboardInterrupt))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def watching(limit: float | None, net: Any) -> Iterator[Watchdog | None]:
    """Run a :class:`Watchdog` over ``net`` for the body (nothing where ``limit`` is None);
    an interrupt it caused leaves the body as its :class:`NodeTimeout`."""
    if limit is None:
        yield None
        return
    dog = Watchdog(limit, net)
    dog.start()
    try:
        yield dog
    except (KeyboardInterrupt, BaseExceptionGroup) as exc:
        if dog.fired is not None and _interrupted(exc):
            raise dog.fired from None
        raise
    finally:
        dog.stop()


def _interrupted(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_interrupted(e) for e in exc.exceptions)
    return False


def _stack(frame: FrameType | None) -> list[FrameType]:
    """The frames from the outermost to ``frame``."""
    out = []
    while frame is not None:
        out.append(frame)
        frame = frame.f_back
    return out[::-1]


def _python_coro(coro: Any) -> Any:
    """``coro``, or where it is a compiled (Cython) coroutine with no frame chain of its own, the
    Python coroutine it awaits (the node's ``run()``), found among what it refers to."""
    if coro is None or isinstance(coro, types.CoroutineType):
        return coro
    for ref in gc.get_referents(coro):
        if type(ref).__name__ == "coroutine_wrapper":
            inner = next((r for r in gc.get_referents(ref) if isinstance(r, types.CoroutineType)), None)
            if inner is not None:
                return inner
    return coro


def _coro_frames(coro: Any) -> list[FrameType]:
    """The frames of a suspended coroutine and of what it awaits, outermost first."""
    out = []
    coro = _python_coro(coro)
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            out.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return out


def _where(frames: list[FrameType]) -> str | None:
    got = user_frame_of([(f.f_code.co_filename, f.f_lineno, f.f_code.co_name) for f in frames])
    if got is None:
        return None
    file, line, func = got
    return f"{file}:{line} in {func}"


def _debugging(frame: FrameType | None) -> bool:
    """Whether ``frame``'s thread stands in a debugger (``breakpoint()``, pdb): never a hog."""
    return any(f.f_code.co_filename.endswith(("bdb.py", "pdb.py")) for f in _stack(frame))


def _node_of(frame: FrameType | None) -> int | None:
    """The node whose task runs ``frame``: the ``v`` of the ``node_main`` frame below it."""
    while frame is not None:
        if frame.f_code.co_name == "node_main" and "v" in frame.f_locals:
            v = frame.f_locals["v"]
            return v if isinstance(v, int) else None
        frame = frame.f_back
    return None
