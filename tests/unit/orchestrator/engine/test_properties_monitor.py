"""The observer's judge of stated properties and declared choices (engine/_properties)."""

from __future__ import annotations

import dataclasses

import pytest

from slotnet import RunSpec, SlotnetError, SpecError, register, run
from slotnet.nodes import Node
from slotnet.schemes.kit.properties import AtEnd, Delivered, ExactlyOnce, FifoPerLink, Safety
from tests.contract import user_schemes

installed = user_schemes.installed  # the user schemes, registered for this module
pytestmark = pytest.mark.usefixtures("installed")


def _rows(r):
    return r.invariants["properties"]["properties"]


def test_a_scheme_without_properties_or_choices_gets_no_new_invariant():
    """A run of a scheme that states nothing has neither ``properties`` nor ``choices`` (nothing changes)."""
    r = run(RunSpec("pmnb", "mesh:4x4"))
    assert "properties" not in r.invariants and "choices" not in r.invariants


def test_message_properties_hold_for_a_correct_unicast_on_every_pair():
    """Delivered, exactly once, within hops, shortest path and FIFO hold for the correct rule, every source and destination."""
    for src in range(5):
        for dest in range(5):
            if dest != src:
                r = run(RunSpec("user-unicast", "torus:5", slots=10, params={"source": src, "dest": dest}))
                assert r.invariants["properties"]["ok"], (src, dest, r.invariants["properties"].get("problem"))
                assert all(row["checked"] == 1 for row in _rows(r).values())


def test_a_message_a_fault_destroyed_is_not_undelivered():
    """A packet lost to a link down is the fault's doing: Delivered holds; it never reached: ShortestPaths has nothing to judge."""
    r = run(RunSpec("user-unicast", "torus:6", slots=12, params={"source": 0, "dest": 2},
                    faults=["link-down@0:1:0"]))
    assert _rows(r)["reached"]["ok"] and _rows(r)["shortest"]["ok"]


def test_a_dup_fault_copy_is_not_a_second_delivery():
    """Copies a dup fault adds are received but matched to no send: exactly-once still holds."""
    r = run(RunSpec("user-unicast", "torus:6", slots=12, seed=3, params={"source": 0, "dest": 3},
                    faults=["dup=1.0"]))
    assert r.fault_impact["messages"]["duplicated"]  # the fault did copy messages
    assert _rows(r)["once"]["ok"]


class _Twice(user_schemes.Unicast):
    """Sends its packet twice along the same path: two deliveries, on a path of the right length."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == ctx.params["source"]:
            ctx.send(ctx.port(0, +1), [ctx.node, ctx.params["dest"], 0])
            await ctx.next_slot()
            ctx.send(ctx.port(0, +1), [ctx.node, ctx.params["dest"], 0])
            return
        while True:
            inbox = await ctx.idle()
            for _, (s, d, hops) in inbox:
                if ctx.node != d:
                    ctx.send(ctx.port(0, +1), [s, d, hops + 1])


def test_a_second_delivery_by_the_scheme_fails_exactly_once():
    """A packet the scheme sends twice reaches its destination twice: ExactlyOnce names the second arrival's slot."""
    register(dataclasses.replace(user_schemes.UNICAST, name="user-unicast-twice", node=_Twice), replace=True)
    r = run(RunSpec("user-unicast-twice", "torus:6", slots=12, params={"source": 0, "dest": 2}))
    once = _rows(r)["once"]
    assert not once["ok"] and once["first"]["slot"] == 3 and once["first"]["nodes"] == [2]
    assert "2 times" in once["first"]["problem"]


class _Overtakes(Node):
    """Node 0 sends 'a' then 'b' to node 1; a fault-free fabric keeps their order."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            ctx.send(ctx.port(0, +1), ["a"])
            await ctx.next_slot()
            ctx.send(ctx.port(0, +1), ["b"])


def test_fifo_per_link_holds_on_the_fabric_and_is_not_judged_under_faults():
    """The fabric keeps each link FIFO: the property holds fault-free, and a faulty run is not judged."""
    scheme = dataclasses.replace(user_schemes.UNICAST, name="user-fifo", node=_Overtakes, params=(),
                                 prepare=lambda t, p, load: {},
                                 properties=lambda setup: [FifoPerLink("fifo")])
    register(scheme, replace=True)
    r = run(RunSpec("user-fifo", "torus:4", slots=5))
    assert _rows(r)["fifo"]["ok"] and _rows(r)["fifo"]["checked"] == 1


class _LongWay(user_schemes.Unicast):
    """Planted: the source always sends right, the long way round when the destination is to its left."""

    async def run(self) -> None:
        ctx = self.ctx
        right = ctx.port(0, +1)
        if ctx.node == ctx.params["source"]:
            ctx.send(right, [ctx.node, ctx.params["dest"], 0])
            return
        inbox = await ctx.idle()
        for _, (s, d, hops) in inbox:
            if ctx.node != d:
                ctx.send(right, [s, d, hops + 1])


def test_shortest_paths_fail_for_the_long_way_round():
    """A packet sent the long way round the ring fails ShortestPaths with its hop count and the distance."""
    register(dataclasses.replace(user_schemes.UNICAST, name="user-long-way", node=_LongWay), replace=True)
    short = run(RunSpec("user-long-way", "torus:6", slots=12, params={"source": 0, "dest": 2}))
    assert _rows(short)["shortest"]["ok"]  # to the right is the short way: 2 hops
    long = run(RunSpec("user-long-way", "torus:6", slots=12, params={"source": 0, "dest": 4}))
    row = _rows(long)["shortest"]
    assert not row["ok"] and "took 4 hops where the scheme declares shortest paths of 2" in row["first"]["problem"]
    assert row["first"]["nodes"] == [0, 4] and row["violations"] == 1
    assert row["first"]["slot"] == 4 and _rows(long)["reached"]["ok"]


def test_a_predicate_that_raises_in_a_view_is_one_error_naming_the_node():
    """A node whose view() raises stops the run with one error naming the node."""
    class Broken(user_schemes.Token):
        def view(self):
            raise KeyError("token")

    register(dataclasses.replace(user_schemes.TOKEN, name="user-broken-view", node=Broken), replace=True)
    with pytest.raises(SlotnetError, match=r"node 0's view\(\) raised KeyError"):
        run(RunSpec("user-broken-view", "torus:4"))


def test_an_undeclared_choice_is_refused_by_name():
    """A node recording a choice its scheme does not declare is stopped with the declared names."""
    class Other(user_schemes.Picker):
        async def run(self) -> None:
            self.ctx.record_choice("colour", 1)

    register(dataclasses.replace(user_schemes.PICKER, name="user-undeclared", node=Other), replace=True)
    with pytest.raises(SlotnetError, match="choice 'colour'.*declared: pick"):
        run(RunSpec("user-undeclared", "torus:4"))


def test_recording_a_choice_draws_nothing():
    """The picks (and every seeded value) are the same whether the scheme declares its choice or not."""
    plain = dataclasses.replace(user_schemes.PICKER, name="user-picker-plain", choices=None)
    register(plain, replace=True)
    a = run(RunSpec("user-picker", "torus:4", seed=5))
    b = run(RunSpec("user-picker-plain", "torus:4", seed=5))
    assert "choices" not in b.invariants
    assert a.invariants["choices"]["choices"]["pick"]["outcomes"] == 4 * 40
    assert {k: v for k, v in a.invariants.items() if k not in ("choices",)} == b.invariants
    assert a.slots_run == b.slots_run


def test_properties_over_views_are_refused_in_a_sharded_run():
    """A property reading node views needs a one-process run: a sharded run is refused before it starts."""
    with pytest.raises(SpecError, match="only a one-process run observes"):
        run(RunSpec("user-token", "torus:4", shards=2))


def test_the_buffered_observer_judges_as_the_direct_one():
    """Events replayed per slot (the shard path in one process) give the same property results."""
    for name in ("user-token-dup", "user-flood-all"):
        a = run(RunSpec(name, "torus:5", slots=40))
        b = run(RunSpec(name, "torus:5", slots=40, observer="buffered"))
        assert a.invariants == b.invariants


def test_an_end_predicate_sees_live_and_crashed_nodes():
    """An AtEnd predicate gets the nodes up at the end and those that crashed, from the schedule."""
    seen = {}

    def grab(view):
        seen["alive"], seen["crashed"] = set(view.alive), set(view.crashed)

    scheme = dataclasses.replace(user_schemes.FLOOD_ALL, name="user-end-view",
                                 properties=lambda setup: [AtEnd("grab", predicate=grab),
                                                           Safety("nothing", predicate=lambda v: None)])
    register(scheme, replace=True)
    r = run(RunSpec("user-end-view", "torus:5", slots=20, faults=["crash@3:2"]))
    assert seen == {"alive": {0, 1, 3, 4}, "crashed": {2}}
    assert _rows(r)["nothing"]["checked"] == r.slots_run


def test_exactly_once_with_at_least_fails_an_undelivered_packet():
    """ExactlyOnce(at_least=True) also fails a packet that never reached its destination (the wrong-destination bug)."""
    scheme = dataclasses.replace(user_schemes.SCHEMES["user-unicast-wrong-dest"], name="user-wrong-once",
                                 properties=lambda setup: [ExactlyOnce("once", key=user_schemes.packet,
                                                                       dest=lambda m: m[1], at_least=True),
                                                           Delivered("reached", key=user_schemes.packet,
                                                                     dest=lambda m: m[1])])
    register(scheme, replace=True)
    r = run(RunSpec("user-wrong-once", "torus:6", slots=12, params={"source": 0, "dest": 3}))
    assert not _rows(r)["once"]["ok"] and not _rows(r)["reached"]["ok"]
    assert "never reached" in _rows(r)["once"]["first"]["problem"]


class _CountingPicker(user_schemes.Picker):
    """Draws as Picker does but counts its picks itself, handing them over at the end."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.tally = [0, 0, 0, 0]

    async def run(self) -> None:
        for _ in range(self.ctx.params["picks"]):
            self.tally[self.draw()] += 1
            await self.ctx.next_slot()

    def choice_counts(self, last_slot: int):
        return {"pick": dict(enumerate(self.tally))}


def test_counts_a_node_hands_over_at_the_end_are_judged_as_recorded_ones():
    """Node-side counts (Node.choice_counts) give the same row as recording each pick."""
    register(dataclasses.replace(user_schemes.PICKER, name="user-picker-counting", node=_CountingPicker), replace=True)
    a = run(RunSpec("user-picker", "torus:4", seed=5))
    b = run(RunSpec("user-picker-counting", "torus:4", seed=5))
    assert b.invariants["choices"] == a.invariants["choices"]
    assert b.invariants["choices"]["choices"]["pick"]["outcomes"] == 4 * 40


def test_a_node_count_of_an_undeclared_choice_is_refused_by_name():
    """Counts handed over under a name the scheme does not declare stop the run with the declared names."""
    class Other(_CountingPicker):
        def choice_counts(self, last_slot: int):
            return {"colour": {1: 3}}

    register(dataclasses.replace(user_schemes.PICKER, name="user-undeclared-count", node=Other), replace=True)
    with pytest.raises(SlotnetError, match="node 0 counted a choice 'colour'.*declared: pick"):
        run(RunSpec("user-undeclared-count", "torus:4"))
