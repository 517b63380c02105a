"""The kit's declared distributions and the chi-square goodness-of-fit test."""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.schemes.kit.choices import (
    MIN_EXPECTED,
    SIGNIFICANCE,
    Categorical,
    Poisson,
    Uniform,
    chi_square_sf,
    goodness_of_fit,
)


@given(x=st.floats(0.0, 200.0))
def test_chi_square_sf_with_two_degrees_is_the_exponential_tail(x):
    """With 2 degrees of freedom the survival function is exp(-x/2) exactly."""
    assert math.isclose(chi_square_sf(x, 2), math.exp(-x / 2), rel_tol=1e-9, abs_tol=1e-300)


@given(x=st.floats(0.01, 60.0))
def test_chi_square_sf_with_one_degree_is_the_normal_two_sided_tail(x):
    """With 1 degree of freedom P(X >= x) = erfc(sqrt(x/2)) (the square of a standard normal)."""
    assert math.isclose(chi_square_sf(x, 1), math.erfc(math.sqrt(x / 2)), rel_tol=1e-8)


def test_chi_square_sf_matches_printed_critical_values():
    """Textbook 5% and 0.1% critical values (dof 3: 7.815, 16.266; dof 10: 18.307, 29.588)."""
    for x, dof, p in ((7.815, 3, 0.05), (16.266, 3, 0.001), (18.307, 10, 0.05), (29.588, 10, 0.001)):
        assert abs(chi_square_sf(x, dof) - p) < 2e-4 * max(1.0, p * 100)


@given(dof=st.integers(1, 60), x=st.floats(0.0, 300.0), dx=st.floats(0.01, 10.0))
def test_chi_square_sf_decreases(dof, x, dx):
    """The survival function is non-increasing in x and within [0, 1]."""
    a, b = chi_square_sf(x, dof), chi_square_sf(x + dx, dof)
    assert 0.0 <= b <= a + 1e-12 <= 1.0 + 1e-12


def test_poisson_cells_cover_the_whole_mass():
    """A Poisson's cells (its tail pooled) hold every outcome: expected counts sum to n."""
    cells = Poisson(2.5).cells(1000)
    assert math.isclose(sum(e for _, e in cells), 1000.0, rel_tol=1e-9)
    assert isinstance(cells[-1][0], str) and cells[-1][0].startswith(">=")


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(2, 12))
def test_uniform_draws_pass(seed, k):
    """Draws from the declared uniform distribution pass the test (false alarms at 1e-6 are never met here)."""
    rng = random.Random(seed)
    counts: dict[int, int] = {}
    for _ in range(50 * k):
        v = rng.randrange(k)
        counts[v] = counts.get(v, 0) + 1
    row = goodness_of_fit(Uniform(range(k)), counts)
    assert row["ok"] and row["judged"] and row["significance"] == SIGNIFICANCE


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), mean=st.floats(0.3, 6.0))
def test_poisson_draws_pass_and_a_shifted_mean_fails(seed, mean):
    """Poisson counts of the declared mean pass; counts of twice the mean fail."""
    rng = random.Random(seed)

    def draw(m: float) -> int:  # Knuth's method
        limit, k, p = math.exp(-m), 0, 1.0
        while True:
            p *= rng.random()
            if p <= limit:
                return k
            k += 1

    def counts(m: float) -> dict[int, int]:
        out: dict[int, int] = {}
        for _ in range(2000):
            v = draw(m)
            out[v] = out.get(v, 0) + 1
        return out

    assert goodness_of_fit(Poisson(mean), counts(mean))["ok"]
    assert not goodness_of_fit(Poisson(mean), counts(2 * mean))["ok"]


def test_an_impossible_value_fails_and_too_few_are_not_judged():
    """A value of probability 0 fails at once; fewer outcomes than two cells of 5 expected are not judged."""
    assert not goodness_of_fit(Uniform(range(3)), {7: 1})["ok"]
    row = goodness_of_fit(Uniform(range(4)), {0: 2, 1: 3})
    assert row["ok"] and row["judged"] is False and str(int(MIN_EXPECTED)) in row["why"]


def test_categorical_refuses_probabilities_that_do_not_sum_to_one():
    """A categorical distribution's probabilities must sum to 1."""
    try:
        Categorical({0: 0.5, 1: 0.4})
    except ValueError as exc:
        assert "summing to 1" in str(exc)
    else:
        raise AssertionError("accepted probabilities summing to 0.9")
