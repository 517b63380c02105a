"""The live pieces of one run, or of one shard of it: node tasks, contexts, the transport.

A :class:`Network` hosts the nodes of ``local`` (all of them in a one-process run, a
block of them in a shard), builds their contexts, runs one slot at a time (control
faults, delivery, wake-ups, restarts, the barrier) and is the target of control faults.
Events nodes record go to a sink: the reporter's handlers directly (an untraced
context calls them itself, see ``NodeContext.record``), or a :class:`SlotBatch` that
ships them (see ``_observer``); traced events go to a :class:`~._trace.TraceBuffer`.

A stalled node (``stall@FROM:TO:NODE``) keeps its task and state but is not woken in
slots FROM..TO: if it was due in the next slot it is taken off the runtime's due list,
a timer due in the stall fires at TO+1 instead, and messages that reach it in the stall
are lost (cause ``stalled``; see :mod:`slotnet.fabric`). A node stalled from slot 0
takes its first step at TO+1. Each node's context gets the dead-port timeline of the
schedule (the failure detector, ``detect`` slots late).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import outcome
import trio

from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FAULT_KINDS, NOTE_CAUSES, SlotClock, Transport
from slotnet.nodes import Node
from slotnet.nodes.runtime import NodeContext, SlotRuntime, TracedContext, run_streams
from slotnet.schemes import HOP_EVENT

from ._completion import Waiting
from ._observer import SlotBatch
from ._spec import Prepared
from ._trace import TraceBuffer

__all__ = ["Network", "checked_handlers"]

#: Every node task's name (one string for all of them).
_TASK_NAME = f"{__name__}.Network.node_main"


class _NoScope:
    """The cancel scope of a node task that no fault can crash: none. Its methods are
    static, so that a ``with`` makes no bound method per task."""

    @staticmethod
    def __enter__() -> None:
        return None

    @staticmethod
    def __exit__(*exc: object) -> None:
        return None


_NO_SCOPE = _NoScope()


class _Stop(BaseException):
    """Ends a parked node task once the run is over (:meth:`Network.stop`); a
    BaseException, so that a scheme's ``except Exception`` lets it through."""


#: (slot, sender, port, receiver, message, cause) -> None: a message a fault destroyed.
LostSink = Callable[[int, int, int, int, Any, str], None]


def checked_handlers(reporter: Any) -> dict[str, Callable[..., None]]:
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


class _FollowedSend:
    """A node's ``send`` that also reports each followed packet it sends (``Scheme.follow``)
    as a ``hop`` event: the validator's own witness of a packet's path, which no node code
    writes. Used only with an outlet that cannot report its sends itself (a transport
    other than the fabric's: the fabric's outlets do it in their own ``send``, see
    ``Outlet.watch``). One small object per node (three slots); what every node shares,
    ``(follow, hop, clock)``, is one tuple of the network's."""

    __slots__ = ("send", "node", "shared")

    def __init__(self, send: Callable[..., None], node: int, shared: tuple[Any, Any, SlotClock]) -> None:
        self.send = send
        self.node = node
        self.shared = shared

    def __call__(self, port: int, message: Any, size: float = 1.0) -> None:
        self.send(port, message, size)  # a send the fabric refuses is no hop
        follow, hop, clock = self.shared
        key = follow(message)
        if key is not None:
            hop(self.node, clock.slot, port, key[0], key[1])


def _both(first: Any, second: Any) -> Any:
    """A tap that calls ``first`` then ``second``."""
    def tap(node: int, slot: int, kind: str, fields: dict[str, Any]) -> None:
        first(node, slot, kind, fields)
        second(node, slot, kind, fields)
    return tap


class Network:
    """The nodes of ``local``, their contexts and tasks, the transport; the target of control faults."""

    def __init__(
        self,
        prep: Prepared,
        transport: Callable[[SlotClock, LostSink], Transport],
        *,
        handlers: Mapping[str, Callable[..., None]] | None,
        batch: SlotBatch | None,
        on_lost: LostSink,
        tracer: TraceBuffer | None,
        local: range | None = None,
        monitor: Any = None,
    ) -> None:
        self.prep = prep
        #: the judge of the scheme's properties and choices (``_properties``), or None
        self.monitor = monitor
        self.clock = SlotClock()
        self.runtime = SlotRuntime(prep.topology.n_nodes, self._unread)
        self.tracer = tracer
        self._on_lost = on_lost
        self.transport: Transport = transport(self.clock, self._lost)
        self.handlers = dict(handlers) if handlers is not None else None  # a dict: the compiled context keeps one
        self.batch = batch
        n = prep.topology.n_nodes
        self.local = local if local is not None else range(n)
        #: the local node ids, one int object each, shared by everything built for the node
        #: (its outlet, context, parking record, task): one int, not one per holder
        self._ids = list(self.local)
        #: what the contexts make their streams from: the local nodes' seeds, made at once
        #: (the same streams, see ``SeedTable``), or the run's philox key (``--rng philox``)
        self._seeds = run_streams(prep.spec.seed, prep.spec.rng, self.local if isinstance(self.local, range) else None)
        faults = prep.spec.faults
        self._detect = faults.detect
        self._timeline = faults.port_timeline(prep.topology) if faults.detect is not None and not faults.empty else {}
        self._stalled: dict[int, bool] = {}  # stalled local node -> it was due next slot when the stall began
        self._late_start: set[int] = set()  # stalled since slot 0: first step when the stall ends
        self._unstall_after_delivery: list[int] = []
        #: local nodes whose context ever shows a dead port: their sends are judged each slot
        self._watched = [v for v in self.local if v in self._timeline]
        self.outlets: list[Any] = [None] * n
        for v in self._ids:
            self.outlets[v] = self.transport.outlet(v)
        # shared by every context: one params view, one bound method of each sink
        params = prep.node_params  # a family's frozen record as it is; a mapping behind a read-only view
        self._params = MappingProxyType(dict(params)) if isinstance(params, Mapping) else params
        self._sinks = (self._record, self._traced_record)
        #: ``(follow, hop sink, clock)`` where the scheme follows its packets (``Scheme.follow``), else None
        self._followed: tuple[Any, Any, SlotClock] | None = None
        follow = prep.scheme.follow
        if follow is not None:
            hop: Callable[..., None]
            if batch is not None:
                if HOP_EVENT not in batch.kinds():
                    raise SlotnetError(f"scheme {prep.scheme.name!r} declares follow but its reporter does not "
                                       f"handle {HOP_EVENT!r} events")
                record = batch.record
                hop = lambda node, slot, *values: record(node, slot, HOP_EVENT, values)
            else:
                assert handlers is not None
                if HOP_EVENT not in handlers:
                    raise SlotnetError(f"scheme {prep.scheme.name!r} declares follow but its reporter does not "
                                       f"handle {HOP_EVENT!r} events")
                hop = handlers[HOP_EVENT]
            self._followed = (follow, hop, self.clock)
        #: the outlets report the followed sends themselves (``watch``): no wrapper around ``send``
        self._watching = self._followed is not None and all(hasattr(self.outlets[v], "watch") for v in self.local)
        if self._watching:
            assert self._followed is not None
            for v in self.local:
                self.outlets[v].watch(self._followed[0], self._followed[1])
        # a node task has a cancel scope of its own only where a fault may crash it (a scope is ~800 bytes)
        self._scoped = not faults.empty
        #: the monitor's counts and its ``choose`` (for a choice it lacks), one pair for every context
        self._choose = (monitor.counts, monitor.choose) if monitor is not None and monitor.dists else None
        self.contexts: list[NodeContext | None] = [None] * n
        for v in self._ids:
            self.contexts[v] = self._context(v, 0)
        self.nodes: list[Node | None] = [None] * n
        self.scopes: list[trio.CancelScope | None] = [None] * n
        self.restarts: list[int] = []
        #: ``(slot, node, its held_packets())`` for every crash that destroyed packets a node held
        self.crashed: list[tuple[int, int, list[Any]]] = []
        self.last_active = -1
        #: the local nodes whose current incarnation returned from ``run()``
        self.finished: set[int] = set()
        #: node objects built, node tasks spawned and node tasks ended so far (with the runtime's
        #: steps: a shard's progress in its heartbeat -- ``ended`` moves while a failed shard
        #: cancels its other nodes' tasks, which takes minutes for half a million of them)
        self.built = 0
        self.spawned = 0
        self.ended = 0

    # -- contexts and events ------------------------------------------------------------
    def _record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        if self.batch is not None:
            self.batch.record(node, slot, kind, values)
            return
        assert self.handlers is not None
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
        record, traced_record = self._sinks
        common: dict[str, Any] = dict(
            node=v, geometry=prep.topology, params=self._params, seed=self._seeds, outlet=self.outlets[v],
            clock=self.clock, runtime=self.runtime, incarnation=incarnation, quantum=prep.quantum,
            dead_ports=self._timeline.get(v), detect=self._detect or 0,
        )
        mon = self.monitor
        watch = mon.tap if mon is not None and mon.messages else None  # the observer's own record of messages
        if self.tracer is not None and self.tracer.wants_node(v):
            tap = self.tracer.tap if watch is None else _both(self.tracer.tap, watch)
            ctx: NodeContext = TracedContext(tap=tap, recorder=traced_record, **common)
        elif watch is not None:
            ctx = TracedContext(tap=watch, recorder=record, **common)
        else:
            # the observer's handlers, called by the context itself (a batch keeps every event: no handlers)
            ctx = NodeContext(recorder=record, handlers=self.handlers if self.batch is None else None, **common)
        if self._followed is not None and not self._watching:
            ctx.send = _FollowedSend(ctx.send, v, self._followed)
        if self._choose is not None:
            ctx._chooser = self._choose
        return ctx

    def _lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A message a fault destroyed, or (``dup``, ``delay``) copied or held back.

        Losses and copies reach the reporter (a copy with cause ``dup``: broadcast
        reporters tell its duplicates from a scheme's); delays are only traced.
        """
        note = cause in NOTE_CAUSES
        if cause != "delay":
            self._on_lost(slot, sender, port, receiver, message, cause)
        if self.tracer is not None:
            fields: dict[str, Any] = {"from": sender, "port": port, "to": receiver, "message": message}
            fields.update({"fault": cause} if note else {"cause": cause})
            # written once: at the sender when it is traced, else at the receiver
            for v in (sender, receiver):
                if v >= 0 and self.tracer.wants_node(v):
                    self.tracer.driver_tap(v, self.clock.slot, "fault" if note else "lost", fields)
                    break

    def _unread(self, node: int, inbox: Any) -> None:
        cause = "node_down" if not self.transport.is_alive(node) else "node_finished"
        for in_port, message in inbox:
            self.transport.lose_unread(node, message, cause, in_port)

    # -- node tasks -----------------------------------------------------------------------
    def _build(self, v: int) -> Node:
        """The scheme's node object for ``v``'s current context (its state before its first step)."""
        ctx = self.contexts[v]
        assert ctx is not None
        try:
            node = self.prep.scheme.node(ctx)
        except SlotnetError:
            raise
        except Exception as exc:
            raise NodeFailure(v, self.clock.slot, exc) from exc
        self.nodes[v] = node
        self.built += 1
        return node

    async def node_main(self, v: int, counted: bool = False, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """The node's task. ``counted``: started with ``start_soon``, already counted as
        running by the starter (:meth:`start`); else started with ``nursery.start``."""
        ctx = self.contexts[v]
        assert ctx is not None
        node = self.nodes[v]
        if node is None:  # restarted after a crash: a new node for the new incarnation
            node = self._build(v)
        self.runtime.attach(v, trio.lowlevel.current_task(), counted)
        with (trio.CancelScope() if self._scoped else _NO_SCOPE) as scope:
            self.scopes[v] = scope
            task_status.started()
            del task_status  # it holds the nursery start() opened, for as long as the node runs
            try:
                await node.run()
                self.finished.add(v)
            except _Stop:
                pass  # the run is over (see stop)
            except (trio.Cancelled, SlotnetError):
                raise
            except Exception as exc:
                raise NodeFailure(v, self.clock.slot, exc) from exc
            finally:
                self.ended += 1
            self.runtime.step_done()  # returned: its last step is over

    async def start(self, nursery: trio.Nursery) -> None:
        """Slot 0: every local node is built, then its control faults, then every live local node's first step.

        A node exists, with its input, before any fault: a crash in slot 0 destroys what
        the node was built holding (booked as ``crash`` from :meth:`Node.held`), even
        though it never took a step.
        """
        for v in self._ids:
            self._build(v)
        events = self.prep.spec.faults.by_slot.get(0, ())
        for ev in events:
            if not FAULT_KINDS[ev.kind].after_delivery:
                self.apply(ev)
        # Slot 0 has no delivery: what follows one (a recover) follows the control faults
        # at once, so crash@0 + recover@0 is a node that loses its input and starts afresh.
        for ev in events:
            if FAULT_KINDS[ev.kind].after_delivery:
                self.apply(ev)
        self.restarts.clear()  # every live node starts below, a recovered one as its new incarnation
        # Spawned, not started one by one (``nursery.start`` opens a nursery and waits for
        # each task): counted as running as it is spawned, each task takes its first step
        # when the barrier below lets the tasks run. Counted one by one, so that the
        # watchdog sees the spawning move (half a million spawns take more than its limit
        # on a busy machine), and the heartbeat's progress with it (``spawned``).
        started = []
        for v in self._ids:
            if v in self._stalled:
                self._late_start.add(v)
            elif self.transport.is_alive(v):
                started.append(v)
        runtime = self.runtime
        for v in started:
            nursery.start_soon(self.node_main, v, True, name=_TASK_NAME)
            runtime.running += 1
            self.spawned += 1
        del started
        self.last_active = 0
        await self.runtime.wait_quiescent()
        self._judge_dead_sends(0)

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
        woken = self.runtime.wake(slot, await self.transport.exchange(slot))
        for v in self._unstall_after_delivery:
            self._set_stalled(v, False)
            if self.transport.is_alive(v):  # a crash in this slot ended it before its first step
                self.restarts.append(v)
        self._unstall_after_delivery.clear()
        for ev in late:
            self.apply(ev)
        for v in self.restarts:
            await nursery.start(self.node_main, v, name=_TASK_NAME)
        self.restarts.clear()
        if woken or self.runtime.running:
            self.last_active = slot
        await self.runtime.wait_quiescent()
        self._judge_dead_sends(slot)

    def _judge_dead_sends(self, slot: int) -> None:
        """At the end of ``slot``: which senders used a port they saw dead by choice (their
        losses there are avoidable). A bufferless node (``Scheme.must_forward``) with every
        port it saw alive busy had no choice: its send was forced."""
        if not self._watched:
            return
        alive = self.transport.is_alive
        must_forward = self.prep.scheme.must_forward
        for v in self._watched:
            ctx = self.contexts[v]
            assert ctx is not None
            live = ctx.live_ports
            if len(live) == len(ctx.ports) or not alive(v):
                continue
            outlet = self.outlets[v]
            seen_alive = set(live)
            idle = set(outlet.idle_ports(slot))
            # a port still busy with a multi-tick message started earlier was chosen then, not now
            started = getattr(outlet, "started_ports", None)  # an outlet of another transport may lack it
            used = started(slot) if started is not None else [p.index for p in ctx.ports if p.index not in idle]
            used_dead = any(p not in seen_alive for p in used)
            if used_dead and (not must_forward or not idle.isdisjoint(seen_alive)):
                self.transport.mark_unforced(v, slot)

    async def stop(self, batch: int = 1024) -> None:
        """End the parked node tasks at the end of the run, ``batch`` at a time.

        Cancelling the nursery instead ends them all at once, and Trio then holds a
        ``Cancelled`` with its traceback for every one of them together: about 1.5 KiB a
        node on top of the run's peak. Each task gets the exception :class:`_Stop` at its
        park (where a cancel would have hit it: its node's state is the same) and returns;
        what it leaves behind is freed before the next batch. Nothing in a result changes.
        """
        runtime = self.runtime
        parked = runtime.parked()
        for i in range(0, len(parked), batch):
            for rec in parked[i:i + batch]:
                runtime.resume(rec, outcome.Error(_Stop()))
            await runtime.wait_quiescent()

    def waiting(self) -> list[Waiting]:
        """The live local nodes parked now, each with the slot of its last ``idle()`` and its timer."""
        alive = self.transport.is_alive
        return [Waiting(rec.node, rec.since, rec.timer) for rec in self.runtime.parked() if alive(rec.node)]

    def mid_step(self) -> list[tuple[int, Any]]:
        """``(node, task)`` of every live local node woken and not yet parked or returned."""
        alive = self.transport.is_alive
        return [(rec.node, rec.task) for rec in self.runtime.records
                if rec is not None and rec.task is not None and not rec.parked and rec.node not in self.finished
                and alive(rec.node)]

    def down(self) -> list[int]:
        """The local nodes down (crashed, not recovered) now."""
        alive = self.transport.is_alive
        return [v for v in self.local if not alive(v)]

    def quiescent(self) -> bool:
        """Nothing left to do here: no node awake or due, nothing in flight."""
        return (self.runtime.running == 0 and self.runtime.next_due() is None and not self.transport.busy()
                and not self._stalled)

    # -- end-of-run state ---------------------------------------------------------------
    def held(self) -> list[int]:
        return [(node.held() if node is not None else 0) for node in self.nodes]

    def held_packets(self) -> list[Any]:
        return [(node.held_packets() if node is not None else ()) for node in self.nodes]

    # -- faults (the injector; kinds call back into FaultTarget) ---------------------------
    def apply(self, ev: Any) -> None:
        """Apply a scheduled control fault (a ``FaultEvent`` or a span's ``SpanEdge``), traced where it acts."""
        kind = FAULT_KINDS[ev.kind]
        if self.tracer is not None:
            shown = [v for v in kind.touches(ev, self.prep.topology) if v in self.local and self.tracer.wants_node(v)]
            if shown and kind.takes_effect(ev, self):
                fields = kind.trace_fields(ev)
                for v in shown:
                    self.tracer.driver_tap(v, self.clock.slot, "fault", fields)
        kind.apply(ev, self)

    def is_alive(self, node: int) -> bool:
        return self.transport.is_alive(node)

    def set_link(self, node: int, port: int, up: bool) -> None:
        self.transport.set_link(node, port, up)

    def cut(self, nodes: frozenset[int], down: bool) -> None:
        """A partition begins (``down``) or ends: every link between ``nodes`` and the rest."""
        self.transport.cut(nodes, down)

    def stall(self, node: int, on: bool, until: int) -> None:
        """A stall of ``node`` over slots ..``until`` begins (``on``) or ends (see the module docstring)."""
        if node not in self.local:
            return
        if on:
            if not self.transport.is_alive(node):
                return
            self._set_stalled(node, True)
            self._stalled[node] = self.runtime.hold(node, until)
        elif node in self._stalled:
            due = self._stalled.pop(node)
            if node in self._late_start:  # never started: its first step follows this slot's delivery
                self._late_start.discard(node)
                self._unstall_after_delivery.append(node)
                return
            self._set_stalled(node, False)
            self.runtime.release(node, due)

    def _set_stalled(self, node: int, on: bool) -> None:
        self.transport.set_stalled(node, on)

    def crash(self, node: int) -> None:
        if node not in self.local or not self.transport.is_alive(node):
            return
        victim = self.nodes[node]
        held = victim.held() if victim is not None else 0
        if held:
            self.transport.ledger.add("lost", "crash", held)
            assert victim is not None
            self.crashed.append((self.clock.slot, node, list(victim.held_packets())))
        self.transport.set_alive(node, False)
        # A crash ends the incarnation and any stall of it: a down node is down, not stalled,
        # and its stall's end later wakes nothing (a recovered node starts unstalled).
        if self._stalled.pop(node, None) is not None:
            self._set_stalled(node, False)
        self._late_start.discard(node)
        scope = self.scopes[node]
        if scope is not None:
            scope.cancel()
        self.nodes[node] = None

    def recover(self, node: int) -> None:
        if node not in self.local or self.transport.is_alive(node):
            return
        old = self.contexts[node]
        assert old is not None
        self.contexts[node] = self._context(node, old.incarnation + 1)
        self.transport.set_alive(node, True)
        self.finished.discard(node)
        self.restarts.append(node)  # started in this slot, after the delivery
