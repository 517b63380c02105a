"""Lower bounds and the paper's bounds for many-to-one routing on meshes, as pure functions.

Source: Y. Mansour and B. Patt-Shamir, "Many-to-one packet routing on grids" (the seed
paper). Definitions (§2) for a subgraph H of the mesh G and an instance I:

* ``V(H)`` its node count; ``Z(H)`` the number of edges of G with exactly one endpoint
  in H; ``N_I(H)`` the number of packets whose destination is in H;
* ``D_I`` (:func:`dilation`) the largest source-destination distance;
* ``W_I = max_H N_I(H) / Z(H)`` (:func:`congestion`).

Reading of W_I. §2 lets H range over "all subgraphs of G"; as the issue asks, H ranges
here over all sub-grids (boxes ``lo <= c <= hi``) with ``Z(H) > 0`` -- every box except
the whole mesh, whose Z is 0 (the paper works inside one cube after its "preliminary
simplification", where the same exclusion is implicit). The maximum is exact over all
``prod_i n_i (n_i + 1) / 2`` boxes (4,326,400 on 64x64, 2,515,456 on 16x16x16),
computed with prefix sums in numpy in chunks of about a million boxes. The cost grows
like ``prod_i n_i^2 / 2``; measured on the development machine: 64x64 and 16x16x16 in
0.1-0.2 s, 32x32x32 (1.5e8 boxes) 6 s for W_I and 10 s for B_I below. It is documented
rather than approximated: no exact reduction to fewer boxes follows from the
definition, since both N and Z change when a box grows or shrinks. The value is a :class:`fractions.Fraction`.

Lower bound (Theorem 2.1: ``T_loc = Omega(D_I + W_I)``). Theorem 2.1 is asymptotic, and
``N_I(H) / Z(H)`` alone is not a valid bound with constant 1: packets whose source is
already in H need not cross its boundary (on a large mesh with every packet going to a
neighbour, the box "all but one column" has ``N/Z`` about a side length while the
optimum is 1 -- the paper's preliminary reduction to a D-cube is what keeps ``V/Z``
below D there). :func:`lower_bound` is the exact form of the two arguments the paper
names in §1 ("Our results"): every schedule has
``T >= max(D_I, B_I)``, ``B_I = max_H ceil((N_I(H) - S_I(H))^+ / Z(H))``,
where ``S_I(H)`` counts packets whose *source* is in H: at least ``N - S`` packets must
enter H over its Z boundary links, one per link per step (§2, condition (3)). Since
``N - S <= N``, ``B_I <= ceil(W_I)``; and ``T >= (D_I + B_I) / 2``.

Bounds of the algorithms (all O-statements in the paper; the functions return the
expression inside the O, without constants, and say so):

* offline schedule, Theorem 1.1 / §3: time ``O(D + W)``, space ``O(1)``;
* rec_route, Theorem 1.2 / §4: time ``O(D + W log D)``; space ``O(log D)``, "at most
  1 + log D levels that haven't returned, and each level incurs O(1) load";
* bfs_route, Theorem 1.3 / §5: the packets of each distance class
  ``P_I(d) = {p : dist(p) in [2^floor(log d), 2^(floor(log d)+1))}`` are delivered in
  average time within ``O(log d log D)`` of the best possible, using ``O(W log D)``
  buffer space (Lemma 5.3: ``O(W)`` per version);
* greedy (dimension-order, FIFO): the paper states no bound; :func:`greedy_space_bound`
  is ours (a packet is stored only at nodes of its path), labelled as such.

Meshes of any side. §4.1 assumes "the size of the given grid G is D x ... x D, where D
is a power of 2" (to "avoid trivial complications"). On other sides the partition
splits a side s into ⌈s/2⌉ and ⌊s/2⌋ (:mod:`._embed`): :func:`partition_levels` ``=
⌈log2 max_i n_i⌉`` levels, so Theorem 1.2's proof ("at most 1 + log D levels that
haven't returned") and Lemma 5.4's sum over the levels of §5 run over ⌈log D⌉ levels:
the bounds keep their form, ``O(D + W ⌈log D⌉)`` time and ``O(⌈log D⌉)`` space for
rec_route, ``O(W ⌈log D⌉)`` space and ``⌈log D⌉`` multiplexed versions for bfs_route,
and since ``⌈log D⌉ < log D + 1`` the O-statements are the paper's. What changes are the
constants. The nodes run the rules of §4 and §5 on a virtual mesh of sides
``2^⌈log2 n_i⌉ < 2 n_i`` with ``M = 2^m`` virtual nodes (m the number of sides that are
not powers of two; M <= 8) multiplexed per node, one slot in M each: Corollary 4.4's
``O(D_l)`` per invocation is over the virtual side (at most twice the real one), every
step costs M slots, and a node's buffer holds those of up to M virtual nodes. So the
time constant grows by at most ``2M`` (the run ends by M times the virtual schedule's
last step: ``completion_time_bound`` of :func:`.rec.virtual_theory`), the space
constant by at most M (``occupancy_bound``), and Lemma 4.3's ``2V(H)`` is counted with
the virtual cube's volume (its real nodes number at least ``V(H) / 2^k``).
:func:`rec_time_scale` and the other scales keep ``log D`` (unchanged on every mesh).

Logarithms are base 2 (the hierarchical partition of §4 halves the side at each level);
``log D`` is taken as ``log2(max(D, 2))`` so that ``D + W log D`` keeps its W term on
instances with ``D_I <= 1``.

Beside a run, every scheme of the package reports :func:`instance_bounds` (its theory
adapter, in the scheme's own module, adds what is its own: the reference execution for
``m2o-rec``, the plan's length for ``m2o-offline``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._base import Claim
from .instances import Instance, mesh_coords

__all__ = [
    "BoxWitness",
    "balance_time_scale",
    "bandwidth_bound",
    "bfs_delivery_scale",
    "bfs_phase_time_scale",
    "bfs_space_scale",
    "boundary_size",
    "congestion",
    "congestion_box",
    "crossing_delay_sum",
    "density",
    "dilation",
    "distance_class",
    "distance_classes",
    "greedy_space_bound",
    "greedy_time_bound",
    "imbalance",
    "instance_bounds",
    "instance_claims",
    "log_d",
    "lower_bound",
    "mean_delay_lower_bound",
    "offline_space_scale",
    "offline_time_scale",
    "ratio_dw",
    "ratio_dw_log",
    "partition_levels",
    "rec_space_scale",
    "rec_time_scale",
    "theory_metrics",
]

#: Boxes evaluated per numpy chunk (bounds the memory of one chunk to a few tens of MB).
_CHUNK = 1 << 20


# ---------------------------------------------------------------- distance


def dilation(instance: Instance) -> int:
    """``D_I``: the largest source-destination distance (§2); 0 for an empty instance."""
    return max((instance.distance(s, d) for s, d in instance.packets), default=0)


def log_d(d: int) -> float:
    """``log2(max(d, 2))``: the ``log D`` of Theorems 1.2-1.3 (base 2, at least 1)."""
    return math.log2(max(d, 2))


# ---------------------------------------------------------------- boxes


def boundary_size(sides: Sequence[int], lo: Sequence[int], hi: Sequence[int]) -> int:
    """``Z(H)`` of the box ``lo <= c <= hi`` (inclusive) of a mesh: edges leaving it.

    Example:
        >>> boundary_size((4, 4), (1, 1), (1, 1)), boundary_size((4, 4), (0, 0), (1, 3))
        (4, 4)
    """
    lengths = [b - a + 1 for a, b in zip(lo, hi)]
    total = 0
    for i, (a, b, n) in enumerate(zip(lo, hi, sides)):
        faces = (a > 0) + (b < n - 1)
        if faces:
            total += faces * math.prod(lengths[:i] + lengths[i + 1 :])
    return total


def _grid_counts(instance: Instance, which: int) -> np.ndarray:
    """Packets per node as an array indexed ``[c_0, c_1, ...]``; which=0 sources, 1 destinations."""
    counts = np.zeros(instance.sides, dtype=np.int64)
    for pair in instance.packets:
        counts[mesh_coords(instance.sides, pair[which])] += 1
    return counts


def _prefix(counts: np.ndarray) -> np.ndarray:
    """Inclusive-exclusive prefix sums padded with a zero row in every dimension."""
    out = np.zeros(tuple(s + 1 for s in counts.shape), dtype=np.int64)
    inner = counts
    for axis in range(counts.ndim):
        inner = np.cumsum(inner, axis=axis)
    out[tuple(slice(1, None) for _ in range(counts.ndim))] = inner
    return out


def _intervals(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All intervals ``[a, b]`` of ``range(n)``, as two arrays."""
    a, b = np.triu_indices(n)
    return a.astype(np.int64), b.astype(np.int64)


@dataclass(frozen=True)
class BoxWitness:
    """A box attaining a maximum over sub-grids.

    Attributes:
        value: The maximised quantity (``N/Z`` for :func:`congestion_box`).
        lo: Lower corner (inclusive).
        hi: Upper corner (inclusive).
        n_dest: ``N_I(H)``, packets destined in the box.
        n_source: ``S_I(H)``, packets whose source is in the box.
        z: ``Z(H)``.
    """

    value: Fraction
    lo: tuple[int, ...]
    hi: tuple[int, ...]
    n_dest: int
    n_source: int
    z: int


def _scan_boxes(instance: Instance, sources: bool) -> Iterable[tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray | None, np.ndarray]]:
    """Yield chunks ``(interval arrays, N, S, Z)`` covering every box of the mesh.

    ``N``, ``S`` (None unless ``sources``) and ``Z`` have shape ``(c, m_1, ..., m_{k-1})``
    where ``m_i`` is the number of intervals of dimension i and c the chunk's share of
    dimension 0's; the interval arrays are ``(lo_0, ..., lo_{k-1}, hi_0, ..., hi_{k-1})``
    of the chunk, indexed like the chunk's axes.
    """
    sides = instance.sides
    k = len(sides)
    pn = _prefix(_grid_counts(instance, 1))
    ps = _prefix(_grid_counts(instance, 0)) if sources else None
    ivs = [_intervals(n) for n in sides]
    lens = [b - a + 1 for a, b in ivs]
    faces = [(a > 0).astype(np.int64) + (b < n - 1).astype(np.int64) for (a, b), n in zip(ivs, sides)]
    rest = math.prod(len(a) for a, _ in ivs[1:])
    step = max(1, _CHUNK // max(rest, 1))
    m0 = len(ivs[0][0])
    for start in range(0, m0, step):
        idx0 = np.arange(start, min(m0, start + step))
        sel = [(ivs[0][0][idx0], ivs[0][1][idx0])] + ivs[1:]
        shape = [len(a) for a, _ in sel]
        n_box = np.zeros(shape, dtype=np.int64)
        s_box = np.zeros(shape, dtype=np.int64) if ps is not None else None
        for corner in range(1 << k):
            index = []
            sign = 1
            for i, (a, b) in enumerate(sel):
                if corner >> i & 1:
                    index.append(b + 1)
                else:
                    index.append(a)
                    sign = -sign
            grid = np.ix_(*index)
            if sign > 0:
                n_box += pn[grid]
            else:
                n_box -= pn[grid]
            if s_box is not None and ps is not None:
                s_box += sign * ps[grid]
        lsel = [lens[0][idx0]] + lens[1:]
        fsel = [faces[0][idx0]] + faces[1:]
        z_box = np.zeros(shape, dtype=np.int64)
        for i in range(k):
            term = np.ones([1] * k, dtype=np.int64)
            for j in range(k):
                vec = fsel[j] if j == i else lsel[j]
                term = term * vec.reshape([-1 if jj == j else 1 for jj in range(k)])
            z_box += term
        yield tuple(a for a, _ in sel) + tuple(b for _, b in sel), n_box, s_box, z_box


def _box_sources(instance: Instance, lo: Sequence[int], hi: Sequence[int]) -> int:
    """``S_I(H)`` of one box: packets whose source lies in it."""
    sides = instance.sides
    return sum(all(a <= c <= b for a, c, b in zip(lo, mesh_coords(sides, s), hi)) for s, _ in instance.packets)


def congestion_box(instance: Instance) -> BoxWitness | None:
    """The box maximising ``N_I(H) / Z(H)`` over all boxes with ``Z(H) > 0`` (§2's W_I).

    The maximum is found in floating point per chunk, then decided exactly with
    fractions among the distinct ``(N, Z)`` pairs within rounding of it.

    Returns:
        The witness (``value`` is W_I exactly), or None when no box has ``Z > 0``
        (a one-node mesh). Ties go to the first box in the scan order.
    """
    k = instance.dim
    best: tuple[Fraction, tuple[int, ...], tuple[int, ...], int, int] | None = None
    for arrays, n_box, _s, z_box in _scan_boxes(instance, sources=False):
        ratio = np.divide(n_box, z_box, out=np.full(n_box.shape, -1.0), where=z_box > 0)
        top = float(ratio.max())
        if top < 0 or (best is not None and top < float(best[0]) * (1 - 1e-9)):
            continue
        near = np.nonzero(ratio >= top * (1 - 1e-12))
        pairs = np.stack([n_box[near], z_box[near]], axis=1)
        _, first = np.unique(pairs, axis=0, return_index=True)
        for f in sorted(first.tolist()):
            pos = tuple(int(axis[f]) for axis in near)
            n, z = int(n_box[pos]), int(z_box[pos])
            value = Fraction(n, z)
            if best is None or value > best[0]:
                lo = tuple(int(arrays[i][pos[i]]) for i in range(k))
                hi = tuple(int(arrays[k + i][pos[i]]) for i in range(k))
                best = (value, lo, hi, n, z)
    if best is None:
        return None
    value, lo, hi, n, z = best
    return BoxWitness(value, lo, hi, n, _box_sources(instance, lo, hi), z)


def congestion(instance: Instance) -> Fraction:
    """``W_I = max_H N_I(H)/Z(H)`` over every box H with ``Z(H) > 0``, exactly (§2)."""
    witness = congestion_box(instance)
    return Fraction(0) if witness is None else witness.value


def bandwidth_bound(instance: Instance) -> int:
    """``B_I = max_H ceil((N_I(H) - S_I(H))^+ / Z(H))`` over all boxes with ``Z > 0``.

    The bandwidth argument of §1 made exact: at least ``N - S`` packets must enter H
    over its Z boundary links, at most one per link per step (§2, condition (3)).
    """
    best = 0
    for _arrays, n_box, s_box, z_box in _scan_boxes(instance, sources=True):
        assert s_box is not None
        need = n_box - s_box
        valid = (z_box > 0) & (need > 0)
        if valid.any():
            z = np.where(valid, z_box, 1)
            best = max(best, int(np.where(valid, (need + z - 1) // z, 0).max()))
    return best


def lower_bound(instance: Instance) -> int:
    """Theorem 2.1 in exact form: every schedule needs ``T >= max(D_I, B_I)`` steps.

    See the module docstring: ``D_I`` is the distance bound and ``B_I``
    (:func:`bandwidth_bound`) the bandwidth bound; together ``T = Omega(D_I + W_I)``
    inside one D-cube, which is Theorem 2.1.
    """
    return max(dilation(instance), bandwidth_bound(instance))


# ---------------------------------------------------------------- the algorithms' bounds


def ratio_dw(completion_time: float, instance: Instance) -> float:
    """``T / (D_I + W_I)``: bounded for the offline schedule (Theorem 1.1)."""
    denom = dilation(instance) + float(congestion(instance))
    return math.inf if denom == 0 else completion_time / denom


def ratio_dw_log(completion_time: float, instance: Instance) -> float:
    """``T / (D_I + W_I log D_I)``: bounded for rec_route (Theorem 1.2)."""
    denom = rec_time_scale(instance)
    return math.inf if denom == 0 else completion_time / denom


def offline_time_scale(instance: Instance) -> float:
    """``D_I + W_I``: Theorem 1.1's O(D + W) (no constant given)."""
    return dilation(instance) + float(congestion(instance))


def offline_space_scale() -> int:
    """1: Theorem 1.1's O(1) buffer space (no constant given)."""
    return 1


def rec_time_scale(instance: Instance) -> float:
    """``D_I + W_I log D_I``: Theorem 1.2's time O(D + W log D) (no constant given)."""
    d = dilation(instance)
    return d + float(congestion(instance)) * log_d(d)


def partition_levels(sides: Sequence[int]) -> int:
    """Levels of §4's partition below the whole mesh, halves ⌈s/2⌉ and ⌊s/2⌋: ``⌈log2 max n_i⌉``.

    It is ``log D`` on §4's cube of side D, a power of two, and ``⌈log D⌉`` on any other.

    Example:
        >>> partition_levels((8, 8)), partition_levels((10, 10)), partition_levels((5, 6, 9)), partition_levels((1,))
        (3, 4, 4, 0)
    """
    return max(0, max(sides, default=1) - 1).bit_length()


def rec_space_scale(instance: Instance) -> float:
    """``1 + log D_I``: Theorem 1.2's space O(log D), "at most 1 + log D levels ... each O(1) load"."""
    return 1 + log_d(dilation(instance))


def bfs_space_scale(instance: Instance) -> float:
    """``W_I log D_I``: Theorem 1.3's buffer space O(W log D) (Lemma 5.3: O(W) per version)."""
    return float(congestion(instance)) * log_d(dilation(instance))


def greedy_space_bound(instance: Instance) -> int:
    """Ours, not the paper's: an upper bound on greedy's buffer, which §2 leaves unbounded.

    Dimension-order routing (dimension 0 first) stores a packet only at the nodes of its
    path other than its destination, so ``L_v(t)`` never exceeds the number of packets
    whose path visits v as a non-final node. This is that maximum over v; it grows with
    the number of packets (about N/2 on a 2-D all-to-centre instance, at the target's
    neighbour on its column), unlike rec_route's O(log D).
    """
    sides = instance.sides
    strides = [math.prod(sides[:i]) for i in range(len(sides))]
    visits = np.zeros(instance.n_nodes, dtype=np.int64)
    for s, d in instance.packets:
        cs, cd = mesh_coords(sides, s), mesh_coords(sides, d)
        node = s
        for i, (a, b) in enumerate(zip(cs, cd)):
            step = 1 if b > a else -1
            for _ in range(abs(b - a)):
                visits[node] += 1
                node += step * strides[i]
    return int(visits.max()) if len(visits) else 0


def greedy_time_bound(instance: Instance) -> int:
    """Ours, not the paper's: greedy delivers every packet by step ``min(sum_p dist(p), D_I + N - 1)``.

    Greedy never leaves a link idle while a packet waits for it. So (a) in every step
    before the last delivery at least one packet takes one hop of its shortest path, and
    there are ``sum_p dist(p)`` hops in all; and (b) dimension-order paths never rejoin
    once they separate (two paths share edges along dimension i only where they agree in
    every other coordinate, which they keep until one turns), so by the delay lemma for
    such routes (Motwani & Raghavan, *Randomized Algorithms*, Lemma 4.5, whose proof
    needs only a link that sends whenever a packet waits) a packet is delayed at most
    once by each other packet whose path meets its own: ``dist(p) + N - 1``. (It is the
    run's safety cap, not a sharp bound: §1's point is that greedy's buffers grow.)

    Example:
        >>> from .instances import make_instance
        >>> import random
        >>> greedy_time_bound(make_instance("all-to-one", (4, 4), random.Random(0)))
        19
    """
    sides = instance.sides
    dists = [sum(abs(a - b) for a, b in zip(mesh_coords(sides, s), mesh_coords(sides, d)))
             for s, d in instance.packets]
    if not dists:
        return 0
    return min(sum(dists), max(dists) + len(dists) - 1)


# ---------------------------------------------------------------- §5: average delivery time


def imbalance(loads: Sequence[int]) -> int:
    """Imbalance of a set of loads (§5): ``max - min``.

    §5 defines S as beta-balanced if the maximal difference in load is at most beta, and
    "the imbalance of S is beta if S is (beta-1)-balanced and not beta-balanced" -- read
    literally, no beta qualifies (a (beta-1)-balanced set is beta-balanced). We read the
    intended: beta-balanced and not (beta-1)-balanced, i.e. the maximal difference.
    """
    return max(loads) - min(loads) if len(loads) else 0


def balance_time_scale(side: int, beta: int) -> int:
    """``beta * D_l``: Theorem 5.1's k-load balancing time O(beta D_l) (no constant given)."""
    return beta * side


def density(n_dest: int, volume: int) -> float:
    """``A(H) = max{1, N(H)/V(H)}`` (Definition 5.1)."""
    return max(1.0, n_dest / volume)


def bfs_phase_time_scale(n_dest: int, volume: int, side: int) -> float:
    """``A(H) D_l``: Lemma 5.4's phase time O(A(H) D_l) at a level-l subcube (no constant)."""
    return density(n_dest, volume) * side


def _aligned_blocks(instance: Instance, side: int) -> tuple[np.ndarray, np.ndarray]:
    """Per packet, the id of the aligned block of side ``side`` holding its destination and its source."""
    sides = instance.sides
    per_dim = [-(-n // side) for n in sides]

    def block(node: int) -> int:
        c = mesh_coords(sides, node)
        out, stride = 0, 1
        for ci, m in zip(c, per_dim):
            out += (ci // side) * stride
            stride *= m
        return out

    dst = np.fromiter((block(d) for _, d in instance.packets), dtype=np.int64, count=len(instance))
    src = np.fromiter((block(s) for s, _ in instance.packets), dtype=np.int64, count=len(instance))
    return dst, src


def _block_box(instance: Instance, side: int, block_id: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    sides = instance.sides
    lo, hi = [], []
    for n in sides:
        m = -(-n // side)
        block_id, b = divmod(block_id, m)
        lo.append(b * side)
        hi.append(min(n, (b + 1) * side) - 1)
    return tuple(lo), tuple(hi)


def bfs_delivery_scale(instance: Instance) -> list[float]:
    """Per packet, ``sum_l A(H_l(p)) D_l`` over the hierarchical cubes holding its destination.

    The upper-bound expression in the proof of Lemma 5.5 (each phase l costs
    ``O(A(H) D_l)`` by Lemma 5.4); no constant. Cubes are the aligned blocks of side
    ``2^j``, ``j = 0 .. ceil(log2 max side)``, clipped to the mesh (the partition of §4
    when the mesh is a power-of-two cube).
    """
    top = max(instance.sides)
    sides_list = [1 << j for j in range(max(1, math.ceil(math.log2(top))) + 1)]
    totals = np.zeros(len(instance), dtype=float)
    for side in sides_list:
        dst, _ = _aligned_blocks(instance, side)
        counts = np.bincount(dst, minlength=int(dst.max()) + 1 if len(dst) else 0)
        for i, b in enumerate(dst):
            lo, hi = _block_box(instance, side, int(b))
            volume = math.prod(h - l + 1 for l, h in zip(lo, hi))
            totals[i] += density(int(counts[b]), volume) * side
    return totals.tolist()


def crossing_delay_sum(n_cross: int, z: int) -> int:
    """``sum_{i=1..n} ceil(i/z)``: least total arrival time of n packets over z links.

    With at most z packets entering per step, the i-th entry happens no earlier than
    step ``ceil(i/z)`` (§5, proof of Lemma 5.5: "the average time for a packet to cross
    the boundary is Omega(N(H)/Z(H))", made exact).
    """
    q, r = divmod(n_cross, z)
    return z * q * (q + 1) // 2 + r * (q + 1)


def mean_delay_lower_bound(instance: Instance, packets: Sequence[int] | None = None) -> float:
    """A lower bound on the mean delivery time of a set of packets under any schedule.

    The exact form of the argument of Lemma 5.5: the delivery time of p is at least its
    distance, and at least the time it enters the block H of any one partition that
    holds its destination. For one partition into disjoint aligned blocks of side
    ``2^j``, the ``c(H)`` packets of the set that must enter H (destination in H, source
    outside) do so over ``Z(H)`` links, so their delivery times sum to at least
    :func:`crossing_delay_sum`. The bound is the largest of ``sum dist`` and these sums
    over ``j``, divided by the set size. (The paper sums over all levels and divides by
    ``log D``; taking the best level is never weaker.) Other packets only add delay, so
    the bound holds for a class ``P_I(d)`` inside the whole instance.

    Args:
        instance: The instance.
        packets: Indices into ``instance.packets`` (default: all).

    Returns:
        The bound (0.0 for an empty set).
    """
    idx = np.arange(len(instance)) if packets is None else np.asarray(list(packets), dtype=np.int64)
    if len(idx) == 0:
        return 0.0
    dist_sum = sum(instance.distance(*instance.packets[int(i)]) for i in idx)
    best = dist_sum
    top = max(instance.sides)
    for j in range(max(1, math.ceil(math.log2(top))) + 1):
        side = 1 << j
        dst, src = _aligned_blocks(instance, side)
        crossing = idx[dst[idx] != src[idx]]
        if len(crossing) == 0:
            continue
        blocks, counts = np.unique(dst[crossing], return_counts=True)
        total = 0
        for b, c in zip(blocks.tolist(), counts.tolist()):
            lo, hi = _block_box(instance, side, b)
            z = boundary_size(instance.sides, lo, hi)
            if z:
                total += crossing_delay_sum(c, z)
        best = max(best, total)
    return best / len(idx)


def distance_class(distance: int) -> int | None:
    """Class index ``floor(log2 d)`` of Theorem 1.3's ``P_I(d)``; None for distance 0."""
    return None if distance <= 0 else distance.bit_length() - 1


def distance_classes(instance: Instance) -> dict[int, list[int]]:
    """Packet indices by distance class (Theorem 1.3); packets at distance 0 are left out."""
    out: dict[int, list[int]] = {}
    for i, (s, d) in enumerate(instance.packets):
        c = distance_class(instance.distance(s, d))
        if c is not None:
            out.setdefault(c, []).append(i)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- summary


def theory_metrics(instance: Instance, completion_time: float | None = None) -> dict[str, float]:
    """The instance's bounds under the project's metric names, plus ratios when T is given.

    Keys: ``n_packets``, ``dilation`` (D_I), ``congestion`` (W_I as a float),
    ``bandwidth_bound`` (B_I), ``lower_bound`` (Theorem 2.1, exact form),
    ``offline_time_scale`` (D + W), ``rec_time_scale`` (D + W log D),
    ``rec_space_scale`` (1 + log D), ``bfs_space_scale`` (W log D); with
    ``completion_time``: ``ratio_dw`` = T/(D + W), ``ratio_dw_log`` = T/(D + W log D)
    and ``ratio_lower_bound`` = T / lower_bound.
    """
    d = dilation(instance)
    w = congestion(instance)
    b = bandwidth_bound(instance)
    lb = max(d, b)
    out: dict[str, float] = {
        "n_packets": len(instance),
        "dilation": d,
        "congestion": float(w),
        "bandwidth_bound": b,
        "lower_bound": lb,
        "offline_time_scale": d + float(w),
        "rec_time_scale": d + float(w) * log_d(d),
        "rec_space_scale": 1 + log_d(d),
        "bfs_space_scale": float(w) * log_d(d),
    }
    if completion_time is not None:
        dw, dwl = d + float(w), d + float(w) * log_d(d)
        out["ratio_dw"] = math.inf if dw == 0 else completion_time / dw
        out["ratio_dw_log"] = math.inf if dwl == 0 else completion_time / dwl
        out["ratio_lower_bound"] = math.inf if lb == 0 else completion_time / lb
    return out


def instance_bounds(instance: Instance) -> dict[str, Any]:
    """What every many-to-one scheme reports beside its run: :func:`theory_metrics`, greedy's
    buffer bound (:func:`greedy_space_bound`, ours) and the mean-delay lower bound overall and
    per distance class (``class_mean_delay_lower_bound[k]``, None for an empty class)."""
    out: dict[str, Any] = dict(theory_metrics(instance))
    out["greedy_space_bound"] = greedy_space_bound(instance)
    out["mean_delay_lower_bound"] = mean_delay_lower_bound(instance)
    classes = distance_classes(instance)
    top = max(classes, default=-1)
    out["class_mean_delay_lower_bound"] = [mean_delay_lower_bound(instance, classes[k]) if k in classes else None
                                           for k in range(top + 1)]
    return out


def instance_claims(th: Mapping[str, Any], exact: Sequence[str] = (), upper: Sequence[tuple[str, str, str]] = ()) -> list[Claim]:
    """What :func:`instance_bounds` (and a scheme's own values) are to a run, for every
    many-to-one scheme's ``claims``: ``lower_bound`` (Theorem 2.1: max(D_I, B_I)), the
    bandwidth bound and the mean-delay bound (each packet needs at least its distance) are
    lower bounds; the instance's dilation and congestion are exactly what the run measures
    (properties of the instance, not of the schedule). ``exact``: keys computed by
    executing the scheme's own algorithm (or plan) centrally, for the metric of the same
    name; ``upper``: (key, metric, why) upper bounds. The scales (D + W, D + W log D, ...) are orders
    without constants and stand beside no metric. One-shot values: no horizon."""
    out = [
        Claim("lower_bound", "completion_time", "lower-bound", why="Theorem 2.1: max(D_I, B_I)"),
        Claim("bandwidth_bound", "completion_time", "lower-bound", why="Theorem 2.1: B_I, the cut bound"),
        Claim("mean_delay_lower_bound", "mean_delay", "lower-bound", why="every packet travels at least its distance"),
        Claim("dilation", "dilation", "exact", why="D_I of the instance"),
        Claim("congestion", "congestion", "exact", why="W_I of the instance"),
    ]
    out += [Claim(k, k, "exact", why="the scheme's algorithm executed centrally") for k in exact if k in th]
    out += [Claim(k, m, "upper-bound", why=why) for k, m, why in upper if k in th]
    return out
