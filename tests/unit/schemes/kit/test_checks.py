"""The validator's checks (``slotnet.schemes.kit._checks``) unit by unit: what mutation testing found unpinned.

Each check fed by hand: its verdicts at their boundaries, its counts, the order that picks
the ``first`` violation, and every ``problem`` sentence word for word (a user reads them).
``devtools/mutation.sh`` runs these against every mutant of ``_checks.py`` with
``test_checks_runs.py``, ``test_checks_witness.py`` and ``test_planted_bugs.py``,
which check the same classes on whole runs and planted bugs.
"""

from __future__ import annotations

import inspect
import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import TraceSpec
from slotnet.fabric import parse_topology
from slotnet.orchestrator.engine._trace import TraceBuffer
from slotnet.schemes.kit import (
    CHECK_EVENTS,
    HOP_EVENTS,
    BirthCheck,
    Book,
    FifoOrder,
    HopWitness,
    Liveness,
    OrderCheck,
    PathCheck,
    ServiceOrder,
    _checks,
)
from slotnet.schemes.kit._checks import port_dimension

CUBE4 = parse_topology("hypercube:4")


def _recorder() -> tuple[list[tuple[Any, ...]], Any]:
    got: list[tuple[Any, ...]] = []
    return got, SimpleNamespace(record=lambda kind, *values: got.append((kind, *values)))


# ------------------------------------------------------------------ event schemas


def test_the_event_schemas_name_their_handlers_parameters():
    """A reporter declares these fields for the kit's handlers: they are the handlers' own parameters."""
    assert tuple(inspect.signature(OrderCheck.disorder).parameters)[3:] == CHECK_EVENTS["disorder"]
    assert tuple(inspect.signature(HopWitness.hop).parameters)[3:] == HOP_EVENTS["hop"]
    assert set(CHECK_EVENTS) == {"disorder"} and set(HOP_EVENTS) == {"hop"}


def test_a_traced_disorder_names_each_value():
    """A node's ``disorder`` event, as a trace writes it: each value under its field's name."""
    buf = TraceBuffer(TraceSpec("unused.jsonl"), CHECK_EVENTS)
    order = ServiceOrder(SimpleNamespace(record=lambda kind, *values: buf.record(5, 12, kind, values)),  # type: ignore[arg-type]
                         lambda m, _p: m[2])
    assert not order.served(3, (1, 2, 9), (4, 5, 1))
    assert [ev for _, _, ev in buf.take()] == [{"slot": 12, "node": 5, "event": "disorder", "port": 3,
                                                "served": (1, 2), "served_key": 9, "waiting": (4, 5),
                                                "waiting_key": 1}]


# ------------------------------------------------------------------ Book


def test_book_result_without_violations():
    book = Book()
    book.checked = 4
    assert book.result() == {"ok": True, "checked": 4, "violations": 0}
    assert book.result(ok=False, extra=1) == {"ok": False, "checked": 4, "violations": 0, "extra": 1}


@pytest.mark.parametrize("second", [
    (3, 9, (9, 9), "z"),  # an earlier slot wins over a smaller node
    (5, 1, (9, 9), "z"),  # the same slot: the smaller node wins over a smaller packet
    (5, 2, (1, 0), "z"),  # the same slot and node: the smaller packet wins over a smaller problem
])
def test_book_orders_by_slot_then_node_then_packet_then_problem(second):
    first = (5, 2, (2, 0), "a")
    for events in ([first, second], [second, first]):
        book = Book()
        for e in events:
            book.add(*e)
        slot, node, packet, problem = second
        assert book.result()["first"] == {"slot": slot, "node": node, "packet": list(packet), "problem": problem}
        assert book.count == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.tuples(st.integers(0, 12), st.integers(0, 3)),
                          st.sampled_from("abc")), min_size=1, max_size=12))
def test_book_first_is_the_smallest_whatever_the_order(events):
    book = Book()
    for e in events:
        book.add(*e)
    slot, node, packet, problem = min(events, key=lambda e: (e[0], e[1], repr(e[2]), e[3]))
    assert book.result() == {"ok": False, "checked": 0, "violations": len(events),
                             "first": {"slot": slot, "node": node, "packet": list(packet), "problem": problem}}


# ------------------------------------------------------------------ PathCheck


def test_path_check_counts_every_delivery():
    check = PathCheck(CUBE4, shortest=True)
    for seq in range(3):
        check.delivered(6, 9, 4.5, 2, (0, seq), 0, 6)
    assert check.invariants() == {"delivered_at_destination": {"ok": True, "checked": 3, "violations": 0},
                                  "hops_within_bounds": {"ok": True, "checked": 3, "violations": 0},
                                  "shortest_paths": {"ok": True, "checked": 3, "violations": 0}}


@pytest.mark.parametrize("node,slot,birth,hops,invariant,problem", [
    (7, 9, 4.5, 2, "delivered_at_destination", "packet (3, 17) bound for node 6 was delivered at node 7 in slot 9"),
    (6, 9, 4.5, 1, "hops_within_bounds",
     "packet (3, 17) from 0 to 6 reports 1 hops, fewer than the distance 2 (slot 9, node 6)"),
    (6, 9, 4.5, 6, "hops_within_bounds",
     "packet (3, 17) reports 6 hops but lived only 4 slots (born 4.5, delivered in slot 9 at node 6)"),
    (6, 9, 4.5, 3, "hops_within_bounds",
     "packet (3, 17) from 0 to 6 reports 3 hops on a bipartite topology where every path has the parity of the "
     "distance 2 (slot 9, node 6)"),
    (6, 20, 4.5, 4, "shortest_paths",
     "packet (3, 17) from 0 to 6 took 4 hops where the scheme declares shortest paths of 2 (slot 20, node 6)"),
])
def test_path_check_problems_word_for_word(node, slot, birth, hops, invariant, problem):
    check = PathCheck(CUBE4, shortest=True)
    check.delivered(node, slot, birth, hops, (3, 17), 0, 6)
    assert check.invariants()[invariant] == {"ok": False, "checked": 1, "violations": 1, "first": {
        "slot": slot, "node": node, "packet": [3, 17], "problem": problem}}


def test_path_check_reports_one_bound_per_delivery():
    """Fewer hops than the distance is the breach reported, even when the packet also lived too short."""
    check = PathCheck(CUBE4)
    check.delivered(6, 5, 5.0, 1, (0, 1), 0, 6)  # 1 hop < distance 2; lived 0 slots
    check.delivered(6, 9, 4.5, 5, (0, 2), 0, 6)  # 5 hops > lived 4, and of the wrong parity
    out = check.invariants()["hops_within_bounds"]
    assert out["violations"] == 2
    assert out["first"]["problem"].endswith("fewer than the distance 2 (slot 5, node 6)")
    later = PathCheck(CUBE4)
    later.delivered(6, 9, 4.5, 5, (0, 2), 0, 6)
    assert "lived only 4 slots" in later.invariants()["hops_within_bounds"]["first"]["problem"]


def test_path_check_bounds_are_inclusive():
    """Hops equal to the distance, or to the slots lived (from the slot after the birth's), pass."""
    check = PathCheck(CUBE4, shortest=True)
    check.delivered(6, 7, 4.5, 2, (0, 1), 0, 6)  # sendable in 5: lived 2, distance 2
    check.delivered(6, 9, 5.0, 4, (0, 2), 0, 6)  # born 5.0: sendable in 5, lived 4
    out = check.invariants()
    assert out["hops_within_bounds"] == {"ok": True, "checked": 2, "violations": 0}
    assert out["shortest_paths"]["violations"] == 1  # the second took 4 hops, not 2


def test_path_check_defaults_judge_parity():
    """By default the hop counts are exact: parity is judged with or without faults; with
    lifetime-derived counts, only without faults."""
    for check in (PathCheck(CUBE4), PathCheck(CUBE4, faults=True), PathCheck(CUBE4, exact_hops=False)):
        check.delivered(6, 9, 4.5, 3, (0, 1), 0, 6)
        assert check.invariants()["hops_within_bounds"]["violations"] == 1
    relaxed = PathCheck(CUBE4, exact_hops=False, faults=True)
    relaxed.delivered(6, 9, 4.5, 3, (0, 1), 0, 6)
    assert relaxed.invariants()["hops_within_bounds"]["ok"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 15), st.integers(0, 15), st.integers(0, 15), st.integers(0, 12), st.integers(0, 12),
       st.floats(0.0, 12.0), st.booleans())
def test_path_check_against_its_rules(source, dest, node, slot, hops, birth, shortest):
    """Every verdict of PathCheck on a hypercube, against the rules written out here."""
    check = PathCheck(CUBE4, shortest=shortest)
    check.delivered(node, slot, birth, hops, (source, 1), source, dest)
    dist = bin(source ^ dest).count("1")
    lived = slot - math.ceil(birth)
    out = check.invariants()
    assert out["delivered_at_destination"]["ok"] is (node == dest)
    assert out["hops_within_bounds"]["ok"] is (dist <= hops <= lived and (hops - dist) % 2 == 0)
    assert ("shortest_paths" in out) is shortest
    if shortest:
        assert out["shortest_paths"]["ok"] is (hops == dist)


# ------------------------------------------------------------------ BirthCheck


def test_birth_window_boundaries():
    check = BirthCheck(CUBE4)
    assert [check.ok(5, tau) for tau in (4.0, 4.000001, 5.0, 5.000001, 3.0)] == [False, True, True, False, False]
    late = BirthCheck(CUBE4, faults=True)
    assert [late.ok(5, tau) for tau in (4.0, 0.5, 5.0, 5.000001)] == [True, True, True, False]


def test_birth_problems_word_for_word():
    strict, late = BirthCheck(CUBE4), BirthCheck(CUBE4, faults=True)
    strict.born(3, 5, (0, 3), 4.0)
    late.born(3, 5, (0, 4), 5.5)
    tail = " (a birth becomes sendable in the slot that ends its interval)"
    assert strict.invariants()["birth_stamps"]["first"] == {
        "slot": 5, "node": 3, "packet": [0, 3],
        "problem": "packet (0, 3) recorded in slot 5 as born at time 4.0, outside (4, 5]" + tail}
    assert late.invariants()["birth_stamps"]["first"]["problem"] == \
        "packet (0, 4) recorded in slot 5 as born at time 5.5, after slot 5" + tail


def test_births_are_counted_and_broadcast_completions_are_not():
    check = BirthCheck(CUBE4)
    check.born(0, 5, (0, 1), 4.5)
    check.born(0, 5, (0, 2), 4.5)
    check.completed(0, (0, 1), 4.5, 20)
    assert check.invariants()["birth_stamps"] == {"ok": True, "checked": 2, "violations": 0}


def test_a_broadcast_completes_no_sooner_than_its_origins_eccentricity():
    """Each origin has its own eccentricity on a mesh (kept once computed); the bound is inclusive."""
    check = BirthCheck(parse_topology("mesh:5x5"))
    check.completed(12, (12, 0), 0.5, 5)  # the centre: eccentricity 4, sendable in slot 1
    check.completed(12, (12, 1), 1.0, 5)
    assert check.invariants()["birth_stamps"]["ok"]
    check.completed(0, (0, 0), 0.5, 8)  # a corner: eccentricity 8
    check.completed(12, (12, 2), 2.5, 6)
    out = check.invariants()["birth_stamps"]
    assert out == {"ok": False, "checked": 0, "violations": 2, "first": {
        "slot": 6, "node": 12, "packet": [12, 2],
        "problem": "broadcast (12, 2) born at 2.5 reached every node by slot 6, sooner than its origin's "
                   "eccentricity 4 allows"}}
    check.completed(0, (0, 1), 0.5, 9)
    assert check.invariants()["birth_stamps"]["violations"] == 2


def _epochs(n: int, offset: float, faults: bool = False) -> dict[str, Any]:
    check = BirthCheck(CUBE4, faults=faults)
    check.offsets, check.offset_sum = n, round(n * offset * 2**32)
    return check.epochs()


def test_birth_epochs_values_and_verdict():
    assert _epochs(0, 0.5) == {"ok": True, "checked": 0}
    assert BirthCheck(CUBE4).invariants()["birth_epochs"] == {"ok": True, "checked": 0}
    out = _epochs(75, 0.5)
    assert out == {"ok": True, "checked": 75, "mean_offset": 0.5, "standard_errors": 0.0}
    se = math.sqrt(1 / (12 * 50))
    out = _epochs(50, 1.0)
    assert out["mean_offset"] == 1.0 and out["standard_errors"] == pytest.approx(0.5 / se)
    assert out["ok"] is False
    assert out["problem"] == ("the 50 birth stamps sit on average at 1.000 of their slot, 12.2 standard errors from "
                              "the 1/2 Poisson epochs give (births stamped otherwise than at their epoch)")
    early = _epochs(50, 0.25)  # stamps early in their slot are as wrong as late ones
    assert early["ok"] is False and early["standard_errors"] == pytest.approx(-0.25 / se)
    assert early["problem"] == ("the 50 birth stamps sit on average at 0.250 of their slot, 6.1 standard errors "
                                "from the 1/2 Poisson epochs give (births stamped otherwise than at their epoch)")


def test_birth_epochs_start_from_nothing():
    """A reporter adds each birth's offset (in units of 2**-32) to a fresh check."""
    check = BirthCheck(CUBE4)
    for offset in (0.25, 0.5, 0.875, 1.0):
        check.offsets += 1
        check.offset_sum += int(offset * 2**32)
    out = check.epochs()
    assert out["checked"] == 4 and out["mean_offset"] == 0.65625


def test_birth_epochs_exactly_six_standard_errors_off_pass():
    """The verdict needs a mean strictly more than six standard errors from 1/2."""
    se = math.sqrt(1 / (12 * 192))  # 1/48: six standard errors are 1/8
    assert _epochs(192, 0.5 + 6 * se)["ok"] is True
    assert _epochs(192, 0.5 + 6 * se + 2**-20)["ok"] is False


def test_birth_epochs_judged_from_enough_births_without_faults():
    assert _epochs(BirthCheck.EPOCHS_MIN, 1.0)["ok"] is False
    assert _epochs(BirthCheck.EPOCHS_MIN - 1, 1.0)["ok"] is True
    assert _epochs(1000, 1.0, faults=True)["ok"] is True
    n = 300
    se = math.sqrt(1 / (12 * n))
    assert _epochs(n, 0.5 + 5.9 * se)["ok"] is True  # within six standard errors
    assert _epochs(n, 0.5 - 6.1 * se)["ok"] is False


# ------------------------------------------------------------------ Liveness


def test_liveness_counts_only_messages_to_finished_nodes():
    live = Liveness(False)
    assert live.invariants() == {"liveness": {"ok": True, "messages_to_finished_nodes": 0}}
    for cause in ("loss", "dead_link", "crashed"):
        live.lost(3, 1, (1, 2), cause)
    assert live.invariants() == {"liveness": {"ok": True, "messages_to_finished_nodes": 0}}
    live.lost(9, 4, [5, 6, 7], "node_finished")
    live.lost(9, 4, "token", "node_finished")
    assert live.invariants() == {"liveness": {"ok": False, "messages_to_finished_nodes": 2, "first": {
        "slot": 9, "node": 4, "packet": [], "problem": "node 4 had returned from run() when a message reached it in "
                                                      "slot 9; no fault was scheduled, so a node must keep running "
                                                      "while messages come for it"}}}


def test_liveness_under_faults_reports_the_count_only():
    live = Liveness(True)
    live.lost(9, 4, (5, 6), "node_finished")
    assert live.invariants() == {"liveness": {"ok": True, "messages_to_finished_nodes": 1}}


def test_liveness_names_the_packet_of_a_sequence_message():
    live = Liveness(False)
    live.lost(9, 4, [5, 6, 7], "node_finished")
    assert live.invariants()["liveness"]["first"]["packet"] == [5, 6]


# ------------------------------------------------------------------ OrderCheck, FifoOrder, ServiceOrder


def test_order_check_reports_disorder_word_for_word():
    check = OrderCheck()
    assert check.invariants() == {"service_order": {"ok": True, "violations": 0}}
    assert check.handlers() == {"disorder": check.disorder}
    check.disorder(4, 12, 1, [4, 9], 7, [2, 3], 5)
    check.disorder(4, 13, 1, [4, 10], 7, [2, 3], 5)
    assert check.invariants() == {"service_order": {"ok": False, "violations": 2, "first": {
        "slot": 12, "node": 4, "packet": [4, 9],
        "problem": "node 4 served packet (4, 9) (key 7) on port 1 in slot 12 while packet (2, 3) (key 5) waited there, "
                   "which the scheme's declared order serves first"}}}


def test_a_packet_without_a_name_reads_as_an_unnamed_packet():
    check = OrderCheck()
    check.disorder(4, 12, 1, [], 7, [2, 3], 5)
    assert check.invariants()["service_order"]["first"]["problem"].startswith(
        "node 4 served an unnamed packet (key 7) on port 1 in slot 12 while packet (2, 3)")


def test_a_disorder_of_packets_named_by_one_value_is_booked():
    """A scheme's own ``name`` may give one value, not a sequence: the disorder is booked
    with that value as the packet (it used to raise TypeError inside the observer)."""
    check = OrderCheck()
    check.disorder(2, 5, 0, 17, 1, 23, 0)
    assert check.invariants()["service_order"]["first"] == {
        "slot": 5, "node": 2, "packet": [17],
        "problem": "node 2 served packet (17) (key 1) on port 0 in slot 5 while packet (23) (key 0) waited there, "
                   "which the scheme's declared order serves first"}


def test_fifo_order_names_packets_by_their_first_two_fields():
    got, ctx = _recorder()
    f = FifoOrder(ctx)
    assert f.served(3, (1, 2, 8), 5, (4, 5, 9), 5)  # queued in the same slot: no order between them
    assert not f.served(3, (1, 2, 8), 5, (4, 5, 9), 4)
    named = FifoOrder(ctx, name=lambda m: (m[2],))
    assert not named.served(2, (1, 2, 8), 5, (4, 5, 9), 4)
    assert got == [("disorder", 3, (1, 2), 5, (4, 5), 4), ("disorder", 2, (8,), 5, (9,), 4)]


def test_service_order_keys_by_message_and_port():
    got, ctx = _recorder()
    order = ServiceOrder(ctx, lambda m, p: (p, m[2]))
    assert order.served(3, (1, 2, 5), None)
    assert order.served(3, (1, 2, 5), (4, 5, 5))  # equal keys: no breach
    assert order.served(3, (1, 2, 5), (4, 5, 6))
    assert not order.served(3, (1, 2, 5), (4, 5, 4))
    named = ServiceOrder(ctx, lambda m, p: m[2], name=lambda m: (m[2],))
    assert not named.served(0, (1, 2, 5), (4, 5, 4))
    assert got == [("disorder", 3, (1, 2), (3, 5), (4, 5), (3, 4)), ("disorder", 0, (5,), 5, (4,), 4)]


# ------------------------------------------------------------------ HopWitness


def test_port_dimension():
    assert [port_dimension(CUBE4)(p) for p in range(4)] == [0, 1, 2, 3]
    assert [port_dimension(parse_topology("mesh:3x3x3"))(p) for p in range(6)] == [0, 0, 1, 1, 2, 2]
    assert [port_dimension(parse_topology("torus:4x4"))(p) for p in range(4)] == [0, 0, 1, 1]


def test_an_unknown_route_shape_is_refused_word_for_word():
    with pytest.raises(ValueError) as err:
        HopWitness(CUBE4, "zigzag")
    assert str(err.value) == "unknown route shape 'zigzag' (known: dimension-order, one-turn)"


def test_the_witness_reports_only_what_is_declared():
    assert HopWitness(CUBE4).invariants() == {"hops_witnessed": {"ok": True, "checked": 0, "violations": 0}}
    w = HopWitness(CUBE4, "one-turn", fifo=True)
    assert w.invariants() == {"hops_witnessed": {"ok": True, "checked": 0, "violations": 0},
                              "declared_route": {"ok": True, "checked": 0, "violations": 0, "route": "one-turn"},
                              "fifo_order": {"ok": True, "checked": 0, "violations": 0}}


def test_the_witness_stands_down_under_faults():
    w = HopWitness(parse_topology("mesh:4x4"), "dimension-order", faults=True, fifo=True)
    for port in (2, 0):
        w.hop(0, 1, port, 3, 7)
    w.delivered(1, 2, 3, 7, 5)
    assert w.in_transit() == 0
    assert w.invariants() == {"hops_witnessed": {"ok": True, "judged": False},
                              "declared_route": {"ok": True, "judged": False, "route": "dimension-order"},
                              "fifo_order": {"ok": True, "judged": False}}


def test_the_witness_counts_and_forgets_delivered_packets():
    w = HopWitness(parse_topology("mesh:4x4"))
    for slot in range(3):
        w.hop(slot, slot, 0, 3, 7)
    w.hop(0, 0, 0, 3, 8)
    assert w.in_transit() == 2
    w.delivered(3, 3, 3, 7, 3)
    assert w.in_transit() == 1
    w.delivered(3, 4, 3, 7, 9)  # delivered again (no send seen since): not judged
    w.delivered(1, 5, 3, 8, 2)
    assert w.in_transit() == 0
    assert w.invariants()["hops_witnessed"] == {"ok": False, "checked": 2, "violations": 1, "first": {
        "slot": 5, "node": 1, "packet": [3, 8],
        "problem": "packet (3, 8) was delivered at node 1 in slot 5 reporting 2 hops, but was seen sent 1 times"}}


def test_dimension_order_word_for_word():
    w = HopWitness(parse_topology("mesh:4x4x4"), "dimension-order")
    for port in (0, 1, 2, 3, 3, 4):  # dims 0, 0, 1, 1, 1, 2: two changes, both upward
        w.hop(0, 0, port, 1, 0)
    assert w.invariants()["declared_route"] == {"ok": True, "checked": 2, "violations": 0, "route": "dimension-order"}
    for port in (4, 2, 0):  # dim 2, then 1, then 0
        w.hop(6, 5, port, 2, 0)
    assert w.invariants()["declared_route"] == {"ok": False, "checked": 4, "violations": 2, "route": "dimension-order",
                                                "first": {"slot": 5, "node": 6, "packet": [2, 0], "problem": (
        "packet (2, 0) crossed dimension 0 at node 6 in slot 5 after dimension 1; the scheme declares "
        "dimension-order routes (dimension 0 first, then 1, ...)")}}


def test_dimension_order_on_a_hypercube_reads_ports_as_dimensions():
    w = HopWitness(CUBE4, "dimension-order")
    for port in (0, 1, 3):
        w.hop(0, 0, port, 1, 0)
    assert w.invariants()["declared_route"]["ok"]
    w.hop(0, 0, 2, 1, 0)
    assert w.invariants()["declared_route"]["violations"] == 1


def test_one_turn_word_for_word():
    w = HopWitness(parse_topology("mesh:6x6"), "one-turn")
    for port in (3, 3, 1, 0):  # -y, -y, -x, +x: one turn (dimension 1 to 0), downward
        w.hop(0, 0, port, 1, 2)
    assert w.invariants()["declared_route"] == {"ok": True, "checked": 1, "violations": 0, "route": "one-turn"}
    for slot, port in enumerate((0, 2, 0, 2)):  # x, y, x, y: three turns, the last two breaches
        w.hop(9, slot, port, 3, 4)
    assert w.invariants()["declared_route"] == {"ok": False, "checked": 4, "violations": 2, "route": "one-turn",
                                                "first": {"slot": 2, "node": 9, "packet": [3, 4], "problem": (
        "packet (3, 4) turned a second time (to dimension 0) at node 9 in slot 2; the scheme declares one-turn "
        "routes")}}


def test_fifo_order_word_for_word():
    w = HopWitness(parse_topology("mesh:4x4"), fifo=True)
    w.hop(2, 0, 1, 20, 0)  # packet 20 reaches node 1 having been sent in slot 0
    w.hop(2, 5, 1, 21, 0)  # packet 21, sent in slot 5
    w.hop(2, 3, 1, 22, 0)  # packet 22, sent in slot 3
    w.hop(1, 7, 2, 21, 0)  # node 1's port 2 serves 21 first ...
    w.hop(1, 8, 2, 20, 0)  # ... then 20, which came first: a breach
    w.hop(1, 9, 2, 22, 0)  # and 22, which also came before 21: another
    assert w.invariants()["fifo_order"] == {"ok": False, "checked": 6, "violations": 2, "first": {
        "slot": 8, "node": 1, "packet": [20, 0],
        "problem": "node 1 served packet (20, 0) on port 2 in slot 8, though it arrived (sent in slot 0) before a "
                   "packet the port had already served (sent in slot 5); the scheme declares FIFO queues"}}


def test_fifo_order_is_per_node_and_port_and_ties_pass():
    w = HopWitness(parse_topology("mesh:4x4"), fifo=True)
    w.hop(0, 2, 0, 30, 0)  # packets 30 and 31 both sent in slot 2, and 32 in slot 4
    w.hop(2, 2, 1, 31, 0)
    w.hop(5, 4, 3, 32, 0)
    w.hop(1, 6, 2, 32, 0)  # node 1, port 2: 32 (sent in 4)
    w.hop(1, 7, 0, 31, 0)  # node 1, port 0: 31 (sent in 2), another port
    w.hop(3, 7, 2, 30, 0)  # node 3, port 2: 30, another node
    w.hop(1, 8, 0, 33, 0)  # node 1's own packet, there from the start, after 31 on port 0: a breach
    w.hop(1, 9, 2, 34, 0)  # and on port 2 after 32: another
    w.hop(4, 0, 1, 35, 0)  # packet 35 reaches node 5 having been sent in slot 0
    w.hop(5, 10, 1, 35, 0)
    w.hop(5, 11, 1, 36, 0)  # node 5's own packet, there from the start, served after it: a breach
    out = w.invariants()["fifo_order"]
    assert out["violations"] == 3 and out["first"]["packet"] == [33, 0], out
    assert out["checked"] == 11
    ties = HopWitness(parse_topology("mesh:4x4"), fifo=True)
    ties.hop(0, 2, 0, 30, 0)
    ties.hop(2, 2, 1, 31, 0)
    ties.hop(1, 5, 0, 31, 0)  # both sent in slot 2: either may go first
    ties.hop(1, 6, 0, 30, 0)
    assert ties.invariants()["fifo_order"] == {"ok": True, "checked": 4, "violations": 0}


def test_names_in_problem_sentences():
    assert _checks._name((4, 9)) == "packet (4, 9)"
    assert _checks._name((3, 0), "broadcast") == "broadcast (3, 0)"
    assert _checks._name(()) == "an unnamed packet"
    assert _checks._name((), "broadcast") == "an unnamed broadcast"
