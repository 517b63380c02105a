"""The ``m2o-greedy`` node rule: dimension-order shortest paths, one queue per out-port.

The baseline the paper's local algorithms are measured against (§1 discusses why
greedy routing needs large buffers on many-to-one instances). A packet corrects
dimension 0 first, then 1, then 2, along a shortest path; a node keeps one queue per
out-port and sends the head of each non-empty queue every step. ``order=fifo``: first
come, first served (packets arriving in one step in increasing in-port order, after
the node's own packet at step 0); ``order=farthest-first``: the packet with the most
hops still to go first, ties first come. A packet is delivered (consumed) on arriving
at its destination. Buffers are counted by the engine's rules (:mod:`._engine`): a
packet counts at a node from its arrival until it leaves.

Faults (issue #11): every kind is tolerated, none is repaired. The rule has no schedule,
so a message a fault destroys (``loss``, ``corrupt``, a down link or partition, a stalled
or crashed receiver) simply never arrives, a copy ``dup`` adds is routed and delivered
like the original (the reporter tells its second delivery from a scheme bug), and a
``delay`` only moves a packet later. A dead port is not routed around: dimension order
has exactly one next hop, so a packet queued for a dead link is sent into it and lost
there, counted by cause. A crashed node loses its queues (the fabric books them as
``crash``, from :meth:`GreedyNode.held`); restarted, it is a node whose own packet --
§2's input at time 0 -- is gone (sent before the crash, or destroyed by it), so it does
not create it again and only forwards what reaches it. The reporter accounts for every
packet (:mod:`._report`).
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

from slotnet.nodes import Node, NodeContext

from ._engine import DST, FIRST, LAST, SRC, packet

__all__ = ["GreedyNode", "next_port"]


def next_port(sides: tuple[int, ...], here: tuple[int, ...], dest: tuple[int, ...]) -> tuple[int, int] | None:
    """``(dimension, direction)`` of the next hop from ``here`` towards ``dest`` in dimension order, or None there."""
    for dim, (a, b) in enumerate(zip(here, dest)):
        if a != b:
            return dim, 1 if b > a else -1
    return None


class GreedyNode(Node):
    """Dimension-order routing with per-port FIFO or farthest-first queues."""

    def __init__(self, ctx: NodeContext) -> None:
        """The node as §2's time 0 has it: its own packet queued (or waiting to be consumed here)."""
        super().__init__(ctx)
        self.me = ctx.node
        self.sides = tuple(int(s) for s in ctx.geometry.sides)
        self.coords = tuple(ctx.coords)
        self.farthest = ctx.params["order"] == "farthest-first"
        self.queues: dict[int, Any] = {}
        self.seq = 0
        self.occ = self.load = self.max_load = self.max_occ = 0
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

    def _peak(self) -> None:
        if self.load > self.max_load or self.occ > self.max_occ:
            self.max_load = max(self.max_load, self.load)
            self.max_occ = max(self.max_occ, self.occ)
            self.ctx.record("peak", self.max_load, self.max_occ)

    def held(self) -> int:
        return self.occ

    def held_packets(self) -> list[int]:
        """The sources of the packets queued here (a packet is named by its source, §2)."""
        out: list[int] = [self.me] if self.at_home else []
        for q in self.queues.values():
            out.extend(item[2][SRC] if self.farthest else item[SRC] for item in q)
        return sorted(out)
