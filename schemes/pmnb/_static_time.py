"""Exact durations for the static schemes: t_p, mini-packets and the fabric's time quantum.

The paper counts time in units in which a packet crosses a link; a prefix step takes
t_p (0 < t_p <= 1, §4.1 Phase 1) and a mini-packet 1/d (§4.1, Theorem 6) or, halved for
the two directions of a ring, 1/(2d) (Lemma 1 via the Remark after Theorem 2). The
fabric runs on ticks of ``1/q`` unit; a message of size s holds its link for ``s q``
ticks, so every duration is exact when q is a common multiple of the denominators of
t_p and of the piece sizes. :func:`quantum_for` returns the least such q and refuses
t_p values whose exact denominator would need more than :data:`MAX_QUANTUM` ticks per
unit (e.g. 0.123457): rounding t_p instead would change the bounds being checked.
"""

from __future__ import annotations

import math
from fractions import Fraction

from slotnet.errors import SchemeError

__all__ = ["MAX_QUANTUM", "digest", "parse_tp", "quantum_for", "tp_fraction"]

#: Largest time quantum (ticks per paper unit) a static scheme asks for.
MAX_QUANTUM = 1000

_MERSENNE = (1 << 61) - 1


def tp_fraction(tp: float | str | Fraction) -> Fraction:
    """t_p as an exact fraction with a denominator of at most :data:`MAX_QUANTUM`.

    Accepts ``0.125``, ``"1/8"`` or a Fraction; a float is read as the shortest
    fraction within 1e-12 of it (so ``1/3`` as a float is 1/3).

    Raises:
        SchemeError: t_p outside (0, 1], or one that needs a finer quantum.

    Example:
        >>> tp_fraction(0.125), tp_fraction("1/3"), tp_fraction(1 / 3)
        (Fraction(1, 8), Fraction(1, 3), Fraction(1, 3))
    """
    try:
        exact = Fraction(tp) if isinstance(tp, (str, Fraction)) else Fraction(str(float(tp)))
    except (TypeError, ValueError, ZeroDivisionError):
        raise SchemeError(f"--param tp={tp!r}: expected a number in (0, 1] such as 0.125 or 1/8") from None
    if not 0 < exact <= 1:
        raise SchemeError(f"--param tp={tp!r}: t_p must be in (0, 1] (§4.1: a prefix step is at most a packet time)")
    near = exact.limit_denominator(MAX_QUANTUM)
    if abs(near - exact) > Fraction(1, 10**12):
        raise SchemeError(
            f"--param tp={tp!r}: t_p = {float(exact):g} is a multiple of 1/{exact.denominator} only, which needs "
            f"{exact.denominator} ticks per time unit (at most {MAX_QUANTUM}); use t_p = k/n with n <= {MAX_QUANTUM}"
        )
    return near


def parse_tp(text: str | float) -> float:
    """The ``tp`` parameter's converter: ``"0.125"`` or ``"1/8"`` -> 0.125 (checked)."""
    return float(tp_fraction(text))


def quantum_for(tp: float | None, *pieces: int) -> int:
    """Least ticks per unit that make t_p and the pieces ``1/n`` (``n`` in ``pieces``) whole.

    Raises:
        SchemeError: if that quantum exceeds :data:`MAX_QUANTUM`.

    Example:
        >>> quantum_for(0.125, 6), quantum_for(None, 4), quantum_for(0.1)
        (24, 4, 10)
    """
    q = 1
    for n in pieces:
        q = math.lcm(q, n)
    if tp is not None:
        q = math.lcm(q, tp_fraction(tp).denominator)
    if q > MAX_QUANTUM:
        raise SchemeError(f"t_p={tp!r} with pieces 1/{', 1/'.join(map(str, pieces))} needs {q} ticks per time unit "
                          f"(at most {MAX_QUANTUM}); choose t_p with a smaller denominator")
    return q


def digest(keys: list[int] | set[int] | frozenset[int]) -> int:
    """An order-free fingerprint of a set of non-negative integers (for exactly-once checks).

    Example:
        >>> digest([3, 1]) == digest({1, 3}) != digest([1, 2])
        True
    """
    total = 0
    for k in keys:
        x = (k + 1) * 0x9E3779B97F4A7C15 % _MERSENNE
        total = (total + x * x % _MERSENNE + x) % _MERSENNE
    return total
