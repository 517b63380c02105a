"""Nonsense is refused with a precise message (or a clear row) before any slot runs."""

from __future__ import annotations

import pytest

from slotnet import FaultSchedule, RunSpec, SpecError, TraceSpec
from slotnet.errors import FaultSpecError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.engine import _memory
from slotnet.schemes import Row
from slotnet.schemes.broadcast import repro as bcast_repro

RUN = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "50"]


def _err(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    _, err = capsys.readouterr()
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
    return code, err


@pytest.mark.parametrize("faults, fragment", [
    (["recover@5:1"], "fault recover@5:1: node 1 is already up at slot 5 (no crash before it)"),
    (["crash@5:1", "crash@9:1"], "fault crash@9:1: node 1 is already down at slot 9 since crash@5:1"),
    (["crash@5:1", "recover@8:1", "recover@9:1"], "recover@9:1: node 1 is already up at slot 9 since recover@8:1"),
    (["link-up@5:1:0"], "fault link-up@5:1:0: link 1:0 is already up at slot 5 (no link-down before it)"),
    (["link-up@5:1:0", "link-down@9:1:0"], "link-up@5:1:0: link 1:0 is already up"),
    (["link-down@5:1:0", "link-down@7:0:0"], "link-down@7:0:0: link 0:0 is already down at slot 7 since link-down@5:1:0"),
    (["loss=0.1@60-70"], "the window starts at slot 60, after the run's 50 slots"),
    (["crash@50:1"], "slot 50 is past the run's 50 slots"),
])
def test_contradictory_or_outside_fault_schedules(capsys, faults, fragment):
    """Each contradiction names the event, the node or link, and what came before."""
    argv = list(RUN)
    for f in faults:
        argv += ["--fault", f]
    code, err = _err(capsys, *argv)
    assert code == 2 and fragment in err


def test_consistent_schedules_are_accepted():
    """Down/up alternation per node and per link (named from either end), same-slot pairs included."""
    topo = parse_topology("hypercube:3")
    FaultSchedule.parse(["crash@5:1", "recover@8:1", "crash@9:1", "recover@9:1", "crash@12:1"]).validate(topo, 20)
    FaultSchedule.parse(["link-down@5:1:0", "link-up@7:0:0", "link-down@8:1:0", "link-down@7:2:1"]).validate(topo, 20)
    with pytest.raises(FaultSpecError, match="link-down@7:1:0: link 1:0 is already down"):  # a slot's downs go first
        FaultSchedule.parse(["link-down@5:1:0", "link-up@7:0:0", "link-down@7:1:0"]).validate(topo, 20)
    FaultSchedule.parse(["crash@3:2", "link-down@3:2:0", "loss=0.5@10-100"]).validate(topo, 20)


def test_unknown_trace_event_kinds(capsys, tmp_path):
    """--trace-events naming a kind the run never writes is refused; the scheme's and the driver's pass."""
    trace = str(tmp_path / "t.jsonl")
    code, err = _err(capsys, *RUN, "--trace", trace, "--trace-events", "sent,stpe")
    assert code == 2 and "trace event kind 'stpe' never occurs in a deflection run" in err and "step" in err
    code, _ = _err(capsys, *RUN, "--trace", trace, "--trace-events", "step,sent,received,lost,fault")
    assert code == 0
    with pytest.raises(SpecError, match="'born' never occurs"):
        RunSpec("deflection", "hypercube:3", load={"offered": 1}, trace=TraceSpec(trace, kinds=frozenset({"born"}))).prepare()


def test_repeated_param_is_refused(capsys):
    """A --param given twice is ambiguous: refused, naming both values."""
    code, err = _err(capsys, *RUN, "--param", "order=random", "--param", "order=oldest")
    assert code == 2 and "--param order given twice (order=random and order=oldest)" in err


@pytest.mark.parametrize("argv, fragment", [
    (["--sweep-rho", "0.2,1.5"], "strictly between 0 and 1"),
    (["--sweep-rho", "0,0.2"], "strictly between 0 and 1"),
    (["--sweep-rho", "nan"], "strictly between 0 and 1"),
])
def test_sweep_loads_outside_the_valid_range(capsys, argv, fragment):
    """A sweep load that is no load factor is refused before any run."""
    code, err = _err(capsys, "repro", "stamoulis", "--sweep-d", "4", "--sweep-only", *argv)
    assert code == 2 and fragment in err


def _fake_runner(requests):
    """Answers every request at once: a repro's plumbing without its runs."""
    return [{"mean_broadcast_delay": 5.0, "mean_broadcast_delay_ci95": 0.1, "mean_queue_per_node": 1.0,
             "mean_queue_per_node_ci95": 0.1, "mean_broadcast_delay_period_end": 5.0,
             "mean_broadcast_delay_period_end_ci95": 0.1, "_theory": {"mean_broadcast_delay": 5.0}} for _ in requests]


def test_sweep_points_a_scheme_cannot_run_become_rows():
    """A requested ρ past a scheme's stability limit is reported as a 'not run' row saying why, never dropped."""
    limits = bcast_repro.theory.stability_limits(4)
    assert 0.3 < limits["simple"] < limits["indirect"] < 0.7
    rows = bcast_repro.stamoulis(_fake_runner, seed=1, quick=True, sweep_d=4, sweep_rho=[0.3, 0.7], sweep_only=True)
    skipped = [r for r in rows if r.sim is None]
    assert {r.case for r in skipped} == {"bcast-simple rho=0.7", "bcast-periodic rho=0.7", "bcast-indirect rho=0.7"}
    assert all(r.verdict().startswith(Row.NOT_RUN + ": ") for r in skipped)
    assert "stability limit" in next(r for r in skipped if r.case == "bcast-simple rho=0.7").note
    ran = {r.case for r in rows if r.sim is not None}
    assert {"bcast-dtree rho=0.3", "bcast-dtree rho=0.7", "bcast-periodic rho=0.3", "bcast-simple rho=0.3"} <= ran


def test_sweep_d_zero_gets_a_precise_message(capsys):
    """--sweep-d 0 is refused as a dimension (not taken for 'no sweep') for every paper."""
    for paper in ("stamoulis", "greenberg-hajek"):
        code, err = _err(capsys, "repro", paper, "--sweep-d", "0")
        assert code == 2 and "--sweep-d must be a cube dimension" in err and "got 0" in err
    code, err = _err(capsys, "repro", "stamoulis", "--sweep-d", "1")
    assert code == 2 and "between 2 and 14, got 1" in err


def test_sizes_that_cannot_fit_are_refused(capsys):
    """hypercube:24 is refused up front with the estimate and the machine's memory."""
    code, err = _err(capsys, "run", "deflection", "-t", "hypercube:24", "--offered", "1", "--slots", "10")
    assert code == 2 and "16,777,216 nodes" in err and "80.1 GiB" in err and "~5 KiB per node" in err and "available" in err


def test_memory_estimate_against_a_small_machine(monkeypatch):
    """The check compares the estimate with what the machine has; unknown memory refuses nothing."""
    topo = parse_topology("hypercube:10")
    need = _memory.estimate(topo, 1000)
    assert need == _memory.BASE_BYTES + 1024 * _memory.BYTES_PER_NODE + 1000 * _memory.BYTES_PER_SLOT
    _memory.check_fits(topo, 1000, available=need)
    with pytest.raises(SpecError, match=r"needs about .* MiB .* but this machine has .* available"):
        _memory.check_fits(topo, 1000, available=need - 1)
    monkeypatch.setattr(_memory, "available_memory", lambda meminfo="": 66 * 2**20)  # deflection: ~69 MiB
    with pytest.raises(SpecError, match="66.0 MiB available"):
        RunSpec("deflection", "hypercube:10", load={"offered": 1}).prepare()
    monkeypatch.setattr(_memory, "available_memory", lambda meminfo="": None)
    RunSpec("deflection", "hypercube:24", load={"offered": 1}, slots=10).prepare()


def test_memory_estimate_of_a_sharded_run_counts_its_processes(monkeypatch):
    """K shards started here cost K interpreters plus a coordinator; a shard by hand counts only its block."""
    topo = parse_topology("hypercube:10")
    m = _memory
    assert m.estimate(topo, 100, shards=2) == (m.BASE_BYTES + 1024 * m.BYTES_PER_REPORTED_NODE + 100 * m.BYTES_PER_SLOT
                                               + 2 * (m.BASE_BYTES + 512 * m.BYTES_PER_NODE + 100 * m.BYTES_PER_SLOT))
    assert m.estimate(topo, 100, hosted=512) == m.BASE_BYTES + 512 * m.BYTES_PER_NODE + 100 * m.BYTES_PER_SLOT
    whole = m.estimate(topo, 100)
    monkeypatch.setattr(m, "available_memory", lambda meminfo="": whole)
    RunSpec("deflection", "hypercube:10", load={"offered": 1}, slots=100).prepare()
    with pytest.raises(SpecError, match="over 4 shard processes here"):
        RunSpec("deflection", "hypercube:10", load={"offered": 1}, slots=100, shards=4).prepare()
    RunSpec("deflection", "hypercube:10", load={"offered": 1}, slots=100).prepare(hosted=256)
    monkeypatch.setattr(m, "available_memory", lambda meminfo="": m.estimate(topo, 100, hosted=256, scheme="deflection") - 1)
    with pytest.raises(SpecError, match=r"this shard of hypercube:10 .*\(256 nodes"):
        RunSpec("deflection", "hypercube:10", load={"offered": 1}, slots=100).prepare(hosted=256)


def test_available_memory_reads_meminfo_and_falls_back(tmp_path):
    """MemAvailable is read in kB; a missing or garbled file falls back to the OS's free pages, or None."""
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:  2048 kB\nMemAvailable:  1024 kB\n")
    assert _memory.available_memory(info) == 1024 * 1024
    info.write_text("garbage")
    fallback = _memory.available_memory(info)
    assert fallback is None or fallback > 0
    assert _memory.available_memory(tmp_path / "none") == fallback


def test_faults_in_bad_forms_through_the_api():
    """Python API: a wrong type is refused with what to give instead."""
    with pytest.raises(SpecError, match="FaultSchedule or a list of strings"):
        RunSpec("deflection", "hypercube:3", load={"offered": 1}, faults={"crash": 3}).prepare()  # type: ignore[arg-type]
    with pytest.raises(FaultSpecError, match="not a control fault event"):
        FaultSchedule(events=("crash@3:1",))  # type: ignore[arg-type]


def test_absurd_loads_are_refused_before_the_run():
    """--rho 1e300 (or 1e6) is refused at once instead of spinning on birth times below float precision."""
    from slotnet import RunSpec, SpecError

    for value in (1e300, 1e6, 1001.0):
        with pytest.raises(SpecError, match="beyond any load"):
            RunSpec("bcast-dtree", "hypercube:4", load={"rho": value}, slots=10).prepare()
