"""The kit's generic unicast reporter, unit by unit: what mutation testing found unpinned.

``devtools/mutation/run_tests.py`` runs these against the mutants of
``schemes/kit/_unicast_reporter.py`` (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from slotnet.fabric import parse_topology
from slotnet.schemes import Setup
from slotnet.schemes.kit import UNICAST_EVENTS, BatchMeans, UnicastReporter


def _setup(slots: int = 10, warmup: int = 2, faults: bool = False) -> Setup:
    return Setup(parse_topology("hypercube:3"), {}, {}, slots, warmup, 1, faults=faults)


def _bare_setup() -> SimpleNamespace:
    """A setup object without a ``faults`` field (one built before faults existed)."""
    return SimpleNamespace(topology=parse_topology("hypercube:3"), params={}, load={}, slots=10, warmup=2, seed=1)


# ------------------------------------------------------------------ the trace schema


def test_the_unicast_events_are_the_trace_schema():
    """Field names are what a trace file shows for each event: pinned exactly."""
    assert UNICAST_EVENTS == {"born": ("count",), "delivered": ("birth", "hops", "source", "seq", "dest"),
                              "queue": ("q",)}
    rep = UnicastReporter(_setup())
    assert rep.events == UNICAST_EVENTS


@pytest.mark.parametrize("follow", [False, True])
def test_each_event_s_fields_are_its_handler_s_parameters(follow):
    """A handler takes (node, slot, *fields) in the schema's order, so a traced event replays into it."""
    rep = UnicastReporter(_setup(), follow=follow)
    handlers = rep.handlers()
    assert set(handlers) == set(rep.events)
    for kind, fields in rep.events.items():
        params = list(inspect.signature(handlers[kind]).parameters)
        assert params == ["node", "slot", *fields], kind


def test_follow_adds_the_hop_event():
    plain = UnicastReporter(_setup())
    assert plain.witness is None and set(plain.handlers()) == {"born", "delivered", "queue"}
    followed = UnicastReporter(_setup(), follow=True)
    assert followed.events == {"born": ("count",), "delivered": ("birth", "hops", "source", "seq", "dest"),
                               "queue": ("q",), "hop": ("port", "source", "seq")}
    assert followed.witness is not None and followed.handlers()["hop"] == followed.witness.hop
    assert UNICAST_EVENTS == {"born": ("count",), "delivered": ("birth", "hops", "source", "seq", "dest"),
                              "queue": ("q",)}  # the module's schema is not changed by one reporter


# ------------------------------------------------------------------ the delivery checks it builds


def test_shortest_paths_are_checked_only_when_declared():
    """Node 0 to node 1 of the 3-cube in 3 hops: within bounds (parity holds), not a shortest path."""
    plain = UnicastReporter(_setup())
    plain.delivered(1, 6, 2.0, 3, 0, 0, 1)
    inv = plain.invariants({}, [], [])
    assert "shortest_paths" not in inv and inv["hops_within_bounds"]["ok"] is True
    declared = UnicastReporter(_setup(), shortest_paths=True)
    declared.delivered(1, 6, 2.0, 3, 0, 0, 1)
    assert declared.invariants({}, [], [])["shortest_paths"]["ok"] is False


def test_a_delivery_without_its_identity_is_not_checked():
    rep = UnicastReporter(_setup(), shortest_paths=True)
    rep.delivered(1, 6, 2.0, 3)
    rep.delivered(1, 6, 2.0, 3, source=0)
    rep.delivered(1, 6, 2.0, 3, dest=1)
    assert rep.paths.at_dest.checked == 0 and rep.paths.paths.checked == 0
    assert rep.delivered_total == 3


def _witnessed(setup) -> dict:
    """A packet seen sent once that reports two hops at its delivery."""
    rep = UnicastReporter(setup, follow=True)
    rep.handlers()["hop"](0, 3, 0, 0, 5)
    rep.delivered(1, 4, 2.5, 2, 0, 5, 1)
    return rep.invariants({}, [], [])["hops_witnessed"]


def test_the_witness_judges_a_fault_free_run_only():
    assert _witnessed(_setup())["ok"] is False
    assert _witnessed(_bare_setup())["ok"] is False  # no faults field: fault-free
    assert _witnessed(_setup(faults=True)) == {"ok": True, "judged": False}


# ------------------------------------------------------------------ metrics


def _scenario() -> UnicastReporter:
    """8 nodes, 10 slots, warm-up 2: five births, four deliveries (one before the warm-up)."""
    rep = UnicastReporter(_setup(10, 2))
    rep.born(0, 0, 3)
    rep.born(5, 3, 2)
    rep.queue(0, 1, 4)  # before the warm-up: not a maximum
    rep.end_slot(1)
    rep.queue(0, 2, 3)
    rep.queue(1, 2, 2)
    rep.delivered(1, 2, 1.5, 1, 0, 0, 1)  # born before the warm-up: not measured
    rep.end_slot(2)  # 5 queued
    rep.delivered(3, 6, 3.25, 2, 5, 0, 3)  # delay 2.75, handed in before an earlier birth
    rep.delivered(7, 6, 2.0, 3, 0, 1, 7)  # delay 4
    rep.queue(0, 6, 0)
    rep.end_slot(6)  # 2 queued
    rep.delivered(4, 9, 9.0, 0, 4, 2, 4)  # delivered where it was born: delay 0, hops 0
    rep.end_slot(9)  # 2 queued
    return rep


def test_the_metrics_of_a_small_run():
    rep = _scenario()
    ci = BatchMeans(2, 10)  # 8 batches of one slot: births 2.0, 3.25 and 9.0 fall in batches 0, 1 and 7
    ci.add(2, 4.0)
    ci.add(3, 2.75)
    ci.add(9, 0.0)
    assert ci.half_width() is not None
    assert rep.metrics() == {"mean_delay": 6.75 / 3, "mean_delay_ci95": ci.half_width(), "mean_hops": 5 / 3,
                             "mean_queue_per_node": (5 + 2 + 2) / (3 * 8), "max_queue": 3,
                             "packets_measured": 3}
    assert (rep.born_total, rep.delivered_total, rep.last_slot, rep.backlog()) == (5, 4, 9, 2)
    assert rep.per_node() == {"delivered": [0, 1, 0, 1, 1, 0, 0, 1], "queue_at_end": [0, 2, 0, 0, 0, 0, 0, 0]}


def test_the_last_slot_s_births_are_measured_in_the_last_batch():
    """A birth in the run's last slot is kept in the last batch, not one before it."""
    rep = UnicastReporter(_setup(10, 2))
    rep.delivered(4, 9, 9.0, 0, 4, 2, 4)
    rep.end_slot(9)
    assert rep.delays.counts == [0.0] * 7 + [1.0]


def test_deliveries_are_counted_per_node():
    rep = UnicastReporter(_setup(10, 2))
    for slot in (3, 4, 4):
        rep.delivered(6, slot, 1.0, 1)
    rep.delivered(2, 5, 3.0, 1)
    assert rep.per_node()["delivered"] == [0, 0, 1, 0, 0, 0, 3, 0] and rep.delivered_total == 4


def test_nothing_measured_reports_none():
    rep = UnicastReporter(_setup(10, 5))
    rep.queue(0, 1, 7)
    rep.end_slot(1)
    assert rep.metrics() == {"mean_delay": None, "mean_delay_ci95": None, "mean_hops": None,
                             "mean_queue_per_node": None, "max_queue": None, "packets_measured": 0}


def test_the_queue_maximum_counts_from_the_warm_up_and_strictly_grows():
    rep = UnicastReporter(_setup(10, 2))
    rep.queue(0, 2, 4)
    rep.queue(1, 3, 4)
    rep.queue(2, 3, 3)
    rep.end_slot(3)
    assert rep.max_q == 4 and rep.metrics()["max_queue"] == 4
    assert rep.metrics()["mean_queue_per_node"] == 11 / 8


def test_empty_queues_report_a_maximum_of_zero():
    rep = UnicastReporter(_setup(10, 2))
    rep.queue(0, 2, 0)
    rep.end_slot(2)
    rep.end_slot(3)
    assert rep.metrics()["max_queue"] == 0 and rep.metrics()["mean_queue_per_node"] == 0.0


def test_a_delay_sum_does_not_depend_on_the_order_deliveries_come_in():
    """Floats are summed by birth whatever order one slot's events arrive in (one process or shards)."""
    births = [2.7, 2.1, 2.3]

    def delay_sum(order):
        rep = UnicastReporter(_setup(10, 2))
        for birth in order:
            rep.delivered(0, 10, birth, 0)
        rep.end_slot(10)
        return rep.delay_sum

    by_birth = ((10 - 2.1) + (10 - 2.3)) + (10 - 2.7)
    assert by_birth != ((10 - 2.7) + (10 - 2.3)) + (10 - 2.1)  # the order shows in the last bit
    assert delay_sum(births) == delay_sum(sorted(births, reverse=True)) == by_birth


# ------------------------------------------------------------------ conservation


def _conservation(lost, in_flight=1, held=(0, 0)) -> dict:
    rep = _scenario()
    return rep.invariants(lost, [(0, 1, None)] * in_flight, list(held))["conservation"]


def test_conservation_closes_without_faults():
    assert _conservation({}) == {"ok": True, "born": 5, "delivered": 4, "in_flight": 1, "held": 0, "lost": {}}
    assert _conservation({}, in_flight=0, held=(0, 1))["ok"] is True  # 4 + 0 + 1 == 5
    assert _conservation({}, in_flight=2) == {"ok": False, "born": 5, "delivered": 4, "in_flight": 2, "held": 0,
                                              "lost": {}, "unaccounted": -1}
    assert _conservation({}, in_flight=0) == {"ok": False, "born": 5, "delivered": 4, "in_flight": 0, "held": 0,
                                              "lost": {}, "unaccounted": 1}  # one packet missing


def test_conservation_counts_the_fault_ledger():
    """Losses add, dup copies subtract; faults other than node_finished add the fault fields."""
    got = _conservation({"loss": 1, "dup": -1, "node_finished": 1}, in_flight=0, held=(0,))
    assert got == {"ok": True, "born": 5, "delivered": 4, "in_flight": 0, "held": 0,
                   "lost": {"loss": 1, "node_finished": 1}, "dup_copies": 1, "lost_to_faults": 1,
                   "in_progress": 0}
    got = _conservation({"loss": 1}, in_flight=1, held=(0,))
    assert got == {"ok": False, "born": 5, "delivered": 4, "in_flight": 1, "held": 0, "lost": {"loss": 1},
                   "unaccounted": -1, "lost_to_faults": 1, "in_progress": 1}
    got = _conservation({"node_finished": 1}, in_flight=0, held=(0,))
    assert got == {"ok": True, "born": 5, "delivered": 4, "in_flight": 0, "held": 0, "lost": {"node_finished": 1}}
    got = _conservation({"dup": -2}, in_flight=2, held=(1,))
    assert got == {"ok": True, "born": 5, "delivered": 4, "in_flight": 2, "held": 1, "lost": {}, "dup_copies": 2,
                   "lost_to_faults": 0, "in_progress": 3}


def test_the_invariants_hold_every_check():
    rep = _scenario()
    assert set(rep.invariants({}, [], [])) == {"conservation", "delivered_at_destination", "hops_within_bounds",
                                               "liveness"}
    followed = UnicastReporter(_setup(), follow=True, route="dimension-order")
    assert set(followed.invariants({}, [], [])) == {"conservation", "delivered_at_destination", "hops_within_bounds",
                                                    "hops_witnessed", "declared_route", "liveness"}
