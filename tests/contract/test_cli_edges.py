"""The command line's edges: refusals that say what is wrong, and commands that keep what they were given."""

from __future__ import annotations

import pytest

from tests.support.cli import call_main

_call = call_main  # the suite's one CLI helper (tests/support/cli.py)


@pytest.mark.parametrize("slots", ["0", "-3"])
def test_theory_refuses_slots_below_one(capsys, slots):
    """`slotnet theory --slots 0` is refused with one line, not quietly raised to 1."""
    code, out, err = _call(capsys, "theory", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", slots)
    assert code == 2 and out == ""
    assert f"--slots must be at least 1 (the slots of a transient prediction), got {slots}" in err
    assert len(err.strip().splitlines()) == 1


def test_a_repro_command_keeps_options_whose_value_is_zero():
    """An option given as 0 (or 0.0) is written into the reproducing command; only None and False are left out."""
    from slotnet.orchestrator.tools.repro_all import repro_command

    assert repro_command("stamoulis", 0, False, {"sweep_d": 0}) == "slotnet repro stamoulis --seed 0 --sweep-d 0"
    assert repro_command("stamoulis", 1, True, {"sweep_rho": [0.0, 0.2]}) == \
        "slotnet repro stamoulis --quick --seed 1 --sweep-rho 0,0.2"
    assert "--sweep-d" not in repro_command("stamoulis", 1, False, {"sweep_d": None})


def test_ctrl_c_on_run_prints_the_partial_result(tmp_path):
    """The first Ctrl-C (SIGINT) ends a one-process run after its current slot: its result is printed,
    marked interrupted, and the exit status is 130."""
    import json
    import signal
    import subprocess
    import sys
    import time

    trace = tmp_path / "t.jsonl"
    cmd = [sys.executable, "-c", "from slotnet.orchestrator.cli import main; raise SystemExit(main())", "run",
           "deflection", "-t", "hypercube:6", "--offered", "1", "--slots", "1000000", "--json", "--trace", str(trace),
           "--trace-events", "fault"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not trace.exists() and time.monotonic() < deadline:  # the run has begun: the handler is in place
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert 0 < result["slots_run"] < 1_000_000 and result["interrupted"] == {"after_slot": result["slots_run"] - 1}
    assert result["metrics"]["delivered"] > 0
    assert f"interrupted after slot {result['slots_run'] - 1} of 1000000" in err and "Traceback" not in err
