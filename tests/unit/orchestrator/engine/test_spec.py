"""Unit tests of the run spec, the memory estimate, the trace writer and the slot observers.

Each check pins one rule of ``orchestrator/engine`` (a refusal's exact message, a default,
a boundary on both sides, a hand-computed estimate) by calling the piece directly, so
that a change of behaviour there fails here in well under a second.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from slotnet import FaultSchedule, RunSpec, SpecError
from slotnet.errors import FaultSpecError, SlotnetError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.engine import _memory, _spec
from slotnet.orchestrator.engine._spec import (
    DEFAULT_MAX_BACKLOG,
    DEFAULT_SLOTS,
    MAX_LOAD,
    TRACE_DRIVER_EVENTS,
    Prepared,
    TraceSpec,
    check_fault_support,
)
from slotnet.schemes import Setup, get_scheme

KiB = 1024
MiB = 1024 * 1024


# -- run specs: defaults and equality -------------------------------------------------------

def test_module_constants():
    assert TRACE_DRIVER_EVENTS == ("sent", "received", "lost", "fault")
    assert DEFAULT_MAX_BACKLOG == 1000.0
    assert DEFAULT_SLOTS == 1000
    assert MAX_LOAD == 1000.0


def test_run_spec_defaults():
    s = RunSpec("deflection", "hypercube:3")
    assert s.params == {} and s.load == {}
    assert s.slots is None
    assert s.warmup == 0 and type(s.warmup) is int
    assert s.seed == 0 and type(s.seed) is int
    assert isinstance(s.faults, FaultSchedule) and s.faults.empty
    assert s.trace is None
    assert s.max_backlog_per_node is None
    assert s.transport is None
    assert s.observer == "direct"
    assert s.shards == 1 and type(s.shards) is int
    assert s.broker is None
    assert s.series is False


def test_trace_spec_defaults():
    t = TraceSpec("x.jsonl")
    assert t.nodes is None and t.slots is None and t.kinds is None and t.on_error is None


def test_specs_are_frozen_dataclasses():
    s = RunSpec("deflection", "hypercube:3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seed = 3
    t = TraceSpec("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.path = "y"
    prep = RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=4).prepare(check_memory=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        prep.quantum = 2


def test_callbacks_do_not_take_part_in_equality():
    assert TraceSpec("x", on_error=print) == TraceSpec("x", on_error=repr)
    assert RunSpec("deflection", "hypercube:3", transport=print) == RunSpec("deflection", "hypercube:3", transport=repr)
    assert RunSpec("deflection", "hypercube:3", seed=1) != RunSpec("deflection", "hypercube:3", seed=2)


def test_faults_given_as_cli_syntax_are_parsed():
    assert RunSpec("deflection", "hypercube:3", faults=None).faults == FaultSchedule()
    for given in (["crash@3:1", "loss=0.01"], ("crash@3:1", "loss=0.01")):
        s = RunSpec("deflection", "hypercube:3", faults=given)
        assert isinstance(s.faults, FaultSchedule)
        assert list(s.faults.entries()) == [("crash", "crash@3:1"), ("loss", "loss=0.01")]
    one = RunSpec("deflection", "hypercube:3", faults="loss=0.01")
    assert list(one.faults.entries()) == [("loss", "loss=0.01")]
    sched = FaultSchedule.parse(["loss=0.01"])
    assert RunSpec("deflection", "hypercube:3", faults=sched).faults is sched


def test_faults_of_another_type_are_refused_at_prepare():
    s = RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, slots=5, faults=[1, 2])
    assert s.faults == [1, 2]
    with pytest.raises(SpecError) as e:
        s.prepare(check_memory=False)
    assert str(e.value) == "faults must be a FaultSchedule or a list of strings such as ['crash@10:3', 'loss=0.01']"


# -- a fake scheme, to reach each branch of prepare ------------------------------------------

def _fake(monkeypatch: pytest.MonkeyPatch, **kw: Any):
    base = get_scheme("deflection")
    fake = dataclasses.replace(base, name="fake", **kw)
    real = _spec.get_scheme
    monkeypatch.setattr(_spec, "get_scheme", lambda name: fake if name == "fake" else real(name))
    return fake


def _prep(scheme: str = "deflection", topology: str = "hypercube:2", **kw: Any) -> Prepared:
    kw.setdefault("load", {"offered": 0.5} if scheme in ("deflection", "fake") else {})
    kw.setdefault("slots", 5)
    check = kw.pop("check_memory", False)
    return RunSpec(scheme, topology, **kw).prepare(check_memory=check)


def _refusal(**kw: Any) -> str:
    with pytest.raises(SpecError) as e:
        _prep(**kw)
    return str(e.value)


def test_prepared_parts():
    spec = RunSpec("deflection", "hypercube:3", load={"offered": "0.5"}, slots=7, warmup=2, seed=9)
    prep = spec.prepare(check_memory=False)
    assert prep.spec is spec
    assert prep.scheme is get_scheme("deflection")
    assert prep.topology.spec == "hypercube:3" and prep.topology.n_nodes == 8
    assert prep.params == {"schedule": None, "order": "random"}
    assert prep.node_params.d == 3 and prep.node_params.mode == "blocking"
    assert prep.setup == Setup(prep.topology, prep.node_params, {"offered": 0.5}, 7, 2, 9, 1, False, False)
    assert prep.setup.load == {"offered": 0.5} and type(prep.setup.load["offered"]) is float
    assert prep.max_backlog_per_node == 1000.0 and type(prep.max_backlog_per_node) is float
    assert prep.quantum == 1
    assert prep.cap is None
    assert prep.slots == 7


def test_setup_records_series_and_faults():
    prep = _prep(series=True, faults=["loss=0.01"])
    assert prep.setup.series is True and prep.setup.faults is True
    prep = _prep(series=False)
    assert prep.setup.series is False and prep.setup.faults is False


def test_params_are_parsed_over_the_defaults():
    prep = _prep(params={"order": "continuing-first"})
    assert prep.params == {"schedule": None, "order": "continuing-first"}
    assert _refusal(params={"nope": 1}).startswith("scheme 'deflection' has no parameter 'nope'")


def test_params_must_be_a_mapping():
    assert _refusal(params=[("order", "fixed")]) == \
        "params must be a mapping of name to value, got list [('order', 'fixed')] (e.g. params={'order': 'random'})"


def test_a_topology_the_scheme_does_not_run_on_is_refused():
    assert _refusal(topology="mesh:2x2") == "scheme 'deflection' runs on hypercube, not mesh:2x2"
    assert _refusal(scheme="prefix-scan", topology="hypercube:2") == \
        "scheme 'prefix-scan' runs on torus, mesh, not hypercube:2"


@pytest.mark.parametrize(("kw", "message"), [
    ({"slots": 0}, "slots must be an integer >= 1, got 0"),
    ({"slots": True}, "slots must be an integer >= 1, got True"),
    ({"slots": 2.0}, "slots must be an integer >= 1, got 2.0"),
    ({"slots": "5"}, "slots must be an integer >= 1, got '5'"),
    ({"warmup": -1}, "warmup must be an integer >= 0, got -1"),
    ({"warmup": False}, "warmup must be an integer >= 0, got False"),
    ({"slots": None, "warmup": -1}, "warmup must be an integer >= 0, got -1"),
    ({"slots": None, "seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"seed": 1.5}, "seed must be an integer >= 0, got 1.5"),
    ({"series": 1}, "series must be True or False, got 1"),
    ({"observer": "queued"}, "observer must be 'direct' or 'buffered', got 'queued'"),
    ({"shards": 0}, "shards must be an integer >= 1, got 0"),
    ({"shards": True}, "shards must be an integer >= 1, got True"),
    ({"shards": "2"}, "shards must be an integer >= 1, got '2'"),
    ({"shards": 2, "transport": print},
     "transport= and shards > 1 do not go together: a sharded run's transport is its shards' "
     "(leave transport out, or run in one process)"),
    ({"slots": 5, "warmup": 5}, "warmup (5) must be less than slots (5)"),
    ({"slots": 5, "warmup": 6}, "warmup (6) must be less than slots (5)"),
    ({"slots": None, "warmup": 1000}, "warmup (1000) must be less than slots (1000, the default: give slots)"),
    ({"max_backlog_per_node": 0}, "max backlog per node must be > 0, got 0"),
    ({"max_backlog_per_node": -1.5}, "max backlog per node must be > 0, got -1.5"),
])
def test_refusals(kw, message):
    assert _refusal(**kw) == message


@pytest.mark.parametrize("kw", [
    {"slots": 1}, {"warmup": 0}, {"seed": 0}, {"series": True}, {"observer": "buffered"}, {"shards": 1},
    {"shards": 2}, {"shards": 1, "transport": print}, {"slots": 5, "warmup": 4}, {"slots": None, "warmup": 999},
    {"max_backlog_per_node": 0.5}, {"max_backlog_per_node": 1},
])
def test_accepted_boundaries(kw):
    _prep(**kw)


def test_given_backlog_cap_wins_over_the_schemes():
    assert _prep(max_backlog_per_node=5).max_backlog_per_node == 5.0
    assert type(_prep(max_backlog_per_node=5).max_backlog_per_node) is float
    periodic = _prep("bcast-periodic", "hypercube:3", load={"rho": 0.1})
    scheme = get_scheme("bcast-periodic")
    assert scheme.max_backlog is not None
    assert periodic.max_backlog_per_node == scheme.max_backlog(periodic.topology, periodic.node_params) != 1000.0


def test_slots_left_out_runs_the_default():
    prep = _prep(slots=None)
    assert prep.slots == 1000 and prep.spec.slots == 1000 and prep.cap is None
    assert prep.spec.load == {"offered": 0.5}


def test_a_one_shot_tasks_cap(monkeypatch):
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1500)
    prep = _prep("fake", slots=None)
    assert prep.cap == 1500 and prep.slots == 1500 and prep.spec.slots == 1500
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 5)
    prep = _prep("fake", slots=None)
    assert prep.cap == 1000 and prep.slots == 1000
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1)
    assert _prep("fake", slots=None).cap == 1000
    _fake(monkeypatch, until="quiescent", max_slots=None)
    assert _prep("fake", slots=None).cap == 1000
    # slots given: no cap, whatever the scheme declares
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1500)
    prep = _prep("fake", slots=7)
    assert prep.cap is None and prep.slots == 7


def test_the_warmup_must_fit_under_the_cap(monkeypatch):
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1200)
    assert _refusal(scheme="fake", slots=None, warmup=1200) == \
        "warmup (1200) must be less than slots (1200, the safety cap of fake: give slots)"
    _prep("fake", slots=None, warmup=1199)


@pytest.mark.parametrize("cap", [0, -3, True, 2.5, "9", None])
def test_a_bad_safety_cap_is_refused(monkeypatch, cap):
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: cap)
    assert _refusal(scheme="fake", slots=None) == \
        f"scheme 'fake' asked for a safety cap of {cap!r} slots (need an integer >= 1)"


def _quantum(q: Any):
    """deflection's prepare, its Inputs given the time quantum ``q``."""
    base = get_scheme("deflection")
    return lambda t, p, ld: dataclasses.replace(_spec._inputs(base, base.prepare(t, p, ld)), quantum=q)


def test_the_schemes_quantum(monkeypatch):
    """The quantum of the scheme's Inputs is the run's, in the spec and the setup alike."""
    _fake(monkeypatch, prepare=_quantum(3))
    prep = _prep("fake")
    assert prep.quantum == 3 and prep.setup.quantum == 3
    _fake(monkeypatch, prepare=_quantum(1))
    assert _prep("fake").quantum == 1


@pytest.mark.parametrize("q", [0, -1, True, 2.0, "2"])
def test_a_bad_quantum_is_refused(monkeypatch, q):
    """A quantum that is no integer >= 1 is refused, naming the scheme and the value."""
    _fake(monkeypatch, prepare=_quantum(q))
    assert _refusal(scheme="fake") == f"scheme 'fake' asked for a time quantum of {q!r} (need an integer >= 1)"


def test_a_mapping_from_prepare_is_inputs_at_quantum_1(monkeypatch):
    """A plain mapping from prepare stands for Inputs(mapping): nodes see it read-only, quantum 1."""
    _fake(monkeypatch, prepare=lambda t, p, ld: {"k": 1})
    prep = _prep("fake")
    assert prep.quantum == 1 and dict(prep.node_params) == {"k": 1}


@pytest.mark.parametrize("bad", [None, 3, ("k", 1)])
def test_prepare_returning_neither_inputs_nor_a_mapping_is_refused(monkeypatch, bad):
    """prepare must return Inputs or a mapping: anything else is one SpecError naming the scheme and the type."""
    _fake(monkeypatch, prepare=lambda t, p, ld: bad)
    assert _refusal(scheme="fake") == (f"scheme 'fake': prepare returned a {type(bad).__name__}, "
                                       "not an Inputs (or a mapping of node parameters)")


def test_fault_kinds_the_scheme_refuses(monkeypatch):
    fake = _fake(monkeypatch, faults=frozenset({"loss"}), faults_why="fixed steps (§2)")
    assert _refusal(scheme="fake", faults=["crash@3:1"]) == \
        "scheme 'fake' cannot run under crash faults (crash@3:1): fixed steps (§2)"
    _prep("fake", faults=["loss=0.1"])
    check_fault_support(fake, FaultSchedule.parse(["loss=0.1"]))
    with pytest.raises(SpecError, match=r"^scheme 'fake' cannot run under dup faults \(dup=0.5\): fixed steps"):
        check_fault_support(fake, FaultSchedule.parse(["loss=0.1", "dup=0.5"]))


def test_the_fault_schedule_is_validated_against_the_run():
    with pytest.raises(FaultSpecError, match="node 99 not in 0..3"):
        _prep(faults=["crash@3:99"])
    _prep(faults=["crash@3:3"])


def test_the_memory_check(monkeypatch):
    calls: list[tuple[Any, ...]] = []

    def rec(topology, slots, **kw):
        calls.append((topology.spec, slots, kw))

    monkeypatch.setattr(_spec, "check_fits", rec)
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, series=True).prepare()
    assert calls == [("hypercube:2", 7, {"series": True, "shards": 1, "hosted": None, "scheme": "deflection",
                                         "rng": "philox", "faulted": False})]
    calls.clear()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, rng="philox").prepare(hosted=3)
    assert calls == [("hypercube:2", 1000, {"series": False, "shards": 1, "hosted": 3, "scheme": "deflection",
                                            "rng": "philox", "faulted": False})]
    calls.clear()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, faults=["loss=0.01"]).prepare()
    assert calls[0][2]["faulted"] is True
    calls.clear()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, faults=["detect=2"]).prepare()
    assert calls[0][2]["faulted"] is False  # the detection setting alone is no fault
    calls.clear()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, shards=2).prepare()
    assert calls[0][2]["shards"] == 2 and type(calls[0][2]["shards"]) is int
    calls.clear()
    with pytest.raises(SpecError):
        RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, shards="2").prepare()
    assert calls[0][2]["shards"] == 1
    calls.clear()
    with pytest.raises(SpecError):
        RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7, shards=True).prepare()
    assert type(calls[0][2]["shards"]) is int
    calls.clear()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=7).prepare(check_memory=False)
    assert calls == []


def test_a_one_shot_cap_past_the_default_is_checked_again(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(_spec, "check_fits", lambda topology, slots, **kw: calls.append(slots))
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1000)
    RunSpec("fake", "hypercube:2", load={"offered": 0.5}).prepare()
    assert calls == [1000]
    calls.clear()
    _fake(monkeypatch, until="quiescent", max_slots=lambda topo, p: 1001)
    RunSpec("fake", "hypercube:2", load={"offered": 0.5}).prepare()
    assert calls == [1000, 1001]


def test_prepare_checks_memory_unless_told_not_to(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda meminfo="/proc/meminfo": 1)
    with pytest.raises(SpecError, match="but this machine has 1 B available"):
        RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=5).prepare()
    RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=5).prepare(check_memory=False)


def test_a_scheme_error_becomes_a_spec_error():
    with pytest.raises(SpecError, match="nope"):
        RunSpec("nope", "hypercube:2").prepare(check_memory=False)


# -- loads -------------------------------------------------------------------------------------

def _load(scheme: str, given: dict[str, Any]) -> dict[str, float]:
    return _spec._load(get_scheme(scheme), given)


def _load_refusal(scheme: str, given: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as e:
        _load(scheme, given)
    return str(e.value)


def test_loads_are_floats():
    got = _load("deflection", {"offered": "0.5", "lam": 2})
    assert got == {"offered": 0.5, "lam": 2.0} and all(type(v) is float for v in got.values())
    assert _load("deflection", {"offered": 0}) == {"offered": 0.0}
    assert _load("deflection", {"offered": 0.5}) == {"offered": 0.5}
    assert _load("deflection", {"offered": 1000}) == {"offered": 1000.0}
    assert _load("deflection", {}) == {}


def test_load_refusals():
    assert _load_refusal("deflection", {"rho": 1}) == "scheme 'deflection' takes --offered or --lam, not --rho"
    assert _load_refusal("m2o-greedy", {"rho": 1}) == "scheme 'm2o-greedy' takes no load flag, not --rho"
    assert _load_refusal("deflection", {"offered": True}) == "--offered must be a number, got True"
    assert _load_refusal("deflection", {"offered": "abc"}) == "--offered must be a number, got 'abc'"
    assert _load_refusal("deflection", {"offered": None}) == "--offered must be a number, got None"
    for bad in (-1, -0.001, math.inf, math.nan):
        assert _load_refusal("deflection", {"offered": bad}) == f"--offered must be a finite number >= 0, got {bad!r}"
    assert _load_refusal("deflection", {"offered": 1000.5}) == (
        "--offered 1000.5 is beyond any load a scheme here can carry (at most 1000): "
        "its first slot alone would create that many packets per node")


# -- traces: what the spec accepts ----------------------------------------------------------------

def _trace_refusal(trace: Any, scheme: str = "deflection", topology: str = "hypercube:2") -> str:
    with pytest.raises(SpecError) as e:
        _spec._check_trace(trace, get_scheme(scheme), parse_topology(topology))
    return str(e.value)


def _trace_ok(trace: Any, scheme: str = "deflection", topology: str = "hypercube:2") -> None:
    _spec._check_trace(trace, get_scheme(scheme), parse_topology(topology))


def test_trace_refusals():
    assert _trace_refusal("x.jsonl") == "trace must be a TraceSpec, got str"
    for v in (-1, 4, True, 1.0):
        assert _trace_refusal(TraceSpec("x", nodes=frozenset({v}))) == f"trace node {v!r} not in 0..3"
    bad_window = "trace slots must be (first, last) integers with 0 <= first < last, got "
    for w in ((3, 3), (4, 3), (-1, 2), (0, 1, 2), (0,), [0, 2], (0, True), (0.0, 2), (1, 0)):
        assert _trace_refusal(TraceSpec("x", slots=w)) == bad_window + repr(w)
    known = ", ".join([*get_scheme("deflection").reporter.events, *TRACE_DRIVER_EVENTS])
    assert _trace_refusal(TraceSpec("x", kinds=frozenset({"zz", "aa", "sent"}))) == \
        f"trace event kind 'aa', 'zz' never occurs in a deflection run (known: {known})"


def test_trace_accepted():
    _trace_ok(TraceSpec("x"))
    _trace_ok(TraceSpec("x", nodes=frozenset({0, 3}), slots=(0, 1), kinds=frozenset(TRACE_DRIVER_EVENTS)))
    _trace_ok(TraceSpec("x", slots=(2, 3)))
    events = get_scheme("deflection").reporter.events
    _trace_ok(TraceSpec("x", kinds=frozenset(events)))


def test_prepare_checks_the_trace():
    assert _refusal(trace=TraceSpec("x", nodes=frozenset({9}))) == "trace node 9 not in 0..3"
    _prep(trace=TraceSpec("x", nodes=frozenset({3})))


def test_prepared_defaults():
    prep = _prep()
    bare = Prepared(prep.spec, prep.scheme, prep.topology, prep.params, prep.node_params, prep.setup)
    assert bare.max_backlog_per_node == 1000.0
    assert bare.quantum == 1
    assert bare.cap is None
    assert bare.slots == 5


# -- the memory estimate -----------------------------------------------------------------------------

def test_memory_constants():
    m = _memory
    assert (64 * KiB, 64, 1024, 64 * MiB, 4 * KiB) == \
        (m.BYTES_PER_NODE, m.BYTES_PER_SLOT, m.BYTES_PER_SERIES_SLOT, m.BASE_BYTES, m.BYTES_PER_REPORTED_NODE)
    assert {
        "deflection": 9 * KiB, "bcast-periodic": 9 * KiB, "bcast-simple": 13 * KiB,
        "bcast-balanced": 19 * KiB, "bcast-dtree": 20 * KiB, "bcast-indirect": 21 * KiB, "star": 13 * KiB,
        "m2o-greedy": 15 * KiB} == m.SCHEME_BYTES_PER_NODE
    assert {
        "deflection": 11 * KiB, "bcast-periodic": 10 * KiB, "bcast-simple": 17 * KiB,
        "bcast-balanced": 23 * KiB, "bcast-dtree": 24 * KiB, "bcast-indirect": 22 * KiB, "star": 13 * KiB,
        "m2o-greedy": 15 * KiB} == m.FAULTED_BYTES_PER_NODE
    assert {
        "deflection": 5 * KiB, "bcast-periodic": 6 * KiB, "bcast-simple": 11 * KiB,
        "bcast-balanced": 16 * KiB, "bcast-dtree": 18 * KiB, "bcast-indirect": 18 * KiB, "star": 11 * KiB,
        "m2o-greedy": 15 * KiB} == m.PHILOX_BYTES_PER_NODE
    assert {
        "deflection": 7 * KiB, "bcast-periodic": 7 * KiB, "bcast-simple": 15 * KiB,
        "bcast-balanced": 20 * KiB, "bcast-dtree": 23 * KiB, "bcast-indirect": 19 * KiB, "star": 12 * KiB,
        "m2o-greedy": 15 * KiB} == m.PHILOX_FAULTED_BYTES_PER_NODE


def test_bytes_per_node():
    assert _memory.bytes_per_node("deflection") == 5 * KiB  # the default generator's figure (philox)
    assert _memory.bytes_per_node("deflection", "mt") == 9 * KiB
    assert _memory.bytes_per_node("star") == 11 * KiB
    assert _memory.bytes_per_node("star", "mt") == 13 * KiB
    assert _memory.bytes_per_node("m2o-rec") == 64 * KiB
    assert _memory.bytes_per_node(None) == 64 * KiB
    assert _memory.bytes_per_node("deflection", "mt", faulted=True) == 11 * KiB
    assert _memory.bytes_per_node("deflection", "philox", faulted=True) == 7 * KiB
    assert _memory.bytes_per_node("star", "philox", faulted=True) == 12 * KiB
    assert _memory.bytes_per_node("m2o-rec", faulted=True) == _memory.bytes_per_node(None, faulted=True) == 64 * KiB


def test_estimate_one_process():
    cube = parse_topology("hypercube:4")  # 16 nodes
    assert _memory.estimate(cube, 10) == 64 * MiB + 16 * 64 * KiB + 10 * 64
    assert _memory.estimate(cube, 10, series=True, scheme="deflection") == 64 * MiB + 16 * 5 * KiB + 10 * (64 + 1024)
    assert _memory.estimate(cube, 10, shards=1, scheme="star") == 64 * MiB + 16 * 11 * KiB + 10 * 64
    assert _memory.estimate(cube, 10, shards=0, scheme="star") == 64 * MiB + 16 * 11 * KiB + 10 * 64


def test_estimate_sharded():
    cube = parse_topology("hypercube:4")  # 16 nodes; 3 shards of at most 6
    coordinator = 64 * MiB + 16 * 4 * KiB + 10 * (64 + 1024)
    shard = 64 * MiB + 6 * 5 * KiB + 10 * 64
    assert _memory.estimate(cube, 10, series=True, shards=3, scheme="deflection") == coordinator + 3 * shard
    coordinator = 64 * MiB + 16 * 4 * KiB + 10 * 64
    assert _memory.estimate(cube, 10, shards=2) == coordinator + 2 * (64 * MiB + 8 * 64 * KiB + 10 * 64)


def test_estimate_one_shard_by_itself():
    cube = parse_topology("hypercube:4")
    got = _memory.estimate(cube, 10, series=True, shards=3, hosted=5, scheme="deflection")
    assert got == 64 * MiB + 5 * 5 * KiB + 10 * 64


def test_available_memory_reads_meminfo(tmp_path: Path, monkeypatch):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:  9 kB\nMemFree:  8 kB\nMemAvailable:   1000 kB\n")
    assert _memory.available_memory(f) == 1000 * 1024
    assert _memory.available_memory(str(f)) == 1000 * 1024
    monkeypatch.setattr(_memory.os, "sysconf", lambda name: {"SC_AVPHYS_PAGES": 7, "SC_PAGE_SIZE": 4096}[name])
    f.write_text("MemTotal:  9 kB\nXMemAvailable: 5 kB\n")
    assert _memory.available_memory(f) == 7 * 4096
    f.write_text("MemAvailable: lots kB\n")
    assert _memory.available_memory(f) == 7 * 4096
    f.write_text("MemAvailable:\n")
    assert _memory.available_memory(f) == 7 * 4096
    assert _memory.available_memory(tmp_path / "missing") == 7 * 4096


@pytest.mark.parametrize("exc", [AttributeError, ValueError, OSError])
def test_available_memory_unknown(tmp_path: Path, monkeypatch, exc):
    def fail(name):
        raise exc(name)

    monkeypatch.setattr(_memory.os, "sysconf", fail)
    assert _memory.available_memory(tmp_path / "missing") is None


def test_available_memory_default_path(monkeypatch):
    seen = []
    real = _memory.Path

    def spy(p):
        seen.append(str(p))
        return real(p)

    monkeypatch.setattr(_memory, "Path", spy)
    _memory.available_memory()
    assert seen == ["/proc/meminfo"]


def test_human():
    h = _memory._human
    assert h(0) == "0 B"
    assert h(1023) == "1023 B"
    assert h(1024) == "1.0 KiB"
    assert h(1536) == "1.5 KiB"
    assert h(1024 * 1024 - 1) == "1024.0 KiB"
    assert h(1024 * 1024) == "1.0 MiB"
    assert h(3 * 1024 ** 3) == "3.0 GiB"
    assert h(1024 ** 4) == "1.0 TiB"
    assert h(1024 ** 5) == "1.0 PiB"
    assert h(2048 * 1024 ** 5) == "2048.0 PiB"


def test_check_fits_boundary():
    cube = parse_topology("hypercube:4")
    need = _memory.estimate(cube, 10, scheme="deflection")
    _memory.check_fits(cube, 10, available=need, scheme="deflection")
    with pytest.raises(SpecError):
        _memory.check_fits(cube, 10, available=need - 1, scheme="deflection")


def test_check_fits_messages():
    cube = parse_topology("hypercube:4")
    with pytest.raises(SpecError) as e:
        _memory.check_fits(cube, 10, available=1000, scheme="deflection")
    assert str(e.value) == ("hypercube:4 for 10 slots needs about 64.1 MiB (16 nodes, ~5 KiB per node) "
                            "but this machine has 1000 B available")
    with pytest.raises(SpecError) as e:
        _memory.check_fits(cube, 10, available=2048, shards=2, series=True)
    need = _memory.estimate(cube, 10, shards=2, series=True)
    assert str(e.value) == (f"hypercube:4 for 10 slots needs about {_memory._human(need)} over 2 shard processes here "
                            "(16 nodes, ~64 KiB per node) but this machine has 2.0 KiB available")
    with pytest.raises(SpecError) as e:
        _memory.check_fits(cube, 10, available=2048, shards=2, hosted=5, scheme="star")
    assert str(e.value) == ("this shard of hypercube:4 for 10 slots needs about 64.1 MiB "
                            "(5 nodes, ~11 KiB per node) but this machine has 2.0 KiB available")
    # slots that are more than a quarter of the estimate are named
    with pytest.raises(SpecError) as e:
        _memory.check_fits(cube, 1_000_000, available=2048, scheme="deflection")
    assert "(16 nodes and 1,000,000 slots, ~5 KiB per node)" in str(e.value)
    assert "hypercube:4 for 1,000,000 slots needs about 125.1 MiB" in str(e.value)


def test_check_fits_where_the_memory_is_unknown(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda meminfo="/proc/meminfo": None)
    _memory.check_fits(parse_topology("hypercube:20"), 10 ** 9)
    monkeypatch.setattr(_memory, "available_memory", lambda meminfo="/proc/meminfo": 10)
    with pytest.raises(SpecError, match="has 10 B available"):
        _memory.check_fits(parse_topology("hypercube:2"), 1)


def test_the_slot_quarter_rule_boundary():
    """Slots are named when their bytes are more than a quarter of the estimate: slots * 64 > need / 4,
    need = 64 MiB + n * 64 KiB + slots * 64, i.e. 192 * slots > 64 MiB + n * 64 KiB; equal at 2 nodes."""
    pair = parse_topology("hypercube:1")
    edge = (64 * MiB + 2 * 64 * KiB) // 192
    assert edge * 192 == 64 * MiB + 2 * 64 * KiB
    for slots, named in ((edge - 1, False), (edge, False), (edge + 1, True)):
        with pytest.raises(SpecError) as e:
            _memory.check_fits(pair, slots, available=1)
        assert (f"(2 nodes and {slots:,} slots, ~64 KiB per node)" in str(e.value)) is named
        assert ("(2 nodes, ~64 KiB per node)" in str(e.value)) is not named


# -- the trace buffer and writer ---------------------------------------------------------------------

from slotnet.fabric import decode  # noqa: E402
from slotnet.orchestrator.engine._observer import OBSERVERS, SlotBatch, SlotObservers  # noqa: E402
from slotnet.orchestrator.engine._trace import TraceBuffer, Tracer, fingerprint  # noqa: E402

SCHEMA = {"got": ("a", "b"), "none": ()}


def test_buffer_node_choice():
    every = TraceBuffer(TraceSpec("x"), SCHEMA)
    assert every.wants_node(0) and every.wants_node(99)
    some = TraceBuffer(TraceSpec("x", nodes=frozenset({1})), SCHEMA)
    assert some.wants_node(1) and not some.wants_node(2)
    assert every.on is True


def test_buffer_slot_window_and_kinds():
    buf = TraceBuffer(TraceSpec("x", slots=(2, 4), kinds=frozenset({"sent"})), SCHEMA)
    for slot in range(6):
        buf.tap(0, slot, "sent", {})
        buf.tap(0, slot, "received", {})
    assert [ev["slot"] for _, _, ev in buf.take()] == [2, 3]
    assert buf.take() == []
    buf = TraceBuffer(TraceSpec("x"), SCHEMA)
    buf.on = False
    buf.tap(0, 1, "sent", {})
    buf.driver_tap(0, 1, "lost", {})
    buf.extend([(0, [1, 1], {"slot": 1})])
    assert buf.take() == []


def test_buffer_keys():
    buf = TraceBuffer(TraceSpec("x"), SCHEMA)
    buf.tap(3, 7, "sent", {"port": 1})
    buf.tap(2, 7, "received", {"port": 0})
    buf.driver_tap(1, 7, "lost", {"cause": "loss", "to": 2})
    buf.record(4, 7, "got", (5, 6))
    buf.record(4, 7, "none", ())
    ev_lost = {"slot": 7, "node": 1, "event": "lost", "cause": "loss", "to": 2}
    assert buf.take() == [
        (3, (1, 1), {"slot": 7, "node": 3, "event": "sent", "port": 1}),
        (2, (1, 2), {"slot": 7, "node": 2, "event": "received", "port": 0}),
        (1, (0, json.dumps(ev_lost, sort_keys=True)), ev_lost),
        (4, (1, 3), {"slot": 7, "node": 4, "event": "got", "a": 5, "b": 6}),
        (4, (1, 4), {"slot": 7, "node": 4, "event": "none"}),
    ]


def test_buffer_refuses_values_the_schema_does_not_name():
    buf = TraceBuffer(TraceSpec("x"), SCHEMA)
    with pytest.raises(SlotnetError) as e:
        buf.record(4, 7, "got", (1,))
    assert str(e.value) == "node 4 recorded 'got' with 1 values in slot 7; the reporter declares ['a', 'b']"
    with pytest.raises(SlotnetError) as e:
        buf.record(2, 3, "other", (1, 2))
    assert str(e.value) == "node 2 recorded 'other' with 2 values in slot 3; the reporter declares []"
    # an event the trace does not keep is not checked
    TraceBuffer(TraceSpec("x", kinds=frozenset({"sent"})), SCHEMA).record(2, 3, "other", (1, 2))


def test_buffer_extend():
    buf = TraceBuffer(TraceSpec("x"), SCHEMA)
    buf.extend([(2, [1, 5], [("slot", 1), ("node", 2)])])
    assert buf.take() == [(2, (1, 5), {"slot": 1, "node": 2})]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_tracer_writes_sorted_compact_lines(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    tracer = Tracer(TraceSpec(str(path)), SCHEMA)
    assert path.read_text() == ""  # the probe's byte is taken back
    assert tracer.written == 0 and tracer.error is None and tracer.spec.path == str(path)
    buf = tracer.buffer
    assert isinstance(buf, TraceBuffer) and buf.schema is SCHEMA
    buf.tap(2, 0, "sent", {"port": 1})
    buf.tap(1, 0, "sent", {"port": 0})
    buf.driver_tap(2, 0, "lost", {"cause": "loss"})
    assert tracer.close_slot(0) is True
    assert tracer.written == 3
    tracer.end_slot()  # nothing kept: nothing written
    assert tracer.written == 3
    buf.tap(0, 1, "sent", {})
    tracer.close()
    assert tracer.written == 4
    assert _lines(path) == [
        '{"slot":0,"node":1,"event":"sent","port":0}',
        '{"slot":0,"node":2,"event":"lost","cause":"loss"}',
        '{"slot":0,"node":2,"event":"sent","port":1}',
        '{"slot":1,"node":0,"event":"sent"}',
    ]
    assert buf.on is False
    tracer.close()  # twice is harmless


def test_tracer_refuses_a_path_it_cannot_open(tmp_path: Path):
    bad = str(tmp_path / "no" / "t.jsonl")
    with pytest.raises(SpecError) as e:
        Tracer(TraceSpec(bad), SCHEMA)
    assert str(e.value) == f"cannot write trace {bad!r}: No such file or directory"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_tracer_refuses_a_full_device():
    with pytest.raises(SpecError) as e:
        Tracer(TraceSpec("/dev/full"), SCHEMA)
    assert str(e.value) == "cannot write trace '/dev/full': No space left on device"


def test_tracer_on_a_device_that_cannot_seek():
    tracer = Tracer(TraceSpec("/dev/null"), SCHEMA)
    tracer.buffer.tap(0, 0, "sent", {})
    tracer.close()
    assert tracer.written == 1 and tracer.error is None


class _Broken:
    def __init__(self, on_close: bool = False) -> None:
        self.on_close = on_close
        self.closed = 0

    def write(self, s: str) -> int:
        if not self.on_close:
            raise OSError(28, "No space left on device")
        return len(s)

    def close(self) -> None:
        self.closed += 1
        if self.on_close:
            raise OSError(5, "Input/output error")


def test_a_write_that_fails_mid_run_stops_the_trace_not_the_run(tmp_path: Path):
    errors: list[str] = []
    path = tmp_path / "t.jsonl"
    tracer = Tracer(TraceSpec(str(path), on_error=errors.append), SCHEMA)
    tracer.buffer.tap(0, 3, "sent", {})
    tracer.end_slot()
    real = tracer._out
    assert real is not None
    broken = _Broken()
    tracer._out = broken
    tracer.buffer.tap(0, 5, "sent", {})
    tracer.buffer.tap(1, 4, "sent", {})
    tracer.buffer.tap(2, 3, "sent", {})
    assert tracer.close_slot(5) is True
    msg = (f"cannot write trace {str(path)!r}: No space left on device (from slot 5); "
           "the run went on without its trace")
    assert errors == [msg] and tracer.error == msg
    assert tracer.written == 1
    assert tracer.buffer.on is False and tracer._out is None and broken.closed == 1
    tracer.buffer.tap(0, 6, "sent", {})
    assert tracer.buffer.take() == []
    tracer.close()
    assert errors == [msg]
    real.close()


def test_a_failed_write_warns_without_a_callback(tmp_path: Path):
    tracer = Tracer(TraceSpec(str(tmp_path / "t.jsonl")), SCHEMA)
    tracer._out.close()
    tracer._out = _Broken()
    tracer.buffer.tap(0, 2, "sent", {})
    with pytest.warns(RuntimeWarning, match=r"No space left on device \(from slot 2\); the run went on"):
        tracer.end_slot()


def test_a_failed_close_is_reported(tmp_path: Path):
    errors: list[str] = []
    path = tmp_path / "t.jsonl"
    tracer = Tracer(TraceSpec(str(path), on_error=errors.append), SCHEMA)
    tracer._out.close()
    tracer._out = _Broken(on_close=True)
    tracer.close()
    assert errors == [f"cannot write trace {str(path)!r}: Input/output error (from slot 0); "
                      "the run went on without its trace"]
    assert tracer._out is None


def test_fingerprint(tmp_path: Path):
    import hashlib
    f = tmp_path / "t.jsonl"
    data = b"x" * ((1 << 20) + 5)
    f.write_bytes(data)
    assert fingerprint(f) == hashlib.sha256(data).hexdigest()
    assert fingerprint(str(f)) == hashlib.sha256(data).hexdigest()
    assert fingerprint(tmp_path) is None
    assert fingerprint(tmp_path / "missing") is None


# -- slot batches and observers -------------------------------------------------------------------------

def _calls() -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    calls: list[tuple[Any, ...]] = []

    def handler(kind: str) -> Any:
        return lambda *a: calls.append((kind, *a))

    handlers = {k: handler(k) for k in ("a", "b", "hop")}
    return calls, handlers


def test_observer_modes():
    assert OBSERVERS == ("direct", "buffered")


def test_batch_refuses_an_unknown_event():
    calls, handlers = _calls()
    batch = SlotBatch(handlers)
    assert batch.kinds() == frozenset({"a", "b", "hop"})
    with pytest.raises(SlotnetError) as e:
        batch.record(3, 9, "zz", ())
    assert str(e.value) == "node 3 recorded unknown event 'zz' in slot 9"


def test_batch_frame_orders_by_node_keeping_each_nodes_order():
    calls, handlers = _calls()
    batch = SlotBatch(handlers)
    batch.record(2, 5, "b", (1,))
    batch.record(1, 5, "b", (2,))
    batch.record(2, 5, "a", (3,))
    batch.record(1, 5, "a", (4,))
    batch.lost(5, 3, 0, 1, "m2", "loss")
    batch.lost(5, 1, 0, 3, "m1", "loss")
    lost, events = decode(batch.frame())
    assert [(n, k, decode(d)) for n, k, d in events] == [
        (1, "b", (5, (2,))), (1, "a", (5, (4,))), (2, "b", (5, (1,))), (2, "a", (5, (3,)))]
    assert [decode(x) for x in lost] == sorted([decode(x) for x in lost], key=lambda x: x[1])
    assert len(lost) == 2
    assert [list(x) for x in decode(batch.frame())] == [[], []]  # emptied


def test_batch_replay_in_node_order_losses_first():
    calls, handlers = _calls()
    batch = SlotBatch(handlers, on_lost=lambda *a: calls.append(("lost", *a)))
    one = SlotBatch(handlers)
    one.record(3, 4, "a", (1, 2))
    one.record(3, 4, "b", ())
    one.lost(4, 9, 1, 8, "y", "loss")
    two = SlotBatch(handlers)
    two.record(1, 4, "b", (7,))
    two.record(2, 4, "a", ())
    two.lost(4, 0, 1, 8, "x", "crash")
    batch.replay([one.frame(), two.frame()])
    assert calls == [
        ("lost", 4, 0, 1, 8, "x", "crash"), ("lost", 4, 9, 1, 8, "y", "loss"),
        ("b", 1, 4, 7), ("a", 2, 4), ("a", 3, 4, 1, 2), ("b", 3, 4)]


def test_batch_replay_without_a_loss_sink_skips_losses():
    calls, handlers = _calls()
    one = SlotBatch(handlers)
    one.lost(4, 9, 1, 8, "y", "loss")
    one.record(0, 4, "a", ())
    SlotBatch(handlers).replay([one.frame()])
    assert calls == [("a", 0, 4)]


def test_batch_flush():
    calls, handlers = _calls()
    batch = SlotBatch(handlers)
    batch.flush()
    assert calls == []
    batch.record(0, 1, "a", ())
    batch.flush()
    assert calls == [("a", 0, 1)]
    lost: list[Any] = []
    batch = SlotBatch(handlers, on_lost=lambda *a: lost.append(a))
    batch.lost(1, 0, 0, 1, "m", "loss")
    batch.flush()
    assert lost == [(1, 0, 0, 1, "m", "loss")]
    batch.flush()
    assert len(lost) == 1


class _Obs:
    def __init__(self, log: list[str], name: str, go: bool) -> None:
        self.log, self.name, self.go = log, name, go

    def close_slot(self, slot: int) -> bool:
        self.log.append(f"{self.name}{slot}")
        return self.go

    def close(self) -> None:
        self.log.append(f"close {self.name}")


def test_observers_close_every_one_in_order():
    log: list[str] = []
    obs = SlotObservers([_Obs(log, "a", True), _Obs(log, "b", False), _Obs(log, "c", True)])
    assert obs.close_slot(3) is False
    assert log == ["a3", "b3", "c3"]
    obs.close()
    assert log[3:] == ["close a", "close b", "close c"]
    assert SlotObservers([_Obs(log, "a", True)]).close_slot(0) is True
    assert SlotObservers([]).close_slot(0) is True
    assert SlotObservers([_Obs(log, "x", False), _Obs(log, "y", True)]).close_slot(1) is False


class _Reporter:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def end_slot(self, slot: int) -> None:
        self.log.append(f"end{slot}")

    def backlog(self) -> float:
        self.log.append("backlog")
        return 7.0


class _Monitor:
    def __init__(self, log: list[str], go: bool = True) -> None:
        self.log, self.go = log, go

    def sample(self, slot: int, backlog: float) -> bool:
        self.log.append(f"sample{slot}:{backlog}")
        return self.go


class _Progress:
    stop_requested = False

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def update(self, slot: int) -> None:
        self.log.append(f"progress{slot}")

    def close(self) -> None:
        self.log.append("progress closed")


class _TracerStub(_Obs):
    pass


def test_a_runs_observers():
    log: list[str] = []
    obs = SlotObservers.of_run(_Reporter(log), _Monitor(log), tracer=_TracerStub(log, "trace", True),
                               progress=_Progress(log), on_slot=lambda s: log.append(f"on{s}"))
    assert len(obs.observers) == 5
    assert obs.close_slot(4) is True
    assert log == ["end4", "trace4", "progress4", "on4", "backlog", "sample4:7.0"]
    log.clear()
    obs.close()
    assert log == ["close trace", "progress closed"]
    log.clear()
    bare = SlotObservers.of_run(_Reporter(log), _Monitor(log, go=False))
    assert len(bare.observers) == 2
    assert bare.close_slot(2) is False
    assert log == ["end2", "backlog", "sample2:7.0"]
    bare.close()
    assert log == ["end2", "backlog", "sample2:7.0"]
