"""Dynamic broadcasting (§6): the interval timetable, one interval's PMNB exactly once,
and the scheme's delay, stability and CLI."""

from __future__ import annotations

import io
import math
import random
from contextlib import redirect_stdout

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.orchestrator.cli import main
from slotnet.schemes.pmnb import _placement as PL
from slotnet.schemes.pmnb import theory as th
from slotnet.schemes.pmnb._dynamic_schedule import IntervalSchedule, saturation_load

SHAPES = [(2,), (5,), (6,), (2, 2), (3, 3), (4, 4), (5, 5), (2, 2, 2), (3, 3, 3)]


def test_timetable_by_hand_and_within_v_plus_mx() -> None:
    """2-D torus p=4, M=5: 12 prefix + 6 packing + 3 (1 + 2) rounds' steps; length <= V + MX for every M."""
    sched = IntervalSchedule.build((4, 4), True, 1, 8)  # t_p = 1/8, q = 8
    assert sched.rounds(5) == (1, 2) and sched.n_steps(5) == 12 + 6 + 9
    assert sched.length(5) == pytest.approx(12 / 8 + 3 + 9 / 4)
    assert sched.n_steps(0) == 12 and sched.length(0) == pytest.approx(1.5)
    for s in range(sched.n_steps(5) + 1):
        assert sched.step_containing(sched.offset(s)) == (s, True)
    for sides in SHAPES:
        for wrap in (True, False):
            g, d = (2 if wrap else 1), len(sides)
            q = math.lcm(8, g * d)
            sc = IntervalSchedule.build(sides, wrap, q // 8, q)
            v, x = th.reservation_length(sides, wrap, 0.125), th.unit_broadcast_length(sides, wrap)
            for m in range(math.prod(sides) + 1):
                assert sc.length(m) <= v + m * x + 1e-12, (sides, wrap, m)


def test_one_interval_delivers_every_packet_to_every_node_exactly_once() -> None:
    """Theorem 6's PMNB (prefix on P^c, packing, rounds) on 1-3-D tori and arrays, all placements, eager and lazy."""
    for sides in SHAPES:
        n = math.prod(sides)
        for wrap in (True, False):
            for m in sorted({0, 1, 2, n // 3, n - 1, n}):
                for kind in ("random", "corner", "spread"):
                    ids = PL.place(kind, sides, m, random.Random(n + m))
                    eager = sim = None
                    for lazy in (False, True):
                        sim = _interval(ids, sides, wrap, lazy)
                        assert sim.link_conflicts == 0 and sim.duplicates == 0
                        for v in range(n):
                            assert sorted(sim.receptions[v]) == sorted((u, 0) for u in ids if u != v), (sides, wrap, m, v)
                        if eager is None:
                            eager = sim
                    assert sim is not None and eager is not None and sim.messages == eager.messages


def _interval(ids, sides, wrap, lazy):
    from slotnet.schemes.pmnb._dynamic_interval import simulate_interval

    return simulate_interval(ids, sides, wrap, lazy=lazy)


def test_one_packet_costs_its_packing_hops_and_two_halves_to_every_node() -> None:
    """4x4 torus, node (3, 3) alone: each of d = 2 classes is packed 3 + 3 hops to (0, 0), then both
    halves of it reach the N - 1 others: 2 x 6 + 2 x 2 x 15 messages beyond the (value-blind) prefix."""
    from slotnet.schemes.pmnb._dynamic_interval import simulate_interval

    quiet = simulate_interval([], (4, 4), True)
    one = simulate_interval([15], (4, 4), True)
    assert one.messages - quiet.messages == 2 * 6 + 2 * 2 * 15
    array = simulate_interval([15], (4, 4), False)  # whole mini-packets, each crosses N - 1 links
    assert array.messages - simulate_interval([], (4, 4), False).messages == 2 * 6 + 2 * 15


@pytest.mark.parametrize("topology,frac", [("torus:6x6", 0.3), ("torus:6x6", 0.8), ("mesh:5x5", 0.6), ("mesh:3x3x3", 0.5)])
def test_stable_below_14_with_mean_delay_below_11(topology: str, frac: float) -> None:
    """Below the limit (14) the run is stable, exactly once, and its mean delay is below Theorem 7's bound (11)."""
    kind, _, s = topology.partition(":")
    sides, wrap = tuple(int(x) for x in s.split("x")), kind == "torus"
    rho = frac * th.stability_limit(sides, wrap, 0.125)
    q = math.lcm(8, (2 if wrap else 1) * len(sides))
    r = run(RunSpec("dynamic-broadcast", topology, load={"rho": rho}, slots=1300 * q, warmup=100 * q, seed=5))
    assert r.invariants["ok"], r.invariants
    assert r.metrics["stable"] and r.theory is not None and r.theory["stable"]
    assert r.metrics["broadcasts_measured"] > 50
    assert r.metrics["mean_delay"] <= th.delay_bound(rho, sides, wrap, 0.125) == r.theory["mean_delay"]
    assert r.metrics["mean_delay"] >= r.theory["mean_delay_lower_bound"]


def test_reported_unstable_past_saturation() -> None:
    """Past the scheme's saturation load (above (14)) the backlog grows and the run is reported unstable."""
    sat = saturation_load((4, 4), True, 0.125)
    assert sat > th.stability_limit((4, 4), True, 0.125)
    r = run(RunSpec("dynamic-broadcast", "torus:4x4", load={"rho": 1.3 * sat}, slots=40_000, warmup=800, seed=2,
                    max_backlog_per_node=20))
    assert r.metrics["stable"] is False and r.stability["stable"] is False
    assert r.theory is not None and r.theory["stable"] is False and r.theory["mean_delay"] == math.inf
    assert r.invariants["ok"], r.invariants


def test_rho_and_lam_are_the_same_load() -> None:
    """--lam gives rho by (12); exactly one of the two is required."""
    prep = RunSpec("dynamic-broadcast", "mesh:4x4", load={"lam": 0.05}).prepare()
    assert prep.node_params["rho"] == pytest.approx(0.05 * 15 / 2)
    assert prep.quantum == 8 and prep.node_params["tp_ticks"] == 1
    for load in ({}, {"rho": 0.2, "lam": 0.01}):
        with pytest.raises(SpecError, match="exactly one"):
            RunSpec("dynamic-broadcast", "mesh:4x4", load=load).prepare()
    with pytest.raises(SpecError, match="equal sides"):
        RunSpec("dynamic-broadcast", "torus:4x6", load={"rho": 0.1}).prepare()


def test_cli_run_dynamic_broadcast() -> None:
    """`slotnet run dynamic-broadcast -t torus:8x8 --rho 0.3 --slots 3000` runs and prints the delay beside (11)."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["run", "dynamic-broadcast", "-t", "torus:8x8", "--rho", "0.3", "--slots", "3000", "--no-progress"])
    out = buf.getvalue()
    assert rc == 0
    assert "mean_delay" in out and "invariants: ok" in out
    assert f"{th.delay_bound(0.3, (8, 8), True, 0.125):.4f}" in out
