"""Bounds of §§2-4: MNB and PMNB on d-dimensional tori and arrays, packing, prefix.

Times are in the paper's unit (one packet across one link); t_p is one prefix step.
gamma = 2 on a torus, 1 on an array (Lemma 1).

Readings of the paper (see also the module docstrings of ``_prefix`` and ``_packing``):

* Theorem 1 prints ``T^a_MNB = 2 T^t_MNB = ceil(N/2)`` for a p x p array. With the
  torus value ``p^2/4`` (p even) or ``(p^2 - 1)/4`` (p odd) quoted just above it,
  ``2 T^t`` is ``N/2`` or ``(N - 1)/2``, and the proof's lower bound ``(N - 1)/2`` with
  integrality gives ``ceil((N - 1)/2)``. So the exact value is ``ceil((N - 1)/2)``; it
  equals the printed ``ceil(N/2)`` for even p and is one less for odd p
  (:func:`theorem1_mnb_array` and :func:`theorem1_printed`).
* Theorem 2 for a ring without splitting is not stated; the array algorithm on the
  ring's spanning path gives ``K + p - 1`` (what :func:`theorem2_bound` returns).
* (5), (6) are Theorem 6's (7), (8); Lemma 2 is the same algorithm before the d
  rotated classes (``A_0`` alone).
* (6') is the floor of the general §4.2 expression at gamma = 1: for M >= 1 its first
  term ``ceil(M/d) (N-1)/N`` lies in ``[ceil(M/d) - 1, ceil(M/d))`` and, packets being
  whole, the time after the prefix phases is an integer. (5') is printed without that
  floor ("time less than").
* In §4.2 the classes have ``floor(M/d)`` or ``ceil(M/d)`` packets; all classes must
  time their broadcast subphases from ``ceil(M/d)`` (every node knows M after the
  class-computation prefix), else classes with different subphase lengths drift onto
  the same dimension. The bound (5')/(6') is computed from ``ceil(M/d)`` anyway.
* On a torus, Lemma 1 uses the ring broadcast of the Remark after Theorem 2, which
  splits a packet in two halves; with Theorem 6's mini-packets of 1/d, the pieces on
  a torus are 1/(2d) (see :func:`min_piece`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._inputs import equal_side
from ._theory_shape import check_m, check_shape, check_tp, gamma

__all__ = [
    "lemma1_phase3",
    "lemma1_phase3_sum",
    "lemma2_bound",
    "line_prefix_time",
    "line_prefix_time_exact",
    "min_piece",
    "mnb_by_torus_mnb",
    "mnb_torus_optimal",
    "mnb_unsplit_bound",
    "monotone_time",
    "packing_time",
    "pmnb_lower_bound",
    "pmnb_split_bound",
    "pmnb_unsplit_bound",
    "prefix_time",
    "theorem1_mnb_array",
    "theorem1_printed",
    "theorem2_bound",
    "theorem2_remark",
    "torus_mnb_2d",
]


def _shape_pmnb(sides: Sequence[int], wrap: bool, m: int, what: str) -> tuple[int, int, int, int, int]:
    s = check_shape(sides, wrap)
    p = equal_side(s, what)
    d, n = len(s), p ** len(s)
    return p, d, n, check_m(m, n), gamma(wrap)


# --------------------------------------------------------------------------------------
# Lower bounds (3), (4) and full-MNB reference values (§2, §4)


def pmnb_lower_bound(sides: Sequence[int], wrap: bool, m: int, *, integral: bool = False) -> float:
    """(3) torus ``(M - 1)/(2d)``, (4) array ``(M - 1)/d``, for any algorithm.

    Node 0 has 2d (torus) or d (array) input links and must receive at least M - 1
    packets. Holds for any sides. With ``integral`` (packets not split) the busiest
    input link carries ``ceil((M - 1)/deg)`` whole packets, so the ceiling is a bound
    too (our strengthening, not printed). M = 0 gives 0.
    """
    s = check_shape(sides, wrap)
    m = check_m(m, math.prod(s))
    links = gamma(wrap) * len(s)
    need = max(0, m - 1)
    return float(math.ceil(need / links)) if integral else need / links


def mnb_torus_optimal(sides: Sequence[int]) -> int:
    """Optimal full MNB on a p^d torus, ``ceil((N - 1)/(2d))`` ([BeT89], quoted in §4)."""
    s = check_shape(sides, True)
    p = equal_side(s, "the torus MNB time")
    return math.ceil((p ** len(s) - 1) / (2 * len(s)))


def mnb_by_torus_mnb(sides: Sequence[int], wrap: bool) -> int:
    """§4: PMNB done as a full MNB: ``ceil((N-1)/(2d))`` on a torus, twice that on an array.

    The array figure uses Fig. 1's simulation of a torus with slowdown two.
    """
    check_shape(sides, wrap)
    return mnb_torus_optimal(sides) * (1 if wrap else 2)


def _square(sides: Sequence[int], wrap: bool, what: str) -> int:
    s = check_shape(sides, wrap)
    if len(s) != 2:
        raise ValueError(f"{what} is stated for p x p meshes (two sides), got sides {s}")
    return equal_side(s, what)


def _line(sides: Sequence[int], wrap: bool, what: str) -> int:
    s = check_shape(sides, wrap)
    if len(s) != 1:
        raise ValueError(f"{what} is stated for a linear array or ring (one side), got sides {s}")
    return s[0]


def torus_mnb_2d(sides: Sequence[int]) -> int:
    """§2: optimal MNB on a p x p torus, ``p^2/4`` (p even), ``(p^2 - 1)/4`` (p odd)."""
    p = _square(sides, True, "the 2-D torus MNB time")
    return (p * p) // 4


def theorem1_mnb_array(sides: Sequence[int]) -> int:
    """Theorem 1 as proved: optimal MNB on a p x p array is ``ceil((N - 1)/2) = 2 T^t``."""
    p = _square(sides, False, "Theorem 1")
    return math.ceil((p * p - 1) / 2)


def theorem1_printed(sides: Sequence[int]) -> int:
    """Theorem 1 as printed, ``ceil(N/2)``: right for even p, one too many for odd p."""
    p = _square(sides, False, "Theorem 1")
    return math.ceil(p * p / 2)


# --------------------------------------------------------------------------------------
# Theorem 2 and its Remark: broadcasts on a linear array or ring


def theorem2_bound(sides: Sequence[int], wrap: bool, k: int, *, split: bool = False) -> float:
    """Theorem 2: K packets anywhere on p nodes are broadcast by ``K + p - 1`` (array).

    A ring (``wrap``) with packets split in two halves (one per direction) needs half
    that, ``(K + p - 1)/2``. A ring without splitting: ``K + p - 1`` (our reading, the
    array algorithm on the ring's path; the theorem is silent).

    Raises:
        ValueError: on K < 0 or a shape that is not one line.
    """
    p = _line(sides, wrap, "Theorem 2")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"K must be an integer >= 0, got {k!r}")
    full = float(k + p - 1)
    return full / 2 if (wrap and split) else full


def theorem2_remark(sides: Sequence[int], wrap: bool, *, split: bool = False) -> float:
    """Remark after Theorem 2: one packet per node, full MNB on a line of p nodes.

    Array ``p - 1``; ring ``floor(p/2)`` unsplit, ``(p - 1)/2`` with two-way splitting.
    """
    p = _line(sides, wrap, "the Remark after Theorem 2")
    if not wrap:
        return float(p - 1)
    return (p - 1) / 2 if split else float(p // 2)


# --------------------------------------------------------------------------------------
# Theorems 3, 4 and the prefix


def packing_time(sides: Sequence[int]) -> int:
    """Theorem 3: greedy packing lasts ``d (p - 1)`` (``sum (p_k - 1)`` for any sides)."""
    return sum(p - 1 for p in check_shape(sides, False))


def monotone_time(sides: Sequence[int]) -> int:
    """Theorem 4: pack then unpack, ``2 d (p - 1)``."""
    return 2 * packing_time(sides)


def prefix_time(sides: Sequence[int], tp: float) -> float:
    """§4.1 Phase 1: up and down on P, ``2 d (p - 1) t_p`` (``2 sum (p_k - 1) t_p``)."""
    return 2 * packing_time(sides) * check_tp(tp)


def line_prefix_time(sides: Sequence[int], tp: float) -> float:
    """§5 Phase 1 as stated: row and column sums by prefix in ``p t_p`` (``max p_k t_p``)."""
    return max(check_shape(sides, False)) * check_tp(tp)


def line_prefix_time_exact(sides: Sequence[int], tp: float) -> float:
    """§5 Phase 1 on median-rooted trees, all lines at once: ``max 2 floor(p_k/2) t_p``."""
    return max(2 * (p // 2) for p in check_shape(sides, False)) * check_tp(tp)


# --------------------------------------------------------------------------------------
# §4.1: with splitting


def min_piece(d: int, wrap: bool, split: bool) -> float:
    """Shortest message a packet is cut into by the paper's algorithms.

    1 without splitting; 1/d mini-packets on arrays (Theorem 6); 1/(2d) on tori, where
    each mini-packet is halved for the two directions of a ring (Lemma 1 via the Remark
    after Theorem 2). The distance lower bounds assume no piece is shorter.
    """
    if d < 1:
        raise ValueError(f"dimension d must be >= 1, got {d}")
    if not split:
        return 1.0
    return 1.0 / (gamma(wrap) * d)


def lemma1_phase3_sum(sides: Sequence[int], wrap: bool, m: int) -> float:
    """Lemma 1's first bound on Phase 3 of ``A_0``: ``(p-1)/gamma sum_{j=1..d} ceil(M/p^j)``."""
    p, d, _n, m, g = _shape_pmnb(sides, wrap, m, "Lemma 1")
    return (p - 1) / g * sum(math.ceil(m / p**j) for j in range(1, d + 1))


def lemma1_phase3(sides: Sequence[int], wrap: bool, m: int) -> float:
    """Lemma 1: Phase 3 of ``A_0`` takes at most ``(N-1)/N M/gamma + (p-1) d/gamma``."""
    p, d, n, m, g = _shape_pmnb(sides, wrap, m, "Lemma 1")
    return (n - 1) / n * m / g + (p - 1) * d / g


def lemma2_bound(sides: Sequence[int], wrap: bool, m: int, tp: float) -> float:
    """Lemma 2 (``A_0``, one dimension at a time).

    Torus ``M/2 (N-1)/N + 2d(p-1)t_p + 1.5(p-1)d``; array ``M (N-1)/N + 2d(p-1)t_p + 2(p-1)d``.
    """
    p, d, n, m, g = _shape_pmnb(sides, wrap, m, "Lemma 2")
    return m / g * (n - 1) / n + 2 * d * (p - 1) * check_tp(tp) + (1 + 1 / g) * (p - 1) * d


def pmnb_split_bound(sides: Sequence[int], wrap: bool, m: int, tp: float) -> float:
    """Theorem 6, (5) = (7) on a torus and (6) = (8) on an array (packets split).

    ``M/(gamma d) (N-1)/N + 2d(p-1)t_p + (1 + 1/gamma)(p-1)``, i.e. ``V_t`` with 1.5(p-1)
    and ``V_a`` with 2(p-1). No ceilings: slots may be fragmented (§4.1).
    """
    p, d, n, m, g = _shape_pmnb(sides, wrap, m, "Theorem 6")
    return m / (g * d) * (n - 1) / n + 2 * d * (p - 1) * check_tp(tp) + (1 + 1 / g) * (p - 1)


# --------------------------------------------------------------------------------------
# §4.2: without splitting


def _class_broadcast(p: int, d: int, n: int, g: int, m_class: int) -> float:
    step = math.ceil((p - 1) / g)
    return m_class / (p - 1) * step * (n - 1) / n + d * step


def pmnb_unsplit_bound(sides: Sequence[int], wrap: bool, m: int, tp: float) -> float:
    """§4.2: (5') on a torus, (6') on an array (packets never split).

    (5') ``ceil(M/d) ceil((p-1)/2)/(p-1) (N-1)/N + (p-1)d + d ceil((p-1)/2) + 4(p-1)d t_p``;
    (6') ``ceil(M/d) + 2(p-1)d - 1 + 4(p-1)d t_p``.
    """
    p, d, n, m, g = _shape_pmnb(sides, wrap, m, "(5')/(6')")
    prefix = 4 * (p - 1) * d * check_tp(tp)
    mc = math.ceil(m / d)
    if wrap:
        return _class_broadcast(p, d, n, g, mc) + (p - 1) * d + prefix
    return mc + 2 * (p - 1) * d - 1 + prefix


def mnb_unsplit_bound(sides: Sequence[int], wrap: bool) -> float:
    """End of §4.2: full MNB by packing and broadcast only (ranks and classes known).

    ``ceil(N/d) ceil((p-1)/gamma)/(p-1) (N-1)/N + (p-1)d + d ceil((p-1)/gamma)``.
    """
    p, d, n, _m, g = _shape_pmnb(sides, wrap, 0, "the §4.2 MNB")
    return _class_broadcast(p, d, n, g, math.ceil(n / d)) + (p - 1) * d
