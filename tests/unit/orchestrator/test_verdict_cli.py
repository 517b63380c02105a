"""One verdict everywhere, through the CLI: a shrunk schedule replayed with ``slotnet run``
fails as explore failed it, a deadlock fails explore, and a node's failure gives its
traceback with ``--debug`` and under ``error`` with ``--json``."""

from __future__ import annotations

import json

from slotnet import RunSpec
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.tools._explore import explore
from tests.contract.test_node_errors import Loops, Raises
from tests.support.user_ring import TokenRing, user_scheme


def test_a_shrunk_schedule_replayed_with_run_fails_the_same_way(tmp_path, capsys):
    """The faults how-to's example: explore --shrink's minimal schedule, replayed by slotnet run, fails with explore's
    reason: in the result, in one line on stderr, and in the exit status 1."""
    out = tmp_path / "min.json"
    common = ["bcast-simple", "-t", "hypercube:4", "--rho", "0.1", "--slots", "300", "--seed", "1"]
    assert main(["explore", *common, "--faults", "single-link", "--samples", "3", "--shrink", str(out), "--jobs", "1",
                 "--json"]) == 1  # its scenarios fail
    explored = capsys.readouterr()
    assert explored.err == "slotnet explore: 3 of 3 scenarios failed\n"
    shrunk = json.loads(explored.out)["shrunk"]
    reason = shrunk["verdict"]["reasons"][0]
    assert "broadcast missed" in reason
    assert main(["run", *common, "--faults", str(out), "--json", "--no-progress"]) == 1
    printed = capsys.readouterr()
    d = json.loads(printed.out)
    assert d["verdict"] == {"ok": False, "reasons": [reason]}
    assert printed.err == f"slotnet run: the run's verdict failed: {reason}\n"
    assert main(["run", *common, "--faults", str(out), "--no-progress"]) == 1
    assert f"verdict: FAIL: {reason}" in capsys.readouterr().out


def test_explore_fails_a_deadlock():
    """Under single-node crashes, every crash that loses the token fails explore as a deadlock, never ok."""
    with user_scheme("verdict-ring", TokenRing) as name:
        report = explore(RunSpec(name, "torus:6", slots=40), "single-node", jobs=1)
    assert report["baseline"]["ok"]
    by_node = {r["fault"]: r for r in report["scenarios"]}
    assert len(by_node) == 6
    for label, r in by_node.items():
        assert r["ok"] is False and r["complete"] is False, label
        assert any(x.startswith("deadlock at slot") for x in r["reasons"]), label


def test_debug_prints_the_traceback_and_json_holds_it(capsys):
    """--debug adds the rule's traceback on stderr; --json prints {"error": ...} with it; the exit status is 1."""
    with user_scheme("verdict-raises", Raises) as name:
        assert main(["run", name, "-t", "torus:6", "--no-progress"]) == 1
        plain = capsys.readouterr()
        assert plain.err.count("\n") == 1 and "failed: node 1 failed in slot 1: KeyError" in plain.err
        assert main(["run", name, "-t", "torus:6", "--no-progress", "--debug"]) == 1
        err = capsys.readouterr().err
        assert "Traceback (most recent call last)" in err and 'self.table["missing"] += 1' in err
        assert main(["run", name, "-t", "torus:6", "--no-progress", "--json"]) == 1
        d = json.loads(capsys.readouterr().out)
    assert d["error"]["kind"] == "node_failure" and d["error"]["node"] == 1 and d["error"]["slot"] == 1
    assert 'self.table["missing"] += 1' in d["error"]["traceback"]


def test_node_timeout_flag_ends_a_looping_node(capsys):
    """--node-timeout 0.5 ends the run of a node looping without await in one line, exit status 1."""
    with user_scheme("verdict-loops", Loops) as name:
        assert main(["run", name, "-t", "torus:6", "--no-progress", "--node-timeout", "0.5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("slotnet run: failed: node 2 held the run for more than 0.5 s") and err.count("\n") == 1
