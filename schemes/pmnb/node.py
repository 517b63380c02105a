"""The node of ``packing`` (Theorem 3) and ``monotone`` (Theorem 4): rank by the scan, then route.

The phases and the bounds around them are :mod:`._routing_node`'s; the port rules are
:mod:`._packing`'s; under faults see :mod:`._offschedule`.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from slotnet.nodes import Inbox, Node

from ._inputs import RoutingInputs, is_active
from ._offschedule import send_blocked, sleep
from ._packing import monotone_port, packing_port, packing_steps, rank_destination
from ._prefix import ScanNode, scan_steps
from ._routing_node import phase_boundaries, start_tick
from ._scan import ScanPhase

__all__ = ["RoutingNode"]


class RoutingNode(Node):
    """Ranks by the scan (or takes them as given), then routes packets greedily.

    One class serves both schemes: ``params.task`` picks the port rule and the arrival
    test, Theorem 3's (``packing``: towards the rank's node, one dimension per phase) or
    Theorem 4's (``monotone``: pack to the rank's node, then unpack to the rank's target).

    Under faults (:mod:`._offschedule`) a packet the node cannot send at its step (the port
    is dead or busy, the node was woken off the step grid) waits for the next step; one
    whose rank the scan got out of range, or that the schedule can no longer move once its
    phases are over, stays here (``bad rank``, ``stranded``). A restarted node stops.
    """

    async def run(self) -> None:
        ctx = self.ctx
        prm: RoutingInputs = ctx.params
        sides = tuple(ctx.geometry.sides)
        if ctx.incarnation:  # restarted: its rank, its packet and its place in the schedule are gone
            ctx.record("stopped", "scan" if ctx.slot < start_tick(prm, sides, ctx.quantum) else "routing", "restarted")
            await sleep(ctx, "routing")
        self.monotone = prm.task == "monotone"
        self.last_step = max(phase_boundaries(sides, prm.task))
        active = is_active(ctx.node, prm.active)
        q = ctx.quantum
        start = start_tick(prm, sides, q)
        self.early: list[list[int]] = []  # packets that came while the scan was still on (faults only)
        if prm.rank == "prefix":
            rank = await self._rank(sides, active)
        else:
            rank = bisect.bisect_left(prm.active, ctx.node)
        held: list[list[int]] = ([[ctx.node, rank]] if active else []) + self.early
        # Routing begins at ``start`` and with a packet. A node can wake before ``start``
        # only under faults: its scan ended early (a message of it never came) and a late
        # scan message woke it; it is counted (``wrong phase``) and the node sleeps on.
        while not held or ctx.slot < start:
            held.extend(self._packets(await (ctx.idle(until=start) if held else ctx.idle())))
        await self._route(held, sides, start)

    async def _rank(self, sides: tuple[int, ...], active: bool) -> int:
        ctx = self.ctx
        scan = ScanNode(ctx.coords, sides, int(active))
        steps = scan_steps(sides)
        tp = ctx.params.tp
        phase = ScanPhase(ctx, {0: scan}, 0, round(tp * ctx.quantum), 2 * steps, tp, {0: steps})
        inbox: Inbox = ()
        while True:
            for port, msg in inbox:
                if _is(msg, "s", 3):
                    phase.receive(ctx.slot, port, msg[1], msg[2])
                else:  # a packet for a node still in its scan (it was stalled): routed from the next step
                    self.early.extend(self._packets([(port, msg)]))
            phase.send_due(ctx.slot)
            if phase.done:
                break
            nxt = phase.next_tick(ctx.slot)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())
        rank = scan.inclusive - 1 if active else -1
        ctx.record("scanned", rank, scan.total if scan.total is not None else -1, phase.last_down)
        return int(rank)

    def _packets(self, inbox: Inbox) -> list[list[int]]:
        """The packets ``["p", origin, rank]`` of an inbox as ``[origin, rank]`` (anything else is off schedule)."""
        out = []
        for _, msg in inbox:
            if _is(msg, "p", 3):
                out.append([msg[1], msg[2]])
            else:
                self.ctx.record("off_schedule", "routing", "wrong phase")
        return out

    def _routable(self, pkt: list[int], sides: tuple[int, ...]) -> bool:
        """Whether the packet's rank names a node (and, for monotone, a target)."""
        r = pkt[1]
        limit = len(self.ctx.params.targets) if self.monotone else math.prod(sides)
        return isinstance(r, int) and 0 <= r < limit

    def _hop(self, pkt: list[int], step: int, sides: tuple[int, ...]) -> tuple[int, int] | None:
        """``(dim, direction)`` packet ``[origin, rank]`` takes at ``step``, or None (it waits)."""
        via = rank_destination(pkt[1], sides)
        if not self.monotone:
            return packing_port(self.ctx.coords, via, step, sides)
        target = self.ctx.geometry.coords(self.ctx.params.targets[pkt[1]])
        return monotone_port(self.ctx.coords, via, target, step, sides)

    def _final(self, pkt: list[int], step: int, sides: tuple[int, ...]) -> bool:
        """Whether packet ``[origin, rank]`` has arrived for good at this node at ``step``."""
        here = self.ctx.coords
        via = rank_destination(pkt[1], sides)
        if not self.monotone:
            return here == via
        target = self.ctx.geometry.coords(self.ctx.params.targets[pkt[1]])
        return here == target and (here == via or step >= packing_steps(sides))

    async def _route(self, held: list[list[int]], sides: tuple[int, ...], start: int) -> None:
        ctx = self.ctx
        q = ctx.quantum
        arrived: set[int] = set()
        kept: list[list[int]] = []  # packets held for good (faults only)
        while True:
            tick = ctx.slot
            step, off_grid = divmod(tick - start, q)
            for pkt in [p for p in held if not self._routable(p, sides)]:
                held.remove(pkt)
                kept.append(pkt)
                ctx.record("off_schedule", "routing", "bad rank")
            if len(held) >= 2 and not off_grid:
                ctx.record("crowd", step, len(held))
            wanted: dict[int, list[list[int]]] = {}
            for pkt in held if not off_grid else ():
                hop = self._hop(pkt, step, sides)
                if hop is not None:
                    port = ctx.port(*hop)
                    if port is None:
                        raise ValueError(f"node {ctx.node}: packet {pkt} routed off the array at step {step}")
                    wanted.setdefault(port, []).append(pkt)
            for port, pkts in wanted.items():
                if len(pkts) > 1:
                    ctx.record("conflict", step, port, len(pkts))
                why = send_blocked(ctx, port, 1.0)
                if why is not None:  # the packet waits for the next step (faults only)
                    ctx.record("off_schedule", "routing", why)
                    continue
                ctx.send(port, ["p", *pkts[0]], 1.0)
                held.remove(pkts[0])
            waiting = False
            for pkt in list(held):
                if self._final(pkt, step, sides):
                    if pkt[0] not in arrived:
                        arrived.add(pkt[0])
                        ctx.record("arrive", pkt[0], pkt[1])
                elif step >= self.last_step and not off_grid:  # its phases are over: it stays here (faults only)
                    held.remove(pkt)
                    kept.append(pkt)
                    ctx.record("off_schedule", "routing", "stranded")
                else:
                    waiting = True
            nxt = start + (step + 1) * q
            inbox = await (ctx.idle(until=nxt) if waiting else ctx.idle())
            held.extend(self._packets(inbox))


def _is(msg: Any, kind: str, length: int) -> bool:
    """Whether ``msg`` is a message of ``kind`` with ``length`` fields."""
    return isinstance(msg, (list, tuple)) and len(msg) == length and msg[0] == kind
