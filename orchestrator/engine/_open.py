"""What every run opens before its first slot, whoever runs it: the one-process driver
(``_driver``) and the shard coordinator (``shard._coordinator``) both start here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slotnet.errors import SlotnetError

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

__all__ = ["MERGE_METHODS", "OpenRun", "merges_on_shards", "open_run"]

#: What a reporter that declares ``merges_shards`` must have (the contract: ``schemes.ShardMerging``).
MERGE_METHODS = ("shard_slot", "merge_slot", "shard_state", "merge_shards")


def merges_on_shards(prep: Prepared, reporter: Any, judge: PropertyMonitor | None) -> bool:
    """Whether a sharded run of ``prep`` reports on its shards: each shard's own reporter takes
    its nodes' events and the coordinator's merges the shards' summaries and states
    (:class:`slotnet.schemes.ShardMerging`), instead of replaying every event.

    Only when the reporter's own class declares ``merges_shards = True`` (a subclass does not
    inherit it: state it adds would not be merged), no stated property reads the events (a
    property judges every event of a slot together) and the run cannot end as a deadlock
    (whose report names each node's last event). The verdict's fault rules merge too: each
    shard's :class:`FaultWitness` notes its nodes' losses, births and receptions, handed over
    at the end. The coordinator and every shard decide this alike, from the same spec.

    Raises:
        SlotnetError: the reporter declares it but lacks one of :data:`MERGE_METHODS`.
    """
    if vars(type(reporter)).get("merges_shards") is not True:
        return False
    missing = [m for m in MERGE_METHODS if not callable(getattr(reporter, m, None))]
    if missing:
        raise SlotnetError(f"reporter {type(reporter).__name__} declares merges_shards but has no {missing[0]}()")
    return (judge is None or not judge.props) and not may_deadlock(prep)


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
    #: a sharded run whose shards report (:func:`merges_on_shards`); False in one process
    merged: bool = False


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
                   prep.scheme.until == "quiescent", sharded and merges_on_shards(prep, reporter, judge))
