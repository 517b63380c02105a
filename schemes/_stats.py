"""Small streaming statistics shared by scheme reporters."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["BatchMeans", "T_975", "ratio_ci95"]

#: Two-sided 95% Student t quantiles by degrees of freedom (1..30).
T_975 = [0.0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


class BatchMeans:
    """Sums of a quantity in ``n_batches`` consecutive slot batches of the measured window.

    The confidence interval of the overall mean is the batch-means interval: the
    Student-t 95% half-width of the batch ratios (sum/count per batch).
    """

    def __init__(self, warmup: int, slots: int, n_batches: int = 10) -> None:
        measured = max(slots - warmup, 1)
        self.warmup = warmup
        self.n = max(1, min(n_batches, measured))
        self.width = measured / self.n
        self.sums = [0.0] * self.n
        self.counts = [0.0] * self.n

    def batch(self, slot: int) -> int:
        return min(int((slot - self.warmup) / self.width), self.n - 1)

    def add(self, slot: int, total: float, count: float = 1.0) -> None:
        b = self.batch(slot)
        self.sums[b] += total
        self.counts[b] += count

    def mean(self) -> float | None:
        c = sum(self.counts)
        return sum(self.sums) / c if c else None

    def half_width(self) -> float | None:
        ratios = [s / c for s, c in zip(self.sums, self.counts) if c]
        k = len(ratios)
        if k < 2:
            return None
        m = sum(ratios) / k
        var = sum((r - m) ** 2 for r in ratios) / (k - 1)
        t = T_975[min(k - 1, 30)]
        return t * math.sqrt(var / k)


def ratio_ci95(nums: Sequence[float], dens: Sequence[float], n_batches: int = 10) -> float | None:
    """Batch-means 95% half-width of ``sum(nums)/sum(dens)`` over consecutive slots.

    Args:
        nums, dens: per-slot numerator and denominator of the ratio (same length).
        n_batches: number of equal batches the slots are cut into.
    """
    n = len(nums)
    k = min(n_batches, n)
    if k < 2:
        return None
    w = n / k
    ratios = []
    for b in range(k):
        lo, hi = int(b * w), int((b + 1) * w)
        den = sum(dens[lo:hi])
        if den:
            ratios.append(sum(nums[lo:hi]) / den)
    if len(ratios) < 2:
        return None
    m = sum(ratios) / len(ratios)
    var = sum((r - m) ** 2 for r in ratios) / (len(ratios) - 1)
    return T_975[min(len(ratios) - 1, 30)] * math.sqrt(var / len(ratios))
