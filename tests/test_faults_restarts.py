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
