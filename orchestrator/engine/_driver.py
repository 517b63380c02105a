"""The one-process driver: builds the network, runs the slot loop, collects the result.

One slot, in order: the slot's control faults take effect (links, crashes); the
transport delivers what is due; every node due in this slot is woken with its inbox;
nodes restarted by a ``recover`` fault begin; the driver waits until every woken node
has parked again (the slot barrier); the slot's observers close it
(:class:`~._observer.SlotObservers`: the reporter, the trace, progress, the stability
monitor). Warm-up slots run the same way; reporters exclude them from the metrics. A
scheme that declares ``until="quiescent"`` (a one-shot collective) ends the run at the
first slot after which no node is awake or has a timer and nothing is in flight; a run
whose slots (given, or the task's safety cap) end before that is incomplete, and its
reporter judges only what was due by then (``_collect``).

The driver knows no scheme and no transport: it reads the :class:`Scheme` record and
receives a :class:`~slotnet.fabric.Transport` from the spec's factory (the in-process
fabric by default). A run over several shard processes is the coordinator's
(``slotnet.orchestrator.shard``); ``slotnet.orchestrator.run`` picks one or the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from slotnet.fabric import InProcessTransport, SlotClock, Transport

from ._collect import EndState, collect, complete, single_error
from ._gc import quiet_gc
from ._network import Network, checked_handlers
from ._observer import SlotBatch, SlotObservers
from ._progress import Progress
from ._provenance import trace_header
from ._result import Result
from ._spec import Prepared
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["in_process", "run_local"]


def in_process(prep: Prepared, clock: SlotClock, on_lost: Callable[..., None]) -> Transport:
    """The default transport factory: every link of the run in this process."""
    return InProcessTransport(prep.topology, clock, prep.spec.faults, prep.spec.seed, on_lost=on_lost,
                              quantum=prep.quantum)


async def run_local(prep: Prepared, *, progress: Progress | None = None,
                    on_slot: Callable[[int], None] | None = None) -> Result:
    """Run a prepared spec in this process, inside the caller's Trio loop.

    Raises:
        NodeFailure: a node's rule raised.
        CapacityError: a node oversent a port.
    """
    spec = prep.spec
    reporter = prep.scheme.reporter(prep.setup)
    handlers = checked_handlers(reporter)
    tracer = Tracer(spec.trace, reporter.events, trace_header(spec)) if spec.trace else None
    factory = spec.transport or in_process
    net = Network(prep, lambda clock, lost: factory(prep, clock, lost), handlers=handlers,
                  batch=SlotBatch(handlers) if spec.observer == "buffered" else None,
                  on_lost=reporter.on_lost, tracer=tracer.buffer if tracer is not None else None)
    monitor = StabilityMonitor(prep.topology.n_nodes, spec.warmup, prep.slots, prep.max_backlog_per_node)
    observers = SlotObservers.of_run(reporter, monitor, tracer=tracer, progress=progress, on_slot=on_slot)
    one_shot = prep.scheme.until == "quiescent"
    t0 = time.perf_counter()
    slots_run = 0
    done = False
    try:
        async with trio.open_nursery() as nursery:
            await net.start(nursery)
            with quiet_gc():
                for slot in range(prep.slots):
                    if slot:
                        await net.step(slot, nursery)
                    slots_run = slot + 1
                    if net.batch is not None:
                        net.batch.flush()
                    if not observers.close_slot(slot):
                        break
                    if one_shot and net.quiescent():
                        done = True
                        break
                await net.stop()
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # unwrap a lone failure into its precise error
        raise single_error(group) from None
    finally:
        observers.close()
    wall = time.perf_counter() - t0
    t = net.transport
    end = EndState(t.ledger, t.in_flight(), net.held(), net.held_packets(), t.delivered, net.runtime.wakeups,
                   t.describe(), sorted(net.crashed, key=lambda c: (c[0], c[1])))
    result = collect(prep, reporter, monitor, slots_run, wall, end, tracer, complete=done or not one_shot)
    complete(result, prep, done, net.last_active)
    return result
