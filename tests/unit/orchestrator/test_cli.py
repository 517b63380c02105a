"""Unit tests of the command line and the repro runner, called in-process.

* ``slotnet`` (``orchestrator/cli/``): each sub-command's options and defaults, its
  refusals (exact message and exit status), the dispatch of each command to its handler
  with the arguments it was given (the heavy work -- a run, an exploration, a
  reproduction -- replaced by a recording stand-in), the help-text helpers and
  ``slotnet schemes``.
* ``slotnet repro`` (``orchestrator/tools/_repro.py``): the runner that spreads an
  experiment's requests over workers, the refusal of options an experiment does not
  name, the rows' tables.
* ``orchestrator/tools/_paper_run.py``: the commands a report prints, the verdict counts.

Every test is fast (no network larger than a 4-node cube runs); they were written to
kill the mutants of these modules (``devtools/mutation/mutants.py``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from slotnet.errors import NodeFailure, SchemeError, SlotnetError, SpecError
from slotnet.fabric import FAULT_KINDS, FaultSchedule
from slotnet.orchestrator import cli
from slotnet.orchestrator.cli import _cmd_explore, _cmd_run, _cmd_schemes, _cmd_theory, _cmd_trace, _common, _help, _main, _parser, describe
from slotnet.orchestrator.engine._progress import Progress, RunsProgress
from slotnet.orchestrator.engine._spec import RunSpec, TraceSpec
from slotnet.orchestrator.tools import _paper_run, _repro
from slotnet.orchestrator.tools._report import CI_LEGEND, WIDTH, format_value, table
from slotnet.schemes import EXPERIMENTS, SCHEMES, Load, Row, Scheme
from slotnet.schemes._base import Param
from slotnet.schemes._verdict import Explanation

# --------------------------------------------------------------------------------------
# helpers


def _call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[Any, str, str]:
    """``slotnet ARGV`` in-process: (exit status, stdout, stderr)."""
    try:
        code: Any = cli.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _ns(argv: list[str]) -> dict[str, Any]:
    ns = vars(cli.build_parser().parse_args(argv))
    assert ns.pop("version") is None
    return ns


class _Recorder:
    """A stand-in that records its calls and returns ``value``."""

    def __init__(self, value: Any = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.value = value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.value() if callable(self.value) else self.value


class _Progress:
    """A RunsProgress that records what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def add(self, n: int) -> None:
        self.events.append(("add", n))

    def done(self) -> None:
        self.events.append(("done", None))

    def clear(self) -> None:
        self.events.append(("clear", None))

    def close(self) -> None:
        self.events.append(("close", None))


def _scheme(**kw: Any) -> Scheme:
    base: dict[str, Any] = dict(name="toy", summary="a ``toy`` scheme", source="Doe, §2", node=lambda ctx: None,
                                reporter=lambda setup: None, prepare=lambda t, p, ld: {})
    base.update(kw)
    return Scheme(**base)


# ======================================================================================
# orchestrator/tools/_paper_run.py


def test_paper_options_are_the_four_generic_ones_in_order():
    assert _paper_run.PAPER_OPTIONS == ("sweep_d", "sweep_rho", "sweep_only", "dims")


def test_paper_run_defaults_are_empty_and_fresh():
    a = _paper_run.PaperRun("p", 1, False)
    b = _paper_run.PaperRun("p", 1, False)
    assert (a.options, a.rows, a.wall_s, a.error, a.figures, a.runs) == ({}, [], 0.0, "", [], [])
    a.options["x"] = 1
    a.rows.append(1)
    a.figures.append(1)
    a.runs.append(({}, 1.0, True))
    assert (b.options, b.rows, b.figures, b.runs) == ({}, [], [], [])
    assert (a.cached, b.cached) == (1, 0)


def test_paper_run_label_command_and_cached():
    plain = _paper_run.PaperRun("stamoulis", 3, True)
    assert plain.label == "stamoulis"
    assert plain.command == "slotnet repro stamoulis --quick --seed 3"
    opts = _paper_run.PaperRun("stamoulis", 3, True, {"sweep_d": 6, "sweep_rho": [0.1, 0.25]})
    assert opts.label == "stamoulis --sweep-d 6 --sweep-rho 0.1,0.25"
    assert opts.command == "slotnet repro stamoulis --quick --seed 3 --sweep-d 6 --sweep-rho 0.1,0.25"
    # the seed's digits inside an option do not cut the label short
    opts13 = _paper_run.PaperRun("yeh", 1, False, {"dims": "1-13"})
    assert opts13.label == "yeh --dims 1-13"
    opts13.runs += [({}, 1.0, True), ({}, 2.0, False), ({}, 3.0, True)]
    assert opts13.cached == 2


def test_repro_command_spells_every_kind_of_option():
    cmd = _paper_run.repro_command
    assert cmd("p", 7, False, {}) == "slotnet repro p --seed 7"
    assert cmd("p", 7, True, {}) == "slotnet repro p --quick --seed 7"
    # options in PAPER_OPTIONS order whatever the mapping's; None and False left out; others ignored
    options = {"dims": "4-10", "sweep_only": True, "sweep_rho": (0.5, 1.0, 2), "sweep_d": 6, "hours": 2.0}
    assert cmd("p", 1, False, options) == "slotnet repro p --seed 1 --sweep-d 6 --sweep-rho 0.5,1,2 --sweep-only --dims 4-10"
    assert cmd("p", 1, False, {"sweep_d": None, "sweep_only": False, "dims": 1}) == "slotnet repro p --seed 1 --dims 1"
    assert cmd("p", 1, False, {"sweep_rho": [0.125]}) == "slotnet repro p --seed 1 --sweep-rho 0.125"
    assert cmd("a b", 1, False, {"dims": "x y"}) == "slotnet repro 'a b' --seed 1 --dims 'x y'"


def test_run_command_defaults_and_every_field():
    rc = _paper_run.run_command
    assert rc({"scheme": "s", "topology": "hypercube:2"}) == \
        "slotnet run s --topology hypercube:2 --slots 1000 --warmup 0 --seed 0"
    full = {"scheme": "deflection", "topology": "torus:4x4", "params": {"a": 1, "b": "x y"},
            "load": {"offered": 0.1, "rho": 2.0, "lam": 3}, "slots": 50, "warmup": 5, "seed": 9,
            "faults": ["crash@3:1", "loss=0.5"], "max_backlog_per_node": 2.5, "series": True, "shards": 3}
    assert rc(full) == ("slotnet run deflection --topology torus:4x4 --param a=1 --param 'b=x y' --offered 0.1 --rho 2 "
                        "--lam 3 --slots 50 --warmup 5 --seed 9 --fault crash@3:1 --fault loss=0.5 --max-backlog 2.5 "
                        "--series --shards 3")
    # one fault as a string, a FaultSchedule, no series, one shard, a backlog of 0
    assert rc({"scheme": "s", "topology": "t", "faults": "crash@1:0", "series": False, "shards": 1,
               "max_backlog_per_node": 0}) == \
        "slotnet run s --topology t --slots 1000 --warmup 0 --seed 0 --fault crash@1:0 --max-backlog 0"
    sched = FaultSchedule.parse(["crash@2:1"])
    assert rc({"scheme": "s", "topology": "t", "faults": sched}).endswith(
        " --fault " + shlex.quote(sched.to_list()[0]))
    assert rc({"scheme": "s", "topology": "t", "load": {"offered": 1 / 3}}) == \
        f"slotnet run s --topology t --offered {1 / 3!r} --slots 1000 --warmup 0 --seed 0"


def test_verdicts_and_verdict_words():
    assert _paper_run.VERDICTS == ("within", "known", "OUTSIDE", "not run", "-")
    within = Row("E", "c", "m", 4.0, 4.0, 0.1, 4.0)
    known = Row("E", "c", "m", 4.0, 9.0, 0.1, 4.0, note=Explanation("slip", corrected=9.0))
    outside = Row("E", "c", "m", 4.0, 9.0, 0.1, 4.0)
    not_run = Row("E", "c", "m", 4.0, None, None, None, note="too big")
    unjudged = Row("E", "c", "m", None, None, None, None)
    words = [_paper_run.verdict_word(r) for r in (within, known, outside, not_run, unjudged)]
    assert words == ["within", "known", "OUTSIDE", "not run", "-"]
    odd = SimpleNamespace(verdict=lambda: "knownish")
    assert _paper_run.verdict_word(odd) == "knownish"  # type: ignore[arg-type]
    counts = _paper_run.verdict_counts([within, within, outside, not_run])
    assert counts == {"within": 2, "known": 0, "OUTSIDE": 1, "not run": 1, "-": 0}
    assert list(counts) == list(_paper_run.VERDICTS)
    assert _paper_run.verdict_counts([odd, odd]) == {"within": 0, "known": 0, "OUTSIDE": 0, "not run": 0, "-": 0,
                                                     "knownish": 2}  # type: ignore[list-item]


# ======================================================================================
# orchestrator/tools/_repro.py

#: a tiny request: 4 nodes, 6 slots
_REQ = {"scheme": "deflection", "topology": "hypercube:2", "load": {"offered": 0.5}, "slots": 6, "warmup": 1}


def test_partial_repro_keeps_its_rows_and_message():
    rows = [Row("E", "c", "m", 1.0, 1.0, 0.1, 1.0)]
    exc = _repro.PartialRepro("plot failed", rows)
    assert isinstance(exc, SlotnetError)
    assert str(exc) == "plot failed"
    assert exc.rows is rows


def test_papers_are_the_experiments_sorted():
    assert _repro.papers() == sorted(EXPERIMENTS)
    assert len(_repro.papers()) >= 2


def test_run_metrics_adds_the_private_keys(monkeypatch):
    fake = SimpleNamespace(metrics={"mean_delay": 2.0}, theory=None, series={"x": [1]}, invariants={"ok": False})
    seen: list[RunSpec] = []
    monkeypatch.setattr(_repro, "run", lambda spec: seen.append(spec) or fake)
    out = _repro._run_metrics(_REQ)
    assert seen == [RunSpec(**_REQ)]
    wall = out.pop("_wall_s")
    assert out == {"mean_delay": 2.0, "_theory": {}, "_series": {"x": [1]}, "_ok": False}
    assert 0 <= wall < 60
    assert fake.metrics == {"mean_delay": 2.0}  # a copy is extended, not the result's own
    fake.theory = {"mean_delay": 1.5}
    fake.invariants = {"ok": True}
    out = _repro._run_metrics(_REQ)
    assert (out["_theory"], out["_ok"]) == ({"mean_delay": 1.5}, True)


def test_runner_publish_clears_the_progress_then_prints():
    got: list[list[Row]] = []
    progress = _Progress()
    runner = _repro._Runner(1, progress, lambda rows: (progress.events.append(("rows", len(rows))), got.append(rows)))
    assert (runner.jobs, runner.progress, runner.cache, runner.on_run, runner.published) == (1, progress, None, None, [])
    row = Row("E", "c", "m", 1.0, 1.0, 0.1, 1.0)
    runner.publish([])
    assert progress.events == [] and got == []
    runner.publish([row])
    runner.publish([row, row])
    assert progress.events == [("clear", None), ("rows", 1), ("clear", None), ("rows", 2)]
    assert runner.published == [row, row, row]
    quiet = _repro._Runner(1)  # no printer, no progress: kept all the same
    quiet.publish([row])
    assert quiet.published == [row]
    no_bar = _repro._Runner(1, None, got.append)
    no_bar.publish([row])
    assert got[-1] == [row]


class _Cache:
    def __init__(self, kept: dict[int, dict[str, Any]]) -> None:
        self.kept = kept
        self.put_calls: list[tuple[int, dict[str, Any]]] = []

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        return self.kept.get(request["seed"])

    def put(self, request: dict[str, Any], result: dict[str, Any]) -> None:
        self.put_calls.append((request["seed"], result))


def _no_pool(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("one job runs in this process, with no worker pool")


def test_runner_answers_from_the_cache_and_runs_the_rest_in_order(monkeypatch):
    monkeypatch.setattr(_repro, "_run_metrics", lambda r: {"ran": r["seed"]})
    monkeypatch.setattr(_repro, "ProcessPoolExecutor", _no_pool)
    requests = [dict(_REQ, seed=s) for s in range(4)]
    cache = _Cache({1: {"kept": 1}, 3: {"kept": 3}})
    progress = _Progress()
    runs: list[tuple[int, Any, bool]] = []
    runner = _repro._Runner(1, progress, None, cache, lambda req, res, hit: runs.append((req["seed"], res, hit)))
    it = runner.as_completed(requests)
    assert progress.events == [("add", 2)]  # checked and counted before any run; the kept ones not counted
    assert list(it) == [(1, {"kept": 1}), (3, {"kept": 3}), (0, {"ran": 0}), (2, {"ran": 2})]
    assert runs == [(1, {"kept": 1}, True), (3, {"kept": 3}, True), (0, {"ran": 0}, False), (2, {"ran": 2}, False)]
    assert cache.put_calls == [(0, {"ran": 0}), (2, {"ran": 2})]
    assert progress.events == [("add", 2), ("done", None), ("done", None)]
    # __call__: the results in the requests' order
    assert runner(requests) == [{"ran": 0}, {"kept": 1}, {"ran": 2}, {"kept": 3}]
    assert _repro._Runner(1)(requests) == [{"ran": s} for s in range(4)]


def test_runner_checks_every_request_before_running_any(monkeypatch):
    ran: list[int] = []
    monkeypatch.setattr(_repro, "_run_metrics", lambda r: ran.append(r["seed"]) or {})
    monkeypatch.setattr(_repro, "ProcessPoolExecutor", _no_pool)
    bad = dict(_REQ, seed=1, topology="hypercube:0x")
    with pytest.raises(SlotnetError):
        _repro._Runner(1)([dict(_REQ, seed=0), bad])
    assert ran == []


class _ThreadPool(__import__("concurrent.futures").futures.ThreadPoolExecutor):
    """A worker pool of threads (the stand-in ``_run_metrics`` cannot travel to a process)."""

    sizes: list[int] = []

    def __init__(self, max_workers: int) -> None:
        _ThreadPool.sizes.append(max_workers)
        super().__init__(max_workers=max_workers)


def test_runner_uses_a_pool_for_two_runs_or_more_and_at_most_one_worker_each(monkeypatch):
    monkeypatch.setattr(_repro, "_run_metrics", lambda r: {"ran": r["seed"]})
    monkeypatch.setattr(_repro, "ProcessPoolExecutor", _ThreadPool)
    _ThreadPool.sizes = []
    two = [dict(_REQ, seed=s) for s in range(2)]
    assert _repro._Runner(2)(two) == [{"ran": 0}, {"ran": 1}]
    assert _ThreadPool.sizes == [2]
    assert _repro._Runner(5)(two) == [{"ran": 0}, {"ran": 1}]
    assert _ThreadPool.sizes == [2, 2]
    assert _repro._Runner(2)(two[:1]) == [{"ran": 0}]
    assert _repro._Runner(1)(two) == [{"ran": 0}, {"ran": 1}]
    assert _ThreadPool.sizes == [2, 2]
    four = [dict(_REQ, seed=s) for s in range(4)]
    progress = _Progress()
    assert _repro._Runner(3, progress)(four) == [{"ran": s} for s in range(4)]
    assert _ThreadPool.sizes == [2, 2, 3] and progress.events == [("add", 4)] + [("done", None)] * 4


def test_runner_pool_raises_the_first_failure(monkeypatch):
    def metrics(r):
        if r["seed"] == 1:
            raise SchemeError("run 1 broke")
        return {"ran": r["seed"]}

    monkeypatch.setattr(_repro, "_run_metrics", metrics)
    monkeypatch.setattr(_repro, "ProcessPoolExecutor", _ThreadPool)
    with pytest.raises(SchemeError, match="^run 1 broke$"):
        _repro._Runner(2)([dict(_REQ, seed=s) for s in range(3)])


def test_refuse_unnamed_names_each_option_the_experiment_does_not_take():
    def named(runner, *, seed, quick, dims=None):
        return []

    def loose(runner, *, seed, quick, **options):
        return []

    _repro._refuse_unnamed("p", named, {"dims": "2-3", "hours": None, "shards": False})
    with pytest.raises(SchemeError) as e:
        _repro._refuse_unnamed("p", loose, {"dims": "2-3", "hours": 1.0, "shards": 2, "sweep_d": 6})
    assert str(e.value) == "repro p takes no --dims, --hours, --shards"
    with pytest.raises(SchemeError) as e:
        _repro._refuse_unnamed("q", named, {"dims": "2", "shards": 1})
    assert str(e.value) == "repro q takes no --shards"
    assert _repro._NAMED_ONLY == ("dims", "hours", "shards")


def _experiment(run):
    return SimpleNamespace(run=run)


def test_repro_runs_the_experiment_and_closes_the_progress(monkeypatch):
    seen: dict[str, Any] = {}
    rows = [Row("E", "c", "m", 1.0, 1.0, 0.1, 1.0)]

    def run(runner, *, seed, quick, dims=None):
        seen.update(runner=runner, seed=seed, quick=quick, dims=dims)
        return rows

    monkeypatch.setattr(_repro, "get_experiment", lambda paper: seen.setdefault("paper", paper) and _experiment(run))
    monkeypatch.setattr(_repro.os, "cpu_count", lambda: 8)
    progress = _Progress()
    on_rows, on_run, cache = _Recorder(), _Recorder(), _Cache({})
    got, wall = _repro.repro("toy", seed=5, quick=True, progress=progress, on_rows=on_rows, cache=cache,
                             on_run=on_run, dims="2-3")
    assert got is rows and 0 <= wall < 60
    r = seen["runner"]
    assert (seen["paper"], seen["seed"], seen["quick"], seen["dims"]) == ("toy", 5, True, "2-3")
    assert (r.jobs, r.progress, r.on_rows, r.cache, r.on_run) == (2, progress, on_rows, cache, on_run)
    assert progress.events == [("close", None)]
    _repro.repro("toy", jobs=3)
    assert seen["runner"].jobs == 3 and (seen["seed"], seen["quick"]) == (1, False)
    monkeypatch.setattr(_repro.os, "cpu_count", lambda: 1)
    _repro.repro("toy")
    assert seen["runner"].jobs == 1
    monkeypatch.setattr(_repro.os, "cpu_count", lambda: None)
    _repro.repro("toy")
    assert seen["runner"].jobs == 1


def test_repro_turns_scheme_errors_into_spec_errors_or_partial_results(monkeypatch):
    row = Row("E", "c", "m", 1.0, 1.0, 0.1, 1.0)

    def fails(runner, *, seed, quick):
        raise SchemeError("bad sweep")

    def fails_late(runner, *, seed, quick):
        runner.publish([row])
        raise SchemeError("plot failed")

    progress = _Progress()
    monkeypatch.setattr(_repro, "get_experiment", lambda paper: _experiment(fails))
    with pytest.raises(SpecError) as e:
        _repro.repro("toy", progress=progress)
    assert str(e.value) == "bad sweep" and not isinstance(e.value, _repro.PartialRepro)
    assert progress.events == [("close", None)]
    with pytest.raises(SpecError) as e:
        _repro.repro("toy", dims="2-3")  # refused before the experiment runs
    assert str(e.value) == "repro toy takes no --dims"
    monkeypatch.setattr(_repro, "get_experiment", lambda paper: _experiment(fails_late))
    with pytest.raises(_repro.PartialRepro) as e:
        _repro.repro("toy", progress=progress)
    assert str(e.value) == "plot failed" and e.value.rows == [row]
    assert progress.events == [("close", None), ("close", None)]


def test_repro_of_an_unknown_paper_is_a_spec_error():
    with pytest.raises(SpecError) as e:
        _repro.repro("no-such-paper")
    assert "no-such-paper" in str(e.value)


def test_format_rows_tables_per_experiment_with_numbered_notes():
    within = Row("A", "v=1", "delay", 4.0, 4.0, 0.125, 4.0)
    known1 = Row("A", "v=2", "delay", 4.0, 9.0, float("inf"), 4.0, note=Explanation("slip one", corrected=9.0))
    known1b = Row("A", "v=3", "delay", 4.0, 9.0, 0.5, 4.0, note=Explanation("slip one", corrected=9.0))
    not_run = Row("A", "v=4", "delay", 4.0, None, None, None, note="too big")
    other = Row("B", "d=2", "q", None, None, None, 2.0)
    outside = Row("B", "d=3", "q", 2.0, 9.0, 0.5, 2.0)
    assert outside.verdict().startswith("OUTSIDE: ")  # numbered only when it is known or not run
    header = ["case", "metric", "paper", "simulation", "theory", "sim vs paper", "sim vs theory", "theory vs paper",
              "verdict"]
    body_a = [["v=1", "delay", format_value(4.0), format_value(4.0) + " ± 0.1250", format_value(4.0), "+0.00%", "+0.00%",
               "+0.00%", "within"],
              ["v=2", "delay", format_value(4.0), format_value(9.0), format_value(4.0), "+125.00%", "+125.00%", "+0.00%",
               "known [1]"],
              ["v=3", "delay", format_value(4.0), format_value(9.0) + " ± 0.5000", format_value(4.0), "+125.00%",
               "+125.00%", "+0.00%", "known [1]"],
              ["v=4", "delay", format_value(4.0), "-", format_value(None), "", "", "", "not run [2]"]]
    body_b = [["d=2", "q", format_value(None), "-", format_value(2.0), "", "", "", "-"],
              ["d=3", "q", format_value(2.0), format_value(9.0) + " ± 0.5000", format_value(2.0), "+350.00%", "+350.00%",
               "+0.00%", outside.verdict()]]
    expected = ["A", *table(body_a, header), "  [1] slip one", "  [2] too big", "", "B", *table(body_b, header), ""]
    rows = [within, known1, other, known1b, not_run, outside]
    assert _repro.format_rows(rows, legend=False) == "\n".join(expected)
    assert _repro.format_rows(rows) == "\n".join(expected + _repro.LEGEND)
    assert _repro.format_rows([]) == ""
    assert _repro.format_rows([], legend=False) == ""


def test_legend_explains_the_interval_and_every_verdict():
    assert _repro.LEGEND[0] == CI_LEGEND + "."
    text = " ".join(_repro.LEGEND[1:])
    assert text == ("verdict: within = inside the paper's agreement (|difference| <= √2·CI + the paper's own "
                    "|paper − theory| + half a printed digit); known [n] = outside it for the documented reason n, "
                    "whose predicted value the run agrees with; OUTSIDE = outside it with no reason that accounts for "
                    "the gap (a failure); - = nothing to judge by (no reference "
                    "value, or a simulation without an interval).")
    assert all(len(line) <= WIDTH for line in _repro.LEGEND[1:]) and len(_repro.LEGEND) > 2
    assert max(len(line) for line in _repro.LEGEND[1:]) > WIDTH - 12


def test_pct():
    assert _repro._pct(None) == ""
    assert _repro._pct(0.0) == "+0.00%"
    assert _repro._pct(-0.12345) == "-12.35%"
    assert _repro._pct(1.5) == "+150.00%"


# ======================================================================================
# orchestrator/cli/: the parser, its refusals and its defaults


def test_a_bad_command_line_is_one_line_and_status_2(capsys):
    code, out, err = _call(capsys, "bogus")
    assert code == 2 and out == ""
    assert err.startswith("slotnet: error: argument COMMAND: invalid choice: 'bogus'") and err.endswith("\n")
    assert err.count("\n") == 1
    code, out, err = _call(capsys, "run", "deflection")
    assert code == 2
    assert err == "slotnet run: error: the following arguments are required: --topology/-t\n"
    code, _, err = _call(capsys, "trace", "f", "--node", "x")
    assert (code, err) == (2, "slotnet trace: error: argument --node: invalid int value: 'x'\n")


def test_a_command_is_required(capsys):
    code, out, err = _call(capsys)
    assert (code, out, err) == (2, "", "slotnet: error: the following arguments are required: COMMAND\n")


def test_version_names_the_build_and_exits_0(capsys, monkeypatch):
    from importlib.metadata import version

    from slotnet._build import build

    code, out, err = _call(capsys, "--version")
    assert code == 0 and err == ""
    assert out == f"slotnet {version('slotnet')} (hot path: {build()})\n"


def _load_names() -> set[str]:
    return set(_common.load_flags())


def _without_loads(ns: dict[str, Any]) -> dict[str, Any]:
    for k in _load_names():
        assert ns.pop(k) is None
    return ns


def test_run_options_and_their_defaults():
    ns = _without_loads(_ns(["run", "deflection", "-t", "hypercube:2"]))
    assert ns == {"command": "run", "scheme": "deflection", "topology": "hypercube:2", "param": [], "json": False,
                  "slots": None, "warmup": 0, "seed": 0, "rng": "philox", "seeds": None, "jobs": None, "fault": [], "faults": None,
                  "detect": None,
                  "trace": None,
                  "trace_nodes": None, "trace_slots": None, "trace_events": None, "per_node": False, "series": False,
                  "max_backlog": None, "no_progress": False, "shards": 1, "broker": None, "broker_ca": None,
                  "broker_cert": None, "broker_key": None, "no_spawn": False, "run_id": None, "node_timeout": 10.0,
                  "debug": False}
    ns = _without_loads(_ns(["run", "s", "--topology", "t", "-p", "a=1", "--param", "b=2", "--json", "--slots", "7",
                             "--warmup", "2", "--seed", "3", "--rng", "philox", "--fault", "crash@1:0", "--fault", "loss=0.1",
                             "--faults", "F", "--detect", "never", "--trace", "T", "--trace-nodes", "1,2",
                             "--trace-slots", "0:4", "--trace-events", "sent", "--per-node", "--series",
                             "--max-backlog", "5", "--no-progress", "--shards", "2", "--broker", "mqtt://h:1",
                             "--broker-ca", "CA", "--broker-cert", "C", "--broker-key", "K", "--no-spawn", "--run-id",
                             "R", "--node-timeout", "2.5", "--debug"]))
    assert ns == {"command": "run", "scheme": "s", "topology": "t", "param": ["a=1", "b=2"], "json": True,
                  "slots": 7, "warmup": 2, "seed": 3, "rng": "philox", "seeds": None, "jobs": None,
                  "fault": ["crash@1:0", "loss=0.1"], "faults": "F",
                  "detect": "never", "trace": "T", "trace_nodes": "1,2", "trace_slots": "0:4", "trace_events": "sent",
                  "per_node": True, "series": True, "max_backlog": 5.0, "no_progress": True, "shards": 2,
                  "broker": "mqtt://h:1", "broker_ca": "CA", "broker_cert": "C", "broker_key": "K", "no_spawn": True,
                  "run_id": "R", "node_timeout": 2.5, "debug": True}
    assert isinstance(ns["max_backlog"], float)


def test_theory_trace_shard_and_schemes_options_and_defaults():
    ns = _without_loads(_ns(["theory", "star", "-t", "torus:4x4"]))
    assert ns == {"command": "theory", "scheme": "star", "topology": "torus:4x4", "param": [], "json": False, "slots": 25}
    assert _ns(["theory", "star", "-t", "x", "--slots", "3", "--rho", "0.5"])["rho"] == 0.5
    assert _ns(["trace", "f.jsonl"]) == {"command": "trace", "file": "f.jsonl", "node": [], "event": [], "slots": None,
                                         "packet": None, "topology": None, "perfetto": None, "diagram": None}
    assert _ns(["trace", "f", "--node", "1", "--node", "2", "--event", "sent", "--slots", "0:3", "--packet", "1,2",
                "-t", "hypercube:3", "--perfetto", "P", "--diagram", "D"]) == {
        "command": "trace", "file": "f", "node": [1, 2], "event": ["sent"], "slots": "0:3", "packet": "1,2",
        "topology": "hypercube:3", "perfetto": "P", "diagram": "D"}
    assert _ns(["shard", "--broker", "B", "--run", "R", "--shard", "0/2"]) == {
        "command": "shard", "broker": "B", "broker_ca": None, "broker_cert": None, "broker_key": None, "run": "R",
        "shard": "0/2"}
    assert _ns(["schemes"]) == {"command": "schemes", "name": None}
    assert _ns(["schemes", "star"]) == {"command": "schemes", "name": "star"}


def test_explore_and_repro_options_and_defaults():
    ns = _without_loads(_ns(["explore", "star", "-t", "torus:4x4", "--faults", "single-link"]))
    assert ns == {"command": "explore", "scheme": "star", "topology": "torus:4x4", "param": [], "json": False,
                  "slots": 200, "warmup": 0, "seed": 0, "rng": "philox", "faults": "single-link", "samples": None,
                  "crash_slots": None,
                  "detect": None, "jobs": None, "shrink": None, "max_backlog": None}
    ns = _without_loads(_ns(["explore", "s", "-t", "t", "--faults", "f", "--slots", "9", "--warmup", "1", "--seed", "4",
                             "--samples", "3", "--crash-slots", "1,2", "--detect", "2", "--jobs", "2", "--shrink", "o",
                             "--max-backlog", "7"]))
    assert [ns[k] for k in ("slots", "warmup", "seed", "samples", "crash_slots", "detect", "jobs", "shrink",
                            "max_backlog")] == [9, 1, 4, 3, "1,2", "2", 2, "o", 7.0]
    assert _ns(["repro", "stamoulis"]) == {
        "command": "repro", "paper": "stamoulis", "seed": 1, "jobs": None, "quick": False, "sweep_d": None,
        "sweep_rho": None, "plot": None, "sweep_only": False, "dims": None, "hours": None, "shards": None,
        "json": False, "html": None, "cache": None, "no_cache": False}
    assert _ns(["repro", "all", "--seed", "2", "--jobs", "3", "--quick", "--sweep-d", "6", "--sweep-rho", "0.1",
                "--plot", "p.png", "--sweep-only", "--dims", "2-3", "--hours", "1.5", "--shards", "2", "--json",
                "--html", "h.html", "--cache", "C", "--no-cache"]) == {
        "command": "repro", "paper": "all", "seed": 2, "jobs": 3, "quick": True, "sweep_d": 6, "sweep_rho": "0.1",
        "plot": "p.png", "sweep_only": True, "dims": "2-3", "hours": 1.5, "shards": 2, "json": True,
        "html": "h.html", "cache": "C", "no_cache": True}


def test_required_options_of_each_command(capsys):
    for argv, missing in ((["theory", "s"], "--topology/-t"), (["explore", "s", "-t", "x"], "--faults"),
                          (["shard", "--run", "R", "--shard", "0/2"], "--broker"),
                          (["shard", "--broker", "B", "--shard", "0/2"], "--run"),
                          (["shard", "--broker", "B", "--run", "R"], "--shard"), (["repro"], "paper"),
                          (["trace"], "file"), (["run", "-t", "x"], "scheme")):
        code, _, err = _call(capsys, *argv)
        assert code == 2 and err == f"slotnet {argv[0]}: error: the following arguments are required: {missing}\n"


def test_each_command_has_its_help_and_group_titles():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == {
        "run": "run a scheme on the emulated network", "theory": "the scheme's analytic model",
        "trace": "query a trace file", "explore": "run a scheme under every fault of a family and judge each run",
        "repro": "rerun a paper's comparisons", "shard": "run one shard of a sharded run",
        "schemes": "list the schemes, or show one", "sweep": "run a scheme over a range of one load or parameter",
        "check": "run every schedule of up to K faults and report each violation, shrunk"}
    assert parser.prog == "slotnet" and parser.epilog == _parser.TOP_EXAMPLES
    assert parser.description == "Slotted, message-passing emulator of interconnection networks."
    run = sub.choices["run"]
    titles = [g.title for g in run._action_groups]
    assert "load (declared by the schemes; which flags apply depends on the scheme)" in titles
    assert "sharded runs (nodes spread over processes through an MQTT broker)" in titles
    for name, p in sub.choices.items():
        assert isinstance(p, _common.Parser) and p.prog == f"slotnet {name}"
        assert p.formatter_class is argparse.RawDescriptionHelpFormatter
    assert [sub.choices[n].epilog for n in ("run", "theory", "trace", "explore", "repro", "shard", "schemes", "sweep")] == [
        _parser.RUN_EXAMPLES, _parser.THEORY_EXAMPLES, _parser.TRACE_EXAMPLES, _parser.EXPLORE_EXAMPLES, _parser.REPRO_EXAMPLES,
        _parser.SHARD_EXAMPLES, _parser.SCHEMES_EXAMPLES, _parser.SWEEP_EXAMPLES]
    paper = next(a for a in sub.choices["repro"]._actions if a.dest == "paper")
    assert paper.help == "the paper to reproduce: " + ", ".join(_repro.papers()) + "; or all"
    version = next(a for a in parser._actions if a.dest == "version")
    assert version.help == "show the version and which build of the hot path runs" and version.nargs == 0


def test_examples_and_descriptions_are_laid_out_exactly():
    assert _help.examples(("one", "slotnet a"), ("two", "slotnet b")) == \
        "examples:\n  # one\n  slotnet a\n  # two\n  slotnet b"
    assert _parser.SHARD_EXAMPLES.splitlines()[-2:] == ["  # shard 1 of 2",
                                                     "  slotnet shard --broker mqtt://host:1883 --run demo --shard 1/2"]
    assert _parser.SCHEMES_EXAMPLES == ("examples:\n  # every scheme with its parameters\n  slotnet schemes\n"
                                     "  # one scheme in full, with a command that runs it\n  slotnet schemes deflection")
    assert _parser.TOP_EXAMPLES.splitlines()[-2:] == ["  # a command's options and examples", "  slotnet run --help"]
    assert _help.description("a  ``b``", "x:\n  y") == "a b\n\nx:\n  y"
    assert _help.description("one") == "one"
    assert set(_parser.FAMILY_HELP) == {"single-link", "single-node", "double-link", "crash-points", "random"}


# --------------------------------------------------------------------------------------
# help-text helpers


def test_plain_strips_roles_and_literals():
    assert _help.plain(":class:`~a.b.C` and :func:`a.b` and :ref:`~plain` and ``x y``") == "C and a.b and plain and x y"
    assert _help.plain(":mod:`m` ``a`` ``c``") == "m a c"
    assert _help.plain("no markup: a.b `c`") == "no markup: a.b `c`"


def test_para_wraps_at_79_columns_without_breaking_words_or_hyphens():
    assert _help.HELP_WIDTH == 79
    exact = "a" * 39 + " " + "b" * 39  # 79 characters: one line
    assert _help.para(exact) == exact
    assert _help.para(exact + "c") == "a" * 39 + "\n" + "b" * 39 + "c"
    assert _help.para("x  y\n z ``w``") == "x y z w"
    long = "q" * 100
    assert _help.para(long + " r") == long + "\nr"
    hyph = "a" * 70 + " bbbbb-cccccccccc"
    assert _help.para(hyph) == "a" * 70 + "\nbbbbb-cccccccccc"
    assert _help.para("one two", indent="  ") == "  one two"
    assert _help.para("w " * 40, indent="> ").splitlines()[1].startswith("> w")


def test_listing_aligns_meanings_and_wraps_them():
    assert _help.listing("t", [("ab", "x"), ("abcd", "``y``")]) == "t:\n  ab    x\n  abcd  y"
    assert _help.listing("t", [("a", "")]) == "t:\n  a  "
    words = " ".join(["word"] * 40)  # 199 characters; width 3: 79 - 2 - 3 = 74 per line
    text = _help.listing("t", [("a", words)])
    lines = text.splitlines()
    body = __import__("textwrap").wrap(words, 74)
    assert lines == ["t:", "  a  " + body[0], *("     " + b for b in body[1:])]
    assert len(body) == 3
    assert _help.listing("t", [("a", "z" * 90)]) == "t:\n  a  " + "z" * 90
    assert _help.listing("t", [("a", "x-" * 50)]).count("\n") == 1


# --------------------------------------------------------------------------------------
# input parsing


def test_slot_window_boundaries_and_refusals():
    sw = _common.slot_window
    assert sw("3:7", "--s") == (3, 7)
    assert sw(":5", "--s") == (0, 5)
    assert sw("2:", "--s") == (2, 1 << 62)
    assert sw(" : ", "--s") == (0, 1 << 62)
    assert sw("0:1", "--s") == (0, 1)
    for bad in ("5", "-1:3", "3:3", "4:3", "0:0", "3:-1"):
        with pytest.raises(SpecError) as e:
            sw(bad, "--s")
        assert str(e.value) == f"--s must look like A:B with 0 <= A < B, got {bad!r}"
    for bad in ("a:b", "1:x", "1.5:3"):
        with pytest.raises(SpecError) as e:
            sw(bad, "--w")
        assert str(e.value) == f"--w must look like A:B with integer slots, got {bad!r}"
    assert sw("4611686018427387903:", "--s") == ((1 << 62) - 1, 1 << 62)


def test_params_parse_and_refuse():
    assert _common.params([]) == {}
    assert _common.params([" a = 1 ", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    for bad in ("x", "=3", " =3"):
        with pytest.raises(SpecError) as e:
            _common.params([bad])
        assert str(e.value) == f"--param {bad!r} must look like NAME=VALUE"
    with pytest.raises(SpecError) as e:
        _common.params(["a=1", " a = 2 "])
    assert str(e.value) == "--param a given twice (a=1 and a=2): give it once"


def test_int_set_and_load():
    assert _common.int_set(None, "--x") is None
    assert _common.int_set("1, 2,,3 ", "--x") == frozenset({1, 2, 3})
    assert _common.int_set("", "--x") == frozenset()
    with pytest.raises(SpecError) as e:
        _common.int_set("1,a", "--x")
    assert str(e.value) == "--x must be comma-separated integers, got '1,a'"
    args = argparse.Namespace(**dict.fromkeys(_load_names()))
    assert _common.load_args(args) == {}
    args.rho = 0.5
    args.offered = 0.0
    assert _common.load_args(args) == {"rho": 0.5, "offered": 0.0}
    assert _common.load_args(argparse.Namespace(rho=0.25)) == {"rho": 0.25}


def test_load_flags_gather_each_schemes_meaning(monkeypatch):
    a = _scheme(name="a", loads=(Load("rho", "``ρ`` per node", "R"), Load("lam", "rate")))
    b = _scheme(name="b", loads=(Load("rho", "``ρ`` per node", "Q"),))
    c = _scheme(name="c", loads=(Load("rho", "other"),))
    monkeypatch.setattr(_common, "SCHEMES", {"c": c, "b": b, "a": a})
    flags = _common.load_flags()
    assert flags == {"rho": [("a", a.loads[0]), ("b", b.loads[0]), ("c", c.loads[0])], "lam": [("a", a.loads[1])]}
    assert list(flags) == ["rho", "lam"]
    p = argparse.ArgumentParser()
    _parser.add_load(p)
    group = p._action_groups[-1]
    assert group.title == "load (declared by the schemes; which flags apply depends on the scheme)"
    acts = {a.dest: a for a in group._group_actions}
    assert acts["rho"].option_strings == ["--rho"] and acts["rho"].type is float and acts["rho"].metavar == "R"
    assert acts["rho"].help == "a, b: ρ per node. c: other."
    assert acts["lam"].help == "a: rate." and acts["lam"].metavar == "X"
    assert p.parse_args(["--rho", "2"]).rho == 2.0


def test_trace_spec_needs_trace_and_builds_the_filter():
    def ns(**kw):
        base = dict(trace=None, trace_nodes=None, trace_slots=None, trace_events=None)
        base.update(kw)
        return argparse.Namespace(**base)

    assert _cmd_run.trace_spec(ns()) is None
    for flag in ("trace_nodes", "trace_slots", "trace_events"):
        with pytest.raises(SpecError) as e:
            _cmd_run.trace_spec(ns(**{flag: "1"}))
        assert str(e.value) == "--trace-nodes/--trace-slots/--trace-events need --trace FILE"
    args = ns(trace="t.jsonl")
    spec = _cmd_run.trace_spec(args)
    assert spec == TraceSpec("t.jsonl", None, None, None, on_error=spec.on_error)
    assert args.trace_errors == []
    spec.on_error("disk full")
    assert args.trace_errors == ["disk full"]
    args = ns(trace="t", trace_nodes="1,2", trace_slots="2:5", trace_events=" sent, ,lost")
    spec = _cmd_run.trace_spec(args)
    assert (spec.path, spec.nodes, spec.slots, spec.kinds) == ("t", frozenset({1, 2}), (2, 5), frozenset({"sent", "lost"}))
    with pytest.raises(SpecError) as e:
        _cmd_run.trace_spec(ns(trace="t", trace_slots="5"))
    assert str(e.value).startswith("--trace-slots must look like A:B")
    with pytest.raises(SpecError) as e:
        _cmd_run.trace_spec(ns(trace="t", trace_nodes="x"))
    assert str(e.value) == "--trace-nodes must be comma-separated integers, got 'x'"


def test_print_json_writes_nulls_for_non_finite_numbers(capsys):
    _common.print_json({"a": float("inf"), "b": [1, float("nan")]})
    out = capsys.readouterr().out
    assert out.endswith("}\n") and out.count("\n") == 1
    assert json.loads(out) == {"a": None, "b": [1, None], "non_finite": {"/a": "inf", "/b/1": "nan"}}


def test_check_writable(tmp_path):
    new = tmp_path / "new.json"
    _cmd_explore.check_writable(str(new), "--x")
    assert not new.exists()
    old = tmp_path / "old.json"
    old.write_text("keep")
    _cmd_explore.check_writable(str(old), "--x")
    assert old.read_text() == "keep"
    with pytest.raises(SpecError) as e:
        _cmd_explore.check_writable(str(tmp_path), "--x")
    assert str(e.value) == f"--x: {str(tmp_path)!r} is not a regular file"
    missing = tmp_path / "no" / "f"
    with pytest.raises(SpecError) as e:
        _cmd_explore.check_writable(str(missing), "--y")
    assert str(e.value) == f"--y: cannot write {str(missing)!r}: No such file or directory"


# --------------------------------------------------------------------------------------
# slotnet run / theory


class _Result:
    def __init__(self, theory: Any = None) -> None:
        self.theory = theory
        self.verdict = None  # not judged: exit status 0
        self.to_dict_calls: list[dict[str, Any]] = []

    def to_dict(self, **kw: Any) -> dict[str, Any]:
        self.to_dict_calls.append(kw)
        return {"metrics": {"x": float("inf")}}


@pytest.fixture
def fake_run(monkeypatch):
    """``_cmd_run.run`` replaced: records (spec, progress), returns a _Result; the tables are tags."""
    rec = _Recorder(_Result)
    monkeypatch.setattr(_cmd_run, "run", lambda spec, progress: rec(spec, progress))
    monkeypatch.setattr(_cmd_run, "format_result", lambda result, columns, label: f"RESULT {len(columns)} {label}")
    monkeypatch.setattr(_cmd_run, "format_series", lambda result: "SERIES")
    monkeypatch.setattr(_cmd_run, "format_per_node", lambda result: "PER-NODE")
    return rec


_RUN = ["run", "deflection", "-t", "hypercube:2", "--offered", "0.5", "--slots", "6"]


def test_run_builds_the_spec_from_every_option(capsys, fake_run):
    code, out, err = _call(capsys, *_RUN, "--warmup", "1", "--seed", "3", "-p", "order=random", "--fault", "crash@2:1",
                           "--detect", "2", "--max-backlog", "9", "--series", "--no-progress")
    assert (code, err) == (0, "")
    (spec, progress), _ = fake_run.calls[0]
    assert progress is not None and progress.enabled is False  # drawn never; it still carries a Ctrl-C stop
    assert spec == RunSpec(scheme="deflection", topology="hypercube:2", params={"order": "random"},
                           load={"offered": 0.5}, slots=6, warmup=1, seed=3,
                           faults=FaultSchedule.parse(["crash@2:1"], None, detect=2), trace=None,
                           max_backlog_per_node=9.0, shards=1, broker=None, series=True)
    assert spec.node_timeout == 10.0
    assert out == "RESULT 4 theory\n\nSERIES\n"
    code, out, _ = _call(capsys, *_RUN)
    (spec, progress), _ = fake_run.calls[1]
    assert isinstance(progress, Progress) and spec.faults == FaultSchedule.parse([], None, detect="default")
    assert spec.series is False and spec.params == {} and spec.warmup == 0
    assert out == "RESULT 4 theory\n"


def test_run_human_output_per_node_and_series_beside_the_prediction(capsys, fake_run, monkeypatch):
    code, out, _ = _call(capsys, *_RUN, "--per-node", "--no-progress")
    assert out == "RESULT 4 theory\n\nPER-NODE\n"
    fake_run.value = lambda: _Result({"series": [1]})  # the prediction's series: the table holds the run's already
    code, out, _ = _call(capsys, *_RUN, "--series", "--per-node", "--no-progress")
    assert out == "RESULT 4 theory\n\nPER-NODE\n"
    fake_run.value = lambda: _Result({"other": 1})
    code, out, _ = _call(capsys, *_RUN, "--series", "--no-progress")
    assert out == "RESULT 4 theory\n\nSERIES\n"
    import dataclasses

    plain = dataclasses.replace(SCHEMES["deflection"], columns=(), theory_label="plan")
    monkeypatch.setattr(_cmd_run, "get_scheme", lambda name: plain)
    fake_run.value = lambda: _Result({"series": [1]})  # no columns: the series is not beside anything
    code, out, _ = _call(capsys, *_RUN, "--series", "--no-progress")
    assert out == "RESULT 0 plan\n\nSERIES\n"


def test_run_json_asks_for_per_node_and_series(capsys, fake_run):
    results: list[_Result] = []
    fake_run.value = lambda: results.append(_Result()) or results[-1]
    code, out, _ = _call(capsys, *_RUN, "--json", "--no-progress")
    assert code == 0 and json.loads(out) == {"metrics": {"x": None}, "non_finite": {"/metrics/x": "inf"}}
    assert results[-1].to_dict_calls == [{"per_node": False, "series": False}]
    _call(capsys, *_RUN, "--json", "--per-node", "--series", "--no-progress")
    assert results[-1].to_dict_calls == [{"per_node": True, "series": True}]


def test_run_trace_errors_fail_after_the_results(capsys, fake_run, tmp_path, monkeypatch):
    def run_and_fail(spec, progress):
        spec.trace.on_error("trace.jsonl: disk full")
        spec.trace.on_error("second")
        return _Result()

    monkeypatch.setattr(_cmd_run, "run", run_and_fail)
    code, out, err = _call(capsys, *_RUN, "--no-progress", "--trace", str(tmp_path / "t.jsonl"))
    assert code == 1 and out == "RESULT 4 theory\n"
    assert err == "slotnet run: error: trace.jsonl: disk full (the results above are complete)\n"


def test_run_refuses_shard_options_without_shards(capsys, fake_run):
    for extra in (["--no-spawn"], ["--run-id", "x"], ["--no-spawn", "--shards", "1"]):
        code, out, err = _call(capsys, *_RUN, *extra)
        assert (code, out, err) == (2, "", "slotnet run: error: --no-spawn and --run-id need --shards K (K >= 2)\n")
    code, out, err = _call(capsys, *_RUN, "--no-spawn", "--shards", "2")
    assert (code, err) == (2, "slotnet run: error: --no-spawn needs --broker URL: the shards started by hand must "
                              "reach the same broker\n")
    assert fake_run.calls == []


def test_run_sharded_by_hand_waits_for_the_shards(capsys, fake_run, monkeypatch):
    import importlib

    coordinator = importlib.import_module("slotnet.orchestrator.shard._coordinator")
    calls: list[dict[str, Any]] = []

    async def run_sharded(prep, *, progress=None, spawn=True, run_id=None):
        calls.append(dict(slots=prep.slots, progress=progress, spawn=spawn, run_id=run_id))
        return _Result()

    monkeypatch.setattr(coordinator, "run_sharded", run_sharded)
    code, out, err = _call(capsys, *_RUN, "--shards", "4", "--no-spawn", "--broker", "mqtt://h:1", "--run-id", "abc",
                           "--no-progress")
    assert (code, out) == (0, "RESULT 4 theory\n")
    assert err == ("waiting for 4 shards: slotnet shard --broker mqtt://h:1 --run abc --shard I/4  (I = 0..3)\n")
    assert [dict(c, progress=c["progress"].enabled) for c in calls] == [dict(slots=6, progress=False, spawn=False, run_id="abc")]
    code, out, err = _call(capsys, *_RUN, "--shards", "2", "--run-id", "xyz")
    assert (code, err) == (0, "")
    assert calls[-1]["spawn"] is True and calls[-1]["run_id"] == "xyz" and isinstance(calls[-1]["progress"], Progress)
    code, out, err = _call(capsys, *_RUN, "--shards", "2", "--no-spawn", "--broker", "mqtt://b:1", "--no-progress")
    run_id = calls[-1]["run_id"]
    assert len(run_id) == 12 and int(run_id, 16) >= 0
    assert f"--run {run_id} --shard I/2  (I = 0..1)" in err
    assert fake_run.calls == []


def test_theory_prints_the_model_or_refuses(capsys, monkeypatch):
    code, out, err = _call(capsys, "theory", "deflection", "-t", "hypercube:3", "--offered", "0.5", "--json")
    assert (code, err) == (0, "")
    from slotnet.orchestrator.engine._result import json_ready

    prep = RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, slots=25).prepare(check_memory=False)
    want = {"scheme": "deflection", "topology": prep.topology.describe(), "load": {"offered": 0.5},
            "params": prep.params, "theory": SCHEMES["deflection"].theory(prep.setup)}
    got = json.loads(out)
    assert got == json.loads(json.dumps(json_ready(want)))
    printed: list[tuple[Any, ...]] = []
    monkeypatch.setattr(_cmd_theory, "format_theory", lambda *a: printed.append(a) or "TABLE")
    code, out, err = _call(capsys, "theory", "deflection", "-t", "hypercube:3", "--offered", "0.5")
    assert (code, out) == (0, "TABLE\n")
    name, spec, theory, columns = printed[0]
    assert (name, spec, columns) == ("deflection", "hypercube:3", SCHEMES["deflection"].columns)
    assert json.loads(json.dumps(json_ready(theory))) == got["theory"]


def test_theory_spec_takes_its_slots_and_no_memory_check(capsys, monkeypatch):
    specs: list[tuple[dict[str, Any], dict[str, Any]]] = []

    class Spec(RunSpec):
        def prepare(self, **kw):
            specs.append((dict(slots=self.slots, warmup=self.warmup, params=self.params, load=self.load), kw))
            return super().prepare(**kw)

    monkeypatch.setattr(_cmd_theory, "RunSpec", Spec)
    monkeypatch.setattr(_cmd_theory, "format_theory", lambda *a: "T")
    for slots, used in (("1", 1), ("2", 2)):  # below 1: refused (tests/contract/test_cli_edges.py)
        _call(capsys, "theory", "deflection", "-t", "hypercube:3", "--offered", "0.5", "--slots", slots, "-p",
              "order=random")
        assert specs[-1] == (dict(slots=used, warmup=0, params={"order": "random"}, load={"offered": 0.5}),
                             {"check_memory": False})


def test_theory_of_a_scheme_without_a_model_is_refused(capsys, monkeypatch):
    import dataclasses

    bare = dataclasses.replace(SCHEMES["deflection"], theory=None)
    monkeypatch.setattr(_cmd_theory, "get_scheme", lambda name: bare)
    code, out, err = _call(capsys, "theory", "deflection", "-t", "hypercube:3", "--offered", "0.5")
    assert (code, out, err) == (2, "", "slotnet theory: error: scheme 'deflection' has no analytic model\n")


# --------------------------------------------------------------------------------------
# slotnet trace


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("trace") / "run.jsonl")
    assert cli.main(["run", "deflection", "-t", "hypercube:2", "--offered", "0.5", "--slots", "6", "--trace", path,
                     "--no-progress", "--json"]) == 0
    return path


def _events(path: str) -> list[dict[str, Any]]:
    from slotnet.orchestrator.tools._trace_query import read_trace

    return list(read_trace(path))


def test_trace_prints_the_selected_events(capsys, trace_file):
    from slotnet.orchestrator.tools._trace_query import format_event

    events = _events(trace_file)
    code, out, err = _call(capsys, "trace", trace_file)
    assert (code, err) == (0, "") and out == "".join(format_event(ev) + "\n" for ev in events)
    code, out, _ = _call(capsys, "trace", trace_file, "--slots", "2:4", "--event", "sent", "--node", "0", "--node", "1")
    want = [ev for ev in events if 2 <= ev["slot"] < 4 and ev["event"] == "sent" and ev["node"] in (0, 1)]
    assert want and out == "".join(format_event(ev) + "\n" for ev in want)
    code, out, _ = _call(capsys, "trace", trace_file, "--slots", "2:3", "--node", "0", "--node", "3")
    want = [ev for ev in events if ev["slot"] == 2 and ev["node"] in (0, 3)]
    assert want and out == "".join(format_event(ev) + "\n" for ev in want)
    code, out, err = _call(capsys, "trace", trace_file, "--event", "no-such-kind")  # refused with the known kinds
    assert (code, out) == (2, "") and "no-such-kind" in err and "sent" in err


def test_trace_of_one_node_is_its_timeline(capsys, trace_file):
    from slotnet.orchestrator.tools._trace_query import read_trace, timeline

    code, out, _ = _call(capsys, "trace", trace_file, "--node", "2", "--slots", "1:3", "--event", "sent")
    lines = timeline(read_trace(trace_file), 2, {"sent"}, (1, 3))
    assert code == 0 and lines and out == "".join(line + "\n" for line in lines)
    code, out, _ = _call(capsys, "trace", trace_file, "--node", "2", "--slots", "100:101")
    assert (code, out) == (0, f"no events for node 2 in {trace_file}\n")
    code, out, _ = _call(capsys, "trace", trace_file, "--node", "2")
    assert out == "".join(line + "\n" for line in timeline(read_trace(trace_file), 2, None, None))


def test_trace_follows_one_packet(capsys, trace_file):
    from slotnet.orchestrator.tools._trace_query import describe_follow, follow, format_event, parse_packet

    sent = next(ev for ev in _events(trace_file) if ev["event"] == "sent")
    packet_text = ",".join(str(x) for x in sent["message"][:3])
    mine, summary = follow(iter(_events(trace_file)), parse_packet(packet_text))
    code, out, _ = _call(capsys, "trace", trace_file, "--packet", packet_text)
    assert code == 0 and mine
    assert out == "".join(format_event(ev) + "\n" for ev in mine) + describe_follow(summary) + "\n"


def test_trace_exports_and_refuses(capsys, trace_file, tmp_path):
    perfetto, diagram = str(tmp_path / "p.json"), str(tmp_path / "d.svg")
    code, out, err = _call(capsys, "trace", trace_file, "--perfetto", perfetto, "--slots", "0:5", "-t", "hypercube:2")
    assert (code, err) == (0, "")
    assert out.startswith("wrote ") and out.endswith(f" events to {perfetto}\n") and os.path.isfile(perfetto)
    assert len(json.loads(Path(perfetto).read_text())["traceEvents"]) >= int(out.split()[1]) > 0
    code, out, err = _call(capsys, "trace", trace_file, "--diagram", diagram, "--slots", "0:4")
    assert (code, err) == (0, "") and os.path.isfile(diagram)
    assert out.startswith("wrote a diagram of 4 nodes x 4 slots (slots 0..3, ") and f" messages) to {diagram}" in out
    code, out, err = _call(capsys, "trace", trace_file, "--diagram", diagram, "--perfetto", perfetto, "--node", "1")
    assert code == 0 and out.count("\n") == 2
    for flag in ("--perfetto", "--diagram"):
        code, out, err = _call(capsys, "trace", trace_file, flag, trace_file)
        assert (code, out) == (2, "")
        assert err == f"slotnet trace: error: {flag} {trace_file!r} would overwrite the trace it reads\n"
    code, _, err = _call(capsys, "trace", trace_file, "--diagram", diagram, "--slots", "0:41")
    assert (code, err) == (2, "slotnet trace: error: --diagram draws at most 40 slots, --slots asks for 41\n")
    code, _, err = _call(capsys, "trace", trace_file, "--diagram", diagram, "--slots", "1:41")
    assert code == 0
    nodes = [w for n in range(17) for w in ("--node", str(n))]  # this trace's nodes are 0..3: the unknown are named first
    code, _, err = _call(capsys, "trace", trace_file, "--diagram", diagram, *nodes)
    assert code == 2 and err.startswith("slotnet trace: error: --node 4: no node 4 in ") and err.endswith("its nodes: 0..3\n")
    code, _, err = _call(capsys, "trace", trace_file, "--diagram", diagram, *nodes[:8])
    assert code == 0
    code, _, err = _call(capsys, "trace", trace_file, "--slots", "3")
    assert (code, err) == (2, "slotnet trace: error: --slots must look like A:B with 0 <= A < B, got '3'\n")


def test_trace_learns_links_only_for_an_export_without_topology(capsys, trace_file, tmp_path, monkeypatch):
    learned: list[Any] = []
    real = _cmd_trace.learn_links
    monkeypatch.setattr(_cmd_trace, "learn_links", lambda events: learned.append(1) or real(events))
    seen: list[tuple[Any, Any]] = []
    monkeypatch.setattr(_cmd_trace, "write_perfetto", lambda events, out, topology, links: seen.append((topology, links)) or 7)
    _call(capsys, "trace", trace_file)
    assert learned == []
    code, out, _ = _call(capsys, "trace", trace_file, "--perfetto", str(tmp_path / "p.json"))
    assert learned == [] and seen[-1][0].spec == "hypercube:2" and seen[-1][1] is None  # the header names it
    assert out == f"wrote 7 events to {tmp_path / 'p.json'}\n"
    _call(capsys, "trace", trace_file, "--perfetto", str(tmp_path / "p.json"), "-t", "hypercube:2")
    assert learned == [] and seen[-1][0].spec == "hypercube:2" and seen[-1][1] is None
    headless = tmp_path / "headless.jsonl"  # a trace without its header (an older one): links are learned
    lines = Path(trace_file).read_text().splitlines(keepends=True)
    headless.write_text("".join(line for line in lines if '"slotnet_trace"' not in line))
    _call(capsys, "trace", str(headless), "--perfetto", str(tmp_path / "p.json"))
    assert learned == [1] and seen[-1][0] is None and seen[-1][1] is not None


# --------------------------------------------------------------------------------------
# slotnet explore

_EXPLORE = ["explore", "deflection", "-t", "hypercube:2", "--offered", "0.5", "--slots", "8"]


@pytest.fixture
def explore_mod():
    return sys.modules["slotnet.orchestrator.tools._explore"]


def _scenario(fault: str, ok: bool, cls: str | None = None, faults: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"fault": fault, "ok": ok, "faults": faults or [{"kind": "crash", "slot": 1, "node": 1}]}
    if cls is not None:
        out["class"] = cls
    return out


@pytest.fixture
def fake_explore(monkeypatch, explore_mod):
    """explore/shrink_failure/format_explore replaced by recorders; the report is set per test."""
    state: dict[str, Any] = {"report": {"family": "single-node", "scenarios": [_scenario("none", True)]},
                             "explore": [], "shrink": []}

    def explore(spec, family=None, **kw):
        state["explore"].append((spec, family, kw))
        return json.loads(json.dumps(state["report"]))

    def shrink_failure(spec, failing, cls=None):
        state["shrink"].append((spec, failing, cls))
        return {"faults": [{"kind": "crash", "slot": 2, "node": 1}], "verdict": {"reasons": ["lost 3", "late"]},
                "runs": 5}

    monkeypatch.setattr(explore_mod, "explore", explore)
    monkeypatch.setattr(explore_mod, "shrink_failure", shrink_failure)
    monkeypatch.setattr(explore_mod, "format_explore", lambda report: f"REPORT {report['family']}")
    return state


def test_explore_passes_every_option_on(capsys, fake_explore):
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "crash-points", "--crash-slots", "5,1,3,1", "--samples", "4",
                           "--jobs", "2", "--detect", "never", "--seed", "3", "--warmup", "1", "-p", "order=random",
                           "--max-backlog", "6")
    assert (code, out, err) == (0, "REPORT single-node\n", "")
    spec, family, kw = fake_explore["explore"][0]
    assert spec == RunSpec(scheme="deflection", topology="hypercube:2", params={"order": "random"},
                           load={"offered": 0.5}, slots=8, warmup=1, seed=3, max_backlog_per_node=6.0)
    assert family == "crash-points"
    progress = kw.pop("progress")
    assert isinstance(progress, RunsProgress)
    assert kw == {"schedule": None, "samples": 4, "crash_slots": [1, 3, 5], "jobs": 2, "detect": "never"}
    _call(capsys, *_EXPLORE, "--faults", "single-link")
    spec, family, kw = fake_explore["explore"][1]
    assert family == "single-link" and spec.slots == 8 and spec.seed == 0
    assert (kw["samples"], kw["crash_slots"], kw["jobs"], kw["detect"]) == (None, None, None, "default")
    code, out, _ = _call(capsys, *_EXPLORE, "--faults", "single-link", "--json")
    assert code == 0 and json.loads(out) == {"family": "single-node", "scenarios": [_scenario("none", True)]}


def test_explore_refusals(capsys, fake_explore, tmp_path):
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "crash-points", "--crash-slots", " , ")
    assert (code, err) == (2, "slotnet explore: error: --crash-slots needs at least one slot\n")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "crash-points", "--crash-slots", "a")
    assert (code, err) == (2, "slotnet explore: error: --crash-slots must be comma-separated integers, got 'a'\n")
    missing = str(tmp_path / "none.json")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", missing)
    assert (code, err) == (2, "slotnet explore: error: --faults must be one of single-link, single-node, double-link, "
                              f"crash-points, random or a faults file, got {missing!r}\n")
    faults = tmp_path / "f.json"
    faults.write_text(json.dumps([{"kind": "crash", "slot": 1, "node": 1}]))
    code, out, err = _call(capsys, *_EXPLORE, "--faults", str(faults), "--shrink", str(faults))
    assert (code, err) == (2, f"slotnet explore: error: --shrink {str(faults)!r} would overwrite the faults file it "
                              "judges\n")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", str(tmp_path))
    assert (code, err) == (2, f"slotnet explore: error: --shrink: {str(tmp_path)!r} is not a regular file\n")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "-t", "hypercube:x")
    assert code == 2 and err.startswith("slotnet explore: error: hypercube dimension")
    assert fake_explore["explore"] == []
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"kind": "no-such"}]))
    code, out, err = _call(capsys, *_EXPLORE, "--faults", str(bad))
    assert code == 2 and err.startswith("slotnet explore: error: ") and err.count("\n") == 1


def test_explore_schedule_of_a_family_or_file(tmp_path):
    assert _cmd_explore.explore_schedule("random") is None
    f = tmp_path / "f.json"
    entries = [{"kind": "crash", "slot": 1, "node": 1}, {"kind": "loss", "rate": 0.5}]
    f.write_text(json.dumps(entries))
    assert _cmd_explore.explore_schedule(str(f)) == entries


def test_explore_judges_a_faults_file_as_a_schedule(capsys, fake_explore, tmp_path):
    f = tmp_path / "f.json"
    f.write_text(json.dumps([{"kind": "crash", "slot": 1, "node": 1}]))
    code, out, err = _call(capsys, *_EXPLORE, "--faults", str(f))
    assert code == 0
    spec, family, kw = fake_explore["explore"][0]
    assert family is None and kw["schedule"] == [{"kind": "crash", "slot": 1, "node": 1}]


def test_explore_shrinks_the_first_failure_and_writes_it(capsys, fake_explore, tmp_path):
    out_file = str(tmp_path / "min.json")
    fake_explore["report"] = {"family": "single-node", "scenarios": [
        _scenario("none", True), _scenario("crash node 1", False, faults=[{"kind": "crash", "slot": 0, "node": 1}]),
        _scenario("crash node 2", False)]}
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", out_file, "--seed", "2",
                           "-p", "order=random", "--max-backlog", "6.5")
    assert (code, err) == (0, "")
    spec, failing, cls = fake_explore["shrink"][0]
    assert spec.seed == 2 and failing == [{"kind": "crash", "slot": 0, "node": 1}] and cls is None
    assert json.loads(Path(out_file).read_text()) == [{"kind": "crash", "slot": 2, "node": 1}]
    assert Path(out_file).read_text() == json.dumps([{"kind": "crash", "slot": 2, "node": 1}], indent=1) + "\n"
    replay = (f"slotnet explore deflection -t hypercube:2 --param order=random --offered 0.5 --slots 8 --warmup 0 "
              f"--seed 2 --rng philox --max-backlog 6.5 --faults {out_file}")
    assert out == ("REPORT single-node\n"
                   "\nshrunk 'crash node 1' in 5 runs to 1 fault entries: crash@2:1\n"
                   "  fails: lost 3; late\n"
                   f"  written to {out_file}; replay: {replay}\n")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", out_file, "--json")
    shrunk = json.loads(out)["shrunk"]
    assert shrunk == {"faults": [{"kind": "crash", "slot": 2, "node": 1}], "verdict": {"reasons": ["lost 3", "late"]},
                      "runs": 5, "from": "crash node 1", "file": out_file,
                      "replay": "slotnet explore deflection -t hypercube:2 --offered 0.5 --slots 8 --warmup 0 --seed 0 "
                                f"--rng philox --faults {out_file}"}


def test_explore_with_nothing_to_shrink_writes_nothing(capsys, fake_explore, tmp_path):
    out_file = tmp_path / "min.json"
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", str(out_file))
    assert (code, out) == (0, "REPORT single-node\n\nnothing to shrink: every scenario is ok (no file written)\n")
    assert not out_file.exists() and fake_explore["shrink"] == []
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node")
    assert out == "REPORT single-node\n"


def test_explore_random_shrinks_the_gravest_class_and_prints_the_run(capsys, fake_explore, tmp_path, monkeypatch):
    out_file = str(tmp_path / "min.json")
    fake_explore["report"] = {"family": "random", "scenarios": [
        _scenario("s0", True, "ok"), _scenario("s1", False, "refused"), _scenario("s2", False, "verdict"),
        _scenario("s3", False, "books", faults=[{"kind": "crash", "slot": 3, "node": 0}]),
        _scenario("s4", False, "books"), _scenario("s5", False, "verdict")]}
    fuzz = sys.modules["slotnet.orchestrator.tools._fuzz"]
    monkeypatch.setattr(fuzz, "run_command", lambda request, texts, file: f"RUN {request['scheme']} {texts} {file}")
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "random", "--shrink", out_file)
    assert (code, err) == (0, "")
    spec, failing, cls = fake_explore["shrink"][0]
    assert failing == [{"kind": "crash", "slot": 3, "node": 0}] and cls == "books"
    assert out.startswith("REPORT random\n\nshrunk 's3' in 5 runs to 1 fault entries: crash@2:1\n")
    assert out.endswith(f"  run: RUN deflection [] {out_file}\n")
    fake_explore["report"] = {"family": "random", "scenarios": [_scenario("s1", False, "refused")]}
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "random", "--shrink", out_file)
    assert out.endswith("nothing to shrink: every scenario is ok (no file written)\n")


def test_explore_shrunk_to_no_fault_says_so(capsys, fake_explore, tmp_path, explore_mod, monkeypatch):
    out_file = str(tmp_path / "min.json")
    fake_explore["report"] = {"family": "single-node", "scenarios": [_scenario("none", False)]}
    monkeypatch.setattr(explore_mod, "shrink_failure", lambda spec, failing, cls=None: {
        "faults": [{"kind": "detect", "slots": 1}], "verdict": {"reasons": ["r"]}, "runs": 1})
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", out_file)
    assert code == 0, err
    texts = ", ".join(FaultSchedule.parse(file=out_file).to_list())
    sep = "; " if texts else ""
    assert f"to 1 fault entries: {texts}{sep}no fault: the run fails without faults\n" in out


def test_explore_shrink_file_that_cannot_be_written_fails_after_the_runs(capsys, fake_explore, tmp_path, monkeypatch):
    out_file = str(tmp_path / "min.json")
    fake_explore["report"] = {"family": "single-node", "scenarios": [_scenario("c", False)]}
    real_open = open

    def failing_open(path, mode="r", *a, **kw):
        if str(path) == out_file and mode == "w":
            raise OSError(28, "No space left on device")
        return real_open(path, mode, *a, **kw)

    monkeypatch.setattr("builtins.open", failing_open)
    code, out, err = _call(capsys, *_EXPLORE, "--faults", "single-node", "--shrink", out_file)
    assert (code, out) == (1, "")
    assert err == f"slotnet explore: error: --shrink: cannot write {out_file!r}: No space left on device\n"


def test_replay_command_quotes_every_word():
    spec = RunSpec("deflection", "hypercube:2", load={"offered": 0.25, "lam": 2.0}, slots=8, warmup=1, seed=4)
    args = argparse.Namespace(param=["a=x y", "b=1"], max_backlog=None, shrink="o u t.json")
    assert _cmd_explore.replay_command(args, spec) == (
        "slotnet explore deflection -t hypercube:2 --param 'a=x y' --param b=1 --offered 0.25 --lam 2 --slots 8 "
        "--warmup 1 --seed 4 --rng philox --faults 'o u t.json'")
    args.max_backlog = 0.0
    assert _cmd_explore.replay_command(args, spec).endswith("--seed 4 --rng philox --max-backlog 0 --faults 'o u t.json'")


# --------------------------------------------------------------------------------------
# slotnet repro


@pytest.fixture
def fake_repro(monkeypatch):
    repro_all = sys.modules.get("slotnet.orchestrator.tools.repro_all") or __import__(
        "slotnet.orchestrator.tools.repro_all", fromlist=["x"])
    state: dict[str, Any] = {"calls": [], "rows": [Row("E", "c", "m", 1.0, 1.0, 0.1, 1.0)], "raise": None,
                             "many": [], "plots": [], "cache": None}

    def repro(paper, **kw):
        state["calls"].append((paper, kw))
        if kw["on_rows"] is not None and state["rows"]:
            kw["on_rows"](state["rows"][:1])
        if state["raise"] is not None:
            raise state["raise"]
        return state["rows"], 1.25

    monkeypatch.setattr(_repro, "repro", repro)
    monkeypatch.setattr(repro_all, "repro_many", lambda args, rhos: state["many"].append((args.paper, rhos)) or 0)
    monkeypatch.setattr(repro_all, "check_figure_output", lambda *a: state["plots"].append(a))
    monkeypatch.setattr(repro_all, "open_cache", lambda args: state["cache"])
    return state


def test_repro_passes_its_options_and_prints_rows_as_they_come(capsys, fake_repro):
    row2 = Row("E", "d", "m", 2.0, 2.0, 0.1, 2.0)
    fake_repro["rows"] = [fake_repro["rows"][0], row2]
    code, out, err = _call(capsys, "repro", "stamoulis", "--seed", "4", "--jobs", "2", "--quick", "--sweep-d", "3",
                           "--sweep-rho", "0.1, 0.5,", "--sweep-only", "--dims", "2-3", "--hours", "1.5",
                           "--shards", "2")
    assert (code, err) == (0, "")
    paper, kw = fake_repro["calls"][0]
    progress, on_rows = kw.pop("progress"), kw.pop("on_rows")
    assert isinstance(progress, RunsProgress) and callable(on_rows)
    assert (paper, kw) == ("stamoulis", {"seed": 4, "jobs": 2, "quick": True, "sweep_d": 3, "sweep_rho": [0.1, 0.5],
                                         "plot": None, "sweep_only": True, "cache": None, "dims": "2-3", "hours": 1.5,
                                         "shards": 2})
    rows = fake_repro["rows"]
    assert out == (_repro.format_rows(rows[:1], legend=False) + "\n" + _repro.format_rows(rows[1:], legend=False) + "\n"
                   + "\n".join(_repro.LEGEND) + "\n2 rows in 1.2 s\n")
    _call(capsys, "repro", "stamoulis", "--sweep-d", "1")
    paper, kw = fake_repro["calls"][1]
    assert "dims" not in kw and "hours" not in kw and "shards" not in kw
    assert (kw["seed"], kw["jobs"], kw["quick"], kw["sweep_rho"], kw["sweep_only"]) == (1, None, False, None, False)


def test_repro_output_without_rows_with_a_plot_and_a_cache_note(capsys, fake_repro):
    fake_repro["rows"] = []
    fake_repro["cache"] = SimpleNamespace(write_error="disk full")
    code, out, err = _call(capsys, "repro", "stamoulis", "--plot", "p.png")
    assert code == 0
    assert out == "no rows\n0 rows in 1.2 s\nplot saved to p.png\n"
    assert err == "slotnet repro: note: results not kept: disk full\n"
    assert fake_repro["plots"] == [("--plot", "p.png", "pip install 'slotnet[plot]' (or leave out --plot)")]
    assert fake_repro["calls"][0][1]["plot"] == "p.png"
    assert fake_repro["calls"][0][1]["cache"] is fake_repro["cache"]
    fake_repro["cache"] = SimpleNamespace(write_error="")
    code, out, err = _call(capsys, "repro", "stamoulis")
    assert err == "" and fake_repro["plots"] == [("--plot", "p.png", "pip install 'slotnet[plot]' (or leave out --plot)")]


def test_repro_json(capsys, fake_repro):
    code, out, err = _call(capsys, "repro", "stamoulis", "--json", "--seed", "3")
    assert (code, err) == (0, "")
    assert fake_repro["calls"][0][1]["on_rows"] is None
    d = json.loads(out)
    assert d.pop("provenance")["command"] == "slotnet repro stamoulis --seed 3"  # machine-dependent apart from it
    assert d == {"paper": "stamoulis", "seed": 3, "timing": {"wall_seconds": 1.25},
                 "rows": [json.loads(json.dumps(r.as_dict())) for r in fake_repro["rows"]]}


def test_repro_partial_results_are_printed_then_fail(capsys, fake_repro):
    row2 = Row("E", "d", "m", 2.0, 2.0, 0.1, 2.0)
    first = fake_repro["rows"][0]
    fake_repro["raise"] = _repro.PartialRepro("plot failed", [first, row2])
    code, out, err = _call(capsys, "repro", "stamoulis")
    assert (code, err) == (1, "slotnet repro: error: plot failed\n")
    assert out == _repro.format_rows([first], legend=False) + "\n" + _repro.format_rows([row2]) + "\n"
    fake_repro["raise"] = _repro.PartialRepro("plot failed", [first])
    code, out, err = _call(capsys, "repro", "stamoulis")
    assert out == _repro.format_rows([first], legend=False) + "\n"
    code, out, err = _call(capsys, "repro", "stamoulis", "--json", "--seed", "2")
    assert (code, err) == (1, "slotnet repro: error: plot failed\n")
    d = json.loads(out)
    assert d.pop("provenance")["command"] == "slotnet repro stamoulis --seed 2"
    assert d == {"paper": "stamoulis", "seed": 2, "error": "plot failed", "rows": [json.loads(json.dumps(first.as_dict()))]}


def test_repro_refusals_and_all(capsys, fake_repro):
    code, out, err = _call(capsys, "repro", "stamoulis", "--sweep-rho", "0.1,x")
    assert (code, err) == (2, "slotnet repro: error: --sweep-rho must be comma-separated numbers, got '0.1,x'\n")
    for jobs in ("0", "-1"):
        code, out, err = _call(capsys, "repro", "stamoulis", "--jobs", jobs)
        assert (code, err) == (2, f"slotnet repro: error: --jobs must be >= 1, got {jobs}\n")
    code, out, err = _call(capsys, "repro", "stamoulis", "--sweep-d", "0")
    assert (code, err) == (2, "slotnet repro: error: --sweep-d must be a cube dimension (an integer >= 1), got 0\n")
    assert fake_repro["calls"] == []
    _call(capsys, "repro", "stamoulis", "--jobs", "1", "--sweep-d", "1")
    assert len(fake_repro["calls"]) == 1
    assert _call(capsys, "repro", "all", "--sweep-rho", "0.5")[0] == 0
    assert _call(capsys, "repro", "stamoulis", "--html", "r.html")[0] == 0
    assert fake_repro["many"] == [("all", [0.5]), ("stamoulis", None)] and len(fake_repro["calls"]) == 1


# --------------------------------------------------------------------------------------
# slotnet schemes, and what the reference pages take from here


def test_scheme_example_picks_the_first_topology_the_spec_accepts():
    import dataclasses

    d = SCHEMES["deflection"]
    assert describe.EXAMPLE_LOAD == 0.5 and describe.EXAMPLE_SLOTS == 500
    assert cli.scheme_example(d) == [["run", "deflection", "-t", "hypercube:4", "--offered", "0.5", "--slots", "500"],
                                     ["theory", "deflection", "-t", "hypercube:4", "--offered", "0.5"]]
    assert cli.scheme_example(dataclasses.replace(d, theory=None)) == [
        ["run", "deflection", "-t", "hypercube:4", "--offered", "0.5", "--slots", "500"]]
    assert cli.scheme_example(dataclasses.replace(d, topologies=("mesh", "hypercube"))) == [
        ["run", "deflection", "-t", "hypercube:4", "--offered", "0.5", "--slots", "500"],
        ["theory", "deflection", "-t", "hypercube:4", "--offered", "0.5"]]
    assert cli.scheme_example(dataclasses.replace(d, topologies=("ring",))) == []
    assert cli.scheme_example(dataclasses.replace(d, topologies=())) == []
    q = SCHEMES["pmnb"]
    ex = cli.scheme_example(q)
    assert ex[0][:4] == ["run", "pmnb", "-t", "torus:4x4"] and "--slots" not in ex[0] and len(ex[0]) == 4
    assert ex[1] == ["theory", "pmnb", "-t", "torus:4x4"]
    graph = "edges:0-1,1-2,2-3,3-0,0-2"
    want = {"hypercube": ("hypercube:4", "hypercube:3"), "torus": ("torus:4x4", "torus:8", "torus:4x4x4"),
            "mesh": ("mesh:4x4", "mesh:8", "mesh:4x4x4"), "ring": ("ring:8",), "graph": (graph,),
            "any": ("hypercube:4", "torus:4x4", "mesh:4x4", "ring:8", graph)}
    assert want == describe.EXAMPLE_TOPOLOGIES
    assert cli.scheme_example(dataclasses.replace(d, topologies=("anynet",))) == []  # no file to name


def test_scheme_example_skips_topologies_the_spec_refuses(monkeypatch):
    import dataclasses

    tried: list[str] = []

    class Spec(RunSpec):
        def prepare(self, **kw):
            tried.append(self.topology)
            assert (self.load, self.slots) == ({"rho": 0.5}, 500)
            if self.topology != "torus:8":
                raise SpecError("no")
            return None

    monkeypatch.setattr(describe, "RunSpec", Spec)
    star = dataclasses.replace(SCHEMES["star"], topologies=("torus", "mesh"))
    assert cli.scheme_example(star) == [["run", "star", "-t", "torus:8", "--rho", "0.5", "--slots", "500"],
                                        ["theory", "star", "-t", "torus:8", "--rho", "0.5"]]
    assert tried == ["torus:4x4", "torus:8"]
    tried.clear()
    assert cli.scheme_example(dataclasses.replace(star, topologies=("mesh",))) == []
    assert tried == ["mesh:4x4", "mesh:8", "mesh:4x4x4"]


def test_scheme_theory_and_faults_lines():
    import dataclasses

    d = SCHEMES["deflection"]
    assert cli.scheme_theory(dataclasses.replace(d, theory=None)) == \
        "none: `slotnet theory` refuses this scheme, and a run shows the simulation alone"
    assert cli.scheme_theory(d) == ("yes, headed 'theory' beside a run's simulation (the paper's formulas and bounds); "
                                    "`slotnet theory deflection` prints it alone, under the run's metric names")
    assert cli.scheme_theory(dataclasses.replace(d, theory_label="plan")) == (
        "yes, headed 'plan' beside a run's simulation (computed by executing the paper's algorithm centrally, not a "
        "formula); `slotnet theory deflection` prints it alone, under the run's metric names")
    kinds = sorted(FAULT_KINDS)
    assert cli.scheme_faults(d) == (f"every kind ({', '.join(kinds)})", None)
    some = dataclasses.replace(d, faults=frozenset({kinds[1], kinds[0]}), faults_why="it cannot")
    assert cli.scheme_faults(some) == (f"{kinds[0]}, {kinds[1]}", f"{', '.join(kinds[2:])}: it cannot")
    assert cli.scheme_faults(dataclasses.replace(d, faults=frozenset(), faults_why="w")) == \
        ("none", f"{', '.join(kinds)}: w")
    assert cli.scheme_faults(dataclasses.replace(d, faults=frozenset(FAULT_KINDS))) == (", ".join(kinds), None)


def _toy(**kw: Any) -> Scheme:
    base: dict[str, Any] = dict(
        name="toy", summary="a ``toy`` scheme", source=":cite:`Doe` §2", topologies=("hypercube", "ring"),
        loads=(Load("rho", "load per ``node``", "R"),),
        params=(Param("mode", str, "a", "how it ``goes``", ("a", "b")), Param("k", int, 3, "a count")))
    base.update(kw)
    return _scheme(**base)


def test_describe_scheme_in_full(monkeypatch):
    monkeypatch.setattr(describe, "scheme_example", lambda s: [["run", s.name, "-t", "a b"], ["theory", s.name]])
    text = cli.describe_scheme(_toy(until="quiescent", theory=lambda setup: {},
                                    faults=frozenset({"crash"}), faults_why="it ``cannot``"))
    refused = ", ".join(sorted(k for k in FAULT_KINDS if k != "crash"))
    assert text == "\n\n".join([
        "toy: a toy scheme",
        _help.listing("about", [("source", "Doe §2"), ("topologies", "hypercube, ring"),
                               ("runs", "until the network is quiet (--slots is an upper bound)"),
                               ("theory", cli.scheme_theory(_toy(theory=lambda s: {}))), ("faults", "crash"),
                               ("refuses", f"{refused}: it cannot")]),
        "load flags:\n  --rho R  load per node",
        "parameters:\n  --param mode=...  how it goes; one of a, b; default a\n  --param k=...     a count; default 3",
        "example:\n  slotnet run toy -t 'a b'\n  slotnet theory toy"])
    assert "source      Doe §2" in text


def test_describe_scheme_without_loads_params_or_example(monkeypatch):
    monkeypatch.setattr(describe, "scheme_example", lambda s: [])
    toy = _toy(loads=(), params=())
    text = cli.describe_scheme(toy)
    parts = text.split("\n\n")
    assert parts[2:] == ["load flags: none", "parameters: none"]
    assert parts[1] == _help.listing("about", [
        ("source", "Doe §2"), ("topologies", "hypercube, ring"), ("runs", "the given --slots"),
        ("theory", cli.scheme_theory(toy)), ("faults", f"every kind ({', '.join(sorted(FAULT_KINDS))})")])
    assert "\n  refuses" not in text


def test_schemes_lists_every_scheme(capsys, monkeypatch):
    a = _toy(name="b-toy", faults=frozenset({"crash"}), faults_why="``why``")
    b = _toy(name="a-toy", loads=(), params=(Param("k", int, 3, "a ``count``"),))
    monkeypatch.setattr(_cmd_schemes, "SCHEMES", {"b-toy": a, "a-toy": b})
    registry = sys.modules["slotnet.schemes._registry"]
    monkeypatch.setattr(registry, "FAILED", {"zz": "boom", "aa": "bang"})
    code, out, err = _call(capsys, "schemes")
    assert code == 0
    refused = ", ".join(sorted(k for k in FAULT_KINDS if k != "crash"))
    assert out == (
        "a-toy: a toy scheme\n"
        "    source: Doe §2\n"
        "    topologies: hypercube, ring; load: none\n"
        f"    faults: every kind ({', '.join(sorted(FAULT_KINDS))})\n"
        "    --param k=...  a count; default 3\n"
        "b-toy: a toy scheme\n"
        "    source: Doe §2\n"
        "    topologies: hypercube, ring; load: --rho\n"
        f"    faults: crash; refuses {refused}: why\n"
        "    --param mode=...  how it goes; one of a, b; default a\n"
        "    --param k=...  a count; default 3\n"
        "\n(`slotnet schemes NAME` shows one scheme in full, with a command that runs it)\n")
    assert err == "(scheme package aa failed to load: bang)\n(scheme package zz failed to load: boom)\n"


def test_schemes_name_describes_one(capsys, monkeypatch):
    monkeypatch.setattr(_cmd_schemes, "describe_scheme", lambda s: f"ABOUT {s.name}")
    assert _call(capsys, "schemes", "star") == (0, "ABOUT star\n", "")
    code, out, err = _call(capsys, "schemes", "no-such")
    assert code == 2 and out == "" and err.startswith("slotnet schemes: error: ") and "no-such" in err


# --------------------------------------------------------------------------------------
# slotnet shard


def test_shard_parses_its_index_and_runs(capsys, monkeypatch):
    shard = sys.modules.get("slotnet.orchestrator.shard._shard") or __import__(
        "slotnet.orchestrator.shard._shard", fromlist=["x"])
    calls: list[tuple[Any, ...]] = []

    async def run_shard(*a):
        calls.append(a)

    monkeypatch.setattr(shard, "run_shard", run_shard)
    assert _call(capsys, "shard", "--broker", "mqtt://b:1", "--run", "R", "--shard", "1/2") == (0, "", "")
    assert _call(capsys, "shard", "--broker", "mqtt://b:1", "--run", "R", "--shard", "0/1")[0] == 0
    assert calls == [("mqtt://b:1", "R", 1, 2), ("mqtt://b:1", "R", 0, 1)]
    for bad in ("2/2", "3/2", "1", "1-2", "a/2", "1/b", "-1/2", "/2", "1/"):
        code, out, err = _call(capsys, "shard", "--broker", "B", "--run", "R", f"--shard={bad}")
        assert (code, out, err) == (2, "", f"slotnet shard: error: --shard must look like I/K with 0 <= I < K, got "
                                           f"{bad!r}\n")
    assert len(calls) == 2


# --------------------------------------------------------------------------------------
# main: dispatch and the exit status of each failure


@pytest.mark.parametrize("argv", [["run", "s", "-t", "x"], ["theory", "s", "-t", "x"], ["trace", "f"],
                                  ["repro", "p"], ["explore", "s", "-t", "x", "--faults", "f"], ["schemes"],
                                  ["shard", "--broker", "b", "--run", "r", "--shard", "0/1"]])
def test_main_dispatches_each_command_to_its_handler(capsys, monkeypatch, argv):
    seen: list[tuple[str, argparse.Namespace]] = []
    for name in ("run", "theory", "trace", "repro", "explore", "schemes", "shard"):
        monkeypatch.setattr(_main, f"cmd_{name}", lambda args, name=name: seen.append((name, args)) or 7)
    assert _call(capsys, *argv) == (7, "", "")
    assert [n for n, _ in seen] == [argv[0]] and seen[0][1].command == argv[0]


def _raising(exc: BaseException):
    def handler(args):
        print("partial")
        raise exc
    return handler


@pytest.mark.parametrize("exc, code, message", [
    (NodeFailure(3, 7, RuntimeError("boom")), 1, "slotnet schemes: failed: {exc}\n"),
    (SpecError("bad"), 2, "slotnet schemes: error: bad\n"),
    (SchemeError("bad scheme"), 2, "slotnet schemes: error: bad scheme\n"),
    (_common.OutputError("cannot write"), 1, "slotnet schemes: error: cannot write\n"),
    (KeyboardInterrupt(), 130, "slotnet schemes: interrupted\n"),
    (BrokenPipeError(32, "Broken pipe"), 0, ""),
    (OSError(28, "No space left on device"), 1, "slotnet schemes: error: cannot write output: No space left on device\n"),
    (OSError("odd"), 1, "slotnet schemes: error: cannot write output: odd\n"),
    (OSError(2, "No such file or directory", "x.json"), 1, "slotnet schemes: error: x.json: No such file or directory\n"),
])
def test_main_turns_each_failure_into_its_status_and_one_line(capsys, monkeypatch, exc, code, message):
    monkeypatch.setattr(_main, "cmd_schemes", _raising(exc))
    dropped: list[int] = []
    monkeypatch.setattr(_main, "_drop_stdout", lambda: dropped.append(1))
    got, out, err = _call(capsys, "schemes")
    assert (got, out) == (code, "partial\n")
    assert err == message.format(exc=exc)
    assert dropped == ([1] if isinstance(exc, OSError) and exc.filename is None else [])


def test_main_fails_when_the_final_flush_does(capsys, monkeypatch):
    class Full(io.StringIO):
        def flush(self):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(_main, "cmd_schemes", lambda args: 0)
    monkeypatch.setattr(_main, "_drop_stdout", lambda: None)
    monkeypatch.setattr(sys, "stdout", Full())
    assert cli.main(["schemes"]) == 1
    assert capsys.readouterr().err == "slotnet schemes: error: cannot write output: No space left on device\n"


def test_main_with_stdout_closed_prints_nothing_and_fails(capsys, monkeypatch):
    ran: list[int] = []
    monkeypatch.setattr(_main, "cmd_schemes", lambda args: ran.append(1) or 0)
    monkeypatch.setattr(sys, "stdout", None)
    assert cli.main(["schemes"]) == 1
    assert ran == []
    assert capsys.readouterr().err == "slotnet schemes: error: stdout is closed: nothing can be printed\n"


def test_drop_stdout_points_stdout_at_devnull(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    with open(target, "w") as fh:
        monkeypatch.setattr(sys, "stdout", fh)
        _main._drop_stdout()
        os.write(fh.fileno(), b"gone")
    assert target.read_text() == ""
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # no file descriptor: nothing to do, no error
    _main._drop_stdout()


def test_listing_wraps_each_meaning_inside_the_help_width():
    out = _help.listing("t", [("name", " ".join("a" * 200))]).splitlines()  # one-letter words: lines fill exactly
    assert [len(line) for line in out[1:-1]] == [_help.HELP_WIDTH] * (len(out) - 2)
    assert all(line.startswith(" " * 8) for line in out[2:])
