"""``littles_law``'s two sides (:mod:`slotnet.schemes.kit._little`), unit by unit.

The node's :class:`Residence` ledger against a model of its packets, the observer's
:class:`LittlesLaw` result at its boundaries (no slot run, one slot run, faults, no
ledger), its messages word for word, and the ``residence`` event's field names as a
trace writes them. ``devtools/mutation.sh`` runs these against every mutant of the module.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, TraceSpec, run
from slotnet.orchestrator.tools._trace_query import read_trace
from slotnet.schemes.kit import LittlesLaw, Residence

# -- the node's ledger --------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(packets=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 9), st.booleans()), max_size=12))
def test_the_ledger_adds_each_released_packets_slots_and_keeps_the_rest_stamped(packets):
    """Packets queued in slot a, released in a + stay (or still queued): the ledger's served
    is the sum of stay + 1 over the released ones, released their count, held and stamps
    the count and the entry sum of the others."""
    r = Residence()
    for entry, _, _ in packets:
        r.entered(entry)
    for entry, stay, leaves in packets:
        if leaves:
            r.left(entry + stay, entry)
    gone = [(entry, stay) for entry, stay, leaves in packets if leaves]
    kept = [entry for entry, _, leaves in packets if not leaves]
    assert r.served == sum(stay + 1 for _, stay in gone)
    assert r.released == len(gone)
    assert (r.held, r.stamps) == (len(kept), sum(kept))


def test_the_ledger_counts_every_release():
    r = Residence()
    for slot in (0, 0, 1):
        r.entered(slot)
    r.left(2, 0)
    r.left(2, 0)
    r.left(3, 1)
    assert (r.served, r.released, r.held, r.stamps) == (9, 3, 0, 0)


# -- the observer's result at its boundaries ----------------------------------------------------
def test_before_any_slot_ends_nothing_was_run():
    """No slot closed: no means (no slot to divide by), and a packet just queued has no
    residence yet; the books agree."""
    law = LittlesLaw(2)
    law.residence(0, 0, 0, 0, 1, 0)
    out = law.invariants()
    assert out["ok"] and out["judged"] and out["violations"] == 0
    assert (out["queue_area"], out["waits"]) == (0, 0)
    assert "mean_queue_per_node" not in out and "throughput_per_node" not in out


def test_a_run_of_no_nodes_has_no_means():
    law = LittlesLaw(0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and not out["judged"] and "mean_queue_per_node" not in out


def test_one_slot_run_gives_the_means():
    """Slot 0 only: two nodes, three packets queued at node 0, two sent (one slot each)."""
    law = LittlesLaw(2)
    law.queue(0, 0, 3, 1)
    law.queue(1, 0, 0, 0)
    law.residence(0, 0, 2, 2, 1, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and out["judged"] and (out["queue_area"], out["waits"]) == (3, 3)
    assert out["mean_queue_per_node"] == 3 / 2
    assert out["throughput_per_node"] == 2 / 2
    assert out["mean_residence"] == 1.0


def test_the_mean_queue_divides_by_the_slots_run_and_the_nodes():
    law = LittlesLaw(2)
    law.queue(0, 0, 2, 1)
    law.residence(0, 0, 1, 1, 1, 0)
    law.end_slot(0)
    law.queue(0, 1, 1, 0)
    law.residence(0, 1, 3, 2, 0, 0)
    law.end_slot(1)
    law.end_slot(2)
    out = law.invariants()
    assert out["queue_area"] == 3 and out["mean_queue_per_node"] == 3 / (2 * 3)
    assert out["throughput_per_node"] == 2 / (2 * 3) and out["mean_residence"] == 1.5


def test_under_faults_broken_books_are_reported_but_not_counted():
    """A crash can destroy a queue: the totals stand, no violation is counted or named."""
    law = LittlesLaw(1, faults=True)
    law.queue(0, 0, 5, 5)
    law.residence(0, 0, 0, 0, 1, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and not out["judged"]
    assert out["violations"] == 0 and "first" not in out and "problem" not in out
    assert (out["queue_area"], out["waits"]) == (5, 1)
    assert out["why"] == "faults: a crash destroys queued packets and a restart starts a new ledger"


def test_without_a_ledger_the_queue_is_reported_but_not_counted():
    law = LittlesLaw(1)
    law.queue(0, 0, 2, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and not out["judged"]
    assert out["violations"] == 0 and "first" not in out and out["checked"] == 0
    assert out["why"] == "no node recorded a residence ledger (its queue keeps no entry stamps)"


# -- the messages -------------------------------------------------------------------------------
def _late_stamp(law: LittlesLaw) -> dict[str, Any]:
    """Node 1 reports one packet in slots 3 and 4 whose ledger gives it only slot 4."""
    law.queue(1, 3, 1, 1)
    law.end_slot(3)
    law.queue(1, 4, 1, 0)
    law.residence(1, 4, 1, 1, 0, 0)
    law.end_slot(4)
    return law.invariants()


def test_a_broken_ledger_is_named_word_for_word():
    out = _late_stamp(LittlesLaw(2))
    first = ("node 1 reported its queue (packets still to forward) at 2 packet-slots over slots 0..4, "
             "but its queue's entry stamps add up to 1 slots of residence "
             "(Little's law on the sample path: the two are equal)")
    assert out["first"] == {"slot": 4, "node": 1, "packet": [], "problem": first}
    assert out["problem"] == ("the queues held 2 packet-slots over the 5 slots run, but the entry stamps "
                              "add up to 1 slots of residence (Little's law: the two are equal); "
                              f"first: {first}")
    assert not out["ok"] and out["judged"] and out["violations"] == 1


def test_the_message_says_what_the_queue_holds():
    out = _late_stamp(LittlesLaw(2, queue="packets waiting for a channel"))
    assert "node 1 reported its queue (packets waiting for a channel) at 2" in out["first"]["problem"]


# -- the event's fields, as a trace writes them -------------------------------------------------
def test_a_trace_replays_the_check_from_its_named_fields(tmp_path):
    """The ``step`` and ``residence`` events of a traced run, read by field name, give the
    run's own ``littles_law`` totals."""
    path = tmp_path / "t.jsonl"
    spec = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.4}, slots=25, warmup=0, seed=3,
                   trace=TraceSpec(str(path), kinds=frozenset({"step", "residence"})))
    result = run(spec)
    events = list(read_trace(path))
    residences = [ev for ev in events if ev["event"] == "residence"]
    assert residences and all(set(ev) == {"slot", "node", "event", "served", "released", "held", "stamps"}
                              for ev in residences)
    law = LittlesLaw(8)
    for slot in range(25):
        for ev in (e for e in events if e["slot"] == slot):
            if ev["event"] == "step":
                law.queue(ev["node"], slot, ev["q_start"], ev["q_after"])
            else:
                law.residence(ev["node"], slot, ev["served"], ev["released"], ev["held"], ev["stamps"])
        law.end_slot(slot)
    mine, theirs = law.invariants(), result.invariants["littles_law"]
    assert mine["ok"] and mine["judged"]
    assert (mine["queue_area"], mine["waits"]) == (theirs["queue_area"], theirs["waits"]) != (0, 0)
