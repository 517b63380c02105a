"""What every run opens before its first slot, whoever runs it: the one-process driver
(``_driver``) and the shard coordinator (``shard._coordinator``) both start here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._completion import LastEvents, may_deadlock
from ._network import checked_handlers
from ._observer import SlotObservers
from ._progress import Progress
from ._spec import Prepared
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["OpenRun", "open_run"]


@dataclass
class OpenRun:
    """A run's observer side: the reporter and its checked handlers (noting each node's
    last event where the run may deadlock), the trace writer, the stability monitor and
    the slot-close sequence."""

    reporter: Any
    handlers: dict[str, Callable[..., None]]
    last_events: LastEvents | None
    tracer: Tracer | None
    monitor: StabilityMonitor
    observers: SlotObservers
    #: a one-shot task (``until="quiescent"``): the run stops when it goes quiet
    one_shot: bool


def open_run(prep: Prepared, *, progress: Progress | None = None,
             on_slot: Callable[[int], None] | None = None) -> OpenRun:
    """Open the observer side of a run of ``prep``.

    Raises:
        SlotnetError: a reporter whose handlers do not match its declared events.
    """
    spec = prep.spec
    reporter = prep.scheme.reporter(prep.setup)
    handlers = checked_handlers(reporter)
    last_events = LastEvents() if may_deadlock(prep) else None
    if last_events is not None:
        handlers = last_events.wrap(handlers)
    tracer = Tracer(spec.trace, reporter.events) if spec.trace else None
    monitor = StabilityMonitor(prep.topology.n_nodes, spec.warmup, prep.slots, prep.max_backlog_per_node)
    observers = SlotObservers.of_run(reporter, monitor, tracer=tracer, progress=progress, on_slot=on_slot)
    return OpenRun(reporter, handlers, last_events, tracer, monitor, observers, prep.scheme.until == "quiescent")
