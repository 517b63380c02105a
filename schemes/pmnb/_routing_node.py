"""What ``packing`` (Theorem 3) and ``monotone`` (Theorem 4) share: the node base, the
phase boundaries and the bounds around the rank scan.

Phase 1 (``rank=prefix``, the default): the active nodes learn their rank by the §4.1
scan (value 1 on active nodes; rank = inclusive prefix - 1), ``2 sum (p_k - 1)`` steps of
t_p. ``rank=given`` skips it: Theorems 3 and 4 time the routing alone ("Theorems 3 and 4
assume that packets know their rank i", §3), so the theorem's bound is compared with
``routing_time``; ``completion_time`` adds the scan when there is one, and both phase
times are reported (``prefix_time``, ``routing_time``; :func:`routing_theory`).

Phase 2: every packet moves by its scheme's port rule (:meth:`RoutingNode._hop`:
:func:`._packing.packing_port` in :mod:`.packing`, ``monotone_port`` in :mod:`.monotone`),
one whole packet per link and step, the node deciding from the packet's rank, its own
coordinates and the step number. A message carries ``["p", origin, rank]``; the packet's
next hop is recomputed by each node it visits. The reporter both schemes use is
:class:`.reporter.RoutingReporter`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from typing import Any

from slotnet.nodes import Inbox, Node

from .._base import Setup
from ._inputs import is_active
from ._prefix import ScanNode, check_order, scan_steps
from ._scan import ScanPhase

__all__ = ["RoutingNode", "phase_boundaries", "routing_theory", "start_tick"]


def phase_boundaries(sides: tuple[int, ...], task: str) -> set[int]:
    """Steps at which a routing phase begins or ends (0 and the end included)."""
    order = list(check_order(None, len(sides)))
    dims = order + (order[::-1] if task == "monotone" else [])
    out, t = {0}, 0
    for k in dims:
        t += sides[k] - 1
        out.add(t)
    return out


def start_tick(params: Mapping[str, Any], sides: tuple[int, ...], q: int) -> int:
    """The tick routing starts: after the rank scan with ``rank=prefix``, else 0."""
    if params["rank"] != "prefix":
        return 0
    return 2 * scan_steps(sides) * round(params["tp"] * q)


class RoutingNode(Node):
    """Ranks by the scan (or takes them as given), then routes packets greedily.

    A scheme's node class gives the port rule (:meth:`_hop`) and the arrival test (:meth:`_final`).
    """

    async def run(self) -> None:
        ctx = self.ctx
        prm = ctx.params
        sides = tuple(ctx.geometry.sides)
        active = is_active(ctx.node, prm["active"])
        q = ctx.quantum
        start = start_tick(prm, sides, q)
        if prm["rank"] == "prefix":
            rank = await self._rank(sides, active)
        else:
            rank = bisect.bisect_left(prm["active"], ctx.node)
        held: list[list[int]] = [[ctx.node, rank]] if active else []
        if held and ctx.slot < start:
            await ctx.idle(until=start)
        elif not held:
            inbox = await ctx.idle()
            held.extend(msg[1:] for _, msg in inbox)
        await self._route(held, sides, start)

    async def _rank(self, sides: tuple[int, ...], active: bool) -> int:
        ctx = self.ctx
        scan = ScanNode(ctx.coords, sides, int(active))
        steps = scan_steps(sides)
        phase = ScanPhase(ctx, {0: scan}, 0, round(ctx.params["tp"] * ctx.quantum), 2 * steps, ctx.params["tp"], {0: steps})
        inbox: Inbox = ()
        while True:
            for port, msg in inbox:
                phase.receive(ctx.slot, port, msg[1], msg[2])
            phase.send_due(ctx.slot)
            if phase.done:
                break
            nxt = phase.next_tick(ctx.slot)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())
        rank = scan.inclusive - 1 if active else -1
        ctx.record("scanned", rank, scan.total, phase.last_down)
        return int(rank)

    def _hop(self, pkt: list[int], step: int, sides: tuple[int, ...]) -> tuple[int, int] | None:
        """``(dim, direction)`` packet ``[origin, rank]`` takes at ``step``, or None (it waits)."""
        raise NotImplementedError

    def _final(self, pkt: list[int], step: int, sides: tuple[int, ...]) -> bool:
        """Whether packet ``[origin, rank]`` has arrived for good at this node at ``step``."""
        raise NotImplementedError

    async def _route(self, held: list[list[int]], sides: tuple[int, ...], start: int) -> None:
        ctx = self.ctx
        q = ctx.quantum
        arrived: set[int] = set()
        while True:
            tick = ctx.slot
            step = (tick - start) // q
            if (tick - start) % q:
                raise ValueError(f"node {ctx.node}: routing wake-up at tick {tick} is off the step grid")
            if len(held) >= 2:
                ctx.record("crowd", step, len(held))
            wanted: dict[int, list[list[int]]] = {}
            for pkt in held:
                hop = self._hop(pkt, step, sides)
                if hop is not None:
                    port = ctx.port(*hop)
                    if port is None:
                        raise ValueError(f"node {ctx.node}: packet {pkt} routed off the array at step {step}")
                    wanted.setdefault(port, []).append(pkt)
            for port, pkts in wanted.items():
                if len(pkts) > 1:
                    ctx.record("conflict", step, port, len(pkts))
                ctx.send(port, ["p", *pkts[0]], 1.0)
                held.remove(pkts[0])
            waiting = False
            for pkt in held:
                if self._final(pkt, step, sides):
                    if pkt[0] not in arrived:
                        arrived.add(pkt[0])
                        ctx.record("arrive", pkt[0], pkt[1])
                else:
                    waiting = True
            inbox = await (ctx.idle(until=tick + q) if waiting else ctx.idle())
            held.extend(msg[1:] for _, msg in inbox)


def routing_theory(setup: Setup, bounds: dict[str, Any], steps: int) -> dict[str, Any]:
    """Theorem 3 / 4 (``bounds``, from :mod:`.theory`) for ``routing_time``, which takes ``steps``;
    plus the scan for ``completion_time`` with rank=prefix."""
    prm = setup.params
    sides = tuple(setup.topology.sides)
    prefix = 2 * scan_steps(sides) * prm["tp"] if prm["rank"] == "prefix" else 0.0
    b = bounds
    return {
        "upper_bound": prefix + b["upper_bound"],
        "which": b["which"] + (" after the rank scan 2 sum(p_k - 1) t_p" if prefix else ""),
        "lower_bound": prefix + b["lower_bound"] if math.isfinite(b["lower_bound"]) else prefix,
        "lower_which": b["lower_which"] + (" (after the scan this algorithm needs)" if prefix else ""),
        "prefix_time": prefix,
        "routing_time": float(steps),
        "link_conflicts": 0,
        "boundary_collisions": 0,
    }
