"""The command line's edges: refusals that say what is wrong, and commands that keep what they were given."""

from __future__ import annotations

import pytest

from slotnet.orchestrator.cli import main


def _call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[object, str, str]:
    try:
        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


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
