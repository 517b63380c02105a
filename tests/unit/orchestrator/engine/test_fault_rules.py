"""The verdict's fault rules (``orchestrator/engine/_fault_rules.py``): the witness, the loss books,
epochs and reachability, the missed broadcasts. Hand-computed answers on the 2-cube and 3-cube."""

from __future__ import annotations

from slotnet import RunSpec, run
from slotnet.fabric import AVOIDABLE, FaultLedger, FaultSchedule, parse_topology
from slotnet.orchestrator.engine import _fault_rules as rules
from slotnet.orchestrator.engine._fault_rules import DEAD_CAUSES, FaultWitness
from slotnet.orchestrator.tools._explore import faults_of

SQUARE = parse_topology("hypercube:2")
CUBE = parse_topology("hypercube:3")


def _ledger(lost=None, avoidable=None) -> FaultLedger:
    led = FaultLedger()
    for cause, n in (lost or {}).items():
        led.add("lost", cause, n)
    for cause, n in (avoidable or {}).items():
        led.add("lost", AVOIDABLE + cause, n)
    return led


def test_the_dead_causes():
    """The causes a sender could have avoided are those of a dead link or node."""
    assert DEAD_CAUSES == ("link_down", "node_down", "partition", "stalled")
    assert rules._NOT_FAULTS == ("node_finished",)


def test_key_of_a_held_item():
    """A packet's key is its first two fields; anything shorter or not a sequence has none."""
    assert rules._key((3, 4, 5)) == (3, 4) and rules._key([1, 2]) == (1, 2)
    assert rules._key((1,)) is None and rules._key(7) is None and rules._key("ab") is None


def test_the_witness_passes_everything_on_and_keeps_what_the_rules_need():
    """The step handler still runs; births and other nodes' receptions are kept until complete; dup copies are no loss."""
    calls: list = []
    w = FaultWitness(SQUARE, {"step": ("births", "received", "more")})
    assert w.broadcasts
    h = w.wrap({"step": lambda *a: calls.append(("step", a)), "other": lambda *a: None})
    assert set(h) == {"step", "other"}
    h["step"](0, 3, [(1, 2.5)], [])
    h["step"](3, 3, [(2, 2.7)], [])
    h["step"](2, 5, [(1, 4.5), (2, 5.0)], [(0, 1, "x"), (3, 2), (1, 8)], "rest")  # (1, 8): never born
    h["step"](3, 6, [], [(0, 1), (3, 9)])  # a node's own broadcast is not a reception
    assert w.born == {(0, 1): 2.5, (3, 2): 2.7, (2, 1): 4.5, (2, 2): 5.0}
    assert w.got == {(0, 1): {2, 3}, (3, 2): {2}}
    assert calls[2] == ("step", (2, 5, [(1, 4.5), (2, 5.0)], [(0, 1, "x"), (3, 2), (1, 8)], "rest"))
    h["step"](0, 6, [], [(2, 1)])
    h["step"](1, 7, [], [(2, 1)])
    h["step"](3, 7, [], [(2, 1)])  # (2, 1) reached all three other nodes: forgotten
    assert (2, 1) not in w.born and (2, 1) not in w.got and (2, 2) in w.born
    seen: list = []
    on_lost = w.on_lost_with(lambda *a: seen.append(a))
    on_lost(3, 1, 0, 2, "m", "link_down")
    on_lost(4, 1, 0, 2, "m", "dup")  # a copy a fault added: no loss, still told
    assert w.losses == [(3, 1, 0, 2, "link_down")]
    assert seen == [(3, 1, 0, 2, "m", "link_down"), (4, 1, 0, 2, "m", "dup")]
    for events in ({"step": ("births",)}, {"step": ("received", "births")}, {}):
        plain = FaultWitness(SQUARE, events)
        step = lambda *a: None
        assert not plain.broadcasts and plain.wrap({"step": step})["step"] is step


def test_a_late_copy_of_a_complete_broadcast_leaves_no_books():
    """A reception of a broadcast already complete (a dup fault's late copy) is not noted: in one
    process its books stay gone, on a shard it stays complete (None)."""
    w = FaultWitness(SQUARE, {"step": ("births", "received")})
    h = w.wrap({"step": lambda *a: None})
    h["step"](2, 0, [(1, 0.5)], [])
    for v in (0, 1, 3):
        h["step"](v, 1, [], [(2, 1)])
    assert w.born == {} and w.got == {}
    h["step"](0, 2, [], [(2, 1)])
    assert w.born == {} and w.got == {}
    shard = FaultWitness(SQUARE, {"step": ("births", "received")}, range(0, 2))
    h = shard.wrap({"step": lambda *a: None})
    for v in (0, 1, 0):
        h["step"](v, 1, [], [(2, 1)])
    assert shard.got == {(2, 1): None}


def test_dup_faults_leave_books_only_for_incomplete_broadcasts(monkeypatch):
    """After a run under dup faults the witness holds receivers only of broadcasts born and not complete."""
    books: list = []
    judge = FaultWitness.judge

    def spy(self, *args):
        books.append((set(self.born), set(self.got)))
        return judge(self, *args)
    monkeypatch.setattr(FaultWitness, "judge", spy)
    spec = RunSpec("bcast-simple", "hypercube:3", load={"lam": 0.1}, slots=150, seed=1,
                   faults=FaultSchedule.parse(["dup=0.1"]))
    assert run(spec).verdict["ok"]
    (born, got), = books
    assert got <= born

def test_losses_are_excused_avoidable_forced_or_other():
    """A loss on a port its sender saw dead is avoidable (forced where the run found no unforced one of
    that cause); any other is the fault's own; losses to a node that returned are not judged."""
    # node 0's port 1 dead from slot 3 (a link 0-2 down at slot 3)
    sched = faults_of([{"kind": "link-down", "slot": 3, "node": 0, "port": 1}])
    tl = sched.port_timeline(SQUARE)
    losses = [(3, 0, 1, 2, "link_down"),   # sent in the slot it died: seen dead only with detect 0
              (4, 0, 1, 2, "link_down"),
              (5, 0, 0, 1, "link_down"),   # port 0 is alive
              (9, 0, 1, 2, "loss"),        # a message fault: always the fault's own
              (9, 0, 1, 2, "node_finished"),
              (9, -1, 1, 2, "link_down"),  # no sender
              (6, 0, 1, 2, "stalled")]
    lost = {"link_down": 6, "node_down": 2, "node_finished": 1, "loss": 1, "stalled": 1}
    got = rules._judge_losses(losses, _ledger(lost, {"link_down": 1, "stalled": 1}), tl, 1)
    assert got == {"excused": {"link_down": 5, "loss": 1, "node_down": 2}, "avoidable": {"link_down": 1, "stalled": 1},
                   "forced": {}, "other": {"node_finished": 1}, "first_avoidable": (4, 0, 1, 2, "link_down")}
    got = rules._judge_losses(losses, _ledger(lost, {"link_down": 1}), tl, 0)
    assert got == {"excused": {"link_down": 4, "loss": 1, "node_down": 2}, "avoidable": {"link_down": 2},
                   "forced": {"stalled": 1}, "other": {"node_finished": 1}, "first_avoidable": (3, 0, 1, 2, "link_down")}
    got = rules._judge_losses(losses, _ledger(lost), tl, 2)
    assert got == {"excused": {"link_down": 6, "loss": 1, "node_down": 2}, "avoidable": {},
                   "forced": {"stalled": 1}, "other": {"node_finished": 1}}
    got = rules._judge_losses(losses, _ledger(lost, {"link_down": 5}), tl, None)
    assert got == {"excused": {"link_down": 6, "loss": 1, "stalled": 1, "node_down": 2}, "avoidable": {},
                   "forced": {}, "other": {"node_finished": 1}}
    assert rules._judge_losses([], _ledger({"node_finished": 2}), tl, 1) == \
        {"excused": {}, "avoidable": {}, "forced": {}, "other": {"node_finished": 2}}


def test_epochs_and_reachability():
    """Epochs split the run where a port or node changes; reachability goes through live ports and nodes only."""
    sched = faults_of([{"kind": "crash", "slot": 2, "node": 1}, {"kind": "recover", "slot": 5, "node": 1},
                       {"kind": "link-down", "slot": 3, "node": 0, "port": 1},
                       {"kind": "link-up", "slot": 6, "node": 2, "port": 1}])
    tl = sched.port_timeline(SQUARE)
    assert rules._epochs(sched, tl, 8) == [
        (0, 2, frozenset()), (2, 3, frozenset({1})), (3, 5, frozenset({1})), (5, 6, frozenset()), (6, 8, frozenset())]
    assert rules._epochs(sched, tl, 7) == [
        (0, 2, frozenset()), (2, 3, frozenset({1})), (3, 5, frozenset({1})), (5, 6, frozenset()), (6, 7, frozenset())]
    assert rules._epochs(sched, tl, 3) == [(0, 2, frozenset()), (2, 3, frozenset({1}))]
    assert rules._epochs(sched, tl, 0) == []
    assert rules._epochs(faults_of([]), faults_of([]).port_timeline(SQUARE), 4) == [(0, 4, frozenset())]
    twice = faults_of([{"kind": "crash", "slot": 0, "node": 3}, {"kind": "recover", "slot": 0, "node": 3},
                       {"kind": "crash", "slot": 2, "node": 3}])
    assert rules._epochs(twice, twice.port_timeline(SQUARE), 4) == [(0, 2, frozenset()), (2, 4, frozenset({3}))]
    reach = [(rules._reachable(SQUARE, 0, s, frozenset(), tl), rules._reachable(SQUARE, 0, s, frozenset({1}), tl))
             for s in range(8)]
    assert reach == [({0, 1, 2, 3}, {0, 2, 3})] * 2 + [({0, 2, 3}, {0, 2, 3})] + [({0}, {0})] * 2 + \
        [({0, 1, 2, 3}, {0})] + [({0, 1, 2, 3}, {0, 2, 3})] * 2
    assert rules._reachable(SQUARE, 1, 0, frozenset({1}), tl) == set()
    assert rules._reachable(CUBE, 0, 0, frozenset({1, 2, 4}), faults_of([]).port_timeline(CUBE)) == {0}


def _w(born, got, topology=SQUARE) -> FaultWitness:
    w = FaultWitness(topology, {"step": ("births", "received")})
    w.born, w.got = dict(born), {k: set(v) for k, v in got.items()}
    return w


def test_misses_excused_only_where_the_faults_cut_the_node_off():
    """A node that missed a broadcast is excused only if the faults cut it off from the origin after the birth."""
    # node 1 down in slots 2..4, link 0-2 down in slots 3..5
    sched = faults_of([{"kind": "crash", "slot": 2, "node": 1}, {"kind": "recover", "slot": 5, "node": 1},
                       {"kind": "link-down", "slot": 3, "node": 0, "port": 1},
                       {"kind": "link-up", "slot": 6, "node": 2, "port": 1}])
    tl = sched.port_timeline(SQUARE)
    w = _w({(0, 1): 0.5, (0, 2): 6.2, (3, 1): 1.0, (0, 3): 7.0, (2, 1): 2.0, (1, 1): 1.5},
           {(0, 1): {2}, (0, 2): {1, 2}, (3, 1): {0, 1, 2}, (0, 3): {0}, (1, 1): {1}})
    got = rules._judge_misses(w, SQUARE, sched, tl, 8, {(0, 3)})
    # (0,1) born 0.5 misses 1 and 3: 1 was down, 3 cut off in 3..4 -> both excused
    # (0,2) born 6.2 misses 3: nothing cut it off after slot 6 -> a miss
    # (3,1) complete; (0,3) in flight
    # (2,1) born 2 misses 0,1,3: 1 down, 0 cut off by link 0-2 in 3..4; 3 never cut off -> a miss
    # (1,1) born 1.5, origin 1 down in 2..4: every node excused
    assert got == {"broadcasts": 2, "nodes": 2, "excused_receptions": 7,
                   "first": {"origin": 0, "seq": 2, "born": 6.2, "missing_nodes": [3]}}
    # born in the last epoch's first slot: the epochs before it do not excuse
    assert rules._judge_misses(_w({(0, 1): 5.0}, {(0, 1): {2}}), SQUARE, sched, tl, 8, set()) == {
        "broadcasts": 1, "nodes": 2, "excused_receptions": 0,
        "first": {"origin": 0, "seq": 1, "born": 5.0, "missing_nodes": [1, 3]}}
    assert rules._judge_misses(_w({(0, 1): 4.9}, {(0, 1): {2}}), SQUARE, sched, tl, 8, set())["excused_receptions"] == 2
    # the origin's own reception does not count toward complete; at most 16 nodes named
    big = parse_topology("hypercube:5")
    miss = rules._judge_misses(_w({(0, 1): 0.0}, {(0, 1): {0, 1}}, big), big, faults_of([]),
                               faults_of([]).port_timeline(big), 4, set())
    assert miss == {"broadcasts": 1, "nodes": 30, "excused_receptions": 0,
                    "first": {"origin": 0, "seq": 1, "born": 0.0, "missing_nodes": list(range(2, 18))}}
    assert rules._judge_misses(_w({(0, 1): 0.0}, {(0, 1): {1, 2, 3}}), SQUARE, sched, tl, 8, set())["broadcasts"] == 0


def test_the_judgement_names_each_broken_rule():
    """judge(): the books, and one reason per broken rule, read off what the witness saw and the end state."""
    sched = FaultSchedule.parse(["link-down@3:0:1", "detect=1"])
    w = FaultWitness(SQUARE, {"step": ("births", "received")})
    w.losses = [(4, 0, 1, 2, "link_down"), (5, 0, 1, 2, "link_down")]
    w.born, w.got = {(0, 1): 6.0, (1, 1): 6.0}, {(0, 1): {1}, (1, 1): set()}
    held = [[(1, 1, "payload")], [], [], []]  # (1, 1) is still held: not judged
    out = w.judge(SQUARE, sched, _ledger({"link_down": 2}, {"link_down": 2}), [], held, 8)
    assert out.lost["avoidable"] == {"link_down": 2}
    assert out.missed == {"broadcasts": 1, "nodes": 2, "excused_receptions": 0,
                          "first": {"origin": 0, "seq": 1, "born": 6.0, "missing_nodes": [2, 3]}}
    assert out.reasons == ("2 avoidable losses (first sent in slot 4, 0->2)",
                           "1 broadcast missed 2 reachable nodes (first: 0,1 at 2,3)")
    none = FaultWitness(SQUARE, {}).judge(SQUARE, FaultSchedule.parse([]), _ledger(), [], [[]] * 4, 8)
    assert none.missed is None and none.reasons == () and none.lost["avoidable"] == {}
