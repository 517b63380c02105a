"""Per-link waiting-time estimates of §3.2: G/D/1 queues and the conservation law.

Yeh, Varvarigos & Eshoul, §3.2 (unit-length packets, one out-port queue per link):

    W_H = V_H / (2 rho_H (1 - rho_H)) - 1/2        (high-priority queue, a G/D/1 queue)
    W   = V   / (2 rho   (1 - rho))   - 1/2        (all packets, by the conservation law)
    W   = (N - N/n)/(N - 1) W_L + (N/n - 1)/(N - 1) W_H

where ``V_H`` and ``V`` are the variances of the number of (high-priority / all)
packets that arrive at the queue in one slot. This is the waiting time, service slot
excluded, of a slotted queue with i.i.d. per-slot batches of mean rho and variance V.
The paper gives only ``V_H = O(rho_H)`` and ``V = O(rho)``, no value. We take
``V = rho`` for every aggregate of classes -- the variance of Poisson arrivals, which
makes the expressions the M/D/1 waiting time ``rho / (2 (1 - rho))``; it is an upper
estimate when a queue is fed by independent in-links carrying at most one packet per
slot each (a Bernoulli stream has variance p(1-p) < p). An estimate, not an exact law.

The third relation is the conservation law, "W is the load-weighted mean of W_H and
W_L"; it holds per link with the link's own class loads, ``rho W = rho_H W_H + rho_L
W_L``, and on an n-ary d-cube every link has the paper's weights. With k classes the
same argument (in the slotted model the top j classes never wait behind a lower class)
gives ``R_j W_{<=j} = sum_{c<=j} rho_c W_c`` for every j, with ``R_j`` and ``W_{<=j}``
the G/D/1 load and wait of the top j classes together; we solve it class by class. A
class with no load gets the limit of that difference quotient (the wait a vanishing
stream of that class would see).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["class_waits", "gd1_wait", "load_weighted_mean", "split_classes"]


def gd1_wait(rho: float, variance: float | None = None) -> float:
    """Mean wait (service excluded) of the G/D/1 queue of §3.2: ``V/(2 rho (1-rho)) - 1/2``.

    Args:
        rho: arrival rate = load of the queue (packets of unit length per slot).
        variance: variance V of the arrivals per slot; None takes ``V = rho`` (Poisson).

    Returns:
        The mean waiting time in slots; ``math.inf`` when ``rho >= 1``; 0 when ``rho == 0``.

    Raises:
        ValueError: on a negative rho or variance, or a positive variance with ``rho == 0``.

    Example:
        >>> gd1_wait(0.5), gd1_wait(0.5, 0.25)
        (0.5, 0.0)
    """
    if not rho >= 0:
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    if variance is not None and not variance >= 0:
        raise ValueError(f"variance must be >= 0, got {variance!r}")
    if rho >= 1:
        return math.inf
    if rho == 0:
        if variance:
            raise ValueError(f"a queue with rho = 0 has no arrivals, so its variance is 0, got {variance!r}")
        return 0.0
    v = rho if variance is None else variance
    return v / (2 * rho * (1 - rho)) - 0.5


def _work(r: float) -> float:
    """``R * W(R)`` for the Poisson G/D/1 (``R^2 / (2 (1 - R))``)."""
    return math.inf if r >= 1 else r * r / (2 * (1 - r))


def _work_slope(r: float) -> float:
    """Derivative of :func:`_work`: ``R (2 - R) / (2 (1 - R)^2)``."""
    return math.inf if r >= 1 else r * (2 - r) / (2 * (1 - r) ** 2)


def class_waits(loads: Sequence[float]) -> list[float]:
    """Mean wait of each priority class at one link (class 0 served first), §3.2 + conservation.

    Args:
        loads: the link's load of each class, highest priority first.

    Returns:
        The waits, aligned with ``loads`` (``math.inf`` for classes that are unstable).

    Example:
        >>> [round(w, 4) for w in class_waits([0.1, 0.8])]
        [0.0556, 5.0556]
    """
    out = []
    below = 0.0
    for rho_c in loads:
        top = below + rho_c
        if top >= 1:
            out.append(math.inf)
        elif rho_c > 0:
            out.append((_work(top) - _work(below)) / rho_c)
        else:
            out.append(_work_slope(below))
        below = top
    return out


def split_classes(per_dim: tuple[Fraction, Fraction, Fraction], classes: int) -> list[float]:
    """Class loads of one link from its ``(bcast_high, unicast, bcast_low)`` loads, top class first.

    One class: everything; two (§3.2, §4): broadcast off the ending dimension and unicast,
    then broadcast on it; three (end of §4): the three apart.
    """
    high, uni, low = (float(v) for v in per_dim)
    if classes == 1:
        return [high + uni + low]
    if classes == 2:
        return [high + uni, low]
    return [high, uni, low]


def load_weighted_mean(values: list[float], weights: list[float]) -> float:
    """Load-weighted mean over dimensions; the plain mean where no dimension has load."""
    total = sum(weights)
    if total == 0:
        return sum(values) / len(values)
    if any(math.isinf(v) for v, w in zip(values, weights) if w > 0):
        return math.inf
    return sum(v * w for v, w in zip(values, weights) if w > 0) / total
