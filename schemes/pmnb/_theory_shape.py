"""Input checks and shape quantities shared by the theory modules.

A shape is ``(sides, wrap)``: ``sides = (p_0, ..., p_{d-1})`` (each >= 2) and ``wrap``
True for a torus, False for an array. The paper's theorems are for ``N = p^d`` nodes
(equal sides); the functions that need that say so and raise on unequal sides
(:func:`._inputs.equal_side`, the one check the schemes' ``prepare`` uses too). Degrees
follow the project's fabric: a torus node has 2 ports per dimension (two links to the
same neighbour when a side is 2), an array node one per existing neighbour.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from ._prefix import check_sides

__all__ = ["check_m", "check_shape", "check_tp", "gamma", "n_nodes"]


def check_shape(sides: Sequence[int], wrap: bool) -> tuple[int, ...]:
    """Validate a shape; return the sides as a tuple.

    Raises:
        ValueError: on no sides, a side that is not an integer >= 2, or a non-bool wrap.
    """
    if not isinstance(wrap, bool):
        raise ValueError(f"wrap must be True (torus) or False (array), got {wrap!r}")
    return check_sides(sides)


def gamma(wrap: bool) -> int:
    """gamma of Lemma 1 and (9)-(12): 2 on a torus, 1 on an array."""
    if not isinstance(wrap, bool):
        raise ValueError(f"wrap must be True (torus) or False (array), got {wrap!r}")
    return 2 if wrap else 1


def n_nodes(sides: Sequence[int]) -> int:
    """N, the number of nodes."""
    return math.prod(check_sides(sides))


def check_m(m: int, n: int, name: str = "M") -> int:
    """Validate a number of active nodes (or packets) 0 <= m <= n.

    Raises:
        ValueError: if m is not an integer or is out of range.
    """
    if isinstance(m, bool):
        raise ValueError(f"{name} must be an integer, got {m!r}")
    try:
        value = operator.index(m)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {m!r}") from None
    if not 0 <= value <= n:
        raise ValueError(f"{name} must be in 0..{n}, got {value}")
    return value


def check_tp(tp: float) -> float:
    """Validate t_p, the duration of one prefix step: 0 < t_p <= 1 (§4.1 Phase 1).

    Raises:
        ValueError: if t_p is not a real number in (0, 1].
    """
    if isinstance(tp, bool):
        raise ValueError(f"t_p must be a real number in (0, 1], got {tp!r}")
    try:
        value = float(tp)
    except (TypeError, ValueError):
        raise ValueError(f"t_p must be a real number in (0, 1], got {tp!r}") from None
    if not 0.0 < value <= 1.0:
        raise ValueError(f"t_p must be in (0, 1], got {tp!r}")
    return value
