"""What a user reads: narrow tables, ± explained, verdicts, progress, --version, timing apart."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import tracemalloc
from pathlib import Path

import pytest

from slotnet import RunSpec, run
from slotnet.errors import SchemeError
from slotnet.orchestrator import WALL_CLOCK_FIELDS
from slotnet.orchestrator.cli import _cmd_run
from slotnet.orchestrator.engine._progress import RunsProgress
from slotnet.orchestrator.tools import _repro as repro_mod
from slotnet.schemes import Experiment, Row
from slotnet.schemes._verdict import Explanation
from slotnet.schemes.broadcast import repro as bcast_repro
from tests.support.cli import call_main as _main


def test_quick_start_table_fits_100_columns_and_explains_plus_minus(capsys):
    """The README's first command prints lines of at most 100 columns, says what ± is, and shows no reprs."""
    code, out, _ = _main(capsys, "run", "deflection", "--topology", "hypercube:6", "--offered", "1.0", "--slots", "1100",
                         "--warmup", "100", "--seed", "1")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 100, max(out.splitlines(), key=len)
    assert "±" in out and "± is the 95% confidence half-width" in out
    # no dict/tuple reprs such as dropped={} or (6, 1); a distribution written B(6, 0.17) is notation, not a repr
    assert not re.search(r"[{}'()]\S*=|=\{\}|(?<![A-Za-z])\(\d+, ", out), out
    assert "dropped: none" in out
    assert re.search(r"^deflection_distance_hist\[0\]\s+0\.\d{4}\s+0\.\d{4}", out, re.M)


def test_version(capsys):
    """slotnet --version prints the distribution's version and which build of the hot path runs."""
    from slotnet._build import build

    code, out, _ = _main(capsys, "--version")
    assert code == 0 and re.fullmatch(r"slotnet \d+\.\d+\.\d+\S* \(hot path: (compiled|pure|mixed)\)\n", out)
    assert out.endswith(f"(hot path: {build()})\n")


def test_per_node_and_series_work_in_the_table(capsys):
    """--per-node and --series without --json print their tables."""
    code, out, _ = _main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20",
                         "--per-node", "--series")
    assert code == 0
    assert "per node:" in out and "per slot:" in out
    per_node = out[out.index("per node:"):].splitlines()
    assert per_node[1].split()[:3] == ["node", "accepted", "delivered"] and len(per_node) == 3 + 8
    series = out[out.index("per slot:"):out.index("per node:")].strip().splitlines()
    assert series[1].split()[0] == "slot" and len(series) == 3 + 20


def test_progress_goes_to_stderr_with_json_too(capsys, monkeypatch):
    """--json keeps the progress bar (stderr, terminals only); stdout stays one JSON object."""
    made = []

    class Recorder(_cmd_run.Progress):
        def __init__(self, total, enabled=None, **kw):
            super().__init__(total, stream=io.StringIO(), after=0.0, enabled=enabled is not False)
            made.append(self)

    monkeypatch.setattr(_cmd_run, "Progress", Recorder)
    code, out, _ = _main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20", "--json")
    assert code == 0 and json.loads(out)["slots"] == 20
    assert made and "slot" in made[0].stream.getvalue()
    _main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20", "--json", "--no-progress")
    assert len(made) == 2 and made[1].stream.getvalue() == ""  # --no-progress: made (it carries Ctrl-C), never drawn


def test_timing_is_one_key_users_can_drop():
    """Machine-dependent figures live under 'timing' (and where the result came from under 'provenance');
    without them two runs of one spec are byte-identical."""
    spec = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=200, seed=3)
    a, b = run(spec).to_dict(), run(spec).to_dict()
    assert WALL_CLOCK_FIELDS == ("timing", "provenance")
    assert set(a["timing"]) == {"wall_seconds", "performance"} and "wall_seconds" not in a and "performance" not in a
    assert a["timing"]["performance"]["messages"] > 0
    for d in (a, b):
        d.pop("timing")
        d.pop("provenance")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_runs_progress_counts_runs_and_estimates(monkeypatch):
    """runs done/total, elapsed and an estimate from the mean time per finished run; nothing off a terminal."""
    clock = iter([0.0, 0.0, 10.0, 20.0, 20.0])
    monkeypatch.setattr("slotnet.orchestrator.engine._progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    p = RunsProgress(stream=out, enabled=True)
    p.add(4)                                  # t=0
    p.done()                                  # t=10: 1 of 4 in 10 s: about 30 s left
    assert "runs 1/4, 0:10 elapsed, about 0:30 left" in out.getvalue()
    p.done()                                  # t=20
    assert out.getvalue().endswith("runs 2/4, 0:20 elapsed, about 0:20 left")
    p.close()
    assert out.getvalue().endswith("\r")
    quiet = io.StringIO()
    q = RunsProgress(stream=quiet)            # a StringIO is no terminal
    q.add(3)
    q.done()
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("jobs", [1, 2])
def test_runner_reports_each_finished_run(jobs):
    """The repro runner ticks the progress once per finished run, in order-independent fashion."""
    p = RunsProgress(stream=io.StringIO(), enabled=True)
    runner = repro_mod._Runner(jobs, p)
    req = [dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=s) for s in range(3)]
    results = runner(req)
    assert p.total == 3 and p.finished == 3 and len(results) == 3
    assert [r["_ok"] for r in results] == [True] * 3


def _experiment(batches: list[list[Row]], fail: str | None = None, seen: list[str] | None = None):
    def run_it(runner, *, seed, quick, **options):
        rows: list[Row] = []
        for batch in batches:
            runner.publish(batch)
            rows += batch
            if seen is not None:
                seen.append("published")
        if fail:
            raise SchemeError(fail)
        return rows
    return Experiment("fake", "a fake paper", run_it)


ROWS = [[Row("E1", "c1", "m", 1.0, 1.01, 0.05, 1.0)], [Row("E2", "c2", "m", None, 2.0, 0.01, 3.0)]]


def test_repro_prints_each_batch_as_it_completes(capsys, monkeypatch):
    """Rows reach stdout batch by batch, then the legend and the summary; none is printed twice."""
    outputs: list[str] = []

    def run_it(runner, *, seed, quick, **options):
        runner.publish(ROWS[0])
        outputs.append(capsys.readouterr().out)  # what the user sees before the second batch exists
        runner.publish(ROWS[1])
        return ROWS[0] + ROWS[1]

    monkeypatch.setattr(repro_mod, "get_experiment", lambda paper: Experiment("fake", "doc", run_it))
    code, out, _ = _main(capsys, "repro", "fake")
    assert code == 0
    assert "E1" in outputs[0] and "E2" not in outputs[0]
    assert out.count("E2") == 1 and "E1" not in out and "2 rows in" in out and "verdict: within" in out


def test_plot_without_matplotlib_is_refused_before_any_run(capsys, monkeypatch, tmp_path):
    """--plot checks for matplotlib first: exit 2, and the experiment never starts."""
    started = []
    monkeypatch.setattr(repro_mod, "get_experiment", lambda paper: started.append(paper))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, _, err = _main(capsys, "repro", "stamoulis", "--sweep-d", "4", "--sweep-only", "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "--plot needs matplotlib" in err and started == []


def test_plot_to_an_unwritable_path_is_refused_before_any_run(capsys, monkeypatch, tmp_path):
    """The plot's path is tried before the runs, not after."""
    monkeypatch.setattr(repro_mod, "get_experiment", lambda paper: pytest.fail("ran"))
    code, _, err = _main(capsys, "repro", "stamoulis", "--sweep-d", "4", "--plot", str(tmp_path / "no" / "x.png"))
    assert code == 2 and "--plot: cannot write" in err
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failed_plot_never_discards_the_rows(capsys, monkeypatch, as_json):
    """A plot that fails after the runs: every computed row is printed, then one error line, exit 1."""
    monkeypatch.setattr(repro_mod, "get_experiment", lambda paper: _experiment(ROWS, fail="--plot: cannot save 'x.png'"))
    code, out, err = _main(capsys, "repro", "fake", *(["--json"] if as_json else []))
    assert code == 1 and err.strip() == "slotnet repro: error: --plot: cannot save 'x.png'"
    if as_json:
        d = json.loads(out)
        assert [r["experiment"] for r in d["rows"]] == ["E1", "E2"] and "cannot save" in d["error"]
    else:
        assert "E1" in out and "E2" in out


def test_stamoulis_plot_save_error_is_a_scheme_error(tmp_path):
    """matplotlib's failure to save becomes a one-line SchemeError, not a traceback."""
    pytest.importorskip("matplotlib")
    with pytest.raises(SchemeError, match="cannot save"):
        bcast_repro._plot(str(tmp_path / "missing" / "x.png"), 4, [("bcast-dtree", 0.2)],
                          [{"mean_broadcast_delay": 5.0}])


def test_verdicts():
    """within the paper's agreement, a known slip (with its note), OUTSIDE with by how much, not judged."""
    assert Row("T", "c", "m", 4.0, 4.02, 0.05, 4.01).verdict() == "within"
    assert Row("T", "c", "m", None, 4.0, 0.01, 4.2).verdict().startswith("OUTSIDE: off the theory by 0.2")
    assert Row("T", "c", "m", None, 4.0, 0.01, 4.2, note=Explanation("a slip", corrected=4.0)).verdict() == "known: a slip"
    assert Row("T", "c", "m", None, 4.0, 0.01, 4.2, note="a slip").verdict().startswith("OUTSIDE")  # explains no value
    assert Row("T", "c", "m", 4.0, 4.0, None, None).verdict() == "-"  # a simulation with nothing to judge it by
    assert Row("T", "c", "m", 3.1525, None, None, 3.15251).verdict() == "within"  # a model row, to the printed digit
    assert Row("T", "c", "m", 3.1525, None, None, 3.16).verdict().startswith("OUTSIDE")
    assert Row("T", "c", "m", None, None, None, None, note="past the limit").verdict() == "not run: past the limit"
    assert Row("T", "c", "m", 1.0, 1.2, 0.01, 1.25).verdict() == "within"  # |paper - theory| is the paper's own agreement
    assert Row("T", "c", "m", 1.0, 1.2, 0.01, 1.25, tolerance=0.0).verdict().startswith("OUTSIDE")
    assert Row("T", "c", "m", 1.0, 1.01, 0.05, 1.0).as_dict()["verdict"] == "within"


def _runner_answering(value: float):
    def runner(requests):
        return [{"mean_broadcast_delay": value, "mean_broadcast_delay_ci95": 0.05, "mean_queue_per_node": value,
                 "mean_queue_per_node_ci95": 0.05, "mean_broadcast_delay_period_end": value,
                 "mean_broadcast_delay_period_end_ci95": 0.05, "_theory": {}} for _ in requests]
    return runner


def test_indirect_rows_carry_the_documented_correction():
    """Prop. 5 / Cor. 8 / Prop. 6 rows say why they sit off the simulation; the slot-by-slot rows do not need to."""
    from slotnet.schemes.broadcast import _theory_indirect_slots as model

    d, rho = 6, 0.3
    corrected = model.slot_delay(d, rho, "D")
    rows = bcast_repro.stamoulis(_runner_answering(corrected), seed=1, quick=True)
    by = {r.experiment: r for r in rows if r.experiment.startswith("indirect")}
    prop5, slot = by["indirect Rule D, Prop. 5"], by["indirect Rule D, Rules E-F slot by slot"]
    assert "3/2" in prop5.note and prop5.verdict().startswith("known: Prop. 5 counts the l1/l2 crossing")
    assert slot.note == "" and slot.verdict() == "within"
    assert by["indirect Rule D', Cor. 8"].note and by["indirect Q, Prop. 6"].note
    text = repro_mod.format_rows([prop5, slot])
    assert "known [1]" in text and "  [1] Prop. 5 counts" in text and "within" in text
    sweep = bcast_repro.stamoulis(_runner_answering(20.0), seed=1, quick=True, sweep_d=4, sweep_only=True)
    indirect = [r for r in sweep if r.case.startswith("bcast-indirect")]
    from slotnet.schemes.broadcast import theory

    reason = prop5.note.split(" -- ")[0]
    assert reason == bcast_repro.NOTES["Prop. 5"]
    # every sweep row gives the same reason, then its own numbers: the formula at its load and the run
    for r in indirect:
        formula = theory.indirect_delay(4, float(r.case.split("rho=")[1]))
        assert r.note.split(" -- ")[0] == reason and f"gives {formula:.4f}" in r.note
        assert "the run measures 20.0000" in r.note
    assert indirect


def test_repro_json_keeps_timing_apart(capsys, monkeypatch):
    """repro --json: rows with their verdicts, the wall time under timing."""
    monkeypatch.setattr(repro_mod, "get_experiment", lambda paper: _experiment(ROWS))
    code, out, _ = _main(capsys, "repro", "fake", "--json")
    d = json.loads(out)
    assert code == 0 and "wall_seconds" in d["timing"] and [r["verdict"] for r in d["rows"]][0] == "within"
    assert d["provenance"]["command"] == "slotnet repro fake --seed 1" and d["provenance"]["slotnet"]


def test_readme_python_section_runs(capsys):
    """The README's Python section (faults as a list of strings included) runs as printed."""
    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = text[text.index("## Python"):text.index("## Schemes")]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None and "faults = [" in code.group(1)
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.invariants["ok"] and result.faults[0] == "link-down@100:3:2"  # type: ignore[attr-defined]
    assert set(result.invariants["conservation"]["dropped"]) >= {"loss", "node_down"}  # type: ignore[attr-defined]


def test_perfetto_export_streams_in_constant_memory(tmp_path):
    """Exporting events holds one at a time: four times the events, about the same peak memory, far below a dict's."""
    from slotnet.orchestrator.tools._perfetto import write_perfetto

    def events(n):
        for i in range(n):
            yield {"slot": i // 50, "node": i % 50, "event": "sent", "port": 1, "message": [i, i + 1, 3]}

    def peak_of(n):
        tracemalloc.start()
        try:
            count = write_perfetto(events(n), tmp_path / "p.json")
            return count, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    _, small = peak_of(2_500)
    count, peak = peak_of(10_000)
    assert count == 10_050
    assert peak < 2**20, peak  # the whole export as a dict would take ~6 MiB
    assert peak < 1.5 * small + 2**16, (small, peak)  # a buffer growing with the events would quadruple
    assert len(json.loads((tmp_path / "p.json").read_text())["traceEvents"]) == count
