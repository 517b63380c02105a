"""Throughput factor and rates (§2, §4), and the delay expressions the paper gives up to constants.

See :mod:`.theory` for the conventions (slotnet's ``2d`` links per node, ``hops``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._theory_checks import check_rate, check_sides
from ._theory_loads import HOPS_RULES, unicast_hops

__all__ = [
    "check_hops",
    "delay_lower_bound",
    "lam_from_rho",
    "rates_from_rho",
    "reception_delay_order",
    "rho_from_lam",
    "throughput_factor",
]


def check_hops(hops: str) -> str:
    """Validate the unicast hop-count rule (``exact`` or ``paper``)."""
    if hops not in HOPS_RULES:
        raise ValueError(f"hops must be one of {HOPS_RULES}, got {hops!r}")
    return hops


def throughput_factor(
    sides: Sequence[int], lam_b: float, lam_r: float = 0.0, *, hops: str = "exact", merge_parallel: bool = False
) -> float:
    """The throughput factor rho of §2 (and §4): mean link utilisation under minimal routing.

    Args:
        sides: torus sides ``(n_1, ..., n_d)``, each >= 2.
        lam_b: broadcast packets per node and slot.
        lam_r: unicast packets per node and slot.
        hops: ``"exact"`` or ``"paper"`` unicast hop counts (module docstring).
        merge_parallel: count one link pair (not two) per node on a side of 2, as in the
            paper's hypercube; slotnet's torus has two, so leave False for runs.

    Example:
        >>> throughput_factor((8, 8), 4 / 63)
        1.0
        >>> round(throughput_factor((2, 2, 2), 0.0, 1.0, merge_parallel=True), 6)  # 1/2 + 1/14
        0.571429
    """
    sides = check_sides(sides)
    lam_b = check_rate(lam_b, "lam_b")
    lam_r = check_rate(lam_r, "lam_r")
    d_ave = sum(1 if (merge_parallel and n == 2) else 2 for n in sides)
    big_n = math.prod(sides)
    d_mean = float(sum(unicast_hops(sides, check_hops(hops))))
    return lam_b * (big_n - 1) / d_ave + lam_r * d_mean / d_ave


def rho_from_lam(sides: Sequence[int], lam_b: float, lam_r: float = 0.0, *, hops: str = "exact") -> float:
    """rho of per-node rates: ``lam_b (N-1)/(2d)`` plus ``lam_r D_ave/(2d)`` with unicast (§4).

    Example:
        >>> rho_from_lam((5, 5), 0.125)
        0.75
    """
    return throughput_factor(sides, lam_b, lam_r, hops=hops)


def lam_from_rho(sides: Sequence[int], rho: float, lam_r: float = 0.0, *, hops: str = "exact") -> float:
    """The broadcast rate lam_b giving throughput factor ``rho`` beside a fixed unicast rate.

    Raises:
        ValueError: on bad input, or if the unicast traffic alone exceeds ``rho``.

    Example:
        >>> lam_from_rho((5, 5), 0.75)
        0.125
    """
    sides = check_sides(sides)
    rho = check_rate(rho, "rho")
    rho_r = rho_from_lam(sides, 0.0, lam_r, hops=hops)
    if rho_r > rho:
        raise ValueError(f"unicast rate lam_r={lam_r} alone gives rho={rho_r:.6g} > rho={rho}")
    return (rho - rho_r) * 2 * len(sides) / (math.prod(sides) - 1)


def rates_from_rho(
    sides: Sequence[int], rho: float, unicast_share: float, *, hops: str = "exact"
) -> tuple[float, float]:
    """``(lam_b, lam_r)`` giving ``rho``, a fraction ``unicast_share`` of it from unicasts (§4).

    Example:
        >>> rates_from_rho((5, 5), 0.75, 0.0)
        (0.125, 0.0)
    """
    sides = check_sides(sides)
    rho = check_rate(rho, "rho")
    share = check_rate(unicast_share, "unicast_share")
    if share > 1:
        raise ValueError(f"unicast_share must be in [0, 1], got {unicast_share!r}")
    per_unicast = rho_from_lam(sides, 0.0, 1.0, hops=hops)
    return lam_from_rho(sides, rho * (1 - share)), rho * share / per_unicast


def delay_lower_bound(d: int, rho: float) -> float:
    """``d + 1/(1 - rho)``: the lower bound Omega(d + 1/(1-rho)) of §2 (from [12]), constants dropped.

    A bound up to unknown constant factors on the mean broadcast and reception delay of
    any oblivious scheme on a torus with ``n_i = O(1)``; not a number to compare with a
    measured delay digit by digit. ``math.inf`` for ``rho >= 1``.

    Example:
        >>> delay_lower_bound(3, 0.5)
        5.0
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    rho = check_rate(rho, "rho")
    return math.inf if rho >= 1 else d + 1 / (1 - rho)


def reception_delay_order(sides: Sequence[int], rho: float) -> float:
    """``n d + n/(1 - rho)`` with ``n = max n_i``: the O(.) of §3.2/§4 for priority STAR, constants dropped.

    Example:
        >>> reception_delay_order((4, 4, 4), 0.5)
        20.0
    """
    sides = check_sides(sides)
    rho = check_rate(rho, "rho")
    n = max(sides)
    return math.inf if rho >= 1 else n * len(sides) + n / (1 - rho)
