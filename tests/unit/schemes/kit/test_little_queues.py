"""``littles_law`` for the queues the kit's reporters measure: Q against the queues' entry stamps.

The broadcast reporters' Q (Stamoulis & Tsitsiklis §4.3.3) and STAR's queues (whose
queueing slots give its waits) are held, slot by slot and node by node, to the residence
their stamps give (:mod:`slotnet.schemes.kit._little`); the equality is exact, so correct
runs of every family hold it over any seed, and a queue that stamps or counts wrongly
breaks it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slotnet.schemes.star._plans as star_plans
from slotnet import RunSpec, run
from slotnet.schemes import SCHEMES
from slotnet.schemes.broadcast.simple import SimpleNode
from slotnet.schemes.kit import ClassQueues, LabelQueues, LittlesLaw, PortQueues, Residence

# -- the two witnesses, fed by hand -------------------------------------------------------------


def test_a_queue_whose_count_and_stamps_agree_holds():
    """Two packets queued in slot 0, one sent in slot 0 and one in 1: 3 packet-slots both ways."""
    law = LittlesLaw(2)
    law.queue(0, 0, 2, 1)
    law.residence(0, 0, 1, 1, 1, 0)
    law.end_slot(0)
    law.queue(0, 1, 1, 0)
    law.residence(0, 1, 3, 2, 0, 0)
    law.end_slot(1)
    out = law.invariants()
    assert out["ok"] and out["judged"] and out["queue_area"] == out["waits"] == 3
    assert out["mean_residence"] == 1.5 and out["throughput_per_node"] == 2 / 4


def test_the_first_node_and_slot_whose_books_differ_are_named():
    """A stamp one slot late is named at the node and slot where its residence comes out short."""
    law = LittlesLaw(3)
    law.queue(2, 4, 1, 0)
    law.residence(2, 4, 0, 1, 0, 0)  # queued in slot 4, stamped 5: 4 + 1 - 5 = 0 slots of residence
    law.end_slot(4)
    out = law.invariants()
    assert not out["ok"] and out["violations"] == 1
    assert out["first"]["node"] == 2 and out["first"]["slot"] == 4
    assert "Little's law" in out["problem"] and "1 packet-slots" in out["first"]["problem"]
    assert (out["queue_area"], out["waits"]) == (1, 0)


def test_a_node_that_keeps_no_step_keeps_its_last_queue():
    """A node that does not step holds its queue after its last step, and its stamps age with it."""
    law = LittlesLaw(1)
    law.queue(0, 0, 1, 1)  # queued in 0, not sent; the node sleeps until slot 3
    law.residence(0, 0, 0, 0, 1, 0)
    for slot in range(3):
        law.end_slot(slot)
    law.queue(0, 3, 1, 0)
    law.residence(0, 3, 4, 1, 0, 0)
    law.end_slot(3)
    assert law.invariants()["ok"] and law.invariants()["queue_area"] == 4


def test_under_faults_the_check_reports_but_does_not_judge():
    """A crash destroys queued packets: the totals are reported, the run is not failed for them."""
    law = LittlesLaw(1, faults=True)
    law.queue(0, 0, 5, 5)
    law.residence(0, 0, 0, 0, 1, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and not out["judged"] and "faults" in out["why"] and out["queue_area"] == 5


def test_without_a_ledger_nothing_is_judged():
    law = LittlesLaw(1)
    law.queue(0, 0, 2, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and not out["judged"] and "no node recorded" in out["why"]


# -- the kit's queues keep the ledger -----------------------------------------------------------
def _queue(kind: str) -> Any:
    if kind == "port":
        return PortQueues(3)
    if kind == "class":
        return ClassQueues(3, classes=2)
    return LabelQueues(3)


def _add(q: Any, kind: str, msg: Any, ports: list[int]) -> None:
    if kind == "port":
        q.add(msg, ports)
    elif kind == "class":
        q.add(msg, [(p, msg[1] % 2) for p in ports])
    else:
        q.add(msg, msg[1], [(p, 0) for p in ports])


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["port", "class", "label"]),
       slots=st.lists(st.tuples(st.lists(st.sets(st.integers(0, 2), min_size=1), max_size=3),
                                st.integers(0, 7)), min_size=1, max_size=25))
def test_the_kit_queues_stamps_give_the_queue_summed_over_the_slots(kind, slots):
    """Any sequence of queueings and sends: the ledger's residence equals the held counts summed."""
    q = _queue(kind)
    ledger = q.start_ledger(0)
    area = seq = 0
    for slot, (arrivals, serve) in enumerate(slots):
        q.now = slot
        for ports in arrivals:
            seq += 1
            _add(q, kind, (0, seq), sorted(ports))
        area += q.held
        for port in list(q.busy()):
            if serve >> port & 1:
                q.pop(port)
        waits = ledger.served + ledger.held * (slot + 1) - ledger.stamps
        assert waits == area
        assert ledger.held == q.held


def test_residence_records_only_when_it_changed():
    rec: list[tuple[Any, ...]] = []

    class Ctx:
        def record(self, kind: str, *values: Any) -> None:
            rec.append((kind, *values))

    r = Residence()
    r.record(Ctx())  # type: ignore[arg-type]
    r.entered(2)
    r.record(Ctx())  # type: ignore[arg-type]
    r.record(Ctx())  # type: ignore[arg-type]
    assert rec == [("residence", 0, 0, 1, 2)]


# -- correct runs of every family hold it, exactly --------------------------------------------
FAMILIES = [
    ("bcast-simple", "hypercube:4", {"rho": 0.3}, {}),
    ("bcast-dtree", "hypercube:4", {"rho": 0.6}, {}),
    ("bcast-dtree", "hypercube:4", {"rho": 0.6}, {"discipline": "label"}),
    ("bcast-balanced", "hypercube:5", {"rho": 0.6}, {}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.5}, {"idling": False}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.5}, {}),
    ("bcast-indirect", "hypercube:5", {"rho": 0.4}, {"rule": "Dprime"}),
    ("bcast-periodic", "hypercube:4", {"rho": 0.4}, {}),
    ("bcast-periodic", "hypercube:4", {"rho": 0.4}, {"variant": "simultaneous", "nulls": "send"}),
    ("bcast-periodic", "hypercube:3", {"rho": 0.3}, {"variant": "mnb"}),
    ("star", "torus:4x4", {"rho": 0.7}, {"lam_unicast": 0.05}),
    ("star", "torus:4x3", {"rho": 0.6}, {"lam_unicast": 0.05, "classes": 3}),
    ("star", "torus:5x5", {"rho": 0.6}, {"discipline": "fcfs"}),
    ("dynamic-broadcast", "mesh:4x4", {"rho": 0.4}, {}),
    ("dynamic-broadcast", "torus:4x4", {"rho": 0.5}, {}),
]


@pytest.mark.parametrize("scheme,topology,load,params", FAMILIES, ids=lambda v: str(v))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_littles_law_holds_exactly_on_correct_runs(scheme, topology, load, params, seed):
    """Correct runs of each family over several seeds and warm-ups: the books agree exactly, judged."""
    r = run(RunSpec(scheme, topology, params=params, load=load, slots=150, warmup=10 * seed, seed=seed))
    law = r.invariants["littles_law"]
    assert law["judged"], law
    assert law["ok"] and law["violations"] == 0, law
    assert law["queue_area"] == law["waits"] > 0
    assert law["checked"] > 0
    assert r.invariants["ok"]


def test_the_run_mean_queue_is_throughput_times_mean_residence():
    """The law's usual form: mean queue = throughput x mean residence, to the packets still queued."""
    r = run(RunSpec("bcast-dtree", "hypercube:5", load={"rho": 0.5}, slots=400, warmup=0, seed=4))
    law = r.invariants["littles_law"]
    lam_w = law["throughput_per_node"] * law["mean_residence"]
    assert lam_w == pytest.approx(law["mean_queue_per_node"], rel=0.05)


@pytest.mark.parametrize("scheme,topology,load,params,fault", [
    ("bcast-simple", "hypercube:4", {"rho": 0.3}, {}, "crash@20:3"),
    ("bcast-indirect", "hypercube:4", {"rho": 0.4}, {}, "dup=0.05"),
    ("bcast-periodic", "hypercube:4", {"rho": 0.4}, {}, "stall@20:26:3"),
    ("dynamic-broadcast", "mesh:4x4", {"rho": 0.3}, {}, "crash@20:3"),
    ("star", "torus:4x4", {"rho": 0.5}, {"lam_unicast": 0.05}, "loss=0.1@10-60"),
])
def test_under_faults_it_stands_down(scheme, topology, load, params, fault):
    r = run(RunSpec(scheme, topology, params=params, load=load, slots=100, warmup=0, seed=1, faults=[fault]))
    law = r.invariants["littles_law"]
    assert law["ok"] and not law["judged"] and "faults" in law["why"]


class _StamplessQueues:
    """A node's own per-port FIFO queues that keep no entry stamps (what forward_heads needs, no more)."""

    def __init__(self, ports: Any) -> None:
        self.inner = PortQueues(ports)

    @property
    def held(self) -> int:
        return self.inner.held

    def add(self, message: Any, ports: Any) -> None:
        self.inner.add(message, ports)

    def busy(self) -> Any:
        return self.inner.busy()

    def pop(self, port: int) -> Any:
        return self.inner.pop(port)

    def items(self) -> set[tuple[int, int]]:
        return self.inner.items()


class _SimpleStampless(SimpleNode):
    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.queues = _StamplessQueues(ctx.ports)  # type: ignore[assignment]


def test_queues_without_entry_stamps_say_they_are_not_judged(monkeypatch):
    """A scheme's own queue that keeps no entry stamps: its Q is reported, not judged, with the reason."""
    monkeypatch.setitem(SCHEMES, "bcast-simple", replace(SCHEMES["bcast-simple"], node=_SimpleStampless))
    r = run(RunSpec("bcast-simple", "hypercube:4", load={"rho": 0.3}, slots=90, warmup=0, seed=1))
    law = r.invariants["littles_law"]
    assert law["ok"] and not law["judged"] and "no node recorded" in law["why"]
    assert law["queue_area"] > 0


def test_many_to_one_measures_no_mean_queue_and_has_no_littles_law():
    """m2o reporters measure peak loads and delivery times, not a mean queue: no pair to hold."""
    r = run(RunSpec("m2o-greedy", "mesh:4x4", params={"workload": "uniform"}, seed=1))
    assert "littles_law" not in r.invariants and "mean_queue_per_node" not in r.metrics


# -- planted stamp and count bugs -------------------------------------------------------------
class _LateStampQueues(PortQueues):
    """A kit queue that stamps each packet with the slot after the one it is queued in."""

    __slots__ = ()

    def add(self, message: Any, ports: Any) -> None:
        self.now += 1
        try:
            super().add(message, ports)
        finally:
            self.now -= 1


class _SimpleLateStamps(SimpleNode):
    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.queues = _LateStampQueues(ctx.ports)


class _SimpleUndercount(SimpleNode):
    """Q one short whenever a node holds two packets or more."""

    def report(self, q_start: int, q_after: int) -> None:
        super().report(q_start - 1 if q_start > 1 else q_start, q_after)


@pytest.mark.parametrize("node,phrase", [(_SimpleLateStamps, "entry stamps add up to"),
                                         (_SimpleUndercount, "reported its queue")])
def test_a_stamp_or_count_bug_fails_the_run_naming_the_node(node, phrase, monkeypatch):
    monkeypatch.setitem(SCHEMES, "bcast-simple", replace(SCHEMES["bcast-simple"], node=node))
    r = run(RunSpec("bcast-simple", "hypercube:4", load={"rho": 0.4}, slots=80, warmup=0, seed=2))
    law = r.invariants["littles_law"]
    assert not r.invariants["ok"] and not law["ok"]
    assert law["queue_area"] != law["waits"]
    assert phrase in law["first"]["problem"] and {"slot", "node"} <= set(law["first"])


@pytest.fixture(autouse=True)
def _fresh_star_plans():
    star_plans.plan_book.cache_clear()
    yield
    star_plans.plan_book.cache_clear()
