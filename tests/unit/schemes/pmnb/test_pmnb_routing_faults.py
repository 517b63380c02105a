"""packing and monotone (:class:`slotnet.schemes.pmnb.node.RoutingNode`) under generated
schedules that combine a crash, a stall and delayed messages on 5x5 meshes and tori."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, run

#: Few examples, so the file runs in seconds; raise SLOTNET_FUZZ_EXAMPLES for a campaign.
FUZZ = settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "6")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

#: The first schedule found that made a node raise ``step must be >= 0, got -1``: node 0's
#: crash ends its neighbours' scans early, and a late scan message wakes an active node
#: two ticks before routing begins.
FOUND = ["crash@0:0", "stall@0:0:1", "delay=1.0:1", "detect=never"]


@st.composite
def schedules(draw: st.DrawFn) -> list[str]:
    """A crash (with or without a recover), a stall of another node, a delay window, detect=never."""
    last = 40
    crashed, stalled = draw(st.lists(st.integers(0, 24), min_size=2, max_size=2, unique=True))
    at = draw(st.integers(0, last))
    out = [f"crash@{at}:{crashed}"]
    if draw(st.booleans()):
        out.append(f"recover@{draw(st.integers(at, last))}:{crashed}")
    a = draw(st.integers(0, last))
    out.append(f"stall@{a}:{draw(st.integers(a, a + 10))}:{stalled}")
    out.append(f"delay={draw(st.sampled_from([0.2, 0.5, 1.0]))}:{draw(st.integers(1, 4))}")
    return [*out, "detect=never"]


@FUZZ
@example("packing", "mesh:5x5", "prefix", 0, FOUND)
@example("monotone", "torus:5x5", "prefix", 0, FOUND)
@given(scheme=st.sampled_from(["packing", "monotone"]), topology=st.sampled_from(["mesh:5x5", "torus:5x5"]),
       rank=st.sampled_from(["prefix", "given"]), seed=st.integers(0, 1000), faults=schedules())
def test_crash_stall_and_delay_never_raise_in_a_routing_node(scheme, topology, rank, seed, faults):
    """A crash, a stall and delayed messages together: no node raises, the run completes and its books close."""
    r = run(RunSpec(scheme, topology, params={"tp": 0.5, "rank": rank}, seed=seed, faults=faults))
    bad = {k: v for k, v in r.invariants.items() if isinstance(v, dict) and not v.get("ok", True)}
    assert r.invariants["ok"], bad
    assert r.completion is not None and r.completion["complete"]
    assert isinstance(r.invariants["delivered_exactly_once"]["correctness"]["result_correct"], bool)


def test_a_scan_message_before_routing_begins_is_counted_not_routed():
    """The found schedule: the late scan messages that wake nodes before routing are counted ``wrong phase``."""
    r = run(RunSpec("packing", "mesh:5x5", params={"tp": 0.5}, seed=0, faults=FOUND))
    block = r.invariants["delivered_exactly_once"]["correctness"]
    assert r.invariants["ok"]
    assert block["off_schedule"]["wrong phase"] >= 1
