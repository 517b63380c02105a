"""Stability limits (§3.1, §4.1, §4.2, §5.4, §5.5.1) and delay lower bounds (§3.2).

Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple broadcasts in
hypercubes". Limits are load factors rho (eq. (8)); a scheme is stable for rho strictly
below its limit, except where the paper states only a necessary condition (then rho at
or below the limit is *not ruled out*).
"""

from __future__ import annotations

from ._theory_load import check_d, check_rho

__all__ = [
    "delay_lower_bound_static",
    "delay_lower_bound_universal",
    "mnb_period",
    "stability_limit_dtree",
    "stability_limit_indirect",
    "stability_limit_mnb",
    "stability_limit_rule_a",
    "stability_limit_simple",
    "stability_limit_universal",
    "stability_limits",
]

_INF = float("inf")


def stability_limit_universal(d: int) -> float:
    """Necessary condition for any scheme, eq. (8) (§3.1): ``rho <= 1``.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        1.0.
    """
    check_d(d)
    return 1.0


def mnb_period(d: int) -> int:
    """Duration ``ceil((2^d - 1)/d)`` of the optimal multinode broadcast [BOSTT89] (§4.2.1)."""
    return -(-((1 << d) - 1) // d)


def stability_limit_mnb(d: int) -> float:
    """Limit (12) of the periodic multinode-broadcast scheme (§4.2.1).

    ``rho < ((2^d - 1)/d) / ceil((2^d - 1)/d)``.

    Necessary and sufficient for the periodic scheme of §4.2.1; sufficient for its
    non-idling version of §4.3.1 under the label priority rule described there. Less
    than 1 for every ``d >= 2``; 0.9932 for d = 10.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        The right-hand side of (12).
    """
    d = check_d(d)
    return (((1 << d) - 1) / d) / mnb_period(d)


def stability_limit_simple(d: int) -> float:
    """Necessary condition for the simple direct scheme of §4.1: ``rho <= (2/d)(1 - 2^-d)``.

    Every node broadcasts along its completely unbalanced tree crossing dimensions in
    increasing order; the arc of dimension 1 into each node carries ``lam 2^(d-1)``.
    Tends to 0 as d grows. The paper gives only this necessary condition.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        ``(2/d)(1 - 2^-d)``.
    """
    d = check_d(d)
    return (2.0 / d) * (1.0 - 2.0**-d)


def stability_limit_dtree(d: int) -> float:
    """Limit of the d-simultaneous-broadcast schemes (§4.2.2, §4.3.2): ``rho < 1``.

    Necessary and sufficient for both periodic schemes of §4.2.2 and, with a label
    priority as in §4.3.1, for the non-idling d-tree scheme of §4.3.2.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        1.0.
    """
    check_d(d)
    return 1.0


def stability_limit_indirect(d: int) -> float:
    """Limit (28) of the indirect scheme, Proposition 4 (§5.4): ``rho < (2/3)(1 - 2^-d)``.

    Necessary and sufficient (with either Rule D or Rule D').

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        ``(2/3)(1 - 2^-d)``.
    """
    d = check_d(d)
    return (2.0 / 3.0) * (1.0 - 2.0**-d)


def stability_limit_rule_a(d: int) -> float:
    """Necessary condition (35), Proposition 7 (§5.5.1), for any scheme obeying Rule A.

    ``rho <= (2/3)(1 - (1/3)/(2^d - 2/3))``; slightly above (28) (by 0.26% for d = 8).

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        The right-hand side of (35).
    """
    d = check_d(d)
    return (2.0 / 3.0) * (1.0 - (1.0 / 3.0) / (2.0**d - 2.0 / 3.0))


def stability_limits(d: int) -> dict[str, float]:
    """All stability limits of the paper for a d-cube.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        ``{"universal": (8), "mnb": (12), "simple": §4.1, "dtree": §4.2.2/§4.3.2,
        "indirect": (28), "rule_a": (35)}``.
    """
    return {
        "universal": stability_limit_universal(d),
        "mnb": stability_limit_mnb(d),
        "simple": stability_limit_simple(d),
        "dtree": stability_limit_dtree(d),
        "indirect": stability_limit_indirect(d),
        "rule_a": stability_limit_rule_a(d),
    }


# --------------------------------------------------------------------------------------
# §3.2: lower bounds on D


def delay_lower_bound_universal(d: int, rho: float, *, sharp: bool = False) -> float:
    """Lower bound on D for any scheme, Proposition 1: ``D = Omega(d + rho/(d(1-rho)))``.

    By default returns the explicit bound the proof ends with,
    ``max{d, rho / (4 d (1 - rho))}``. With ``sharp=True`` returns the bound the proof
    passes through before weakening it, ``max{d, (1 - 2^-d)(1/2 + rho/(2d(1 - rho)))}``
    (eq. (9) with the [Bru71] bound on the M/D/d delay), which is never smaller.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).
        sharp: Use the intermediate (tighter) bound of the proof.

    Returns:
        The bound in slots; ``math.inf`` for ``rho >= 1``.
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= 1.0:
        return _INF
    if sharp:
        return max(float(d), (1.0 - 2.0**-d) * (0.5 + rho / (2.0 * d * (1.0 - rho))))
    return max(float(d), rho / (4.0 * d * (1.0 - rho)))


def delay_lower_bound_static(d: int, rho: float, *, sharp: bool = False) -> float:
    """Lower bound on D for static schemes, Proposition 2: ``D = Omega(d + rho/(1-rho))``.

    Static schemes (§3.2) include those of §4.1, §4.3 and §5. By default returns
    ``max{d, rho / (4 (1 - rho))}`` as in the proof; with ``sharp=True`` returns
    ``max{d, (1 - 2^-d)(1 + rho/(2(1 - rho)))}``, the bound before weakening.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).
        sharp: Use the intermediate (tighter) bound of the proof.

    Returns:
        The bound in slots; ``math.inf`` for ``rho >= 1``.
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= 1.0:
        return _INF
    if sharp:
        return max(float(d), (1.0 - 2.0**-d) * (1.0 + rho / (2.0 * (1.0 - rho))))
    return max(float(d), rho / (4.0 * (1.0 - rho)))
