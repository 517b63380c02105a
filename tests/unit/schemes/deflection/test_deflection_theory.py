"""Analytic model of Greenberg & Hajek, "Deflection Routing in Hypercube Networks".

Pins ``slotnet.schemes.deflection.theory`` to the paper: Table I's predictions
(§III-B), Table III and Fig. 1 (§III-C), Lemma 3.1, Theorems 3.1-3.3, the
Appendix series, Table V (with its discrepancy) and the input queue of §IV.
Printed values are compared after rounding to the printed number of decimals.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from slotnet.schemes.deflection import theory as th

# Table I, "prediction" columns (d = 6; v = 6.0 in slot 1, then 0.0), as printed:
# (slot, v, util, accept or None for "—", deflect, dist).
TABLE_I = [
    (1, 6.0, 1.0000, 1.0000, 0.1508, 2.4874),
    (2, 0.0, 0.9444, None, 0.1826, 2.1026),
    (3, 0.0, 0.8321, None, 0.1838, 1.8373),
    (4, 0.0, 0.6659, None, 0.1578, 1.6305),
    (5, 0.0, 0.4708, None, 0.1188, 1.4580),
    (6, 0.0, 0.2803, None, 0.0766, 1.3109),
    (7, 0.0, 0.1307, None, 0.0397, 1.1907),
    (8, 0.0, 0.0429, None, 0.0149, 1.0976),
    (9, 0.0, 0.0086, None, 0.0032, 1.0376),
    (10, 0.0, 0.0009, None, 0.0003, 1.0097),
]

# Table III (d = 6), as printed: (v, link util., accept frac., delay, def. frac.).
TABLE_III = [
    (0.2, 0.1051, 1.0000, 3.1525, 0.0166),
    (0.4, 0.2197, 0.9998, 3.2967, 0.0378),
    (0.6, 0.3499, 0.9975, 3.5074, 0.0655),
    (0.8, 0.5022, 0.9832, 3.8310, 0.1022),
    (1.0, 0.6629, 0.9289, 4.2816, 0.1441),
    (1.2, 0.7827, 0.8307, 4.7112, 0.1766),
    (1.4, 0.8538, 0.7295, 5.0159, 0.1962),
    (1.6, 0.8968, 0.6440, 5.2226, 0.2082),
    (1.8, 0.9248, 0.5743, 5.3675, 0.2161),
    (2.0, 0.9441, 0.5175, 5.4726, 0.2216),
    (2.2, 0.9579, 0.4706, 5.5508, 0.2255),
    (2.4, 0.9681, 0.4314, 5.6102, 0.2284),
    (2.6, 0.9758, 0.3981, 5.6558, 0.2306),
    (2.8, 0.9816, 0.3696, 5.6912, 0.2323),
    (3.0, 0.9861, 0.3449, 5.7188, 0.2335),
]

# Table V, as printed: (mu, C(mu), decimals printed).
TABLE_V = [
    (0.2, 0.117, 3),
    (0.4, 0.288, 3),
    (0.6, 0.573, 3),
    (0.8, 1.15, 2),
    (0.9, 1.82, 2),
    (0.99, 4.18, 2),
    (0.999, 6.50, 2),
    (0.9999, 8.81, 2),
    (0.99999, 11.11, 2),
]


def _binom(n: int, p: float) -> list[float]:
    return [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]


def _h(k: int, d: int, i: int) -> float:
    """H(k, d, i) of (3.3), written out with falling factorials."""
    return sum(math.perm(j, i) / math.perm(d, i) for j in range(1, k + 1)) / (k + 1)


def test_initial_distance_is_eq_2_1():
    """q(i) = C(d,i)/(2^d-1) sums to 1, has q(0) = 0 and mean d/(2(1-2^-d)) (§II-B)."""
    for d in (1, 2, 6, 13):
        q = th.initial_distance(d)
        assert q[0] == 0.0 and q.size == d + 1
        assert math.isclose(q.sum(), 1.0, rel_tol=1e-14)
        assert math.isclose(float(np.arange(d + 1) @ q), d / (2 * (1 - 2.0**-d)), rel_tol=1e-14)


def test_one_slot_probabilities_match_a_literal_reading_of_3_1_to_3_4():
    """a, p and p_o equal a term-by-term transcription of (3.1)-(3.4)."""
    for d, m, v in itertools.product((1, 2, 5, 6), (0.0, 0.3, 0.8, 1.0), (0.5, 2.0)):
        if v > d:
            continue
        pu, pv, puo, pvo = _binom(d, m), _binom(d, v / d), _binom(d - 1, m), _binom(d - 1, v / d)
        a = sum(pu[u] * pv[w] * min(d - u, w) for u in range(d + 1) for w in range(d + 1)) / v
        assert math.isclose(th.accept_probability(m, d, v), a, rel_tol=1e-12, abs_tol=1e-15)
        for i in range(d + 1):
            p = sum(puo[u] * pv[w] * _h(min(u + w, d - 1), d, i) for u in range(d) for w in range(d + 1))
            joint = sum(
                pu[u] * pvo[w] * min(1 + w, d - u) / (1 + w) * _h(min(u + w, d - 1), d, i)
                for u in range(d + 1)
                for w in range(d)
            )
            expect_p = p if i > 0 else 0.0
            assert math.isclose(th.deflect_probability(i, m, d, v), expect_p, abs_tol=1e-14)
            if a > 0:
                expect_new = joint / a if i > 0 else 0.0
                assert math.isclose(th.deflect_probability_new(i, m, d, v), expect_new, abs_tol=1e-13)


def test_accept_probability_at_zero_load_is_its_limit():
    """a(m, d, 0) is the v -> 0+ limit 1 - m^d (1.0 on an empty network), not a 0/0."""
    for d, m in itertools.product((1, 3, 6), (0.0, 0.4, 0.9, 1.0)):
        assert math.isclose(th.accept_probability(m, d, 0.0), 1.0 - m**d, abs_tol=1e-15)
        assert math.isclose(th.accept_probability(m, d, 1e-9), 1.0 - m**d, abs_tol=1e-7)
    assert th.accept_probability(0.0, 6, 0.0) == 1.0


def test_deflect_probability_new_at_full_occupancy_is_the_limit():
    """At m = 1 (a = 0) p_o is its m -> 1 limit H(d-1, d, i), finite and below 1/(i+1)."""
    for i in range(1, 7):
        near = th.deflect_probability_new(i, 1.0 - 1e-7, 6, 2.0)
        assert math.isclose(th.deflect_probability_new(i, 1.0, 6, 2.0), _h(5, 6, i), rel_tol=1e-12)
        assert math.isclose(near, _h(5, 6, i), abs_tol=1e-5)


def test_transient_reproduces_table_i_predictions():
    """transient(6, [6, 0, ...]) gives Table I's four prediction columns to the printed digits.

    One printed entry is a misprint: the deflection fraction of slot 8 is 0.0146
    (0.014612), printed 0.0149. Slots 7 and 8 match in utilisation and mean
    distance, which determine m_7 and m_8 and hence that fraction (the numerator
    is sum_i m_7(i) p(i, m_7), the denominator the utilisation of slot 8); no
    alternative reading changes this entry alone. It is asserted as computed.
    """
    slots = th.transient(6, [row[1] for row in TABLE_I])
    for s, (slot, v, util, accept, deflect, dist) in zip(slots, TABLE_I, strict=True):
        assert (s.slot, s.v) == (slot, v)
        assert round(s.link_utilization, 4) == util
        assert (None if s.accept_fraction is None else round(s.accept_fraction, 4)) == accept
        assert round(s.mean_distance, 4) == dist
        if slot == 8:
            assert round(s.deflection_fraction, 4) == 0.0146  # printed 0.0149: misprint
        else:
            assert round(s.deflection_fraction, 4) == deflect


def test_transient_of_an_idle_network_stays_empty():
    """With nothing offered the network stays empty; undefined ratios are None."""
    for s in th.transient(4, [0.0, 0.0, 0.0]):
        assert s.link_utilization == 0.0
        assert s.accept_fraction is s.deflection_fraction is s.mean_distance is None


def test_transient_converges_to_the_fixed_point():
    """Iterating (3.6) at constant v converges to the solution of (3.7)-(3.8)."""
    last = th.transient(6, [1.0] * 300)[-1]
    s = th.fixed_point(6, 1.0)
    assert math.isclose(last.link_utilization, s.link_utilization, rel_tol=1e-10)
    assert math.isclose(last.accept_fraction, s.accept_fraction, rel_tol=1e-10)
    assert math.isclose(last.deflection_fraction, s.deflection_fraction, rel_tol=1e-10)


def test_fixed_point_reproduces_table_iii():
    """fixed_point(6, v) gives Table III's utilisation, acceptance, delay and deflection fraction."""
    for v, util, accept, delay, deflect in TABLE_III:
        s = th.fixed_point(6, v)
        got = (s.link_utilization, s.accept_fraction, s.mean_delay, s.deflection_fraction)
        assert tuple(round(x, 4) for x in got) == (util, accept, delay, deflect), v


def test_fixed_point_reproduces_fig_1():
    """For d = 6, v = 1 the fixed point is m̄ = 0.5080596 (caption of Fig. 1)."""
    s = th.fixed_point(6, 1.0)
    assert round(s.m_bar, 7) == 0.5080596
    assert math.isclose(th.fixed_point_map(s.m_bar, 6, 1.0), s.m_bar, abs_tol=1e-13)


def test_deflection_distance_hist_matches_the_example_in_the_text():
    """The §III-C text quotes a Table IV prediction of 0.5413 at distance 1; d = 6, v = 2 gives it."""
    hist = th.fixed_point(6, 2.0).deflection_distance_hist
    assert round(hist[0], 4) == 0.5413
    assert len(hist) == 6 and math.isclose(sum(hist), 1.0, rel_tol=1e-14)
    assert hist[-1] == 0.0  # at distance d every link is preferred: no deflection


def test_fixed_point_satisfies_3_7_3_8_and_conservation_3_9():
    """m̄(i) solves (3.8) for every i, sums to m̄ over i >= 1 (3.7) and a v = m̄(0) d (3.9)."""
    for d, v in ((2, 0.7), (6, 1.0), (6, 3.0), (9, 2.5)):
        s = th.fixed_point(d, v)
        m, mb, q = np.array(s.m_vec), s.m_bar, th.initial_distance(d)
        a = th.accept_probability(mb, d, v)
        p = [th.deflect_probability(i, mb, d, v) for i in range(d + 1)] + [0.0]
        po = [th.deflect_probability_new(i, mb, d, v) for i in range(d + 1)] + [0.0]
        mm, qq = np.append(m, 0.0), np.append(q, 0.0)  # index -1 and d+1 read as 0
        for i in range(d + 1):
            rhs = mm[i - 1] * p[i - 1] + mm[i + 1] * (1 - p[i + 1]) if i > 0 else mm[1] * (1 - p[1])
            new = qq[i - 1] * po[i - 1] + qq[i + 1] * (1 - po[i + 1]) if i > 0 else qq[1] * (1 - po[1])
            assert math.isclose(m[i], rhs + v * a / d * new, rel_tol=1e-10, abs_tol=1e-15)
        assert math.isclose(m[1:].sum(), mb, rel_tol=1e-10)
        assert math.isclose(a * v, m[0] * d, rel_tol=1e-10)
        assert math.isclose(s.throughput_per_node, a * v, rel_tol=1e-14)


def test_fixed_point_edge_cases():
    """v = 0 gives an empty network with the lone-packet delay; d = 1 never has continuing packets."""
    s = th.fixed_point(6, 0.0)
    assert (s.m_bar, s.link_utilization, s.deflection_fraction, s.throughput_per_node) == (0, 0, 0, 0)
    assert s.accept_fraction == 1.0 and s.deflection_distance_hist == (0.0,) * 6
    assert math.isclose(s.mean_delay, 6 / (2 * (1 - 2**-6)), rel_tol=1e-14)
    one = th.fixed_point(1, 0.5)
    assert (one.m_bar, one.mean_delay, one.link_utilization) == (0.0, 1.0, 0.5)


def test_lemma_3_1_bounds_hold_on_a_grid():
    """p, p_o <= 1/(i+1) (3.18)-(3.19) and d/2 <= T <= d/2 + 6 + 2 ln d (3.20) for all m, v."""
    for d in (1, 2, 3, 6, 10, 16):
        lo, hi = th.delay_bounds(d)
        for m, frac in itertools.product((0.0, 0.25, 0.5, 0.75, 0.95, 1.0), (0.0, 0.1, 0.5, 1.0)):
            v = frac * d
            for i in range(1, d + 1):
                assert th.deflect_probability(i, m, d, v) <= 1 / (i + 1) + 1e-15
                assert th.deflect_probability_new(i, m, d, v) <= 1 / (i + 1) + 1e-15
            assert lo <= th.expected_delay(m, d, v) <= hi


def test_theorem_3_1_limits_are_approached():
    """As d grows, m̄ -> v/2 ∧ 1, a -> 1 ∧ 2/v and p(i) -> (v/2 ∧ 1)^i/(i+1) (3.21)-(3.24)."""
    errors = []
    for d in (20, 60, 150):
        s = th.fixed_point(d, 1.0)
        p = [th.deflect_probability(i, s.m_bar, d, 1.0) - th.deflect_probability_limit(i, 1.0) for i in (1, 2, 3)]
        p_err = max(map(abs, p))
        errors.append((abs(s.m_bar - th.m_bar_limit(1.0)), abs(s.accept_fraction - th.accept_limit(1.0)), p_err))
    assert all(b < a for e0, e1 in itertools.pairwise(errors) for a, b in zip(e0, e1, strict=True))
    assert errors[-1][0] < 1e-3 and errors[-1][2] < 3e-3
    assert (th.accept_limit(3.0), th.m_bar_limit(3.0), th.deflect_probability_limit(0, 1.0)) == (2 / 3, 1.0, 0.0)
    thr = [th.throughput(d, 3.0) for d in (20, 60, 150)]
    assert thr[0] < thr[1] < thr[2] < 2.0  # a v -> 2 ∧ v = 2


def test_theorem_3_2_saturation():
    """G_x(y) = E[X ∧ Y] is right, and d (1 - m̄) rises towards G_v^{-1}(2) for v > 2 (3.25)."""
    x, y = 3.0, 2.2
    px = [math.exp(-x) * x**k / math.factorial(k) for k in range(60)]
    py = [math.exp(-y) * y**k / math.factorial(k) for k in range(60)]
    brute = sum(px[i] * py[j] * min(i, j) for i in range(60) for j in range(60))
    assert math.isclose(th.poisson_min_mean(x, y), brute, rel_tol=1e-12)
    g_inv = 1.0 - th.m_bar_saturation(1, 3.0)
    assert math.isclose(th.poisson_min_mean(3.0, g_inv), 2.0, rel_tol=1e-10)
    gaps = [d * (1 - th.fixed_point(d, 3.0).m_bar) for d in (20, 60, 150)]
    assert gaps[0] < gaps[1] < gaps[2] < g_inv
    with pytest.raises(ValueError, match="v > 2"):
        th.m_bar_saturation(10, 2.0)


def test_theorem_3_3_delay_approaches_t_infinity():
    """T(m̄, d, v) - T∞(d, v) shrinks with d (3.26), confirming (3.28) as the C in (3.27)."""
    for v in (0.4, 1.0):
        gaps = [th.fixed_point(d, v).mean_delay - th.t_infinity(d, v) for d in (20, 60, 150)]
        assert all(abs(b) < abs(a) for a, b in itertools.pairwise(gaps))
        assert abs(gaps[-1]) < 0.015
    # With Table V's C(0.2) = 0.117 the d = 150 gap at v = 0.4 would be 20 times larger.
    half_excess = (th.fixed_point(150, 0.4).mean_delay - 150 / 2) / 2
    assert abs(half_excess - th.C(0.2)) < 1e-3 < 0.01 < abs(half_excess - 0.117)
    assert th.t_infinity(6, 2.0) == math.inf


def _c_double_sum(mu: float, n: int) -> float:
    """C_N(mu) of (5.15) by its definition, a double sum of products."""
    a = [0.0] + [mu**i / (1 + i - mu**i) for i in range(1, n + 1)]
    return math.fsum(math.prod(a[k : j + 1]) for j in range(1, n + 1) for k in range(1, j + 1))


def test_c_partial_is_the_corrected_recursion_5_16():
    """C_N by (5.16) with B_{j+1} = (1+B_j) a_{j+1} equals the double sum (5.15); with a_j as printed it would not."""
    for mu, n in itertools.product((0.2, 0.5, 0.9, 1.0), (1, 2, 5, 40)):
        assert math.isclose(th.C_partial(mu, n), _c_double_sum(mu, n), rel_tol=1e-13)
    a = [0.0] + [0.5**i / (1 + i - 0.5**i) for i in range(1, 4)]
    as_printed = a[1] + (1 + a[1]) * a[1] + (1 + (1 + a[1]) * a[1]) * a[2]  # B_1 + B_2 + B_3 with a_j
    assert not math.isclose(as_printed, _c_double_sum(0.5, 3), rel_tol=1e-3)


def test_c_converges_and_obeys_its_bounds():
    """C(mu) is the limit of C_N, lies within (3.29)/(5.14), and C - C_N obeys (5.17)."""
    for mu in (0.05, 0.2, 0.5, 0.8, 0.9, 0.99, 0.999):
        c = th.C(mu)
        lo, hi = th.C_bounds(mu)
        assert lo <= c <= hi
        for n in (2, 10, 100):
            assert -1e-15 * c <= c - th.C_partial(mu, n) <= th.C_tail_bound(mu, n)  # up to rounding
    assert math.isclose(th.C(0.5), _c_double_sum(0.5, 200), rel_tol=1e-13)
    assert math.isclose(th.C(0.999), th.C_partial(0.999, 60_000), rel_tol=1e-13)
    assert th.C(0.0) == 0.0 and th.C_bounds(0.0) == (0.0, 2.7)


def test_c_guard_near_one():
    """C(1) is infinite, mu > 1 is refused, and a sum needing too many terms raises."""
    assert th.C(1.0) == math.inf
    with pytest.raises(ValueError, match="0 <= mu <= 1"):
        th.C(1.01)
    with pytest.raises(ValueError, match="max_terms"):
        th.C(0.9999, max_terms=1000)


def test_table_v_is_not_reproduced_by_3_28_and_not_for_want_of_convergence():
    """Table V disagrees with (3.28) in every row; for mu <= 0.8 no partial sum C_N matches it either.

    The terms of (3.28) are positive, so C_N increases to C; for mu <= 0.8 each
    printed value falls strictly between two consecutive partial sums, neither
    of which rounds to it. The printed values are instead within one unit of
    their last digit (6 rows of 9 equal after rounding) of the double sum with
    a_i = mu^i/(1+i), the limits p∞(i) of (3.24) rather than their odds
    p∞/(1-p∞) that Lemma 5.1 and (5.13) require; Theorem 3.3 (tested above)
    confirms (3.28).
    """
    computed = {0.2: 0.12855, 0.4: 0.34569, 0.6: 0.74796, 0.8: 1.64559, 0.9: 2.67326, 0.99: 5.73655}
    for mu, printed, decimals in TABLE_V:
        c = th.C(mu)
        assert c > printed and round(c, decimals) != printed
        if mu in computed:
            assert round(c, 5) == computed[mu]
        if mu <= 0.8:
            partial = [round(th.C_partial(mu, n), decimals) for n in range(1, 200)]
            assert printed not in partial
    for mu, printed, decimals in TABLE_V[:-1]:
        b = total = 0.0
        for i in range(1, 400_000):
            b = (1 + b) * mu**i / (1 + i)
            total += b
            if b < 1e-12:
                break
        assert abs(total - printed) <= 10.0**-decimals


def test_input_queue_throughput_equals_lambda():
    """The v found for λ has steady-state throughput λ; delays follow (4.1) and its bounds."""
    d = 6
    v_max, thr_max = th.max_throughput(d)
    for lam in (0.1, 0.5, 0.9, 1.0, 0.999 * thr_max):
        model = th.input_queue(d, lam)
        assert model.v <= v_max
        assert math.isclose(th.throughput(d, model.v), lam, rel_tol=1e-10)
        s = th.fixed_point(d, model.v)
        rho = lam / d
        x_bar = (rho**2 + 2 * s.m_bar * rho) / (2 * (1 - s.m_bar - rho))
        assert math.isclose(model.mean_queueing_delay, x_bar / lam, rel_tol=1e-12)
        assert model.queueing_delay_bounds == (x_bar / lam - 1, x_bar / lam)
        assert model.mean_transit_delay == s.mean_delay == th.expected_delay(s.m_bar, d, model.v)
        assert math.isclose(model.mean_delay, model.mean_queueing_delay + model.mean_transit_delay)
    delays = [th.input_queue(d, lam).mean_queueing_delay for lam in (0.2, 0.6, 1.0, 1.03)]
    assert delays == sorted(delays)


def test_input_queue_rejects_unstable_or_empty_loads():
    """λ above the maximum throughput, or λ <= 0, raises a ValueError that says why."""
    _, thr_max = th.max_throughput(6)
    with pytest.raises(ValueError, match=r"exceeds the maximum throughput 1\.0354"):
        th.input_queue(6, thr_max * 1.001)
    with pytest.raises(ValueError, match="must be > 0"):
        th.input_queue(6, 0.0)


def test_max_throughput_and_footnote_2():
    """Throughput peaks inside (0, d) and then falls by about 0.2% for d = 6 (§IV, footnote 2)."""
    v_max, thr_max = th.max_throughput(6)
    assert 1.0 < v_max < 6.0
    assert th.throughput(6, v_max - 0.1) < thr_max and th.throughput(6, v_max + 0.1) < thr_max
    drop = 1 - th.throughput(6, 6.0) / thr_max
    assert 0.001 < drop < 0.003


def test_metrics_dicts_have_the_shared_names():
    """steady_state_metrics and input_queue_metrics return exactly the documented keys."""
    steady = th.steady_state_metrics(6, 1.0)
    assert set(steady) == {
        "link_utilization", "accept_fraction", "mean_delay", "deflection_fraction",
        "deflection_distance_hist", "throughput_per_node",
    }  # fmt: skip
    assert isinstance(steady["deflection_distance_hist"], list) and len(steady["deflection_distance_hist"]) == 6
    queue = th.input_queue_metrics(6, 0.8)
    assert set(queue) == {
        "mean_queueing_delay", "mean_transit_delay", "mean_delay", "link_utilization",
        "throughput_per_node", "m_bar", "v",
    }  # fmt: skip
    assert queue["throughput_per_node"] == 0.8


def test_bad_arguments_raise_precise_errors():
    """Out-of-range d, v, m or i raise ValueError naming the parameter."""
    with pytest.raises(ValueError, match="dimension d"):
        th.initial_distance(0)
    with pytest.raises(ValueError, match="offered load v"):
        th.fixed_point(6, 6.5)
    with pytest.raises(ValueError, match="link occupancy m"):
        th.accept_probability(1.2, 6, 1.0)
    with pytest.raises(ValueError, match="distance i"):
        th.deflect_probability(7, 0.5, 6, 1.0)
    with pytest.raises(ValueError, match="offered load v"):
        th.transient(6, [1.0, 7.0])
    with pytest.raises(ValueError, match="0 <= v <= 2"):
        th.t_infinity(6, 2.5)
