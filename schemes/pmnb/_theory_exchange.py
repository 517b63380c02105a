"""§5 partial-exchange bounds, and lower bounds for a given placement of active nodes.

Partial exchange (PE) on a p x p array, m = floor(sqrt(M)):

* upper bound (§5): ``T_PE <= 2 m (N - p) + 2(p - 1) + p t_p`` (also on a p x p torus,
  whose array links suffice);
* the paper's lower bound ``mN/4`` is for the *worst* placement: the m x m corner box
  of Fig. 3(a) gives ``m (N - m^2)/2`` (its 2m outgoing links carry ``m^2 (N - m^2)``
  packets), which is >= mN/4 for M <= N/2; for M >= N/2 the left half of Fig. 3(b) gives
  ``Np/4``. The second step needs the left half to hold N/2 nodes, i.e. p even: for odd
  p the construction (floor(p/2) active columns on the left) proves only
  ``floor(p/2) ceil(p/2) p``, which is below mN/4 at M = N (p = 3: 6 < 6.75).
  :func:`pe_lower_worst_case` returns the printed mN/4,
  :func:`pe_lower_worst_case_proved` what the two constructions prove (tori: doubled cuts).

Bounds for a given placement A (|A| = M), valid for any algorithm; our derivations:

* per node: node v receives ``M - [v in A]`` broadcast packets, or as many personalised
  ones, over its ``deg(v)`` input links; an active node sends N - 1 personalised packets
  over its deg(v) output links;
* cuts: for a node set S with B(S) links leaving it (as many enter), the traffic that
  must cross is, for a broadcast, ``|A cap S|`` out (each packet at least once, if S is
  not everything) and ``|A - S|`` in; for a personalised exchange ``|A cap S| (N - |S|)``
  out and ``|A - S| |S|`` in; time >= traffic / B(S). We maximise over all axis-aligned
  boxes S (intervals per dimension; cyclic intervals on a torus), which include single
  nodes and the slabs whose cut is a bisection; past ``max_boxes`` boxes only single nodes
  and slabs are tried. Unsplit packets give the ceiling (the busiest of B links carries
  ``ceil(traffic/B)`` whole packets);
* distance: a packet from active s must reach the node farthest from s: ``ecc(s)`` hops,
  each taking at least the shortest piece (:func:`min_piece`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from ._theory_shape import check_m, check_shape, check_tp

__all__ = [
    "cut_bound",
    "distance_bound",
    "pe_lower_cluster",
    "pe_lower_worst_case",
    "pe_lower_worst_case_proved",
    "pe_upper_bound",
    "per_node_bound",
    "placement_bound",
]

TASKS = ("broadcast", "personalised")


def _pe_shape(sides: Sequence[int], wrap: bool, m: int) -> tuple[int, int, int, int]:
    s = check_shape(sides, wrap)
    if len(s) != 2 or s[0] != s[1]:
        raise ValueError(f"the partial exchange of §5 is stated for p x p meshes, got sides {s}")
    p = s[0]
    n = p * p
    m = check_m(m, n)
    return p, n, m, math.isqrt(m)


def pe_upper_bound(sides: Sequence[int], wrap: bool, m: int, tp: float) -> float:
    """§5: ``2 floor(sqrt M) (N - p) + 2(p - 1) + p t_p`` on a p x p array (or torus)."""
    p, n, m, r = _pe_shape(sides, wrap, m)
    return 2 * r * (n - p) + 2 * (p - 1) + p * check_tp(tp)


def pe_lower_worst_case(sides: Sequence[int], wrap: bool, m: int) -> float:
    """§5 as printed for arrays, ``mN/4``: a bound on the worst placement, not on every one.

    On a torus the same argument meets cuts with twice the links: ``mN/8`` (ours).
    """
    _p, n, m, r = _pe_shape(sides, wrap, m)
    return r * n / (8 if wrap else 4)


def pe_lower_cluster(sides: Sequence[int], wrap: bool, m: int) -> float:
    """Fig. 3(a): m^2 actives filling the m x m corner box, ``m^2 (N - m^2)`` over its cut.

    The cut has 2m links on an array, 4m on a torus; 0 when m = p (no cut) or m = 0.
    """
    p, n, m, r = _pe_shape(sides, wrap, m)
    if r in (0, p):
        return 0.0
    return r * r * (n - r * r) / ((4 if wrap else 2) * r)


def pe_lower_worst_case_proved(sides: Sequence[int], wrap: bool, m: int) -> float:
    """What Fig. 3's two constructions prove about the worst placement.

    The max of :func:`pe_lower_cluster` and the half cut: ``min(M, kp)`` actives in the
    left k = floor(p/2) columns send to the ``(p - k) p`` nodes on the right over p cut
    links (2p on a torus).
    """
    p, _n, m, _r = _pe_shape(sides, wrap, m)
    k = p // 2
    half = min(m, k * p) * (p - k) * p / ((2 if wrap else 1) * p)
    return max(pe_lower_cluster(sides, wrap, m), half)


# --------------------------------------------------------------------------------------
# Placement bounds


def _active_array(active: Iterable[int], sides: tuple[int, ...]) -> np.ndarray:
    n = math.prod(sides)
    ids = list(active)
    if len(set(ids)) != len(ids):
        raise ValueError("active node ids must be distinct")
    grid = np.zeros(n, dtype=np.int64)
    for v in ids:
        if not 0 <= v < n:
            raise ValueError(f"active node id {v} is outside 0..{n - 1}")
        grid[v] = 1
    return grid.reshape(tuple(reversed(sides))).transpose()  # axis k = dimension k


def _degrees(sides: tuple[int, ...], wrap: bool) -> np.ndarray:
    deg = np.zeros(sides, dtype=np.int64)
    for k, p in enumerate(sides):
        line = np.full(p, 2, dtype=np.int64)
        if not wrap:
            line[0] = line[-1] = 1
        shape = [1] * len(sides)
        shape[k] = p
        deg = deg + line.reshape(shape)
    return deg


def per_node_bound(active: Iterable[int], sides: Sequence[int], wrap: bool, task: str, *, integral: bool) -> float:
    """Max over nodes of (packets a node must receive, or send) / its links."""
    s = check_shape(sides, wrap)
    _check_task(task)
    a = _active_array(active, s)
    n, m = a.size, int(a.sum())
    deg = _degrees(s, wrap)
    need = (m - a).astype(float)
    if task == "personalised":
        need = np.maximum(need, a * (n - 1))
    return _ratio_max(need, deg, integral)


def _check_task(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")


def _ratio_max(need: np.ndarray, links: np.ndarray, integral: bool) -> float:
    mask = links > 0
    if not mask.any():
        return 0.0
    ratio = need[mask] / links[mask]
    if integral:
        ratio = np.ceil(ratio - 1e-9)
    return float(max(0.0, ratio.max()))


def _intervals(p: int, wrap: bool, full_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indicator rows, lengths and faces (cut sides) of the intervals of one dimension."""
    spans: list[tuple[list[int], int]] = [(list(range(p)), 0)]
    if not full_only:
        spans = []
        for lo in range(p):
            for length in range(1, p + 1):
                if wrap:
                    if length == p and lo > 0:
                        continue
                    cells = [(lo + j) % p for j in range(length)]
                    faces = 0 if length == p else 2
                else:
                    if lo + length > p:
                        continue
                    cells = list(range(lo, lo + length))
                    faces = int(lo > 0) + int(lo + length < p)
                spans.append((cells, faces))
    ind = np.zeros((len(spans), p), dtype=np.int64)
    for i, (cells, _f) in enumerate(spans):
        ind[i, cells] = 1
    lengths = ind.sum(axis=1)
    cut_sides = np.array([f for _c, f in spans], dtype=np.int64)
    return ind, lengths, cut_sides


def _box_bound(a: np.ndarray, s: tuple[int, ...], wrap: bool, task: str, integral: bool, partial: Sequence[bool]) -> float:
    n, m = a.size, int(a.sum())
    dims = [_intervals(p, wrap, not part) for p, part in zip(s, partial)]
    count = a.astype(np.int64)
    for k, (ind, _l, _f) in enumerate(dims):
        count = np.moveaxis(np.tensordot(ind, count, axes=(1, k)), 0, k)
    size = np.ones([1] * len(s), dtype=np.int64)
    for k, (_i, lengths, _f) in enumerate(dims):
        shape = [1] * len(s)
        shape[k] = len(lengths)
        size = size * lengths.reshape(shape)
    cut = np.zeros_like(size)
    for k, (_i, _l, faces) in enumerate(dims):
        term = np.ones([1] * len(s), dtype=np.int64)
        for j, (_i2, lengths, _f2) in enumerate(dims):
            shape = [1] * len(s)
            shape[j] = len(lengths)
            term = term * (faces if j == k else lengths).reshape(shape)
        cut = cut + term
    if task == "broadcast":
        out, inn = count * (size < n), m - count
    else:
        out, inn = count * (n - size), (m - count) * size
    need = np.maximum(out, inn).astype(float)
    return _ratio_max(np.broadcast_to(need, cut.shape), cut, integral)


def _slab_bound(a: np.ndarray, s: tuple[int, ...], wrap: bool, task: str, integral: bool, k: int) -> float:
    """:func:`_box_bound` over the slabs of dimension ``k`` (an interval in ``k``, every other
    dimension whole), from prefix sums of the active count along ``k``: O(p^2) numbers
    instead of an interval-by-cell indicator of p^3 (which needs gigabytes at p = 1024)."""
    n, m, p = a.size, int(a.sum()), s[k]
    rest = n // p
    marginal = a.astype(np.int64).sum(axis=tuple(j for j in range(len(s)) if j != k))
    lo, length = np.meshgrid(np.arange(p, dtype=np.int64), np.arange(1, p + 1, dtype=np.int64), indexing="ij")
    if wrap:
        keep = (length < p) | (lo == 0)
        lo, length = lo[keep], length[keep]
        prefix = np.concatenate(([0], np.cumsum(np.concatenate((marginal, marginal)))))
        faces = np.where(length == p, 0, 2)
    else:
        keep = lo + length <= p
        lo, length = lo[keep], length[keep]
        prefix = np.concatenate(([0], np.cumsum(marginal)))
        faces = (lo > 0).astype(np.int64) + (lo + length < p).astype(np.int64)
    count = prefix[lo + length] - prefix[lo]
    size = length * rest
    if task == "broadcast":
        out, inn = count * (size < n), m - count
    else:
        out, inn = count * (n - size), (m - count) * size
    return _ratio_max(np.maximum(out, inn).astype(float), faces * rest, integral)


def cut_bound(
    active: Iterable[int], sides: Sequence[int], wrap: bool, task: str, *, integral: bool, max_boxes: int = 2_000_000
) -> float:
    """Max over axis-aligned boxes S of (traffic that must cross S's cut) / (cut links)."""
    s = check_shape(sides, wrap)
    _check_task(task)
    ids = list(active)
    a = _active_array(ids, s)
    per_dim = [(p * (p - 1) + 1) if wrap else p * (p + 1) // 2 for p in s]
    if math.prod(per_dim) <= max_boxes:
        return _box_bound(a, s, wrap, task, integral, [True] * len(s))
    best = per_node_bound(ids, s, wrap, task, integral=integral)
    for k in range(len(s)):
        best = max(best, _slab_bound(a, s, wrap, task, integral, k))
    return best


def distance_bound(active: Iterable[int], sides: Sequence[int], wrap: bool, piece: float = 1.0) -> float:
    """``max over active s of ecc(s)`` hops, times the shortest piece's duration."""
    s = check_shape(sides, wrap)
    a = _active_array(active, s)
    if not a.any():
        return 0.0
    if wrap:
        return float(sum(p // 2 for p in s)) * piece
    best = 0
    for idx in zip(*np.nonzero(a)):
        best = max(best, sum(max(int(x), p - 1 - int(x)) for x, p in zip(idx, s)))
    return float(best * piece)


def placement_bound(
    active: Iterable[int], sides: Sequence[int], wrap: bool, task: str, *, split: bool = False, piece: float = 1.0
) -> dict[str, float]:
    """All placement bounds at once: ``per_node``, ``cut``, ``distance`` and their max ``bound``.

    Args:
        active: distinct active node ids.
        sides, wrap: the shape.
        task: ``"broadcast"`` (PMNB) or ``"personalised"`` (partial exchange).
        split: packets may be split (no ceilings; PMNB of §4.1 only).
        piece: shortest piece duration for the distance bound.
    """
    ids = list(active)
    check_m(len(ids), math.prod(check_shape(sides, wrap)))
    integral = not split
    out = {
        "per_node": per_node_bound(ids, sides, wrap, task, integral=integral),
        "cut": cut_bound(ids, sides, wrap, task, integral=integral),
        "distance": distance_bound(ids, sides, wrap, piece),
    }
    out["bound"] = max(out.values())
    return out
