"""Streaming statistics every reporter needs: batch means and their 95% intervals.

Every ``_ci95`` figure slotnet reports is the half-width of a Student-t 95% confidence
interval computed by the method of batch means: the measured window is cut into (at
most) ten consecutive batches of slots, the quantity is computed per batch, and the
spread of the batch values gives the interval of the overall mean.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from .._stats import T_975, t_half_width

__all__ = ["BatchMeans", "T_975", "WindowBatches", "ratio_ci95", "t_half_width"]

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
        return t_half_width([s / c for s, c in zip(self.sums, self.counts) if c])


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
        # the last batch ends at n: int(k * (n / k)) can round below n (61 slots in 7 batches)
        lo, hi = int(b * w), (n if b == k - 1 else int((b + 1) * w))
        den = sum(dens[lo:hi])
        if den:
            ratios.append(sum(nums[lo:hi]) / den)
    return t_half_width(ratios)


class WindowBatches:
    """Streaming batch sums of a per-slot ratio ``sum(num)/sum(den)`` over the measured window.

    The planned window (``slots - warmup`` slots) is cut as :func:`ratio_ci95` cuts a
    per-slot list (at most ``n_batches`` consecutive batches ``[int(b w), int((b+1) w))``),
    so a run that goes its full length gets exactly ``ratio_ci95``'s interval without
    keeping one value per slot. A run stopped early fills only its first batches; the
    interval is then taken over those (fewer batches, a wider t quantile).
    """

    __slots__ = ("bounds", "dens", "nums", "warmup")

    def __init__(self, warmup: int, slots: int, n_batches: int = 10) -> None:
        n = max(slots - warmup, 1)
        k = min(n_batches, n)
        w = n / k
        self.warmup = warmup
        self.bounds = [int(b * w) for b in range(k)]
        self.nums = [0.0] * k
        self.dens = [0.0] * k

    def add(self, slot: int, num: float, den: float) -> None:
        """Add a measured slot's numerator and denominator (integer sums stay exact)."""
        b = bisect_right(self.bounds, slot - self.warmup) - 1
        self.nums[b] += num
        self.dens[b] += den

    def half_width(self) -> float | None:
        """Student-t 95% half-width of the batch ratios (None below two filled batches)."""
        return t_half_width([num / den for num, den in zip(self.nums, self.dens) if den])
