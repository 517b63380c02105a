"""Where a sharded run's events are reported: on the shards (merged) or at the coordinator (replayed).

A reporter class that declares ``merges_shards`` runs on every shard and the coordinator
merges; a subclass that does not declare it again, a scheme that states properties, or a
reporter that declares it without the methods keep the replay path or are refused; either
way the result is the one-process result. Merging shards also hand the verdict the losses
they saw (``finals["losses"]``): a scheme that sends on ports it sees dead fails alike.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import trio

from slotnet import FaultSchedule, RunSpec, SlotnetError, run
from slotnet.nodes import Node
from slotnet.orchestrator.engine._open import merges_on_shards
from slotnet.orchestrator.shard import run_sharded_in_memory
from slotnet.orchestrator.shard._coordinator import _summaries
from slotnet.orchestrator.shard._link import Done
from slotnet.schemes import SCHEMES, Scheme
from slotnet.schemes.deflection.reporter import DeflectionReporter
from slotnet.schemes.kit import BaseReporter
from slotnet.schemes.kit.properties import AtEnd
from tests.support.flood import count_handlers

SAME = ("metrics", "invariants", "per_node", "series", "slots_run", "stability")


class Inherited(DeflectionReporter):
    """Deflection's reporter, subclassed without declaring the merge again."""


class Unfinished(DeflectionReporter):
    """Declares the merge but lacks a method of it."""

    merges_shards = True
    shard_slot = None  # type: ignore[assignment]


def _variant(monkeypatch, name: str, **fields) -> RunSpec:
    monkeypatch.setitem(SCHEMES, name, dataclasses.replace(SCHEMES["deflection"], name=name, **fields))
    return RunSpec(name, "hypercube:4", load={"offered": 1.0}, slots=30, warmup=5, seed=4)


def _both(spec: RunSpec, shards: int = 2) -> tuple[dict, dict, str]:
    one = run(spec).to_dict(per_node=True, series=True)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=shards).prepare()))
    return one, many.to_dict(per_node=True, series=True), many.transport["reporting"]


def test_deflection_reports_on_the_shards():
    """Deflection's reporter declares the merge: its sharded runs are merged, with the one-process result."""
    one, many, reporting = _both(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=30, warmup=5, seed=4), 3)
    assert reporting == "merged" and all(one[k] == many[k] for k in SAME)


def test_a_subclass_that_does_not_declare_again_is_replayed(monkeypatch):
    """A subclass does not inherit the declaration (its own state would not merge): replayed, same result."""
    spec = _variant(monkeypatch, "defl-inherited", reporter=Inherited)
    one, many, reporting = _both(spec)
    assert reporting == "replayed" and all(one[k] == many[k] for k in SAME)


def test_a_scheme_that_states_properties_is_replayed(monkeypatch):
    """A stated property judges a slot's events together: such a run is replayed although the reporter merges."""
    spec = _variant(monkeypatch, "defl-props", properties=lambda setup: [AtEnd("ran", predicate=lambda view: None)])
    one, many, reporting = _both(spec)
    assert reporting == "replayed" and all(one[k] == many[k] for k in SAME)
    assert many["invariants"]["properties"]["ok"]


def test_a_declaration_without_its_methods_is_refused(monkeypatch):
    """A reporter that declares merges_shards without shard_slot() is refused by name, before any slot."""
    spec = _variant(monkeypatch, "defl-unfinished", reporter=Unfinished)
    prep = dataclasses.replace(spec, shards=2).prepare()
    with pytest.raises(SlotnetError, match="reporter Unfinished declares merges_shards but has no shard_slot"):
        merges_on_shards(prep, Unfinished(prep.setup), None)


def test_a_shard_that_sends_events_where_a_summary_is_due_is_named():
    """A coordinator that merges refuses a slot report without a summary, naming the shard (mixed versions)."""
    _summaries([Done(3, 0, b"", [], False, 3, (1, 2)), Done(3, 1, b"", [], False, 3, (0, 0))], 3)
    with pytest.raises(SlotnetError, match="shard 1 sent events for slot 3 where its reporter's summary was due"):
        _summaries([Done(3, 0, b"", [], False, 3, (1, 2)), Done(3, 1, b"ev", [], False, 3)], 3)


# -- the verdict's losses, handed over by merging shards ---------------------------------------


class Stubborn(Node):
    """Every slot, sends on port 0 and on every port its context shows dead, leaving the other live ports
    idle: each message lost on a port it saw dead is an avoidable loss."""

    async def run(self) -> None:
        ctx = self.ctx
        while True:
            inbox = await ctx.next_slot()
            if inbox:
                ctx.record("got", len(inbox))
            live = set(ctx.live_ports)
            ports = [0] + [p.index for p in ctx.ports if p.index != 0 and p.index not in live]
            for p in ports:
                ctx.send(p, ctx.node)
            ctx.record("sent", len(ports))


class StubbornReporter(BaseReporter):
    """Counts sent and received messages; merges across shards (plain integer sums)."""

    merges_shards = True
    events = {"sent": ("count",), "got": ("count",)}

    def __init__(self, setup: Any) -> None:
        super().__init__(setup)
        self.sent = self.got = 0

    def handlers(self) -> dict[str, Any]:
        return count_handlers(self)

    def shard_slot(self, slot: int) -> tuple[int, ...]:
        return ()

    def merge_slot(self, slot: int, summaries: Any) -> None:
        pass

    def shard_state(self) -> dict[str, Any]:
        return {**super().shard_state(), "sent": self.sent, "got": self.got}

    def merge_shards(self, states: Any) -> None:
        super().merge_shards(states)
        self.sent += sum(st["sent"] for st in states)
        self.got += sum(st["got"] for st in states)

    def metrics(self) -> dict[str, Any]:
        return {"sent": self.sent, "got": self.got, "lost": self.lost_messages}

    def invariants(self, lost: Any, in_flight: Any, held: list[int]) -> dict[str, Any]:
        accounted = self.got + sum(lost.values()) + len(in_flight)
        return {"conservation": {"ok": self.sent == accounted, "sent": self.sent, "accounted": accounted}}


@pytest.fixture
def stubborn(monkeypatch) -> str:
    """The stubborn scheme, registered for one test; its name."""
    monkeypatch.setitem(SCHEMES, "stubborn", Scheme(
        name="stubborn", summary="sends on ports it sees dead", source="tests", node=Stubborn,
        reporter=StubbornReporter, prepare=lambda topology, params, load: {}, topologies=("torus",)))
    return "stubborn"


@pytest.mark.parametrize("faults", [
    ["link-down@4:2:0"],  # a link of shard 0 (2-3): both its ends send on it
    ["crash@5:12"],  # node 12 (shard 1): its neighbours 13, 15, 8 (shard 1) and 0 (shard 0) send to it
    ["link-down@3:5:2", "crash@6:9", "link-up@12:5:2"],  # a link across the shards (5-9), a crash, the link back
])
def test_merging_shards_hand_the_verdict_their_losses(stubborn, faults):
    """A merged sharded run's verdict fails for the avoidable losses its shards saw, as in one process: the same
    verdict and the same loss books (each shard hands its losses over at the end)."""
    spec = RunSpec(stubborn, "torus:4x4", slots=20, seed=2, faults=FaultSchedule.parse(faults))
    one = run(spec)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=2).prepare()))
    assert many.transport["reporting"] == "merged" and one.invariants["ok"]
    assert one.fault_books is not None and sum(one.fault_books.lost["avoidable"].values()) > 0
    assert not one.verdict["ok"] and "avoidable loss" in one.verdict["reasons"][0]
    assert many.verdict == one.verdict
    assert many.fault_books == one.fault_books
    assert many.metrics == one.metrics
