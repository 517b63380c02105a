"""m2o-rec, m2o-bfs and m2o-offline under every fault kind: every packet in one book, the damage beside it."""

from __future__ import annotations

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.schemes.manytoone._engine import FAULT_EVIDENCE, OFF_SCHEDULE, STRANDING
from slotnet.schemes.manytoone.reporter import M2OReporter

SCHEDULED = ("m2o-rec", "m2o-bfs", "m2o-offline")

#: one schedule per fault kind, on an 8x8 mesh, inside the runs (rec ~110 slots, bfs ~200, offline ~15)
KINDS = {
    "loss": ["loss=0.1"],
    "dup": ["dup=0.2"],
    "delay": ["delay=0.2:3"],
    "corrupt": ["corrupt=0.1"],
    "corrupt-undetected": ["corrupt=0.1:undetected"],
    "partition": ["partition@2:9:0-15"],
    "stall": ["stall@2:9:27"],
    "link": ["link-down@2:27:0", "link-up@9:27:0"],
    "crash": ["crash@3:27"],
    "crash-recover": ["crash@3:27", "recover@6:27"],
}


def _run(scheme: str, faults: list[str], workload: str = "uniform", topology: str = "mesh:8x8", seed: int = 1,
         slots: int = 3000):
    return run(RunSpec(scheme, topology, params={"workload": workload}, slots=slots, seed=seed, faults=faults))


def closes(r) -> dict:
    """The books of a faulted many-to-one run: each packet delivered, lost by cause, in progress or stranded."""
    once, cons = r.invariants["every_packet_delivered_once"], r.invariants["conservation"]
    assert r.invariants["ok"], {k: v for k, v in r.invariants.items() if isinstance(v, dict) and not v.get("ok", True)}
    if "correctness" not in once:  # the faults touched nothing (no loss, no copy, no node saw one): all delivered
        assert once["missing"] == 0 and cons["delivered"] == cons["created"]
        return once
    assert once["unexplained"] == 0 and once["duplicates"] == 0 and once["wrong_node"] == 0
    stranded = once.get("stranded", 0)
    assert cons["delivered"] + once["lost_to_faults"] + once["in_progress"] + stranded == cons["created"]
    assert cons["unaccounted"] == 0
    correctness = once["correctness"]
    assert correctness["delivered"] == cons["delivered"] and correctness["stranded"] == stranded
    assert correctness["all_delivered"] == (cons["delivered"] == cons["created"])
    return once


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("scheme", SCHEDULED)
def test_every_fault_kind_runs_and_the_books_close(scheme, kind):
    """Each schedule-driven scheme under each fault kind: no exception, quiescence, every packet in one book."""
    r = _run(scheme, KINDS[kind])
    closes(r)
    assert r.completion["complete"], (scheme, kind)  # a lost or stranded packet leaves nobody spinning
    assert r.fault_impact["packets"]["conservation"]["packets"] == 64


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_a_stall_at_work_wakes_the_node_late_and_strands_its_late_sends(scheme):
    """A node stalled while it has work due takes up its schedule late: its late sends strand what they carried."""
    woken = late = 0
    for node in range(0, 64, 5):
        for first, last in ((1, 8), (3, 12)):
            once = closes(_run(scheme, [f"stall@{first}:{last}:{node}"], workload="all-to-one"))
            off = once.get("correctness", {}).get("off_schedule", {})
            if off.get("woken late"):
                woken += 1
                at = once["correctness"]["first_off_schedule"]
                assert at["slot"] <= last + 1 and (at["why"] != "woken late" or at == {
                    "slot": last + 1, "node": node, "version": -1, "why": "woken late"})
            late += once.get("stranded_by", {}).get("late send", 0)
    assert woken > 0
    if scheme != "m2o-bfs":  # bfs moves nothing during these windows on this instance
        assert late > 0


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_a_restarted_node_does_not_create_its_packet_again(scheme):
    """crash + recover of a source: its packet is delivered at most once (no second delivery), the restart recorded."""
    for node in (9, 27, 45):
        r = _run(scheme, [f"crash@2:{node}", f"recover@4:{node}"])
        once = closes(r)
        assert r.invariants["conservation"]["second_deliveries"] == 0
        assert once["correctness"]["off_schedule"]["restarted"] == 1


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_a_source_crashed_before_its_first_step_loses_its_packet_to_the_crash(scheme):
    """crash@0 of a source (born at its destination too): the crash books its packet, nothing is unexplained."""
    for workload, node in (("uniform", 9), ("all-to-one", 27)):  # all-to-one: node 27 is not the sink
        r = _run(scheme, [f"crash@0:{node}"], workload=workload)
        once = closes(r)
        assert once["lost_by_cause"].get("crash", 0) == 1 and [node, "crash"] in once["first_lost"]


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_a_sink_crashed_at_slot_0_loses_its_own_packet_to_the_crash(scheme):
    """The all-to-one sink's own packet is at its destination from time 0, held until the sink's first step:
    a crash at slot 0 destroys it (booked as crash), and every packet bound there is lost too."""
    dest = RunSpec(scheme, "mesh:8x8", params={"workload": "all-to-one"}, slots=5, seed=1).prepare().node_params["dest"]
    sink = next(v for v, d in enumerate(dest) if d == v)
    r = _run(scheme, [f"crash@0:{sink}"], workload="all-to-one")
    once = closes(r)
    assert once["lost_by_cause"]["crash"] == 1 and r.fault_impact["messages"]["lost"]["crash"] == 1
    assert r.invariants["conservation"]["delivered"] == 0 and r.per_node["delivery_time"][sink] == -1


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_dup_copies_are_the_faults_not_scheme_errors(scheme):
    """Under dup, second deliveries are all charged to the dup fault; the plan's extra copies are stranded, counted."""
    r = _run(scheme, ["dup=0.2"])
    once = closes(r)
    assert once["duplicates"] == 0 and once["duplicates_from_dup_faults"] == r.invariants["conservation"]["second_deliveries"]
    assert r.invariants["conservation"]["dup_copies"] > 0


def test_rec_under_faults_reports_its_schedule_checks_beside_the_books():
    """Lemma 4.3 and the common return are correctness under faults: reported with `holds`, never failing `ok`."""
    r = _run("m2o-rec", ["dup=0.2"])
    closes(r)
    assert "lemma_4_3" not in r.invariants and "common_return" not in r.invariants
    schedule = r.invariants["every_packet_delivered_once"]["correctness"]["schedule"]
    assert set(schedule) == {"lemma_4_3", "common_return"}
    assert all(isinstance(c["holds"], bool) for c in schedule.values())
    clean = _run("m2o-rec", [])
    assert clean.invariants["lemma_4_3"]["ok"] and clean.invariants["common_return"]["ok"]
    assert "correctness" not in clean.invariants["every_packet_delivered_once"]


def test_bfs_under_faults_reports_its_phase_windows_beside_the_books():
    """The phase windows are correctness under faults too."""
    r = _run("m2o-bfs", ["delay=0.2:3"])
    closes(r)
    assert "phases_within_windows" not in r.invariants
    assert "holds" in r.invariants["every_packet_delivered_once"]["correctness"]["schedule"]["phases_within_windows"]


def test_offline_skips_a_planned_send_whose_packet_a_fault_took():
    """A lost packet's later planned sends find nothing: recorded as missing, the run goes on and ends."""
    r = _run("m2o-offline", ["loss=0.2"])
    once = closes(r)
    assert once["lost_by_cause"]["loss"] > 0 and once["correctness"]["off_schedule"]["missing"] > 0
    assert not once["correctness"]["all_delivered"]


def test_delayed_packets_are_stranded_not_unexplained():
    """Delays put packets off their windows: they end stranded (held for good), booked apart from in progress."""
    for scheme in SCHEDULED:
        r = _run(scheme, ["delay=0.3:4"])
        once = closes(r)
        if once.get("stranded"):
            assert set(once["stranded_by"]) <= STRANDING
            assert sum(once["stranded_by"].values()) == once["stranded"]


def test_off_schedule_records_without_a_fault_are_a_scheme_error():
    """A node going off its schedule in a run the ledger shows fault-free, and no node saw a fault: the check fails."""
    spec = RunSpec("m2o-rec", "mesh:4x4", slots=400, seed=1)
    rep = M2OReporter(spec.prepare().setup)
    dest = rep.dest
    for src, d in enumerate(dest):
        if d >= 0:
            rep._delivered(d, 5, src, 5, 5)
    rep._off_schedule(3, 7, 0, "layout", -1)
    once = rep.invariants({}, [], [0] * len(dest))["every_packet_delivered_once"]
    assert not once["ok"] and once["off_schedule"] == {"layout": 1}
    rep._off_schedule(3, 4, -1, "woken late", -1)  # the node's own evidence of a stall: now a faulted run
    once = rep.invariants({}, [], [0] * len(dest))["every_packet_delivered_once"]
    assert once["ok"] and once["correctness"]["first_off_schedule"] == {"slot": 4, "node": 3, "version": -1,
                                                                        "why": "woken late"}


def test_the_whys_are_documented():
    """Every why a node records is described, and evidence of a fault is never also a stranding."""
    assert set(OFF_SCHEDULE) >= FAULT_EVIDENCE | STRANDING
    assert not FAULT_EVIDENCE & STRANDING


@pytest.mark.parametrize("scheme", SCHEDULED)
def test_fault_free_runs_record_nothing_off_schedule(scheme, tmp_path):
    """Without faults no node goes off its schedule (no off_schedule event in the trace) and every check holds."""
    path = tmp_path / "t.jsonl"
    r = run(RunSpec(scheme, "mesh:8x8", params={"workload": "hotspots:k=3"}, slots=3000, seed=2,
                    trace=TraceSpec(str(path))))
    assert r.invariants["ok"] and r.completion["complete"]
    assert '"off_schedule"' not in path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEDULED)
def test_sharded_books_equal_the_in_process_ones_under_faults(scheme):
    """Over two shards the damage report and the books are those of the one-process run (events arrive in
    another order: the first stranding of a packet is chosen by slot and node, not arrival)."""
    faults = ["crash@10:5", "recover@20:5", "link-down@5:2:1", "link-up@30:2:1", "loss=0.05@3-40", "dup=0.05",
              "delay=0.05:2", "stall@12:18:9"]
    spec = dict(scheme=scheme, topology="mesh:8x8", params={"workload": "uniform"}, slots=400, seed=3, faults=faults)
    one, two = run(RunSpec(**spec)), run(RunSpec(**spec, shards=2))
    assert one.invariants == two.invariants and one.metrics == two.metrics
    closes(one)
