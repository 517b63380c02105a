"""Argument checks shared by the schemes' theory modules and input readers.

Each raises with a message that names the argument and the value given, so a bad
``--param`` or a bad call to a theory function fails with one precise line.
"""

from __future__ import annotations

import math
from typing import SupportsFloat

__all__ = ["finite_nonnegative"]


def finite_nonnegative(value: SupportsFloat, name: str, *, not_a_number: type[Exception] = TypeError) -> float:
    """``value`` as a float, which must be a finite real number >= 0 (a rate, a load factor).

    Raises:
        not_a_number: (``TypeError`` unless the caller's contract says otherwise) if
            ``value`` is a bool or does not convert to a float.
        ValueError: if it is negative, infinite or NaN.
    """
    if isinstance(value, bool):
        raise not_a_number(f"{name} must be a real number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise not_a_number(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return v
