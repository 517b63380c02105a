"""m2o-greedy and array-broadcast under faults: every packet (reception) delivered, lost by cause, or in progress (issue #11)."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, run
from slotnet.fabric import parse_topology
from slotnet.schemes import Setup
from slotnet.schemes.manytoone.reporter import M2OReporter
from slotnet.schemes.pmnb.array_broadcast import ArrayBroadcastReporter, LineGeometry


def _greedy(faults: list[str], **params: str) -> dict:
    r = run(RunSpec("m2o-greedy", "mesh:8x8", params=dict(params), slots=2000, seed=1, faults=faults))
    return {"r": r, "once": r.invariants["every_packet_delivered_once"], "cons": r.invariants["conservation"]}


@pytest.mark.parametrize("order", ["fifo", "farthest-first"])
def test_greedy_under_loss_closes_delivered_plus_lost_by_cause(order):
    """m2o-greedy under loss=0.1: delivered + lost_by_cause == created, the lost sources are the undelivered ones."""
    out = _greedy(["loss=0.1"], workload="uniform", order=order)
    r, once, cons = out["r"], out["once"], out["cons"]
    assert r.invariants["ok"] and r.completion["complete"]  # quiescence: nobody waits for a lost packet
    lost_msgs = r.fault_impact["messages"]["lost"]["loss"]
    assert once["lost_by_cause"] == {"loss": lost_msgs} and lost_msgs > 0  # one packet per lost message, no copies
    assert cons["delivered"] + sum(once["lost_by_cause"].values()) == cons["created"] == r.metrics["packets"]
    assert once["in_progress"] == 0 and once["unexplained"] == 0
    pkt = r.fault_impact["packets"]["conservation"]
    assert (pkt["packets"], pkt["delivered"], pkt["lost_to_faults"], pkt["in_progress"]) == (
        cons["created"], cons["delivered"], lost_msgs, 0)


def test_greedy_lost_sources_match_the_per_node_delivery_times():
    """Under loss the sources the report names as lost are exactly those whose packet has no delivery time."""
    r = run(RunSpec("m2o-greedy", "mesh:4x4", params={"workload": "uniform"}, slots=400, seed=3, faults=["loss=0.15"]))
    once = r.invariants["every_packet_delivered_once"]
    assert 0 < once["lost_to_faults"] <= 20  # all of them listed
    sources = {v for v, t in enumerate(r.per_node["final_arrival"]) if t >= 0}
    lost = {src for src, _ in once["first_lost"]}
    assert not lost & sources and len(lost) + len(sources) == r.metrics["packets"]


def test_greedy_under_dup_reports_copies_not_scheme_errors():
    """Under dup every second delivery is charged to the dup fault; nothing is lost and conservation counts the copies."""
    out = _greedy(["dup=0.2"], workload="uniform")
    r, once, cons = out["r"], out["once"], out["cons"]
    assert r.invariants["ok"]
    assert once["duplicates"] == 0 and once["duplicates_from_dup_faults"] > 0 and once["missing"] == 0
    assert cons["second_deliveries"] == once["duplicates_from_dup_faults"]
    assert cons["dup_copies"] == r.fault_impact["messages"]["duplicated"]["dup"] >= cons["second_deliveries"]


def test_greedy_second_delivery_of_an_uncopied_packet_is_a_scheme_error():
    """A reporter fed a second delivery of a packet no dup fault copied calls it a duplicate, and fails."""
    spec = RunSpec("m2o-greedy", "mesh:4x4", slots=400, seed=1)
    prep = spec.prepare()
    rep = M2OReporter(prep.setup)
    dest = prep.node_params["dest"]
    for src, d in enumerate(dest):
        if d >= 0:
            rep._delivered(d, 5, src, 5, 5)
    src = next(s for s, d in enumerate(dest) if d >= 0)
    rep.on_lost(3, 0, 0, 1, ("p", 0, 0, src + 1, dest[src + 1], -1, -1, 0, "", 0, 0, 0), "dup")  # another packet copied
    rep._delivered(dest[src], 6, src, 6, 6)
    once = rep.invariants({"dup": -1}, [], [0] * len(dest))["every_packet_delivered_once"]
    assert not once["ok"] and once["duplicates"] == 1 and once["duplicates_from_dup_faults"] == 0
    rep.on_lost(3, 0, 0, 1, ("p", 0, 0, src, dest[src], -1, -1, 0, "", 0, 0, 0), "dup")
    once = rep.invariants({"dup": -2}, [], [0] * len(dest))["every_packet_delivered_once"]
    assert once["ok"] and once["duplicates"] == 0 and once["duplicates_from_dup_faults"] == 1


@pytest.mark.parametrize("recover", [False, True])
def test_greedy_crash_charges_the_queued_packets_to_crash(recover):
    """A crash of a loaded node books its queue as `crash` packets; restarted, it does not create its packet again."""
    faults = ["crash@5:28"] + (["recover@8:28"] if recover else [])
    out = _greedy(faults)
    r, once, cons = out["r"], out["once"], out["cons"]
    held = r.fault_impact["messages"]["lost"]["crash"]
    assert r.invariants["ok"] and held > 0
    assert once["lost_by_cause"]["crash"] == held and once["unexplained"] == 0 and once["duplicates"] == 0
    assert cons["delivered"] + once["lost_to_faults"] == cons["created"] == 64
    assert cons["second_deliveries"] == 0 and cons["ok"]  # a restarted source creating its packet again would break both


def test_greedy_source_crashed_before_its_first_step_loses_its_packet_to_the_crash():
    """A source crashed at slot 0 was built holding its packet: the crash books it, as for any queued packet."""
    out = _greedy(["crash@0:9"])
    r, once, cons = out["r"], out["once"], out["cons"]
    assert r.invariants["ok"]
    assert r.fault_impact["messages"]["lost"]["crash"] == 1 and once["lost_by_cause"]["crash"] == 1
    assert cons["delivered"] + once["lost_to_faults"] == cons["created"] == 64 and [9, "crash"] in once["first_lost"]
    assert "never_created" not in cons


def test_greedy_fault_free_output_keeps_its_checks():
    """Without faults, a run cut short is incomplete, not violated: packets on a wire or in a queue are
    accounted as in progress (never unaccounted), and nothing is called lost."""
    r = run(RunSpec("m2o-greedy", "mesh:8x8", slots=5, seed=1))
    inv, once, cons = r.invariants, r.invariants["every_packet_delivered_once"], r.invariants["conservation"]
    assert r.completion["complete"] is False
    assert inv["ok"] and once["ok"] and inv["no_message_lost"]["ok"] and cons["ok"]
    assert cons["unaccounted"] == 0 and cons["in_flight"] > 0 and inv["no_message_lost"]["lost"] == 0
    assert once["in_progress"] == once["missing"] == cons["in_flight"] + cons["held"] > 0
    assert cons["delivered"] + cons["in_flight"] + cons["held"] == cons["created"]


def _array_missing(p: int, crashed: int, sources: list[int]) -> tuple[int, int]:
    """Brute force on a linear array cut at ``crashed`` from slot 0: (receptions possible, receptions expected)."""
    ok = total = 0
    for o in sources:
        for v in range(p):
            if v == o:
                continue
            total += 1
            if crashed not in (o, v) and (o < crashed) == (v < crashed):
                ok += 1
    return ok, total


@pytest.mark.parametrize("split", [True, False])
def test_array_crash_reports_exactly_the_receptions_it_cut_off(split):
    """On mesh:9 a node crashed from slot 0 splits the line: received == the brute-force count, the rest lost by cause."""
    crashed = 4
    spec = RunSpec("array-broadcast", "mesh:9", params={"packets": 12, "split": split}, slots=200, seed=1,
                   faults=[f"crash@0:{crashed}"])
    sources = list(spec.prepare().node_params["sources"])
    r = run(spec)
    ex = r.invariants["every_packet_everywhere_once"]
    ok, total = _array_missing(9, crashed, sources)
    rec = ex["receptions"]
    assert r.invariants["ok"] and r.completion["complete"]
    assert rec["expected"] == total and rec["received"] == ok == r.metrics["receptions"]
    assert rec["lost_to_faults"] == total - ok and rec["unexplained"] == 0 and rec["in_progress"] == 0
    mine = sum(1 for o in sources if o == crashed) * 8  # the crashed node's own packets: never sent
    assert rec["lost_by_cause"].get("crash", 0) == mine
    assert rec["lost_by_cause"]["node_down"] == total - ok - mine
    for o_, _j, v, cause in ex["lost_receptions"]:
        assert crashed in (o_, v) or (o_ < crashed) != (v < crashed)
        assert cause in ("crash", "node_down")
    assert ex["completed"] + ex["missed"] + ex["in_progress"] == ex["broadcasts"] == 12


def test_array_crash_and_recover_on_a_ring_closes():
    """A crash with restart on a ring with halves: every reception received, lost by cause, or in progress."""
    r = run(RunSpec("array-broadcast", "torus:7", params={"packets": 12}, slots=200, seed=1,
                    faults=["crash@2:4", "recover@5:4"]))
    ex = r.invariants["every_packet_everywhere_once"]
    rec = ex["receptions"]
    assert r.invariants["ok"] and rec["unexplained"] == 0
    assert rec["received"] + rec["lost_to_faults"] + rec["in_progress"] == rec["expected"] == 12 * 6
    assert rec["lost_to_faults"] > 0 and ex["lost_receptions"]
    assert r.fault_impact["packets"]["every_packet_everywhere_once"]["lost_to_faults"] == ex["missed"] > 0


@pytest.mark.parametrize("split", [True, False])
def test_array_dup_copies_are_charged_to_the_fault(split):
    """Under dup every packet still completes once; the copies' second arrivals are dup-fault duplicates, not bugs."""
    r = run(RunSpec("array-broadcast", "torus:8", params={"packets": 12, "split": split}, slots=300, seed=1,
                    faults=["dup=0.2"]))
    ex = r.invariants["every_packet_everywhere_once"]
    assert r.invariants["ok"] and ex["completed"] == 12 and ex["missing"] == 0 and ex["wrong"] == 0
    assert ex["duplicates"] == 0 and ex["duplicates_from_dup_faults"] > 0


def test_array_reporter_flags_a_reception_no_fault_explains():
    """A missing reception with no loss, flight, hold or crash behind it is unexplained and fails the check."""
    topo = parse_topology("mesh:4")
    setup = Setup(topology=topo, params={"counts": [1, 0, 0, 1], "halves": False}, load={}, slots=50, warmup=0, seed=1)
    rep = ArrayBroadcastReporter(setup)
    for v in (1, 2, 3):
        rep._got(v, v, 0, 0)
    rep._got(2, 1, 3, 0)  # (3, 0) reached node 2 but not 1 or 0, with no loss recorded for it
    rep.on_lost(1, 0, 0, 1, ("a", 0, 0, 1), "loss")  # a loss elsewhere: the run is faulted
    ex = rep.invariants({"loss": 1}, [], [0, 0, 0, 0])["every_packet_everywhere_once"]
    assert not ex["ok"] and ex["receptions"]["unexplained"] == 2
    rep.on_lost(2, 2, 1, 1, ("a", 3, 0, 2), "loss")  # now the piece is lost at hop 2 (node 1): node 1 and 0 explained
    ex = rep.invariants({"loss": 2}, [], [0, 0, 0, 0])["every_packet_everywhere_once"]
    assert ex["ok"] and ex["receptions"]["lost_by_cause"] == {"loss": 2}


def test_line_geometry_covers_every_other_node_as_the_rule_sends():
    """Each piece path covers v once (twice with ring halves), matching hop_limits on rings and arrays."""
    for p in range(2, 9):
        for wrap in (False, True):
            for halves in (False, True):
                g = LineGeometry(p, wrap, halves)
                for o in range(p):
                    for v in range(p):
                        n = len(g.needed(o, v))
                        assert n == (0 if v == o else 2 if (wrap and halves) else 1), (p, wrap, halves, o, v)


def test_fault_free_array_output_is_unchanged_in_its_old_keys():
    """A fault-free array-broadcast run keeps its old invariant values (new keys only)."""
    r = run(RunSpec("array-broadcast", "torus:8", slots=400, seed=1))
    ex = r.invariants["every_packet_everywhere_once"]
    assert {k: ex[k] for k in ("ok", "missing", "wrong", "duplicates")} == {"ok": True, "missing": 0, "wrong": 0,
                                                                           "duplicates": 0}
    assert json.dumps(r.invariants["no_message_lost"]) == json.dumps({"ok": True, "lost": 0, "by_cause": {}})
