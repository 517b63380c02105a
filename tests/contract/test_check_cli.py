"""``slotnet check`` on the command line: its JSON, exit statuses and one-line refusals."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.support.cli import call_main

from . import user_schemes

installed = user_schemes.installed  # the user schemes, registered for this module
pytestmark = pytest.mark.usefixtures("installed")


def test_check_json_lists_schedules_classes_and_shrunk_violations(capsys):
    """--json gives schedules (all), classes (run) and violations, each shrunk with a replay; exit 1."""
    code, out, _ = call_main(capsys, "check", "user-token-dup", "-t", "torus:4", "--kinds", "crash",
                             "--max-faults", "1", "--window", "0:1", "--json")
    report = json.loads(out)
    assert code == 1
    assert report["schedules"] == report["classes"] == 2 * 4  # not symmetric: no reduction
    assert not report["baseline"]["ok"]  # the duplicated token fails even without a fault
    assert len(report["violations"]) == 8
    v = report["violations"][0]
    assert v["faults"] == ["crash@0:0"] and v["shrunk"] == []  # the fault-free run already fails
    assert v["shrunk_replay"].startswith("slotnet run user-token-dup -t torus:4 --seed 0")


def test_check_of_a_correct_symmetric_scheme_passes_with_fewer_classes(capsys):
    """The flood of every id round a ring, one link down at a time: every schedule passes, one class per slot; exit 0."""
    code, out, _ = call_main(capsys, "check", "user-flood-all", "-t", "torus:5", "--slots", "30", "--kinds",
                             "link-down", "--window", "0:2", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["violations"] == []
    assert report["schedules"] == 15 and report["classes"] == 3 and report["symmetries"] == 10


def test_check_without_symmetry_runs_every_schedule(capsys):
    """--no-symmetry runs every schedule of a symmetric scheme."""
    code, out, _ = call_main(capsys, "check", "user-flood-all", "-t", "torus:5", "--slots", "30", "--kinds",
                             "link-down", "--window", "0:0", "--no-symmetry", "--json")
    report = json.loads(out)
    assert code == 0 and report["classes"] == report["schedules"] == 5 and not report["symmetric"]


def test_check_prints_each_violation_with_its_replay(capsys):
    """The human report names the failing schedule, the property and the replay command."""
    code, out, _ = call_main(capsys, "check", "user-token", "-t", "torus:4", "--kinds", "crash", "--window", "2:2",
                             "--no-shrink")
    assert code == 1
    assert "crash@2:2" in out and "one_token" in out
    assert "replay: slotnet run user-token -t torus:4 --seed 0 --rng philox --fault crash@2:2" in out


def test_check_runs_and_replays_with_the_generator_asked_for(capsys):
    """--rng mt: every run of the check draws from the Twister, and each violation's replay command says so and,
    run, fails as the check judged it."""
    code, out, _ = call_main(capsys, "check", "user-token", "-t", "torus:4", "--kinds", "crash", "--window", "2:2",
                             "--no-shrink", "--rng", "mt", "--json")
    report = json.loads(out)
    assert code == 1 and report["violations"]
    for v in report["violations"]:
        argv = shlex.split(v["replay"])
        assert argv[:2] == ["slotnet", "run"] and argv[argv.index("--rng") + 1] == "mt"
        code, out, _ = call_main(capsys, *argv[1:], "--json")
        assert code == 1 and json.loads(out)["rng"] == "mt" and json.loads(out)["verdict"]["reasons"] == v["reasons"]


@pytest.mark.parametrize("argv, message", [
    (["--kinds", "brownout"], "'brownout' is not a kind slotnet check enumerates (it enumerates: crash, recover, "),
    (["--kinds", "crash,detect"], "--kinds: detect is a setting"),
    (["--kinds", "crash", "--window", "3"], "--window '3': expected A:B"),
    (["--kinds", "crash", "--window", "5:2"], "expected 0 <= A <= B"),
    (["--kinds", "crash", "--max-faults", "0"], "--max-faults 0: expected at least 1"),
    (["--kinds", "crash", "--window", "0:5000"], "the run has slots 0..999"),
    (["--kinds", ","], "--kinds needs at least one fault kind"),
])
def test_check_refuses_bad_input_in_one_line(capsys, argv, message):
    """A bad kind, window or count is one line on stderr and a non-zero exit, before any run of the space."""
    code, _, err = call_main(capsys, "check", "user-token", "-t", "torus:4", *argv)
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1


def test_run_report_shows_each_property_and_choice_on_its_line(capsys):
    """slotnet run prints a line per stated property (first violation, nodes) and the replay; a line per choice."""
    code, out, err = call_main(capsys, "run", "user-token-dup", "-t", "torus:4")
    assert code == 1  # the run went through; its verdict fails, which the exit status says
    assert err == ("slotnet run: the run's verdict failed: invariant properties failed: one_token: 2 'token' at the "
                   "end of slot 4 (2->3 in flight, 2->1 in flight); there must be exactly 1 (slot 4)\n")
    lines = out.splitlines()
    assert "  properties: VIOLATED" in lines
    assert any(x.startswith("    one_token: VIOLATED (4 violation(s) in 12 check(s)); first in slot 4 at node(s) 1,3")
               for x in lines)
    assert "    replay: slotnet run user-token-dup -t torus:4 --seed 0 --rng philox --slots 1000" in lines
    code, out, _ = call_main(capsys, "run", "user-picker-skewed", "-t", "torus:4", "--param", "picks=60")
    assert "  choices: VIOLATED" in out.splitlines() and "pick: VIOLATED, 240 outcomes, uniform over 4 values" in out
