"""The driver: builds the network, runs the slot loop, collects the result.

One slot, in order: the slot's control faults take effect (links, crashes); the
transport delivers what is due; every node due in this slot is woken with its inbox;
nodes restarted by a ``recover`` fault begin; the driver waits until every woken node
has parked again (the slot barrier); the reporter closes the slot. Warm-up slots run the
same way; reporters exclude them from the metrics. A scheme that declares
``until="quiescent"`` (a one-shot collective) ends the run at the first slot after
which no node is awake or has a timer and nothing is in flight.

The driver knows no scheme and no transport: it reads the :class:`Scheme` record and
receives a :class:`~slotnet.fabric.Transport` from the spec's factory (the in-process
fabric by default).
"""

from __future__ import annotations

import gc
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import trio

from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FAULT_KINDS, FaultEvent, InProcessTransport, SlotClock, Transport
from slotnet.nodes import Node
from slotnet.nodes.runtime import NodeContext, SlotRuntime, TracedContext, node_rng

from ._invariants import check_invariants
from ._observer import SlotBatch
from ._progress import Progress
from ._result import Result
from ._spec import Prepared, RunSpec
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["NodeFailure", "in_process", "run", "run_async"]


def _checked_handlers(reporter: Any) -> dict[str, Callable[..., None]]:
    """The reporter's handlers, each checked against its event's declared fields.

    Raises:
        SlotnetError: naming the event whose handler does not take (node, slot, *fields).
    """
    handlers = dict(reporter.handlers())
    for kind, fields in reporter.events.items():
        if kind not in handlers:
            raise SlotnetError(f"reporter {type(reporter).__name__} declares event {kind!r} but has no handler for it")
        try:
            inspect.signature(handlers[kind]).bind(0, 0, *fields)
        except TypeError:
            raise SlotnetError(f"reporter {type(reporter).__name__}: the handler of {kind!r} does not take "
                               f"(node, slot, {', '.join(fields)})") from None
    return handlers


def in_process(prep: Prepared, clock: SlotClock, on_lost: Callable[..., None]) -> Transport:
    """The default transport factory: every link of the run in this process."""
    return InProcessTransport(prep.topology, clock, prep.spec.faults, prep.spec.seed, on_lost=on_lost,
                              quantum=prep.quantum)


class _Network:
    """The live pieces of one run; also the target of control faults."""

    def __init__(self, prep: Prepared) -> None:
        spec = prep.spec
        self.prep = prep
        self.clock = SlotClock()
        self.runtime = SlotRuntime()
        self.reporter = prep.scheme.reporter(prep.setup)
        self.tracer = Tracer(spec.trace, self.reporter.events) if spec.trace else None
        factory = spec.transport or in_process
        self.transport: Transport = factory(prep, self.clock, self._lost)
        self.handlers = _checked_handlers(self.reporter)
        self.batch = SlotBatch(self.handlers) if spec.observer == "buffered" else None
        n = prep.topology.n_nodes
        self.outlets = [self.transport.outlet(v) for v in range(n)]
        self.ports = [prep.topology.ports(v) for v in range(n)]
        self.contexts: list[NodeContext] = [self._context(v, 0) for v in range(n)]
        self.nodes: list[Node | None] = [None] * n
        self.scopes: list[trio.CancelScope | None] = [None] * n
        self.restarts: list[int] = []
        self.last_active = -1

    # -- contexts and events ------------------------------------------------------------
    def _record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        if self.batch is not None:
            if kind not in self.handlers:
                raise SlotnetError(f"node {node} recorded unknown event {kind!r} in slot {slot}")
            self.batch.record(node, slot, kind, values)
            return
        try:
            handler = self.handlers[kind]
        except KeyError:
            raise SlotnetError(f"node {node} recorded unknown event {kind!r} in slot {slot}") from None
        handler(node, slot, *values)

    def _traced_record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        self._record(node, slot, kind, values)
        assert self.tracer is not None
        self.tracer.record(node, slot, kind, values)

    def _context(self, v: int, incarnation: int) -> NodeContext:
        prep = self.prep
        rng = node_rng(prep.spec.seed, v, incarnation)
        common: dict[str, Any] = dict(
            node=v, ports=self.ports[v], geometry=prep.topology, params=prep.node_params, rng=rng,
            outlet=self.outlets[v], clock=self.clock, runtime=self.runtime, on_unread=self._unread,
            incarnation=incarnation, quantum=prep.quantum,
        )
        if self.tracer is not None and self.tracer.wants_node(v):
            return TracedContext(tap=self.tracer.tap, recorder=self._traced_record, **common)
        return NodeContext(recorder=self._record, **common)

    def _lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        self.reporter.on_lost(slot, sender, port, receiver, message, cause)
        if self.tracer is not None:
            for v in (sender, receiver):
                if v >= 0 and self.tracer.wants_node(v):
                    self.tracer.driver_tap(v, self.clock.slot, "lost", {"from": sender, "port": port, "to": receiver,
                                                                 "message": message, "cause": cause})

    def _unread(self, node: int, inbox: Any) -> None:
        cause = "node_down" if not self.transport.is_alive(node) else "node_finished"
        for _, message in inbox:
            self.transport.lose_unread(node, message, cause)

    # -- node tasks -----------------------------------------------------------------------
    async def node_main(self, v: int, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        ctx = self.contexts[v]
        try:
            node = self.prep.scheme.node(ctx)
        except SlotnetError:
            raise
        except Exception as exc:
            raise NodeFailure(v, self.clock.slot, exc) from exc
        self.nodes[v] = node
        ctx._task = trio.lowlevel.current_task()
        self.runtime.running += 1
        with trio.CancelScope() as scope:
            self.scopes[v] = scope
            task_status.started()
            try:
                await node.run()
            except (trio.Cancelled, SlotnetError):
                raise
            except Exception as exc:
                raise NodeFailure(v, self.clock.slot, exc) from exc
            self.runtime.step_done()  # returned: its last step is over

    # -- one slot -----------------------------------------------------------------------
    async def step(self, slot: int, nursery: trio.Nursery) -> None:
        """Run slot ``slot``: control faults, delivery, wake-ups, restarts, then the barrier."""
        self.clock.slot = slot
        events = self.prep.spec.faults.by_slot.get(slot, ())
        late = []
        for ev in events:
            if FAULT_KINDS[ev.kind].after_delivery:
                late.append(ev)
            else:
                self.apply(ev)
        woken = self.runtime.wake(slot, await self.transport.exchange(slot), self.contexts)
        for ev in late:
            self.apply(ev)
        for v in self.restarts:
            await nursery.start(self.node_main, v)
        self.restarts.clear()
        if woken or self.runtime.running:
            self.last_active = slot
        await self.runtime.wait_quiescent()

    def quiescent(self) -> bool:
        """Nothing left to do: no node awake or due, nothing in flight."""
        return self.runtime.running == 0 and self.runtime.next_due() is None and not self.transport.busy()

    # -- faults (the injector; kinds call back into FaultTarget) ---------------------------
    def apply(self, ev: FaultEvent) -> None:
        kind = FAULT_KINDS[ev.kind]
        if self.tracer is not None and self.tracer.wants_node(ev.node) and kind.takes_effect(ev, self):
            self.tracer.driver_tap(ev.node, self.clock.slot, "fault", {"fault": ev.kind, "port": ev.port})
        kind.apply(ev, self)

    def is_alive(self, node: int) -> bool:
        return self.transport.is_alive(node)

    def set_link(self, node: int, port: int, up: bool) -> None:
        self.transport.set_link(node, port, up)

    def crash(self, node: int) -> None:
        if not self.transport.is_alive(node):
            return
        held = self.nodes[node].held() if self.nodes[node] is not None else 0  # type: ignore[union-attr]
        if held:
            self.transport.ledger.add("lost", "crash", held)
        self.transport.set_alive(node, False)
        scope = self.scopes[node]
        if scope is not None:
            scope.cancel()
        self.nodes[node] = None

    def recover(self, node: int) -> None:
        if self.transport.is_alive(node):
            return
        self.contexts[node] = self._context(node, self.contexts[node].incarnation + 1)
        self.transport.set_alive(node, True)
        self.restarts.append(node)  # started in this slot, after the delivery


async def run_async(spec: RunSpec, *, progress: Progress | None = None,
                    on_slot: Callable[[int], None] | None = None) -> Result:
    """Run ``spec`` inside the caller's Trio loop and return its :class:`Result`.

    Raises:
        SpecError, TopologyError, FaultSpecError: bad input (before any slot runs).
        NodeFailure: a node's rule raised.
        CapacityError: a node oversent a port.
    """
    prep = spec.prepare()
    net = _Network(prep)
    n = prep.topology.n_nodes
    monitor = StabilityMonitor(n, spec.warmup, spec.slots, prep.max_backlog_per_node)
    one_shot = prep.scheme.until == "quiescent"
    reporter = net.reporter
    t0 = time.perf_counter()
    slots_run = 0
    complete = False
    try:
        async with trio.open_nursery() as nursery:
            for ev in spec.faults.by_slot.get(0, ()):
                if not FAULT_KINDS[ev.kind].after_delivery:
                    net.apply(ev)
            for v in range(n):
                if net.transport.is_alive(v):
                    await nursery.start(net.node_main, v)
            net.last_active = 0
            await net.runtime.wait_quiescent()
            with _quiet_gc():
                for slot in range(spec.slots):
                    if slot:
                        await net.step(slot, nursery)
                    slots_run = slot + 1
                    if net.batch is not None:
                        net.batch.flush()
                    reporter.end_slot(slot)
                    if net.tracer is not None:
                        net.tracer.end_slot()
                    if progress is not None:
                        progress.update(slot)
                    if on_slot is not None:
                        on_slot(slot)
                    if not monitor.sample(slot, reporter.backlog()):
                        break
                    if one_shot and net.quiescent():
                        complete = True
                        break
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # unwrap a lone failure into its precise error
        raise _single(group) from None
    finally:
        if net.tracer is not None:
            net.tracer.close()
        if progress is not None:
            progress.close()
    wall = time.perf_counter() - t0
    result = _collect(net, spec, prep, monitor, slots_run, wall)
    if one_shot:
        result.completion = {"complete": complete, "slot": net.last_active if complete else None,
                             "time": net.last_active / prep.quantum if complete else None}
        result.metrics.setdefault("completion_time", result.completion["time"])
    return result


@contextmanager
def _quiet_gc() -> Iterator[None]:
    """Keep the cyclic GC off the long-lived network during the slot loop.

    The network (tasks, contexts, outlets, queues) is built once and lives for the whole
    run; the slot loop allocates only short-lived messages. Freezing the former and
    collecting the young generation less often saves about a fifth of the time per
    packet-hop (``benchmarks/deflection_throughput.py``). Settings are restored on exit.
    """
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(old[0], 50_000), old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def _single(group: BaseExceptionGroup) -> BaseException:
    """The precise error inside a Trio exception group; the others are attached as notes."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(group)
    if not leaves:
        return group
    chosen = next((e for e in leaves if isinstance(e, SlotnetError)), leaves[0])
    for other in leaves:
        if other is not chosen:
            chosen.add_note(f"also: {type(other).__name__}: {other}")
    return chosen


def _collect(net: _Network, spec: RunSpec, prep: Prepared, monitor: StabilityMonitor, slots_run: int, wall: float) -> Result:
    rep = net.reporter
    ledger = net.transport.ledger
    in_flight = net.transport.in_flight()
    held = [(node.held() if node is not None else 0) for node in net.nodes]
    rep.holdings([node.held_packets() if node is not None else () for node in net.nodes])
    invariants = check_invariants(rep.invariants(ledger, in_flight, held))
    stability = monitor.verdict()
    metrics = dict(rep.metrics())
    metrics["stable"] = stability["stable"]
    theory = None
    if prep.scheme.theory is not None:
        theory = prep.scheme.theory(prep.setup)
    hops = net.transport.delivered + len(in_flight) + sum(ledger.values())
    return Result(
        scheme=prep.scheme.name,
        topology=prep.topology.describe(),
        seed=spec.seed,
        slots=spec.slots,
        warmup=spec.warmup,
        params={k: v for k, v in prep.params.items() if v is not None},
        load=dict(prep.setup.load),
        metrics=metrics,
        invariants=invariants,
        theory=theory,
        stability=stability,
        per_node=rep.per_node(),
        series=rep.series(),
        faults=spec.faults.to_list(),
        slots_run=slots_run,
        transport=net.transport.describe(),
        wall_seconds=wall,
        performance={"messages": hops, "node_wakeups": net.runtime.wakeups,
                     "messages_per_second": hops / wall if wall else None},
    )


def run(spec: RunSpec, *, progress: Progress | None = None) -> Result:
    """Run ``spec`` to completion (starts its own Trio loop)."""
    return trio.run(lambda: run_async(spec, progress=progress))
