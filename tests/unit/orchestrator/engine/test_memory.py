"""The memory pre-check's decisions, per scheme: what it lets through on a 23 GiB machine and what it refuses.

Each scheme is allowed the bytes per node measured for it with its run's generator
(``PHILOX_BYTES_PER_NODE`` for the default philox, ``SCHEME_BYTES_PER_NODE`` for
``--rng mt``, from ``benchmarks/memory_per_node.py --scheme``); a scheme not measured gets
the most any takes. Nothing here is timed: the machine's memory is given, not read.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slotnet import RunSpec, SpecError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.engine import _memory
from slotnet.schemes import SCHEMES

GIB = 1 << 30
#: what this kind of machine has available with nothing else running (24 GiB of RAM)
MACHINE = 23 * GIB


@pytest.fixture
def machine(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda *a, **k: MACHINE)


def test_a_million_node_deflection_run_over_two_shards_is_admitted(machine):
    """slotnet run deflection -t hypercube:20 --offered 1 --slots 20 --shards 2 fits (about 9 GiB;
    about 13 with --rng mt)."""
    for rng, low, high in (("philox", 8, 11), ("mt", 12, 15)):
        RunSpec("deflection", "hypercube:20", load={"offered": 1.0}, slots=20, shards=2, rng=rng).prepare()
        need = _memory.estimate(parse_topology("hypercube:20"), 20, shards=2, scheme="deflection", rng=rng)
        assert low * GIB < need < high * GIB, rng


def test_what_will_not_fit_is_refused_with_the_schemes_figure(machine):
    """With the defaults 2^21 deflection nodes fit in one process (about 10 GiB) and over 2
    shards; 2^22 fit in one process, 2^23 in neither. With --rng mt 2^21 fit in one process
    (about 18 GiB), not over 2 shards (about 26 GiB: a coordinator and two interpreters).
    The message says why."""
    for d in (20, 21, 22):
        RunSpec("deflection", f"hypercube:{d}", load={"offered": 1.0}, slots=20).prepare()
    RunSpec("deflection", "hypercube:21", load={"offered": 1.0}, slots=20, shards=2).prepare()
    with pytest.raises(SpecError, match=r"hypercube:23 .*8,388,608 nodes, ~5 KiB per node\) but this machine "
                                        r"has 23.0 GiB available$"):
        RunSpec("deflection", "hypercube:23", load={"offered": 1.0}, slots=20).prepare()
    RunSpec("deflection", "hypercube:21", load={"offered": 1.0}, slots=20, rng="mt").prepare()
    with pytest.raises(SpecError, match=r"hypercube:21 .*2,097,152 nodes, ~9 KiB per node\) but this machine "
                                        r"has 23.0 GiB available"):
        RunSpec("deflection", "hypercube:21", load={"offered": 1.0}, slots=20, shards=2, rng="mt").prepare()
    with pytest.raises(SpecError, match=r"hypercube:22 .*4,194,304 nodes, ~9 KiB per node\)"):
        RunSpec("deflection", "hypercube:22", load={"offered": 1.0}, slots=20, rng="mt").prepare()


@pytest.mark.parametrize(("scheme", "topology", "load", "kib"), [
    ("m2o-rec", "mesh:1024x1024", {}, 64),       # not in the table: the most any scheme takes
    ("bcast-indirect", "hypercube:20", {"rho": 0.2}, 21),
    ("bcast-dtree", "hypercube:20", {"rho": 0.2}, 20),
])
def test_a_million_nodes_of_a_heavier_scheme_are_refused(machine, scheme, topology, load, kib):
    """Over 2 shards a million nodes at 20 KiB or more exceed 23 GiB (with the coordinator's 4 GiB); the message names the figure.
    The broadcasts measured with philox (18 KiB) fit with the defaults and are refused with --rng mt, whose refusal
    says philox fits; a scheme not measured is refused with either, and its refusal suggests nothing."""
    measured = scheme in _memory.PHILOX_BYTES_PER_NODE
    if measured:
        RunSpec(scheme, topology, load=load, slots=20, shards=2).prepare()
    else:
        with pytest.raises(SpecError, match=rf"1,048,576 nodes, ~{kib} KiB per node\) but this machine has 23.0 GiB "
                                            r"available$"):
            RunSpec(scheme, topology, load=load, slots=20, shards=2).prepare()
    with pytest.raises(SpecError, match=rf"1,048,576 nodes, ~{kib} KiB per node\)") as refused:
        RunSpec(scheme, topology, load=load, slots=20, shards=2, rng="mt").prepare()
    assert ("with --rng philox" in str(refused.value)) is measured


@pytest.mark.parametrize(("scheme", "topology"), [("star", "torus:1024x1024"), ("m2o-greedy", "mesh:1024x1024")])
def test_a_million_nodes_of_a_lighter_scheme_are_admitted_over_two_shards(scheme, topology):
    """star and m2o-greedy (allowed 11 and 15 KiB a node; 13 and 15 with --rng mt) fit a million nodes over 2 shards
    in 23 GiB."""
    for rng in ("philox", "mt"):
        _memory.check_fits(parse_topology(topology), 20, shards=2, scheme=scheme, rng=rng, available=MACHINE)
    with pytest.raises(SpecError):  # the default allowance would refuse them
        _memory.check_fits(parse_topology(topology), 20, shards=2, available=MACHINE)


def test_the_per_node_figure_is_the_schemes():
    """A measured scheme's figure with the run's generator (the default philox); any other
    scheme (and no scheme) the largest, 64 KiB."""
    assert _memory.bytes_per_node("deflection") == _memory.bytes_per_node("deflection", "philox") == 5 * 1024
    assert _memory.bytes_per_node("deflection", "mt") == 9 * 1024
    assert _memory.bytes_per_node("m2o-rec") == _memory.BYTES_PER_NODE == 64 * 1024
    assert _memory.bytes_per_node(None) == _memory.BYTES_PER_NODE
    topo = parse_topology("hypercube:12")
    for scheme in ("deflection", "bcast-dtree", "m2o-rec"):
        assert (_memory.estimate(topo, 0, scheme=scheme) - _memory.BASE_BYTES
                == topo.n_nodes * _memory.bytes_per_node(scheme))


def test_the_table_names_registered_schemes_and_never_exceeds_the_default():
    for name, per_node in _memory.SCHEME_BYTES_PER_NODE.items():
        assert name in SCHEMES, name
        assert 0 < per_node <= _memory.BYTES_PER_NODE


@given(d=st.integers(2, 24), shards=st.integers(1, 4), slots=st.integers(1, 10_000),
       scheme=st.sampled_from(sorted(SCHEMES)))
def test_a_measured_scheme_never_needs_more_than_the_default(d, shards, slots, scheme):
    """The per-scheme figures only ever let more through than the 64 KiB default would, never less."""
    topo = parse_topology(f"hypercube:{d}")
    mine = _memory.estimate(topo, slots, shards=shards, scheme=scheme)
    assert mine <= _memory.estimate(topo, slots, shards=shards)
    assert mine < _memory.estimate(parse_topology(f"hypercube:{d + 1}") if d < 24 else topo, slots, shards=shards,
                                   scheme=scheme) or d == 24


def test_the_compact_generator_is_allowed_its_own_figure(machine):
    """With philox (the default) deflection is allowed the figure measured with it: 2^21 nodes
    over 2 shards, refused with the Twister's streams, are admitted, and the Twister's refusal
    says so; where philox would not fit either, the refusal does not suggest it."""
    RunSpec("deflection", "hypercube:21", load={"offered": 1.0}, slots=20, shards=2, rng="philox").prepare()
    kib = _memory.bytes_per_node("deflection", "philox") // 1024
    with pytest.raises(SpecError, match=rf"~9 KiB per node\) but this machine has 23.0 GiB available; with --rng "
                                        rf"philox \(a compact random stream per node, ~{kib} KiB per node\) it needs "
                                        r"about [\d.]+ GiB and fits$"):
        RunSpec("deflection", "hypercube:21", load={"offered": 1.0}, slots=20, shards=2, rng="mt").prepare()
    with pytest.raises(SpecError) as refused:
        RunSpec("deflection", "hypercube:23", load={"offered": 1.0}, slots=20, rng="mt").prepare()
    assert "philox" not in str(refused.value)
    with pytest.raises(SpecError, match=rf"~{kib} KiB per node\) but this machine has 23.0 GiB available$"):
        RunSpec("deflection", "hypercube:23", load={"offered": 1.0}, slots=20, rng="philox").prepare()


def test_a_scheme_not_measured_with_philox_keeps_its_twister_figure(monkeypatch):
    """The compact generator never takes more than the Twister: a scheme measured only with mt
    (and an unmeasured one) is allowed the same with philox; the measured ones, no more."""
    for scheme in ("m2o-rec", None):
        assert _memory.bytes_per_node(scheme, "philox") == _memory.bytes_per_node(scheme, "mt")
    assert _memory.bytes_per_node("deflection", "philox") < _memory.bytes_per_node("deflection", "mt")
    assert _memory.bytes_per_node("bcast-dtree", "philox") < _memory.bytes_per_node("bcast-dtree", "mt")
    assert set(_memory.PHILOX_BYTES_PER_NODE) <= set(_memory.SCHEME_BYTES_PER_NODE)
    monkeypatch.delitem(_memory.PHILOX_BYTES_PER_NODE, "star")
    monkeypatch.delitem(_memory.PHILOX_FAULTED_BYTES_PER_NODE, "star")
    for faulted in (False, True):
        assert _memory.bytes_per_node("star", "philox", faulted) == _memory.bytes_per_node("star", "mt", faulted)


def test_a_run_with_faults_is_allowed_the_figure_measured_with_faults(machine):
    """A run with faults takes more a node (a cancel scope per task, a list of messages per
    receiver for the fault pipeline): a million bcast-dtree nodes fit in one process without
    faults (18 KiB a node with the default philox) and are refused with them (23 KiB), the message says which figure;
    the detection setting alone is no fault."""
    spec = dict(load={"rho": 0.2}, slots=20)
    RunSpec("bcast-dtree", "hypercube:20", **spec).prepare()
    RunSpec("bcast-dtree", "hypercube:20", faults=["detect=never"], **spec).prepare()
    kib = _memory.bytes_per_node("bcast-dtree", faulted=True) // 1024
    with pytest.raises(SpecError, match=rf"1,048,576 nodes, ~{kib} KiB per node with faults\) but this machine has "
                                        r"23.0 GiB available$"):
        RunSpec("bcast-dtree", "hypercube:20", faults=["loss=0.01"], **spec).prepare()


def test_every_measured_scheme_is_measured_with_faults_too():
    """The faulted tables name the schemes the fault-free ones do, never allow less than
    without faults nor more than the default, and philox never more than the Twister."""
    assert set(_memory.FAULTED_BYTES_PER_NODE) == set(_memory.SCHEME_BYTES_PER_NODE)
    assert set(_memory.PHILOX_FAULTED_BYTES_PER_NODE) == set(_memory.PHILOX_BYTES_PER_NODE)
    for scheme in (*_memory.SCHEME_BYTES_PER_NODE, "m2o-rec", None):
        for rng in ("mt", "philox"):
            assert (_memory.bytes_per_node(scheme, rng) <= _memory.bytes_per_node(scheme, rng, faulted=True)
                    <= _memory.BYTES_PER_NODE), (scheme, rng)
        assert _memory.bytes_per_node(scheme, "philox", True) <= _memory.bytes_per_node(scheme, "mt", True)
