"""slotnet explore: fault families, the verdict, the parallel runner, shrinking and replay."""

from __future__ import annotations

import json
import shlex

import pytest

from slotnet import FaultSchedule, RunSpec, run
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools._explore import explore, format_explore, judge, links, scenarios
from slotnet.orchestrator.tools._shrink import ddmin, shrink
from tests.support.cli import call_main as _main

DEFLECTION = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=50, seed=1)
TREE = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=50, seed=1)
TREE_ARGS = ["bcast-simple", "-t", "hypercube:3", "--rho", "0.2", "--slots", "50", "--seed", "1"]



def test_deflection_survives_every_single_link_and_a_tree_broadcast_does_not():
    """Deflection routes around any one dead link; broadcast on fixed trees loses the subtree behind it."""
    d = explore(DEFLECTION, "single-link", jobs=1)
    t = explore(TREE, "single-link", jobs=1)
    assert d["summary"] == {"scenarios": 12, "ok": 12, "failed": 0, "baseline_ok": True, "first_failure": None}
    assert t["summary"]["failed"] == 12 and t["baseline"]["ok"]
    for s in t["scenarios"]:
        assert {"fault", "ok", "metrics", "lost", "faults", "reasons", "missed"} <= s.keys()
        assert s["missed"]["broadcasts"] > 0 and s["missed"]["excused_receptions"] == 0  # a 3-cube minus a link is connected
        assert any("missed" in r for r in s["reasons"])
    for s in d["scenarios"]:
        assert s["lost"]["avoidable"] == {} and "missed" not in s
        assert set(s["delta"]) <= set(s["metrics"]) and "mean_delay" in s["delta"]
    table = format_explore(t)
    assert "12 scenarios (single-link), 0 ok, 12 failed" in table and "FAIL" in table


def test_scenario_families_and_deterministic_samples():
    """Every link once, every node once, sampled pairs fixed by the seed, nodes x crash slots."""
    cube = parse_topology("hypercube:3")
    assert len(links(cube)) == 12 and len(links(parse_topology("torus:2x3"))) == 12  # side 2: two links per pair
    assert len(scenarios(cube, "single-link", slots=10, seed=0)) == 12
    assert [f for _, f in scenarios(cube, "single-node", slots=10, seed=0)][3] == [{"kind": "crash", "slot": 0, "node": 3}]
    pairs = scenarios(cube, "double-link", slots=10, seed=4, samples=7)
    assert len(pairs) == 7 and len({label for label, _ in pairs}) == 7
    assert pairs == scenarios(cube, "double-link", slots=10, seed=4, samples=7)
    assert pairs != scenarios(cube, "double-link", slots=10, seed=5, samples=7)
    assert len(scenarios(cube, "double-link", slots=10, seed=4)) == 20  # the default sample
    crash = scenarios(cube, "crash-points", slots=40, seed=0, crash_slots=[30, 10])
    assert len(crash) == 16 and crash[0] == ("node 0 at 10", [{"kind": "crash", "slot": 10, "node": 0}])


def test_avoidable_losses_are_the_ledgers_and_a_crashed_node_is_excused():
    """Avoidable losses equal slotnet run's ledger; a miss at the crashed node itself is excused, its subtree's not."""
    faults = [{"kind": "crash", "slot": 0, "node": 3}]
    verdict = judge({**_request(TREE), "faults": faults, "label": "node 3"})
    result = run(RunSpec(TREE.scheme, TREE.topology, load=TREE.load, slots=TREE.slots, seed=TREE.seed,
                         faults=["crash@0:3"]))
    ledger = result.to_dict()["fault_impact"]["avoidable"]
    assert verdict["lost"]["avoidable"] == ledger and sum(ledger.values()) > 0
    assert verdict["missed"]["excused_receptions"] > 0  # every broadcast misses node 3: the fault's own
    assert not verdict["ok"] and verdict["missed"]["nodes"] > 0  # ... but not the nodes behind it
    never = judge({**_request(TREE), "faults": [*faults, {"kind": "detect", "slots": "never"}], "label": "x"})
    assert never["lost"]["avoidable"] == {} and never["lost"]["excused"]  # never told: every loss is the fault's own


def _request(spec: RunSpec) -> dict:
    return {"scheme": spec.scheme, "topology": spec.topology, "params": dict(spec.params), "load": dict(spec.load),
            "slots": spec.slots, "warmup": spec.warmup, "seed": spec.seed, "max_backlog_per_node": None}


def test_worker_processes_give_the_same_report():
    """Two worker processes and one give the same scenarios, in the same order."""
    one = explore(TREE, "crash-points", crash_slots=[10, 30], samples=5, jobs=1)
    two = explore(TREE, "crash-points", crash_slots=[10, 30], samples=5, jobs=2)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_ddmin_keeps_exactly_the_culprits():
    """ddmin returns the two entries that together cause the failure."""
    calls = []

    def fails(xs):
        calls.append(list(xs))
        return 3 in xs and 7 in xs

    assert ddmin(list(range(10)), fails) == [3, 7]
    assert ddmin(list(range(10)), lambda xs: 5 in xs) == [5]


def test_shrink_finds_fewest_faults_then_the_shortest_window():
    """Of a link fault and a harmless crash, only the link stays, down for the one slot that matters."""
    key = lambda v, p: min((v, p), (v ^ (1 << p), p))

    def fails(objs):  # fails while link 0:1 is down during slot 17
        down = [o for o in objs if o["kind"] == "link-down"]
        up = [o for o in objs if o["kind"] == "link-up"]
        return bool(down) and down[0]["slot"] <= 17 and (not up or up[0]["slot"] > 17)

    schedule = [{"kind": "link-down", "slot": 2, "node": 2, "port": 1}, {"kind": "crash", "slot": 5, "node": 4},
                {"kind": "detect", "slots": 3}]
    out, runs = shrink(schedule, fails, slots=40, link_key=key)
    assert out == [{"kind": "link-down", "slot": 17, "node": 2, "port": 1}, {"kind": "link-up", "slot": 18, "node": 2, "port": 1},
                   {"kind": "detect", "slots": 3}]
    assert 0 < runs < 30


def test_shrink_writes_a_schedule_that_replays_the_failure(capsys, tmp_path):
    """--shrink writes a --faults file; judged again by the replay command it prints (the generator asked for
    included) it fails the same way, and one slot less passes."""
    out = tmp_path / "min.json"
    code, text, _ = _main(capsys, "explore", *TREE_ARGS, "--rng", "mt", "--faults", "crash-points", "--crash-slots",
                          "12", "--samples", "2", "--shrink", str(out), "--json")
    assert code == 1  # a scenario failed: explore fails as run and check do
    report = json.loads(text)
    shrunk = report["shrunk"]
    assert shrunk["from"] == report["summary"]["first_failure"] and not shrunk["verdict"]["ok"]
    objs = json.loads(out.read_text())
    assert objs == shrunk["faults"] and FaultSchedule.parse(file=out).to_list()
    assert shrunk["replay"].endswith(f"--faults {out}")
    argv = shlex.split(shrunk["replay"])
    assert argv[:2] == ["slotnet", "explore"] and argv[argv.index("--rng") + 1] == "mt"
    code, text, _ = _main(capsys, *argv[1:], "--json")
    replay = json.loads(text)["scenarios"]
    assert code == 1 and len(replay) == 1 and not replay[0]["ok"] and replay[0]["reasons"] == shrunk["verdict"]["reasons"]
    crash = next(o for o in objs if o["kind"] == "crash")
    recover = next((o for o in objs if o["kind"] == "recover"), None)
    if recover is not None and recover["slot"] - crash["slot"] > 1:  # the window is as short as it can be
        shorter = [o if o is not recover else {**o, "slot": o["slot"] - 1} for o in objs]
        assert judge({**_request(TREE), "rng": "mt", "faults": shorter, "label": "shorter"})["ok"]


def test_human_table_and_nothing_to_shrink(capsys, tmp_path):
    """The table names each scenario; with no failure --shrink writes nothing and says so."""
    out = tmp_path / "min.json"
    code, text, _ = _main(capsys, "explore", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "40",
                          "--faults", "single-node", "--samples", "3", "--shrink", str(out), "--jobs", "1")
    assert code == 0 and "3 scenarios (single-node), 3 ok, 0 failed" in text
    assert "nothing to shrink" in text and not out.exists()


@pytest.mark.parametrize("argv, fragment", [
    (["--faults", "everything"], "--faults must be one of single-link"),
    (["--faults", "single-link", "--samples", "0"], "--samples must be an integer >= 1"),
    (["--faults", "single-link", "--crash-slots", "3"], "--crash-slots goes with --faults crash-points"),
    (["--faults", "crash-points", "--crash-slots", "3,999"], "slot 999 is not inside the run"),
    (["--faults", "crash-points", "--crash-slots", "x"], "--crash-slots must be comma-separated integers"),
    (["--faults", "crash-points", "--crash-slots", ","], "--crash-slots needs at least one slot"),
    (["--faults", "single-link", "--jobs", "0"], "--jobs must be >= 1"),
    (["--faults", "single-link", "--detect", "soon"], "detection delay must be"),
    (["--faults", "single-link", "--shrink", "/nonexistent/dir/out.json"], "--shrink: cannot write"),
    (["--faults", "single-link", "--slots", "0"], "slots must be an integer >= 1"),
])
def test_bad_explore_input_is_one_line_and_exit_2(capsys, argv, fragment):
    """Each bad explore input: exit 2 and one precise line, before any run."""
    code, _, err = _main(capsys, "explore", "deflection", "-t", "hypercube:3", "--offered", "1", *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err


def test_bad_faults_file_for_explore(capsys, tmp_path):
    """A faults file naming a node that does not exist is refused like slotnet run refuses it."""
    bad = tmp_path / "f.json"
    bad.write_text(json.dumps([{"kind": "crash", "slot": 1, "node": 99}]))
    code, _, err = _main(capsys, "explore", *TREE_ARGS, "--faults", str(bad))
    assert code == 2 and "node 99 not in 0..7" in err
    code, _, err = _main(capsys, "explore", *TREE_ARGS, "--faults", str(bad), "--shrink", str(bad))
    assert code == 2 and "would overwrite the faults file" in err


def test_crash_and_recover_with_timers_due_in_one_slot():
    """Found by shrinking: a crash, then a recover while the dead incarnation's timer is still queued."""
    run(RunSpec("bcast-simple", "hypercube:2", load={"rho": 0.3}, slots=16, seed=2, faults=["crash@6:2", "recover@9:2"]))
