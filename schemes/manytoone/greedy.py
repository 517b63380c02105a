"""``m2o-greedy``: dimension-order shortest paths, one FIFO (or farthest-first) queue per out-port.

The baseline the paper's local algorithms are measured against (§1 discusses why
greedy routing needs large buffers on many-to-one instances). A packet corrects
dimension 0 first, then 1, then 2, along a shortest path; a node keeps one queue per
out-port and sends the head of each non-empty queue every step. ``order=fifo``: first
come, first served (packets arriving in one step in increasing in-port order, after
the node's own packet at step 0); ``order=farthest-first``: the packet with the most
hops still to go first, ties first come. A packet is delivered (consumed) on arriving
at its destination. Buffers are counted by the family's rules (:class:`._engine.BufferedNode`):
a packet counts at a node from its arrival until it leaves.

Faults: every kind is tolerated, none is repaired. The rule has no schedule,
so a message a fault destroys (``loss``, ``corrupt``, a down link or partition, a stalled
or crashed receiver) simply never arrives, a copy ``dup`` adds is routed and delivered
like the original (the reporter tells its second delivery from a scheme bug), and a
``delay`` only moves a packet later. A dead port is not routed around: dimension order
has exactly one next hop, so a packet queued for a dead link is sent into it and lost
there, counted by cause. A crashed node loses its queues (the fabric books them as
``crash``, from :meth:`GreedyNode.held`); restarted, it is a node whose own packet --
§2's input at time 0 -- is gone (sent before the crash, or destroyed by it), so it does
not create it again and only forwards what reaches it. The shared reporter accounts for
every packet (:mod:`.reporter`): each delivered, lost to a fault by cause (``crash`` for
those a crashed node held), or still in progress, and second deliveries of packets a
``dup`` fault copied told apart from scheme bugs. A lost packet leaves nobody waiting,
so a faulted run still ends at quiescence.

The instance comes from ``--param instance=FILE`` or ``--param workload=... seed=S``
(:mod:`._inputs`); the run goes on until quiescence.

Checks beside the family's (:class:`GreedyReporter`): a packet counts the links it crosses
(field :data:`CROSSED`) and its destination records the count with the delivery, so the
kit's path checks hold dimension order to what it promises -- a shortest path
(``shortest_paths``, ``hops_within_bounds``, ``delivered_at_destination``); with
``order=farthest-first`` every packet a port serves is checked against the one it would
serve next (``service_order``: the most hops still to go first); and the kit's
``liveness``. The count is not the only witness: the scheme declares ``follow``, so the
orchestrator reports every send of a packet and the kit's
:class:`~slotnet.schemes.kit.HopWitness` counts them (``hops_witnessed``) and holds each
path to the declared dimension order, hop by hop (``declared_route``: the dimensions a
packet crosses never decrease) and, with ``order=fifo``, each port to first come, first
served (``fifo_order``: packets leave a port in the order they reached the node).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Inputs, Param, Scheme, Setup
from ..kit import CHECK_EVENTS, HOP_EVENTS, HopWitness, OrderCheck, PathCheck, ServiceOrder
from ._engine import DST, FIRST, LAST, SRC, BufferedNode, packet
from ._inputs import COMMON_PARAMS, Given, GreedyInputs, instance_of, prepare_instance, record_fields
from .reporter import EVENTS, M2OReporter
from .theory import greedy_time_bound, instance_bounds, instance_claims

__all__ = ["CROSSED", "SCHEME", "GreedyNode", "GreedyReporter", "next_port", "packet_identity", "prepare", "theory"]

#: The field of a greedy packet counting the links it has crossed (the engine's ``a``,
#: unused by this rule): what its destination reports with the delivery.
CROSSED = 9


def next_port(sides: tuple[int, ...], here: tuple[int, ...], dest: tuple[int, ...]) -> tuple[int, int] | None:
    """``(dimension, direction)`` of the next hop from ``here`` towards ``dest`` in dimension order, or None there."""
    for dim, (a, b) in enumerate(zip(here, dest)):
        if a != b:
            return dim, 1 if b > a else -1
    return None


class GreedyNode(BufferedNode):
    """Dimension-order routing with per-port FIFO or farthest-first queues."""

    def __init__(self, ctx: NodeContext) -> None:
        """The node as §2's time 0 has it: its own packet queued (or waiting to be consumed here)."""
        super().__init__(ctx)
        self.sides = tuple(int(s) for s in ctx.geometry.sides)
        self.coords = tuple(ctx.coords)
        prm: GreedyInputs = ctx.params
        self.farthest = prm.order == "farthest-first"
        self.queues: dict[int, Any] = {}
        self.seq = 0
        #: the declared order of farthest-first (most hops to go first), checked at every send
        self.order = ServiceOrder(ctx, self._to_go, lambda m: (m[SRC],)) if self.farthest else None
        self.at_home = False  # its own packet is for itself: consumed at its first step
        dest = prm.dest[self.me]
        if dest >= 0 and not ctx.incarnation:  # restarted after a crash: its packet is gone
            if dest == self.me:
                self.at_home = True
                self.occ += 1
            else:
                self._enqueue(packet(0, self.me, dest, -1))

    async def run(self) -> None:
        ctx = self.ctx
        if self.at_home:
            self.at_home = False
            self.occ -= 1
            ctx.record("delivered", self.me, 0, 0, 0)
        self._peak()
        order = self.order
        while True:
            for port in sorted(self.queues):
                q = self.queues[port]
                if q:
                    if order is not None:
                        msg = heapq.heappop(q)[2]
                        order.served(port, msg, q[0][2] if q else None)
                    else:
                        msg = q.popleft()
                    self.occ -= 1
                    self.load -= 1
                    msg[CROSSED] += 1
                    ctx.send(port, msg)
            inbox = await (ctx.next_slot() if any(self.queues.values()) else ctx.idle())
            slot = ctx.slot
            for _, frozen in inbox:
                msg = list(frozen)  # messages decode as tuples
                if msg[DST] == self.me:
                    msg[FIRST] = msg[LAST] = slot
                    ctx.record("delivered", msg[SRC], slot, slot, msg[CROSSED])
                else:
                    self._enqueue(msg)
            self._peak()

    def _enqueue(self, msg: list[Any]) -> None:
        dest = self.ctx.geometry.coords(msg[DST])
        dim, sign = next_port(self.sides, self.coords, dest)  # type: ignore[misc]
        port = self.ctx.port(dim, sign)
        assert port is not None
        self.occ += 1
        self.load += 1
        self.seq += 1
        if self.farthest:
            left = sum(abs(a - b) for a, b in zip(self.coords, dest))
            heapq.heappush(self.queues.setdefault(port, []), (-left, self.seq, msg))
        else:
            self.queues.setdefault(port, deque()).append(msg)

    def _to_go(self, msg: list[Any], port: int = -1) -> int:
        """Farthest-first's declared key: minus the hops ``msg`` still has to go (the topology's distance)."""
        return -self.ctx.geometry.distance(self.me, msg[DST])

    def held_packets(self) -> list[int]:
        """The sources of the packets queued here (a packet is named by its source, §2)."""
        out: list[int] = [self.me] if self.at_home else []
        for q in self.queues.values():
            out.extend(item[2][SRC] if self.farthest else item[SRC] for item in q)
        return sorted(out)


class GreedyReporter(M2OReporter):
    """The family's reporter, with the kit's checks of dimension-order routing.

    ``delivered`` carries the hops the packet crossed; every delivery is checked by the
    kit's :class:`~slotnet.schemes.kit.PathCheck` against the instance (the packet of
    source ``src`` is bound for ``dest[src]``, born at time 0) with shortest paths
    declared; ``disorder`` events (farthest-first) fail ``service_order``.
    """

    events: Mapping[str, tuple[str, ...]] = {**EVENTS, "delivered": (*EVENTS["delivered"], "hops"), **CHECK_EVENTS,
                                             **HOP_EVENTS}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.paths = PathCheck(setup.topology, shortest=True, faults=setup.faults)
        self.order = OrderCheck()
        #: every send of a packet, seen by the orchestrator (``follow``): hops and dimension order
        self.witness = HopWitness(setup.topology, "dimension-order", setup.faults,
                                  fifo=not self.farthest)

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {**super().handlers(), "delivered": self._delivered_hops, **self.order.handlers(),
                **self.witness.handlers()}

    def _delivered_hops(self, node: int, slot: int, src: int, first: int, last: int, hops: int | None = None) -> None:
        self._delivered(node, slot, src, first, last)
        if hops is not None and 0 <= src < len(self.dest):
            self.paths.delivered(node, slot, 0, hops, (src,), src, self.dest[src])
            self.witness.delivered(node, slot, src, 0, hops)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        out = super().invariants(lost, in_flight, held)
        out.update(self.paths.invariants())
        out.update(self.witness.invariants())
        out.update(self.liveness.invariants())
        if self.farthest:
            out.update(self.order.invariants())
        return out

    @property
    def farthest(self) -> bool:
        prm: GreedyInputs = self.setup.params
        return prm.order == "farthest-first"


def packet_identity(message: Any) -> tuple[int, int]:
    """A packet's name, its source (§2: one packet per source), as the witness keys it."""
    return message[SRC], 0


def prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[GreedyInputs]:
    """The instance as node parameters (any mesh sides), and the queue discipline."""
    base = prepare_instance(topology, params, "m2o-greedy")
    return Inputs(GreedyInputs(base.dest, base.n_packets, Given.of(params).order))


def theory(setup: Setup) -> dict[str, Any]:
    """The instance's bounds (:func:`.theory.instance_bounds`; the paper gives greedy none)."""
    return instance_bounds(instance_of(setup.topology, setup.params))


SCHEME = Scheme(
    name="m2o-greedy",
    summary="many-to-one baseline: dimension-order shortest paths, FIFO (or farthest-first) per out-port",
    node=GreedyNode,
    reporter=GreedyReporter,
    prepare=prepare,
    theory=theory,
    claims=lambda setup, th: instance_claims(th),
    follow=packet_identity,
    # the cap: greedy_time_bound (ours: each packet delayed at most once by each other)
    **record_fields(lambda inst, params: greedy_time_bound(inst) + 1,
                    (*COMMON_PARAMS, Param("order", str, "fifo", "queue discipline per out-port", ("fifo", "farthest-first")))),
)
