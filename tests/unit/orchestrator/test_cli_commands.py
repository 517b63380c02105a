"""The command line: JSON contract, human tables, traces, help, and every bad-input path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from slotnet.orchestrator.cli import build_parser, main
from slotnet.orchestrator.tools._trace_query import read_trace
from tests.support.cli import call_main as _run


def test_run_json_has_the_contract_fields(capsys):
    """--json prints one object with scheme, topology, seed, slots, warmup, metrics, invariants.ok."""
    code, out, _ = _run(capsys, "run", "deflection", "--topology", "hypercube:4", "--offered", "1",
                        "--slots", "60", "--warmup", "10", "--seed", "3", "--json")
    assert code == 0
    d = json.loads(out)
    assert {"scheme", "topology", "seed", "slots", "warmup", "metrics", "invariants"} <= d.keys()
    assert d["invariants"]["ok"] is True and d["seed"] == 3 and d["slots"] == 60
    for name in ("link_utilization", "accept_fraction", "mean_delay", "deflection_fraction",
                 "deflection_distance_hist", "throughput_per_node", "stable"):
        assert name in d["metrics"]
    assert d["theory"]["mean_delay"] > 0


def test_run_human_output_puts_theory_beside_simulation(capsys):
    """The table has simulation and theory columns for the paper's metrics."""
    code, out, _ = _run(capsys, "run", "deflection", "-t", "hypercube:4", "--offered", "0.5", "--slots", "50")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert "simulation" in header and "theory" in header
    assert any(line.startswith("mean_delay") for line in out.splitlines())
    assert "invariants: ok" in out


@pytest.mark.parametrize(("argv", "heading"), [
    (("m2o-rec", "-t", "mesh:4x4"), "reference run"),
    (("m2o-offline", "-t", "mesh:4x4"), "plan"),
    (("m2o-bfs", "-t", "mesh:4x4"), "theory"),
])
def test_run_report_names_where_the_values_beside_the_simulation_come_from(capsys, argv, heading):
    """m2o-rec's column holds its centrally executed reference run, not a formula: the heading says so."""
    code, out, _ = _run(capsys, "run", *argv, "--seed", "1")
    head = next(line for line in out.splitlines() if line.startswith("metric "))
    assert code == 0 and head.split()[:2] == ["metric", "simulation"] and head.rstrip().endswith(f"sim vs {heading}")


def test_theory_prints_the_same_metric_names(capsys):
    """slotnet theory deflection reports the model under the run's metric names."""
    code, out, _ = _run(capsys, "theory", "deflection", "-t", "hypercube:6", "--offered", "1", "--json")
    assert code == 0
    th = json.loads(out)["theory"]
    assert round(th["link_utilization"], 4) == 0.6629 and round(th["mean_delay"], 4) == 4.2816


def test_trace_then_timeline_and_perfetto(capsys, tmp_path):
    """A traced run's file gives a node timeline and a Perfetto export."""
    trace = tmp_path / "t.jsonl"
    code, _, _ = _run(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20",
                      "--trace", str(trace), "--trace-nodes", "2,5", "--trace-slots", "0:10")
    assert code == 0
    events = list(read_trace(trace))  # the header line skipped
    assert events and {e["node"] for e in events} <= {2, 5} and max(e["slot"] for e in events) < 10
    assert {"sent", "step"} <= {e["event"] for e in events}
    code, out, _ = _run(capsys, "trace", str(trace), "--node", "2")
    assert code == 0 and "sent" in out and out.splitlines()[0].split()[0] == "0"
    perf = tmp_path / "p.json"
    code, out, _ = _run(capsys, "trace", str(trace), "--perfetto", str(perf))
    assert code == 0 and json.loads(perf.read_text())["traceEvents"]


def test_every_subcommand_has_complete_help():
    """slotnet --help and each subcommand's help list their commands and options."""
    parser = build_parser()
    top = parser.format_help()
    for cmd in ("run", "theory", "trace", "schemes"):
        assert cmd in top
    sub = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    run_help = sub["run"].format_help()
    for flag in ("--topology", "--param", "--offered", "--lam", "--rho", "--slots", "--warmup", "--seed",
                 "--json", "--fault", "--faults", "--trace", "--trace-nodes", "--max-backlog"):
        assert flag in run_help
    assert "--node" in sub["trace"].format_help() and "--perfetto" in sub["trace"].format_help()


BAD = [
    (["run", "deflection", "-t", "hypercube:0", "--offered", "1"], "hypercube dimension must be an integer >= 1"),
    (["run", "deflection", "-t", "torus:1x4", "--offered", "1"], "torus side must be >= 2"),
    (["run", "deflection", "-t", "mesh:3x", "--offered", "1"], "sides must be positive integers"),
    (["run", "deflection", "-t", "cube:3", "--offered", "1"], "unknown topology kind"),
    (["run", "nosuch", "-t", "hypercube:3"], "unknown scheme 'nosuch'"),
    (["run", "deflection", "-t", "hypercube:3"], "needs exactly one load"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "4"], "must be in [0, d=3]"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "-1"], "must be a finite number >= 0"),
    (["run", "deflection", "-t", "hypercube:3", "--rho", "0.5"], "takes --offered or --lam, not --rho"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "0"], "slots must be an integer >= 1"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "10", "--warmup", "10"], "warmup (10) must be less"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--seed", "-2"], "seed must be an integer >= 0"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--param", "nope=1"], "has no parameter 'nope'"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--param", "order"], "must look like NAME=VALUE"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--param", "order=best"], "expected one of"),
    (["run", "deflection", "-t", "hypercube:3", "--param", "schedule=6:x"], "--param schedule"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--fault", "crash@2:99"], "node 99 not in 0..7"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--fault", "loss=7"], "must be in [0, 1]"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--faults", "/nonexistent.json"], "fault file"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--trace-nodes", "1"], "need --trace FILE"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--trace", "x", "--trace-slots", "5:2"], "A < B"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "ten"], "invalid int value"),
    (["trace", "/nonexistent.jsonl", "--node", "1"], "cannot read trace"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--param", "order=random", "--param", "order=oldest"],
     "--param order given twice"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--fault", "recover@5:1"], "no crash before it"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--fault", "link-up@5:1:0"], "no link-down before it"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "50", "--fault", "loss=0.1@60"],
     "after the run's 50 slots"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--trace", "x", "--trace-events", "nope"],
     "never occurs in a deflection run"),
    (["run", "deflection", "-t", "hypercube:24", "--offered", "1"], "this machine has"),
    (["trace", "/nonexistent.jsonl", "--node", "1", "--slots", "4"], "--slots must look like A:B"),
    (["repro", "greenberg-hajek", "--sweep-d", "0"], "--sweep-d must be a cube dimension"),
    (["theory", "deflection", "-t", "hypercube:3"], "needs exactly one load"),
]


@pytest.mark.parametrize("argv, fragment", BAD, ids=[" ".join(a[:1] + a[3:]) for a, _ in BAD])
def test_bad_input_exits_2_with_one_line(capsys, argv, fragment):
    """Each bad input gives exit status 2 and one precise line on stderr, no traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors (through our one-line error())
        code = exc.code
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert fragment in err and "Traceback" not in err


def test_installed_command_reports_errors_without_traceback():
    """The real `slotnet` process exits 2 with one line for a bad topology."""
    proc = subprocess.run([sys.executable, "-m", "slotnet", "run", "deflection", "-t", "hypercube:x", "--offered", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr


def test_progress_bar_draws_only_when_enabled_and_slow(monkeypatch):
    """The progress line appears on a terminal once a run passes its delay, and is cleared."""
    import io

    from slotnet.orchestrator.engine._progress import Progress

    clock = iter([0.0, 0.5, 3.0, 3.1, 3.5])
    monkeypatch.setattr("slotnet.orchestrator.engine._progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    p = Progress(100, stream=out, after=2.0, enabled=True)   # start at t=0
    p.update(10)                                              # t=0.5: too early, nothing drawn
    assert out.getvalue() == ""
    p.update(49)                                              # t=3.0: drawn
    assert "slot 50/100" in out.getvalue()
    p.close()
    assert out.getvalue().endswith("\r")
    quiet = io.StringIO()
    q = Progress(100, stream=quiet, enabled=False)
    q.update(99)
    q.close()
    assert quiet.getvalue() == ""
