"""rec_route of §4: the local rules, the fixed schedule, and a pure reference execution.

Mansour & Patt-Shamir, "Many-to-one packet routing on grids", §4.1. rec_route at a
level-l subcube H (l < log D) does:

1. route the input packets to the level-(l+1) subcubes of their destinations
   ("approximate routing", fixed time);
2. in parallel in every level-(l+1) subcube H': (2.1) sort by the linearised address of
   Definition 4.1 (fixed O(D_l) time), (2.2) cut the sorted order into h(l+1) batches,
   (2.3) invoke rec_route in H' once per batch;
3. return once every recursive call has returned, in all of H's subcubes.

Everything a node needs is here as a pure function of its coordinates, the clock and
its own packets (plus, in the sort, the keys its partner sends): :class:`Hierarchy`
(the partition, Definition 4.1, local indices), :class:`LevelPlan` (the fixed
schedule of one invocation, segment by segment), :func:`approx_direction`,
:func:`bitonic_steps`, :func:`keeps_low`, :func:`merge_split`, :func:`spread_target`,
:func:`h_value`, :func:`batch_index`. :func:`reference_run` executes the whole
algorithm step by step with these rules and nothing else.

Model. Time is counted in steps; a step carries at most one message per link
direction. Packets move only in *lockstep rounds*: in a round every node sends at most
one packet, all of them the same distance d along the same dimension, one hop per step,
so a round takes d steps and no two packets of a round share a link direction in a step
(checked). Control messages (a node's block of sort keys, a count, the termination
flags) are O(1) words; they travel in their own segments of the fixed schedule (keys,
count) or, for termination, only between nodes whose packets are all at rest, so they
never compete with packets.

Choices where §4 leaves the details open (each is written down where it is used):

* Sides. §4 assumes a cube of side D, a power of two. We accept any sides that are
  powers of two: level l splits each dimension whose level-l side is still > 1 (on a
  cube this is the paper's partition), and Definition 4.1 lists, from the most significant
  end, one group of bits per level -- bit ``m_i - l`` of every coordinate i that splits
  at level l, coordinate 0 least significant in its group, as in the formula
  ``R(v) = sum_j sum_i b_{i,j} 2^{jk+i-1}`` (the prose "first listing ... the k most
  significant bits" is read with the formula's in-group order). The paper's
  "preliminary simplification" (§2: cutting the grid into cubes of side D_I) is not
  applied: level 0 is the whole mesh, so times scale with its side, which equals D_I
  up to a constant on the acceptance instances (all-to-centre, hot spots).
* Step 1 (approximate routing), "an easy matter ... in O(D_l) time using O(1) buffer":
  one stage per split dimension, in increasing dimension order; in a stage every node
  swaps with its mirror node at distance ``d = D_l/2`` along that dimension the packets
  whose destination lies in the other half, in increasing key order, one per round. The input has at most ``c_in`` packets per
  node (1 at level 0, where it is the instance; 2 below, see Step 2.2), a stage at
  most doubles a node's load, so stage q has ``c_in 2^q`` rounds of d steps, and the
  output has at most ``C = c_in 2^s`` packets per node (s split dimensions).
* Step 2.1 (sorting), "minor modifications of standard sorting techniques ... O(D_l)":
  Batcher's bitonic sorting network on the subcube's nodes indexed by their local
  linearised address (Thompson & Kung's shuffled row-major indexing, which is exactly
  Definition 4.1, gives O(side) time on a mesh), with every compare-exchange replaced
  by a merge-split of blocks of C slots (Baudet & Stevenson; empty slots are +inf
  dummies). A merge-split at distance d: the two nodes exchange their key blocks (d
  steps, one control message per link per step by shifting), each keeps its half
  (lower index: the C smallest when the comparator is ascending), then C rounds of d
  steps move the packets. Keys are ``(R(dest), source)``: ties between packets with one
  destination are broken by source id (needed: see Step 2.2). The sorted order is then
  front-loaded (node x holds ranks ``xC .. xC+C-1``); a count (all-reduce, ``sum d``
  steps) gives n to every node, and a monotone spread moves rank r to node
  ``g(r) = ceil((r+1)V/n) - 1`` (node x holds ranks ``floor(xn/V) .. floor((x+1)n/V)-1``:
  loads differ by at most one and each node holds a consecutive segment, as §4.1
  requires). The spread fixes the bits of the virtual index ``node*C + slot`` from the
  most significant down; it is collision-free because sources are packed (two packets
  whose targets agree above bit j have ranks less than 2^j apart, so their source bits
  below j differ), so each node holds at most C packets throughout; each node bit costs
  C rounds of its distance.
* Step 2.2 (batches). h(l) is "the maximal load after sorting" at the first sorting in
  the subcube; we take ``max(1, ceil(n/V))`` -- with the literal value 0 (no packet in
  the first invocation) a later invocation, which by Lemma 4.2 may bring one packet,
  would never be routed. ``s(p)`` is read as p's rank in the sorted order (ties broken
  as above); read literally ("packets with smaller address"), all packets with one
  destination would share a batch and an all-to-one instance would break Lemma 4.3.
  Each node holds at most ``ceil(n/V) <= h + 1`` consecutive ranks (n exceeds the first
  invocation's count by at most one, Lemma 4.2), so a batch has at most 2 packets per
  node: ``c_in = 2`` below level 0.
* Step 3 (termination). A subcube whose h calls have returned knows it at once (all
  its nodes share h and its calls' common duration). Its nodes flood (child, finishing
  time) through the cube, between idle nodes only; every node returns at
  ``max_b f_b + diam(H)``, when the last child's news has reached every node. When the
  children are single nodes their calls take no time and every node knows the return
  time in advance: the barrier then takes 0 steps.
* Delivery. A packet is delivered when it last arrives at its destination (its final
  move); nodes absorb packets at the start of the level (log D - 1) invocation, or on
  arrival during its Step 1, after which rec_route never moves them.
  ``first_arrival`` is §2's delivery time (the first time loc(p, t) = dest(p)).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .instances import Instance, mesh_coords, mesh_node

__all__ = [
    "Hierarchy",
    "Invocation",
    "LevelPlan",
    "RecInvariantError",
    "RecResult",
    "Segment",
    "approx_direction",
    "balanced_node",
    "balanced_start",
    "batch_index",
    "bitonic_steps",
    "h_value",
    "invocation_duration",
    "keeps_low",
    "level_plan",
    "merge_split",
    "occupancy_bound",
    "reference_run",
    "segment_partner",
    "spread_target",
]


class RecInvariantError(AssertionError):
    """An invariant of rec_route that the analysis guarantees was found violated."""


def _log2_exact(n: int) -> int | None:
    return n.bit_length() - 1 if n >= 1 and n & (n - 1) == 0 else None


# ---------------------------------------------------------------- the partition


@dataclass(frozen=True)
class Hierarchy:
    """The hierarchical partition of §4 on a mesh whose sides are powers of two.

    Level 0 is the whole mesh; a level-l cube splits into the level-(l+1) cubes by
    halving every dimension whose side is still > 1; level ``levels`` cubes are single
    nodes.

    Attributes:
        sides: Mesh sides, each a power of two.
    """

    sides: tuple[int, ...]
    exponents: tuple[int, ...] = field(init=False)
    levels: int = field(init=False)
    bits: tuple[tuple[int, int], ...] = field(init=False)
    strides: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        sides = tuple(int(s) for s in self.sides)
        exps = []
        for s in sides:
            e = _log2_exact(s)
            if e is None:
                raise ValueError(
                    f"rec_route needs every side a power of two (§4: 'assume ... D is a power of 2'), got {'x'.join(map(str, sides))}"
                )
            exps.append(e)
        if not 1 <= len(sides) <= 3:
            raise ValueError(f"meshes of dimension 1 to 3 only, got {len(sides)}")
        levels = max(exps)
        bits: list[tuple[int, int]] = []  # least significant first
        for lev in range(levels, 0, -1):
            for i, m in enumerate(exps):
                if m >= lev:
                    bits.append((i, m - lev))
        object.__setattr__(self, "sides", sides)
        object.__setattr__(self, "exponents", tuple(exps))
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "bits", tuple(bits))
        object.__setattr__(self, "strides", tuple(math.prod(sides[:i]) for i in range(len(sides))))

    @property
    def n_nodes(self) -> int:
        """Number of mesh nodes."""
        return math.prod(self.sides)

    def level_sides(self, level: int) -> tuple[int, ...]:
        """Sides of a level-``level`` cube: ``max(1, n_i / 2^level)``."""
        return tuple(max(1, s >> level) for s in self.sides)

    def volume(self, level: int) -> int:
        """``V(H)`` of a level-``level`` cube."""
        return math.prod(self.level_sides(level))

    def split_dims(self, level: int) -> tuple[int, ...]:
        """Dimensions halved from level ``level`` to ``level + 1``."""
        return tuple(i for i, m in enumerate(self.exponents) if m > level)

    def local_bits(self, level: int) -> tuple[tuple[int, int], ...]:
        """``(dimension, coordinate bit)`` of a level-``level`` cube's local index, least significant first."""
        count = sum(max(0, m - level) for m in self.exponents)
        return self.bits[:count]

    def address(self, coords: Sequence[int]) -> int:
        """The linearised address ``R(v)`` of Definition 4.1.

        Example:
            >>> Hierarchy((4, 4)).address((1, 2))  # c0 = 01, c1 = 10: R = b(1,1) b(0,1) b(1,0) b(0,0) = 1001
            9
        """
        out = 0
        for pos, (i, b) in enumerate(self.bits):
            out |= ((coords[i] >> b) & 1) << pos
        return out

    def coords_of_address(self, address: int) -> tuple[int, ...]:
        """Inverse of :meth:`address`."""
        c = [0] * len(self.sides)
        for pos, (i, b) in enumerate(self.bits):
            c[i] |= ((address >> pos) & 1) << b
        return tuple(c)

    def corner(self, coords: Sequence[int], level: int) -> tuple[int, ...]:
        """Lowest corner of the level-``level`` cube holding ``coords``."""
        return tuple(c - c % s for c, s in zip(coords, self.level_sides(level)))

    def cube_id(self, coords: Sequence[int], level: int) -> int:
        """Node id of that corner (names the cube)."""
        return mesh_node(self.sides, self.corner(coords, level))

    def local_index(self, coords: Sequence[int], level: int) -> int:
        """Position of a node inside its level-``level`` cube in the order R (0 .. V-1)."""
        return self.address(coords) & ((1 << len(self.local_bits(level))) - 1)

    def node_of_local(self, corner: Sequence[int], level: int, index: int) -> tuple[int, ...]:
        """Coordinates of the node with local index ``index`` in the cube at ``corner``."""
        c = list(corner)
        for pos, (i, b) in enumerate(self.local_bits(level)):
            c[i] |= ((index >> pos) & 1) << b
        return tuple(c)

    def children(self, corner: Sequence[int], level: int) -> list[tuple[int, ...]]:
        """Corners of the level-(level+1) cubes of a level-``level`` cube, in the order R."""
        half = self.level_sides(level + 1)
        dims = self.split_dims(level)
        out = []
        for mask in range(1 << len(dims)):
            c = list(corner)
            for q, i in enumerate(dims):
                if mask >> q & 1:
                    c[i] += half[i]
            out.append(tuple(c))
        return out


# ---------------------------------------------------------------- local rules


def approx_direction(hier: Hierarchy, level: int, dim: int, own: Sequence[int], dest: Sequence[int]) -> int:
    """Step 1, the stage of dimension ``dim``: 0 if ``dest`` lies in this node's half, else ±1.

    Both nodes are in one level-``level`` cube; the half is the level-(level+1) split
    along ``dim``. The packet crosses to the mirror node ``own ± d e_dim``, ``d`` the
    half side.
    """
    b = hier.exponents[dim] - level - 1
    mine, theirs = (own[dim] >> b) & 1, (dest[dim] >> b) & 1
    if mine == theirs:
        return 0
    return 1 if mine == 0 else -1


def bitonic_steps(n_bits: int) -> list[tuple[int, int]]:
    """Batcher's bitonic sorting network on ``2^n_bits`` indices: ``(stage i, bit j)`` pairs.

    Stage i (1..n_bits) merges bitonic runs of length 2^i with compare-exchanges along
    bits ``j = i-1, ..., 0``; the pair is ``(x, x | 2^j)`` for x with bit j clear.
    """
    return [(i, j) for i in range(1, n_bits + 1) for j in range(i - 1, -1, -1)]


def keeps_low(index: int, stage: int, bit: int) -> bool:
    """Whether node ``index`` keeps the smaller half at step ``(stage, bit)`` of the network.

    The comparator of the pair is ascending when bit ``stage`` of the index is clear
    (always, at the last stage); the lower index of an ascending pair keeps the smaller
    half, and of a descending pair the larger.
    """
    ascending = not (index >> stage) & 1
    lower = not (index >> bit) & 1
    return ascending == lower


def merge_split(own: Sequence[Any], other: Sequence[Any], capacity: int, low: bool) -> tuple[list[Any], list[Any]]:
    """Merge-split of two blocks of ``capacity`` slots (absent items are +inf dummies).

    Args:
        own: This node's keys.
        other: The partner's keys.
        capacity: Slots per block (C).
        low: Keep the ``capacity`` smallest slots (else the largest).

    Returns:
        ``(kept, sent)``: the keys this node keeps (sorted) and those of ``own`` it
        sends to the partner (sorted). The keys it receives are ``kept`` minus ``own``.

    Example:
        >>> merge_split([1, 5], [2, 3, 9], 3, True)
        ([1, 2, 3], [5])
        >>> merge_split([2, 3, 9], [1, 5], 3, False)
        ([5, 9], [2, 3])
    """
    merged = sorted([*own, *other])
    kept = merged[:capacity] if low else merged[capacity:]
    keep_set = set(kept)
    return kept, sorted(k for k in own if k not in keep_set)


def balanced_start(node: int, n: int, volume: int) -> int:
    """First rank held by ``node`` in the balanced layout: ``floor(node n / V)``."""
    return node * n // volume


def balanced_node(rank: int, n: int, volume: int) -> int:
    """Node holding ``rank`` in the balanced layout: ``ceil((rank+1) V / n) - 1``."""
    return ((rank + 1) * volume - 1) // n


def spread_target(rank: int, n: int, volume: int, capacity: int) -> int:
    """Virtual index ``node * C + slot`` of ``rank`` in the balanced layout."""
    node = balanced_node(rank, n, volume)
    return node * capacity + rank - balanced_start(node, n, volume)


def h_value(n_first: int, volume: int) -> int:
    """h of a subcube (Step 2.2): ``max(1, ceil(n/V))`` for n packets at its first sorting."""
    return max(1, -(-n_first // volume))


def batch_index(rank: int, h: int) -> int:
    """0-based batch of the packet of a given rank: ``rank mod h`` (Step 2.2)."""
    return rank % h


# ---------------------------------------------------------------- the fixed schedule


@dataclass(frozen=True)
class Segment:
    """One piece of an invocation's fixed schedule.

    Attributes:
        phase: ``approx`` (Step 1, one round), ``keys`` (sort: key exchange),
            ``data`` (sort: one round of a merge-split), ``count`` (all-reduce of n),
            ``spread`` (one round of the balancing spread).
        start: Offset from the invocation's start.
        duration: Steps.
        dim: Dimension packets or keys move along (-1 for ``count``).
        distance: Hop distance of the moves (0 for ``count``).
        step: Stage index (``approx``), network step index (``keys``/``data``) or
            local-index bit (``spread``).
        round: Round within the stage or step (-1 for ``keys``/``count``).
        stage: Bitonic stage i (``keys``/``data``), else -1.
        bit: Local-index bit of the sort/spread step, else -1.
    """

    phase: str
    start: int
    duration: int
    dim: int
    distance: int
    step: int
    round: int
    stage: int = -1
    bit: int = -1


@dataclass(frozen=True)
class LevelPlan:
    """The fixed part of an invocation at level l: Step 1 and Step 2.1, plus the barrier.

    Attributes:
        level: l (< levels).
        c_in: Input packets per node at most (1 at level 0, else 2).
        capacity: C, packets per node after Step 1 and during the sort.
        segments: The schedule, in time order, offsets from the invocation start.
        approx_time: Duration of Step 1.
        sort_time: Duration of Step 2.1 (0 when the subcubes are single nodes).
        barrier_time: Steps between the last subcube's return and this return.
    """

    level: int
    c_in: int
    capacity: int
    segments: tuple[Segment, ...]
    approx_time: int
    sort_time: int
    barrier_time: int

    @property
    def fixed_time(self) -> int:
        """Steps before the first recursive call: Step 1 + Step 2.1."""
        return self.approx_time + self.sort_time

    def segment_at(self, offset: int) -> Segment | None:
        """The segment running ``offset`` steps after the invocation start (None after Step 2.1)."""
        if not 0 <= offset < self.fixed_time:
            return None
        starts = [s.start for s in self.segments]
        return self.segments[bisect.bisect_right(starts, offset) - 1]


def level_plan(hier: Hierarchy, level: int) -> LevelPlan:
    """Build the fixed schedule of an invocation at ``level`` (see the module docstring)."""
    if not 0 <= level < hier.levels:
        raise ValueError(f"level must be in [0, {hier.levels}), got {level}")
    c_in = 1 if level == 0 else 2
    split = hier.split_dims(level)
    capacity = c_in << len(split)
    sides = hier.level_sides(level)
    segs: list[Segment] = []
    t = 0
    for q, dim in enumerate(split):
        d = sides[dim] // 2
        for r in range(c_in << q):
            segs.append(Segment("approx", t, d, dim, d, q, r))
            t += d
    approx_time = t
    bits = hier.local_bits(level + 1)
    if bits:
        for k, (i, j) in enumerate(bitonic_steps(len(bits))):
            dim, b = bits[j]
            d = 1 << b
            segs.append(Segment("keys", t, d, dim, d, k, -1, i, j))
            t += d
            for r in range(capacity):
                segs.append(Segment("data", t, d, dim, d, k, r, i, j))
                t += d
        total = sum(1 << b for _, b in bits)
        segs.append(Segment("count", t, total, -1, 0, 0, -1))
        t += total
        for p in range(len(bits) - 1, -1, -1):
            dim, b = bits[p]
            d = 1 << b
            for r in range(capacity):
                segs.append(Segment("spread", t, d, dim, d, p, r, -1, p))
                t += d
    sort_time = t - approx_time
    barrier = sum(s - 1 for s in sides) if bits else 0
    return LevelPlan(level, c_in, capacity, tuple(segs), approx_time, sort_time, barrier)


def segment_partner(hier: Hierarchy, level: int, coords: Sequence[int], seg: Segment) -> tuple[int, ...] | None:
    """The node this node exchanges with in a segment of a level-``level`` invocation.

    ``approx``: the mirror node at distance ``seg.distance`` along ``seg.dim`` in the
    level-``level`` cube (packets sent in increasing key order, one per round);
    ``keys``/``data``/``spread``: the node whose level-(level+1) local index differs in
    bit ``seg.bit`` (``data``: the packets :func:`merge_split` sends, in increasing key
    order, one per round; ``spread``: the packet in slot ``seg.round``, if it moves);
    ``count``: None (an all-reduce over the bits, lowest first, one partner per bit).
    Every exchange is with a node at distance ``seg.distance`` along ``seg.dim``; the
    node sends towards it in the + direction iff its own coordinate is the lower one.
    """
    out = list(coords)
    if seg.phase == "approx":
        b = hier.exponents[seg.dim] - level - 1
        out[seg.dim] ^= 1 << b
        return tuple(out)
    if seg.phase in ("keys", "data", "spread"):
        dim, b = hier.local_bits(level + 1)[seg.bit]
        out[dim] ^= 1 << b
        return tuple(out)
    return None


def invocation_duration(hier: Hierarchy, h: dict[tuple[int, int], int], level: int, corner: Sequence[int]) -> int:
    """Length of every invocation of the cube at ``corner`` (Step 3, §4.2 "timing behavior").

    ``E(H) = approx + sort + max_b h(H_b) E(H_b) + barrier`` over its subcubes H_b, and
    0 for a single node. ``h`` maps ``(level, corner node id)`` to h for every subcube
    below (as :attr:`RecResult.h`); all invocations of a cube last the same because the
    h values never change once set.
    """
    if level == hier.levels:
        return 0
    plan = level_plan(hier, level)
    longest = 0
    for kid in hier.children(corner, level):
        kid_h = h[(level + 1, mesh_node(hier.sides, kid))]
        longest = max(longest, kid_h * invocation_duration(hier, h, level + 1, kid))
    return plan.fixed_time + longest + plan.barrier_time


def occupancy_bound(hier: Hierarchy) -> int:
    """Packets a node ever holds under rec_route, at most: ``sum_l C_l + 2``.

    Per unreturned level a node holds at most C_l packets (its share of a sorted
    subcube, ``ceil(n/V) <= C_l`` by Lemma 4.3, or its packets during Step 1 and 2.1),
    plus at most 2 in transit (one per direction of a round). This is the O(log D) of
    Theorem 1.2 with our constants.
    """
    return sum(level_plan(hier, lev).capacity for lev in range(hier.levels)) + 2


# ---------------------------------------------------------------- the reference execution


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
    """Execute rec_route (§4) on an instance, step by step, with the local rules above.

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
