"""One-shot tasks: run until complete (under a safety cap); cut short is incomplete, never violated.

One rule for every scheme that declares ``until="quiescent"``, the shipped ones and a
user's own: without a slot count the run goes on until the task completes, at most the
scheme's safety cap (``Scheme.max_slots``, never below the former default of 1000
slots); a run that ends before completion -- by the cap or by the slots given --
reports ``completion.complete: false`` with the slot it stopped at and what stopped it,
and its invariants judge only what was due by then: packets in flight, queued or
waiting are accounted for, and a deadline counts only once it has passed.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.fabric import parse_topology
from slotnet.nodes import Node
from slotnet.orchestrator.cli import main
from slotnet.schemes import SCHEMES, Param, Scheme, Setup, register
from slotnet.schemes.kit import UNICAST_EVENTS, BaseReporter, UnicastReporter, parked_when_done
from slotnet.schemes.pmnb.pmnb import PmnbReporter
from slotnet.schemes.pmnb.prefix_scan import PrefixScanReporter
from slotnet.schemes.pmnb.reporter import RoutingReporter

#: every shipped one-shot scheme, on a small instance (scheme -> topology, params)
ONE_SHOT: dict[str, tuple[str, dict[str, Any]]] = {
    "prefix-scan": ("mesh:4x4", {}),
    "packing": ("mesh:4x4", {}),
    "monotone": ("mesh:4x4", {}),
    "pmnb": ("mesh:4x4", {}),
    "array-broadcast": ("torus:8", {}),
    "partial-exchange": ("mesh:4x4", {}),
    "m2o-greedy": ("mesh:8x8", {"workload": "uniform"}),
    "m2o-rec": ("mesh:4x4", {"workload": "uniform"}),
    "m2o-bfs": ("mesh:4x4", {"workload": "uniform"}),
    "m2o-offline": ("mesh:8x8", {"workload": "uniform"}),
}


def _cuts(n: int) -> list[int]:
    """Slot counts that stop a run of ``n`` slots early: the first slots, the middle, the last one."""
    return sorted({1, 2, 3, n // 4, n // 2, 3 * n // 4, n - 2, n - 1} - {0} - set(range(n, n + 3)))


SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "reference" / "result.schema.json").read_text(encoding="utf-8"))


def _validate(result: dict[str, Any]) -> None:
    """The published JSON Schema of a run's result holds for an incomplete one too."""
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(json.loads(json.dumps(result))))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]]


def _failing(invariants: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in invariants.items() if isinstance(v, dict) and not v.get("ok")}


def test_every_shipped_one_shot_scheme_is_covered():
    """A new one-shot scheme must join ONE_SHOT (and so the per-scheme checks below)."""
    shipped = {name for name, s in SCHEMES.items() if s.until == "quiescent" and s.source != "tests"}
    assert shipped == set(ONE_SHOT)


@pytest.mark.parametrize("scheme", sorted(ONE_SHOT))
def test_cut_short_is_never_violated_and_run_to_the_end_is_complete(scheme):
    """Without --slots the task completes; the same seed cut at several slots is incomplete and never violated."""
    topology, params = ONE_SHOT[scheme]
    full = run(RunSpec(scheme, topology, params=params, seed=1))
    assert full.completion is not None and full.completion["complete"] is True, full.completion
    assert full.ok, _failing(full.invariants)
    assert set(full.completion) == {"complete", "slot", "time"} and full.note is None
    n = full.slots_run
    assert n < full.slots  # it completed; the cap did not end it
    for cut in _cuts(n):
        r = run(RunSpec(scheme, topology, params=params, seed=1, slots=cut))
        assert r.slots_run == cut
        assert r.completion == {"complete": False, "slot": None, "time": None, "stopped_at_slot": cut - 1,
                                "ended_by": "slots"}, (cut, r.completion)
        assert r.ok, (cut, _failing(r.invariants))
        assert r.note is not None and r.note.startswith(f"incomplete at slot {cut - 1}:")
        assert r.metrics["completion_time"] is None
    exact = run(RunSpec(scheme, topology, params=params, seed=1, slots=n))
    assert exact.completion == full.completion and exact.ok


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(ONE_SHOT))
def test_cut_at_every_slot_is_never_violated(scheme):
    """The whole sweep: every slot count below completion is incomplete and ok."""
    topology, params = ONE_SHOT[scheme]
    n = run(RunSpec(scheme, topology, params=params, seed=2)).slots_run
    for cut in range(1, n):
        r = run(RunSpec(scheme, topology, params=params, seed=2, slots=cut))
        assert r.completion is not None and not r.completion["complete"]
        assert r.ok, (cut, _failing(r.invariants))


# ------------------------------------------------------------------ the runs


def test_pmnb_cut_short_is_ok_so_far(capsys):
    """pmnb on the 5x5x5 mesh cut at 100 slots: the receptions still to come are pending, not missing."""
    argv = ["run", "pmnb", "--topology", "mesh:5x5x5", "--param", "active=40", "--slots", "100", "--seed", "3"]
    assert main([*argv, "--json"]) == 1  # ok so far, but a task cut short is not done: the verdict fails
    d = json.loads(capsys.readouterr().out)
    assert d["invariants"]["ok"] is True
    assert d["completion"] == {"complete": False, "slot": None, "time": None, "stopped_at_slot": 99, "ended_by": "slots"}
    once = d["invariants"]["every_packet_everywhere_once"]
    assert once["pending"] > 0 and once["due_at_slot"] > 99 and "missing" not in once
    assert d["invariants"]["within_subphase_windows"]["pending_nodes"] == 125
    _validate(d)
    assert main(argv) == 1
    printed = capsys.readouterr()
    out = printed.out
    assert printed.err == ("slotnet run: the run's verdict failed: task incomplete: its slots ended the run at slot 99 "
                           "before the task completed\n")
    assert "invariants: ok so far, incomplete at slot 99" in out
    assert "VIOLATED" not in out
    assert "NOTE: incomplete at slot 99: the 100 slots given ended the run before its task completed" in out


def test_pmnb_default_runs_to_completion_past_the_former_default():
    """A run that needs more than 1000 slots completes under the scheme's cap (4x Theorem 6's bound)."""
    spec = RunSpec("pmnb", "mesh:6x6", params={"active": 30, "tp": 1 / 64}, seed=1)
    r = run(spec)
    assert r.slots == spec.prepare().cap == 4 * math.ceil(r.theory["upper_bound"] * 64)  # quantum 64: t_p = 1/64
    assert r.slots_run == 1301 and r.completion == {"complete": True, "slot": 1300, "time": 20.3125} and r.ok
    cut = run(replace(spec, slots=1000))  # the former default: incomplete, and ok so far
    assert cut.ok and cut.completion["ended_by"] == "slots"
    assert cut.invariants["every_packet_everywhere_once"]["due_at_slot"] == 1300


def test_m2o_cut_short_counts_packets_in_flight(tmp_path, capsys):
    """m2o-greedy cut at 3 slots: packets on the wire and queued are in progress, nothing unaccounted."""
    from slotnet.schemes.manytoone.instances import instance_to_json, make_instance

    path = tmp_path / "inst.json"
    path.write_text(json.dumps(instance_to_json(make_instance("uniform", (8, 8), random.Random(1)))))
    argv = ["run", "m2o-greedy", "--topology", "mesh:8x8", "--param", f"instance={path}", "--slots", "3", "--seed", "1"]
    assert main([*argv, "--json"]) == 1  # incomplete: the verdict fails, the result is printed in full
    d = json.loads(capsys.readouterr().out)
    inv = d["invariants"]
    assert inv["ok"] is True and d["completion"]["complete"] is False
    cons = inv["conservation"]
    assert cons["in_flight"] > 0 and cons["unaccounted"] == 0
    assert cons["delivered"] + cons["in_flight"] + cons["held"] == cons["packets"]
    once = inv["every_packet_delivered_once"]
    assert once["in_progress"] == once["missing"] > 0 and once["unexplained"] == 0
    assert main(argv) == 1
    assert "VIOLATED" not in capsys.readouterr().out


def test_partial_exchange_cut_short_stays_ok():
    """The run the issue calls rightly ok: delivered, in flight and waiting add up to the packets due."""
    r = run(RunSpec("partial-exchange", "mesh:10x10", params={"active": 20, "tp": 0.1}, slots=1000, seed=1))
    once = r.invariants["exactly_once"]
    assert r.ok and r.completion["complete"] is False
    assert once["delivered"] + once["in_flight"] + once["waiting"] == once["expected"]


def test_completed_runs_keep_their_results():
    """A run that completed within the former default of 1000 slots is the same run, field for field."""
    for scheme in ("pmnb", "packing", "m2o-greedy"):
        topology, params = ONE_SHOT[scheme]
        a = run(RunSpec(scheme, topology, params=params, seed=1)).to_dict(per_node=True)
        b = run(RunSpec(scheme, topology, params=params, seed=1, slots=1000)).to_dict(per_node=True)
        a.pop("timing")
        b.pop("timing")
        assert a == b and a["slots"] == 1000


# ------------------------------------------------------------------ deadlines


def _setup(scheme: str, topology: str, params: Mapping[str, Any]) -> Setup:
    return RunSpec(scheme, topology, params=params, slots=10).prepare().setup


@pytest.mark.parametrize("scheme, reporter, check, deadline", [
    ("pmnb", PmnbReporter, "every_packet_everywhere_once", 60),       # Theorem 6's last subphase ends (7.5 units)
    ("pmnb", PmnbReporter, "within_subphase_windows", 60),
    ("pmnb", PmnbReporter, "ranks_and_m_by_prefix", 12),             # the scan ends (1.5 units)
    ("prefix-scan", PrefixScanReporter, "prefix_matches_sequential", 12),
    ("packing", RoutingReporter, "delivered_exactly_once", 60),        # the scan's 12 ticks + d(p-1) = 6 steps of 8
    ("packing", RoutingReporter, "ranks_by_prefix", 12),
])
def test_a_deadline_counts_once_it_has_passed(scheme, reporter, check, deadline):
    """Nothing arrived: pending (ok) before the deadline, violated at it, and violated in a completed run."""
    topology, params = ONE_SHOT[scheme]
    rep = reporter(_setup(scheme, topology, params))
    for event in ("input",):  # prefix-scan's inputs are known at slot 0
        if event in rep.events:
            for v in range(16):
                rep.handlers()[event](v, 0, 1)
    rep.run_ended(deadline - 1, complete=False)
    early = rep.invariants({}, [], [0] * 16)[check]
    assert early["ok"] is True and early["due_at_slot"] == deadline, early
    rep.run_ended(deadline, complete=False)
    assert rep.invariants({}, [], [0] * 16)[check]["ok"] is False
    rep.run_ended(deadline - 1, complete=True)
    assert rep.invariants({}, [], [0] * 16)[check]["ok"] is False


def test_the_deadlines_are_the_schedules_ends():
    """The deadlines above are where the runs end: pmnb completes at its last subphase's end."""
    r = run(RunSpec("pmnb", "mesh:4x4", seed=1))
    assert r.completion["slot"] == 60 == r.theory["schedule_end"] * 8


def test_base_reporter_due():
    """The kit's rule: due once the run completed or went on to the deadline; a run never told is complete."""
    rep = BaseReporter(Setup(parse_topology("mesh:4"), {}, {}, 50, 0, 0))
    assert rep.due(10**6)  # not told: the run did all it owed (the reporter's former behaviour)
    rep.run_ended(19, complete=False)
    assert rep.due(19) and not rep.due(20)
    rep.run_ended(19, complete=True)
    assert rep.due(20)


# ------------------------------------------------------------------ a user's own one-shot schemes


class _Towards(Node):
    """Every node of a line sends one packet to the last node, hop by hop (one per port per slot)."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.queue: list[tuple[int, int]] = []  # (birth, hops)

    async def run(self) -> None:
        ctx = self.ctx
        last = ctx.n_nodes - 1
        if ctx.node != last:
            self.queue.append((0, 0))
            ctx.record("born", 1)
        inbox: Any = ()
        while True:
            for _, (birth, hops) in inbox:
                if ctx.node == last:
                    ctx.record("delivered", birth, hops)
                else:
                    self.queue.append((birth, hops))
            if self.queue:
                birth, hops = self.queue.pop(0)
                ctx.send(ctx.port(0, 1), (birth, hops + 1))
            ctx.record("queue", len(self.queue))
            inbox = await (ctx.next_slot() if self.queue else ctx.idle())

    def held(self) -> int:
        return len(self.queue)


class _Forever(Node):
    """A node that keeps a timer for ever: the task never completes."""

    async def run(self) -> None:
        while True:
            await self.ctx.idle(until=self.ctx.slot + 1)


class _Window(BaseReporter):
    """A deadline invariant: every node checks in by slot 5 (a window of the user's own)."""

    events = {"here": ()}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.seen: set[int] = set()

    def handlers(self) -> Mapping[str, Any]:
        return {"here": lambda node, slot: self.seen.add(node)}

    def metrics(self) -> dict[str, Any]:
        return {"here": len(self.seen)}

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        missing = self.setup.topology.n_nodes - len(self.seen)
        return {"checked_in": {"ok": missing == 0 or not self.due(5), "missing": missing}}


class _CheckIn(Node):
    """Node v checks in at slot v (node 9 of a 10-line: slot 9, past the window of slot 5); node ``skip`` never does."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node:
            await ctx.idle(until=ctx.node)
        if ctx.node != ctx.params.get("skip"):
            ctx.record("here")


class _Plain:
    """A reporter of the user's own that is no BaseReporter: it has every member of the
    Reporter protocol, the end-of-run hooks included, and keeps no deadline (``run_ended``
    is told and ignored)."""

    events: Mapping[str, tuple[str, ...]] = {}

    def __init__(self, setup: Setup) -> None:
        self.setup = setup

    def handlers(self) -> Mapping[str, Any]:
        return {}

    def on_lost(self, *args: Any) -> None:
        pass

    def end_slot(self, slot: int) -> None:
        pass

    def backlog(self) -> int:
        return 0

    def holdings(self, per_node: Iterable[Any]) -> None:
        pass

    def run_ended(self, slot: int, complete: bool) -> None:
        pass

    def crash_losses(self, losses: Sequence[tuple[int, int, Sequence[Any]]]) -> None:
        pass

    def packet_books(self) -> Sequence[Any]:
        return ()

    def metrics(self) -> dict[str, Any]:
        return {}

    def per_node(self) -> dict[str, list[Any]]:
        return {}

    def series(self) -> list[dict[str, Any]]:
        return []

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        return {"plain": {"ok": True}}


@pytest.fixture
def user_scheme():
    made: list[str] = []

    def make(name: str, node: type[Node], reporter: Any, **fields: Any) -> str:
        # these rules park idle once their part is done: they declare it (a quiet run is then complete)
        fields.setdefault("done", parked_when_done)
        register(Scheme(name=name, summary="test", source="tests", node=node, reporter=reporter,
                        prepare=lambda topology, params, load: dict(params), topologies=("mesh",),
                        params=(Param("skip", int, -1, "a node that never checks in"),), until="quiescent", **fields))
        made.append(name)
        return name

    yield make
    for name in made:
        SCHEMES.pop(name, None)


def test_a_user_unicast_task_cut_short_keeps_its_books(user_scheme):
    """The kit's unicast conservation under the rule: cut anywhere, in flight and queued are accounted."""
    name = user_scheme("towards-end", _Towards, UnicastReporter)
    assert UnicastReporter.events == UNICAST_EVENTS
    full = run(RunSpec(name, "mesh:8", seed=1))
    assert full.completion["complete"] and full.ok
    assert full.invariants["conservation"]["delivered"] == 7
    for cut in range(1, full.slots_run):
        r = run(RunSpec(name, "mesh:8", seed=1, slots=cut))
        cons = r.invariants["conservation"]
        assert r.ok and not r.completion["complete"], (cut, cons)
        assert cons["delivered"] + cons["in_flight"] + cons["held"] == 7


def test_a_user_deadline_counts_once_it_has_passed(user_scheme):
    """A user reporter's own window (slot 5): pending before it, violated after it and in a completed run."""
    name = user_scheme("check-in", _CheckIn, _Window)
    assert run(RunSpec(name, "mesh:10", slots=5)).ok  # stopped after slot 4: the window is still open
    late = run(RunSpec(name, "mesh:10", slots=7))
    assert not late.ok and late.invariants["checked_in"]["missing"] == 3
    done = run(RunSpec(name, "mesh:10"))
    assert done.completion["complete"] and done.ok  # every node checked in (node 9 late: the check says only who did)
    skipped = run(RunSpec(name, "mesh:10", params={"skip": 2}))
    assert skipped.completion["complete"] and not skipped.ok  # completed: node 2 never will


def test_a_reporter_of_the_users_own_is_told_how_the_run_ended(user_scheme):
    """A reporter not built on BaseReporter is called through the protocol alone, and judged as it judges itself."""
    name = user_scheme("plain", _Forever, _Plain)
    r = run(RunSpec(name, "mesh:4", slots=2))
    assert r.ok and r.completion["ended_by"] == "slots"


def test_the_safety_cap_ends_a_task_that_never_completes(user_scheme, capsys):
    """A task that never completes stops at its cap, reported incomplete with a clear note."""
    name = user_scheme("forever", _Forever, _Plain, max_slots=lambda topology, params: 1200)
    r = run(RunSpec(name, "mesh:2"))
    assert r.slots == r.slots_run == 1200
    assert r.completion == {"complete": False, "slot": None, "time": None, "stopped_at_slot": 1199, "ended_by": "cap",
                            "cap": 1200}
    assert r.note is not None and "safety cap of 1200 slots" in r.note and "give --slots" in r.note
    _validate(r.to_dict())
    assert main(["run", name, "-t", "mesh:2", "--no-progress"]) == 1  # incomplete: the verdict fails
    out = capsys.readouterr().out
    assert "invariants: ok so far, incomplete at slot 1199" in out and "NOTE: incomplete at slot 1199" in out


def test_the_cap_is_never_below_the_former_default(user_scheme):
    """A cap below 1000 slots (or none declared) gives 1000; the given slot count is exactly that many."""
    small = user_scheme("forever-small", _Forever, _Plain, max_slots=lambda topology, params: 5)
    none = user_scheme("forever-none", _Forever, _Plain)
    for name in (small, none):
        prep = RunSpec(name, "mesh:2").prepare()
        assert prep.slots == prep.cap == 1000
    r = run(RunSpec(small, "mesh:2", slots=7))
    assert r.slots_run == 7 and r.completion["ended_by"] == "slots" and "cap" not in r.completion


@pytest.mark.parametrize("cap", [0, -3, 2.5, "10", True])
def test_a_bad_cap_is_refused(user_scheme, cap):
    """A scheme's max_slots must give an integer >= 1, refused before the run otherwise."""
    name = user_scheme("bad-cap", _Forever, _Plain, max_slots=lambda topology, params: cap)
    with pytest.raises(SpecError, match="safety cap"):
        RunSpec(name, "mesh:2").prepare()
    RunSpec(name, "mesh:2", slots=3).prepare()  # the cap is not asked for when the slots are given


def test_slots_for_a_run_of_slots_default_to_1000():
    """A scheme that runs for its slots: no slot count means 1000, as before; a warm-up must fit."""
    prep = RunSpec("deflection", "hypercube:3", load={"offered": 0.5}).prepare()
    assert prep.slots == prep.spec.slots == 1000 and prep.cap is None
    with pytest.raises(SpecError, match=r"warmup \(1000\) must be less than slots \(1000, the default"):
        RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, warmup=1000).prepare()
