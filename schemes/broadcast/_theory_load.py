"""Load factor of eq. (8) and the input checks shared by the broadcast theory modules.

Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple broadcasts in
hypercubes", §1 and §3.1: every node of the d-cube generates broadcast packets as a
Poisson process of rate ``lam`` per slot, and the load factor is

    rho = lam * (2**d - 1) / d                                            (8)

(the mean number of transmissions per arc and slot when no transmission is redundant).
"""

from __future__ import annotations

import operator

from ..kit._validate import finite_nonnegative

__all__ = ["check_d", "check_rho", "lam_from_rho", "rho_from_lam"]


def check_d(d: int) -> int:
    """Validate a hypercube dimension.

    Args:
        d: Dimension of the d-cube (number of address bits).

    Returns:
        ``d`` as a plain ``int``.

    Raises:
        TypeError: If ``d`` is not an integer (``bool`` is rejected too).
        ValueError: If ``d < 1``.
    """
    if isinstance(d, bool):
        raise TypeError(f"hypercube dimension d must be an integer, got {d!r}")
    try:
        value = operator.index(d)
    except TypeError:
        raise TypeError(f"hypercube dimension d must be an integer, got {d!r}") from None
    if value < 1:
        raise ValueError(f"hypercube dimension d must be >= 1, got {value}")
    return value


def check_rho(rho: float, name: str = "rho") -> float:
    """Validate a load factor (or an arrival rate).

    Args:
        rho: A finite, non-negative real number.
        name: Name used in the error message.

    Returns:
        ``rho`` as a ``float``.

    Raises:
        TypeError: If ``rho`` is not a real number.
        ValueError: If ``rho`` is negative, infinite or NaN.
    """
    return finite_nonnegative(rho, name)


def rho_from_lam(d: int, lam: float) -> float:
    """Load factor of a per-node Poisson rate, eq. (8): ``rho = lam (2^d - 1) / d``.

    Args:
        d: Hypercube dimension (>= 1).
        lam: Per-node packet generation rate, packets per slot (>= 0).

    Returns:
        The load factor rho.

    Raises:
        TypeError: On a non-integer ``d`` or non-real ``lam``.
        ValueError: On ``d < 1`` or a negative/non-finite ``lam``.

    Example:
        >>> rho_from_lam(2, 0.5)
        0.75
    """
    d = check_d(d)
    lam = check_rho(lam, "lam")
    return lam * ((1 << d) - 1) / d


def lam_from_rho(d: int, rho: float) -> float:
    """Per-node Poisson rate for a load factor, the inverse of eq. (8).

    Args:
        d: Hypercube dimension (>= 1).
        rho: Load factor (>= 0).

    Returns:
        ``lam = rho d / (2^d - 1)``, packets per node and slot.

    Raises:
        TypeError: On a non-integer ``d`` or non-real ``rho``.
        ValueError: On ``d < 1`` or a negative/non-finite ``rho``.

    Example:
        >>> lam_from_rho(8, 0.255)
        0.008
    """
    d = check_d(d)
    rho = check_rho(rho)
    return rho * d / ((1 << d) - 1)
