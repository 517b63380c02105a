"""Input checks of the STAR analysis (:mod:`.theory`, :mod:`._theory_rates`): precise ``ValueError``s."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import SupportsFloat

from ..kit._validate import finite_nonnegative

__all__ = ["check_classes", "check_ending", "check_rate", "check_sides"]


def check_sides(sides: Sequence[int]) -> tuple[int, ...]:
    """Validate torus sides ``(n_1, ..., n_d)`` and return them as a tuple of ints.

    Raises:
        ValueError: If ``sides`` is empty, not a sequence of integers, or a side is < 2.
    """
    if isinstance(sides, (str, bytes)) or not isinstance(sides, Sequence):
        raise ValueError(f"torus sides must be a sequence of integers, got {sides!r}")
    if len(sides) == 0:
        raise ValueError("torus sides must name at least one dimension, got ()")
    out = []
    for k, s in enumerate(sides):
        if isinstance(s, bool):
            raise ValueError(f"torus side {k} must be an integer, got {s!r}")
        try:
            n = operator.index(s)
        except TypeError:
            raise ValueError(f"torus side {k} must be an integer, got {s!r}") from None
        if n < 2:
            raise ValueError(f"torus side {k} must be >= 2, got {n}")
        out.append(n)
    return tuple(out)


def check_rate(value: SupportsFloat, name: str) -> float:
    """Validate a rate or load factor: a finite real number >= 0.

    Raises:
        ValueError: If ``value`` is not a real number, negative, infinite or NaN.
    """
    return finite_nonnegative(value, name, not_a_number=ValueError)


def check_ending(ending: int, d: int, *, base: int = 1) -> int:
    """Validate an ending dimension numbered ``base .. base + d - 1``; return it 0-based.

    Raises:
        ValueError: If ``ending`` is not an integer in range.
    """
    if isinstance(ending, bool):
        raise ValueError(f"ending dimension must be an integer, got {ending!r}")
    try:
        e = operator.index(ending)
    except TypeError:
        raise ValueError(f"ending dimension must be an integer, got {ending!r}") from None
    if not base <= e < base + d:
        raise ValueError(f"ending dimension must be in {base}..{base + d - 1} for d={d}, got {e}")
    return e - base


def check_classes(classes: int) -> int:
    """Validate the number of priority classes: 1 (FCFS), 2 (§3.2) or 3 (end of §4).

    Raises:
        ValueError: If ``classes`` is not 1, 2 or 3.
    """
    if isinstance(classes, bool) or classes not in (1, 2, 3):
        raise ValueError(f"classes must be 1 (fcfs), 2 (§3.2) or 3 (end of §4), got {classes!r}")
    return int(classes)
