"""The one-process driver: builds the network, runs the slot loop, collects the result.

One slot, in order: the slot's control faults take effect (links, crashes); the
transport delivers what is due; every node due in this slot is woken with its inbox;
nodes restarted by a ``recover`` fault begin; the driver waits until every woken node
has parked again (the slot barrier); the slot's observers close it
(:class:`~._observer.SlotObservers`: the reporter, the trace, progress, the stability
monitor). Warm-up slots run the same way; reporters exclude them from the metrics. A
scheme that declares ``until="quiescent"`` (a one-shot collective) ends the run at the
first slot after which no node is awake or has a timer and nothing is in flight (quiet):
complete if every live node has returned (or the scheme's completion predicate holds), a
deadlock otherwise (``_completion``); a run whose slots (given, or the task's safety cap)
end before that is incomplete, and its reporter judges only what was due by then.

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

from ._await_guard import guard
from ._collect import EndState, collect, single_error
from ._completion import Waiting
from ._gc import building, quiet_gc
from ._network import Network
from ._observer import SlotBatch
from ._open import open_run
from ._progress import Progress
from ._result import Result
from ._spec import Prepared
from ._watchdog import watching

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
    opened = open_run(prep, progress=progress, on_slot=on_slot)
    reporter, handlers, tracer, observers, one_shot = (opened.reporter, opened.handlers, opened.tracer,
                                                       opened.observers, opened.one_shot)
    factory = spec.transport or in_process
    judge = opened.judge
    with building():  # no collection walks the network while it grows (``_gc``)
        net = Network(prep, lambda clock, lost: factory(prep, clock, lost), handlers=handlers,
                      batch=SlotBatch(handlers) if spec.observer == "buffered" else None,
                      on_lost=opened.on_lost, tracer=tracer.buffer if tracer is not None else None, monitor=judge)
    if judge is not None:
        judge.attach(net, observers)
    t0 = time.perf_counter()
    slots_run = 0
    done = False  # quiet: nothing could happen any more
    waiting: list[Waiting] = []
    try:
        with watching(spec.node_timeout, net):  # a node holding the run past it is named
            async with trio.open_nursery() as nursery:
                nursery.start_soon(guard, net)  # a node awaiting anything but its context is refused
                with building():
                    await net.start(nursery)
                with quiet_gc(len(net.local)):
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
                    waiting = net.waiting() if one_shot else []
                    await net.stop()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # unwrap a lone failure into its precise error
        raise single_error(group) from None
    finally:
        observers.close()
    wall = time.perf_counter() - t0
    t = net.transport
    end = EndState(t.ledger, t.in_flight(), net.held(), net.held_packets(), t.delivered, net.runtime.wakeups,
                   t.describe(), sorted(net.crashed, key=lambda c: (c[0], c[1])), quiet=done,
                   last_active=net.last_active, waiting=waiting, down=net.down(), last_events=opened.last_events)
    return collect(prep, reporter if judge is None else judge.judged(reporter), opened.monitor, slots_run, wall, end, tracer,
                   opened.witness)
