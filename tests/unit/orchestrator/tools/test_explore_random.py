"""slotnet explore --faults random: reproducible samples, replay commands, a generator the validator never refuses."""

from __future__ import annotations

import itertools
import json
import shlex

import pytest

from slotnet import FaultSchedule, RunSpec
from slotnet.errors import SpecError
from slotnet.fabric import parse_topology
from slotnet.nodes import Node
from slotnet.orchestrator.engine._spec import check_fault_support
from slotnet.orchestrator.tools import _fuzz
from slotnet.orchestrator.tools._explore import explore, faults_of, format_explore, scenarios
from slotnet.schemes import SCHEMES
from tests.support.cli import call_main as _main
from tests.support.probes import register

ARGS = ["explore", "deflection", "-t", "hypercube:3", "--lam", "0.3", "--slots", "30", "--seed", "7",
        "--faults", "random", "--samples", "20", "--jobs", "1"]

#: small topologies of every kind the registered schemes run on
TOPOLOGIES = ("hypercube:1", "hypercube:2", "hypercube:3", "hypercube:4", "torus:8", "torus:5", "torus:3x3",
              "torus:4x4", "torus:2x3", "mesh:6", "mesh:2", "mesh:4x4", "mesh:3x5", "mesh:2x2x2")



def test_random_explore_is_reproducible_and_each_sample_replays(capsys):
    """Twenty samples through the CLI: the same output twice, and a sample's printed command gives its result."""
    code, out, _ = _main(capsys, *ARGS, "--json")
    assert code == 0
    code2, out2, _ = _main(capsys, *ARGS, "--json")
    assert (code2, out2) == (code, out)
    report = json.loads(out)
    s = report["summary"]
    assert report["family"] == "random" and s["scenarios"] == 20 and s["refused"] == 0
    assert s["ok"] + s["failed"] == 20 and s["classes"]["crash"] == 0
    samples = report["scenarios"]
    assert [r["fault"] for r in samples] == [f"#{i}" for i in range(20)]
    assert [r.get("repeated", False) for r in samples] == [True] + [False] * 19  # every 20th is run twice
    for r in samples:
        assert r["class"] in ("ok", "verdict", "unaccounted", "books", "nondeterministic", "crash")
        assert r["command"].startswith("slotnet run deflection -t hypercube:3 --lam 0.3 --slots 30 --warmup 0 --seed 7")
        entries = [o for o in r["faults"] if o["kind"] != "detect"]
        assert 1 <= len(entries) <= 8
    # the replay of a sample with several kinds of fault, and of #0: the same result, to the last digit
    busy = max(samples, key=lambda r: (len({o["kind"] for o in r["faults"]}), r["fault"] == "#0"))
    for r in {busy["fault"]: busy, "#0": samples[0]}.values():
        code, out, _ = _main(capsys, *shlex.split(r["command"])[1:])
        assert code == 0
        assert _fuzz.fingerprint(json.loads(out)) == r["sha256"], r["command"]
    # the same samples through the library, and the human table names the replay of every failure
    again = explore(RunSpec("deflection", "hypercube:3", load={"lam": 0.3}, slots=30, seed=7), "random",
                    samples=20, jobs=1)
    assert [r["sha256"] for r in again["scenarios"]] == [r["sha256"] for r in samples]
    table = format_explore(again)
    assert "20 scenarios (random)" in table and "checks: crash 0, refused 0" in table
    for r in samples:
        if not r["ok"]:
            assert r["command"] in table


def test_another_seed_draws_other_schedules_and_detect_is_drawn_only_when_not_given():
    cube = parse_topology("hypercube:3")
    kinds = _fuzz.drawable_kinds(SCHEMES["deflection"].refuses_fault)
    a = scenarios(cube, "random", slots=30, seed=1, samples=40, kinds=kinds)
    assert a == scenarios(cube, "random", slots=30, seed=1, samples=40, kinds=kinds)
    assert a != scenarios(cube, "random", slots=30, seed=2, samples=40, kinds=kinds)
    assert a[:5] == scenarios(cube, "random", slots=30, seed=1, samples=5, kinds=kinds)  # sample i is fixed by (seed, i)
    assert any(o["kind"] == "detect" for _, objs in a for o in objs)
    fixed = scenarios(cube, "random", slots=30, seed=1, samples=40, kinds=kinds, draw_detect=False)
    assert not any(o["kind"] == "detect" for _, objs in fixed for o in objs)
    report = explore(RunSpec("deflection", "hypercube:3", load={"lam": 0.3}, slots=20, seed=1), "random",
                     samples=3, jobs=1, detect=4)
    assert all({"kind": "detect", "slots": 4} in r["faults"] for r in report["scenarios"])


def test_the_generator_never_draws_a_schedule_the_validator_refuses():
    """2,000 draws over every scheme's fault kinds and small topologies: each one valid, and every shape asked for occurs."""
    seen: dict[str, int] = {}

    def note(what: str) -> None:
        seen[what] = seen.get(what, 0) + 1

    kind_sets = [_fuzz.drawable_kinds(s.refuses_fault) for s in SCHEMES.values()]
    kind_sets = [k for k in kind_sets if k] + [list(_fuzz.DRAWN_KINDS) + ["link-up", "recover"],
                                               ["crash", "link-down", "stall"]]  # no link-up, no recover
    names = {tuple(_fuzz.drawable_kinds(s.refuses_fault)): s for s in SCHEMES.values()}
    cases = itertools.cycle(itertools.product(TOPOLOGIES, range(len(kind_sets)), (1, 2, 7, 40)))
    for i in range(2000):
        spec, k, slots = next(cases)
        topology = parse_topology(spec)
        kinds = kind_sets[k]
        objs = _fuzz.random_schedule(topology, slots, kinds, _fuzz.sample_rng(3, i))
        schedule = faults_of(objs)  # parses
        schedule.validate(topology, slots)  # never refused
        scheme = names.get(tuple(kinds))
        if scheme is not None:
            check_fault_support(scheme, schedule)
        entries = [o for o in objs if o["kind"] != "detect"]
        assert 1 <= len(entries) <= 8, objs
        assert {o["kind"] for o in entries} <= set(kinds), (kinds, objs)
        back = FaultSchedule.parse(schedule.to_list())  # the replay command's form parses back to the same schedule
        assert (back.to_list(), back.by_slot, back.windows, back.loss) == \
            (schedule.to_list(), schedule.by_slot, schedule.windows, schedule.loss)
        for o in objs:
            note(o["kind"])
            first = o.get("slot", o.get("from", 0))
            if first == 0 and o["kind"] != "detect":
                note("at slot 0")
            if o.get("slot", o.get("to")) == slots - 1 and slots > 1:
                note("in the last slot")
            if o["kind"] == "detect":
                note(f"detect={o['slots']}")
            if o["kind"] == "recover":
                crash = max(c["slot"] for c in objs if c["kind"] == "crash" and c["node"] == o["node"]
                            and c["slot"] <= o["slot"])
                note("recover in the crash's slot" if crash == o["slot"] else "recover later")
            if o["kind"] in ("loss", "dup", "delay", "corrupt"):
                note("open window" if "until" not in o else "closed window")
                note(f"rate {o['rate']}")
        crashes = [o for o in objs if o["kind"] == "crash"]
        if crashes and not any(o["kind"] == "recover" for o in objs):
            note("crash without recover")
        if any(sum(c["node"] == o["node"] for c in crashes) >= 2 for o in crashes):
            note("crash/recover cycles")
        if crashes and any(o["kind"] == "crash" and o["slot"] == 0 for o in objs):
            note("crash@0")
        down = {o["node"] for o in crashes} | {o["node"] for o in objs if o["kind"] == "stall"}
        if any(o["kind"] == "partition" and set(o["nodes"] if isinstance(o["nodes"], list) else
                                                  FaultSchedule.parse([f"partition@0:0:{o['nodes']}"]).spans[0].nodes) & down
               for o in objs):
            note("overlapping outages")
        if len({o["kind"] for o in entries}) >= 3:
            note("mixed kinds")
    for kind in (*_fuzz.DRAWN_KINDS, "link-up", "recover", "detect"):
        assert seen.get(kind, 0) > 20, (kind, seen)
    for shape in ("at slot 0", "in the last slot", "recover in the crash's slot", "recover later", "crash without recover",
                  "crash/recover cycles", "crash@0", "overlapping outages", "mixed kinds", "open window",
                  "closed window", "rate 0.0", "rate 1.0", "detect=0", "detect=never"):
        assert seen.get(shape, 0) > 10, (shape, seen)


class _CrashesInSlot2(Node):
    async def run(self) -> None:
        await self.ctx.idle(until=2)
        if self.ctx.node == 1:
            raise RuntimeError("boom")
        while True:
            await self.ctx.idle()


_RUNS = itertools.count()


class _Drifts(Node):
    """Records a number that changes from one run to the next: a nondeterministic scheme."""

    async def run(self) -> None:
        if self.ctx.node == 0:
            self.ctx.record("log", next(_RUNS))
        await self.ctx.idle()


def test_a_crash_and_a_drifting_result_are_classified_not_raised(monkeypatch):
    register("crashes", _CrashesInSlot2, monkeypatch, faults=frozenset({"loss", "dup"}))
    register("drifts", _Drifts, monkeypatch, faults=frozenset({"loss"}))  # every node runs, so every run records
    spec = RunSpec("crashes", "hypercube:2", slots=10, seed=0)
    report = explore(spec, "random", samples=3, jobs=1)
    assert report["summary"]["classes"]["crash"] == 3 and report["summary"]["failed"] == 3
    for r in report["scenarios"]:
        assert r["class"] == "crash" and "NodeFailure" in r["reasons"][0] and "boom" in r["reasons"][0]
        assert {o["kind"] for o in r["faults"]} <= {"loss", "dup", "detect"}
    drift = explore(RunSpec("drifts", "hypercube:2", slots=10, seed=0), "random", samples=21, jobs=1)
    classes = {r["fault"]: r["class"] for r in drift["scenarios"]}
    assert classes["#0"] == classes["#20"] == "nondeterministic"
    assert all(c == "ok" for f, c in classes.items() if f not in ("#0", "#20"))
    assert "a second run differs: metrics.log" in drift["scenarios"][0]["reasons"][0]


def test_a_scheme_without_fault_kinds_is_refused_and_books_are_checked(monkeypatch):
    register("plain", _Drifts, monkeypatch, faults=frozenset())
    with pytest.raises(SpecError, match="runs under no fault kind"):
        explore(RunSpec("plain", "hypercube:2", slots=10), "random", samples=2, jobs=1)
    assert _fuzz.book_failures({"u": {"packets": 5, "delivered": 3, "lost_to_faults": 1, "in_progress": 1}}) == []
    assert _fuzz.book_failures({"u": {"packets": 5, "dup_copies": 2, "delivered": 5, "second_deliveries": 1,
                                      "lost_to_faults": 0, "in_progress": 1}}) == []
    assert _fuzz.book_failures({"b": {"broadcasts": 4, "completed": 2, "lost_to_faults": 1, "in_progress": 1}}) == []
    bad = _fuzz.book_failures({"b": {"broadcasts": 4, "completed": 2, "lost_to_faults": 0, "in_progress": 1},
                               "u": {"packets": None, "delivered": 3, "lost_to_faults": 0, "in_progress": 0}})
    assert len(bad) == 2 and bad[0].startswith("book b: broadcasts != completed") and "(4 != 3)" in bad[0]


def test_shrink_keeps_a_random_sample_failing(tmp_path, capsys):
    """--shrink writes the first failing sample's minimal schedule, which fails again when judged alone."""
    out = tmp_path / "min.json"
    run = ["explore", "bcast-dtree", "-t", "hypercube:3", "--rho", "0.3", "--slots", "16", "--seed", "2", "--jobs", "1"]
    code, text, _ = _main(capsys, *run, "--faults", "random", "--samples", "6", "--shrink", str(out))
    assert code == 1  # samples failed
    assert "shrunk '#" in text and out.exists()
    minimal = json.loads(out.read_text())
    assert FaultSchedule.parse(file=out)  # a faults file slotnet run accepts
    code, text, _ = _main(capsys, *run, "--faults", str(out), "--json")
    assert code == 1 and json.loads(text)["summary"]["failed"] == 1
    assert 1 <= len([o for o in minimal if o["kind"] != "detect"]) <= 8
