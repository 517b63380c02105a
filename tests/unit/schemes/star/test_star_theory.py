"""Priority STAR's analysis (schemes/star/theory.py) against independent computations."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from slotnet.schemes.star._theory_ending import balance_solution, load_matrix, minimax_probs
from slotnet.schemes.star.theory import (
    class_waits,
    delay_lower_bound,
    ending_dimension_probs,
    gd1_wait,
    high_priority_share,
    lam_from_rho,
    link_loads,
    max_stable_rho,
    rates_from_rho,
    reception_delay_order,
    rho_from_lam,
    theory_metrics,
    throughput_factor,
    transmissions_matrix,
    unicast_hops,
)

UNEQUAL = [(3, 5), (2, 7), (4, 9), (8, 16), (6, 2), (2, 3, 4), (3, 5, 7), (4, 4, 8), (2, 2, 9), (6, 3, 2)]


def _a(sides, i, l):
    """Eq. (1), 1-based: (n_i - 1) times the sides of the dimensions after l and before i, cyclically."""
    d = len(sides)
    prod, j = 1, l % d + 1
    while j != i:
        prod *= sides[j - 1]
        j = j % d + 1
    return (sides[i - 1] - 1) * prod


def _mean_hops(sides):
    """Brute force: mean dimension-k ring distance from node 0 to a uniform other node."""
    others = [c for c in itertools.product(*(range(n) for n in sides)) if any(c)]
    return [Fraction(sum(min(c[k], sides[k] - c[k]) for c in others), len(others)) for k in range(len(sides))]


def _loads(sides, x, lam_b, lam_r):
    """Per-node dimension loads of eq. (4)'s left-hand side, from eq. (1) and brute-force hops."""
    d, h = len(sides), _mean_hops(sides)
    return [lam_b * sum(_a(sides, i + 1, l + 1) * x[l] for l in range(d)) + lam_r * h[i] for i in range(d)]


def test_transmissions_matrix_is_eq_1_and_columns_sum_to_n_minus_1():
    """a_{i,l} as eq. (1) writes it; every column sums to N-1 (eq. (3))."""
    for sides in UNEQUAL + [(5,), (2, 2, 2, 2)]:
        a, d = transmissions_matrix(sides), len(sides)
        assert a == [[_a(sides, i + 1, l + 1) for l in range(d)] for i in range(d)]
        assert all(sum(a[i][l] for i in range(d)) == math.prod(sides) - 1 for l in range(d))


def test_probs_are_1_over_d_on_every_n_ary_d_cube():
    """x_l = 1/d exactly on n-ary d-cubes, with and without unicast (§3.1, §4)."""
    for n in range(2, 8):
        for d in range(1, 5):
            for lam_r in (0.0, 0.5, 3.0):
                x = ending_dimension_probs((n,) * d, 0.25, lam_r, exact=True)
                assert x == [Fraction(1, d)] * d


@pytest.mark.parametrize("sides", UNEQUAL)
def test_probs_solve_eq_2_on_unequal_tori(sides):
    """Substituted back, x solves eq. (2) exactly, sums to 1 and lies in [0, 1]."""
    x = ending_dimension_probs(sides, exact=True)
    big_n, d = math.prod(sides), len(sides)
    assert sum(x) == 1 and all(0 <= v <= 1 for v in x)
    assert _loads(sides, x, 1, 0) == [Fraction(big_n - 1, d)] * d
    assert ending_dimension_probs(sides) == [float(v) for v in x]


@pytest.mark.parametrize("sides", [(3, 5), (4, 9), (2, 7), (2, 3, 4), (3, 5, 7), (4, 4, 8), (6, 3, 2)])
def test_probs_solve_eq_4_on_unequal_tori(sides):
    """With unicast, x solves eq. (4) exactly (exact mean hops), sums to 1, feasible."""
    lam_b, lam_r = 0.25, 0.125
    x = ending_dimension_probs(sides, lam_b, lam_r, exact=True)
    big_n, d = math.prod(sides), len(sides)
    h = _mean_hops(sides)
    rhs = Fraction(lam_b) * Fraction(big_n - 1, d) + Fraction(lam_r) * sum(h) / d
    assert sum(x) == 1 and all(0 <= v <= 1 for v in x)
    assert _loads(sides, x, Fraction(lam_b), Fraction(lam_r)) == [rhs] * d
    assert x != ending_dimension_probs(sides, exact=True)  # the unicast load moved it


def test_paper_hops_are_floor_n_over_4():
    """hops='paper' is §4's literal floor(n_i/4); the exact hops differ where 4 does not divide n."""
    assert unicast_hops((5, 6, 8, 3), "paper") == [1, 1, 2, 0]
    assert unicast_hops((8, 4)) == [Fraction(2 * 32, 31), Fraction(32, 31)] == _mean_hops((8, 4))
    x = ending_dimension_probs((4, 9), 0.25, 0.125, hops="paper", exact=True)
    assert Fraction(1, 4) * sum(_a((4, 9), 1, l + 1) * x[l] for l in range(2)) + Fraction(1, 8) * 1 == (
        Fraction(1, 4) * Fraction(35, 2) + Fraction(1, 8) * Fraction(3, 2)
    )


@pytest.mark.parametrize("sides", [(4, 16), (16, 4), (3, 12), (12, 2)])
def test_infeasible_2d_solution_takes_the_papers_vertex(sides):
    """§4: eq. (4) gives x outside [0,1] under heavy unicast; the vertex relieving the long side is used."""
    ratio = Fraction(200)
    raw = balance_solution(sides, ratio)
    assert sum(raw) == 1 and min(raw) < 0 and max(raw) > 1
    vertex = [Fraction(int(v > 1)) for v in raw]
    lam_r = float(ratio) * 0.0005
    assert ending_dimension_probs(sides, 0.0005, lam_r, exact=True) == vertex
    long_dim = max(range(2), key=lambda k: sides[k])
    assert vertex[long_dim] == 0  # ending on the short side: the long side is spread first, n-1 times
    m = theory_metrics(sides, 0.0005, lam_r)
    assert m["ending_probs_source"] == "minimax" and m["balanced"] is False and m["max_stable_rho"] < 1


@pytest.mark.parametrize("sides,ratio", [((2, 3, 12), 5), ((2, 3, 12), 20), ((2, 8, 16), 10), ((3, 5, 9), 50)])
def test_infeasible_3d_solution_minimises_the_maximum_load(sides, ratio):
    """d >= 3: the chosen x is on the simplex and no point of a fine grid has a smaller maximum load."""
    raw = balance_solution(sides, Fraction(ratio))
    assert min(raw) < 0
    x = ending_dimension_probs(sides, 1.0, float(ratio), exact=True)
    assert sum(x) == 1 and all(v >= 0 for v in x)
    best = max(_loads(sides, x, 1, ratio))
    steps = 60
    for i in range(steps + 1):
        for j in range(steps + 1 - i):
            y = [Fraction(i, steps), Fraction(j, steps), Fraction(steps - i - j, steps)]
            assert max(_loads(sides, y, 1, ratio)) >= best
    # and it beats the vertices and the clipped solution strictly or ties
    assert best <= min(max(_loads(sides, [Fraction(int(k == l)) for k in range(3)], 1, ratio)) for l in range(3))


def _vertex_value(q):
    """Independent LP value: the least t over all square kernels (support S, tight rows T, |S| = |T|)."""
    d, best = len(q), None
    for k in range(1, d + 1):
        for cols in itertools.combinations(range(d), k):
            for rows in itertools.combinations(range(d), k):
                # unknowns x_S and t: q[r] . x_S - t = 0 for r in rows, sum x_S = 1
                m = [[q[r][c] for c in cols] + [Fraction(-1)] for r in rows] + [[Fraction(1)] * k + [Fraction(0)]]
                b = [Fraction(0)] * k + [Fraction(1)]
                sol = _gauss(m, b)
                if sol is None or any(v < 0 for v in sol[:k]):
                    continue
                x = [Fraction(0)] * d
                for c, v in zip(cols, sol[:k]):
                    x[c] = v
                t = max(sum(q[i][j] * x[j] for j in range(d)) for i in range(d))
                best = t if best is None else min(best, t)
    return best


def _gauss(m, b):
    n = len(b)
    rows = [list(r) + [v] for r, v in zip(m, b)]
    for c in range(n):
        p = next((r for r in range(c, n) if rows[r][c] != 0), None)
        if p is None:
            return None
        rows[c], rows[p] = rows[p], rows[c]
        for r in range(n):
            if r != c:
                f = rows[r][c] / rows[c][c]
                rows[r] = [u - f * w for u, w in zip(rows[r], rows[c])]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def test_minimax_matches_an_exhaustive_vertex_search():
    """On random 2x2 to 4x4 load matrices the simplex's maximum load equals the best kernel vertex."""
    rng = random.Random(7)
    for _ in range(300):
        d = rng.choice((2, 3, 4))
        q = [[Fraction(rng.randint(0, 30)) for _ in range(d)] for _ in range(d)]
        x = minimax_probs(q)
        assert sum(x) == 1 and all(v >= 0 for v in x)
        assert max(sum(q[i][j] * x[j] for j in range(d)) for i in range(d)) == _vertex_value(q)


def test_minimax_returns_the_balanced_point_when_one_exists():
    """On feasible cases the linear programme lands on the eq. (4) solution itself."""
    for sides in [(3, 5), (2, 3, 4), (3, 5, 7), (4, 4, 8)]:
        for ratio in (Fraction(0), Fraction(1, 2)):
            assert minimax_probs(load_matrix(sides, ratio)) == balance_solution(sides, ratio)


@pytest.mark.parametrize("sides", UNEQUAL)
def test_links_are_balanced_when_feasible_and_average_rho_always(sides):
    """Feasible x: every dimension's link load equals rho; any x (fixed ending): mean link load is rho."""
    lam_b = 0.001
    rho = rho_from_lam(sides, lam_b)
    loads = link_loads(sides, lam_b)
    assert loads == pytest.approx([rho] * len(sides), rel=1e-12)
    for e in range(1, len(sides) + 1):
        m = theory_metrics(sides, lam_b, ending=e)
        assert m["ending_dimension_probs"] == [float(k == e - 1) for k in range(len(sides))]
        assert m["ending_probs_source"] == "forced" and m["balanced"] is False
        assert sum(m["link_load_per_dim"]) / len(sides) == pytest.approx(rho, rel=1e-12)
        assert m["max_stable_rho"] == pytest.approx(m["link_load_mean"] / m["link_load_max"], rel=1e-12)


def test_throughput_factor_formulas_of_sections_2_and_4():
    """rho = lam_B(N-1)/(2d) + lam_R D_ave/(2d); the paper's hypercube formula with merged parallel links."""
    for sides in [(8, 8), (16, 16), (8, 8, 8), (3, 5), (2, 3, 4)]:
        big_n, d = math.prod(sides), len(sides)
        d_ave = sum(_mean_hops(sides))
        assert rho_from_lam(sides, 0.01) == pytest.approx(0.01 * (big_n - 1) / (2 * d), rel=1e-12)
        assert rho_from_lam(sides, 0.01, 0.2) == pytest.approx(0.01 * (big_n - 1) / (2 * d) + 0.2 * d_ave / (2 * d))
    for d in range(1, 7):
        lam_b, lam_r = 0.01, 0.3
        paper = lam_b * (2**d - 1) / d + lam_r * (0.5 + 1 / (2 * (2**d - 1)))
        assert throughput_factor((2,) * d, lam_b, lam_r, merge_parallel=True) == pytest.approx(paper, rel=1e-12)
        assert throughput_factor((2,) * d, lam_b, lam_r) == pytest.approx(paper / 2, rel=1e-12)
    assert throughput_factor((8, 4), 0.0, 1.0, hops="paper") == pytest.approx((2 + 1) / 4)


def test_lam_and_rho_are_inverse_for_both_traffic_cases():
    """lam_from_rho inverts rho_from_lam (with a fixed unicast rate); rates_from_rho splits rho by share."""
    for sides in [(8, 8), (3, 5, 7), (2, 9)]:
        for lam_r in (0.0, 0.05):
            lam_b = lam_from_rho(sides, 0.8, lam_r)
            assert rho_from_lam(sides, lam_b, lam_r) == pytest.approx(0.8, rel=1e-12)
        lam_b, lam_r = rates_from_rho(sides, 0.9, 0.5)
        assert rho_from_lam(sides, lam_b) == pytest.approx(0.45, rel=1e-12)
        assert rho_from_lam(sides, 0.0, lam_r) == pytest.approx(0.45, rel=1e-12)
    with pytest.raises(ValueError, match="alone gives rho"):
        lam_from_rho((8, 8), 0.1, 1.0)


def test_high_priority_share_and_rho_high_on_n_ary_d_cubes():
    """§3.2: share (N/n - 1)/(N - 1) and rho_H = rho times it; general tori: 1 - ending-dim share."""
    for n, d in [(8, 2), (16, 2), (8, 3), (4, 4), (5, 1)]:
        big_n = n**d
        share = (big_n / n - 1) / (big_n - 1)
        assert high_priority_share((n,) * d) == pytest.approx(share, abs=1e-15)
        m = theory_metrics((n,) * d, lam_from_rho((n,) * d, 0.7))
        assert m["rho_high"] == pytest.approx(0.7 * share) and m["rho_high"] < 1 / n
        assert m["rho_low"] == pytest.approx(0.7 * (1 - share))
    for sides in UNEQUAL:
        x = ending_dimension_probs(sides, exact=True)
        low = sum(x[l] * _a(sides, l + 1, l + 1) for l in range(len(sides)))
        assert high_priority_share(sides) == pytest.approx(float(1 - low / (math.prod(sides) - 1)), rel=1e-12)


def test_gd1_waits_and_the_conservation_law_of_section_3_2():
    """W_H, W are the §3.2 G/D/1 waits with V = rho; W is the paper's share-weighted mean of W_L, W_H."""
    assert gd1_wait(0.6) == pytest.approx(0.6 / (2 * 0.4))
    assert gd1_wait(0.6, 0.24) == pytest.approx(0.0)  # a Bernoulli stream never waits
    assert gd1_wait(1.0) == math.inf and gd1_wait(0.0) == 0.0
    for n, d, rho in [(8, 2, 0.9), (16, 2, 0.5), (8, 3, 0.95), (4, 3, 0.3)]:
        sides, big_n = (n,) * d, n**d
        m = theory_metrics(sides, lam_from_rho(sides, rho))
        rho_h = m["rho_high"]
        assert m["mean_wait_high"] == pytest.approx(rho_h / (2 * (1 - rho_h)))
        assert m["mean_wait"] == pytest.approx(rho / (2 * (1 - rho)))
        s_h = (big_n / n - 1) / (big_n - 1)
        assert m["mean_wait"] == pytest.approx((1 - s_h) * m["mean_wait_low"] + s_h * m["mean_wait_high"])
        fcfs = theory_metrics(sides, lam_from_rho(sides, rho), classes=1)
        assert fcfs["mean_wait_high"] == fcfs["mean_wait_low"] == pytest.approx(m["mean_wait"])


def test_three_classes_conserve_work_and_order_the_waits():
    """End of §4: per link rho W = sum rho_c W_c, and waits grow from high to medium (unicast) to low."""
    sides = (4, 4)
    lam_b, lam_r = rates_from_rho(sides, 0.85, 0.5)
    m3 = theory_metrics(sides, lam_b, lam_r, classes=3)
    m2 = theory_metrics(sides, lam_b, lam_r, classes=2)
    rho = m3["throughput_factor"]
    work = m3["rho_high"] * m3["mean_wait_high"] + m3["rho_medium"] * m3["mean_wait_unicast"]
    assert rho * m3["mean_wait"] == pytest.approx(work + m3["rho_low"] * m3["mean_wait_low"])
    assert m3["mean_wait_high"] < m3["mean_wait_unicast"] < m3["mean_wait_low"]
    assert m2["rho_high"] == pytest.approx(m3["rho_high"] + m3["rho_medium"])  # §4: unicast is high priority
    assert m2["rho_low"] == pytest.approx(m3["rho_low"]) and m3["rho_medium"] == pytest.approx(m3["rho_unicast"])
    assert m2["mean_wait_unicast"] == pytest.approx(m2["mean_wait_high"]) and m2["mean_wait"] == pytest.approx(
        m3["mean_wait"]
    )
    assert class_waits([0.0, 0.5])[0] == 0.0 and class_waits([0.5, 0.0])[1] == pytest.approx(0.5 * 1.5 / 0.5)
    assert class_waits([0.3, 0.8]) == [pytest.approx(0.3 / 1.4), math.inf]


def test_stability_limits_and_delay_expressions():
    """max_stable_rho is 1 when balanced and mean/max for a fixed ending; bound and order expressions."""
    for n, d in [(8, 2), (4, 3)]:
        sides, big_n = (n,) * d, n**d
        assert max_stable_rho(sides) == 1.0
        for e in range(d):
            x = [float(k == e) for k in range(d)]
            expect = (big_n - 1) / d / ((n - 1) * big_n / n)
            assert max_stable_rho(sides, x=x) == pytest.approx(expect, rel=1e-12)
    m = theory_metrics((8, 8), lam_from_rho((8, 8), 1.01))
    assert m["stable"] is False and m["mean_wait_low"] == math.inf and m["mean_wait_high"] < 1
    assert delay_lower_bound(3, 0.75) == 7.0 and delay_lower_bound(3, 1.0) == math.inf
    assert reception_delay_order((4, 8, 2), 0.5) == 8 * 3 + 16 and reception_delay_order((4,), 1.0) == math.inf
    m = theory_metrics((8, 8, 8), lam_from_rho((8, 8, 8), 0.5))
    assert m["delay_lower_bound"] == pytest.approx(5.0) and m["reception_delay_order"] == pytest.approx(40.0)


def test_theory_metrics_keys_and_unicast_only_load():
    """The flat dict names what the issue asks for; with lam_b = 0 eq. (2)'s x is reported."""
    m = theory_metrics((4, 9), 0.0, 0.1)
    for key in ("throughput_factor", "ending_dimension_probs", "high_priority_share", "rho_high", "mean_wait_high",
                "mean_wait", "mean_wait_low", "max_stable_rho", "delay_lower_bound", "mean_wait_unicast"):
        assert key in m
    assert "mean_reception_delay" not in m and "mean_broadcast_delay" not in m
    assert m["ending_dimension_probs"] == ending_dimension_probs((4, 9))
    assert m["throughput_factor"] == pytest.approx(rho_from_lam((4, 9), 0.0, 0.1))
    h = _mean_hops((4, 9))
    assert m["max_stable_rho"] == pytest.approx(float(sum(h) / 2 / max(h)))


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: rho_from_lam((), 0.1), "at least one dimension"),
        (lambda: rho_from_lam((4, 1), 0.1), "torus side 1 must be >= 2, got 1"),
        (lambda: rho_from_lam((4, 2.5), 0.1), "torus side 1 must be an integer"),
        (lambda: rho_from_lam("4x4", 0.1), "sequence of integers"),
        (lambda: rho_from_lam((4, 4), -0.1), "lam_b must be finite and >= 0"),
        (lambda: rho_from_lam((4, 4), 0.1, math.nan), "lam_r must be finite and >= 0"),
        (lambda: lam_from_rho((4, 4), "x"), "rho must be a real number"),
        (lambda: theory_metrics((4, 4), 0.1, ending=3), r"ending dimension must be in 1..2 for d=2, got 3"),
        (lambda: theory_metrics((4, 4), 0.1, ending=0), r"ending dimension must be in 1..2 for d=2, got 0"),
        (lambda: theory_metrics((4, 4), 0.1, classes=4), "classes must be 1"),
        (lambda: theory_metrics((4, 4), 0.1, hops="floor"), "hops must be one of"),
        (lambda: link_loads((4, 4), 0.1, 0.0, [1.0]), "one probability per dimension"),
        (lambda: link_loads((4, 4), 0.1, 0.0, [0.7, 0.7]), "x must sum to 1"),
        (lambda: rates_from_rho((4, 4), 0.5, 1.5), "unicast_share must be in"),
        (lambda: delay_lower_bound(0, 0.5), "d must be an integer >= 1"),
    ],
)
def test_bad_input_raises_precise_errors(call, message):
    """Bad sides, rates, ending dimensions, class counts and x are refused with a message naming them."""
    with pytest.raises(ValueError, match=message):
        call()
