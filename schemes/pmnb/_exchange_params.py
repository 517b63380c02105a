"""Inputs shared by the partial-exchange and dynamic-broadcast schemes: t_p, the time
quantum, the shape checks and the active set.

Time. The paper counts time in units in which a packet crosses a link; a prefix step
takes t_p (0 < t_p <= 1, §4.1 Phase 1), a mini-packet 1/d and a ring half 1/(2d)
(Theorem 6, Lemma 1). The fabric runs on ticks of a quantum q (ticks per unit) and a
message of size s holds its link for s q ticks. :func:`quantum` picks the smallest q
for which every duration a scheme uses is a whole number of ticks, so that no duration
is rounded: t_p = a/b in lowest terms needs b | q, a piece 1/k needs k | q.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from .._base import SchemeError
from ._placement import PLACEMENTS, place

__all__ = ["MAX_QUANTUM", "active_ids", "equal_sides", "parse_tp", "quantum", "tp_fraction"]

#: Largest quantum accepted: idle ticks cost the driver a few microseconds each.
MAX_QUANTUM = 1024


def tp_fraction(tp: float | str | Fraction) -> Fraction:
    """t_p as an exact fraction with a small denominator (``0.125``, ``"1/8"`` or a Fraction).

    A float is read as the shortest fraction within 1e-9 of it, so ``1/3`` is 1/3.

    Example:
        >>> tp_fraction(0.25), tp_fraction(1 / 3), tp_fraction("3/8")
        (Fraction(1, 4), Fraction(1, 3), Fraction(3, 8))

    Raises:
        SchemeError: if t_p is not in (0, 1] or needs a denominator above :data:`MAX_QUANTUM`.
    """
    try:
        if isinstance(tp, bool):
            raise TypeError
        exact = Fraction(tp) if isinstance(tp, (str, Fraction)) else Fraction(float(tp))
    except (TypeError, ValueError, ZeroDivisionError):
        raise SchemeError(f"--param tp={tp!r}: expected a number in (0, 1] such as 0.125 or 1/8") from None
    if not 0 < exact <= 1:
        raise SchemeError(f"--param tp={tp!r}: t_p must be in (0, 1] (§4.1: a prefix step is at most a packet time)")
    frac = exact.limit_denominator(MAX_QUANTUM)
    if abs(frac - exact) > Fraction(1, 10**9):
        raise SchemeError(f"--param tp={tp!r}: t_p must be k/n with n <= {MAX_QUANTUM} "
                          "(its duration is honoured exactly on a tick of 1/n)")
    return frac


def parse_tp(text: str | float) -> float:
    """The ``tp`` parameter's converter: ``"0.125"`` or ``"1/8"`` -> 0.125 (checked)."""
    return float(tp_fraction(text))


def quantum(tp: float, pieces: Sequence[int] = ()) -> int:
    """Smallest q (ticks per unit) making t_p and every ``1/k`` for k in ``pieces`` whole.

    Example:
        >>> quantum(0.25, (4,)), quantum(0.1, (2,)), quantum(1 / 3, (6,))
        (4, 10, 6)

    Raises:
        SchemeError: if that q exceeds :data:`MAX_QUANTUM`.
    """
    q = tp_fraction(tp).denominator
    for k in pieces:
        q = math.lcm(q, int(k))
    if q > MAX_QUANTUM:
        raise SchemeError(f"t_p={tp!r} with pieces {tuple(pieces)} needs {q} ticks per unit (at most {MAX_QUANTUM})")
    return q


def equal_sides(topology: Any, scheme: str) -> tuple[int, ...]:
    """The sides of a p^d torus or array.

    Raises:
        SchemeError: on unequal sides (the paper's results are for N = p^d).
    """
    sides = tuple(topology.sides)
    if len(set(sides)) != 1:
        raise SchemeError(f"{scheme} is stated for p^d meshes (equal sides), got {topology.spec}")
    return sides


def active_ids(sides: Sequence[int], m: Any, placement: str, seed: Any) -> tuple[int, ...]:
    """The active node ids of a run: ``m`` nodes (None: ceil(N/4)) placed by ``placement``.

    ``random`` draws from its own stream of the ``placement_seed`` parameter, the one the
    static schemes use, so one seed places the same nodes for pmnb and partial-exchange:
    a scheme's ``prepare`` does not see the run's seed, and the theory must see the set.

    Raises:
        SchemeError: on a missing or out-of-range M or an unknown placement.
    """
    n = math.prod(sides)
    if m is None:
        m = math.ceil(n / 4)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SchemeError(f"--param placement_seed={seed!r}: expected an integer >= 0")
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= n:
        raise SchemeError(f"--param active={m!r}: must be an integer in 0..{n}")
    if placement not in PLACEMENTS:
        raise SchemeError(f"--param placement={placement!r}: one of {', '.join(PLACEMENTS)}")
    return place(placement, sides, m, random.Random(f"varvarigos-active:{seed}"))
