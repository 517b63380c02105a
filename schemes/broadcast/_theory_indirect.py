"""The indirect scheme on the d edge-disjoint spanning binomial trees [JoH89] (§5).

Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple broadcasts in
hypercubes", §5.2 (Rules A-F), §5.4 (Propositions 4-6) and §5.5.2 (Rule D',
Corollary 8). These results are exact (no approximation).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._theory_limits import stability_limit_indirect
from ._theory_load import check_d, check_rho

__all__ = [
    "IndirectAnalysis",
    "indirect_analysis",
    "indirect_delay",
    "indirect_delay_rule_d_prime",
    "indirect_queue",
]

_INF = float("inf")


@dataclass(frozen=True)
class IndirectAnalysis:
    """The terms of Propositions 5 and 6 (§5.4) and Corollary 8 (§5.5.2).

    Attributes:
        w: Mean delay of the first (M/D/1 with synchronisation, period 3) queue, (29).
        r: Mean time to reach the root's buffer, ``R = W + 3d``, (30).
        v: Mean time from entering the buffer to broadcast completion, ``3d/2 - 1/2``.
        n_b: Mean number of stored packets under broadcast, per tree, (33).
        n_r: Mean number of packets heading to the root, per tree, (34).
        mean_broadcast_delay: D with Rule D, Proposition 5 (``R + V``).
        mean_broadcast_delay_rule_d_prime: D with Rule D', Corollary 8.
        mean_queue_per_node: Q with Rule D, Proposition 6 (``d (n_b + n_r) / 2^d``).
    """

    w: float
    r: float
    v: float
    n_b: float
    n_r: float
    mean_broadcast_delay: float
    mean_broadcast_delay_rule_d_prime: float
    mean_queue_per_node: float


def indirect_excess(d: int, rho: float) -> float:
    """Return ``3 rho / (2 [(2/3)(1 - 2^-d) - rho])``, the load term shared by (29)-(34)."""
    return 3.0 * rho / (2.0 * (stability_limit_indirect(d) - rho))


def indirect_analysis(d: int, rho: float) -> IndirectAnalysis:
    """All terms of the exact analysis of the indirect scheme (§5.4, §5.5.2).

    Note:
        (29) prints the rate fed to the first queue as ``(lam/2) 2^(d-1)``; the proof
        of Proposition 4 and the right-hand side of (29) itself use ``(lam/d) 2^(d-1)``,
        which is what is implemented (through the closed right-hand side of (29)).
        (34) applies Little's formula with the rate ``3 (lam/d) 2^(d-1)`` per buffer,
        which is the arrival probability per 3-slot cycle rather than per slot; with
        the per-slot rate N_r (and Q) would be smaller by ``2 rho d R / (2^d - 1)``.
        The paper's (34) and Proposition 6 are implemented as printed.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        An :class:`IndirectAnalysis`; every field but ``v`` is ``math.inf`` at or
        above (28).
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= stability_limit_indirect(d):
        return IndirectAnalysis(_INF, _INF, 1.5 * d - 0.5, _INF, _INF, _INF, _INF, _INF)
    n = (1 << d) - 1
    excess = indirect_excess(d, rho)
    w = 4.5 + excess  # (29): 3 (3/2 + rho / (2 [...]))
    r = 3.0 * d + w  # (30)
    v = 1.5 * d - 0.5
    n_b = 3.0 * rho * 2.0 ** (2 * d - 2) / n  # (33)
    n_r = 3.0 * rho * 2.0**d / n * r  # (34), as printed
    return IndirectAnalysis(
        w=w,
        r=r,
        v=v,
        n_b=n_b,
        n_r=n_r,
        mean_broadcast_delay=4.5 * d + 4.0 + excess,
        mean_broadcast_delay_rule_d_prime=3.0 * d + 7.0 - 3.0 * 2.0**-d + excess,
        mean_queue_per_node=0.75 * d * rho * 2.0**d / n + 3.0 * rho * d / n * r,
    )


def indirect_delay(d: int, rho: float) -> float:
    """D of the indirect scheme with Rule D, Proposition 5 (exact).

    ``D = (9/2) d + 4 + 3 rho / (2 [(2/3)(1 - 2^-d) - rho])``.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        D in slots; ``math.inf`` at or above (28).
    """
    return indirect_analysis(d, rho).mean_broadcast_delay


def indirect_delay_rule_d_prime(d: int, rho: float) -> float:
    """D of the indirect scheme with Rule D' (one virtual arc), Corollary 8 (exact).

    ``D = 3d + 7 - 3/2^d + 3 rho / (2 [(2/3)(1 - 2^-d) - rho])``, i.e. Proposition 5
    less ``3 (d/2 - 1 + 2^-d)``; ``D ~= 3d + 7 + (9/4) rho`` in light traffic (§5.5.2,
    §5.6; §1 prints the slope as "2/4", a typo for 9/4).

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        D in slots; ``math.inf`` at or above (28).
    """
    return indirect_analysis(d, rho).mean_broadcast_delay_rule_d_prime


def indirect_queue(d: int, rho: float) -> float:
    """Q of the indirect scheme with Rule D, Proposition 6, as printed.

    ``Q = (3d/4) rho 2^d/(2^d - 1) + 3 rho d/(2^d - 1) (3d + 9/2 + 3 rho / (2 [...]))``.
    See the note in :func:`indirect_analysis` about the factor 3 in its second term.
    The paper gives no Q for Rule D'.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        Q in packets per node; ``math.inf`` at or above (28).
    """
    return indirect_analysis(d, rho).mean_queue_per_node
