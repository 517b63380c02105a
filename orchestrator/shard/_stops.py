"""Clean stops: SIGTERM or SIGINT to a sharded run stops its shards and its broker first.

The coordinator of a sharded run starts processes of its own (K shards, a private
mosquitto). Python's default SIGTERM ends the coordinator at once, leaving them running;
so while a sharded run is under way, :func:`stopping_on_signals` takes SIGTERM and SIGINT
in the Trio loop and cancels the run, which unwinds the link: the shards are told to stop
(and terminated), the broker is stopped, and only then does the run raise --
:class:`KeyboardInterrupt` for SIGINT (as any Ctrl-C), :class:`~slotnet.errors.Stopped`
for SIGTERM. Only the main thread can take signals; elsewhere the body runs as is.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from slotnet.errors import Stopped

from ..engine._collect import single_error

__all__ = ["SIGNALS", "stopping_on_signals"]

#: The signals that stop a sharded run cleanly.
SIGNALS = (signal.SIGTERM, signal.SIGINT)


@asynccontextmanager
async def stopping_on_signals() -> AsyncIterator[trio.CancelScope]:
    """Run the body; on SIGTERM or SIGINT cancel it, let it clean up, then raise.

    Yields the cancel scope around the body (the body's clean-up runs inside it).

    Raises:
        Stopped: SIGTERM arrived (after the body's clean-up).
        KeyboardInterrupt: SIGINT arrived (after the body's clean-up).
    """
    if threading.current_thread() is not threading.main_thread():
        with trio.CancelScope() as scope:
            yield scope
        return
    got: list[int] = []
    try:
        with trio.open_signal_receiver(*SIGNALS) as signals:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    async for signum in signals:
                        got.append(signum)
                        nursery.cancel_scope.cancel()  # the body unwinds: shards and broker are stopped
                        return

                nursery.start_soon(watch)
                yield nursery.cancel_scope
                nursery.cancel_scope.cancel()  # the body is over: stop watching
    except BaseExceptionGroup as group:  # the body's own error, not a group around it
        if not got:
            raise single_error(group) from None
    if got:  # the signal is the reason, whatever the clean-up raised on the way out
        if got[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise Stopped(got[0], "the run's shards and broker were stopped")
