"""One verdict everywhere (#32 item 3): ``slotnet.run()``, ``slotnet run`` (in one process and over
shards), ``explore``, random campaigns and ``slotnet check`` judge one run alike, and ``slotnet run``'s
exit status says whether the verdict holds."""

from __future__ import annotations

import dataclasses
import json

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, run
from slotnet.fabric import parse_topology
from slotnet.orchestrator.shard import run_sharded_in_memory
from slotnet.orchestrator.tools import _fuzz
from slotnet.orchestrator.tools._check import check
from slotnet.orchestrator.tools._explore import explore, faults_of, judge
from slotnet.schemes import get_scheme
from tests.support.cli import call_main

#: bcast-simple keeps sending to node 3 after seeing it crashed: avoidable losses, broadcasts missed
COMMON = ["bcast-simple", "-t", "hypercube:3", "--rho", "0.2", "--slots", "30", "--seed", "4"]
SPEC = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=30, seed=4, faults=["crash@9:3"])
REASONS = ["8 avoidable losses (first sent in slot 12, 2->3)",
           "4 broadcasts missed 8 reachable nodes (first: 0,1 at 7)"]


def test_every_runner_gives_the_python_apis_verdict(capsys):
    """The Python API, the CLI, two shards, explore (a schedule, a random campaign's checked sample) and
    check's judge give the same verdict, with the same reasons."""
    verdict = run(SPEC).verdict
    assert verdict == {"ok": False, "reasons": REASONS}
    code, out, err = call_main(capsys, "run", *COMMON, "--fault", "crash@9:3", "--json", "--no-progress")
    assert code == 1 and json.loads(out)["verdict"] == verdict
    assert err == f"slotnet run: the run's verdict failed: {REASONS[0]} (and 1 more reason)\n"
    sharded = trio.run(lambda: run_sharded_in_memory(RunSpec(**{**SPEC.__dict__, "shards": 2}).prepare()))
    assert sharded.verdict == verdict
    base = {"scheme": "bcast-simple", "topology": "hypercube:3", "params": {}, "load": {"rho": 0.2}, "slots": 30,
            "warmup": 0, "seed": 4, "max_backlog_per_node": None}
    faults = [{"kind": "crash", "slot": 9, "node": 3}]
    explored = explore(RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=30, seed=4), schedule=faults,
                       jobs=1)["scenarios"][0]
    assert explored["ok"] is False and explored["reasons"] == REASONS
    sample = judge({**base, "label": "#0", "faults": faults, "checks": True})
    assert sample["class"] == "verdict" and sample["reasons"] == REASONS
    report = check(RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=30, seed=4), ["crash"], 1,
                   window=(9, 9), shrink=False, reduce=False)
    by_faults = {tuple(v["faults"]): v["reasons"] for v in report["violations"]}
    assert by_faults[("crash@9:3",)] == REASONS


def test_a_run_whose_verdict_holds_exits_0(capsys):
    """Fault-free, the same run's verdict holds: exit status 0 and nothing on stderr."""
    assert run(RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=30, seed=4)).verdict == \
        {"ok": True, "reasons": []}
    code, out, err = call_main(capsys, "run", *COMMON, "--no-progress")
    assert code == 0 and err == "" and "verdict: ok" in out


def test_the_human_report_prints_in_full_before_the_exit_status(capsys):
    """Without --json the tables and the verdict line are printed, then the one stderr line; exit 1."""
    code, out, err = call_main(capsys, "run", *COMMON, "--fault", "crash@9:3", "--no-progress")
    assert code == 1 and f"verdict: FAIL: {'; '.join(REASONS)}" in out
    assert err.count("\n") == 1 and err.startswith("slotnet run: the run's verdict failed: 8 avoidable losses")


def test_seeds_exit_1_naming_the_seeds_whose_verdict_fails(capsys):
    """--seeds: exit 1 when any replication's verdict fails, naming those seeds and the first one's reason."""
    code, out, err = call_main(capsys, "run", *COMMON[:-2], "--seeds", "1-2", "--fault", "crash@9:3", "--json",
                               "--no-progress", "--jobs", "1")
    runs = json.loads(out)["runs"]
    assert code == 1 and all(not r["verdict"]["ok"] for r in runs)
    assert err.startswith("slotnet run: the verdict failed in 2 of 2 runs (seeds 1, 2); seed 1: ")
    code, _, err = call_main(capsys, "run", *COMMON[:-2], "--seeds", "1-2", "--json", "--no-progress", "--jobs", "1")
    assert code == 0 and err == ""


@settings(max_examples=8, deadline=None)
@given(index=st.integers(0, 10_000), scheme=st.sampled_from(["bcast-simple", "deflection"]))
def test_one_process_and_two_shards_give_one_verdict_under_random_schedules(index, scheme):
    """Random schedules of every kind a scheme runs under (explore's generator): two shards in this process
    reach the one-process verdict, reasons and all, and its fault books."""
    topology = parse_topology("hypercube:3")
    kinds = _fuzz.drawable_kinds(get_scheme(scheme).refuses_fault)
    faults = faults_of(_fuzz.random_schedule(topology, 16, kinds, _fuzz.sample_rng(7, index)))
    load = {"rho": 0.3} if scheme == "bcast-simple" else {"offered": 1.0}
    spec = RunSpec(scheme, "hypercube:3", load=load, slots=16, seed=index, faults=faults)
    one = run(spec)
    two = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=2).prepare()))
    assert two.verdict == one.verdict
    assert one.fault_books is not None and two.fault_books is not None
    assert two.fault_books.lost == one.fault_books.lost and two.fault_books.missed == one.fault_books.missed
