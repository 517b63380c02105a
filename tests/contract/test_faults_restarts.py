"""Restarts keep the books: a recovered node's packets never reuse a name its predecessor used."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slotnet

BROADCAST = ["bcast-simple", "bcast-dtree", "bcast-balanced", "bcast-indirect", "bcast-periodic", "star"]


def _books(result: slotnet.Result) -> dict:
    return result.invariants["exactly_once"]


def _closes(eo: dict) -> bool:
    return eo["broadcasts"] == eo["completed"] + eo["in_progress"] + eo["missed"] + eo.get("reused_names", 0)


@pytest.mark.parametrize("scheme, topology, rho, slots, seed, faults", [
    ("bcast-periodic", "hypercube:3", 0.8, 9, 4820, ["crash@6:7", "recover@6:7"]),
    ("bcast-simple", "hypercube:4", 0.4, 31, 4883, ["crash@18:14", "recover@18:14", "delay=0.3:3"]),
])
def test_reported_reuse_after_recover_closes(scheme, topology, rho, slots, seed, faults):
    """The two reported runs: every broadcast is completed, in progress or missed; no name is reused."""
    result = slotnet.run(slotnet.RunSpec(scheme, topology, load={"rho": rho}, slots=slots, seed=seed, faults=faults))
    eo = _books(result)
    assert "reused_names" not in eo
    assert _closes(eo), eo
    assert result.invariants["ok"]


@settings(max_examples=12, deadline=None)
@given(scheme=st.sampled_from(BROADCAST), seed=st.integers(0, 10_000), node=st.integers(0, 15),
       crash=st.integers(0, 30), gap=st.integers(0, 8), again=st.booleans())
def test_crash_recover_cycles_keep_the_broadcast_books(scheme, seed, node, crash, gap, again):
    """Random crash/recover cycles on one node: the books close and names stay unique."""
    topology = "torus:4x4" if scheme == "star" else "hypercube:4"
    faults = [f"crash@{crash}:{node}", f"recover@{crash + gap}:{node}"]
    if again:
        faults += [f"crash@{crash + gap + 2}:{node}", f"recover@{crash + gap + 3}:{node}"]
    result = slotnet.run(slotnet.RunSpec(scheme, topology, load={"rho": 0.5}, slots=45, seed=seed, faults=faults))
    eo = _books(result)
    assert "reused_names" not in eo, eo.get("first_reused")
    assert _closes(eo), eo


@pytest.mark.parametrize("scheme, topology, load, faults, node", [
    ("m2o-greedy", "mesh:4x4", {}, ["stall@0:0:7", "crash@1:7"], 7),
    ("deflection", "hypercube:3", {"offered": 1.0}, ["stall@0:10:3", "crash@11:3"], 3),
    ("deflection", "hypercube:3", {"offered": 1.0}, ["stall@2:10:3", "crash@11:3", "recover@15:3"], 3),
])
def test_a_node_crashed_while_stalled_stays_down(scheme, topology, load, faults, node):
    """A node whose stall (from slot 0 or later) ends in a crash sends nothing until a recover, and the books close."""
    result = slotnet.run(slotnet.RunSpec(scheme, topology, load=load, slots=30, seed=1, faults=faults))
    assert result.invariants["ok"], result.invariants
    if not any(f.startswith("recover") for f in faults) and "sent" in result.per_node:
        assert result.per_node["sent"][node] == 0
    if scheme == "deflection" and faults[0].startswith("stall@0:"):  # it never ran: every send would be a dead node's
        stalled_then_crashed = slotnet.run(slotnet.RunSpec(scheme, topology, load=load, slots=30, seed=1,
                                                           faults=[f for f in faults if not f.startswith("recover")]))
        assert stalled_then_crashed.per_node["sent"][node] == 0


def test_crash_and_recover_at_slot_0_restart_the_node():
    """crash@0 + recover@0: the node loses what it was built with and runs as its next incarnation from slot 0."""
    faults = ["crash@0:3", "recover@0:3"]
    result = slotnet.run(slotnet.RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=20, seed=1, faults=faults))
    assert result.invariants["ok"]
    assert result.per_node["sent"][3] > 0  # it runs: before, it stayed down the whole run
    crashed = slotnet.run(slotnet.RunSpec("m2o-greedy", "mesh:4x4", slots=40, seed=1, faults=faults[:1]))
    restarted = slotnet.run(slotnet.RunSpec("m2o-greedy", "mesh:4x4", slots=40, seed=1, faults=faults))
    assert crashed.invariants["ok"] and restarted.invariants["ok"]
    # the packets node 3 was built holding are lost to the crash either way; only the restart delivers afterwards
    lost = crashed.invariants["conservation"]["lost"]
    assert lost.get("crash", 0) == restarted.invariants["conservation"]["lost"].get("crash", 0)
