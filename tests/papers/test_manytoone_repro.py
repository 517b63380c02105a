"""``slotnet repro mansour``: its cases, rows and options (the quick run itself is marked slow)."""

from __future__ import annotations

import pytest

from slotnet.schemes import EXPERIMENTS, SchemeError
from slotnet.schemes.manytoone import repro


def test_the_experiment_is_registered_and_refuses_sweeps():
    """``mansour`` is found by the registry; the sweep options of other papers are refused by name."""
    exp = EXPERIMENTS["mansour"]
    assert "rec_route" in exp.doc
    with pytest.raises(SchemeError, match="--sweep-d"):
        exp.run(lambda specs: [], seed=1, quick=True, sweep_d=3)


def test_quick_cases_grow_the_mesh_in_two_and_three_dimensions():
    """Quick: 16x16 and 32x32 (all-to-centre, hot spots) and 4^3, 8^3; full adds 64x64 and 16^3."""
    quick, full = repro._cases(True), repro._cases(False)
    assert quick == [("mesh:16x16", "all-to-one"), ("mesh:32x32", "all-to-one"), ("mesh:16x16", "hotspots:k=4"),
                     ("mesh:32x32", "hotspots:k=4"), ("mesh:4x4x4", "all-to-one"), ("mesh:8x8x8", "all-to-one")]
    assert set(quick) < set(full) and ("mesh:64x64", "all-to-one") in full and ("mesh:16x16x16", "all-to-one") in full


def test_rows_compare_rec_with_its_reference_exactly():
    """A run that reproduces the reference is 'within' at tolerance 0; one step off is OUTSIDE."""
    theory = {"dilation": 16, "congestion": 64.0, "lower_bound": 64, "completion_time": 2485, "max_queue": 14,
              "greedy_space_bound": 128}
    rec = {"completion_time": 2485, "ratio_dw_log": 9.1, "max_queue": 14, "_theory": theory, "_ok": True}
    greedy = {"completion_time": 128, "ratio_dw_log": 0.5, "max_queue": 16, "packets": 256, "_theory": theory,
              "_ok": True}
    rows = repro._growth_rows([("mesh:16x16", "all-to-one")], [(rec, greedy)])
    by = {r.metric: r for r in rows}
    assert by["T rec (theory: reference run)"].verdict() == "within"
    assert by["max_queue rec (theory: reference run)"].verdict() == "within"
    assert by["max_queue rec / log2 D"].sim == 14 / 4
    assert by["max_queue greedy / (packets / side)"].sim == 1.0
    rec["completion_time"] = 2486
    off = repro._growth_rows([("mesh:16x16", "all-to-one")], [(rec, greedy)])
    assert next(r for r in off if r.metric.startswith("T rec (")).verdict().startswith("OUTSIDE")


@pytest.mark.slow
def test_quick_repro_shows_the_shape_of_theorem_1_2():
    """Quick run: rec equals its reference; in 2-D, doubling the side does not raise T/(D + W log D) (by > 10%)
    and adds at most log-many packets to rec's buffer, while greedy's doubles on all-to-centre."""
    from slotnet.orchestrator.tools._repro import repro as run_repro

    rows, _ = run_repro("mansour", seed=1, quick=True, jobs=2)
    by = {(r.case, r.metric): r for r in rows}
    assert all(r.verdict() in ("within", "-") for r in rows)
    ratio = {case: r.sim for (case, metric), r in by.items() if metric == "T rec / (D + W log D)"}
    q = {case: r.sim for (case, metric), r in by.items() if metric.startswith("max_queue rec (")}
    g = {case: r.sim for (case, metric), r in by.items() if metric.startswith("max_queue greedy (")}
    for fam in ("all-to-one", "hotspots:k=4"):
        assert ratio[f"32x32 {fam}"] <= 1.1 * ratio[f"16x16 {fam}"]
        assert 0 <= q[f"32x32 {fam}"] - q[f"16x16 {fam}"] <= 4
    assert g["32x32 all-to-one"] == 2 * g["16x16 all-to-one"]
