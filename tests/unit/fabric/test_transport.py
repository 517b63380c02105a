"""The in-process transport, driven directly: outlets, capacity, delivery order, the fault
pipeline (loss, corrupt, dup, delay, dead links and nodes) and the timed outlet of a
quantum above 1.

Each test pins one behaviour of ``fabric/_transport.py`` exactly (messages of refusals,
ledger books, callback arguments, boundaries on both sides), so that mutation testing's
mutants of that module fail here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.errors import CapacityError
from slotnet.fabric import FabricError, FaultSchedule, InProcessTransport, SlotClock, _transport, parse_topology
from slotnet.fabric._codec import CHECKSUM_BYTES, decode, encode, seal
from slotnet.fabric._transport import (
    _DEAD_CAUSES,
    _EPS,
    _FIXARRAY,
    _PORT_PAIR,
    _ROWS_KEPT,
    Frames,
    Outlet,
    TimedOutlet,
    _decode_inbox,
    _pair,
    _split,
    _unwatched,
)
from tests.support.deliver import deliver

#: the pure-Python build, whose private fields a test may read (the compiled Outlet hides them)
PURE = not str(_transport.__file__).endswith((".so", ".pyd"))


def make(topo: str = "hypercube:2", faults: list[str] | None = None, quantum: int = 1, seed: int = 0,
         lost: list | None = None) -> InProcessTransport:
    on_lost = None if lost is None else (lambda *a: lost.append(a))
    sched = FaultSchedule.parse(faults) if faults is not None else None
    return InProcessTransport(parse_topology(topo), SlotClock(), sched, seed=seed, on_lost=on_lost, quantum=quantum)


def step(t: InProcessTransport) -> list:
    """Deliver what is due in the next slot and move the clock there."""
    t.clock.slot += 1
    return deliver(t, t.clock.slot)


# ------------------------------------------------------------------ constants and decoding


def test_module_constants():
    assert _EPS == 1e-9
    assert frozenset({"link_down", "partition", "node_down", "stalled"}) == _DEAD_CAUSES
    assert _ROWS_KEPT == 64
    assert [bytes([0x90 + n]) for n in range(16)] == _FIXARRAY
    assert [bytes([0x92, p]) for p in range(128)] == _PORT_PAIR
    assert _unwatched(1, 2, 3) is None


@pytest.mark.parametrize("n", [1, 2, 3, 15, 16, 17, 40])
def test_an_inbox_decodes_in_one_call_as_frame_by_frame(n):
    pend = [(p % 64, encode((p, "m", [p, 2.5]))) for p in range(n)]
    got = _decode_inbox(7, [_pair(p, b) for p, b in pend], 3)
    assert got == [(p % 64, (p, "m", (p, 2.5))) for p in range(n)]
    assert all(type(m) is tuple and type(m[2]) is tuple for _, m in got)
    assert _decode_inbox(7, [_pair(63, encode({1: "a"}))], 0) == [(63, {1: "a"})]
    assert _decode_inbox(7, [_pair(5, encode({2: [1]})), _pair(6, encode(None))], 0) == [(5, {2: (1,)}), (6, None)]


@given(st.integers(0, 2**32 - 1), st.binary(max_size=8))
@settings(max_examples=50, deadline=None)
def test_a_pending_pair_is_its_port_and_frame(port, frame):
    """A pending message is one bytes object, the msgpack pair (in-port, message), and splits back
    into its in-port and frame for any port number."""
    pair = _pair(port, frame)
    assert _split(pair) == (port, frame)
    assert pair == encode([port, None])[:-1] + frame


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17])
def test_a_well_formed_inbox_takes_one_msgpack_call(n, monkeypatch):
    """The frame-by-frame fallback is for malformed frames only: a good inbox, integer map
    keys included, is one ``unpackb`` call."""
    calls: list = []
    real = _transport.unpackb

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    def never(b):
        raise AssertionError("fell back to frame-by-frame decoding")

    monkeypatch.setattr(_transport, "unpackb", counted)
    monkeypatch.setattr(_transport, "decode", never)
    pend = [(p, encode({1: [p], 2: "x"})) for p in range(n)]
    assert _decode_inbox(0, [_pair(p, b) for p, b in pend], 0) == [(p, {1: (p,), 2: "x"}) for p in range(n)]
    assert calls == [1]


@pytest.mark.parametrize("pend", [[(0, b"\xc1")], [(0, encode(1)), (1, b"\xc1")], [(2, encode(1) + encode(2))],
                                  [(0, encode(1))] * 16 + [(1, b"\x92\x01")]])
def test_a_malformed_frame_is_named(pend):
    with pytest.raises(FabricError, match=r"^node 4: undecodable frame in slot 9 \(\w+: .*\)$"):
        _decode_inbox(4, [_pair(p, b) for p, b in pend], 9)


def test_frames_hold_an_inbox_until_decoded():
    f = Frames(3, 8, [_pair(0, encode("a")), _pair(1, encode(("b", 1)))])
    assert (f.receiver, f.slot, len(f)) == (3, 8, 2)
    assert f.decode() == [(0, "a"), (1, ("b", 1))]
    assert list(f) == [(0, "a"), (1, ("b", 1))]
    with pytest.raises(FabricError, match=r"^node 3: undecodable frame in slot 8 "):
        Frames(3, 8, [_pair(0, b"\xc1")]).decode()


# ------------------------------------------------------------------ links and outlets


def test_links_give_neighbours_and_shared_reverse_ports():
    t = make("mesh:3")
    nbrs, revs = t.links(0)
    assert list(nbrs) == [1, -1] and revs == (1, -1)
    nbrs, revs = t.links(1)
    assert list(nbrs) == [2, 0] and revs == (1, 0)
    assert nbrs.typecode == "i"
    h = make("hypercube:3")
    rows = [h.links(v)[1] for v in range(8)]
    assert all(r is rows[0] for r in rows) and rows[0] == (0, 1, 2)
    assert len(h._reverse_rows) == 1
    assert h.links(5)[0] is None and h.topology.xor_ports == 3 and t.topology.xor_ports == 0  # a d-cube's: computed


@pytest.mark.parametrize("spec", ["hypercube:3", "mesh:3x2", "torus:3"])
def test_an_outlet_sends_to_its_topologys_neighbours_and_refuses_other_ports(spec):
    """Every port of every node reaches ``Topology.neighbour`` on ``reverse_port`` (a d-cube's
    computed as bit flips, other topologies' from their table); no other port is accepted."""
    t = make(spec)
    topo = t.topology
    for v in range(topo.n_nodes):
        out = t.outlet(v)
        for p in [-1, *range(topo.n_ports + 1), 63, 64, 2**70]:
            w = topo.neighbour(v, p) if 0 <= p < topo.n_ports else None
            if w is None:
                with pytest.raises(FabricError, match="has no port"):
                    out.send(p, "x")
                with pytest.raises(FabricError, match="has no port"):
                    out.capacity_left(p)
            else:
                out.send(p, (v, p))
                assert (topo.reverse_port(v, p), (v, p)) in [(q, decode(b)) for q, b in t.pending_frames(w)]
        assert out.idle_ports(0) == [] and sorted(out.started_ports(0)) == [p for p in range(topo.n_ports)
                                                                             if topo.neighbour(v, p) is not None]


def test_at_most_64_reverse_rows_are_kept():
    t = make("mesh:3x3x3x3")  # 81 nodes, 81 different rows of reverse ports
    rows = [t.links(v)[1] for v in range(81)]
    assert len(set(rows)) == 81
    assert len(t._reverse_rows) == 64
    assert t.links(80)[1] == rows[80] and t.links(80)[1] is not t.links(80)[1]  # not kept: a new tuple each time
    assert t.links(0)[1] is rows[0]


def test_describe_and_outlet_kind():
    t = make()
    assert t.describe() == {"kind": "inprocess"}
    assert type(t.outlet(0)) is Outlet
    assert type(make(quantum=2).outlet(0)) is TimedOutlet
    assert type(make(quantum=3).outlet(1)) is TimedOutlet
    assert t.outlet(2).node == 2
    assert (t.seed, t.quantum, t.on_lost, t.delivered) == (0, 1, None, 0)
    assert t.faults.empty and not t.checksums
    assert t.alive == [True] * 4 and t.stalled == set() and t.down_links == set() and t.unforced == set()
    assert not t.busy() and deliver(t, 1) == [] and t.in_flight() is not None and list(t.in_flight()) == []


@pytest.mark.parametrize("port", [-1, 2, 5, 2**70, "x", None, 1.5])
def test_sending_on_no_port_is_refused_with_the_node_and_slot(port):
    t = make()
    t.clock.slot = 4
    with pytest.raises(FabricError) as e:
        t.outlet(1).send(port, "m")
    assert str(e.value) == f"node 1 has no port {port!r} (slot 4)"
    assert not isinstance(e.value, CapacityError)
    assert not t.busy()


def test_sending_on_a_missing_mesh_port_is_refused():
    t = make("mesh:3")
    with pytest.raises(FabricError) as e:
        t.outlet(0).send(1, "m")
    assert str(e.value) == "node 0 has no port 1 (slot 0)"
    with pytest.raises(FabricError) as e:
        t.outlet(0).capacity_left(1)
    assert str(e.value) == "node 0 has no port 1 (slot 0)"
    for port in (-1, 2, "y"):
        with pytest.raises(FabricError, match="has no port"):
            t.outlet(2).capacity_left(port)


def test_one_unit_per_port_and_slot():
    t = make()
    o = t.outlet(0)
    o.send(0, "a")
    o.send(1, "b")
    with pytest.raises(CapacityError) as e:
        o.send(0, "c")
    assert str(e.value) == "node 0 oversent port 0 in slot 0: 2 units > capacity 1"
    assert (e.value.node, e.value.port, e.value.slot, e.value.load) == (0, 0, 0, 2.0)
    with pytest.raises(CapacityError, match="oversent port 1 in slot 0: 1.5 units"):
        o.send(1, "c", 0.5)
    assert o.capacity_left(0) == 0.0 and o.capacity_left(1) == 0.0
    assert o.started_ports(0) == [0, 1] and o.idle_ports(0) == [] and o.started_ports(1) == []
    assert o.idle_ports(1) == [0, 1]
    t.clock.slot = 1
    assert o.capacity_left(0) == 1.0 and o.capacity_left(1) == 1.0
    o.send(0, "d")  # a new slot: the port is free again
    assert o.started_ports(1) == [0] and o.idle_ports(1) == [1] and o.started_ports(0) == []
    with pytest.raises(CapacityError, match=r"^node 0 oversent port 0 in slot 1: 2 units"):
        o.send(0, "e")
    o.send(1, "f")
    assert step(t) == [(1, [(0, "a"), (0, "d")]), (2, [(1, "b"), (1, "f")])]


def test_delivery_order_and_count():
    t = make()
    t.outlet(3).send(1, "x3")  # 3 -> 1 at in-port 1
    t.outlet(0).send(0, "x0")  # 0 -> 1 at in-port 0
    t.outlet(2).send(1, "y2")  # 2 -> 0 at in-port 1
    t.outlet(1).send(0, "y1")  # 1 -> 0 at in-port 0
    assert t.busy()
    assert step(t) == [(0, [(0, "y1"), (1, "y2")]), (1, [(0, "x0"), (1, "x3")])]
    assert t.delivered == 4 and not t.busy()
    assert step(t) == []
    t.outlet(1).send(0, "z")
    assert step(t) == [(0, [(0, "z")])]
    assert t.delivered == 5


def test_shares_of_a_slot_add_up_to_one():
    t = make()
    o = t.outlet(0)
    o.send(0, "a", 0.5)
    assert o.capacity_left(0) == 0.5
    o.send(1, "whole")
    assert o.capacity_left(0) == 0.5 and o.capacity_left(1) == 0.0
    o.send(0, "b", 0.25)
    assert o.capacity_left(0) == 0.25
    with pytest.raises(CapacityError) as e:
        o.send(0, "c", 0.5)
    assert e.value.load == 1.25
    with pytest.raises(CapacityError) as e:
        o.send(0, "c")
    assert e.value.load == 1.75
    with pytest.raises(CapacityError) as e:
        o.send(1, "c", 0.25)  # port 1 holds a whole slot, also once loads are kept per port
    assert e.value.load == 1.25
    o.send(0, "d", 0.25)
    assert o.capacity_left(0) == 0.0
    assert o.started_ports(0) == [0, 1]
    assert step(t) == [(1, [(0, "a"), (0, "b"), (0, "d")]), (2, [(1, "whole")])]  # send order within a link


def test_shares_within_eps_are_accepted():
    o = make().outlet(0)
    for _ in range(10):
        o.send(0, 0, 0.1)  # 0.1 ten times is 0.9999999999999999
    o.send(1, 0, 0.3)
    o.send(1, 0, 0.3)
    o.send(1, 0, 0.4)  # 1.0000000000000002 (above 1 by less than _EPS)
    with pytest.raises(CapacityError):
        o.send(1, 0, 1e-8)


def test_a_whole_send_after_a_share_and_a_new_slot():
    t = make()
    o = t.outlet(0)
    o.send(0, "a", 0.5)
    t.clock.slot = 1
    o.send(1, "b")
    o.send(0, "c", 1.0)  # the share of slot 0 is gone
    with pytest.raises(CapacityError) as e:
        o.send(0, "d", 0.5)
    assert e.value.load == 1.5
    t.clock.slot = 2
    o.send(0, "e", 0.5)
    o.send(0, "f", 0.5)
    assert o.capacity_left(0) == 0.0 and o.capacity_left(1) == 1.0


@pytest.mark.parametrize("size", [0.0, -0.5, 1.5, 2.0, 1.0 + 1e-6])
def test_sizes_outside_0_1_are_refused(size):
    t = make()
    t.clock.slot = 3
    with pytest.raises(FabricError) as e:
        t.outlet(2).send(1, "m", size)
    assert str(e.value) == f"node 2: message size must be in (0, 1], got {size!r} (slot 3)"
    assert not isinstance(e.value, CapacityError)
    assert not t.busy()


def test_watch_reports_accepted_sends_it_follows():
    t = make()
    o = t.outlet(1)
    o.send(0, ("p", 0))  # before watch: nothing reported
    got: list = []
    o.watch(lambda m: (m[1], "k") if m[0] == "p" else None, lambda *a: got.append(a))
    t.clock.slot = 2
    o.send(0, ("p", 7))
    o.send(1, ("q", 8))
    with pytest.raises(CapacityError):
        o.send(0, ("p", 9))
    assert got == [(1, 2, 0, 7, "k")]
    o2 = t.outlet(2)
    o2.watch(lambda m: (m, m), lambda *a: got.append(a))
    o2.send(1, 3, 0.5)
    assert got[-1] == (2, 2, 1, 3, 3)
    o2._reported(4, 0, 6)
    assert got[-1] == (2, 4, 0, 6, 6)
    o._reported(4, 0, ("q", 1))
    assert got[-1] == (2, 4, 0, 6, 6)


def test_the_outlet_of_a_subclassed_park_calls_it():
    calls: list = []

    class Shard(InProcessTransport):
        def park(self, receiver, in_port, data):
            calls.append((receiver, in_port, data))

    t = Shard(parse_topology("hypercube:2"), SlotClock())
    o = t.outlet(2)
    o.send(1, "m")
    assert calls == [(0, 1, encode("m"))]
    assert not t.busy()
    assert make().outlets_shared.pending is not None and t.outlets_shared.pending is None


# ------------------------------------------------------------------ link and node state


def test_dead_nodes_and_stalled_nodes_lose_their_messages():
    lost: list = []
    t = make(lost=lost)
    t.set_alive(1, False)
    t.set_alive(1, False)
    assert t.alive == [True, False, True, True] and not t.is_alive(1) and t.is_alive(0)
    t.outlet(0).send(0, "to1")
    t.outlet(0).send(1, "to2")
    assert step(t) == [(2, [(1, "to2")])]
    assert lost == [(0, 0, 0, 1, "to1", "node_down")]
    assert t.ledger.lost == {"node_down": 1} and t.delivered == 1
    t.set_alive(1, True)
    t.set_alive(1, True)
    t.set_stalled(2, True)
    t.clock.slot = 1
    t.outlet(0).send(0, "to1")
    t.outlet(3).send(0, "to2")
    assert step(t) == [(1, [(0, "to1")])]
    assert lost[-1] == (1, 3, 0, 2, "to2", "stalled")
    t.set_stalled(2, False)
    t.set_stalled(2, False)
    assert t.stalled == set()
    t.outlet(3).send(0, "to2")
    assert step(t) == [(2, [(0, "to2")])]  # nothing dead: the fault-free path
    assert t.ledger.lost == {"node_down": 1, "stalled": 1}


def test_a_dead_node_counts_once_however_often_it_is_marked():
    t = make()
    t.set_alive(0, False)
    t.set_alive(0, False)
    t.set_alive(0, True)
    assert t._n_dead == 0
    t.outlet(1).send(0, "m")
    assert step(t) == [(0, [(0, "m")])]
    t.set_alive(3, True)
    assert t._n_dead == 0
    t.set_alive(3, False)
    assert t._n_dead == 1


def test_lose_unread_books_and_reports():
    lost: list = []
    t = make(lost=lost)
    t.clock.slot = 6
    t.lose_unread(2, ("m",), "crash")
    assert lost == [(6, -1, -1, 2, ("m",), "crash")]
    assert t.ledger.lost == {"crash": 1}
    make().lose_unread(0, "x", "finished")  # no callback: booked only


def test_a_link_goes_down_both_ways_and_comes_back():
    lost: list = []
    t = make(lost=lost)
    with pytest.raises(FabricError) as e:
        make("mesh:3").set_link(0, 1, False)
    assert str(e.value) == "node 0 has no port 1"
    t.set_link(0, 1, False)  # 0 <-> 2
    assert t.down_links == {(2, 1), (0, 1)}
    t.outlet(0).send(1, "a")
    t.outlet(2).send(1, "b")
    t.outlet(0).send(0, "c")
    assert step(t) == [(1, [(0, "c")])]
    assert sorted(lost) == [(0, 0, 1, 2, "a", "link_down"), (0, 2, 1, 0, "b", "link_down")]
    assert t.ledger.lost == {"link_down": 2}
    t.set_link(2, 1, True)
    assert t.down_links == set()
    t.outlet(0).send(1, "a")
    assert step(t) == [(2, [(1, "a")])]


def test_partitions_count_how_many_hold_a_link():
    lost: list = []
    t = make(lost=lost)
    t.cut(frozenset({0}), True)
    assert t.down_links == {(1, 0), (0, 0), (2, 1), (0, 1)}
    t.cut(frozenset({0, 1}), True)  # 0-2, 1-3 cut again; 0-1 inside
    assert t._cut[(0, 1)] == 2 and t._cut[(0, 0)] == 1 and t._cut[(3, 1)] == 1
    t.set_link(0, 0, False)
    t.outlet(1).send(0, "to0")
    t.outlet(2).send(1, "to0b")
    t.outlet(3).send(0, "to2")
    assert step(t) == [(2, [(0, "to2")])]
    assert sorted(lost) == [(0, 1, 0, 0, "to0", "link_down"), (0, 2, 1, 0, "to0b", "partition")]
    t.cut(frozenset({0}), False)
    assert t._cut == {(0, 1): 1, (2, 1): 1, (1, 1): 1, (3, 1): 1}
    assert t.down_links == {(0, 1), (2, 1), (1, 1), (3, 1), (0, 0), (1, 0)}
    t.set_link(0, 0, True)
    t.cut(frozenset({0, 1}), False)
    assert t._cut == {} and t.down_links == set()
    t.cut(frozenset({3}), True)
    t.set_link(3, 0, False)
    t.set_link(3, 0, True)
    assert (3, 0) in t.down_links and (2, 0) in t.down_links  # the partition still holds it


# ------------------------------------------------------------------ message faults


def test_loss_loses_each_message_and_books_it():
    lost: list = []
    t = make(faults=["loss=1.0"], lost=lost)
    t.outlet(0).send(0, ("a", 1))
    t.outlet(1).send(0, "b")
    assert step(t) == []
    assert lost == [(0, 1, 0, 0, "b", "loss"), (0, 0, 0, 1, ("a", 1), "loss")]
    assert t.ledger.lost == {"loss": 2} and t.delivered == 0 and not t.busy()


def test_a_loss_window_judges_the_slot_a_message_was_sent_in():
    t = make(faults=["loss=1.0@2-3"])
    got = []
    for s in range(5):
        t.clock.slot = s
        t.outlet(0).send(0, s)
        got += deliver(t, s + 1)
    assert got == [(1, [(0, 0)]), (1, [(0, 1)]), (1, [(0, 3)]), (1, [(0, 4)])]


def test_partial_loss_is_seeded_and_per_message():
    def run(seed):
        t = make("hypercube:3", faults=["loss=0.5"], seed=seed)
        for s in range(6):
            t.clock.slot = s
            for v in range(8):
                for p in range(3):
                    t.outlet(v).send(p, (s, v, p))
        t.clock.slot = 6
        return sum(len(m) for _, m in deliver(t, 6)), t.ledger.lost.get("loss", 0)

    a = run(1)
    assert a == run(1) and a[0] + a[1] == 144 and 40 < a[1] < 104 and run(2) != a


def test_corrupt_frames_fail_their_check():
    lost: list = []
    t = make("hypercube:3", faults=["corrupt=1.0"], lost=lost)
    assert t.checksums
    for s in range(6):
        t.clock.slot = s
        for v in range(8):
            for p in range(3):
                t.outlet(v).send(p, ("msg", s, v, p, "x" * (s * 7)))
        assert deliver(t, s + 1) == []
    assert t.ledger.to_dict() == {"lost": {"corrupt": 144}, "corrupted": {"corrupt": 144}}
    assert len(lost) == 144 and {c for *_, c in lost} == {"corrupt"}
    assert lost[0] == (0, 1, 0, 0, ("msg", 0, 1, 0, ""), "corrupt")


def test_undetected_corruption_is_refused_by_the_decoder():
    lost: list = []
    t = make("hypercube:3", faults=["corrupt=1.0:undetected"], lost=lost)
    for s in range(4):
        t.clock.slot = s
        for v in range(8):
            for p in range(3):
                t.outlet(v).send(p, [s, v, p, "y" * s, {1: 2.5}])
        assert deliver(t, s + 1) == []
    assert t.ledger.to_dict() == {"lost": {"undecodable": 96}, "corrupted": {"undetected": 96}}
    assert lost[0][5] == "undecodable" and lost[0][4] == (0, 1, 0, "", {1: 2.5})


def test_corrupt_frames_carry_a_checksum_that_is_stripped_on_delivery():
    t = make(faults=["corrupt=1.0@5"])
    t.outlet(0).send(0, ("ok", 1))
    assert t.pending_frames(1) == [(0, seal(encode(("ok", 1))))] and CHECKSUM_BYTES == 4
    assert step(t) == [(1, [(0, ("ok", 1))])]
    assert t._payload(seal(encode(3))) == 3
    assert make()._payload(encode(3)) == 3


def test_a_corrupt_window_before_its_start_corrupts_nothing():
    t = make(faults=["corrupt=1.0@1"])
    t.outlet(0).send(0, "a")
    assert step(t) == [(1, [(0, "a")])]
    t.outlet(0).send(0, "b")
    assert step(t) == []
    assert t.ledger.corrupted == {"corrupt": 1}


def test_dup_delivers_and_a_copy_follows_when_the_link_is_free():
    lost: list = []
    t = make(faults=["dup=1.0@0-1"], lost=lost)
    t.outlet(0).send(0, "a")
    t.outlet(2).send(0, "c")
    assert step(t) == [(1, [(0, "a")]), (3, [(0, "c")])]
    assert lost == [(0, 0, 0, 1, "a", "dup"), (0, 2, 0, 3, "c", "dup")]
    assert t.ledger.duplicated == {"dup": 2} and t.busy()
    t.outlet(0).send(0, "b")  # the link carries something new: the copy waits
    t.outlet(0).send(1, "d")
    assert step(t) == [(1, [(0, "b")]), (2, [(1, "d")]), (3, [(0, "c")])]
    assert step(t) == [(1, [(0, "a")])]
    assert not t.busy() and t._pipeline.held == {} and step(t) == []
    assert t.delivered == 6


def test_delay_holds_a_message_back_its_slots():
    lost: list = []
    t = make(faults=["delay=1.0:2@0-1"], lost=lost)
    t.outlet(0).send(0, "a")
    t.outlet(0).send(1, "b")
    assert step(t) == []
    assert lost == [(0, 0, 0, 1, "a", "delay"), (0, 0, 1, 2, "b", "delay")]
    assert t.ledger.delayed == {"delay": 2} and t.busy()
    assert list(t.in_flight()) == [(1, 0, "a"), (2, 1, "b")]
    assert step(t) == []  # slot 2
    t.outlet(1).send(1, "x")  # 1 -> 3 in-port 1, fresh traffic elsewhere
    t.outlet(3).send(1, "y")  # 3 -> 1 in-port 1: another in-port of 1
    assert step(t) == [(1, [(0, "a"), (1, "y")]), (2, [(1, "b")]), (3, [(1, "x")])]
    assert not t.busy() and t.delivered == 4


def test_held_messages_of_one_link_go_one_a_slot_oldest_first():
    t = make(faults=["delay=1.0:1@0-2"])
    t.outlet(0).send(0, "a", 0.5)
    t.outlet(0).send(0, "b", 0.5)
    assert step(t) == []
    t.outlet(0).send(0, "c")
    assert step(t) == []  # a and b due at 2, c at 3; each is held
    assert step(t) == [(1, [(0, "a")])]
    t.outlet(0).send(0, "new")  # sent at 3, no fault: it takes the link at 4
    assert step(t) == [(1, [(0, "new")])]
    assert step(t) == [(1, [(0, "b")])]
    assert step(t) == [(1, [(0, "c")])]
    assert step(t) == [] and not t.busy()


def test_a_held_message_to_a_dead_end_is_lost():
    lost: list = []
    t = make(faults=["delay=1.0:1@0-1"], lost=lost)
    t.outlet(0).send(0, "a")
    t.outlet(0).send(1, "b")
    assert step(t) == []
    t.set_link(0, 0, False)
    assert step(t) == [(2, [(1, "b")])]
    assert lost[-1] == (0, 0, 0, 1, "a", "link_down")
    assert t.ledger.to_dict() == {"lost": {"link_down": 1}, "delayed": {"delay": 2}}
    assert not t.busy()


def test_dup_and_delay_together_and_checksums_stripped_from_held_ones():
    lost: list = []
    t = make(faults=["dup=1.0@0-1", "delay=1.0:2@0-1", "corrupt=0.000001@50"], lost=lost)
    t.outlet(0).send(0, ("m", 1))
    assert step(t) == []
    assert [c for *_, c in lost] == ["dup", "delay"]
    assert t.ledger.to_dict() == {"duplicated": {"dup": 1}, "delayed": {"delay": 1}}
    assert step(t) == []
    assert step(t) == [(1, [(0, ("m", 1))])]  # the delayed one, due at 3
    assert step(t) == [(1, [(0, ("m", 1))])]  # the copy, due at 4
    assert not t.busy()


def test_two_delay_windows_hold_for_the_first_ones_slots():
    t = make(faults=["delay=1.0:1@0-1", "delay=1.0:3@0-1"])
    t.outlet(0).send(0, "a")
    assert step(t) == []
    assert step(t) == [(1, [(0, "a")])]


def test_loss_before_dup_stops_the_pipeline():
    lost: list = []
    t = make(faults=["loss=1.0@0-1", "dup=1.0@0-1"], lost=lost)
    t.outlet(0).send(0, "a")
    assert step(t) == [] and lost == [(0, 0, 0, 1, "a", "loss")]
    assert t.ledger.to_dict() == {"lost": {"loss": 1}} and not t.busy()


def test_a_dead_receiver_ends_the_pipeline_first():
    lost: list = []
    t = make(faults=["dup=1.0"], lost=lost)
    t.set_alive(1, False)
    t.outlet(0).send(0, "a")
    assert step(t) == [] and lost == [(0, 0, 0, 1, "a", "node_down")]
    assert t.ledger.to_dict() == {"lost": {"node_down": 1}}


# ------------------------------------------------------------------ avoidable losses


def test_a_loss_on_a_port_the_sender_saw_dead_is_avoidable_only_if_unforced():
    t = make(faults=["link-down@1:0:0"])
    t.set_link(0, 0, False)
    t.clock.slot = 3
    t.mark_unforced(0, 3)
    assert t.unforced == {(0, 3)}
    t.outlet(0).send(0, "a")
    t.outlet(1).send(0, "b")  # 1 saw the port dead too, but had no choice
    assert step(t) == []
    assert t.ledger.lost == {"link_down": 2, "avoidable:link_down": 1}
    assert t.ledger.avoidable == {"link_down": 1}


def test_a_port_not_yet_seen_dead_or_never_detected_is_not_avoidable():
    t = make(faults=["link-down@3:0:0"])  # detect=1: seen dead from slot 4
    t.set_link(0, 0, False)
    t.clock.slot = 3
    t.mark_unforced(0, 3)
    t.outlet(0).send(0, "a")
    step(t)
    assert t.ledger.lost == {"link_down": 1}
    t.mark_unforced(0, 4)
    t.outlet(0).send(0, "a")
    step(t)
    assert t.ledger.lost == {"link_down": 2, "avoidable:link_down": 1}
    n = make(faults=["link-down@1:0:0", "detect=never"])
    n.set_link(0, 0, False)
    n.clock.slot = 3
    n.mark_unforced(0, 3)
    n.outlet(0).send(0, "a")
    step(n)
    assert n.ledger.lost == {"link_down": 1}
    assert n._known_dead(0, 0, 3) is False and t._known_dead(0, 0, 4) is True and t._known_dead(0, 0, 3) is False
    assert t._known_dead(0, 1, 9) is False


def test_losses_to_faults_other_than_dead_links_are_never_avoidable():
    t = make(faults=["link-down@1:0:0", "loss=1.0"])
    t.clock.slot = 3
    t.mark_unforced(0, 3)
    t.outlet(0).send(0, "a")
    step(t)
    assert t.ledger.lost == {"loss": 1}


# ------------------------------------------------------------------ quantum above 1


def test_timed_outlet_short_and_long_messages():
    lost: list = []
    t = make(quantum=2, lost=lost)
    o = t.outlet(0)
    assert not PURE or (o._q == 2 and o._busy == [0, 0])
    o.send(0, "half", 0.5)  # one tick, a whole one
    with pytest.raises(CapacityError) as e:
        o.send(0, "more", 0.25)
    assert e.value.load == 1.5
    o.send(1, "q", 0.25)  # half a tick
    assert o.capacity_left(1) == 0.25 and o.capacity_left(0) == 0.0
    o.send(1, "q2", 0.25)
    assert o.capacity_left(1) == 0.0
    assert step(t) == [(1, [(0, "half")]), (2, [(1, "q"), (1, "q2")])]
    o.send(0, "long", 1.0)  # two ticks: sent at 1, arrives at 3
    assert (not PURE or o._busy[0] == 3) and o.capacity_left(0) == 0.0 and o.capacity_left(1) == 1.0
    assert o.idle_ports(1) == [1] and o.started_ports(1) == [0]
    with pytest.raises(CapacityError) as e:
        o.send(0, "x", 0.5)
    assert e.value.load == 2.0 and e.value.slot == 1
    assert step(t) == []
    assert o.idle_ports(2) == [1] and o.capacity_left(0) == 0.0
    with pytest.raises(CapacityError) as e:
        o.send(0, "x", 0.25)
    assert e.value.load == 1.5
    assert t.busy() and list(t.in_flight()) == [(1, 0, "long")]
    assert step(t) == [(1, [(0, "long")])]
    assert o.idle_ports(3) == [0, 1] and o.capacity_left(0) == 1.0
    o.send(0, "again", 1.0)
    assert not lost


def test_timed_outlet_refusals():
    t = make(quantum=4)
    o = t.outlet(3)
    t.clock.slot = 2
    with pytest.raises(FabricError) as e:
        o.send(0, "m", 0.3)
    assert str(e.value) == ("node 3: a message of size 0.3 takes 1.2 ticks at quantum 4; "
                            "sizes must be multiples of 1/4 (slot 2)")
    for size in (0.0, 1.25, -1.0):
        with pytest.raises(FabricError) as e:
            o.send(0, "m", size)
        assert str(e.value) == f"node 3: message size must be in (0, 1], got {size!r} (slot 2)"
    with pytest.raises(FabricError) as e:
        o.send(2, "m")
    assert str(e.value) == "node 3 has no port 2 (slot 2)"
    o.send(0, "m", 0.125)  # half a tick
    with pytest.raises(CapacityError) as e:
        o.send(0, "m", 0.5)  # two ticks on a port already used this tick
    assert e.value.load == 2.5
    assert o.capacity_left(0) == pytest.approx(0.125)
    o.send(1, "m", 0.5000001)  # within 1e-6 of two ticks
    assert not PURE or o._busy[1] == 4
    assert t.busy()


def test_timed_outlet_reports_and_parks_later_with_the_start_slot():
    t = make(quantum=3)
    got: list = []
    o = t.outlet(1)
    o.watch(lambda m: (m, 0), lambda *a: got.append(a))
    t.clock.slot = 5
    o.send(0, "short", 1 / 3)
    o.send(1, "long", 1.0)
    assert got == [(1, 5, 0, "short", 0), (1, 5, 1, "long", 0)]
    assert t._later == {8: [(3, 1, encode("long"), 5)]}
    t.clock.slot = 6
    assert deliver(t, 6) == [(0, [(0, "short")])]
    assert deliver(t, 8) == [(3, [(1, "long")])]
    assert t._later == {}


def test_a_multi_tick_loss_is_judged_by_the_slot_it_was_started():
    t = make(quantum=2, faults=["link-down@2:0:0"])
    o = t.outlet(0)
    t.clock.slot = 1
    t.mark_unforced(0, 1)
    o.send(0, "early", 1.0)  # started at 1, before the port was seen dead: not avoidable
    t.set_link(0, 0, False)
    t.clock.slot = 3
    assert deliver(t, 3) == []
    assert t.ledger.lost == {"link_down": 1}
    t.clock.slot = 5
    t.mark_unforced(0, 5)
    o.send(0, "late", 1.0)
    assert deliver(t, 7) == []
    assert t.ledger.lost == {"link_down": 2, "avoidable:link_down": 1}
    assert t._began == {(1, 0): 5}
    assert deliver(t, 8) == [] and t._began == {}


def test_in_flight_lists_pending_later_and_held():
    t = make(quantum=2, faults=["delay=1.0:3@0-1"])
    t.outlet(0).send(0, "a", 0.5)
    t.outlet(2).send(0, "b", 1.0)
    t.outlet(1).send(1, "c", 1.0)
    assert list(t.in_flight()) == [(1, 0, "a"), (3, 0, "b"), (3, 1, "c")]
    t.clock.slot = 1
    assert deliver(t, 1) == []
    assert list(t.in_flight()) == [(3, 0, "b"), (3, 1, "c"), (1, 0, "a")]  # pending, later, held


def test_a_port_to_node_zero_is_idle_until_used():
    t = make()  # hypercube:2: node 1's port 0 leads to node 0
    o = t.outlet(1)
    assert o.idle_ports(0) == [0, 1]
    o.send(0, "m")
    assert o.idle_ports(0) == [1]
