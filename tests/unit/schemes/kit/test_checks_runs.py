"""The kit's checks: each rule on its own, each reporter that carries them, and correct runs passing them.

The checks (``slotnet.schemes.kit._checks``): ``delivered_at_destination``,
``hops_within_bounds``, ``shortest_paths`` (unicast deliveries against the topology),
``birth_stamps`` (births within their slot; broadcasts no faster than the eccentricity),
``liveness`` (no message reaches a stopped node in a fault-free run) and ``service_order``
(a declared service order, checked by the kit's queues). The planted bugs they catch are in
``test_planted_bugs.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.fabric import parse_topology
from slotnet.schemes import Setup
from slotnet.schemes.deflection._inputs import DeflectionInputs
from slotnet.schemes.deflection.reporter import DeflectionReporter
from slotnet.schemes.kit import (
    BirthCheck,
    Book,
    BroadcastReporter,
    ClassQueues,
    LabelQueues,
    Liveness,
    OrderCheck,
    PathCheck,
    ServiceOrder,
    UnicastReporter,
    bipartite,
    eccentricity,
)


def _setup(spec: str = "hypercube:3", faults: bool = False, **params: Any) -> Setup:
    return Setup(parse_topology(spec), params, {}, 100, 0, 1, faults=faults)


# ------------------------------------------------------------------ topology helpers


def test_bipartite_topologies():
    assert [bipartite(parse_topology(s)) for s in ("hypercube:3", "mesh:3x3", "torus:4x4", "torus:5x4", "torus:2x6")] \
        == [True, True, True, False, True]


def test_eccentricity_is_the_largest_distance():
    for spec in ("hypercube:4", "torus:5x4", "mesh:4x3", "mesh:5"):
        topo = parse_topology(spec)
        for v in range(topo.n_nodes):
            assert eccentricity(topo, v) == max(topo.distance(v, w) for w in range(topo.n_nodes)), (spec, v)


# ------------------------------------------------------------------ Book


def test_book_keeps_the_first_violation_whatever_the_order_of_events():
    """The first is the smallest (slot, node, packet): shuffled events give the same report."""
    events = [(slot, node, (node, slot), f"p{slot}{node}") for slot in range(5) for node in range(4)]
    reports = []
    for seed in range(5):
        book = Book()
        random.Random(seed).shuffle(events)
        for e in events:
            book.add(*e)
        reports.append(book.result())
    assert all(r == reports[0] for r in reports)
    assert reports[0]["first"] == {"slot": 0, "node": 0, "packet": [0, 0], "problem": "p00"}
    assert reports[0]["ok"] is False and reports[0]["violations"] == 20


# ------------------------------------------------------------------ PathCheck


def test_path_check_passes_a_correct_delivery():
    check = PathCheck(parse_topology("hypercube:4"), shortest=True)
    check.delivered(0b0110, 9, 4.5, 2, (0, 1), 0b0000, 0b0110)  # born 4.5: sendable in slot 5, 2 hops by slot 9
    inv = check.invariants()
    assert all(v["ok"] and v["checked"] == 1 for v in inv.values()), inv


@pytest.mark.parametrize("node,slot,birth,hops,invariant,phrase", [
    (0b0111, 9, 4.5, 2, "delivered_at_destination", "was delivered at node 7"),
    (0b0110, 9, 4.5, 1, "hops_within_bounds", "fewer than the distance 2"),
    (0b0110, 9, 4.5, 3, "hops_within_bounds", "parity"),
    (0b0110, 9, 4.5, 6, "hops_within_bounds", "lived only 4 slots"),
    (0b0110, 20, 4.5, 4, "shortest_paths", "declares shortest paths of 2"),
])
def test_path_check_names_each_broken_rule(node, slot, birth, hops, invariant, phrase):
    check = PathCheck(parse_topology("hypercube:4"), shortest=True)
    check.delivered(node, slot, birth, hops, (3, 17), 0b0000, 0b0110)
    inv = check.invariants()[invariant]
    assert not inv["ok"] and inv["violations"] == 1
    assert phrase in inv["first"]["problem"] and "(3, 17)" in inv["first"]["problem"]
    assert inv["first"]["slot"] == slot and inv["first"]["node"] == node and inv["first"]["packet"] == [3, 17]


def test_path_check_parity_only_where_it_holds():
    """No parity on an odd torus; with lifetime-derived hops, none under faults (a delay lengthens a life)."""
    odd = PathCheck(parse_topology("torus:5x5"))
    odd.delivered(1, 9, 0, 2, (0, 1), 0, 1)  # one hop away, two hops taken: possible on an odd ring
    assert odd.invariants()["hops_within_bounds"]["ok"]
    cube = parse_topology("hypercube:3")
    for faults, ok in ((False, False), (True, True)):
        check = PathCheck(cube, exact_hops=False, faults=faults)
        check.delivered(1, 9, 7, 2, (0, 7), 0, 1)
        assert check.invariants()["hops_within_bounds"]["ok"] is ok
    exact = PathCheck(cube, exact_hops=True, faults=True)
    exact.delivered(1, 9, 0, 2, (0, 1), 0, 1)
    assert not exact.invariants()["hops_within_bounds"]["ok"]


def test_shortest_paths_reported_only_when_declared():
    assert "shortest_paths" not in PathCheck(parse_topology("mesh:3x3")).invariants()
    assert "shortest_paths" in PathCheck(parse_topology("mesh:3x3"), shortest=True).invariants()


# ------------------------------------------------------------------ BirthCheck and Liveness


def test_birth_check_window_and_its_relaxation_under_faults():
    topo = parse_topology("hypercube:3")
    strict, relaxed = BirthCheck(topo), BirthCheck(topo, faults=True)
    for check in (strict, relaxed):
        check.born(0, 5, (0, 1), 4.2)
        check.born(0, 5, (0, 2), 5.0)
    assert strict.invariants()["birth_stamps"]["ok"] and relaxed.invariants()["birth_stamps"]["ok"]
    strict.born(0, 5, (0, 3), 4.0)  # the slot's start is outside (4, 5]
    relaxed.born(0, 5, (0, 3), 2.5)  # late: a stalled node
    assert not strict.invariants()["birth_stamps"]["ok"]
    assert relaxed.invariants()["birth_stamps"]["ok"]
    relaxed.born(0, 5, (0, 4), 5.5)  # early is never right
    bad = relaxed.invariants()["birth_stamps"]
    assert not bad["ok"] and "after slot 5" in bad["first"]["problem"]


def test_birth_check_broadcast_no_faster_than_the_eccentricity():
    check = BirthCheck(parse_topology("hypercube:3"))
    check.completed(0, (0, 1), 4.5, 8)  # sendable in 5, 3 hops: slot 8 at the earliest
    assert check.invariants()["birth_stamps"]["ok"]
    check.completed(0, (0, 2), 4.5, 7)
    bad = check.invariants()["birth_stamps"]
    assert not bad["ok"] and "eccentricity 3" in bad["first"]["problem"]


def test_liveness_judged_only_without_faults():
    for faults in (False, True):
        live = Liveness(faults)
        live.lost(7, 3, (1, 2), "loss")
        assert live.invariants()["liveness"]["ok"]
        live.lost(9, 4, (5, 6), "node_finished")
        inv = live.invariants()["liveness"]
        assert inv["messages_to_finished_nodes"] == 1
        assert inv["ok"] is faults
        if not faults:
            assert inv["first"]["node"] == 4 and inv["first"]["slot"] == 9 and "returned from run()" in inv["first"]["problem"]


# ------------------------------------------------------------------ ServiceOrder with the kit's queues


class _Ctx:
    """What ServiceOrder needs of a node's context: ``record``."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def record(self, kind: str, *values: Any) -> None:
        self.events.append((kind, *values))


def test_label_queues_check_the_declared_order():
    ctx = _Ctx()
    q = LabelQueues([0], ServiceOrder(ctx, lambda m, _p: m[2]))  # type: ignore[arg-type]
    for label in (3, 1, 2):
        q.add((0, label, label), label, [(0, 0)])
    assert [q.pop(0)[2] for _ in range(3)] == [1, 2, 3] and not ctx.events
    for label in (3, 1, 2):  # a scheme that keys by -label serves 3 first while 2 waits
        q.add((0, label, label), -label, [(0, 0)])
    q.pop(0)
    assert ctx.events[0] == ("disorder", 0, (0, 3), 3, (0, 2), 2)


def test_class_queues_check_every_class_head():
    ctx = _Ctx()
    q = ClassQueues([0], classes=2, order=ServiceOrder(ctx, lambda m, _p: m[2]))  # type: ignore[arg-type]
    q.add(("a", 1, 0), [(0, 0)])
    q.add(("b", 2, 1), [(0, 1)])
    assert [q.pop(0)[0] for _ in range(2)] == ["a", "b"] and not ctx.events
    q.add(("c", 3, 1), [(0, 0)])  # declared low, queued high
    q.add(("d", 4, 0), [(0, 1)])  # declared high, queued low
    q.pop(0)
    assert ctx.events == [("disorder", 0, ("c", 3), 1, ("d", 4), 0)]


def test_order_check_reports_disorder_events():
    check = OrderCheck()
    check.disorder(4, 12, 1, [4, 9], 7, [2, 3], 5)
    inv = check.invariants()["service_order"]
    assert not inv["ok"] and inv["first"]["packet"] == [4, 9] and "declared order serves first" in inv["first"]["problem"]


# ------------------------------------------------------------------ the reporters


def test_unicast_reporter_checks_deliveries_that_name_their_packet():
    rep = UnicastReporter(_setup("hypercube:3"), shortest_paths=True)
    rep.born(0, 0, 2)
    rep.delivered(3, 4, 0.5, 2, 0, 1, 3)
    rep.delivered(2, 4, 0.5, 2, 0, 2, 3)  # at 2, bound for 3
    rep.delivered(3, 6, 0.5, 4, 0, 3, 3)  # 4 hops for a distance of 2
    rep.delivered(1, 2, 0.5, 1)  # an old-style record: metrics and conservation only
    rep.end_slot(6)
    inv = rep.invariants({}, [], [0] * 8)
    assert inv["delivered_at_destination"]["violations"] == 1 and inv["delivered_at_destination"]["checked"] == 3
    assert inv["delivered_at_destination"]["first"]["packet"] == [0, 2]
    assert inv["shortest_paths"]["violations"] == 1 and inv["shortest_paths"]["first"]["packet"] == [0, 3]
    assert inv["hops_within_bounds"]["ok"] and inv["liveness"]["ok"]
    assert inv["conservation"]["delivered"] == 4


def _setup_params(spec: str, params: object) -> Setup:
    return Setup(parse_topology(spec), params, {}, 100, 0, 1)


def test_deflection_reporter_checks_each_absorption_from_its_ends():
    rep = DeflectionReporter(_setup_params("hypercube:3", DeflectionInputs("blocking", 3, "random")))
    rep.step(3, 5, 0, 0, 0, 0, 0, 0, (), [3], [], 0, [0, 3])  # entered in 3, 2 hops from 0 to 3: home at 3
    rep.step(2, 5, 0, 0, 0, 0, 0, 0, (), [4], [], 0, [0, 3])  # absorbed at 2, bound for 3, after one hop
    rep.step(7, 6, 0, 0, 0, 0, 0, 0, (), [3], [], 0, [0, 7])  # 3 hops from 0 to 7: parity holds
    inv = rep.invariants({}, [], [0] * 8)
    assert inv["delivered_at_destination"] == {"ok": False, "checked": 3, "violations": 1, "first": {
        "slot": 5, "node": 2, "packet": [0, 4], "problem": "packet (0, 4) bound for node 3 was delivered at node 2 in slot 5"}}
    assert inv["hops_within_bounds"]["violations"] == 1  # the same packet: 1 hop for a distance of 2


def test_broadcast_reporter_node_finished_is_no_fault():
    """A miss with only node_finished losses is a violation, and liveness names the stopped node."""
    rep = BroadcastReporter(_setup("hypercube:2"))
    rep.step(0, 1, ((1, 0.5),), (), 1, 0)
    rep.step(1, 2, (), ((0, 1),), 0, 0)
    rep.on_lost(2, 0, 1, 2, (0, 1), "node_finished")
    rep.end_slot(2)
    inv = rep.invariants({"node_finished": 1}, [], [0] * 4)
    assert inv["exactly_once"]["ok"] is False and inv["exactly_once"]["missed"] == 1
    assert inv["liveness"]["ok"] is False and inv["liveness"]["first"]["node"] == 2


# ------------------------------------------------------------------ correct runs pass every check


@pytest.mark.parametrize("scheme,topology,load,params", [
    ("deflection", "hypercube:5", {"offered": 2.0}, {}),
    ("deflection", "hypercube:4", {"lam": 1.5}, {}),
    ("star", "torus:4x6", {"rho": 0.7}, {"lam_unicast": 0.1}),
    ("star", "hypercube:4", {"rho": 0.6}, {"lam_unicast": 0.05}),
    ("star", "torus:3x5", {"rho": 0.6}, {"lam_unicast": 0.05, "discipline": "fcfs"}),
    ("bcast-balanced", "hypercube:5", {"rho": 0.9}, {}),
    ("bcast-dtree", "hypercube:5", {"rho": 0.9}, {"discipline": "label"}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.6}, {}),
    ("bcast-periodic", "hypercube:4", {"rho": 0.6}, {}),
    ("m2o-greedy", "mesh:6x10", {}, {"workload": "uniform", "order": "farthest-first"}),
])
def test_correct_runs_pass_every_check(scheme, topology, load, params):
    result = run(RunSpec(scheme, topology, params=params, load=load, slots=300, warmup=20, seed=5))
    bad = {k: v for k, v in result.invariants.items() if isinstance(v, dict) and not v["ok"]}
    assert result.invariants["ok"], bad
    assert result.invariants["liveness"]["messages_to_finished_nodes"] == 0


def test_the_checks_read_the_same_in_the_buffered_observer():
    """A shard's path (events batched per slot, replayed in node order) gives identical checks."""
    spec = dict(scheme="star", topology="torus:4x4", params={"lam_unicast": 0.1}, load={"rho": 0.7}, slots=150,
                warmup=10, seed=2)
    direct, buffered = run(RunSpec(**spec)), run(RunSpec(**spec, observer="buffered"))
    assert direct.invariants == buffered.invariants


def test_setup_knows_whether_the_run_has_faults():
    """Setup.faults is what lets liveness and the stamps judge a fault-free run strictly."""
    assert RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=10).prepare().setup.faults is False
    faulted = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=10, faults=["loss=0.1"])
    assert faulted.prepare().setup.faults is True
