"""Student-t intervals, shared by the kit's reporters and the orchestrator's replications.

A core module of :mod:`slotnet.schemes` (the orchestrator may import the core, never the kit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["T_975", "t_half_width"]

#: Two-sided 95% Student t quantiles by degrees of freedom (1..30).
T_975 = [0.0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t_half_width(values: Sequence[float]) -> float | None:
    """Student-t 95% half-width of the mean of ``values`` (None below two values).

    Example:
        >>> round(t_half_width([1.0, 2.0, 3.0]), 3)
        2.484
    """
    k = len(values)
    if k < 2:
        return None
    m = sum(values) / k
    var = sum((r - m) ** 2 for r in values) / (k - 1)
    return T_975[min(k - 1, 30)] * math.sqrt(var / k)
