"""The scheme-engine contract, over every registered scheme: ``prepare`` returns an
``Inputs`` (a frozen, slotted record where the family is typed), ``Scheme.events`` is the
reporter's trace schema, a followed scheme handles ``HOP_EVENT``, and the packet books a
reporter declares are invariants of its runs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.fabric import parse_topology
from slotnet.schemes import HOP_EVENT, SCHEMES, Inputs, get_scheme

#: scheme -> (topology, load): a small run of each built-in scheme
CASES: dict[str, tuple[str, dict[str, float]]] = {
    "deflection": ("hypercube:3", {"offered": 1.0}),
    "bcast-simple": ("hypercube:3", {"rho": 0.4}),
    "bcast-dtree": ("hypercube:3", {"rho": 0.4}),
    "bcast-balanced": ("hypercube:3", {"rho": 0.4}),
    "bcast-indirect": ("hypercube:3", {"rho": 0.4}),
    "bcast-periodic": ("hypercube:3", {"rho": 0.4}),
    "star": ("torus:4x4", {"rho": 0.5}),
    "prefix-scan": ("mesh:4x4", {}),
    "packing": ("mesh:4x4", {}),
    "monotone": ("mesh:4x4", {}),
    "pmnb": ("mesh:4x4", {}),
    "array-broadcast": ("torus:8", {}),
    "partial-exchange": ("mesh:4x4", {}),
    "dynamic-broadcast": ("mesh:4x4", {"rho": 0.3}),
    "m2o-greedy": ("mesh:4x4", {}),
    "m2o-rec": ("mesh:4x4", {}),
    "m2o-bfs": ("mesh:4x4", {}),
    "m2o-offline": ("mesh:4x4", {}),
}
#: the families whose node parameters are typed records (the others keep a mapping)
TYPED = ("prefix-scan", "packing", "monotone", "pmnb", "array-broadcast", "partial-exchange", "dynamic-broadcast",
         "m2o-greedy", "m2o-rec", "m2o-bfs", "m2o-offline")
#: the packet books each scheme's reporter declares
BOOKS = {"deflection": ["conservation"], "star": ["exactly_once", "unicast_conservation"],
         "array-broadcast": ["every_packet_everywhere_once"],
         **{s: ["exactly_once"] for s in ("bcast-simple", "bcast-dtree", "bcast-balanced", "bcast-indirect",
                                          "bcast-periodic", "dynamic-broadcast")},
         **{s: ["conservation"] for s in ("m2o-greedy", "m2o-rec", "m2o-bfs", "m2o-offline")}}


def _prepared(name: str) -> Any:
    topology, load = CASES[name]
    return RunSpec(name, topology, load=load, slots=40).prepare(check_memory=False)


def test_every_built_in_scheme_has_a_case() -> None:
    """The table covers every scheme the package registers (a new scheme gets a case here)."""
    built_in = {name for name, s in SCHEMES.items() if s.source != "tests"}
    assert built_in <= set(CASES), sorted(built_in - set(CASES))


@pytest.mark.parametrize("name", sorted(CASES))
def test_prepare_returns_inputs(name: str) -> None:
    """prepare returns Inputs; a typed family's params are a frozen, slotted dataclass nobody can change."""
    scheme = get_scheme(name)
    topology, load = CASES[name]
    out = scheme.prepare(parse_topology(topology), {p.name: p.default for p in scheme.params}, dict(load))
    assert isinstance(out, Inputs) and isinstance(out.quantum, int) and out.quantum >= 1
    if name in TYPED:
        prm = out.params
        assert dataclasses.is_dataclass(prm) and hasattr(type(prm), "__slots__") and not hasattr(prm, "__dict__")
        field = dataclasses.fields(prm)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(prm, field, None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_scheme_events_are_the_reporters_trace_schema(name: str) -> None:
    """Scheme.events (what shards and the trace check read) equals the run's reporter's events, in order."""
    prep = _prepared(name)
    reporter = prep.scheme.reporter(prep.setup)
    assert list(prep.scheme.events.items()) == list(reporter.events.items())
    if prep.scheme.follow is not None:
        assert HOP_EVENT in prep.scheme.events and HOP_EVENT in reporter.handlers()


@pytest.mark.parametrize("name", sorted(CASES))
def test_declared_packet_books_are_what_fault_impact_reads(name: str) -> None:
    """The books a reporter declares are invariants of a fault run, and exactly the books fault_impact lists."""
    prep = _prepared(name)
    declared = [b.invariant for b in prep.scheme.reporter(prep.setup).packet_books()]
    assert declared == BOOKS.get(name, [])
    topology, load = CASES[name]
    r = run(RunSpec(name, topology, load=load, slots=40, seed=1, faults=["loss=0.05"]))
    assert set(declared) <= set(r.invariants)
    assert r.fault_impact is not None and sorted(r.fault_impact["packets"]) == sorted(declared)
