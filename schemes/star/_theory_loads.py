"""Transmission counts of one STAR broadcast and the per-link loads they imply.

Yeh, Varvarigos & Eshoul, §3.1 eq. (1): with ending dimension ``l`` the SDC broadcast
spreads the packet over dimensions ``l+1, ..., d, 1, ..., l`` (paper numbering), and the
dimension at position ``t`` of that order carries

    a_{i,l} = (n_i - 1) * prod(n_j for the dimensions j before i in the order)

transmissions. Here dimensions are 0-based: ``a[i][l]`` is the paper's ``a_{i+1,l+1}``.

Per-link loads. Every torus node has two out-links per dimension (``+1`` and ``-1``; on a
side of 2 they are two parallel links to the one neighbour, see ``fabric/_topology.py``),
so a dimension-``i`` out-link carries half of the node's dimension-``i`` transmissions as
long as the two directions are used equally -- which the STAR ring split (odd ``n``:
``(n-1)/2`` each way; even ``n``: the longer side ``n/2`` at random) and the unicast tie
bit guarantee in expectation. By translation symmetry every dimension-``i`` link then has

    broadcast load  lam_B / 2 * sum_l a[i][l] x_l                (from eq. (2)/(4))
    unicast load    lam_R / 2 * h_i                              (§4)

where ``h_i`` is the mean number of dimension-``i`` hops of one unicast.

§4 writes ``h_i = floor(n_i / 4)`` ("the average distance of an n_i-node ring is
floor(n_i/4)"). That is a slip: the mean ring distance to a uniform node (itself
included) is ``n/4`` for even ``n`` and ``(n^2-1)/(4n)`` for odd ``n`` (e.g. 6/5, not 1,
for n = 5), and ``floor`` is exact only when ``4 | n``. With destinations uniform over
the *other* N-1 nodes (as §2's hypercube formula ``1/2 + 1/(2(2^d-1))`` assumes) each
hop count is scaled by ``N/(N-1)``. ``hops="exact"`` (default) uses the exact value,
which is what shortest-path routing really puts on the links; ``hops="paper"`` the
literal ``floor(n_i/4)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from ._rule import sdc_order

__all__ = [
    "HOPS_RULES",
    "class_loads_per_dim",
    "ring_mean_distance",
    "transmissions_matrix",
    "unicast_hops",
]

HOPS_RULES = ("exact", "paper")


def transmissions_matrix(sides: Sequence[int]) -> list[list[int]]:
    """``a[i][l]``: dimension-``i`` transmissions of one broadcast ending in ``l`` (eq. (1)).

    Every column sums to ``N - 1`` (eq. (3)).

    Example:
        >>> transmissions_matrix((3, 5))
        [[10, 2], [4, 12]]
    """
    d = len(sides)
    a = [[0] * d for _ in range(d)]
    for l in range(d):
        before = 1
        for k in sdc_order(d, l):
            a[k][l] = (sides[k] - 1) * before
            before *= sides[k]
    return a


def ring_mean_distance(n: int) -> Fraction:
    """Mean shortest distance from a node of an ``n``-ring to a uniform node (itself included).

    Example:
        >>> ring_mean_distance(8), ring_mean_distance(5)
        (Fraction(2, 1), Fraction(6, 5))
    """
    return Fraction(sum(min(r, n - r) for r in range(n)), n)


def unicast_hops(sides: Sequence[int], hops: str = "exact") -> list[Fraction]:
    """``h_i``: mean dimension-``i`` hops of one unicast to a uniform other node (§4).

    Args:
        sides: torus sides.
        hops: ``"exact"`` (ring mean distance times ``N/(N-1)``) or ``"paper"``
            (the literal ``floor(n_i/4)`` of §4; see the module docstring).
    """
    if hops == "paper":
        return [Fraction(n // 4) for n in sides]
    if hops != "exact":
        raise ValueError(f"hops must be one of {HOPS_RULES}, got {hops!r}")
    big_n = math.prod(sides)
    return [ring_mean_distance(n) * Fraction(big_n, big_n - 1) for n in sides]


def class_loads_per_dim(
    sides: Sequence[int],
    x: Sequence[Fraction],
    lam_b: Fraction,
    lam_r: Fraction,
    hops: str = "exact",
) -> list[tuple[Fraction, Fraction, Fraction]]:
    """Expected load of one directed dimension-``i`` link, split by traffic type.

    Returns:
        For each dimension ``i`` (0-based) ``(bcast_high, unicast, bcast_low)``:
        broadcast transmissions on a non-ending dimension (high priority in §3.2),
        unicast transmissions, and broadcast transmissions on the packet's ending
        dimension (low priority), each per link and slot.
    """
    a = transmissions_matrix(sides)
    h = unicast_hops(sides, hops)
    d = len(sides)
    out = []
    for i in range(d):
        low = lam_b * a[i][i] * x[i] / 2
        high = lam_b * sum(a[i][l] * x[l] for l in range(d) if l != i) / 2
        out.append((high, lam_r * h[i] / 2, low))
    return out
