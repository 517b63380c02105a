"""bcast-periodic: the periodic schemes of Stamoulis & Tsitsiklis §4.2 as local node rules."""

from __future__ import annotations

import pytest

from slotnet import RunSpec, run
from slotnet.schemes.broadcast import theory
from slotnet.schemes.broadcast.periodic import SCHEME, period_of, plan
from slotnet.schemes.broadcast.trees import balanced_sends, dtree_sends


def _run(d: int, rho: float, slots: int, warmup: int, seed: int = 1, **params: str):
    return run(RunSpec("bcast-periodic", f"hypercube:{d}", params=params, load={"rho": rho},
                       slots=slots, warmup=warmup, seed=seed, max_backlog_per_node=200.0))


def test_variants_are_the_theory_names():
    """The variant parameter accepts exactly theory.PERIODIC_VARIANTS, default random."""
    p = SCHEME.param("variant")
    assert p.choices == theory.PERIODIC_VARIANTS and p.default == "random"
    assert SCHEME.param("nulls").default == "account"


@pytest.mark.parametrize("variant", ["random", "mnb"])
def test_node_plans_are_exactly_the_schedule(variant):
    """At every node, the plans of all (origin, tree) packets tile the period's schedule once."""
    d = 4
    n, period = 1 << d, period_of(variant, d)
    trees = range(d) if variant != "mnb" else (0,)
    for x in (0, 5, 11):
        planned = {}
        for origin in range(n):
            for j in trees:
                for s, k in plan(variant, x ^ origin, j, d):
                    assert (s, k) not in planned
                    planned[(s, k)] = (origin, j)
        if variant == "mnb":
            sched = {(s, k): (o, 0) for s in range(period) for o, k in balanced_sends(x, s, d)}
        else:
            sched = {(s, k): oj for s in range(period) for k, oj in enumerate(dtree_sends(x, s, d))}
            assert len(sched) == period * d  # every arc busy in every slot of the period
        assert planned == sched


@pytest.mark.parametrize("variant", ["random", "simultaneous", "mnb"])
def test_sent_nulls_fill_the_schedule_and_change_nothing(variant):
    """With nulls=send every reserved arc-slot carries one unit, checked by the fabric, same metrics."""
    d, slots = 4, 600
    sent = _run(d, 0.6, slots, 100, variant=variant, nulls="send")
    acct = _run(d, 0.6, slots, 100, variant=variant, nulls="account")
    assert sent.invariants["ok"] and acct.invariants["ok"]
    n = 1 << d
    if variant == "mnb":  # per period n trees of n - 1 arcs, the rest of the arc-slots idle
        reserved = n * sum(len(balanced_sends(0, s, d)) for s in range(slots))
    else:  # every arc in every slot
        reserved = slots * n * d
    assert sent.performance["messages"] == reserved
    assert acct.performance["messages"] < reserved
    for key in ("mean_broadcast_delay", "mean_broadcast_delay_period_end", "mean_queue_per_node",
                "broadcasts_measured", "link_utilization", "null_fraction"):
        assert sent.metrics[key] == pytest.approx(acct.metrics[key], rel=1e-12)  # summation order only


@pytest.mark.slow
@pytest.mark.parametrize(("rho", "slots"), [(0.3, 8000), (0.7, 12000)])
def test_random_variant_period_end_delay_is_eq7(rho, slots):
    """Randomised trees (§4.2.2): period-end D within its 95% CI of Δ(3/2 + ρ/(2(1−ρ))), Δ = 2^d − 1."""
    d = 5
    r = _run(d, rho, slots, 1000)
    m = r.metrics
    assert r.invariants["ok"] and r.invariants["link_capacity"]["ok"]
    assert r.invariants["exactly_once"]["duplicate_receptions"] == 0
    assert m["stable"] and r.slots_run == slots
    expected = theory.periodic_random_delay(d, rho)
    assert expected == pytest.approx(((1 << d) - 1) * (1.5 + rho / (2 * (1 - rho))))
    assert r.theory["mean_broadcast_delay"] == pytest.approx(expected)
    assert abs(m["mean_broadcast_delay_period_end"] - expected) <= m["mean_broadcast_delay_period_end_ci95"]
    # the last arc of every tree is crossed in the period's last slot: both conventions agree
    assert m["mean_broadcast_delay"] <= m["mean_broadcast_delay_period_end"] + 1e-9
    assert m["mean_broadcast_delay"] == pytest.approx(m["mean_broadcast_delay_period_end"])
    assert abs(m["link_utilization"] - rho) < 0.05
    assert m["null_fraction"] == pytest.approx(1 - m["link_utilization"])


@pytest.mark.slow
def test_mnb_variant_period_end_delay_is_eq7():
    """§4.2.1 on the balanced tree: period-end D within its CI of eq. (7) with Δ = ⌈(2^d−1)/d⌉."""
    d, rho = 5, 0.6
    r = _run(d, rho, 5000, 500, variant="mnb")
    m = r.metrics
    assert r.invariants["ok"] and m["stable"]
    expected = theory.periodic_mnb_delay(d, rho)
    assert abs(m["mean_broadcast_delay_period_end"] - expected) <= m["mean_broadcast_delay_period_end_ci95"]
    assert m["mean_broadcast_delay"] <= m["mean_broadcast_delay_period_end"] + 1e-9


def test_simultaneous_variant_light_traffic():
    """d simultaneous broadcasts (§4.2.2, M/D/d): at light load D is within its CI of (3/2)(2^d − 1)."""
    d, rho = 5, 0.1
    r = _run(d, rho, 8000, 500, variant="simultaneous")
    m = r.metrics
    assert r.invariants["ok"] and m["stable"]
    light = r.theory["mean_broadcast_delay_light_traffic"]
    assert light == 1.5 * ((1 << d) - 1)
    assert abs(m["mean_broadcast_delay_period_end"] - light) <= m["mean_broadcast_delay_period_end_ci95"]


@pytest.mark.slow
def test_stable_below_one_unstable_above():
    """ρ = 0.9 runs to the end stable; ρ = 1.3 is stopped early and reported unstable."""
    below = _run(4, 0.9, 6000, 2000)
    assert below.metrics["stable"] and below.slots_run == 6000 and below.invariants["ok"]
    above = _run(4, 1.3, 6000, 500)
    assert not above.metrics["stable"] and not above.theory["stable"]
    assert above.stability["stopped_at_slot"] is not None and above.slots_run < 6000
    assert above.invariants["ok"]  # nothing lost or duplicated when the run is cut short


def test_period_end_metric_independent_of_task_order(shuffled_scheduling):
    """Shuffling Trio's task order changes neither the period-end D nor any count or invariant."""
    results = []
    for shuffle in (1, 2):
        shuffled_scheduling(shuffle)
        r = _run(4, 0.6, 1500, 100, seed=3, variant="simultaneous")
        results.append(r)
    a, b = (r.metrics for r in results)
    for key in ("mean_broadcast_delay_period_end", "mean_broadcast_delay_period_end_ci95", "broadcasts_measured",
                "incomplete_at_end", "max_queue", "link_utilization", "null_fraction"):
        assert a[key] == b[key]
    assert results[0].invariants == results[1].invariants
