"""rec_route of §4: the hierarchical partition, the local rules and the fixed schedule, pure.

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
:func:`h_value`, :func:`batch_index`. :func:`._rec_reference.reference_run` executes the
whole algorithm step by step with these rules and nothing else; the ``m2o-rec`` node rule
(:mod:`.rec`) runs them at every node.

Model. Time is counted in steps; a step carries at most one message per link
direction. Packets move only in *lockstep rounds*: in a round every node sends at most
one packet, all of them the same distance d along the same dimension, one hop per step,
so a round takes d steps and no two packets of a round share a link direction in a step
(checked). Control messages (a node's block of sort keys, a count, the termination
flags) are O(1) words; they travel in their own segments of the fixed schedule (keys,
count) or, for termination, only between nodes whose packets are all at rest, so they
never compete with packets.

Choices where §4 leaves the details open (each is written down where it is used):

* Sides. §4 assumes a cube of side D, a power of two ("to avoid trivial
  complications"). These rules take any sides that are powers of two; a mesh with
  another side runs them on a virtual mesh of power-of-two sides whose cubes hold the
  halves ⌈s/2⌉ and ⌊s/2⌋ of the real sides (:mod:`._embed`). On power-of-two sides:
  level l splits each dimension whose level-l side is still > 1 (on a cube this is
  the paper's partition), and Definition 4.1 lists, from the most significant
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
  A result's ``first_arrival`` (:class:`._rec_reference.RecResult`) is §2's delivery
  time (the first time loc(p, t) = dest(p)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .instances import mesh_node

__all__ = [
    "Hierarchy",
    "LevelPlan",
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
    "segment_partner",
    "spread_target",
]


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

    def corner(self, coords: Sequence[int], level: int) -> tuple[int, ...]:
        """Lowest corner of the level-``level`` cube holding ``coords``."""
        return tuple(c - c % s for c, s in zip(coords, self.level_sides(level)))

    def cube_id(self, coords: Sequence[int], level: int) -> int:
        """Node id of that corner (names the cube)."""
        return mesh_node(self.sides, self.corner(coords, level))

    def local_index(self, coords: Sequence[int], level: int) -> int:
        """Position of a node inside its level-``level`` cube in the order R (0 .. V-1)."""
        return self.address(coords) & ((1 << len(self.local_bits(level))) - 1)

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
    below (as :attr:`._rec_reference.RecResult.h`); all invocations of a cube last the same because the
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
