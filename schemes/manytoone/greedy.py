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
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Param, Scheme, Setup
from ._engine import DST, FIRST, LAST, SRC, BufferedNode, packet
from ._inputs import COMMON_PARAMS, MESH, SOURCE, instance_of, prepare_instance
from .reporter import M2OReporter
from .theory import instance_bounds

__all__ = ["SCHEME", "GreedyNode", "next_port", "prepare", "theory"]


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
        self.farthest = ctx.params["order"] == "farthest-first"
        self.queues: dict[int, Any] = {}
        self.seq = 0
        self.at_home = False  # its own packet is for itself: consumed at its first step
        dest = ctx.params["dest"][self.me]
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
            ctx.record("delivered", self.me, 0, 0)
        self._peak()
        while True:
            for port in sorted(self.queues):
                q = self.queues[port]
                if q:
                    msg = heapq.heappop(q)[2] if self.farthest else q.popleft()
                    self.occ -= 1
                    self.load -= 1
                    ctx.send(port, msg)
            inbox = await (ctx.next_slot() if any(self.queues.values()) else ctx.idle())
            slot = ctx.slot
            for _, frozen in inbox:
                msg = list(frozen)  # messages decode as tuples
                if msg[DST] == self.me:
                    msg[FIRST] = msg[LAST] = slot
                    ctx.record("delivered", msg[SRC], slot, slot)
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

    def held_packets(self) -> list[int]:
        """The sources of the packets queued here (a packet is named by its source, §2)."""
        out: list[int] = [self.me] if self.at_home else []
        for q in self.queues.values():
            out.extend(item[2][SRC] if self.farthest else item[SRC] for item in q)
        return sorted(out)


def prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    """The instance as node parameters (any mesh sides)."""
    return prepare_instance(topology, params, "m2o-greedy", power_of_two=False)


def theory(setup: Setup) -> dict[str, Any]:
    """The instance's bounds (:func:`.theory.instance_bounds`; the paper gives greedy none)."""
    return instance_bounds(instance_of(setup.topology, setup.params))


SCHEME = Scheme(
    name="m2o-greedy",
    summary="many-to-one baseline: dimension-order shortest paths, FIFO (or farthest-first) per out-port",
    source=SOURCE,
    node=GreedyNode,
    reporter=M2OReporter,
    prepare=prepare,
    theory=theory,
    params=(*COMMON_PARAMS, Param("order", str, "fifo", "queue discipline per out-port", ("fifo", "farthest-first"))),
    topologies=MESH,
    until="quiescent",
    faults=None,  # every kind: see the module docstring
)
