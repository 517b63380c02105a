"""One identity suite over both shard links: a sharded run gives the one-process result.

Every test here runs over the in-memory link (``run_sharded_in_memory``: the coordinator and
its shards as Trio tasks of this process, the verified fake) and over MQTT (``slotnet.run``
with ``shards > 1``: a private mosquitto, one process per shard), through the same slot
protocol. The MQTT cases skip where mosquitto is not installed and, spawning processes,
the per-family sweep over MQTT is marked slow.
"""

from __future__ import annotations

import dataclasses

import pytest
import trio

from slotnet import FaultSchedule, NodeFailure, RunSpec, SpecError, TraceSpec, run
from slotnet.nodes import Node
from slotnet.orchestrator import in_process
from slotnet.orchestrator.shard import run_sharded_in_memory
from tests.support.mosquitto import needs_mosquitto
from tests.support.probes import register

#: what must not depend on how the nodes are spread
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "series", "completion", "faults", "fault_impact",
        "verdict")

FAULTS = ["crash@30:5", "recover@50:5", "link-down@15:2:1", "link-up@40:2:1", "loss=0.02@10-70", "dup=0.02",
          "delay=0.03:2", "stall@20:24:9", "partition@60:64:0-3"]


def _in_memory(spec: RunSpec) -> dict:
    return trio.run(lambda: run_sharded_in_memory(spec.prepare())).to_dict(per_node=True, series=True)


def _over_mqtt(spec: RunSpec) -> dict:
    return run(spec).to_dict(per_node=True, series=True)


#: each link's runner and the transport kind its result names
LINKS = {"memory": (_in_memory, "memory"), "mqtt": (_over_mqtt, "mqtt")}

#: every test takes ``link``: the in-memory link, and MQTT where mosquitto is installed
BOTH = [pytest.param("memory", id="memory"), pytest.param("mqtt", id="mqtt", marks=needs_mosquitto)]


def _sharded(link: str, spec: RunSpec) -> dict:
    runner, kind = LINKS[link]
    many = runner(spec)
    assert many["transport"]["kind"] == kind and many["transport"]["shards"] == spec.shards
    return many


def _compare(link: str, spec: RunSpec, shards: int) -> dict:
    one = run(spec).to_dict(per_node=True, series=True)
    many = _sharded(link, dataclasses.replace(spec, shards=shards))
    for key in SAME:
        assert one.get(key) == many.get(key), f"{spec.scheme} with {shards} shards over {link}: {key} differs"
    return many


@pytest.mark.parametrize("link", [pytest.param("memory", id="memory"),
                                  pytest.param("mqtt", id="mqtt", marks=[needs_mosquitto, pytest.mark.slow])])
@pytest.mark.parametrize(("scheme", "topology", "load", "params", "shards"), [
    ("deflection", "hypercube:4", {"offered": 1.0}, {}, 3),
    ("deflection", "hypercube:4", {"lam": 1.2}, {}, 2),
    ("bcast-dtree", "hypercube:4", {"rho": 0.5}, {}, 3),
    ("bcast-indirect", "hypercube:4", {"rho": 0.4}, {}, 2),
    ("bcast-periodic", "hypercube:4", {"rho": 0.3}, {"variant": "mnb"}, 3),
    ("star", "torus:4x4", {"rho": 0.6}, {"lam_unicast": "0.05"}, 2),
    ("pmnb", "torus:4x4", {}, {"active": "6"}, 3),
    ("partial-exchange", "mesh:4x4", {}, {"active": "4"}, 2),
    ("dynamic-broadcast", "torus:4x4", {"rho": 0.3}, {}, 3),
    ("m2o-rec", "mesh:4x4", {}, {"workload": "all-to-one"}, 2),
])
def test_shards_give_the_one_process_results(link, scheme, topology, load, params, shards):
    """Every family, 2 or 3 shards, over either link: metrics, invariants, per-node figures, series,
    fault impact and the verdict (its fault rules judged from the shards' losses and events, replayed or merged)
    equal the one-process run's, under every fault kind where the scheme runs
    under faults (the one-shot and Varvarigos-Bertsekas schemes refuse message faults up front)."""
    one_shot = scheme in ("pmnb", "partial-exchange", "m2o-rec")
    fragile = one_shot or scheme == "dynamic-broadcast"
    spec = RunSpec(scheme, topology, params=params, load=load, slots=5000 if one_shot else 90,
                   warmup=0 if one_shot else 10, seed=11, faults=FaultSchedule.parse([] if fragile else FAULTS))
    _compare(link, spec, shards)


@pytest.mark.parametrize("link", BOTH)
@pytest.mark.parametrize(("scheme", "topology", "params"), [
    ("pmnb", "torus:4x4", {"active": "6"}),
    ("m2o-rec", "mesh:4x4", {"workload": "all-to-one"}),
])
def test_a_one_shot_run_quiescent_in_its_last_slot_is_complete_either_way(link, scheme, topology, params):
    """A run given exactly the slots it needs ends complete, in one process and over shards."""
    needed = run(RunSpec(scheme, topology, params=params, slots=5000, seed=11)).slots_run
    many = _compare(link, RunSpec(scheme, topology, params=params, slots=needed, seed=11), 2)
    assert many["completion"]["complete"] and many["slots_run"] == needed


@pytest.mark.parametrize("link", BOTH)
def test_traces_are_identical_in_one_process_and_over_shards(link, tmp_path):
    """The same run traced in one process and over 3 shards writes byte-identical files."""
    faults = FaultSchedule.parse(["crash@10:3", "recover@20:3", "loss=0.05", "dup=0.03"])
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    base = dict(load={"offered": 1.0}, slots=60, seed=3, faults=faults)
    a = run(RunSpec("deflection", "hypercube:5", **base, trace=TraceSpec(str(one), nodes=frozenset({3, 17, 30}))))
    b = _sharded(link, RunSpec("deflection", "hypercube:5", **base, shards=3,
                               trace=TraceSpec(str(many), nodes=frozenset({3, 17, 30}))))
    assert one.read_bytes() == many.read_bytes() and one.read_bytes().count(b"\n") > 100
    assert a.trace_fingerprint == b["trace_fingerprint"] is not None


@pytest.mark.parametrize("link", BOTH)
def test_multi_tick_losses_are_judged_alike_over_shards(link):
    """Partial exchange (quantum 8: a packet holds its link 8 ticks) under a crash, a dead link and message
    faults: which losses were avoidable is judged by the tick each message was started in, in one process
    and over 2 shards alike (a message crossing shards carries that tick with its due slot)."""
    faults = ["link-down@5:1:0", "link-up@20:1:0", "crash@8:2", "recover@25:2", "loss=0.02", "dup=0.02",
              "delay=0.02:2"]
    spec = RunSpec("partial-exchange", "mesh:4x4", slots=60, warmup=10, seed=1, faults=FaultSchedule.parse(faults))
    one = run(spec)
    assert one.fault_impact["messages"]["lost"]["node_down"] >= 1 and one.fault_impact["avoidable"] == {}
    _compare(link, spec, 2)


class Raiser(Node):
    async def run(self) -> None:
        await self.ctx.next_slot()
        if self.ctx.node == 3:
            raise ZeroDivisionError("boom")
        await self.ctx.idle()


def test_a_failing_node_in_a_shard_is_the_runs_error(monkeypatch):
    """A node rule that raises in a shard ends the run with that NodeFailure, not a group around it (in
    memory only: a scheme registered by a test does not reach shard processes)."""
    register("raiser", Raiser, monkeypatch)
    spec = RunSpec("raiser", "hypercube:2", slots=5, shards=2)
    with pytest.raises(NodeFailure, match="node 3 failed in slot 1: ZeroDivisionError: boom"):
        trio.run(lambda: run_sharded_in_memory(spec.prepare()))


def test_a_transport_factory_and_shards_are_refused_together():
    """``transport=`` with ``shards > 1`` is refused: a sharded run's transport is its shards'."""
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, transport=in_process, shards=2)
    with pytest.raises(SpecError, match="transport= and shards > 1"):
        spec.prepare()
    RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, transport=in_process).prepare()
