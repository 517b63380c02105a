"""A pure, step-by-step reference execution of rec_route (§4), checking its invariants.

Mansour & Patt-Shamir, "Many-to-one packet routing on grids", §4. :func:`reference_run`
executes the whole algorithm centrally with the rules of :mod:`._rec_route` and nothing
else (the hierarchy, the fixed schedule of every level, the local rules), in the model
written down there: packets move in lockstep rounds, one hop per step, at most one
message per link direction per step. It checks Lemma 4.3 on every invocation and every
invariant the analysis guarantees (:class:`RecInvariantError` when one fails). The
``m2o-rec`` node rule (:mod:`.rec`) must reproduce it step for step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ._rec_route import (
    Hierarchy,
    approx_direction,
    batch_index,
    bitonic_steps,
    h_value,
    keeps_low,
    level_plan,
    merge_split,
    spread_target,
)
from .instances import Instance, mesh_coords, mesh_node

__all__ = ["Invocation", "RecInvariantError", "RecResult", "reference_run"]


class RecInvariantError(AssertionError):
    """An invariant of rec_route that the analysis guarantees was found violated."""


@dataclass(frozen=True)
class Invocation:
    """One invocation of rec_route.

    Attributes:
        level: Level l of the subcube.
        cube: Node id of the subcube's lowest corner.
        index: 0-based invocation number of this subcube.
        start: Step at which it was invoked.
        n_packets: Packets in its input.
        volume: V(H).
    """

    level: int
    cube: int
    index: int
    start: int
    n_packets: int
    volume: int


@dataclass(frozen=True)
class RecResult:
    """What :func:`reference_run` returns.

    Attributes:
        delivery: Per packet (instance order), the step of its final arrival at its
            destination (0 if it never moved and started there).
        first_arrival: Per packet, §2's delivery time: the first step it is at its
            destination.
        completion_time: Largest delivery time.
        paper_time: Largest first arrival (§2's T_loc of the schedule).
        return_time: Step at which the level-0 invocation returns.
        max_load: §2's space complexity: the most packets at one node, at one time,
            whose destination is another node.
        max_occupancy: The most packets one node holds (not yet absorbed) at one time.
            Loads and occupancies are those at integer times t (after every move of
            step t - 1, before those of step t), packets passing through included.
        node_max_load: Per node id, its largest load (§2's L_v(t) maximised over t).
        node_max_occupancy: Per node id, the most packets it holds (not yet absorbed) at one time.
        invocations: Every invocation, in the order the reference executed them.
        lemma_4_3_violations: Invocations with more than 2 V(H) packets (Lemma 4.3).
        h: ``(level, cube) -> h`` for every subcube below level 0.
        durations: ``(level, cube) -> duration`` of its invocations (all equal).
        hops: Packet moves (link crossings) in all.
    """

    delivery: tuple[int, ...]
    first_arrival: tuple[int, ...]
    completion_time: int
    paper_time: int
    return_time: int
    max_load: int
    max_occupancy: int
    node_max_load: tuple[int, ...]
    node_max_occupancy: tuple[int, ...]
    invocations: tuple[Invocation, ...]
    lemma_4_3_violations: tuple[Invocation, ...]
    h: dict[tuple[int, int], int]
    durations: dict[tuple[int, int], int]
    hops: int


class _Run:
    """State of one reference execution (see :func:`reference_run`)."""

    def __init__(self, instance: Instance, check_links: bool) -> None:
        self.inst = instance
        self.hier = Hierarchy(instance.sides)
        self.plans = [level_plan(self.hier, lev) for lev in range(self.hier.levels)]
        n = instance.n_nodes
        self.src = [s for s, _ in instance.packets]
        self.dst = [d for _, d in instance.packets]
        self.dst_coords = [mesh_coords(instance.sides, d) for d in self.dst]
        self.key = [(self.hier.address(c), s) for c, s in zip(self.dst_coords, self.src)]
        self.pos = list(self.src)
        self.occ = [0] * n
        self.load = [0] * n
        for s, d in instance.packets:
            self.occ[s] += 1
            self.load[s] += s != d
        self.node_max_occ = list(self.occ)
        self.node_max_load = list(self.load)
        self.absorbed = [False] * len(self.src)
        self.first_arrival: list[int | None] = [0 if s == d else None for s, d in instance.packets]
        self.last_arrival = [0] * len(self.src)
        self.invocations: list[Invocation] = []
        self.h: dict[tuple[int, int], int] = {}
        self.durations: dict[tuple[int, int], int] = {}
        self.counter: dict[tuple[int, int], int] = {}
        self.links: set[int] | None = set() if check_links else None
        self.hops = 0
        self.absorb_level = self.hier.levels - 1

    # -- movement

    def _round(self, moves: Sequence[tuple[int, int]], dim: int, distance: int, t0: int) -> None:
        """One lockstep round: each (packet, sign) moves ``distance`` hops along ``dim``."""
        if not moves:
            return
        stride = self.hier.strides[dim]
        side = self.hier.sides[dim]
        n_ports = 2 * len(self.hier.sides)
        n = self.hier.n_nodes
        pos, occ, load, dst = self.pos, self.occ, self.load, self.dst
        absorbing = self._absorbing
        senders = [pos[p] for p, _ in moves]
        if len(set(senders)) != len(senders):
            raise RecInvariantError(f"a node sends two packets in one round at step {t0}")
        for step in range(distance):
            t = t0 + step
            used: set[tuple[int, int]] = set()
            arrivals = []
            for p, sign in moves:  # every departure of the step first ...
                u = pos[p]
                c = (u // stride) % side + sign
                if not 0 <= c < side:
                    raise RecInvariantError(f"packet {p} leaves the mesh at step {t}")
                v = u + sign * stride
                link = (u, sign)
                if link in used:
                    raise RecInvariantError(f"two packets on link {u}->{v} at step {t}")
                used.add(link)
                if self.links is not None:
                    port = 2 * dim + (sign < 0)
                    code = (t * n + u) * n_ports + port
                    if code in self.links:
                        raise RecInvariantError(f"link {u}->{v} used twice at step {t}")
                    self.links.add(code)
                occ[u] -= 1
                load[u] -= u != dst[p]
                pos[p] = v
                self.hops += 1
                arrivals.append(p)
            for p in arrivals:  # ... then every arrival: the counts are those at time t + 1
                v, d = pos[p], dst[p]
                if v == d:
                    if self.first_arrival[p] is None:
                        self.first_arrival[p] = t + 1
                    self.last_arrival[p] = t + 1
                    if absorbing:
                        self.absorbed[p] = True
                        continue
                occ[v] += 1
                if occ[v] > self.node_max_occ[v]:
                    self.node_max_occ[v] = occ[v]
                if v != d:
                    load[v] += 1
                    if load[v] > self.node_max_load[v]:
                        self.node_max_load[v] = load[v]

    _absorbing = False

    def _absorb_present(self, items: Iterable[int]) -> None:
        for p in items:
            if self.pos[p] == self.dst[p] and not self.absorbed[p]:
                self.absorbed[p] = True
                self.occ[self.pos[p]] -= 1

    # -- the recursion

    def invoke(self, level: int, corner: tuple[int, ...], t0: int, items: list[int]) -> int:
        hier = self.hier
        cube = mesh_node(hier.sides, corner)
        index = self.counter.get((level, cube), 0)
        self.counter[(level, cube)] = index + 1
        record = Invocation(level, cube, index, t0, len(items), hier.volume(level))
        self.invocations.append(record)
        if level == hier.levels:
            for p in items:
                if self.pos[p] != self.dst[p]:
                    raise RecInvariantError(f"packet {p} not at its destination at its last level")
            return t0
        plan = self.plans[level]
        per_node: dict[int, list[int]] = {}
        for p in items:
            per_node.setdefault(self.pos[p], []).append(p)
        if any(len(v) > plan.c_in for v in per_node.values()):
            raise RecInvariantError(f"more than {plan.c_in} input packets at a node of invocation {record}")
        # Step 1: approximate routing
        if level == self.absorb_level:
            self._absorb_present(items)
            self._absorbing = True
        t = t0
        sides = hier.level_sides(level)
        for q, dim in enumerate(hier.split_dims(level)):
            d = sides[dim] // 2
            rounds = plan.c_in << q
            queues: list[list[tuple[int, int]]] = []
            for node, ps in per_node.items():
                own = mesh_coords(hier.sides, node)
                movers = []
                for p in sorted(ps, key=self.key.__getitem__):
                    sign = approx_direction(hier, level, dim, own, self.dst_coords[p])
                    if sign:
                        movers.append((p, sign))
                if len(movers) > rounds:
                    raise RecInvariantError(f"{len(movers)} movers for {rounds} rounds at node {node}")
                queues.append(movers)
            for r in range(rounds):
                self._round([qu[r] for qu in queues if r < len(qu)], dim, d, t)
                t += d
            per_node = {}
            for p in items:
                per_node.setdefault(self.pos[p], []).append(p)
        self._absorbing = False
        if t != t0 + plan.approx_time:
            raise RecInvariantError("Step 1 overran its fixed duration")
        # Step 2.1: sort in every subcube, in parallel
        by_child: dict[int, list[int]] = {}
        for p in items:
            cid = hier.cube_id(mesh_coords(hier.sides, self.pos[p]), level + 1)
            if cid != hier.cube_id(self.dst_coords[p], level + 1):
                raise RecInvariantError(f"packet {p} not in the subcube of its destination after Step 1")
            by_child.setdefault(cid, []).append(p)
        t_calls = t + plan.sort_time
        finishes = []
        for child in hier.children(corner, level):
            cid = mesh_node(hier.sides, child)
            mine = by_child.get(cid, [])
            ranked, t_end = self._sort(level + 1, child, mine, t, plan.capacity)
            if t_end not in (t, t_calls):
                raise RecInvariantError("Step 2.1 overran its fixed duration")
            key = (level + 1, cid)
            if key not in self.h:
                self.h[key] = h_value(len(mine), hier.volume(level + 1))
            h = self.h[key]
            tc = t_calls
            batches: list[list[int]] = [[] for _ in range(h)]
            for r, p in enumerate(ranked):
                batches[batch_index(r, h)].append(p)
            for j in range(h):
                end = self.invoke(level + 1, child, tc, batches[j])
                known = self.durations.setdefault(key, end - tc)
                if known != end - tc:
                    raise RecInvariantError(f"invocations of cube {key} last {known} and {end - tc} steps")
                tc = end
            finishes.append(tc)
        return max(finishes) + plan.barrier_time

    def _sort(self, level: int, corner: tuple[int, ...], items: list[int], t0: int, capacity: int) -> tuple[list[int], int]:
        """Step 2.1 in one subcube: bitonic merge-split, count, spread.

        Returns the items by rank and the step at which the simulated sort ended (``t0``
        when there was nothing to move).
        """
        hier = self.hier
        bits = hier.local_bits(level)
        key = self.key
        if not bits or not items:
            return sorted(items, key=key.__getitem__), t0
        volume = 1 << len(bits)
        blocks: dict[int, list[int]] = {}
        for p in items:
            blocks.setdefault(hier.local_index(mesh_coords(hier.sides, self.pos[p]), level), []).append(p)
        for x in blocks:
            if len(blocks[x]) > capacity:
                raise RecInvariantError(f"{len(blocks[x])} packets at a node before sorting, capacity {capacity}")
            blocks[x].sort(key=key.__getitem__)
        t = t0
        for stage, j in bitonic_steps(len(bits)):
            dim, b = bits[j]
            d = 1 << b
            t += d  # key exchange
            lows = {x & ~(1 << j) for x in blocks}
            sends: list[list[tuple[int, int]]] = []
            new_blocks: dict[int, list[int]] = {}
            for x in lows:
                y = x | (1 << j)
                a, c = blocks.get(x, []), blocks.get(y, [])
                ka, kc = [key[p] for p in a], [key[p] for p in c]
                kept_x, _ = merge_split(ka, kc, capacity, keeps_low(x, stage, j))
                kept_y, _ = merge_split(kc, ka, capacity, keeps_low(y, stage, j))
                sx, sy = set(kept_x), set(kept_y)
                send_x = [p for p in a if key[p] not in sx]
                send_y = [p for p in c if key[p] not in sy]
                sends.append([(p, 1) for p in send_x])
                sends.append([(p, -1) for p in send_y])
                nx = sorted([p for p in a if key[p] in sx] + send_y, key=key.__getitem__)
                ny = sorted([p for p in c if key[p] in sy] + send_x, key=key.__getitem__)
                if nx:
                    new_blocks[x] = nx
                if ny:
                    new_blocks[y] = ny
            for r in range(capacity):
                self._round([s[r] for s in sends if r < len(s)], dim, d, t)
                t += d
            blocks = new_blocks
        order = [p for x in sorted(blocks) for p in blocks[x]]
        n = len(order)
        if [key[p] for p in order] != sorted(key[p] for p in items):
            raise RecInvariantError("bitonic merge-split did not sort")
        for x, ps in blocks.items():
            if len(ps) != min(capacity, max(0, n - x * capacity)):
                raise RecInvariantError("sorted layout is not front-loaded")
        t += sum(1 << b for _, b in bits)  # count
        rank = {p: r for r, p in enumerate(order)}
        logc = capacity.bit_length() - 1
        cur = {p: rank[p] for p in order}
        target = {p: spread_target(rank[p], n, volume, capacity) for p in order}
        for pbit in range(len(bits) - 1, -1, -1):
            dim, b = bits[pbit]
            d = 1 << b
            vb = pbit + logc
            by_slot: list[list[tuple[int, int]]] = [[] for _ in range(capacity)]
            for p in order:
                if (cur[p] ^ target[p]) >> vb & 1:
                    sign = -1 if cur[p] >> vb & 1 else 1
                    by_slot[cur[p] & (capacity - 1)].append((p, sign))
                    cur[p] ^= 1 << vb
            if len(set(cur.values())) != n:
                raise RecInvariantError("collision in the monotone spread")
            for r in range(capacity):
                self._round(by_slot[r], dim, d, t)
                t += d
        for p in order:
            node = hier.local_index(mesh_coords(hier.sides, self.pos[p]), level)
            if node != target[p] // capacity:
                raise RecInvariantError("spread did not reach the balanced layout")
        return order, t

    def result(self, return_time: int) -> RecResult:
        for p, d in enumerate(self.dst):
            if self.pos[p] != d:
                raise RecInvariantError(f"packet {p} ended at {self.pos[p]}, not at {d}")
        first = tuple(int(x) for x in self.first_arrival)  # type: ignore[arg-type]
        viol = tuple(i for i in self.invocations if i.n_packets > 2 * i.volume)
        return RecResult(
            delivery=tuple(self.last_arrival),
            first_arrival=first,
            completion_time=max(self.last_arrival, default=0),
            paper_time=max(first, default=0),
            return_time=return_time,
            max_load=max(self.node_max_load, default=0),
            max_occupancy=max(self.node_max_occ, default=0),
            node_max_load=tuple(self.node_max_load),
            node_max_occupancy=tuple(self.node_max_occ),
            invocations=tuple(self.invocations),
            lemma_4_3_violations=viol,
            h=dict(self.h),
            durations=dict(self.durations),
            hops=self.hops,
        )


def reference_run(instance: Instance, check_links: bool = True) -> RecResult:
    """Execute rec_route (§4) on an instance, step by step, with the local rules of :mod:`._rec_route`.

    Deterministic: every choice is a function of keys ``(R(dest), source)``, node
    positions and the clock. Subcubes are simulated one after the other with their own
    clocks (they share no link while they run); every packet move is one hop in one
    step of a lockstep round, and with ``check_links`` every (step, link direction) is
    recorded globally and checked used at most once (memory grows with the number of
    hops; switch it off for large meshes -- the per-round check stays).

    Args:
        instance: The instance; every mesh side must be a power of two.
        check_links: Check link capacity across the whole run as well.

    Returns:
        Delivery times, buffer maxima, per-invocation packet counts and Lemma 4.3's check.

    Raises:
        ValueError: If a side is not a power of two.
        RecInvariantError: If an invariant the analysis guarantees fails (a bug).
    """
    run = _Run(instance, check_links)
    hier = run.hier
    root = tuple(0 for _ in hier.sides)
    end = run.invoke(0, root, 0, list(range(len(instance))))
    return run.result(end)
