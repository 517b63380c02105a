"""The slot model: delivery at t+1, capacity, inbox order, idling, faults, failures."""

from __future__ import annotations

import pytest

from slotnet import FaultSchedule, RunSpec, run, run_async
from slotnet.fabric import CapacityError, FaultSpecError
from slotnet.nodes import Node
from slotnet.orchestrator import NodeFailure
from tests.support.probes import register


class PingAll(Node):
    """In slot 0 every node sends its id on every port; then it logs what it receives."""

    async def run(self) -> None:
        for p in self.ctx.ports:
            self.ctx.send(p.index, (self.ctx.node, self.ctx.slot))
        while True:
            inbox = await self.ctx.idle()
            self.ctx.record("log", [self.ctx.slot, list(inbox)])


def test_message_sent_in_slot_t_arrives_in_slot_t_plus_1(monkeypatch):
    """Every neighbour's slot-0 message is in the inbox at slot 1, ordered by in-port."""
    register("ping", PingAll, monkeypatch)
    r = run(RunSpec("ping", "hypercube:3", slots=5))
    log = r.metrics["log"]
    assert len(log) == 8
    for node, slot, (seen_slot, inbox) in log:
        assert slot == seen_slot == 1
        assert [p for p, _ in inbox] == [0, 1, 2]
        assert [m for _, m in inbox] == [(node ^ (1 << p), 0) for p in range(3)]


class Oversend(Node):
    async def run(self) -> None:
        if self.ctx.node == 2:
            await self.ctx.next_slot()
            self.ctx.send(1, "a")
            self.ctx.send(1, "b")
        await self.ctx.idle()


def test_oversending_a_port_names_node_port_and_slot(monkeypatch):
    """A second unit on one port in one slot raises CapacityError."""
    register("oversend", Oversend, monkeypatch)
    with pytest.raises(CapacityError, match="node 2 oversent port 1 in slot 1"):
        run(RunSpec("oversend", "hypercube:2", slots=4))


class Halves(Node):
    async def run(self) -> None:
        if self.ctx.node == 0:
            sizes = self.ctx.params["sizes"]
            for s in sizes:
                self.ctx.send(0, s, size=s)
        while True:
            inbox = await self.ctx.idle()
            self.ctx.record("log", list(inbox))


def test_small_messages_share_a_slot(monkeypatch):
    """Messages whose sizes sum to at most 1 share a link-slot and keep send order."""
    register("halves", Halves, monkeypatch)
    r = run(RunSpec("halves", "hypercube:2", params={"sizes": [0.25, 0.5, 0.25]}, slots=3))
    assert r.metrics["log"] == [(1, 1, [(0, 0.25), (0, 0.5), (0, 0.25)])]
    with pytest.raises(CapacityError, match="node 0 oversent port 0 in slot 0: 1.1 units"):
        run(RunSpec("halves", "hypercube:2", params={"sizes": [0.5, 0.6]}, slots=3))


class Sleeper(Node):
    async def run(self) -> None:
        wake = self.ctx.params["wake"]
        if self.ctx.node == 0:
            await self.ctx.idle(until=wake)
            self.ctx.record("log", self.ctx.slot)
        await self.ctx.idle()


def test_idle_nodes_cost_nothing_per_slot(monkeypatch):
    """Only slot 0 and one timer wake anything in 500 slots of 256 idle nodes."""
    register("sleeper", Sleeper, monkeypatch)
    r = run(RunSpec("sleeper", "hypercube:8", params={"wake": 321}, slots=500))
    assert r.performance["node_wakeups"] == 1
    assert r.metrics["log"] == [(0, 321, 321)]


class Forwarder(Node):
    """Node 0 sends a numbered message on port 0 every slot; node 1 logs arrivals."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            while True:
                ctx.send(0, ctx.slot)
                await ctx.next_slot()
        while True:
            inbox = await ctx.idle()
            for _, m in inbox:
                ctx.record("log", m)


def test_link_down_and_up_lose_and_account_every_message(monkeypatch):
    """Messages crossing a down link are lost with cause link_down; the rest arrive."""
    register("fwd", Forwarder, monkeypatch)
    faults = FaultSchedule.parse(["link-down@5:1:0", "link-up@8:0:0"])
    r = run(RunSpec("fwd", "hypercube:1", slots=12, faults=faults))
    got = [m for _, _, m in r.metrics["log"]]
    # messages sent in slots 4..6 are delivered in 5..7 while the link is down
    assert got == [0, 1, 2, 3, 7, 8, 9, 10]
    assert sorted(m for m, _ in r.metrics["lost"]) == [4, 5, 6]
    assert r.invariants["probe"]["lost"] == {"link_down": 3}
    assert r.invariants["probe"]["in_flight"] == 1


def test_random_loss_is_deterministic_and_accounted(monkeypatch):
    """loss=0.3 drops about 30% of messages, the same ones for the same seed."""
    register("fwd", Forwarder, monkeypatch)
    spec = dict(scheme="fwd", topology="hypercube:1", slots=2001, faults=FaultSchedule.parse(["loss=0.3"]))
    a = run(RunSpec(seed=1, **spec))
    b = run(RunSpec(seed=1, **spec))
    c = run(RunSpec(seed=2, **spec))
    lost = a.invariants["probe"]["lost"]["loss"]
    assert a.metrics == b.metrics and a.metrics != c.metrics
    assert len(a.metrics["log"]) + lost + 1 == 2001
    assert 0.25 < lost / 2000 < 0.35


class Counter(Node):
    """Counts its own steps; logs the count whenever a message arrives."""

    async def run(self) -> None:
        ctx, steps = self.ctx, 0
        while True:
            if ctx.node == 0:
                ctx.send(0, steps)
            inbox = await ctx.next_slot()
            steps += 1
            for _, m in inbox:
                ctx.record("log", (ctx.incarnation, m))


def test_crash_loses_state_and_recover_restarts_fresh(monkeypatch):
    """A crashed node stops, messages to it are lost, and it restarts from scratch."""
    register("counter", Counter, monkeypatch)
    faults = FaultSchedule.parse(["crash@4:0", "recover@7:0", "crash@3:1", "recover@5:1"])
    r = run(RunSpec("counter", "hypercube:1", slots=10, faults=faults))
    got = [m for node, _, m in r.metrics["log"] if node == 1]
    # node 1 is down in slots 3-4 (messages 2 and 3 are lost); node 0 sends nothing in
    # slots 4-6 and its second incarnation restarts counting at 0 in slot 7
    assert got == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert r.invariants["probe"]["lost"] == {"node_down": 2}


class Raiser(Node):
    async def run(self) -> None:
        await self.ctx.next_slot()
        if self.ctx.node == 3:
            raise ZeroDivisionError("boom")
        await self.ctx.idle()


def test_a_failing_node_is_named_with_its_slot(monkeypatch):
    """An exception in a node's rule surfaces as NodeFailure naming node and slot."""
    register("raiser", Raiser, monkeypatch)
    with pytest.raises(NodeFailure, match="node 3 failed in slot 1: ZeroDivisionError: boom"):
        run(RunSpec("raiser", "hypercube:2", slots=5))


async def test_async_api_runs_inside_a_trio_loop():
    """run_async is the same run, awaited from the caller's loop."""
    r = await run_async(RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, slots=30, seed=2))
    assert r.invariants["ok"] and r.slots_run == 30


@pytest.mark.parametrize(
    "entry, fragment",
    [
        ("link-down@5:1", "needs SLOT:NODE:PORT"),
        ("crash@2:1:0", "takes SLOT:NODE"),
        ("loss=2", r"must be in \[0, 1\]"),
        ("melt@3:1", "not understood"),
        ("loss=0.1@9-3", "must be after its start"),
    ],
)
def test_bad_fault_entries_are_refused(entry, fragment):
    """Malformed fault entries raise FaultSpecError naming the entry."""
    with pytest.raises(FaultSpecError, match=fragment):
        FaultSchedule.parse([entry])


def test_fault_naming_a_missing_port_is_refused():
    """A fault on a port the node lacks fails validation before the run."""
    with pytest.raises(FaultSpecError, match="node 0 has no port 7"):
        RunSpec("deflection", "hypercube:3", load={"offered": 1}, slots=10,
                faults=FaultSchedule.parse(["link-down@1:0:7"])).prepare()
