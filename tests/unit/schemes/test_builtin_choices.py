"""The built-in schemes' declared random choices: judged, passed, over exactly the slots run, in one process and in shards."""

from __future__ import annotations

import dataclasses

import pytest
import trio

from slotnet import RunSpec, parse_topology, run
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory

#: (scheme, topology, load, params, slots, the choices counted per node and slot, their first slot)
CASES = [
    ("deflection", "hypercube:3", {"offered": 1.0}, {}, 150, ("arrivals",), 0),
    ("deflection", "hypercube:3", {"lam": 0.8}, {}, 150, ("arrivals",), 0),
    ("bcast-simple", "hypercube:3", {"rho": 0.5}, {}, 150, ("births",), 1),
    ("bcast-indirect", "hypercube:3", {"rho": 0.4}, {}, 300, ("births",), 1),
    ("bcast-indirect", "hypercube:3", {"rho": 0.4}, {"idling": False}, 300, ("births",), 1),
    ("bcast-periodic", "hypercube:3", {"rho": 0.5}, {}, 300, ("births",), 1),
    ("star", "torus:4x4", {"rho": 0.6}, {"lam_unicast": 0.1}, 150, ("births", "unicast_births"), 1),
    ("dynamic-broadcast", "mesh:4x4", {"lam": 0.3}, {}, 3000, ("births",), 1),
]


@pytest.mark.parametrize(("scheme", "topology", "load", "params", "slots", "per_slot", "first"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{'-'.join(map(str, c[2].values()))}" for c in CASES])
def test_every_declared_choice_is_judged_and_holds(scheme, topology, load, params, slots, per_slot, first):
    """A fault-free run long enough to judge tests every declared choice and passes; choices
    counted per slot cover every node's slots from the first to the last, once each."""
    r = run(RunSpec(scheme, topology, params=params, load=load, slots=slots, seed=2))
    rows = r.invariants["choices"]["choices"]
    assert r.invariants["choices"]["ok"], rows
    assert all(row["judged"] for row in rows.values()), {k: v.get("why") for k, v in rows.items()}
    n = parse_topology(topology).n_nodes
    for name in per_slot:
        assert rows[name]["outcomes"] == n * (r.slots_run - first), name


@pytest.mark.parametrize(("scheme", "topology", "load"), [("deflection", "hypercube:4", {"offered": 1.0}),
                                                          ("star", "torus:4x4", {"rho": 0.5})])
def test_a_sharded_run_counts_the_choices_of_one_process(scheme, topology, load):
    """Three shards hand over the same counts as one process (node-side counts included)."""
    spec = RunSpec(scheme, topology, load=load, slots=60, seed=4)
    one = run(spec).invariants["choices"]
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=3).prepare())).invariants["choices"]
    assert many == one
