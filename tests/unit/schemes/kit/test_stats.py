"""The kit's statistics (``schemes/kit/_stats.py``) unit by unit: Student t quantiles and batch means.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.schemes.kit import _stats
from slotnet.schemes.kit._stats import T_975, BatchMeans, WindowBatches, ratio_ci95, t_half_width

# ------------------------------------------------------------------ Student t quantiles


def _t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom, computed here from
    its density (Simpson's rule and bisection), independently of the table."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf_half(t: float, n: int = 400) -> float:  # P(0 < T < t)
        h = t / n
        f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
        return h / 3 * (f(0) + f(t) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, n)))

    lo, hi = 0.0, 20.0
    for _ in range(32):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf_half(mid) < 0.475 else (lo, mid)
    return lo


def test_the_t_table_holds_the_975_quantiles():
    """Every entry for 1..30 degrees of freedom is the 0.975 quantile, to the table's 3 decimals."""
    assert len(T_975) == 31
    for df in range(1, 31):
        assert T_975[df] == pytest.approx(_t_quantile_975(df), abs=6e-4), df


@pytest.mark.parametrize("k", [2, 3, 7, 30, 31, 32, 45])
def test_t_half_width_is_the_student_t_interval(k):
    """k values 0, 1, ..., k-1: mean (k-1)/2, sample variance k(k+1)/12; beyond 31 values the quantile stays at 30 df."""
    values = [float(i) for i in range(k)]
    var = k * (k + 1) / 12
    assert t_half_width(values) == pytest.approx(T_975[min(k - 1, 30)] * math.sqrt(var / k))
    assert t_half_width(list(reversed(values))) == pytest.approx(t_half_width(values))


def test_t_half_width_needs_two_values():
    assert t_half_width([]) is None and t_half_width([3.0]) is None
    assert t_half_width([1.0, 3.0]) == pytest.approx(12.706)  # sd sqrt(2), n 2: 12.706 * sqrt(2/2)
    assert t_half_width([2.0, 2.0, 2.0]) == 0.0


# ------------------------------------------------------------------ batch means


def test_batch_means_cut_the_measured_window_in_ten():
    b = BatchMeans(0, 25)
    assert (b.n, b.width) == (10, 2.5)
    assert [b.batch(s) for s in (0, 2, 3, 4, 5, 24, 99)] == [0, 0, 1, 1, 2, 9, 9]
    assert BatchMeans(5, 8).n == 3 and BatchMeans(5, 8).width == 1.0
    assert BatchMeans(5, 5).n == 1 and BatchMeans(5, 5).width == 1.0  # nothing measured: one batch
    assert BatchMeans(0, 100, n_batches=4).n == 4


def test_batch_means_count_from_the_warm_up():
    """Warm-up 6 of 26 slots: 20 measured in 10 batches of 2; slot 6 opens batch 0, slot 25 is in batch 9."""
    b = BatchMeans(6, 26)
    assert (b.n, b.width) == (10, 2.0)
    assert [b.batch(s) for s in (6, 7, 8, 15, 24, 25)] == [0, 0, 1, 4, 9, 9]


def test_batch_means_mean_and_interval():
    b = BatchMeans(0, 4, n_batches=4)
    assert b.mean() is None and b.half_width() is None
    b.add(0, 6.0, 2.0)  # batch 0: 3.0
    assert b.mean() == 3.0 and b.half_width() is None
    b.add(1, 5.0)  # batch 1: 5.0 (count 1 by default)
    b.add(3, 4.0, 1.0)  # batch 3: 4.0; batch 2 empty, left out
    assert b.sums == [6.0, 5.0, 0.0, 4.0] and b.counts == [2.0, 1.0, 0.0, 1.0]
    assert b.mean() == pytest.approx(15.0 / 4.0)
    assert b.half_width() == pytest.approx(t_half_width([3.0, 5.0, 4.0]))


def test_ratio_ci95_batches_consecutive_slots():
    """25 slots in 10 batches [int(2.5 b), int(2.5 (b+1))): 0-2, 2-5, 5-7, ...; a batch with no denominator is left out."""
    nums = [float(i % 4) for i in range(25)]
    dens = [1.0 + (i % 3) for i in range(25)]
    bounds = [0, 2, 5, 7, 10, 12, 15, 17, 20, 22, 25]
    ratios = [sum(nums[a:b]) / sum(dens[a:b]) for a, b in zip(bounds, bounds[1:])]
    assert ratio_ci95(nums, dens) == pytest.approx(t_half_width(ratios))
    dens[5:7] = [0.0, 0.0]
    kept = [r for i, r in enumerate([sum(nums[a:b]) / sum(dens[a:b]) if sum(dens[a:b]) else None
                                     for a, b in zip(bounds, bounds[1:])]) if r is not None]
    assert len(kept) == 9 and ratio_ci95(nums, dens) == pytest.approx(t_half_width(kept))
    assert ratio_ci95(nums[:4], dens[:4], n_batches=2) == pytest.approx(
        t_half_width([sum(nums[:2]) / sum(dens[:2]), sum(nums[2:4]) / sum(dens[2:4])]))


def test_ratio_ci95_keeps_the_last_slot_when_the_batch_width_rounds_down():
    """61 slots in 7 batches: 7 x (61/7) is 60.999..., yet slot 60 is in the last batch."""
    dens = [0.0] * 61
    dens[51] = dens[60] = 1.0
    assert ratio_ci95([0.0] * 61, dens, 7) == 0.0  # two batches with a denominator, both ratio 0


def test_ratio_ci95_needs_two_batches():
    assert ratio_ci95([1.0], [1.0]) is None and ratio_ci95([], []) is None
    assert ratio_ci95([1.0, 3.0], [1.0, 1.0]) == pytest.approx(12.706)


@settings(max_examples=50, deadline=None)  # no deadline: a loaded machine is no failure
@given(st.integers(0, 50), st.integers(1, 120), st.integers(1, 12), st.data())
def test_window_batches_equal_ratio_ci95_over_the_full_window(warmup, measured, n_batches, data):
    """Streaming over every measured slot gives ratio_ci95's batches and interval exactly."""
    nums = data.draw(st.lists(st.integers(0, 9), min_size=measured, max_size=measured))
    dens = data.draw(st.lists(st.integers(0, 3), min_size=measured, max_size=measured))
    wb = WindowBatches(warmup, warmup + measured, n_batches)
    for i, (num, den) in enumerate(zip(nums, dens)):
        wb.add(warmup + i, float(num), float(den))
    assert len(wb.nums) == min(n_batches, measured) and wb.bounds[0] == 0
    assert sum(wb.nums) == sum(nums) and sum(wb.dens) == sum(dens)
    expected = ratio_ci95([float(x) for x in nums], [float(x) for x in dens], n_batches)
    got = wb.half_width()
    assert (got is None) == (expected is None) and (got is None or got == pytest.approx(expected))


def test_window_batches_with_nothing_measured_keep_one_batch():
    wb = WindowBatches(10, 10)
    assert wb.bounds == [0] and wb.nums == [0.0]
    assert WindowBatches(0, 5).bounds == [0, 1, 2, 3, 4]


def test_stats_exports():
    assert set(_stats.__all__) == {"BatchMeans", "T_975", "WindowBatches", "ratio_ci95", "t_half_width"}
