"""§6: dynamic broadcasting by successive PMNBs, eqs. (9)-(14) and Theorem 7.

Broadcast requests arrive at every node as a Poisson process of rate lam. The scheme
repeats PMNB intervals: a reservation interval of length V (prefix and packing) and a
broadcast interval of length M X, M being the number of nodes with a packet at the
interval's start. With the splitting PMNB of §4.1 on a p^d mesh:

    X = (N - 1)/(gamma d N)                                           (9)
    V = 2 d (p - 1) t_p + (1 + 1/gamma)(p - 1)                         (10)
    rho = lam N X = lam (N - 1)/(gamma d)                              (12)

Theorem 7 ([VaB92]): if ``1 - rho - lam V > 0`` the mean delay T satisfies (11); any
scheme needs ``rho <= 1`` (13) (node 0's gamma d output links carry lam (N - 1) per
unit time); this scheme is guaranteed stable for ``rho`` below (14). Beyond (14) the
mean-value functions return ``math.inf``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..kit._validate import finite_nonnegative
from ._inputs import equal_side
from ._theory_shape import check_shape, check_tp, gamma, n_nodes

__all__ = [
    "delay_bound",
    "delay_bound_light",
    "lam_from_rho",
    "reservation_length",
    "rho_from_lam",
    "stability_limit",
    "stability_margin",
    "theorem7_delay_bound",
    "unit_broadcast_length",
    "unsplit_constants",
]


def _check_rate(x: float, name: str) -> float:
    """A rate or load factor: a finite real number >= 0 (ValueError otherwise)."""
    return finite_nonnegative(x, name, not_a_number=ValueError)


def rho_from_lam(lam: float, sides: Sequence[int], wrap: bool) -> float:
    """(12): the mesh utilisation ``rho = lam (N - 1)/(gamma d)`` (any sides)."""
    s = check_shape(sides, wrap)
    return _check_rate(lam, "lam") * (n_nodes(s) - 1) / (gamma(wrap) * len(s))


def lam_from_rho(rho: float, sides: Sequence[int], wrap: bool) -> float:
    """Inverse of (12): the per-node arrival rate ``lam = rho gamma d/(N - 1)``."""
    s = check_shape(sides, wrap)
    return _check_rate(rho, "rho") * gamma(wrap) * len(s) / (n_nodes(s) - 1)


def unit_broadcast_length(sides: Sequence[int], wrap: bool) -> float:
    """(9): X, the broadcast-interval time per active node, ``(N - 1)/(gamma d N)``."""
    s = check_shape(sides, wrap)
    equal_side(s, "X of (9)")
    n = n_nodes(s)
    return (n - 1) / (gamma(wrap) * len(s) * n)


def reservation_length(sides: Sequence[int], wrap: bool, tp: float) -> float:
    """(10): V, the reservation interval, ``2d(p-1)t_p + (1 + 1/gamma)(p-1)``.

    It equals V_t (torus) and V_a (array) of Theorem 6.
    """
    s = check_shape(sides, wrap)
    p = equal_side(s, "V of (10)")
    return 2 * len(s) * (p - 1) * check_tp(tp) + (1 + 1 / gamma(wrap)) * (p - 1)


def stability_margin(rho: float, sides: Sequence[int], wrap: bool, tp: float) -> float:
    """Theorem 7's condition ``1 - rho - lam V`` with V of (10) (stable when > 0)."""
    lam = lam_from_rho(rho, sides, wrap)
    return 1.0 - rho - lam * reservation_length(sides, wrap, tp)


def stability_limit(sides: Sequence[int], wrap: bool, tp: float, *, split: bool = True) -> float:
    """(14): ``1 / (1 + gamma d V/(N - 1))``, the rho where Theorem 7's margin vanishes.

    With ``split=False``: the rho where ``1 - lam N X' - lam V' = 0`` for the constants
    of :func:`unsplit_constants` (our derivation; not printed).
    """
    s = check_shape(sides, wrap)
    g, d, n = gamma(wrap), len(s), n_nodes(s)
    if split:
        v = reservation_length(s, wrap, tp)
        return 1.0 / (1.0 + g * d * v / (n - 1))
    x, v = unsplit_constants(s, wrap, tp)
    lam_per_rho = g * d / (n - 1)  # lam = rho * lam_per_rho, by (12)
    return 1.0 / (lam_per_rho * (n * x + v))


def theorem7_delay_bound(lam: float, n: int, x: float, v: float) -> float:
    """(11) for any network with a PMNB of duration at most ``X M + V``.

    Args:
        lam: per-node Poisson rate.
        n: number of nodes N.
        x, v: the constants X and V.

    Returns:
        The bound on the mean delay, or ``math.inf`` when ``1 - rho - lam V <= 0``.
    """
    lam = _check_rate(lam, "lam")
    x, v = _check_rate(x, "X"), _check_rate(v, "V")
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"N must be an integer >= 2, got {n!r}")
    rho = lam * n * x
    den = 1.0 - rho - lam * v
    if den <= 0.0:
        return math.inf
    return (1 + rho) * (rho * x / (2 * den) + (1 - rho) * v / (2 * den) + (1 - lam * v) * v / den) + x


def unsplit_constants(sides: Sequence[int], wrap: bool, tp: float) -> tuple[float, float]:
    """X and V for the PMNB of §4.2 (no splitting), from (5') and (6'); our derivation.

    §6 only says the unsplit algorithm gives "corresponding results (slightly worse)".
    With ``ceil(M/d) <= M/d + (d - 1)/d``, (5') is at most ``X' M + V'`` with
    ``c = ceil((p-1)/2) (N-1)/((p-1) N)``, ``X' = c/d`` and
    ``V' = (d-1) c/d + (p-1)d + d ceil((p-1)/2) + 4(p-1)d t_p``; (6') gives ``X' = 1/d``
    and ``V' = 2(p-1)d - 1/d + 4(p-1)d t_p``.

    Returns:
        ``(X', V')``.
    """
    s = check_shape(sides, wrap)
    p = equal_side(s, "(5')/(6')")
    d, n, tp = len(s), n_nodes(s), check_tp(tp)
    prefix = 4 * (p - 1) * d * tp
    if wrap:
        half = math.ceil((p - 1) / 2)
        c = half * (n - 1) / ((p - 1) * n)
        return c / d, (d - 1) * c / d + (p - 1) * d + d * half + prefix
    return 1 / d, 2 * (p - 1) * d - 1 / d + prefix


def delay_bound(rho: float, sides: Sequence[int], wrap: bool, tp: float, *, split: bool = True) -> float:
    """Theorem 7 on a p^d mesh: (11) with X, V of (9), (10); ``inf`` when unstable.

    With ``split=False`` X and V come from :func:`unsplit_constants` instead.
    """
    s = check_shape(sides, wrap)
    lam = lam_from_rho(rho, s, wrap)
    if split:
        x, v = unit_broadcast_length(s, wrap), reservation_length(s, wrap, tp)
    else:
        x, v = unsplit_constants(s, wrap, tp)
    return theorem7_delay_bound(lam, n_nodes(s), x, v)


def delay_bound_light(sides: Sequence[int], wrap: bool, tp: float) -> float:
    """§6, light load (rho -> 0): ``T <= 1.5 V + X``."""
    return 1.5 * reservation_length(sides, wrap, tp) + unit_broadcast_length(sides, wrap)
