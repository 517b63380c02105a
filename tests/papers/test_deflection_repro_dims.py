"""``slotnet repro greenberg-hajek --dims``: the mean delay at v = 1 against d beside the §III model."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.errors import SchemeError
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.tools import _repro
from slotnet.schemes import Row
from slotnet.schemes.deflection import repro as gh
from slotnet.schemes.deflection import theory
from slotnet.schemes.deflection.paper import TABLE_II, TABLE_III


def _err(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def test_parse_dims_reads_ranges_singles_and_lists():
    """A-B, D and comma lists (items may be ranges) give the dimensions in the order written."""
    assert gh.parse_dims("2-16") == list(range(2, 17))
    assert gh.parse_dims("7") == [7]
    assert gh.parse_dims(" 3 , 1-2,9-9 ") == [3, 1, 2, 9]
    assert gh.parse_dims(5) == [5]
    assert gh.parse_dims([4, 2]) == [4, 2]


@pytest.mark.parametrize("spec, fragment", [
    ("0-3", "cube dimension 0 is below 1"),
    ("5-3", "range 5-3 is reversed (write 3-5)"),
    ("x", "'x' in 'x' is not that"),
    ("2.5", "'2.5' in '2.5' is not that"),
    ("-1", "'-1' in '-1' is not that"),
    ("2-", "'2-' in '2-' is not that"),
    ("", "is not that"),
    ("2-4,3", "names d = 3 more than once"),
    ([], "names no cube dimension"),
    ([0], "cube dimension 0 is below 1"),
    ([True], "integer cube dimensions"),
    ([2.0], "integer cube dimensions"),
])
def test_parse_dims_refuses_bad_specs_precisely(spec, fragment):
    """Each bad --dims names what is wrong with it."""
    with pytest.raises(SchemeError) as info:
        gh.parse_dims(spec)
    assert fragment in str(info.value)


@pytest.mark.parametrize("value, fragment", [
    ("0-3", "cube dimension 0 is below 1"),
    ("9-4", "range 9-4 is reversed"),
    ("two", "is not that"),
    ("3,3", "more than once"),
])
def test_cli_bad_dims_exit_2_with_one_line(capsys, value, fragment):
    """A bad --dims exits with status 2 and one line on stderr, before any run."""
    code, err = _err(capsys, "repro", "greenberg-hajek", f"--dims={value}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("paper", ["stamoulis", "varvarigos", "mansour", "yeh"])
def test_dims_is_refused_by_papers_that_do_not_take_it(capsys, paper):
    """Papers without a --dims column refuse it rather than ignore it."""
    code, err = _err(capsys, "repro", paper, "--dims", "3")
    assert code == 2 and f"repro {paper} takes no --dims" in err and len(err.strip().splitlines()) == 1


def test_slot_plan_follows_its_rule():
    """W = max(50, ceil 6T), M = max(ceil(1e6/(N a)), 30 ceil T), cost = S (SLOT_S + HOP_S N a T) + NODE_S N."""
    for d in range(1, 17):
        m = theory.steady_state_metrics(d, 1.0)
        t, per_slot = float(m["mean_delay"]), float(m["throughput_per_node"]) * 2**d  # type: ignore[arg-type]
        p = gh.slot_plan(d)
        assert p.model_delay == t and p.warmup == max(50, math.ceil(6 * t))
        assert p.measured == max(math.ceil(1e6 / per_slot), 30 * math.ceil(t))
        assert p.measured * per_slot >= 1e6 and p.measured >= 30 * t  # 10^6 delivered, batches of 3 delays
        assert p.est_seconds == pytest.approx((p.warmup + p.measured) * (gh.SLOT_S + gh.HOP_S * per_slot * t)
                                              + gh.NODE_S * 2**d)
        q = gh.slot_plan(d, quick=True)
        assert q.warmup == max(20, math.ceil(3 * t)) and q.measured == max(math.ceil(2e4 / per_slot), 20 * math.ceil(t))
    assert (gh.slot_plan(16).warmup, gh.slot_plan(16).measured) == (56, 300)


def _brute_makespan(seconds: list[float], jobs: int) -> float:
    """Slot-free event simulation: each run goes, in order, to the worker free earliest (lowest index on ties)."""
    free = [0.0] * jobs
    for s in seconds:
        w = min(range(jobs), key=lambda i: (free[i], i))
        free[w] += s
    return max(free)


def test_makespan_matches_a_brute_force_schedule():
    """The projected wall time is the list schedule of the runs in submission order."""
    for seconds in itertools.product([1.0, 2.0, 5.0], repeat=4):
        for jobs in (1, 2, 3, 5):
            assert gh.makespan(list(seconds), jobs) == _brute_makespan(list(seconds), jobs)


def test_full_column_is_projected_under_an_hour_on_two_jobs():
    """d = 2..16 run largest first on 2 jobs is planned inside the issue's hour, d = 16 the longest point."""
    plans = sorted((gh.slot_plan(d) for d in range(2, 17)), key=lambda p: -p.est_seconds)
    assert plans[0].d == 16
    assert gh.makespan([p.est_seconds for p in plans], 2) < 3600 * 0.75


def test_paper_delay_agreement_is_read_off_tables_ii_and_iii():
    """The verdict's allowance is the paper's largest simulated-vs-modelled delay gap (d = 6)."""
    assert max(abs(TABLE_II[v][2] - TABLE_III[v][2]) for v in TABLE_II) == gh.PAPER_DELAY_AGREEMENT
    assert round(gh.PAPER_DELAY_AGREEMENT, 4) == 0.0724


def test_runner_reports_wall_seconds_and_yields_each_run_once():
    """_run_metrics adds _wall_s; as_completed yields every request's index exactly once, in any order."""
    req = [dict(scheme="deflection", topology=f"hypercube:{d}", load={"offered": 1.0}, slots=20, warmup=5, seed=1)
           for d in (2, 3, 4)]
    got = dict(_repro._Runner(2).as_completed(req))
    assert sorted(got) == [0, 1, 2]
    assert all(r["_wall_s"] > 0 and r["_ok"] for r in got.values())
    direct = _repro._Runner(1)(req)
    assert [r["mean_delay"] for r in direct] == [got[i]["mean_delay"] for i in range(3)]


def test_tiny_quick_column_rows():
    """--dims 2-4 --quick: a plan first, then per d the run's delay beside T(m̄, d, 1) exactly, delivered, wall_s."""
    batches: list[list[Row]] = []
    rows, _ = _repro.repro("greenberg-hajek", seed=1, jobs=2, quick=True, dims="2-4", on_rows=batches.append)
    plan, *points, total = batches
    assert [r.case for r in plan] == [f"d={d}, {gh.slot_plan(d, quick=True).warmup}+"
                                      f"{gh.slot_plan(d, quick=True).measured} slots" for d in (2, 3, 4)] + \
        ["all 3 points, 2 jobs"]
    assert all(r.sim is None and r.metric == "wall_s" and r.theory > 0 for r in plan)  # type: ignore[operator]
    assert len(points) == 3 and [r.metric for r in total] == ["wall_s"] and total[0].sim > 0  # type: ignore[operator]
    by_d = {int(b[0].case.split(",")[0][2:]): {r.metric: r for r in b} for b in points}
    assert sorted(by_d) == [2, 3, 4]
    for d, got in by_d.items():
        p = gh.slot_plan(d, quick=True)
        delay = got["mean_delay"]
        assert delay.theory == theory.steady_state_metrics(d, 1.0)["mean_delay"] and delay.paper is None
        direct = run(RunSpec("deflection", f"hypercube:{d}", load={"offered": 1.0}, slots=p.warmup + p.measured,
                             warmup=p.warmup, seed=1))
        assert delay.sim == direct.metrics["mean_delay"] and delay.ci95 == direct.metrics["mean_delay_ci95"]
        assert got["delivered"].sim == direct.metrics["delivered"] >= 0.8 * 2e4
        assert got["wall_s"].sim > 0 and got["wall_s"].theory == p.est_seconds  # type: ignore[operator]
        assert delay.verdict() == Row.WITHIN  # tiny cubes: within the noise plus the paper's own agreement
    assert [r.case for r in rows if r.metric == "mean_delay"] == [by_d[d]["mean_delay"].case for d in (2, 3, 4)]


def test_without_dims_the_tables_run_as_before():
    """No --dims: the same d = 6 runs (Tables II and I) and Table I-III rows, then one run of Table VI's length at
    v = 1 and its row beside Table II's v = 1 delay."""
    seen: list[list[dict[str, Any]]] = []

    def fake(specs):
        seen.append(list(specs))
        return [{"_theory": {"series": [{}] * 12}, "_series": [{}] * 12, "link_utilization": 0.5,
                 "accept_fraction": 0.9, "mean_delay": 4.0, "deflection_fraction": 0.1} for _ in specs]

    rows = gh.greenberg_hajek(fake, seed=3, quick=False)
    loads = sorted(TABLE_II)
    assert seen == [[dict(scheme="deflection", topology="hypercube:6", load={"offered": v}, slots=1100, warmup=100,
                          seed=3) for v in loads]
                    + [dict(scheme="deflection", topology="hypercube:6", params={"schedule": "6:1,0"}, slots=12, seed=3)]
                    + [dict(scheme="deflection", topology="hypercube:6", load={"offered": 1.0}, slots=20_000,
                            warmup=10_000, seed=3)]]
    assert {r.experiment for r in rows} == {"Table II (sim)", "Table III (model)", "Table I (transient)", gh.TABLE_II_VS_VI}
    assert len(rows) == 2 * 4 * len(loads) + 4 * 10 + 1


def test_hours_cut_the_measured_window_to_the_budget_and_never_the_warm_up():
    """--hours H: M = min(plan, floor((H·3600 - NODE_S·N/K) / per_slot) - W), W unchanged; the estimate fits in H."""
    for d in (12, 16, 20):
        for shards in (1, 2):
            full = gh.slot_plan(d, quick=True, shards=shards)
            per_slot = gh.SLOT_S + gh.HOP_S * full.hops_per_slot / shards
            for hours in (0.5, 1.0, 2.0, 100.0):
                fixed = gh.NODE_S * 2**d / shards
                fits = math.floor((hours * 3600 - fixed) / per_slot) - full.warmup
                if fits < gh.MIN_MEASURED:
                    with pytest.raises(SchemeError, match=f"--hours {hours:g}: the d = {d} point needs about"):
                        gh.slot_plan(d, quick=True, hours=hours, shards=shards)
                    continue
                p = gh.slot_plan(d, quick=True, hours=hours, shards=shards)
                assert p.warmup == full.warmup and p.measured == min(full.measured, fits)
                assert p.est_seconds <= hours * 3600 + 1e-9
                assert (p.measured < full.measured) == (fits < full.measured)
    assert gh.slot_plan(12, quick=True, hours=100.0) == gh.slot_plan(12, quick=True)  # a budget that is not needed


def test_shards_divide_the_hop_and_node_terms_of_the_cost():
    one, two = gh.slot_plan(18), gh.slot_plan(18, shards=2)
    assert (one.warmup, one.measured) == (two.warmup, two.measured)
    slots = one.warmup + one.measured
    assert two.est_seconds == pytest.approx(slots * (gh.SLOT_S + gh.HOP_S * one.hops_per_slot / 2) + gh.NODE_S * 2**18 / 2)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"hours": 0}, "--hours must be a positive number, got 0"),
    ({"hours": -1.0}, "--hours must be a positive number"),
    ({"hours": float("nan")}, "--hours must be a positive number, got nan"),
    ({"hours": float("inf")}, "--hours must be a positive number, got inf"),
    ({"shards": 0}, "--shards must be an integer >= 1, got 0"),
    ({"shards": True}, "--shards must be an integer >= 1, got True"),
    ({"shards": 1.5}, "--shards must be an integer >= 1"),
])
def test_bad_hours_and_shards_are_refused(kwargs, fragment):
    with pytest.raises(SchemeError, match=fragment.replace("(", r"\(")):
        gh.slot_plan(8, **kwargs)


@pytest.mark.parametrize("argv, fragment", [
    (["--dims", "8", "--hours", "0"], "--hours must be a positive number"),
    (["--dims", "8", "--hours", "nan"], "--hours must be a positive number, got nan"),
    (["--dims", "20", "--hours", "0.01"], "--hours 0.01: the d = 20 point needs about"),
    (["--dims", "8", "--shards", "0"], "--shards must be an integer >= 1, got 0"),
    (["--hours", "1"], "--hours and --shards are for the --dims points"),
    (["--shards", "2"], "--hours and --shards are for the --dims points"),
])
def test_cli_bad_hours_or_shards_exit_2_with_one_line(capsys, argv, fragment):
    code, err = _err(capsys, "repro", "greenberg-hajek", "--quick", *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err and "Traceback" not in err


@pytest.mark.parametrize("option", [["--hours", "1"], ["--shards", "2"]])
def test_hours_and_shards_are_refused_by_papers_that_do_not_take_them(capsys, option):
    code, err = _err(capsys, "repro", "mansour", *option)
    assert code == 2 and f"repro mansour takes no {option[0]}" in err


def test_a_budgeted_sharded_point_runs_its_plan_over_shards_with_one_process_results():
    """--dims 4 --hours H --shards 2: the plan's cut window, run over 2 shards, gives one process's figures."""
    hours = (gh.slot_plan(4, quick=True).warmup + 40) * (gh.SLOT_S + gh.HOP_S * gh.slot_plan(4).hops_per_slot / 2) / 3600
    p = gh.slot_plan(4, quick=True, hours=hours, shards=2)
    assert gh.MIN_MEASURED <= p.measured < gh.slot_plan(4, quick=True).measured
    seen: list[dict[str, Any]] = []
    rows, _ = _repro.repro("greenberg-hajek", seed=1, jobs=1, quick=True, dims="4", hours=hours, shards=2,
                           on_run=lambda req, res, cached: seen.append(dict(req)))
    assert [(r["topology"], r["slots"], r["warmup"], r["shards"]) for r in seen] == [
        ("hypercube:4", p.warmup + p.measured, p.warmup, 2)]
    delay = next(r for r in rows if r.metric == "mean_delay")
    assert delay.case == f"d=4, {p.warmup}+{p.measured} slots"
    direct = run(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=p.warmup + p.measured,
                         warmup=p.warmup, seed=1))
    assert delay.sim == direct.metrics["mean_delay"] and delay.ci95 == direct.metrics["mean_delay_ci95"]
