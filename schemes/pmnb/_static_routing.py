"""The ``packing`` (Theorem 3) and ``monotone`` (Theorem 4) node rules, reporter and theory.

Phase 1 (``rank=prefix``, the default): the active nodes learn their rank by the §4.1
scan (value 1 on active nodes; rank = inclusive prefix - 1), ``2 sum (p_k - 1)`` steps of
t_p. ``rank=given`` skips it: Theorems 3 and 4 time the routing alone ("Theorems 3 and 4
assume that packets know their rank i", §3), so the theorem's bound is compared with
``routing_time``; ``completion_time`` adds the scan when there is one, and both phase
times are reported (``prefix_time``, ``routing_time``).

Phase 2: every packet moves by :func:`._packing.packing_port` (or ``monotone_port``),
one whole packet per link and step, the node deciding from the packet's rank, its own
coordinates and the step number. A message carries ``["p", origin, rank]``; the packet's
next hop is recomputed by each node it visits.

What the reporter counts (see :mod:`._packing` for why):

* ``link_conflicts``: (step, out-port) pairs at which a node was asked to send two
  packets (the fabric would refuse the second; the node sends one and counts);
* ``boundary_collisions``: (phase boundary, node) pairs holding two or more packets;
  Theorem 3's induction says 0 (checked as an invariant);
* ``meetings``: the same inside a phase. The proof's "no two packets are at any time at
  the same node" is false there (the 5 x 5 counterexample of :mod:`._packing`); it is
  reported, with ``max_at_node`` (at most 2, checked), not asserted.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping
from typing import Any

from slotnet.nodes import Inbox, Node

from .._base import Setup
from ..kit import BaseReporter
from ._packing import monotone_port, monotone_steps, packing_port, packing_steps, rank_destination, ranks
from ._placement import place
from ._prefix import ScanNode, check_order, scan_steps
from ._scan import ScanPhase
from ._static_prefixscan import is_active
from ._static_setup import active_ids, check_grid, placement_rng
from ._static_time import quantum_for
from .theory import bounds_for

__all__ = ["RoutingNode", "RoutingReporter", "phase_boundaries", "prepare_routing", "theory_routing"]


def prepare_routing(topology: Any, params: dict[str, Any], load: dict[str, float], task: str) -> dict[str, Any]:
    """Node parameters of ``packing`` / ``monotone``: the active set, the targets, the quantum."""
    sides, _wrap = check_grid(topology, task)
    active = active_ids(sides, params)
    targets: list[int] = []
    if task == "monotone":
        targets = list(place(params["targets"], sides, len(active), placement_rng(params, "targets")))
    q = quantum_for(params["tp"]) if params["rank"] == "prefix" else 1
    return {**params, "task": task, "active": active, "targets": targets, "quantum": q}


def phase_boundaries(sides: tuple[int, ...], task: str) -> set[int]:
    """Steps at which a routing phase begins or ends (0 and the end included)."""
    order = list(check_order(None, len(sides)))
    dims = order + (order[::-1] if task == "monotone" else [])
    out, t = {0}, 0
    for k in dims:
        t += sides[k] - 1
        out.add(t)
    return out


def _start_tick(params: Mapping[str, Any], sides: tuple[int, ...], q: int) -> int:
    if params["rank"] != "prefix":
        return 0
    return 2 * scan_steps(sides) * round(params["tp"] * q)


class RoutingNode(Node):
    """Ranks by the scan (or takes them as given), then routes packets greedily."""

    async def run(self) -> None:
        ctx = self.ctx
        prm = ctx.params
        sides = tuple(ctx.geometry.sides)
        active = is_active(ctx.node, prm["active"])
        q = ctx.quantum
        start = _start_tick(prm, sides, q)
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
        prm = self.ctx.params
        via = rank_destination(pkt[1], sides)
        if prm["task"] == "packing":
            return packing_port(self.ctx.coords, via, step, sides)
        target = self.ctx.geometry.coords(prm["targets"][pkt[1]])
        return monotone_port(self.ctx.coords, via, target, step, sides)

    def _final(self, pkt: list[int], step: int, sides: tuple[int, ...]) -> bool:
        prm = self.ctx.params
        here = self.ctx.coords
        via = rank_destination(pkt[1], sides)
        if prm["task"] == "packing":
            return here == via
        target = self.ctx.geometry.coords(prm["targets"][pkt[1]])
        return here == target and (here == via or step >= packing_steps(sides))

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


class RoutingReporter(BaseReporter):
    """Delivery, ranks, link requests and co-location of a packing or monotone run."""

    events: Mapping[str, tuple[str, ...]] = {
        "scanned": ("rank", "total", "last_tick"),
        "crowd": ("step", "count"),
        "conflict": ("step", "port", "count"),
        "arrive": ("origin", "rank"),
    }

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        prm = setup.params
        self.sides = tuple(setup.topology.sides)
        self.task = prm["task"]
        self.start = _start_tick(prm, self.sides, setup.quantum)
        self.bounds = phase_boundaries(self.sides, self.task)
        self.scan_ranks: dict[int, int] = {}
        self.scan_last = -1
        self.crowds: list[tuple[int, int, int]] = []
        self.conflicts = 0
        self.arrivals: list[tuple[int, int, int, int]] = []  # (node, slot, origin, rank)

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"scanned": self._scanned, "crowd": self._crowd, "conflict": self._conflict, "arrive": self._arrive}

    def _scanned(self, node: int, slot: int, rank: int, total: int, last_tick: int) -> None:
        if rank >= 0:
            self.scan_ranks[node] = rank
        self.scan_last = max(self.scan_last, last_tick)

    def _crowd(self, node: int, slot: int, step: int, count: int) -> None:
        self.crowds.append((node, step, count))

    def _conflict(self, node: int, slot: int, step: int, port: int, count: int) -> None:
        self.conflicts += 1

    def _arrive(self, node: int, slot: int, origin: int, rank: int) -> None:
        self.arrivals.append((node, slot, origin, rank))

    def _delivery(self) -> tuple[int, int, int]:
        """(delivered right, wrong or repeated, missing)."""
        prm = self.setup.params
        topo = self.setup.topology
        expected = ranks(prm["active"], self.sides)
        seen: set[int] = set()
        right = wrong = 0
        for node, _slot, origin, rank in self.arrivals:
            r = expected.get(origin)
            if r is None or r != rank or origin in seen:
                wrong += 1
                continue
            seen.add(origin)
            goal = topo.node_at(rank_destination(r, self.sides)) if self.task == "packing" else prm["targets"][r]
            if node == goal:
                right += 1
            else:
                wrong += 1
        return right, wrong, len(expected) - len(seen)

    def metrics(self) -> dict[str, Any]:
        q = self.setup.quantum
        last = max((slot for _, slot, _, _ in self.arrivals), default=self.start)
        mid = [c for c in self.crowds if c[1] not in self.bounds]
        return {
            "prefix_time": (self.scan_last / q) if self.setup.params["rank"] == "prefix" else 0.0,
            "routing_time": (last - self.start) / q,
            "delivered": self._delivery()[0],
            "link_conflicts": self.conflicts,
            "boundary_collisions": len(self.crowds) - len(mid),
            "meetings": len(mid),
            "max_at_node": max((c[2] for c in self.crowds), default=1 if self.arrivals else 0),
        }

    def invariants(self, lost: Mapping[str, int], in_flight: list[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        right, wrong, missing = self._delivery()
        crowded_at_bounds = sum(1 for c in self.crowds if c[1] in self.bounds)
        most = max((c[2] for c in self.crowds), default=1)
        out: dict[str, Any] = {
            "delivered_exactly_once": {"ok": wrong == 0 and missing == 0, "right": right, "wrong": wrong, "missing": missing},
            "no_link_asked_twice": {"ok": self.conflicts == 0, "conflicts": self.conflicts},
            "no_two_at_phase_boundaries": {"ok": crowded_at_bounds == 0, "collisions": crowded_at_bounds},
            "at_most_two_per_node": {"ok": most <= 2, "max_at_node": most},
            "no_message_lost": {"ok": self.lost_messages == 0, "lost": self.lost_messages},
        }
        if self.setup.params["rank"] == "prefix":
            expected = ranks(self.setup.params["active"], self.sides)
            bad = sum(1 for v, r in expected.items() if self.scan_ranks.get(v) != r) + len(set(self.scan_ranks) - set(expected))
            out["ranks_by_prefix"] = {"ok": bad == 0, "wrong": bad}
        return out


def theory_routing(setup: Setup) -> dict[str, Any]:
    """Theorem 3 / 4 for ``routing_time``; plus the scan for ``completion_time`` with rank=prefix."""
    prm = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    task = prm["task"]
    b = bounds_for(task, sides, wrap, active=prm["active"], targets=prm["targets"] or None)
    prefix = 2 * scan_steps(sides) * prm["tp"] if prm["rank"] == "prefix" else 0.0
    steps = packing_steps(sides) if task == "packing" else monotone_steps(sides)
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
