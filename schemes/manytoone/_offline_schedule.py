"""CENTRALISED: the offline two-stage schedule of §3 (Theorem 1.1), from a max-flow.

Mansour & Patt-Shamir, §3.1. This is not a local algorithm: one planner sees the whole
instance. It is the reference the local schemes are compared with.

Step 1 (paths for the second stage). The flow network F: 2^k copies ``G_sigma`` of
the mesh, one per sign vector sigma in {+,-}^k (the paper's G_0..G_3 for k = 2), the
edges of ``G_sigma`` oriented ``v -> v + sigma_i e_i``; copy sigma with ``sigma_i = +``
is glued to the copy with ``sigma_i = -`` along the face ``c_i = n_i - 1`` (the paper's
"(i, D) = (i, D)'" etc.; we index nodes 0..n_i-1, the paper 0..D). The potential
``sum_i (c_i if sigma_i = + else 2(n_i - 1) - c_i)`` rises by one along every edge, so
F is acyclic and every path has length at most ``2 sum_i (n_i - 1)`` (4D on the
paper's square). A source s feeds the G_{+...+} copy of every node v with capacity
``N(v)``, every extended node feeds a sink t with capacity 2, every extended-grid
edge has capacity u (parallel edges of glued faces are kept, as in F). The max-flow
of F(u) is computed for u = 2, 4, 8, ... until it equals N(G) (Theorem 3.1: u >= 2W
suffices); each doubling continues from the previous flow (Dinic's algorithm, written
here). The flow is split into unit chains greedily and every chain, mapped to G with
its cycles removed, is the path of one packet, from its destination to an
intermediate node.

Steps 2-3 (timing). The paper times stage 2 with Leighton, Maggs and Rao [10, 11]
(O(c + d) steps, O(1) buffers) and stage 1 with an O(D)-step permutation router. We do
not implement those: both stages are timed by one greedy rule -- every step, each link
direction carries the waiting packet with the most hops left on its path (ties: lower
packet index) -- stage 1 along dimension-order paths from each source to its
intermediate node, stage 2 (starting when stage 1 has ended, as in §3) along the
reversed chain to the destination. So the *paths* are the paper's, the *schedule* is
ours: its length is measured, not guaranteed O(D + W), and its buffers are not O(1).
:func:`verify_schedule` checks any schedule against §2's conditions (1)-(3).

Packets are matched to the chains that start at their destination greedily, by source
id, each taking the chain whose end is nearest its source.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from .instances import Instance, mesh_coords

__all__ = [
    "FlowNetwork",
    "OfflineSchedule",
    "flow_network",
    "offline_schedule",
    "schedule_max_load",
    "verify_schedule",
]

Trajectory = tuple[tuple[int, int], ...]


# ---------------------------------------------------------------- max-flow (Dinic)


class _Dinic:
    """Dinic's max-flow on an integer-capacity digraph (edge e and its reverse e ^ 1)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.head = [-1] * n
        self.to: list[int] = []
        self.cap: list[int] = []
        self.nxt: list[int] = []

    def add_edge(self, u: int, v: int, cap: int) -> int:
        e = len(self.to)
        self.to += [v, u]
        self.cap += [cap, 0]
        self.nxt += [self.head[u], self.head[v]]
        self.head[u], self.head[v] = e, e + 1
        return e

    def _levels(self, s: int, t: int) -> list[int] | None:
        level = [-1] * self.n
        level[s] = 0
        queue = deque([s])
        to, cap, nxt, head = self.to, self.cap, self.nxt, self.head
        while queue:
            u = queue.popleft()
            e = head[u]
            while e != -1:
                v = to[e]
                if cap[e] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue.append(v)
                e = nxt[e]
        return level if level[t] >= 0 else None

    def _blocking(self, s: int, t: int, level: list[int]) -> int:
        """Augment along shortest paths until blocked (iterative DFS)."""
        to, cap, nxt = self.to, self.cap, self.nxt
        it = list(self.head)
        total = 0
        while True:
            path: list[int] = []
            u = s
            while u != t:
                e = it[u]
                while e != -1 and not (cap[e] > 0 and level[to[e]] == level[u] + 1):
                    e = nxt[e]
                it[u] = e
                if e == -1:
                    if u == s:
                        return total
                    level[u] = -1  # dead end: prune
                    e_back = path.pop()
                    u = to[e_back ^ 1]
                    it[u] = nxt[it[u]]
                    continue
                path.append(e)
                u = to[e]
            push = min(cap[e] for e in path)
            for e in path:
                cap[e] -= push
                cap[e ^ 1] += push
            total += push

    def max_flow(self, s: int, t: int) -> int:
        """Augment the current flow to a maximum one; return the amount added."""
        total = 0
        while (level := self._levels(s, t)) is not None:
            total += self._blocking(s, t, level)
        return total


# ---------------------------------------------------------------- the network F


@dataclass
class FlowNetwork:
    """The flow network F of §3.1 for an instance, with its current flow.

    Attributes:
        instance: The instance.
        node_of: Extended node -> mesh node id.
        grid_edges: Edge indices of the extended-grid edges (capacity u each).
        source_edges: Edge index of ``s -> G_{+..+}(v)`` for each destination v.
        sink_edges: Edge index of ``x -> t`` for each extended node x.
        u: Current capacity of the extended-grid edges.
        value: Current flow value.
    """

    instance: Instance
    node_of: list[int]
    grid_edges: list[int]
    source_edges: dict[int, int]
    sink_edges: list[int]
    u: int
    value: int
    _flow: _Dinic
    _entry: list[int]
    _s: int
    _t: int

    def set_capacity(self, u: int) -> int:
        """Raise the extended-grid capacity to ``u`` (>= the current) and re-maximise the flow."""
        if u < self.u:
            raise ValueError(f"capacity can only grow, from {self.u} to {u}")
        delta = u - self.u
        for e in self.grid_edges:
            self._flow.cap[e] += delta
        self.u = u
        self.value += self._flow.max_flow(self._s, self._t)
        return self.value

    def edge_flow(self, e: int) -> int:
        """Flow on forward edge ``e`` (its reverse residual: reverse edges start empty)."""
        return self._flow.cap[e ^ 1]


def flow_network(instance: Instance, u: int = 2) -> FlowNetwork:
    """Build F(u) for an instance and compute its max-flow.

    Args:
        instance: The instance (any mesh sides).
        u: Capacity of every extended-grid edge.

    Returns:
        The network with a maximum flow; ``value`` equals N(G) when u is large enough
        (Theorem 3.1: ``u >= 2 W_I``).
    """
    sides = instance.sides
    k, n = len(sides), instance.n_nodes
    strides = [math.prod(sides[:i]) for i in range(k)]
    copies = 1 << k  # bit i of sigma set: sigma_i = '-'
    parent = list(range(copies * n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    coords = [mesh_coords(sides, v) for v in range(n)]
    for sigma in range(copies):
        for i in range(k):
            if sigma >> i & 1:
                continue
            other = sigma | 1 << i
            for v in range(n):
                if coords[v][i] == sides[i] - 1:
                    a, b = find(sigma * n + v), find(other * n + v)
                    if a != b:
                        parent[a] = b
    ids: dict[int, int] = {}
    entry = [0] * (copies * n)
    for x in range(copies * n):
        entry[x] = ids.setdefault(find(x), len(ids))
    m = len(ids)
    node_of = [0] * m
    for x in range(copies * n):
        node_of[entry[x]] = x % n
    s, t = m, m + 1
    flow = _Dinic(m + 2)
    grid_edges = []
    for sigma in range(copies):
        for v in range(n):
            for i in range(k):
                step = -1 if sigma >> i & 1 else 1
                c = coords[v][i] + step
                if 0 <= c < sides[i]:
                    w = v + step * strides[i]
                    grid_edges.append(flow.add_edge(entry[sigma * n + v], entry[sigma * n + w], u))
    demand: dict[int, int] = {}
    for _, d in instance.packets:
        demand[d] = demand.get(d, 0) + 1
    source_edges = {v: flow.add_edge(s, entry[v], c) for v, c in sorted(demand.items())}
    sink_edges = [flow.add_edge(x, t, 2) for x in range(m)]
    value = flow.max_flow(s, t)
    return FlowNetwork(instance, node_of, grid_edges, source_edges, sink_edges, u, value, flow, entry, s, t)


def _chains(net: FlowNetwork) -> dict[int, list[list[int]]]:
    """Split the flow into unit chains; per destination, the mesh paths from it (cycles removed)."""
    flow = net._flow
    fl = {e: f for e in net.grid_edges if (f := net.edge_flow(e))}
    sink_of = {x: f for x, e in enumerate(net.sink_edges) if (f := net.edge_flow(e))}
    out_edges: dict[int, list[int]] = {}
    for e in fl:
        out_edges.setdefault(flow.to[e ^ 1], []).append(e)
    chains: dict[int, list[list[int]]] = {}
    for v, e in net.source_edges.items():
        for _ in range(net.edge_flow(e)):
            x = flow.to[e]
            path = [net.node_of[x]]
            while not sink_of.get(x):
                nxt = next(g for g in out_edges[x] if fl[g] > 0)
                fl[nxt] -= 1
                x = flow.to[nxt]
                path.append(net.node_of[x])
            sink_of[x] -= 1
            chains.setdefault(v, []).append(_without_cycles(path))
    return chains


def _without_cycles(path: list[int]) -> list[int]:
    """Remove the loops of a walk (keep the first visit, cut back on a repeat)."""
    out: list[int] = []
    where: dict[int, int] = {}
    for v in path:
        if v in where:
            cut = where[v]
            for w in out[cut + 1 :]:
                del where[w]
            del out[cut + 1 :]
        else:
            where[v] = len(out)
            out.append(v)
    return out


# ---------------------------------------------------------------- timing


def _dimension_order_path(sides: Sequence[int], a: int, b: int) -> list[int]:
    path = [a]
    node = a
    stride = 1
    for s in sides:
        ca, cb = (a // stride) % s, (b // stride) % s
        step = 1 if cb > ca else -1
        for _ in range(abs(cb - ca)):
            node += step * stride
            path.append(node)
        stride *= s
    return path


def _greedy(paths: Sequence[list[int]], t0: int, events: list[list[tuple[int, int]]]) -> int:
    """Move packets along fixed paths, farthest-to-go first per link; return the end step."""
    idx = [0] * len(paths)
    active = [p for p, path in enumerate(paths) if len(path) > 1]
    t = t0
    while active:
        best: dict[tuple[int, int], int] = {}
        for p in active:
            path = paths[p]
            link = (path[idx[p]], path[idx[p] + 1])
            q = best.get(link)
            if q is None or (len(path) - idx[p], -p) > (len(paths[q]) - idx[q], -q):
                best[link] = p
        t += 1
        for link, p in best.items():
            idx[p] += 1
            events[p].append((t, link[1]))
        active = [p for p in active if idx[p] < len(paths[p]) - 1]
    return t


@dataclass(frozen=True)
class OfflineSchedule:
    """The §3 schedule (centralised).

    Attributes:
        trajectories: Per packet, ``((t, node), ...)``: loc(p, t) changes to ``node``
            at step t; the first entry is ``(0, source)``; loc is constant in between.
        length: Largest delivery time (§2's T_loc).
        stage1_length: Steps of stage 1 (sources to intermediate nodes).
        stage2_length: Steps of stage 2 (along the chains to the destinations).
        capacity: The u of the last max-flow, F(u) with flow value N(G).
        intermediate: Per packet, its intermediate node.
        paths: Per packet, its stage-2 path from its destination (the chain, cycles removed).
        max_load: §2's space complexity of the schedule.
    """

    trajectories: tuple[Trajectory, ...]
    length: int
    stage1_length: int
    stage2_length: int
    capacity: int
    intermediate: tuple[int, ...]
    paths: tuple[tuple[int, ...], ...]
    max_load: int


def offline_schedule(instance: Instance) -> OfflineSchedule:
    """Compute and verify the §3 schedule for an instance (see the module docstring).

    Raises:
        ValueError: if the schedule fails :func:`verify_schedule` (a bug).
    """
    n_packets = len(instance)
    net = flow_network(instance, 2)
    while net.value < n_packets:
        net.set_capacity(2 * net.u)
    chains = _chains(net)
    sides = instance.sides
    inter = [0] * n_packets
    stage2: list[list[int]] = [[] for _ in range(n_packets)]
    order = sorted(range(n_packets), key=lambda p: instance.packets[p][0])
    for p in order:
        s, d = instance.packets[p]
        pool = chains[d]
        pick = min(range(len(pool)), key=lambda i: (instance.distance(s, pool[i][-1]), i))
        chain = pool.pop(pick)
        inter[p] = chain[-1]
        stage2[p] = chain[::-1]
    events: list[list[tuple[int, int]]] = [[(0, s)] for s, _ in instance.packets]
    stage1 = [_dimension_order_path(sides, s, inter[p]) for p, (s, _) in enumerate(instance.packets)]
    t1 = _greedy(stage1, 0, events)
    t2 = _greedy(stage2, t1, events)
    trajectories = tuple(tuple(e) for e in events)
    length = verify_schedule(instance, trajectories)
    return OfflineSchedule(
        trajectories=trajectories,
        length=length,
        stage1_length=t1,
        stage2_length=t2 - t1,
        capacity=net.u,
        intermediate=tuple(inter),
        paths=tuple(tuple(path[::-1]) for path in stage2),
        max_load=schedule_max_load(instance, trajectories),
    )


# ---------------------------------------------------------------- checks


def verify_schedule(instance: Instance, trajectories: Sequence[Trajectory]) -> int:
    """Check a schedule against §2 and return its length T_loc.

    Conditions: (1) every packet starts at its source and ends at its destination;
    (2) every change of location is a move along a mesh edge; (3) at most one packet
    crosses each link in each direction at each step.

    Returns:
        The largest delivery time (first time at the destination) over all packets.

    Raises:
        ValueError: naming the packet, the step and the violated condition.
    """
    if len(trajectories) != len(instance):
        raise ValueError(f"{len(trajectories)} trajectories for {len(instance)} packets")
    used: dict[tuple[int, int, int], int] = {}
    length = 0
    for p, ((s, d), traj) in enumerate(zip(instance.packets, trajectories)):
        if not traj or traj[0] != (0, s):
            raise ValueError(f"packet {p}: must start at its source {s} at step 0, got {traj[:1]}")
        first = 0 if s == d else None
        for (t_prev, u), (t, v) in zip(traj, traj[1:]):
            if t <= t_prev:
                raise ValueError(f"packet {p}: steps not increasing ({t_prev}, {t})")
            if instance.distance(u, v) != 1:
                raise ValueError(f"packet {p}: jumps from {u} to {v} at step {t} (condition (2))")
            link = (t, u, v)
            if link in used:
                raise ValueError(f"packets {used[link]} and {p} cross link {u}->{v} in step {t} (condition (3))")
            used[link] = p
            if v == d and first is None:
                first = t
        if traj[-1][1] != d:
            raise ValueError(f"packet {p}: ends at {traj[-1][1]}, not at its destination {d} (condition (1))")
        length = max(length, first or 0)
    return length


def schedule_max_load(instance: Instance, trajectories: Sequence[Trajectory]) -> int:
    """§2's space complexity ``max_{v,t} L_v(t)``: packets at v bound elsewhere."""
    deltas: dict[int, dict[int, int]] = {}
    for (_, d), traj in zip(instance.packets, trajectories):
        for k, (t, v) in enumerate(traj):
            if v == d:
                continue
            leave = traj[k + 1][0] if k + 1 < len(traj) else None
            per = deltas.setdefault(v, {})
            per[t] = per.get(t, 0) + 1
            if leave is not None:
                per[leave] = per.get(leave, 0) - 1
    best = 0
    for per in deltas.values():
        level = 0
        for t in sorted(per):
            level += per[t]
            best = max(best, level)
    return best
