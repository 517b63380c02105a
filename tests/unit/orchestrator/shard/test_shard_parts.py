"""The pieces of a sharded run, one by one: the shard map and transport, what crosses the
wire, the in-memory link, the MQTT link's inbox and ends (against a stand-in client), the
coordinator's merge, and the broker and its client (against a real mosquitto:
tests/broker/test_mqtt_link.py).

Each test pins one behaviour exactly (refusal messages, counted reasons, frame shapes,
merged totals), so that mutation testing's mutants of ``fabric/_sharded.py`` and
``orchestrator/shard/`` fail here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from contextlib import AsyncExitStack
from types import SimpleNamespace

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from slotnet import RunSpec, TraceSpec, run
from slotnet.errors import SlotnetError, SpecError
from slotnet.fabric import FabricError, FaultLedger, FaultSchedule, SlotClock, decode, encode, parse_topology
from slotnet.fabric._sharded import UNFORCED, ShardMap, ShardTransport
from slotnet.orchestrator.shard import _broker, _mqtt_link
from slotnet.orchestrator.shard._broker import (
    INSTALL_HINT,
    PASSWORD_ENV,
    BrokerAddress,
    _free_port,
    _wait_listening,
    parse_broker,
    private_broker,
    topic_root,
)
from slotnet.orchestrator.shard._coordinator import _canonical, _merge
from slotnet.orchestrator.shard._heartbeat import Heartbeat
from slotnet.orchestrator.shard._link import UNKNOWN_SHARD, Done
from slotnet.orchestrator.shard._memory_link import _BEFORE, _SENDER, MemoryHub, _Mailbox, run_sharded_in_memory
from slotnet.orchestrator.shard._mqtt import DISCONNECTED, MqttClient
from slotnet.orchestrator.shard._mqtt_link import (
    _FROM_COORDINATOR,
    COORDINATOR,
    HEARTBEAT,
    MqttCoordinatorLink,
    MqttShardLink,
    _beating,
    _Inbox,
    _stop,
)
from slotnet.orchestrator.shard._wire import (
    FAULT_DERIVED,
    FAULT_ENTRIES,
    FAULT_SETTINGS,
    NOT_SENT,
    _trace_from_wire,
    _trace_to_wire,
    faults_from_wire,
    faults_to_wire,
    ledger_from_wire,
    ledger_to_wire,
    sent_fields,
    spec_from_wire,
    spec_to_wire,
)
from tests.support.deliver import deliver

# ------------------------------------------------------------------ the shard map


def test_the_shard_map_splits_into_contiguous_blocks():
    m = ShardMap(10, 3)
    assert (m.n_nodes, m.shards, m.block) == (10, 3, 4)
    assert [m.shard_of(v) for v in range(10)] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert [list(m.nodes(s)) for s in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(ShardMap(4, 4).nodes(3)) == [3] and ShardMap(4, 4).block == 1
    assert list(ShardMap(5, 1).nodes(0)) == [0, 1, 2, 3, 4]
    assert list(ShardMap(8, 2).nodes(1)) == [4, 5, 6, 7]
    assert list(ShardMap(10, 4).nodes(3)) == [9] and ShardMap(10, 4).block == 3


@pytest.mark.parametrize(("n", "k", "msg"), [
    (4, 0, "cannot split 4 nodes into 0 shards"),
    (4, 5, "cannot split 4 nodes into 5 shards"),
    (5, 4, "4 shards of 2 nodes leave the last one empty (5 nodes)"),
    (9, 4, "4 shards of 3 nodes leave the last one empty (9 nodes)"),
])
def test_impossible_splits_are_refused(n, k, msg):
    with pytest.raises(FabricError) as e:
        ShardMap(n, k)
    assert str(e.value) == msg


def test_cross_links_count_directed_links_between_shards():
    topo = parse_topology("hypercube:3")
    assert ShardMap(8, 2).cross_links(topo) == (8, 24)
    assert ShardMap(8, 4).cross_links(topo) == (16, 24)
    assert ShardMap(8, 1).cross_links(topo) == (0, 24)
    assert ShardMap(3, 2).cross_links(parse_topology("mesh:3")) == (2, 4)


# ------------------------------------------------------------------ the shard transport


def _shard(shard: int = 0, shards: int = 2, faults=None, quantum: int = 1) -> ShardTransport:
    topo = parse_topology("hypercube:2")
    return ShardTransport(topo, SlotClock(), ShardMap(4, shards), shard, faults, 5, None, quantum)


def test_a_shard_transport_keeps_local_messages_and_boxes_the_others():
    t = _shard(0)
    assert t.describe() == {"kind": "shard", "shard": 0, "shards": 2}
    assert (t.shard, list(t.local), t.seed, t.sent_local, t.sent_cross) == (0, [0, 1], 5, 0, 0)
    assert not t.busy()
    t.outlet(0).send(0, "local")  # 0 -> 1
    t.outlet(0).send(1, "cross")  # 0 -> 2
    t.outlet(1).send(1, "cross3")  # 1 -> 3
    assert t.busy()
    frames = t.frames()  # the slot's sends are counted as its frames are made
    assert (t.sent_local, t.sent_cross) == (1, 2)
    assert frames[0] == b""  # nothing for itself
    # each other-shard receiver's pending pairs (in_port, message), as the outlets made them: a
    # fault-free run's inbox is packed (one msgpack array of the pairs, fabric/_transport.py)
    # (array 16 headers, counting as pairs are appended)
    one = b"\xdc\x00\x01"
    assert decode(frames[1]) == ((), (2, one + encode((1, "cross")), 3, one + encode((1, "cross3"))))
    assert t.frames() == [b"", b""]  # emptied
    assert (t.sent_local, t.sent_cross) == (1, 2)
    assert deliver(t, 1) == [(1, [(0, "local")])]
    assert not t.busy()


def test_a_shard_counts_and_ships_the_same_with_checksums():
    """Under a corrupt fault (frames with a CRC) messages come through park and the outbox: the
    counts and the delivered messages are those of the direct path."""
    faults = FaultSchedule.parse(["corrupt=0.5@50-60"])  # a window after these slots
    a, b = _shard(0, faults=faults), _shard(1, faults=faults)
    assert not b.direct and _shard(1).direct
    b.outlet(2).send(1, "to0")  # 2 -> 0, in-port 1
    b.outlet(3).send(0, "local")  # 3 -> 2
    assert (b.sent_local, b.sent_cross) == (1, 1)
    frames = b.frames()
    assert (b.sent_local, b.sent_cross) == (1, 1) and frames[1] == b""
    a.accept(frames[0])
    assert deliver(a, 1) == [(0, [(1, "to0")])]


def test_a_shard_accepts_the_others_frames():
    a, b = _shard(0), _shard(1)
    b.outlet(2).send(1, "to0")  # 2 -> 0, in-port 1
    b.outlet(3).send(0, "local")
    b.mark_unforced(3, 7)
    assert b.unforced == {(3, 7)}
    frame = b.frames()[0]
    assert decode(frame)[0][-1] == (UNFORCED, 3, 7, b"") and UNFORCED == -1
    a.accept(frame)
    a.accept(b"")  # nothing from a shard
    assert a.unforced == {(3, 7)}
    assert deliver(a, 1) == [(0, [(1, "to0")])]
    assert a.sent_local == 0 and a.sent_cross == 0  # accepted messages were counted by their sender
    with pytest.raises(FabricError) as e:
        a.accept(encode(([(0, 3, 0, encode("x"))], [])))
    assert str(e.value) == "shard 0 got a message for node 3, hosted elsewhere"
    with pytest.raises(FabricError) as e:
        a.accept(encode(([], [2, [encode((0, "x"))]])))
    assert str(e.value) == "shard 0 got a message for node 2, hosted elsewhere"


def test_accepted_pairs_join_the_local_ones_in_in_port_order():
    """A receiver's inbox is ordered by in-port whether its messages came from its own shard
    or another's, and whichever arrived first."""
    a, b = _shard(0), _shard(1)
    a.outlet(1).send(0, "from 1")  # 1 -> 0, in-port 0
    b.outlet(2).send(1, "from 2")  # 2 -> 0, in-port 1
    a.frames()
    a.accept(b.frames()[0])
    assert deliver(a, 1) == [(0, [(0, "from 1"), (1, "from 2")])]
    b.mark_unforced(2, 1)
    assert all(box == [] for j, box in enumerate(b._outbox) if j == 1)


def test_a_shard_sends_multi_tick_messages_with_their_start():
    a, b = _shard(0, quantum=2), _shard(1, quantum=2)
    b.clock.slot = 3
    b.outlet(2).send(1, "long", 1.0)  # 2 -> 0, two ticks: due 5, started 3
    b.outlet(3).send(0, "mine", 1.0)  # 3 -> 2, local
    assert (b.sent_local, b.sent_cross) == (1, 1)
    assert b._later == {5: [(2, 0, encode("mine"), 3)]}
    frame = b.frames()[0]
    assert decode(frame) == ((((5, 3), 0, 1, encode("long")),), ())
    a.accept(frame)
    assert a._later == {5: [(0, 1, encode("long"), 3)]}
    assert deliver(a, 4) == [] and deliver(a, 5) == [(0, [(1, "long")])]
    assert a.sent_local == 0


def test_a_shard_counts_a_timed_outlets_one_tick_message_once():
    """At a quantum above 1 a message of one tick comes through park while the outlets' direct
    path is on: it is counted once, whenever the slot's frames are made."""
    t = _shard(0, quantum=2)
    assert t.direct
    t.outlet(0).send(0, "one tick", 0.5)  # 0 -> 1, local, 0.5 * 2 = one tick
    t.outlet(0).send(1, "cross", 0.5)  # 0 -> 2
    t.frames()
    t.frames()
    assert (t.sent_local, t.sent_cross) == (1, 1)
    assert deliver(t, 1) == [(1, [(0, "one tick")])]


def test_a_shard_with_a_full_outbox_is_busy():
    t = _shard(1)
    t.mark_unforced(2, 0)
    assert t.busy() and t._outbox[1] == []
    t.frames()
    assert not t.busy()


# ------------------------------------------------------------------ the wire


def test_what_a_shard_is_not_sent():
    assert set(NOT_SENT) == {"transport", "observer", "shards", "broker"}
    assert all(isinstance(v, str) and len(v) > 20 for v in NOT_SENT.values())
    assert FAULT_SETTINGS == ("detect",) and FAULT_DERIVED == ("by_slot", "_timelines")
    assert list(FAULT_ENTRIES) == ["events", "loss", "windows", "spans"]
    fields_sent = sent_fields()
    assert "topology" in fields_sent and "faults" in fields_sent and "shards" not in fields_sent
    assert fields_sent.index("scheme") < fields_sent.index("topology")


def test_faults_travel_as_values():
    f = FaultSchedule.parse(["crash@3:1", "recover@5:1", "loss=0.5@1-4", "delay=0.25:2", "stall@2:3:0",
                             "corrupt=0.1:undetected", "detect=2"])
    wire = faults_to_wire(f)
    assert set(wire) == {"events", "loss", "windows", "spans", "detect"}
    assert wire["detect"] == 2 and len(wire["events"]) == 2 and len(wire["spans"]) == 1
    assert all(type(x) is tuple for x in wire["loss"])
    back = faults_from_wire(decode(encode(wire)))
    assert back == f and back.to_list() == f.to_list()
    assert faults_to_wire(FaultSchedule.parse(["detect=never"]))["detect"] is None


def test_the_trace_selection_travels_without_its_path():
    assert _trace_to_wire(None) is None and _trace_from_wire(None) is None
    t = TraceSpec("x.jsonl", frozenset({3, 1}), (2, 9), frozenset({"b", "a"}))
    wire = _trace_to_wire(t)
    assert wire == {"nodes": [1, 3], "slots": (2, 9), "kinds": ["a", "b"]}
    assert _trace_from_wire(decode(encode(wire))) == TraceSpec("", frozenset({1, 3}), (2, 9), frozenset({"a", "b"}))
    whole = _trace_to_wire(TraceSpec("y"))
    assert whole == {"nodes": None, "slots": None, "kinds": None}
    assert _trace_from_wire(whole) == TraceSpec("")


def test_the_spec_round_trips_and_unsent_fields_keep_their_defaults():
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, slots=12, seed=4, shards=2,
                   faults=FaultSchedule.parse(["loss=0.1"]), trace=TraceSpec("t", frozenset({2})))
    wire = spec_to_wire(spec)
    assert set(wire) == set(sent_fields())
    assert type(wire["load"]) is dict and wire["load"] == {"offered": 0.5}
    back = spec_from_wire(decode(encode(wire)))
    assert back.shards == 1 and back.slots == 12 and back.seed == 4 and back.faults == spec.faults
    assert back.trace == TraceSpec("", frozenset({2})) and back.load == {"offered": 0.5}
    assert type(back.params) is dict


def test_the_ledger_travels_as_its_books():
    ledger = FaultLedger()
    ledger.add("lost", "loss", 3)
    ledger.add("lost", "avoidable:link_down")
    ledger.add("duplicated", "dup", 2)
    wire = ledger_to_wire(ledger)
    assert wire == {"lost": {"loss": 3, "avoidable:link_down": 1}, "duplicated": {"dup": 2}, "delayed": {},
                    "corrupted": {}}
    back = ledger_from_wire(decode(encode(wire)))
    assert back.to_dict() == ledger.to_dict() and back.lost == ledger.lost
    assert ledger_from_wire({}).to_dict() == {}


# ------------------------------------------------------------------ the in-memory link


def test_a_mailbox_refuses_frames_from_outside_the_run():
    box = _Mailbox(2)
    assert box.shards == 2 and box.rejected == {}
    box.put("ready", _BEFORE, 2)
    box.put("ready", _BEFORE, True)
    box.put("data", 0, (5, b""))
    box.put("done", 0, (0, -1, b"", [], True, 0))
    box.put("final", _BEFORE, ("0", {}))
    assert box.rejected == {UNKNOWN_SHARD: 5} and box._pool == {}
    box.put("ready", _BEFORE, 1)
    box.put("spec", _BEFORE, {"a": [1]})  # the coordinator's topics name no sender
    box.put("go", 3, 7)
    assert box._pool == {("ready", -1): [1], ("spec", -1): [{"a": (1,)}], ("go", 3): [7]}  # decoded as received
    assert _BEFORE == -1 and set(_SENDER) == {"ready", "data", "done", "final"}
    assert [_SENDER[t](b) for t, b in [("ready", 4), ("data", (5, 6)), ("done", (7, 8)), ("final", (9, 10))]] == [4, 5, 8, 9]


def test_a_mailbox_hands_over_once_all_are_in():
    async def main():
        box = _Mailbox(3)
        got = []

        async def taker():
            got.append(await box.take("data", 2, 2))

        async with trio.open_nursery() as n:
            n.start_soon(taker)
            await trio.testing.wait_all_tasks_blocked()
            box.put("data", 2, (0, b"a"))
            box.put("data", 1, (1, b"old"))
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            box.put("data", 2, (2, b"c"))
        assert got == [[(0, b"a"), (2, b"c")]]
        assert box._pool == {("data", 1): [(1, b"old")]}

    trio.run(main)


def test_the_memory_links_follow_the_protocol():
    async def main():
        hub = MemoryHub(2)
        assert hub.shards == 2 and len(hub.boxes) == 2
        c = hub.coordinator_link()
        s0, s1 = hub.shard_link(0), hub.shard_link(1)
        assert c.describe() == {"kind": "memory"} and c.rejected is hub.coordinator.rejected
        assert (s1.shard, s1.shards) == (1, 2) and s1.rejected is hub.boxes[1].rejected
        out = {}

        async def shard(link, frame):
            out[("spec", link.shard)] = await link.spec()
            await link.ready()
            link.send(0, 1 - link.shard, frame)
            link.done(Done(0, link.shard, b"ev", [(link.shard, 0, "t")], link.shard == 1, 4 + link.shard))
            out[("go", link.shard)] = await link.go(0)
            out[("frames", link.shard)] = await link.frames(0)
            link.final({"n": link.shard})

        async with trio.open_nursery() as n:
            n.start_soon(shard, s1, b"from1")
            n.start_soon(shard, s0, b"from0")
            await c.start({"x": [1, 2]})
            reports = await c.done(0)
            c.go(0, False)
            finals = await c.finals()
        assert out[("spec", 0)] == {"x": (1, 2)} and type(out[("spec", 1)]) is dict
        assert out[("go", 0)] is False and out[("go", 1)] is False
        assert out[("frames", 0)] == [b"from1"] and out[("frames", 1)] == [b"from0"]
        assert reports == [Done(0, 0, b"ev", ((0, 0, "t"),), False, 4), Done(0, 1, b"ev", ((1, 0, "t"),), True, 5)]
        assert finals == [{"n": 0}, {"n": 1}]
        assert hub.coordinator.rejected == {}

    trio.run(main)


def test_shard_frames_arrive_in_shard_order():
    async def main():
        hub = MemoryHub(3)
        hub.shard_link(2).send(4, 0, b"two")
        hub.shard_link(1).send(4, 0, b"one")
        assert await hub.shard_link(0).frames(4) == [b"one", b"two"]
        hub.boxes[0].put("go", 5, 1)
        assert await hub.shard_link(0).go(5) is True

    trio.run(main)


def _spec(**kw):
    base = dict(load={"offered": 1.0}, slots=12, seed=3)
    base.update(kw)
    return RunSpec("deflection", "hypercube:3", **base)


def test_a_small_sharded_run_in_memory_is_the_one_process_run():
    spec = _spec(faults=FaultSchedule.parse(["loss=0.2", "crash@4:6", "dup=0.1@2-5"]))
    one = run(spec).to_dict(per_node=True)
    many = trio.run(lambda: run_sharded_in_memory(_spec(shards=2, faults=spec.faults).prepare()))
    d = many.to_dict(per_node=True)
    for key in ("metrics", "invariants", "stability", "slots_run", "per_node", "completion", "faults"):
        assert d.get(key) == one.get(key), key
    t = d["transport"]
    assert t["kind"] == "memory" and t["shards"] == 2 and t["frames_rejected"] == {}
    assert t["cross_shard_links"] == 8 / 24
    assert 0.0 < t["cross_shard_fraction"] < 1.0
    assert list(t)[:2] == ["kind", "shards"]


# ------------------------------------------------------------------ the coordinator's merge


class _Link:
    rejected = {"stale slot": 2}

    def describe(self):
        return {"kind": "fake", "broker": "mqtt://h:1"}


_entries = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 3),
                               st.one_of(st.integers(-3, 3), st.text("ab", max_size=2), st.lists(st.integers(0, 2), max_size=2))),
                     max_size=30)


@given(_entries, st.randoms(use_true_random=False))
def test_in_flight_merges_in_one_order_whatever_the_shards_handed_over(entries, rnd):
    """By receiver and in-port as numbers (receiver 10 after 9), a link's messages by their repr;
    any arrangement of the same entries (other shard counts) gives the same list."""
    shuffled = list(entries)
    rnd.shuffle(shuffled)
    want = sorted(entries, key=lambda e: (e[0], e[1], repr(e)))
    assert _canonical(list(entries)) == want
    assert _canonical(shuffled) == want


def test_the_merge_adds_up_every_shards_final_state():
    prep = SimpleNamespace(topology=parse_topology("hypercube:2"))
    l0, l1 = FaultLedger(), FaultLedger()
    l0.add("lost", "loss", 2)
    l1.add("lost", "loss")
    l1.add("delayed", "delay", 3)
    finals = [
        {"ledger": ledger_to_wire(l0), "in_flight": [(1, 0, "b"), (0, 1, "z")], "held": [3, 4],
         "held_packets": [["p"], []], "crashed": [(5, 1, ("q",))], "delivered": 10, "wakeups": 7,
         "sent_local": 6, "sent_cross": 2, "rejected": {"duplicate": 1, "stale slot": 1}},
        {"ledger": ledger_to_wire(l1), "in_flight": [(2, 1, "a")], "held": [0, 1], "held_packets": [[], ["r", "s"]],
         "crashed": [(2, 3, ()), (5, 0, ())], "delivered": 5, "wakeups": 1, "sent_local": 1, "sent_cross": 1,
         "rejected": {}},
    ]
    end = _merge(prep, finals, _Link())
    assert end.ledger.to_dict() == {"lost": {"loss": 3}, "delayed": {"delay": 3}}
    assert end.in_flight == [(0, 1, "z"), (1, 0, "b"), (2, 1, "a")]  # by receiver and in-port
    assert all(type(x) is tuple for x in end.in_flight)
    assert end.held == [3, 4, 0, 1] and end.held_packets == [["p"], [], [], ["r", "s"]]
    assert end.crashed == [(2, 3, []), (5, 0, []), (5, 1, ["q"])]
    assert (end.delivered, end.wakeups) == (15, 8)
    assert end.transport == {"kind": "fake", "shards": 2, "broker": "mqtt://h:1", "cross_shard_fraction": 0.3,
                             "cross_shard_links": 0.5, "frames_rejected": {"duplicate": 1, "stale slot": 3}}
    assert list(end.transport) == ["kind", "shards", "broker", "cross_shard_fraction", "cross_shard_links",
                                   "frames_rejected"]
    assert list(end.transport["frames_rejected"]) == ["duplicate", "stale slot"]
    assert _Link.rejected == {"stale slot": 2}


def test_the_merge_of_shards_that_sent_nothing():
    prep = SimpleNamespace(topology=parse_topology("hypercube:1"))
    empty = {"ledger": {}, "in_flight": [], "held": [0], "held_packets": [()], "crashed": [], "delivered": 0,
             "wakeups": 0, "sent_local": 0, "sent_cross": 0, "rejected": {}}

    class L:
        rejected: dict = {}

        def describe(self):
            return {"kind": "memory"}

    end = _merge(prep, [empty, dict(empty)], L())
    assert end.transport == {"kind": "memory", "shards": 2, "cross_shard_fraction": 0.0, "cross_shard_links": 1.0,
                             "frames_rejected": {}}
    assert end.held_packets == [(), ()] and end.held == [0, 0] and end.in_flight == [] and end.crashed == []


# ------------------------------------------------------------------ the MQTT link's inbox


class FakeClient:
    """A stand-in for MqttClient: queued messages to receive, publishes recorded."""

    def __init__(self, items=()):
        self.items = list(items)
        self.published: list = []

    async def receive(self):
        if self.items:
            await trio.sleep(0)
            return self.items.pop(0)
        await trio.sleep_forever()

    def publish(self, topic, payload, retain=False, wait=0.0):
        self.published.append((topic, payload, retain, wait))


def test_link_constants():
    if "SLOTNET_SHARD_TIMEOUT" not in os.environ:
        assert _mqtt_link.SILENCE == 10.0 and _mqtt_link.STALL == 30.0
        if "SLOTNET_SHARD_START_TIMEOUT" not in os.environ:
            assert _mqtt_link.START_SILENCE == 120.0
    assert HEARTBEAT == 1.0 and COORDINATOR == -1 and _FROM_COORDINATOR == ("go", "alive", "abort")
    assert _Inbox.SHAPES == {"spec": None, "hello": 2, "done": 7, "go": 3, "final": 3, "error": 3, "abort": 3,
                             "beat": 3, "alive": 3}
    assert DISCONNECTED == "\x00disconnected"


def test_the_inbox_names_each_frames_sender():
    s = _Inbox._sender
    assert s("spec", {}) is None
    assert [s(t, (5, 6, 7)) for t in ("go", "alive", "abort")] == [-1, -1, -1]
    assert s("done", (5, 6)) == 6 and s("data/3", (5, 6, b"")) == 6 and s("datax", (5, 6)) == 5
    assert s("hello", (2, 0)) == 2 and s("final", (1, 0, {})) == 1 and s("beat", (True, 0)) == 1
    assert type(s("hello", (True, 0))) is int


def test_the_inbox_admits_well_formed_frames_once():
    inbox = _Inbox(None, "slotnet/r", 2)  # type: ignore[arg-type]
    assert (inbox.prefix, inbox.shards, inbox.slot, inbox.procs, inbox.heard) == ("slotnet/r/", 2, -1, [], {})
    assert inbox._admit("spec", encode({"a": 1})) == {"a": 1}
    assert inbox._admit("spec", encode({"a": 1})) == {"a": 1}  # the spec is never a duplicate
    assert inbox._admit("hello", encode((1, 0))) == (1, 0)
    assert inbox._admit("hello", encode((1, 0))) is None
    assert inbox.rejected == {"duplicate": 1}
    assert inbox._admit("hello", encode((1, 1))) == (1, 1)
    assert inbox._admit("done", encode((0, 1, b"", [], True, 3, None))) == (0, 1, b"", (), True, 3, None)
    assert inbox._admit("data/0", encode((0, 1, b"f"))) == (0, 1, b"f")
    assert inbox._admit("go", encode((0, 0, True))) == (0, 0, True)
    assert inbox._admit("abort", encode((0, 0, "why"))) == (0, 0, "why")
    assert inbox._admit("alive", encode((-1, 3, 0))) == (-1, 3, 0)
    assert inbox._admit("other", encode((0, 0, 0))) == (0, 0, 0)
    assert ("hello", 1, 0) in inbox.seen and ("go", 0, 0) in inbox.seen
    assert inbox.rejected == {"duplicate": 1}


@pytest.mark.parametrize(("sub", "payload", "why"), [
    ("hello", b"\xc1", "undecodable"),
    ("spec", encode([1]), "malformed"),
    ("spec", b"\xc1", "undecodable"),
    ("hello", encode((1, 0, 0)), "malformed"),
    ("hello", encode((1,)), "malformed"),
    ("hello", encode([1, 0]) + b"", "unknown shard"),  # arrays decode as tuples: admitted shape
    ("done", encode((0, 1, b"", [], True)), "malformed"),
    ("go", encode((0, 0)), "malformed"),
    ("data/1", encode((0, 0)), "malformed"),
    ("hello", encode(("1", 0)), "malformed"),
    ("hello", encode((1, "0")), "malformed"),
    ("hello", encode((True, 0)), "malformed"),
    ("hello", encode((1, False)), "malformed"),
    ("hello", encode(7), "malformed"),
    ("beat", encode((2, 0, 0)), "unknown shard"),
    ("beat", encode((-1, 0, 0)), "unknown shard"),
    ("beat", encode((0, 0)), "malformed"),
    ("done", encode((0, 2, b"", [], True, 0, None)), "unknown shard"),
    ("data/0", encode((0, 5, b"")), "unknown shard"),
    ("final", encode((3, 0, {})), "unknown shard"),
    ("error", encode((2, 0, "x")), "unknown shard"),
])
def test_the_inbox_refuses_and_counts(sub, payload, why):
    inbox = _Inbox(None, "slotnet/r", 2 if why != "unknown shard" or sub != "hello" else 1)  # type: ignore[arg-type]
    assert inbox._admit(sub, payload) is None
    assert inbox.rejected == {why: 1}
    assert inbox.seen == set()


def test_stale_frames_are_refused_for_timed_topics_only():
    inbox = _Inbox(None, "r", 2)  # type: ignore[arg-type]
    inbox.slot = 5
    assert inbox._admit("done", encode((4, 0, b"", [], False, 0, None))) is None
    assert inbox._admit("go", encode((4, 0, True))) is None
    assert inbox._admit("data/1", encode((4, 0, b""))) is None
    assert inbox.rejected == {"stale slot": 3}
    assert inbox._admit("done", encode((5, 0, b"", [], False, 0, None))) is not None
    assert inbox._admit("go", encode((5, 0, True))) is not None
    assert inbox._admit("data/1", encode((6, 0, b""))) is not None
    assert inbox._admit("final", encode((0, 0, {}))) is not None
    assert inbox._admit("hello", encode((1, 0))) is not None
    assert inbox.rejected == {"stale slot": 3}


def test_take_collects_frames_of_its_slot_and_keeps_the_others():
    async def main():
        items = [("slotnet/r/done", encode((1, 1, b"", [], False, 0, None))),
                 ("slotnet/r/beat", encode((0, 9, 4))),
                 ("slotnet/r/done", b""),  # a cleared retained message: ignored
                 ("slotnet/r/done", encode((2, 0, b"", [], False, 0, None))),
                 ("slotnet/r/done", encode((1, 0, b"", [], True, 0, None)))]
        client = FakeClient(items)
        inbox = _Inbox(client, "slotnet/r", 2)  # type: ignore[arg-type]
        inbox.watch(0)
        before = inbox.heard[0]
        got = await inbox.take("done", 2, 1, "x")
        assert sorted(got) == [(1, 0, b"", (), True, 0, None), (1, 1, b"", (), False, 0, None)]
        assert inbox.pools == {"done": [(2, 0, b"", (), False, 0, None)]}
        assert inbox.heard[0] >= before and "beat" not in inbox.pools and inbox.progress[0][0] == 4
        assert inbox.rejected == {}
        assert await inbox.take("done", 1, None, "x") == [(2, 0, b"", (), False, 0, None)]
        assert inbox.pools["done"] == []
        client.items = [("slotnet/r/hello", encode((1, 0))), ("slotnet/r/hello", encode((0, 0)))]
        assert await inbox.take("hello", 2, None, "x") == [(1, 0), (0, 0)]
        assert await inbox.take("hello", 0, None, "x") == []

    trio.run(main)


@pytest.mark.parametrize(("topic", "body", "msg"), [
    ("error", (1, 0, "boom"), "shard 1 failed: boom"),
    ("abort", (0, 0, "stop it"), "the coordinator stopped the run: stop it"),
])
def test_take_raises_a_shards_error_and_the_coordinators_abort(topic, body, msg):
    async def main():
        inbox = _Inbox(FakeClient([(f"p/{topic}", encode(body))]), "p", 2)  # type: ignore[arg-type]
        with pytest.raises(SlotnetError) as e:
            await inbox.take("done", 1, 0, "x")
        assert str(e.value) == msg

    trio.run(main)


class _Proc:
    def __init__(self, status, err=None):
        self.returncode = status
        self.stderr = None if err is None else SimpleNamespace(read=lambda: err)

    def poll(self):
        return self.returncode


def test_check_names_an_exited_shard_with_its_last_words():
    inbox = _Inbox(None, "p", 2, [_Proc(None), _Proc(3, b"first\nlast words\n")])  # type: ignore[arg-type]
    with pytest.raises(SlotnetError) as e:
        inbox._check(time.monotonic(), "slot 4")
    assert str(e.value) == "shard 1 exited with status 3 while the run waited for slot 4: last words"
    inbox = _Inbox(None, "p", 2, [_Proc(0)])  # type: ignore[arg-type]
    with pytest.raises(SlotnetError) as e:
        inbox._check(time.monotonic(), "w")
    assert str(e.value) == "shard 0 exited with status 0 while the run waited for w"
    inbox = _Inbox(None, "p", 2, [_Proc(1, b"")])  # type: ignore[arg-type]
    with pytest.raises(SlotnetError) as e:
        inbox._check(time.monotonic(), "w")
    assert str(e.value) == "shard 0 exited with status 1 while the run waited for w"
    _Inbox(None, "p", 2, [_Proc(None)])._check(time.monotonic(), "w")  # type: ignore[arg-type]


def test_check_names_a_silent_peer_and_a_silent_run():
    silence, start = _mqtt_link.SILENCE, _mqtt_link.START_SILENCE
    inbox = _Inbox(None, "p", 4)  # type: ignore[arg-type]
    now = time.monotonic()
    inbox.heard = {2: now - silence + 5, COORDINATOR: now}
    inbox._check(now, "w")
    inbox.heard = {3: now - silence - 5, 2: now - silence - 1}
    with pytest.raises(SlotnetError) as e:
        inbox._check(now, "w")
    assert str(e.value) == (f"shard 2 sent nothing for {silence:g} s (no frame, no heartbeat) while the run "
                            "waited for w: it is frozen, or lost the broker")
    inbox.heard = {COORDINATOR: now - silence - 5}
    with pytest.raises(SlotnetError, match=r"^the coordinator sent nothing for "):
        inbox._check(now, "w")
    inbox.heard = {}
    inbox._check(now - start + 5, "w")
    with pytest.raises(SlotnetError) as e:
        inbox._check(now - start - 5, "the spec")
    assert str(e.value) == (f"nothing came for {start:g} s while the run waited for the spec: "
                            "a shard or the broker stopped answering")


def test_watch_starts_the_clock_of_a_peer():
    inbox = _Inbox(None, "p", 2)  # type: ignore[arg-type]
    t0 = time.monotonic()
    inbox.watch(1)
    assert set(inbox.heard) == {1} and t0 <= inbox.heard[1] <= time.monotonic()


def test_heartbeats_beat_from_a_thread_with_their_progress_until_stopped():
    """A heartbeat publishes (sender, n, progress()) from its own thread, n counting up, the
    progress read at each beat, until stopped; ``_beating`` stops it when its body ends or raises."""
    client = FakeClient()
    count = iter(range(100, 200))
    beat = Heartbeat(client, "r/beat", 3, 0.005, lambda: next(count)).start()
    deadline = time.monotonic() + 10
    while len(client.published) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    beat.stop()
    sent = [decode(p) for _, p, _, _ in client.published]
    assert sent[:3] == [(3, 0, 100), (3, 1, 101), (3, 2, 102)]
    assert all(t == "r/beat" and not retain and wait == 0.0 for t, _, retain, wait in client.published)
    n = len(client.published)
    time.sleep(0.05)
    assert len(client.published) == n  # stopped: no more beats
    with _beating(client, "r/alive", -1) as hb:
        assert isinstance(hb, Heartbeat) and hb.sender == -1 and hb.every == HEARTBEAT
    assert not hb._thread.is_alive()
    with pytest.raises(ValueError, match="^inner$"), _beating(client, "r/alive", -1) as hb:
        raise ValueError("inner")
    assert not hb._thread.is_alive()


def test_a_heartbeat_stops_when_its_client_fails():
    """A publish that raises (a closed client) ends the beating thread instead of killing the process."""

    class Closed:
        def publish(self, *_: object, **__: object) -> None:
            raise RuntimeError("closed")

    beat = Heartbeat(Closed(), "r/beat", 0, 0.001).start()
    beat._thread.join(timeout=10)
    assert not beat._thread.is_alive() and beat.beats == 0


def test_a_stuck_shard_is_named_and_a_moving_one_is_not():
    """While the run waits for a shard's slot, a progress count that stood still for STALL seconds
    names it stuck; a count that changed lately, or a wait that began lately, does not."""
    stall = _mqtt_link.STALL
    inbox = _Inbox(None, "p", 3, watch_shards=True)  # type: ignore[arg-type]
    now = time.monotonic()
    inbox.heard = {0: now, 1: now, 2: now}
    inbox.progress = {0: (5, now - stall - 5), 1: (9, now - 1), 2: (4, now - stall - 9)}
    inbox._check(now, "w", [1], now - stall - 5)  # shard 1 moved lately
    inbox._check(now, "w", [0, 2], now - 1)  # the wait began lately: shards that waited for go are not stuck
    inbox._check(now, "w", [], now - stall - 5)  # nobody busy: nobody judged
    with pytest.raises(SlotnetError) as e:
        inbox._check(now, "slot 7", [1, 2], now - stall - 5)
    assert str(e.value) == (f"shard 2 made no progress for {stall:g} s (no node step, its heartbeat goes on) while "
                            "the run waited for slot 7: a node rule that never awaits, or one step that long")
    inbox.progress = {}  # a shard never heard beating counts from the start of the wait
    with pytest.raises(SlotnetError, match="^shard 0 made no progress"):
        inbox._check(now, "w", [0], now - stall - 1)


def test_a_beat_moves_a_shards_progress_clock_only_when_its_count_changes():
    """The coordinator's inbox watches a shard from its first beat; a repeated count keeps the time
    of the last change; a shard's own inbox does not watch other shards."""
    inbox = _Inbox(None, "r", 2, watch_shards=True)  # type: ignore[arg-type]
    inbox._handle("beat", encode((1, 0, 7)), 10.0)
    assert inbox.heard == {1: 10.0} and inbox.progress == {1: (7, 10.0)}
    inbox._handle("beat", encode((1, 1, 7)), 12.0)
    assert inbox.heard == {1: 12.0} and inbox.progress == {1: (7, 10.0)}
    inbox._handle("beat", encode((1, 2, 8)), 13.0)
    assert inbox.progress == {1: (8, 13.0)}
    mine = _Inbox(None, "r", 2)  # type: ignore[arg-type]
    mine._handle("beat", encode((1, 0, 7)), 10.0)
    assert mine.heard == {}


def test_take_reads_everything_waiting_before_judging_a_peer():
    """After a long slot the coordinator's beats are already waiting: they are read before the
    coordinator is judged silent, so a busy shard does not blame it for its own delay."""
    async def main():
        items = [("r/data/0", encode((3, 1, b"x"))), ("r/alive", encode((-1, 40, 0))), ("r/go", encode((3, 0, True)))]
        client = FakeClient(items)
        client.pending = lambda: len(client.items)  # type: ignore[attr-defined]
        inbox = _Inbox(client, "r", 2)  # type: ignore[arg-type]
        inbox.heard = {COORDINATOR: time.monotonic() - _mqtt_link.SILENCE - 5}
        assert await inbox.take("go", 1, 3, "the go") == [(3, 0, True)]

    trio.run(main)


def test_stop_waits_for_shards_and_kills_stragglers():
    quick = subprocess.Popen(["true"], stderr=subprocess.PIPE)
    _stop([quick], False)
    assert quick.returncode == 0 and quick.stderr.closed


def test_stop_terminates_the_shards_of_a_failed_run():
    """A run that failed or was stopped does not wait for its shards: they are terminated."""
    slow = subprocess.Popen(["sleep", "60"], stderr=subprocess.PIPE)
    t0 = time.monotonic()
    _stop([slow], True)
    assert slow.returncode == -15 and time.monotonic() - t0 < 4


# ------------------------------------------------------------------ the MQTT link's two ends


def test_the_shard_end_over_a_stand_in_client():
    async def main():
        client = FakeClient([("slotnet/r/spec", encode({"s": [1]})), ("slotnet/r/go", encode((-1, 0, True)))])
        link = MqttShardLink(client, "slotnet/r", 1, 3)  # type: ignore[arg-type]
        assert (link.root, link.shard, link.shards, link.rejected) == ("slotnet/r", 1, 3, {})
        assert link.rejected is link.inbox.rejected and link.inbox.shards == 3
        assert await link.spec() == {"s": (1,)}
        await link.ready()
        assert client.published == [("slotnet/r/hello", encode((1, 0)), False, 0.0)]
        assert set(link.inbox.heard) == {COORDINATOR}
        link.send(4, 2, b"f")
        link.done(Done(4, 1, b"e", [], True, 2))
        link.final({"a": 1})
        assert client.published[1:] == [("slotnet/r/data/2", encode((4, 1, b"f")), False, 0.0),
                                        ("slotnet/r/done", encode((4, 1, b"e", [], True, 2, None)), False, 0.0),
                                        ("slotnet/r/final", encode((1, 0, {"a": 1})), False, 0.0)]
        client.items = [("slotnet/r/go", encode((3, 0, True))), ("slotnet/r/go", encode((4, 0, False)))]
        assert await link.go(4) is False and link.inbox.slot == 4
        assert link.inbox.rejected == {"stale slot": 1}
        client.items = [("slotnet/r/data/1", encode((4, 2, b"two"))), ("slotnet/r/data/1", encode((5, 0, b"next"))),
                        ("slotnet/r/data/1", encode((4, 0, b"zero")))]
        assert await link.frames(4) == [b"zero", b"two"]
        client.items = [("slotnet/r/go", encode((5, 0, 1)))]
        assert await link.go(5) is True

    trio.run(main)


def test_the_coordinator_end_over_a_stand_in_client():
    async def main():
        client = FakeClient([("slotnet/r/hello", encode((1, 0))), ("slotnet/r/hello", encode((0, 0)))])
        broker = BrokerAddress("h", 1, "u", "pw")
        async with AsyncExitStack() as stack:
            link = MqttCoordinatorLink(stack, client, broker, "r", 2, False)  # type: ignore[arg-type]
            assert (link.root, link.shards, link.spawn, link.run_id, link.procs) == ("slotnet/r", 2, False, "r", [])
            assert link.rejected is link.inbox.rejected and link.inbox.procs is link.procs
            assert link.describe() == {"kind": "mqtt", "broker": "mqtt://u@h:1"}
            await link.start({"k": 1})
            assert [p for p in client.published if p[0] != "slotnet/r/alive"][:2] == [
                ("slotnet/r/spec", encode({"k": 1}), True, 0.0), ("slotnet/r/go", encode((-1, 0, True)), False, 0.0)]
            assert set(link.inbox.heard) == {0, 1}
            assert ("slotnet/r/alive", encode((-1, 0, 0)), False, 0.0) in client.published  # beats from the start
            client.items = [("slotnet/r/done", encode((0, 1, b"b", [], False, 3, None))),
                            ("slotnet/r/done", encode((0, 0, b"a", [[0, 1, "e"]], True, 2, None)))]
            reports = await link.done(0)
            assert reports == [Done(0, 0, b"a", ((0, 1, "e"),), True, 2), Done(0, 1, b"b", (), False, 3)]
            assert link.inbox.slot == 0
            client.published.clear()
            link.go(0, False)
            assert [p for p in client.published if p[0] != "slotnet/r/alive"] == [
                ("slotnet/r/go", encode((0, 0, False)), False, 0.0)]
            client.items = [("slotnet/r/final", encode((1, 0, {"n": 1}))), ("slotnet/r/final", encode((0, 0, {"n": 0})))]
            assert await link.finals() == [{"n": 0}, {"n": 1}]
            assert client.published[-1] == ("slotnet/r/spec", b"", True, 0.0)
        assert not any(t == "slotnet/r/abort" for t, *_ in client.published)

    trio.run(main)


def test_a_failing_coordinator_tells_the_shards_to_stop():
    async def main():
        client = FakeClient([("slotnet/r/hello", encode((0, 0)))])
        with pytest.raises(SlotnetError):
            async with AsyncExitStack() as stack:
                link = MqttCoordinatorLink(stack, client, BrokerAddress("h", 1), "r", 1, False)  # type: ignore[arg-type]
                await link.start({})
                raise SlotnetError("gone wrong")
        assert client.published[-1] == ("slotnet/r/abort", encode((0, 0, "gone wrong")), False, 2.0)
        client = FakeClient([("slotnet/r/hello", encode((0, 0)))])
        with pytest.raises(KeyError):
            async with AsyncExitStack() as stack:
                link = MqttCoordinatorLink(stack, client, BrokerAddress("h", 1), "r", 1, False)  # type: ignore[arg-type]
                await link.start({})
                raise KeyError
        assert client.published[-1] == ("slotnet/r/abort", encode((0, 0, "KeyError")), False, 2.0)

    trio.run(main)


# ------------------------------------------------------------------ the broker


def test_broker_addresses_and_topics(monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    assert PASSWORD_ENV == "SLOTNET_MQTT_PASSWORD"
    assert BrokerAddress("h", 5).url == "mqtt://h:5" and BrokerAddress("h", 5).user is None
    assert BrokerAddress("h", 5).password is None
    assert BrokerAddress("h", 5, "me", "secret").url == "mqtt://me@h:5"
    assert topic_root("ab12") == "slotnet/ab12"
    assert parse_broker("mqtt://host:1884") == BrokerAddress("host", 1884, None, None)
    assert parse_broker("mqtt://host") == BrokerAddress("host", 1883, None, None)
    assert parse_broker("mqtt://u:p@h:7") == BrokerAddress("h", 7, "u", "p")
    monkeypatch.setenv(PASSWORD_ENV, "fromenv")
    assert parse_broker("mqtt://u@h:7") == BrokerAddress("h", 7, "u", "fromenv")
    assert parse_broker("mqtt://u:p@h:7").password == "p"


@pytest.mark.parametrize(("url", "msg"), [
    ("tcp://h:1", "--broker must look like mqtt[s]://[user[:password]@]host:port, got 'tcp://h:1'"),
    ("mqtt://:1883", "--broker must look like mqtt[s]://[user[:password]@]host:port, got 'mqtt://:1883'"),
    ("h:1883", "--broker must look like mqtt[s]://[user[:password]@]host:port, got 'h:1883'"),
    ("mqtt://h:99999", "--broker 'mqtt://h:99999': bad port"),
    ("mqtt://h:port", "--broker 'mqtt://h:port': bad port"),
])
def test_bad_broker_urls_are_refused(url, msg):
    with pytest.raises(SpecError) as e:
        parse_broker(url)
    assert str(e.value) == msg


def test_a_free_port_is_free():
    port = _free_port()
    assert type(port) is int and 1024 <= port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_waiting_for_a_broker_that_exits_or_never_listens(tmp_path):
    log = tmp_path / "log"
    log.write_text("starting\nError: bad config\n")
    with pytest.raises(SlotnetError) as e:
        _wait_listening(1, _Proc(3), log)  # type: ignore[arg-type]
    assert str(e.value) == "mosquitto exited at start (status 3): Error: bad config"
    log.write_text("")
    with pytest.raises(SlotnetError) as e:
        _wait_listening(1, _Proc(1), log)  # type: ignore[arg-type]
    assert str(e.value) == "mosquitto exited at start (status 1): (no output)"
    port = _free_port()
    with pytest.raises(SlotnetError) as e:
        _wait_listening(port, _Proc(None), log, timeout=0.3)  # type: ignore[arg-type]
    assert str(e.value) == f"mosquitto did not listen on 127.0.0.1:{port} within 0.3 s"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        _wait_listening(s.getsockname()[1], _Proc(None), log, timeout=5.0)  # type: ignore[arg-type]


def test_no_mosquitto_is_the_install_hint(monkeypatch):
    monkeypatch.setattr(_broker.shutil, "which", lambda name: None)
    with pytest.raises(SpecError) as e, private_broker("x"):
        pass
    assert str(e.value) == INSTALL_HINT
    assert INSTALL_HINT.startswith("mosquitto not found: install it (Debian/Ubuntu: apt-get install mosquitto)")
    real = shutil.which
    monkeypatch.setattr(_broker.shutil, "which", lambda name: None if name == "mosquitto_passwd" else real(name))
    with pytest.raises(SpecError), private_broker("x"):
        pass


def test_an_unreachable_broker_is_named():
    async def main():
        port = _free_port()
        c = MqttClient(BrokerAddress("127.0.0.1", port), "t")
        with pytest.raises(SlotnetError, match=rf"^cannot reach the MQTT broker mqtt://127.0.0.1:{port}: "):
            await c.connect()

    trio.run(main)


def test_a_lost_connection_is_an_error_on_receive():
    async def main():
        c = MqttClient(BrokerAddress("h", 1, "u", "p"), "t")
        assert c.broker.url == "mqtt://u@h:1"
        c._token = trio.lowlevel.current_trio_token()
        c._answered = True  # connected: a disconnect now is a loss
        c._on_disconnect(None, None, None, "gone away", None)
        c._on_message(None, None, SimpleNamespace(topic="a/b", payload=bytearray(b"x")))
        await trio.sleep(0.01)
        with pytest.raises(SlotnetError) as e:
            await c.receive()
        assert str(e.value) == "lost the MQTT broker mqtt://u@h:1 (gone away)"
        assert await c.receive() == ("a/b", b"x")
        c._closing = True
        c._on_disconnect(None, None, None, "bye", None)
        await trio.sleep(0.01)
        c._deliver(("t", b"y"))
        assert await c.receive() == ("t", b"y")

    trio.run(main)


def test_a_connection_closed_before_the_brokers_answer_is_a_refusal():
    """Closed before the CONNACK: connect ends refused at once (plain MQTT to a TLS port, or a TLS
    broker wanting a client certificate), with the likely cause; no loss is queued."""
    async def main():
        for tls, hint in ((False, "(a TLS listener? use mqtts:// with --broker-ca)"),
                          (True, "(does it want a client certificate? --broker-cert and --broker-key)")):
            c = MqttClient(BrokerAddress("h", 1, tls=tls), "t")
            c._token = trio.lowlevel.current_trio_token()
            c._on_disconnect(None, None, None, "closed", None)
            await trio.sleep(0.01)
            assert c._connected.is_set() and c._answered
            assert c._refused == f"it closed the connection before answering {hint}"
            assert c.pending() == 0

    trio.run(main)



def test_a_disconnect_after_close_is_no_error():
    async def main():
        c = MqttClient(BrokerAddress("h", 1, "u", "p"), "t")
        c._token = trio.lowlevel.current_trio_token()
        c.close()  # never connected: paho's disconnect and loop_stop have nothing to do
        c._on_disconnect(None, None, None, "bye", None)
        await trio.sleep(0.01)
        c._deliver(("t", b"y"))
        assert await c.receive() == ("t", b"y")

    trio.run(main)


def test_the_password_file_is_its_owners_alone(monkeypatch):
    modes: list[int] = []

    def run(cmd, **kw):
        modes.append(os.stat(cmd[2]).st_mode & 0o777)
        raise RuntimeError("stop here")

    monkeypatch.setattr(_broker.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(_broker.subprocess, "run", run)
    old = os.umask(0)  # the mode asked for, not the umask's cut of it
    try:
        with pytest.raises(RuntimeError, match="stop here"), private_broker("m"):
            pass
    finally:
        os.umask(old)
    assert modes == [0o600]


def test_successive_heartbeats_are_distinct_frames():
    # a receiver drops a frame it has seen (topic, sender, count): a beat that repeated its count would be
    # dropped as a duplicate, and its sender soon judged silent
    client = FakeClient()
    beat = Heartbeat(client, "r/beat", 3, 60.0)
    for _ in range(3):
        beat.beat()
    assert [decode(p) for _, p, _, _ in client.published] == [(3, 0, 0), (3, 1, 0), (3, 2, 0)]


async def test_a_peer_is_not_judged_silent_for_the_time_the_inbox_spends_handling_another(monkeypatch):
    """Handling one shard's message longer than the silence limit (a final state of tens of MB
    to decode) does not make a shard whose beat waits behind it silent; the run goes on."""
    monkeypatch.setattr(_mqtt_link, "SILENCE", 0.2)
    real = _mqtt_link.decode

    def slow(payload):
        body = real(payload)
        if body == (0, 0, {"big": 1}):
            time.sleep(0.5)  # this loop holds on: shard 1's beat is delivered only after
        return body

    monkeypatch.setattr(_mqtt_link, "decode", slow)
    client = FakeClient([("r/final", encode((0, 0, {"big": 1}))), ("r/beat", encode((1, 0, 5))),
                         ("r/final", encode((1, 0, {})))])
    inbox = _Inbox(client, "r", 2)  # type: ignore[arg-type]
    inbox.watch(1)
    got = await inbox.take("final", 2, None, "the shards' final state")
    assert sorted(f[0] for f in got) == [0, 1] and inbox._busy >= 0.5
