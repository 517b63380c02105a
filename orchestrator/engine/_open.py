"""What every run opens before its first slot, whoever runs it: the one-process driver
(``_driver``) and the shard coordinator (``shard._coordinator``) both start here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._completion import LastEvents, may_deadlock
from ._fault_rules import FaultWitness
from ._network import checked_handlers
from ._observer import SlotObservers
from ._progress import Progress
from ._properties import PropertyMonitor
from ._provenance import trace_header
from ._spec import Prepared
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["OpenRun", "open_run"]


@dataclass
class OpenRun:
    """A run's observer side: the reporter and its checked handlers (noting each node's
    last event where the run may deadlock), the witness of the verdict's fault rules, the
    trace writer, the stability monitor and the slot-close sequence."""

    reporter: Any
    handlers: dict[str, Callable[..., None]]
    #: where lost messages go: the fault witness, then the reporter's ``on_lost``, through the
    #: property monitor when there is one
    on_lost: Callable[..., None]
    #: the scheme's stated properties and declared choices, judged by the observer (None: it states none)
    judge: PropertyMonitor | None
    last_events: LastEvents | None
    #: what the verdict's fault rules need (``_fault_rules``): ``collect`` judges it
    witness: FaultWitness
    tracer: Tracer | None
    monitor: StabilityMonitor
    observers: SlotObservers
    #: a one-shot task (``until="quiescent"``): the run stops when it goes quiet
    one_shot: bool


def open_run(prep: Prepared, *, progress: Progress | None = None,
             on_slot: Callable[[int], None] | None = None, sharded: bool = False) -> OpenRun:
    """Open the observer side of a run of ``prep`` (``sharded``: over shard processes, where the
    property monitor sees events but no node views). The runner attaches ``judge`` to its
    network and observers once it has them.

    Raises:
        SlotnetError: a reporter whose handlers do not match its declared events, or a
            property the run cannot judge.
    """
    spec = prep.spec
    reporter = prep.scheme.reporter(prep.setup)
    witness = FaultWitness(prep.topology, reporter.events)
    handlers = witness.wrap(checked_handlers(reporter))
    judge = PropertyMonitor.of(prep, reporter.events, sharded=sharded)
    events, on_lost = reporter.events, reporter.on_lost
    if judge is not None:
        handlers = judge.wrap(handlers)
        events, on_lost = judge.events_with(reporter.events), judge.on_lost_with(reporter.on_lost)
    on_lost = witness.on_lost_with(on_lost)
    last_events = LastEvents() if may_deadlock(prep) else None
    if last_events is not None:
        handlers = last_events.wrap(handlers)
    tracer = Tracer(spec.trace, events, trace_header(spec)) if spec.trace else None
    monitor = StabilityMonitor(prep.topology.n_nodes, spec.warmup, prep.slots, prep.max_backlog_per_node)
    observers = SlotObservers.of_run(reporter, monitor, tracer=tracer, progress=progress, on_slot=on_slot)
    return OpenRun(reporter, handlers, on_lost, judge, last_events, witness, tracer, monitor, observers,
                   prep.scheme.until == "quiescent")
