"""The fixed-schedule schemes of Varvarigos & Bertsekas under faults: never raise, books close, damage reported.

Random schedules (the generator of :mod:`test_faults_fuzz_schemes`) over the six schemes,
then one targeted fault per scheme whose damage the report must name.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, run
from slotnet.schemes.pmnb._offschedule import OFF_SCHEDULE, STOPS
from tests.contract.test_faults_fuzz_schemes import schedules

FUZZ = settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "20")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

#: scheme -> (topology, load, slots for the generated schedules, params to draw from)
SCHEMES: dict[str, tuple[str, dict[str, float], int, dict[str, tuple[str, ...]]]] = {
    "prefix-scan": ("mesh:4x4", {}, 24, {"variant": ("tree", "line"), "values": ("random", "rank")}),
    "packing": ("mesh:4x4", {}, 64, {"rank": ("prefix", "given")}),
    "monotone": ("torus:4x4", {}, 100, {"rank": ("prefix", "given")}),
    "pmnb": ("mesh:4x4", {}, 64, {"split": ("true", "false")}),
    "partial-exchange": ("mesh:4x4", {}, 120, {}),
    "dynamic-broadcast": ("torus:4x4", {"rho": 0.4}, 120, {}),
}

#: the invariant that carries each scheme's ``correctness`` block under faults
CARRIER = {"prefix-scan": "prefix_matches_sequential", "packing": "delivered_exactly_once",
           "monotone": "delivered_exactly_once", "pmnb": "every_packet_everywhere_once",
           "partial-exchange": "exactly_once", "dynamic-broadcast": "exactly_once"}


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, dict[str, str], int, list[str]]:
    scheme = draw(st.sampled_from(sorted(SCHEMES)))
    topology, _, slots, choices = SCHEMES[scheme]
    params = {k: draw(st.sampled_from(v)) for k, v in choices.items()}
    return scheme, params, draw(st.integers(0, 10_000)), draw(schedules(topology, slots))


def _run(scheme: str, faults: list[str], params: dict[str, str] | None = None, seed: int = 1, slots: int | None = None):
    topology, load, _, _ = SCHEMES[scheme]
    if scheme == "dynamic-broadcast":
        slots = slots or 120
    return run(RunSpec(scheme, topology, load=load, params=params or {}, slots=slots, seed=seed, faults=faults))


def _correctness(scheme: str, r) -> dict:
    inv = r.invariants
    bad = {k: v for k, v in inv.items() if isinstance(v, dict) and not v.get("ok", True)}
    assert inv["ok"], bad
    block = inv[CARRIER[scheme]]["correctness"]
    assert isinstance(block["result_correct"], bool)
    assert set(block.get("off_schedule", {})) <= set(OFF_SCHEDULE)
    assert set(block.get("stopped_by", {})) <= set(STOPS)
    return block


@FUZZ
@given(case=cases())
def test_random_fault_schedules_never_raise_and_report_the_damage(case):
    """Any schedule of any kinds: the run ends, nothing is unaccounted, the damage sits beside the books."""
    scheme, params, seed, faults = case
    r = _run(scheme, faults, params, seed)
    block = _correctness(scheme, r)
    if scheme == "dynamic-broadcast":
        ex = r.invariants["exactly_once"]
        assert ex["broadcasts"] == ex["completed"] + ex["in_progress"] + ex["lost_to_faults"]
        assert block["result_correct"] == (ex["missed"] == 0 and ex["completed"] == ex["broadcasts"])
    else:
        assert r.completion is not None


def test_fault_free_runs_record_nothing_off_schedule():
    """Without faults the schedule is exact: no result carries a correctness block, every check is judged."""
    for scheme in SCHEMES:
        r = _run(scheme, [])
        assert r.invariants["ok"], scheme
        assert "correctness" not in r.invariants[CARRIER[scheme]], scheme


def test_crash_mid_scan_gives_wrong_prefixes_and_names_the_first_wrong_node():
    """prefix-scan: node 5 crashing in the forward half leaves itself without a result and its
    tree neighbours with wrong prefixes; the report names node 4, the first of them."""
    r = _run("prefix-scan", ["crash@3:5"])
    block = _correctness("prefix-scan", r)
    assert block["result_correct"] is False
    assert block["no_result"] == 1 and block["wrong"] >= 1
    assert block["first_wrong"]["node"] == 4 and block["first_wrong"]["problem"] == "wrong prefix"
    assert block["off_schedule"]["missed"] >= 1
    assert r.completion["complete"]


def test_a_lost_scan_message_gives_packing_a_wrong_rank():
    """packing: a lost scan message leaves some active node with a wrong rank, named in the report,
    and a packet that is not at its rank's node."""
    r = _run("packing", ["loss=0.1"])
    block = _correctness("packing", r)
    assert block["result_correct"] is False
    assert block["wrong_ranks"] >= 1 and "node" in block["first_wrong_rank"]
    assert block["delivered_right"] < block["packets"]
    assert block["schedule"]["ranks_by_prefix"]["holds"] is False


def test_a_link_down_strands_monotone_packets():
    """monotone (ranks given): a link down for good keeps the packets that need it where they are,
    stranded when their phases are over; the run still completes."""
    r = _run("monotone", [f"link-down@0:{v}:{p}" for v, p in ((5, 0), (6, 2), (9, 1))], {"rank": "given"})
    block = _correctness("monotone", r)
    assert block["result_correct"] is False
    assert block["off_schedule"].get("stranded", 0) >= 1 and block["off_schedule"].get("dead port", 0) >= 1
    assert block["first_wrong"]["problem"] == "not delivered"
    assert r.completion["complete"]


def test_pmnb_crash_in_packing_leaves_nodes_without_a_packet():
    """pmnb: a node crashing during packing takes its pieces with it: every other node misses
    some packet, the first such node and what it never received are named."""
    r = _run("pmnb", ["crash@20:6"])
    block = _correctness("pmnb", r)
    assert block["result_correct"] is False
    assert block["nodes_missing_packets"] >= 1
    first = block["first_missing"]
    assert first["node"] == 0 and first["count"] == len(first["never_received"]) >= 1
    assert block["finished_nodes"] == 15  # the crashed node never reports


def test_pmnb_restart_stops_the_node():
    """pmnb: a restarted node has lost its partial sums: it stops, and the report says why."""
    block = _correctness("pmnb", _run("pmnb", ["crash@2:5", "recover@9:5"]))
    assert block["stopped_by"]["restarted"] == 1 and 5 in block["stopped"]


def test_partial_exchange_crash_leaves_packets_undelivered_and_ends_by_the_cap():
    """partial-exchange: packets routed through a node that crashed for good wait behind its dead
    ports; the run ends at its safety cap, incomplete, with the first missing pair named."""
    r = _run("partial-exchange", ["crash@20:5"])
    block = _correctness("partial-exchange", r)
    assert block["result_correct"] is False and block["not_delivered"] >= 1
    assert set(block["first_missing"]) == {"origin", "destination"}
    assert r.completion["complete"] is False and r.completion["ended_by"] == "cap"


def test_dynamic_broadcast_stall_stops_nodes_that_lose_m():
    """dynamic-broadcast: a stalled node misses its interval's scan; nodes left without M stop,
    and broadcasts they never finish are lost to the fault, each with the nodes it missed."""
    r = _run("dynamic-broadcast", ["stall@20:39:5"])
    block = _correctness("dynamic-broadcast", r)
    ex = r.invariants["exactly_once"]
    assert block["result_correct"] is False and ex["missed"] >= 1 and ex["misses"][0]["n_missing"] >= 1
    assert block["stopped_by"].get("no M", 0) >= 1


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_explore_random_runs_for_every_scheme(scheme):
    """``explore --faults random`` judges these schemes like any other: nothing crashes or is unaccounted."""
    from slotnet.orchestrator.tools._explore import explore

    topology, load, slots, _ = SCHEMES[scheme]
    spec = RunSpec(scheme, topology, load=load, slots=slots, seed=1)
    report = explore(spec, "random", samples=4, jobs=1)
    classes = [s["class"] for s in report["scenarios"]]
    assert not set(classes) & {"crash", "refused", "nondeterministic", "unaccounted", "books"}, classes


def test_the_six_schemes_declare_every_kind():
    """No fault kind is refused any more: the records declare them all and need no reason."""
    from slotnet.fabric import FAULT_KINDS
    from slotnet.schemes import get_scheme

    for name in SCHEMES:
        scheme = get_scheme(name)
        assert scheme.faults is None and all(scheme.refuses_fault(k) is None for k in FAULT_KINDS), name


@pytest.mark.slow
@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_sharded_damage_reports_equal_the_in_process_ones(scheme):
    """Over two shards the damage report and the books are those of the one-process run (events arrive
    in another order: the first off-schedule record and the first stop are chosen by slot and node)."""
    faults = ["crash@10:5", "recover@20:5", "link-down@5:2:0", "link-up@30:2:0", "loss=0.05@3-40", "dup=0.05",
              "delay=0.05:2", "stall@12:18:9"]
    topology, load, slots, _ = SCHEMES[scheme]
    spec = dict(scheme=scheme, topology=topology, load=load, slots=slots if scheme == "dynamic-broadcast" else None,
                seed=3, faults=faults)
    one, two = run(RunSpec(**spec)), run(RunSpec(**spec, shards=2))
    assert one.invariants == two.invariants and one.metrics == two.metrics
    _correctness(scheme, one)
