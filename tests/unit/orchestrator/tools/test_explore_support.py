"""Every scheme under every fault kind: a result whose invariants close, or a declared refusal (issue #11)."""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.errors import FaultSpecError
from slotnet.fabric import FAULT_KINDS, parse_topology
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.tools._explore import explore
from slotnet.schemes import SCHEMES, get_scheme

#: scheme -> (a small topology it accepts, its load, the slots cap of a short run)
CONFIGS: dict[str, tuple[str, dict[str, float], int]] = {
    "array-broadcast": ("torus:8", {}, 200),
    "bcast-balanced": ("hypercube:3", {"rho": 0.3}, 60),
    "bcast-dtree": ("hypercube:3", {"rho": 0.3}, 60),
    "bcast-indirect": ("hypercube:3", {"rho": 0.3}, 60),
    "bcast-periodic": ("hypercube:3", {"rho": 0.3}, 60),
    "bcast-simple": ("hypercube:3", {"rho": 0.3}, 60),
    "deflection": ("hypercube:3", {"offered": 1.0}, 60),
    "dynamic-broadcast": ("torus:4x4", {"rho": 0.3}, 60),
    "m2o-bfs": ("mesh:4x4", {}, 400),
    "m2o-greedy": ("mesh:4x4", {}, 400),
    "m2o-offline": ("mesh:4x4", {}, 400),
    "m2o-rec": ("mesh:4x4", {}, 400),
    "monotone": ("torus:4x4", {}, 400),
    "packing": ("torus:4x4", {}, 400),
    "partial-exchange": ("torus:4x4", {}, 400),
    "pmnb": ("torus:4x4", {}, 400),
    "prefix-scan": ("torus:4x4", {}, 400),
    "star": ("torus:4x4", {"rho": 0.3}, 60),
}

#: Schemes that run under every fault kind and report what it cost in packets (issue #11).
TOLERANT = ("m2o-greedy", "m2o-rec", "m2o-bfs", "m2o-offline", "array-broadcast")

#: Every fault kind of the catalogue (corrupt twice: caught by the checksum, and not).
KINDS = ("loss", "dup", "delay", "corrupt", "corrupt:undetected", "partition", "stall", "link-down", "crash")


def _faults(kind: str, at: int, n: int) -> list[str]:
    """The schedule of one fault kind, its control faults from slot ``at`` on (rates high enough to hit)."""
    return {
        "loss": ["loss=0.2"],
        "dup": ["dup=0.2"],
        "delay": ["delay=0.2:2"],
        "corrupt": ["corrupt=0.2"],
        "corrupt:undetected": ["corrupt=0.2:undetected"],
        "partition": [f"partition@{at}:{2 * at}:0-{n // 2 - 1}"],
        "stall": [f"stall@{at}:{2 * at}:1"],
        "link-down": [f"link-down@{at}:0:0", f"link-up@{2 * at}:0:0"],
        "crash": [f"crash@{at}:1", f"recover@{2 * at}:1"],
    }[kind]


@cache
def _fault_slot(name: str) -> int:
    """A slot a quarter into the scheme's fault-free run (control faults land inside it)."""
    topo, load, slots = CONFIGS[name]
    return max(2, run(RunSpec(name, topo, load=load, slots=slots, seed=1)).slots_run // 4)


def _spec(name: str, kind: str) -> RunSpec:
    topo, load, slots = CONFIGS[name]
    faults = _faults(kind, _fault_slot(name), parse_topology(topo).n_nodes)
    return RunSpec(name, topo, load=load, slots=slots, seed=1, faults=faults)


def test_the_matrix_covers_every_scheme_and_fault_kind():
    """The matrix below names every registered scheme, and its kinds cover every registered fault kind."""
    assert set(CONFIGS) == set(SCHEMES)
    covered = {k.split(":")[0] for k in KINDS} | {"link-up", "recover"}
    assert covered == set(FAULT_KINDS)


def test_declared_kinds_are_real_and_refusals_say_why():
    """A scheme's declared fault kinds are registered kinds, and a scheme that refuses any says why."""
    for scheme in SCHEMES.values():
        if scheme.faults is not None:
            assert scheme.faults <= set(FAULT_KINDS), scheme.name
            if scheme.faults != set(FAULT_KINDS):
                assert scheme.faults_why and "\n" not in scheme.faults_why, scheme.name


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_scheme_runs_or_refuses_each_fault_kind(name, kind):
    """Each scheme x fault kind ends in closed invariants, or a one-line refusal before the run naming scheme, kind and why."""
    scheme = get_scheme(name)
    spec = _spec(name, kind)
    refused = sorted(k for k, _ in spec.faults.entries() if scheme.refuses_fault(k) is not None)
    assert not (refused and name in TOLERANT), (name, refused)
    if refused:
        with pytest.raises((SpecError, FaultSpecError)) as info:
            spec.prepare()
        msg = str(info.value)
        assert "\n" not in msg and repr(name) in msg and f"{kind.split(':')[0]} faults" in msg
        assert scheme.faults_why in msg
        return
    result = run(spec)
    assert result.invariants["ok"], (name, kind, {k: v for k, v in result.invariants.items()
                                                  if isinstance(v, dict) and not v.get("ok", True)})
    assert result.fault_impact is not None  # the report says what the fault cost
    if name in TOLERANT:  # ... in packets (receptions), and a one-shot run still ends at quiescence
        assert result.fault_impact["packets"], (name, kind)
        assert result.completion is not None and result.completion["complete"], (name, kind)


def test_the_tolerant_schemes_declare_every_kind():
    """The many-to-one schemes and array-broadcast are in the tolerated set: no fault kind refused, no reason needed."""
    for name in TOLERANT:
        scheme = get_scheme(name)
        assert scheme.faults is None and all(scheme.refuses_fault(k) is None for k in FAULT_KINDS), name


def _refusing(monkeypatch, name: str) -> None:
    """Every built-in scheme now runs under every kind: a copy of ``name`` that declares none
    (as a user's scheme may) keeps the refusal path under test."""
    refusing = dataclasses.replace(get_scheme(name), faults=frozenset(),
                                   faults_why="§4.1: fixed steps, no retransmission (a refusing copy for this test)")
    monkeypatch.setitem(SCHEMES, name, refusing)


def test_cli_refusal_is_exit_2_and_one_line(capsys, monkeypatch):
    """`slotnet run pmnb --fault loss=...` exits 2 with one line naming the scheme, the fault and the section."""
    _refusing(monkeypatch, "pmnb")
    code = main(["run", "pmnb", "-t", "torus:4x4", "--seed", "1", "--fault", "loss=0.05", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert "'pmnb'" in err and "loss faults (loss=0.05)" in err and "§4.1" in err


def test_explore_refuses_an_unsupported_family_before_any_run(monkeypatch):
    """Explore of a fault family the scheme refuses is a clean SpecError naming the family."""
    _refusing(monkeypatch, "partial-exchange")
    spec = RunSpec("partial-exchange", "torus:4x4", slots=400, seed=1)
    with pytest.raises(SpecError, match=r"'partial-exchange' cannot run under link-down faults \(explore --faults single-link\)"):
        explore(spec, "single-link", jobs=1)
    with pytest.raises(SpecError, match=r"'partial-exchange' cannot run under crash faults \(explore --faults single-node\)"):
        explore(RunSpec("partial-exchange", "torus:4x4", slots=400, seed=1), "single-node", jobs=1)


def test_explore_refuses_an_unsupported_schedule_file(monkeypatch):
    """Explore of a faults file holding a refused kind is refused like `slotnet run` with it."""
    _refusing(monkeypatch, "pmnb")
    with pytest.raises(SpecError, match=r"'pmnb' cannot run under dup faults \(dup=0.1\)"):
        explore(RunSpec("pmnb", "torus:4x4", slots=400, seed=1), schedule=[{"kind": "dup", "rate": 0.1}], jobs=1)


def test_periodic_counts_the_late_copies_it_ignores():
    """bcast-periodic ignores copies off their scheduled slot (dup, delay) and counts them; none without faults."""
    base = dict(scheme="bcast-periodic", topology="hypercube:4", load={"rho": 0.4}, slots=150, seed=3)
    clean = run(RunSpec(**base)).invariants["exactly_once"]
    assert "late_copies_ignored" not in clean and clean["missed"] == 0 and clean["duplicate_receptions"] == 0
    for fault in ("dup=0.2", "delay=0.2:3"):
        for variant in ("random", "simultaneous", "mnb"):
            r = run(RunSpec(**base, params={"variant": variant}, faults=[fault]))
            ex = r.invariants["exactly_once"]
            assert r.invariants["ok"] and ex["late_copies_ignored"] > 0 and ex["duplicate_receptions"] == 0, (fault, variant)
            assert ex["completed"] + ex["missed"] + ex["in_progress"] == ex["broadcasts"]
    # a late copy never lets a broadcast complete that a delay held back: the delayed ones are the missed ones
    r = run(RunSpec(**base, faults=["delay=0.2:3"]))
    assert r.invariants["exactly_once"]["missed"] > 0


def test_periodic_after_a_stall_drops_the_sends_it_missed():
    """A stalled bcast-periodic node forgets the sends of its stalled slots (counted) and schedules its births later."""
    for variant in ("random", "simultaneous", "mnb"):
        r = run(RunSpec("bcast-periodic", "hypercube:4", load={"rho": 0.4}, params={"variant": variant},
                        slots=200, seed=3, faults=["stall@40:80:5"]))
        ex = r.invariants["exactly_once"]
        assert r.invariants["ok"] and ex["duplicate_receptions"] == 0, variant
        assert r.per_node["born"][5] > 0  # the stalled node still originates broadcasts after it resumes
        if variant != "mnb":  # the d-tree schedules keep a node busy in every slot: a long stall must skip sends
            assert ex["sends_missed_while_stalled"] > 0, variant


def test_periodic_with_null_packets_survives_every_message_fault():
    """With nulls sent (every reserved arc-slot busy) the schedule check still holds under dup, delay and stall."""
    for fault in (["dup=0.2"], ["delay=0.2:2"], ["stall@10:30:2"], ["loss=0.1"]):
        r = run(RunSpec("bcast-periodic", "hypercube:3", load={"rho": 0.3}, params={"nulls": "send"},
                        slots=80, seed=2, faults=fault))
        assert r.invariants["ok"], fault


def test_refused_scheme_runs_unchanged_without_faults():
    """A scheme declaring no fault kind still runs fault-free, and a detection setting alone is no fault."""
    r = run(RunSpec("pmnb", "torus:4x4", slots=400, seed=1, faults=["detect=never"]))
    assert r.invariants["ok"]
    assert json.dumps(r.metrics, sort_keys=True) == json.dumps(run(RunSpec("pmnb", "torus:4x4", slots=400, seed=1)).metrics,
                                                               sort_keys=True)


@pytest.mark.parametrize("name", sorted(n for n in CONFIGS if get_scheme(n).refuses_fault("crash") is None))
def test_a_node_crashed_before_its_first_step(name):
    """crash@0 of a node holding input (node 0 is a source or origin in every config): invariants still close.

    Every node is built with its input before slot 0's faults, so the crash books what it held.
    """
    topo, load, slots = CONFIGS[name]
    params = {"placement": "corner"} if name == "array-broadcast" else {}
    result = run(RunSpec(name, topo, load=load, slots=slots, seed=1, params=params, faults=["crash@0:0"]))
    assert result.invariants["ok"], {k: v for k, v in result.invariants.items() if isinstance(v, dict) and not v.get("ok", True)}


def test_a_node_stalled_until_the_run_ends_holds_its_input():
    """A node whose stall ends with the run never steps, yet it was built holding its input: that input
    is held at the end, not vanished, and the task is incomplete: the packet is in progress, not lost."""
    r = run(RunSpec("m2o-greedy", "mesh:4x4", slots=400, seed=1, faults=["stall@0:399:0"]))
    cons, once = r.invariants["conservation"], r.invariants["every_packet_delivered_once"]
    assert cons["ok"] and cons["held"] == 1 and cons["delivered"] == 15 and cons["unaccounted"] == 0
    assert once["ok"] and once["missing"] == 1 and once["in_progress"] == 1 and once["unexplained"] == 0
    assert r.completion["complete"] is False and r.completion["stopped_at_slot"] == 399
    r = run(RunSpec("array-broadcast", "torus:8", slots=200, seed=1, params={"placement": "corner"},
                    faults=["stall@0:199:0"]))
    every = r.invariants["every_packet_everywhere_once"]
    assert every["in_progress"] == 8 and every["receptions"]["in_progress"] == 56 and every["receptions"]["unexplained"] == 0
