"""A run the stability monitor stops early: every rate is over the slots run, never the slots planned."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, run
from slotnet.orchestrator.cli import main
from slotnet.schemes import Setup
from slotnet.schemes.broadcast._inputs import BroadcastInputs
from slotnet.schemes.broadcast.periodic import PeriodicReporter
from slotnet.schemes.kit import BroadcastReporter, UnicastReporter, WindowBatches
from slotnet.schemes.kit._stats import ratio_ci95


def test_issue_example_throughput_is_over_the_slots_run(capsys):
    """deflection --lam 1.5 on the 6-cube stops near slot 2,100: throughput ~1.03 per node, not ~0.42."""
    code = main(["run", "deflection", "-t", "hypercube:6", "--lam", "1.5", "--slots", "5000", "--seed", "1", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0
    assert d["stability"]["stable"] is False and 1500 < d["slots_run"] < 5000
    m, n = d["metrics"], d["topology"]["n_nodes"]
    assert d["measured_slots"] == d["slots_run"]
    assert m["throughput_per_node"] == pytest.approx(m["delivered"] / (n * d["slots_run"]))
    assert 1.0 < m["throughput_per_node"] < 1.04  # the model's ceiling at d = 6 is 1.035
    assert m["link_utilization"] > 0.99
    assert "stopped after slot" in d["note"]


def test_rates_use_the_measured_window_after_warmup():
    """With a warm-up, the window is slots warmup .. last slot run; link use is sent / (links * window)."""
    r = run(RunSpec("deflection", "hypercube:4", load={"lam": 1.3}, slots=4000, warmup=30, seed=1,
                    max_backlog_per_node=40))
    assert r.slots_run < 4000 and r.measured_slots == r.slots_run - 30
    m = r.metrics
    assert m["throughput_per_node"] == pytest.approx(m["delivered"] / (16 * r.measured_slots))
    assert 0.9 < m["link_utilization"] <= 1.0


def test_stop_before_warmup_ends_says_nothing_was_measured(capsys):
    """A stop inside the warm-up gives None metrics and a note, in JSON and in the table, never zeros."""
    argv = ["run", "deflection", "-t", "hypercube:4", "--lam", "3", "--slots", "3000", "--warmup", "500",
            "--max-backlog", "20", "--seed", "1"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["slots_run"] < 500 and d["measured_slots"] == 0
    assert "nothing was measured" in d["note"]
    for key in ("link_utilization", "throughput_per_node", "mean_delay", "deflection_fraction", "mean_queue_per_node"):
        assert d["metrics"][key] is None, key
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "NOTE: nothing was measured" in out
    row = next(line for line in out.splitlines() if line.startswith("throughput_per_node"))
    assert row.split()[1] == "-"


def _setup(slots: int, warmup: int, params: object = None, d: int = 3) -> Setup:
    from slotnet.fabric import parse_topology

    return Setup(parse_topology(f"hypercube:{d}"), {} if params is None else params, {}, slots, warmup, 1)


def test_broadcast_reporters_measure_nothing_before_warmup():
    """The kit's broadcast and unicast reporters and the periodic one report None, not 0, for an empty window."""
    for rep in (BroadcastReporter(_setup(100, 50)), UnicastReporter(_setup(100, 50)),
                PeriodicReporter(_setup(100, 50, BroadcastInputs(0.1, 0.3, 3, variant="random", nulls="account")))):
        for slot in range(10):
            rep.end_slot(slot)
        m = rep.metrics()
        assert m["max_queue"] is None and m["mean_queue_per_node"] is None, type(rep).__name__
        if isinstance(rep, PeriodicReporter):
            assert m["link_utilization"] is None and m["null_fraction"] is None


def test_window_batches_equal_ratio_ci95_over_a_full_window():
    """Streaming batch sums give exactly ratio_ci95's interval when the run goes its full length."""
    import random

    rng = random.Random(3)
    for warmup, slots in ((0, 7), (5, 105), (100, 1100), (3, 26)):
        nums = [rng.randrange(50) for _ in range(slots - warmup)]
        dens = [rng.randrange(1, 60) for _ in range(slots - warmup)]
        wb = WindowBatches(warmup, slots)
        for i, (a, b) in enumerate(zip(nums, dens)):
            wb.add(warmup + i, a, b)
        assert wb.half_width() == ratio_ci95(nums, dens)


def test_series_kept_only_when_asked():
    """Per-slot values cost memory only with series=True; the metrics are the same either way."""
    spec = dict(scheme="bcast-simple", topology="hypercube:4", load={"rho": 0.2}, slots=300, warmup=30, seed=2)
    lean, full = run(RunSpec(**spec)), run(RunSpec(**spec, series=True))
    assert lean.series == [] and len(full.series) == 270
    assert lean.metrics == full.metrics
    rep = BroadcastReporter(_setup(1000, 0))
    for slot in range(1000):
        rep.end_slot(slot)
    assert rep.q_series == [] and rep.metrics()["mean_queue_per_node"] == 0.0
