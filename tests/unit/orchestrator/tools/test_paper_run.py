"""The report's passes (a paper's default, then the pass its figures need) and the estimate of
what is left: papers timed here before, else each experiment's own estimate scaled to this machine."""

from __future__ import annotations

import io
import json
import re

import pytest

from slotnet.orchestrator.tools import _repro, repro_all
from slotnet.orchestrator.tools._paper_run import PaperRun
from slotnet.orchestrator.tools.results_cache import ResultsCache
from slotnet.schemes import EXPERIMENTS, Experiment, Row


def test_a_report_adds_the_pass_each_paper_names_for_its_figures():
    """greenberg-hajek gets its delay-against-d column, stamoulis its sweep; none with options or without --html."""
    parts = repro_all.report_parts(["greenberg-hajek", "mansour", "stamoulis"], quick=True)
    assert parts == [("greenberg-hajek", {}), ("greenberg-hajek", {"dims": "2-7"}), ("mansour", {}),
                     ("stamoulis", {}), ("stamoulis", {"sweep_d": 4, "sweep_rho": [0.2, 0.4, 0.6, 0.8], "sweep_only": True})]
    full = dict(repro_all.report_parts(["greenberg-hajek", "stamoulis"], quick=False)[1::2])
    assert full == {"greenberg-hajek": {"dims": "2-13"}, "stamoulis": {"sweep_d": 8, "sweep_only": True}}
    assert repro_all.report_parts(["stamoulis"], quick=True, options={"sweep_d": 6}) == [("stamoulis", {"sweep_d": 6})]
    assert PaperRun("stamoulis", 1, True, parts[-1][1]).label == "stamoulis --sweep-d 4 --sweep-rho 0.2,0.4,0.6,0.8 --sweep-only"
    assert PaperRun("greenberg-hajek", 1, False).label == "greenberg-hajek"


def test_each_experiment_estimates_its_passes_or_says_it_cannot():
    """A cost model (greenberg-hajek), measurements (the others), None where nothing was measured."""
    gh = repro_all.nominal_wall("greenberg-hajek", False, {"dims": "2-13"})
    assert gh is not None and gh > repro_all.nominal_wall("greenberg-hajek", True, {"dims": "2-7"}) > 0  # type: ignore[operator]
    assert repro_all.nominal_wall("mansour", True, {}) == 7.0 and repro_all.nominal_wall("mansour", False, {}) == 62.0
    assert repro_all.nominal_wall("varvarigos", False, {}) is None and repro_all.nominal_wall("nosuch", False, {}) is None
    sweep8 = repro_all.nominal_wall("stamoulis", False, {"sweep_d": 8, "sweep_only": True})
    assert sweep8 == pytest.approx(1715.0 / 4)


def test_the_progress_line_counts_estimated_papers_apart():
    out = io.StringIO()
    bar = repro_all.ReportProgress(1, 4, "a", ["b", "c", "d"], {"b": 60.0}, stream=out, enabled=True,
                                   nominal={"b": 1.0, "c": 30.0})
    bar.add(2)
    bar.done()
    assert "then about 1:30 for 2 more papers (1 from its experiment's estimate), 1 more paper not yet timed" in out.getvalue()
    assert "(estimate)" not in out.getvalue()  # a paper with no estimate: its runs' pace only


def test_before_its_first_run_finishes_a_paper_shows_its_own_estimate():
    out = io.StringIO()
    bar = repro_all.ReportProgress(1, 2, "a", ["b"], {}, stream=out, enabled=True, nominal={"a": 600.0})
    bar.add(3)
    assert "runs 0/3" in out.getvalue() and ", about 10:00 left (estimate); 1 more paper not yet timed" in out.getvalue()
    bar.done()
    assert out.getvalue().rsplit("\r", 1)[1].count("left") == 1  # then the runs' pace, not the estimate


def test_estimates_are_scaled_by_how_this_machine_compared_with_them(monkeypatch, tmp_path, capsys):
    """Paper a took 4x its estimate the last time here: b's estimate of 10 s is shown as 40 s; once a is
    computed again, its new wall time sets the scale."""
    req = dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=1)

    def run_it(runner, *, seed, quick, **options):
        runner([req])
        return [Row("T", "c", "m", None, 1.0, None, None)]

    monkeypatch.setitem(EXPERIMENTS, "a", Experiment("a", "doc", run_it, estimate=lambda quick, o: 5.0))
    monkeypatch.setitem(EXPERIMENTS, "b", Experiment("b", "doc", run_it, estimate=lambda quick, o: 10.0))
    cache = ResultsCache(tmp_path, version="v")
    (tmp_path / "walls.json").write_text(json.dumps({"quick": {"a": 20.0}}))
    runs = repro_all.run_papers(["a", "b"], seed=1, quick=True, jobs=1, cache=cache, figures=False, progress=True)
    err = capsys.readouterr().err
    first = re.findall(r"paper 1/2 a: [^\r]*", err)
    assert first and all("then about 0:40 for 1 more paper (1 from its experiment's estimate)" in line for line in first)
    # a was computed afresh: the scale is now its new wall over 5 s, and b is not yet timed (nothing after it)
    assert runs[0].cached == 0 and repro_all._walls(cache, quick=True)["a"] == round(runs[0].wall_s, 1)
    assert _repro.papers()  # the registry still answers with the two extra papers in it


def test_a_failing_estimate_is_no_estimate(monkeypatch):
    def broken(quick, options):
        raise ZeroDivisionError

    monkeypatch.setitem(EXPERIMENTS, "z", Experiment("z", "doc", lambda runner, **kw: [], estimate=broken))
    assert repro_all.nominal_wall("z", True, {}) is None
