"""One shard: its block of nodes, run slot by slot as the coordinator says.

A shard hosts a contiguous block of node ids (:class:`~slotnet.fabric.ShardMap`) in the
engine's ``Network``, whose transport is a :class:`~slotnet.fabric.ShardTransport`:
messages to its own nodes are delivered as in one process, messages to other shards'
nodes leave as one frame per shard and slot. Where the run's reporter merges across
shards (``engine._open.merges_on_shards``), the shard runs a reporter of its own on its
nodes' events, as one process does, and hands the coordinator its small summary every
slot and its state at the end; otherwise it records its nodes' events in a ``SlotBatch``
for the coordinator's reporter to replay. Trace events go in a ``TraceBuffer``, handed
over every slot; the coordinator's reporter and trace writer do the rest.
:func:`serve_shard` follows the slot protocol over any :class:`~._link.ShardLink`;
:func:`run_shard` is ``slotnet shard``: the same over MQTT.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import trio

from slotnet.fabric import ShardMap, ShardTransport, SlotClock, Transport, parse_topology
from slotnet.schemes import ShardMerging

from ..engine._await_guard import guard
from ..engine._collect import single_error
from ..engine._fault_rules import FaultWitness
from ..engine._gc import building, collector_off, quiet_gc
from ..engine._network import LostSink, Network, checked_handlers
from ..engine._observer import SlotBatch
from ..engine._open import merges_on_shards
from ..engine._properties import PropertyMonitor
from ..engine._trace import TraceBuffer
from ..engine._watchdog import watching
from ._link import Done, ShardLink
from ._mqtt_link import shard_link
from ._timing import split
from ._wire import ledger_to_wire, spec_from_wire

__all__ = ["run_shard", "serve_shard"]


async def serve_shard(link: ShardLink) -> None:
    """Host this shard's nodes and follow the coordinator slot by slot, over ``link``.

    The cyclic garbage collector stays off from the build to the final state
    (``engine._gc.collector_off``): a collection of a big shard's heap holds the GIL for
    seconds, and the heartbeat thread with it.

    Raises:
        SpecError: the spec does not prepare here (or its nodes do not fit this machine).
        NodeFailure, CapacityError: as in one process.
    """
    with collector_off():
        await _serve(link)


async def _serve(link: ShardLink) -> None:
    shard, shards = link.shard, link.shards
    spec = spec_from_wire(await link.spec())
    smap = ShardMap(parse_topology(spec.topology).n_nodes, shards)
    prep = spec.prepare(hosted=len(smap.nodes(shard)))
    events = prep.scheme.trace_events
    judge = PropertyMonitor.of(prep, events, sharded=True)  # counts the declared choices here
    reporter = prep.scheme.reporter(prep.setup)  # reports here only where it merges (``merges_on_shards``)
    merged = merges_on_shards(prep, reporter, judge)
    merging = cast(ShardMerging, reporter)  # what is asked of it only where merged
    events = events if judge is None else judge.events_with(events)
    tracer = TraceBuffer(spec.trace, events) if spec.trace is not None else None
    handlers: dict[str, Callable[..., None]] | None = None
    batch: SlotBatch | None = None
    on_lost: LostSink
    witness = None
    if merged:  # this shard's own reporter takes its nodes' events, as one process does (``_open``)
        start = getattr(reporter, "shard_start", None)
        if start is not None:
            start(smap.nodes(shard))
        witness = FaultWitness(prep.topology, reporter.events, smap.nodes(shard))  # handed over at the end
        handlers = witness.wrap(checked_handlers(reporter))
        on_lost = reporter.on_lost
        if judge is not None:
            handlers, on_lost = judge.wrap(handlers), judge.on_lost_with(on_lost)
        on_lost = witness.on_lost_with(on_lost)
    else:  # the coordinator's reporter replays them: the shard batches them
        batch = SlotBatch({kind: _never for kind in events})
        on_lost = batch.lost

    def factory(clock: SlotClock, lost: LostSink) -> Transport:
        return ShardTransport(prep.topology, clock, smap, shard, spec.faults, spec.seed, on_lost=lost,
                              quantum=prep.quantum)

    with building():  # frozen once built: out of the slot loop's explicit collections
        net = Network(prep, factory, handlers=handlers, batch=batch, on_lost=on_lost, tracer=tracer,
                      local=smap.nodes(shard), monitor=judge)
    transport = net.transport
    assert isinstance(transport, ShardTransport)
    runtime = net.runtime
    phases = [0]  # slot phases done: the work between node steps (frames out, frames in) counts too
    link.report_progress(lambda: runtime.steps + net.built + net.spawned + net.ended + phases[0])
    timing = split()  # None unless SLOTNET_SHARD_TIMING asks (``_timing``)
    slot_work: list[float] = []  # timed: each slot's node work (slots 1, 2, ...)
    await link.ready()
    try:
        with watching(spec.node_timeout, net):  # a node holding the shard past it is named
            async with trio.open_nursery() as nursery:
                nursery.start_soon(guard, net)  # a node awaiting anything but its context is refused
                with building():
                    await net.start(nursery)
                if timing is not None:
                    timing.restart()  # building the nodes is start-up, not a slot's node work
                with quiet_gc(len(net.local)):  # as in one process: the cyclic GC stays off the long-lived network
                    slot = 0
                    while True:
                        # The report first, then the frames: the coordinator's go (two hops away, through
                        # it) then comes about when the other shards' frames (one hop) do. Idle counts the
                        # messages for other shards still pending here, as the frames would carry them.
                        idle = net.quiescent()
                        traced = tracer.take() if tracer is not None else []
                        if batch is not None:
                            link.done(Done(slot, shard, batch.frame(), traced, idle, net.last_active))
                        else:
                            link.done(Done(slot, shard, b"", traced, idle, net.last_active, merging.shard_slot(slot)))
                        phases[0] += 1
                        frames = transport.frames()
                        phases[0] += 1
                        for j in range(shards):
                            if j != shard:
                                link.send(slot, j, frames[j])
                        if timing is not None:
                            timing.lap("encoding")
                        # The other shards' frames first, then the coordinator's go: they come a hop
                        # before it (shard, broker, shard against shard, broker, coordinator, broker,
                        # shard), so taking them in overlaps the coordinator's round trip.
                        got = await link.frames(slot)
                        if timing is not None:
                            timing.lap("broker")
                        for frame in got:
                            transport.accept(frame)  # after the last slot too: they are the messages still in flight
                            phases[0] += 1
                        if timing is not None:
                            timing.lap("encoding")
                        go = await link.go(slot)
                        if timing is not None:
                            timing.lap("barrier")
                        if not go:
                            break
                        slot += 1
                        await net.step(slot, nursery)
                        if timing is not None:
                            slot_work.append(timing.lap("node_work"))
                    waiting = net.waiting()
                    await net.stop()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # unwrap a lone failure into its precise error
        raise single_error(group) from None
    held, held_packets = net.held(), net.held_packets()
    if judge is not None:
        judge.take_node_counts(net, slot)
    link.final({"ledger": ledger_to_wire(transport.ledger), "in_flight": list(transport.in_flight()),
                "held": [held[v] for v in net.local], "held_packets": [list(held_packets[v]) for v in net.local],
                "delivered": transport.delivered, "wakeups": net.runtime.wakeups, "sent_local": transport.sent_local,
                "sent_cross": transport.sent_cross, "rejected": link.rejected, "crashed": net.crashed,
                "waiting": [[w.node, w.since, w.until] for w in waiting], "down": net.down(),
                "choices": judge.choice_counts() if judge is not None else {},
                **({"reporter": merging.shard_state(), "witness": witness.shard_state()} if witness is not None else {}),
                **({"timing": timing.seconds, "node_work_slots": slot_work} if timing is not None else {})})


async def run_shard(broker_url: str, run_id: str, shard: int, shards: int) -> None:
    """``slotnet shard``: shard ``shard`` of ``shards`` of run ``run_id``, over the MQTT broker at ``broker_url``.

    The collector stays off until the link is closed, not only until the final state is
    handed over: a collection of the unfrozen network then would hold the GIL from the
    MQTT thread still sending that state (tens of MB at 2**19 nodes) and the heartbeats
    queued behind it.
    """
    with collector_off():
        async with shard_link(broker_url, run_id, shard, shards) as link:
            await serve_shard(link)


def _never(*_: Any) -> None:  # pragma: no cover - a batching shard only records, the coordinator replays
    raise AssertionError("a shard never replays events")
