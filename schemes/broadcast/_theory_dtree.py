"""Approximate delay model of §4.3.2 for the non-idling d-tree scheme, eqs. (13)-(26).

Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple broadcasts in
hypercubes", §4.3.2 and Appendix A. Every packet picks one of the d completely
unbalanced spanning trees rooted at its origin (a *j-packet* crosses the dimensions in
the order j, j+1, ..., d, 1, ..., j-1; §4.2.2) uniformly at random and crosses each arc
as soon as possible. The queue of an arc ``(x, x + e_i)`` is modelled as a discrete-time
G/D/1 queue with unit service (§2.1.1) under Assumptions A and B:

* its arrivals per slot are ``A = B + sum_m P^(m,i)`` (14), with ``B`` Poisson(lam) and
  ``P^(m,i)`` independent Bernoulli(rho_m g_{m,i}) (15a, 15b);
* ``rho_i = lam + sum_m rho_m g_{m,i}`` (18), whose solution is ``rho_i = rho`` (21);
* the mean per-arc delay (transmission included) follows from (4) as (22)-(24);
* the broadcast delay is approximated by the delay along a longest path, d arcs, one
  per dimension, plus the mean synchronisation time 1/2 (25).

Everything here is an *approximation* except (19), (20) and (21), which the paper states
as exact. Table 1 (d = 8) compares (25) with simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..kit import portable
from ._theory_load import check_d, check_rho, lam_from_rho

__all__ = [
    "DTreeApproximation",
    "dtree_approximation",
    "dtree_arc_delay",
    "dtree_arc_loads",
    "dtree_delay",
    "dtree_delay_light_traffic",
    "dtree_delay_simplified",
    "g_matrix",
    "g_square_sum",
    "g_sum",
]


def g_matrix(d: int) -> npt.NDArray[np.float64]:
    """Routing probabilities ``g_{m,i}`` of eq. (19) (exact; proved in Appendix A).

    ``g_{m,i}`` is the probability that a packet has to cross arc ``(x, x + e_i)``
    given that it has crossed arc ``(x + e_m, x)``:
    ``g_{m,i} = (2^{(m - i) mod d} - 1) / (2^d - 1)``.

    Note:
        Appendix A reprints the formula as (A.1) with the ``- 1`` inside the exponent,
        ``2^{[(m-i) mod d] - 1}``; the three cases of its own proof (and ``g_{i,i} = 0``)
        give ``2^{(m-i) mod d} - 1`` as in (19), which is what is implemented.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        A ``(d, d)`` array whose entry ``[m - 1, i - 1]`` is ``g_{m,i}``.

    Example:
        >>> g_matrix(3) * 7
        array([[0., 3., 1.],
               [1., 0., 3.],
               [3., 1., 0.]])
    """
    d = check_d(d)
    m = np.arange(1, d + 1).reshape(-1, 1)
    i = np.arange(1, d + 1).reshape(1, -1)
    powers = np.left_shift(1, np.mod(m - i, d)).astype(np.float64)  # 2^((m-i) mod d), exact
    return np.asarray((powers - 1.0) / float((1 << d) - 1), dtype=np.float64)


def g_sum(d: int) -> float:
    """Column sum ``sum_m g_{m,i} = 1 - d / (2^d - 1)`` of eq. (20), for every i.

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        The common value of the column sums of :func:`g_matrix`.
    """
    d = check_d(d)
    return 1.0 - d / ((1 << d) - 1)


def g_square_sum(d: int) -> float:
    """``sum_m g_{m,i}^2 = [d + (4^d - 1)/3 - 2(2^d - 1)] / (2^d - 1)^2`` (§4.3.2, before (24)).

    This is the coefficient of ``rho`` inside the bracket of (24) and (25); it tends to
    1/3 as d grows, which gives the simplified formula after (25).

    Args:
        d: Hypercube dimension (>= 1).

    Returns:
        The common value of ``sum_m g_{m,i}^2`` over m, for every i.
    """
    d = check_d(d)
    n = (1 << d) - 1
    # Exact integer arithmetic (4^d - 1 is divisible by 3), one rounding at the end.
    return (d + ((1 << (2 * d)) - 1) // 3 - 2 * n) / n**2


def dtree_arc_loads(d: int, rho: float) -> npt.NDArray[np.float64]:
    """Solve the linear system (18) for the arc loads ``rho_1, ..., rho_d``.

    ``rho_i = lam + sum_m rho_m g_{m,i}``; by (20) its unique solution is
    ``rho_i = rho`` for every i (21). Provided as an independent numerical check.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        Array of the d arc loads (each equal to ``rho`` up to rounding).
    """
    d = check_d(d)
    rho = check_rho(rho)
    lam = lam_from_rho(d, rho)
    g = g_matrix(d)
    solution = portable.solve(np.eye(d) - g.T, np.full(d, lam, dtype=np.float64))
    return np.asarray(solution, dtype=np.float64)


def dtree_arc_delay(d: int, rho: float) -> float:
    """Mean delay ``D^(i)`` at one arc queue, transmission included, eq. (24).

    ``D^(i) = 1/2 + (1 - rho S2) / (2 (1 - rho))`` with ``S2`` of
    :func:`g_square_sum`; the same for every dimension i (approximation).

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        ``D^(i)`` in slots; ``math.inf`` for ``rho >= 1`` (no steady state).
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= 1.0:
        return float("inf")
    return 0.5 + (1.0 - rho * g_square_sum(d)) / (2.0 * (1.0 - rho))


def dtree_delay(d: int, rho: float) -> float:
    """Approximate mean broadcast delay D of the non-idling d-tree scheme, eq. (25).

    ``D ~= d/2 + d/(2(1 - rho)) (1 - rho S2) + 1/2`` = ``d D^(i) + 1/2``: d arcs of the
    longest path, one per dimension, plus the mean synchronisation time 1/2.
    This is the "Approximation" column of Table 1 (d = 8).

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        The approximate D in slots; ``math.inf`` for ``rho >= 1``.

    Example:
        >>> round(dtree_delay(8, 0.025), 4)
        8.5689
    """
    d = check_d(d)
    return d * dtree_arc_delay(d, rho) + 0.5


def dtree_delay_simplified(d: int, rho: float) -> float:
    """Large-d simplification of (25) (§4.3.2, "say d >= 10"): ``d + 1/2 + d rho / (3(1 - rho))``.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        The simplified approximation in slots; ``math.inf`` for ``rho >= 1``.
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= 1.0:
        return float("inf")
    return d + 0.5 + d * rho / (3.0 * (1.0 - rho))


def dtree_delay_light_traffic(d: int, rho: float) -> float:
    """First-order (small rho) form of the approximation, eq. (26): ``d + 1/2 + d rho / 3``.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0), meant to be small.

    Returns:
        The light-traffic approximation in slots.
    """
    d = check_d(d)
    rho = check_rho(rho)
    return d + 0.5 + d * rho / 3.0


@dataclass(frozen=True)
class DTreeApproximation:
    """Everything the approximate model of §4.3.2 yields for one (d, rho).

    Attributes:
        d: Hypercube dimension.
        rho: Load factor, eq. (8).
        lam: Per-node Poisson rate, ``rho d / (2^d - 1)``.
        stable: ``rho < 1`` (§4.3.2: the scheme, with a label priority as in §4.3.1,
            is stable for all rho < 1).
        arc_loads: Solution ``rho_1..rho_d`` of (18), computed numerically; all equal
            ``rho`` by (21) (the utilisation of every arc; exact per §4.3.2).
        arc_arrival_mean: ``E[A^(i)]`` of (15a), per dimension (equals ``rho``).
        arc_arrival_var: ``var[A^(i)]`` of (15b), per dimension.
        arc_delays: ``D^(i)`` from (22) with (15a)/(15b), per dimension, in slots.
        arc_queue_mean: Mean number of packets in one arc's queue, transmission
            included, ``N = E[A] D^(i)`` (§2.1.1, eq. (4) read as Little's law).
        mean_arc_delay: ``D^(i)`` in closed form, eq. (24).
        mean_broadcast_delay: Approximate D, eq. (25).
    """

    d: int
    rho: float
    lam: float
    stable: bool
    arc_loads: tuple[float, ...]
    arc_arrival_mean: tuple[float, ...]
    arc_arrival_var: tuple[float, ...]
    arc_delays: tuple[float, ...]
    arc_queue_mean: float
    mean_arc_delay: float
    mean_broadcast_delay: float


def dtree_approximation(d: int, rho: float) -> DTreeApproximation:
    """Evaluate the approximate model (13)-(25) of §4.3.2 for the non-idling d-tree scheme.

    The per-dimension quantities are computed from the model itself: ``g_{m,i}`` by
    (19), the arc loads by solving (18), ``E[A^(i)]`` and ``var[A^(i)]`` by (15a)/(15b)
    and ``D^(i)`` by (22) (in the form of the second line of (23), which stays finite
    at rho = 0). The closed forms (24) and (25) are reported beside them; the two
    routes agree to rounding error. For ``rho >= 1`` the model has no steady state and
    all delays and the queue are ``math.inf``.

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        A :class:`DTreeApproximation`.

    Example:
        >>> round(dtree_approximation(8, 0.1).mean_broadcast_delay, 4)
        8.7986
    """
    d = check_d(d)
    rho = check_rho(rho)
    lam = lam_from_rho(d, rho)
    g = g_matrix(d)
    loads = dtree_arc_loads(d, rho)
    flow = loads.reshape(-1, 1) * g  # rho_m g_{m,i}: the Bernoulli means of Assumption A
    mean = lam + flow.sum(axis=0)  # (15a)
    var = lam + (flow * (1.0 - flow)).sum(axis=0)  # (15b)
    stable = rho < 1.0
    if stable:
        # (22) with E[A] = rho_i, written as in (23): var/E[A] = lam/rho + sum g(1 - rho g).
        per_unit = d / ((1 << d) - 1) + (g * (1.0 - loads.reshape(-1, 1) * g)).sum(axis=0)
        delays = 0.5 + per_unit / (2.0 * (1.0 - loads))
        queue = float(rho * dtree_arc_delay(d, rho))
    else:
        delays = np.full(d, np.inf)
        queue = float("inf")
    return DTreeApproximation(
        d=d,
        rho=rho,
        lam=lam,
        stable=stable,
        arc_loads=tuple(float(x) for x in loads),
        arc_arrival_mean=tuple(float(x) for x in mean),
        arc_arrival_var=tuple(float(x) for x in var),
        arc_delays=tuple(float(x) for x in delays),
        arc_queue_mean=queue,
        mean_arc_delay=dtree_arc_delay(d, rho),
        mean_broadcast_delay=dtree_delay(d, rho),
    )
