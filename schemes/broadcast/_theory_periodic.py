"""Periodic schemes (§4.2) and the discrete-time M/D/1 queues they reduce to (§2.1.2).

Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple broadcasts in
hypercubes". Arrivals are continuous-time Poisson; service starts only at slot
boundaries (or every Delta slots), so the delays include the mean synchronisation time.
"""

from __future__ import annotations

from ._theory_limits import mnb_period, stability_limit_mnb
from ._theory_load import check_d, check_rho, lam_from_rho

__all__ = ["md1_delay", "md1_sync_delay", "periodic_mnb_delay", "periodic_random_delay"]

_INF = float("inf")


def md1_delay(lam: float) -> float:
    """Mean delay of the discrete-time M/D/1 queue with unit service, eq. (6).

    Arrivals form a continuous-time Poisson process of rate ``lam``; service starts only
    at slot boundaries and lasts one slot. ``D = 3/2 + lam / (2 (1 - lam))``, which
    includes the mean synchronisation time 1/2 and the service time.

    Args:
        lam: Arrival rate per slot (>= 0).

    Returns:
        D in slots; ``math.inf`` if ``lam >= 1`` (unstable).
    """
    lam = check_rho(lam, "lam")
    if lam >= 1.0:
        return _INF
    return 1.5 + lam / (2.0 * (1.0 - lam))


def md1_sync_delay(lam: float, delta: int) -> float:
    """Mean delay of the discrete-time M/D/1 queue *with synchronisation*, eq. (7).

    Service may start only every ``delta`` slots and lasts ``delta`` slots;
    ``D = delta (3/2 + lam delta / (2 (1 - lam delta)))``, stable iff ``lam delta < 1``.

    Args:
        lam: Arrival rate per slot (>= 0), continuous-time Poisson.
        delta: Period and service time in slots (>= 1).

    Returns:
        D in slots; ``math.inf`` if ``lam * delta >= 1``.

    Raises:
        ValueError: If ``delta < 1`` or ``lam`` is invalid.
    """
    lam = check_rho(lam, "lam")
    if isinstance(delta, bool) or not isinstance(delta, int) or delta < 1:
        raise ValueError(f"delta must be an integer >= 1, got {delta!r}")
    load = lam * delta
    if load >= 1.0:
        return _INF
    return delta * (1.5 + load / (2.0 * (1.0 - load)))


def periodic_mnb_delay(d: int, rho: float) -> float:
    """D of the periodic multinode-broadcast scheme (§4.2.1), eq. (7).

    Eq. (7) with ``delta = ceil((2^d - 1)/d)`` and ``lam = rho d / (2^d - 1)``,
    ``D = delta (3/2 + rho / (2 (r12 - rho)))`` with ``r12`` the limit (12).

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        D in slots (exact); ``math.inf`` at or above the limit (12).
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= stability_limit_mnb(d):  # decided on rho itself, free of rounding in lam
        return _INF
    return md1_sync_delay(lam_from_rho(d, rho), mnb_period(d))


def periodic_random_delay(d: int, rho: float) -> float:
    """D of the randomised d-simultaneous-broadcast periodic scheme (§4.2.2).

    Each packet picks one of its origin's d completely unbalanced trees at random;
    the j-packets of a node form an M/D/1 queue with synchronisation of rate lam/d and
    period ``2^d - 1``, so eq. (7) gives ``D = (2^d - 1)(3/2 + rho / (2 (1 - rho)))``.
    (The non-randomised variant of §4.2.2 is an M/D/d queue; the paper gives only its
    light-traffic value ``(3/2)(2^d - 1)``.)

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        D in slots (exact); ``math.inf`` for ``rho >= 1``.
    """
    d = check_d(d)
    rho = check_rho(rho)
    if rho >= 1.0:
        return _INF
    return md1_sync_delay(lam_from_rho(d, rho) / d, (1 << d) - 1)
