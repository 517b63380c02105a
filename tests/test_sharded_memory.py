"""The shard protocol in one process (the in-memory shard link): no broker, same results.

The coordinator and its shards run as Trio tasks of this process, through the same slot
protocol as over MQTT (``tests/test_sharded.py`` runs that one), so these identity checks
need no mosquitto. Also here: what crosses the link (the spec field by field, the fault
schedule as data, the ledger as books) and a spec that cannot be sharded.
"""

from __future__ import annotations

import dataclasses

import pytest
import trio
from probes import register

from slotnet import FaultSchedule, NodeFailure, RunSpec, SpecError, TraceSpec, run
from slotnet.fabric import FaultLedger, decode, encode
from slotnet.nodes import Node
from slotnet.orchestrator import in_process
from slotnet.orchestrator.engine import _gc
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory
from slotnet.orchestrator.shard._wire import (
    FAULT_DERIVED,
    FAULT_ENTRIES,
    FAULT_SETTINGS,
    NOT_SENT,
    faults_from_wire,
    faults_to_wire,
    ledger_from_wire,
    ledger_to_wire,
    sent_fields,
    spec_from_wire,
    spec_to_wire,
)

#: what must not depend on how the nodes are spread
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "series", "completion", "faults", "fault_impact")

FAULTS = ["crash@30:5", "recover@50:5", "link-down@15:2:1", "link-up@40:2:1", "loss=0.02@10-70", "dup=0.02",
          "delay=0.03:2", "stall@20:24:9", "partition@60:64:0-3"]


def _in_memory(spec: RunSpec) -> dict:
    return trio.run(lambda: run_sharded_in_memory(spec.prepare())).to_dict(per_node=True, series=True)


def _compare(spec: RunSpec, shards: int) -> dict:
    one = run(spec).to_dict(per_node=True, series=True)
    many = _in_memory(dataclasses.replace(spec, shards=shards))
    assert many["transport"]["kind"] == "memory" and many["transport"]["shards"] == shards
    for key in SAME:
        assert one.get(key) == many.get(key), f"{spec.scheme} with {shards} shards: {key} differs"
    return many


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
def test_shards_in_memory_give_the_one_process_results(scheme, topology, load, params, shards):
    """Every family, 2 or 3 shards: metrics, invariants, per-node figures, series and fault
    impact equal the one-process run's, under every fault kind where the scheme runs under faults."""
    one_shot = scheme in ("pmnb", "partial-exchange", "m2o-rec")
    fragile = one_shot or scheme == "dynamic-broadcast"
    spec = RunSpec(scheme, topology, params=params, load=load, slots=5000 if one_shot else 90,
                   warmup=0 if one_shot else 10, seed=11, faults=FaultSchedule.parse([] if fragile else FAULTS))
    _compare(spec, shards)


@pytest.mark.parametrize(("scheme", "topology", "params"), [
    ("pmnb", "torus:4x4", {"active": "6"}),
    ("m2o-rec", "mesh:4x4", {"workload": "all-to-one"}),
])
def test_a_one_shot_run_quiescent_in_its_last_slot_is_complete_either_way(scheme, topology, params):
    """A run given exactly the slots it needs ends complete, in one process and over shards."""
    needed = run(RunSpec(scheme, topology, params=params, slots=5000, seed=11)).slots_run
    many = _compare(RunSpec(scheme, topology, params=params, slots=needed, seed=11), 2)
    assert many["completion"]["complete"] and many["slots_run"] == needed


def test_traces_are_identical_in_one_process_and_over_shards_in_memory(tmp_path):
    """The same run traced in one process and over 3 in-memory shards writes byte-identical files."""
    faults = FaultSchedule.parse(["crash@10:3", "recover@20:3", "loss=0.05", "dup=0.03"])
    one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
    base = dict(load={"offered": 1.0}, slots=60, seed=3, faults=faults)
    a = run(RunSpec("deflection", "hypercube:5", **base, trace=TraceSpec(str(one), nodes=frozenset({3, 17, 30}))))
    b = _in_memory(RunSpec("deflection", "hypercube:5", **base, shards=3,
                           trace=TraceSpec(str(many), nodes=frozenset({3, 17, 30}))))
    assert one.read_bytes() == many.read_bytes() and one.read_bytes().count(b"\n") > 100
    assert a.trace_fingerprint == b["trace_fingerprint"] is not None


class Raiser(Node):
    async def run(self) -> None:
        await self.ctx.next_slot()
        if self.ctx.node == 3:
            raise ZeroDivisionError("boom")
        await self.ctx.idle()


def test_a_failing_node_in_a_shard_is_the_runs_error(monkeypatch):
    """A node rule that raises in a shard ends the run with that NodeFailure, not a group around it."""
    register("raiser", Raiser, monkeypatch)
    spec = RunSpec("raiser", "hypercube:2", slots=5, shards=2)
    with pytest.raises(NodeFailure, match="node 3 failed in slot 1: ZeroDivisionError: boom"):
        trio.run(lambda: run_sharded_in_memory(spec.prepare()))


def test_overlapping_slot_loops_leave_the_gc_as_they_found_it():
    """Shards held in one process each enter the slot loop's GC settings; the last out restores them."""
    import gc

    before = gc.get_threshold()
    _compare(RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=20, seed=2), 2)
    assert gc.get_threshold() == before and _gc._depth == 0


def test_a_transport_factory_and_shards_are_refused_together():
    """``transport=`` with ``shards > 1`` is refused: a sharded run's transport is its shards'."""
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, transport=in_process, shards=2)
    with pytest.raises(SpecError, match="transport= and shards > 1"):
        spec.prepare()
    RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, transport=in_process).prepare()


def test_every_spec_field_is_sent_to_shards_or_named_as_not_sent():
    """The spec's wire form is every field of RunSpec but those NOT_SENT names (with a reason):
    a field added to RunSpec reaches the shards, or is named here on purpose."""
    names = [f.name for f in dataclasses.fields(RunSpec)]
    assert set(NOT_SENT) <= set(names) and all(NOT_SENT.values())
    assert sent_fields() == [n for n in names if n not in NOT_SENT]
    assert list(spec_to_wire(RunSpec("deflection", "hypercube:3"))) == sent_fields()


def test_the_spec_survives_the_wire_field_by_field():
    """A spec with every sent field away from its default comes back equal through the codec
    (the trace as its selection: a shard writes no file)."""
    spec = RunSpec("deflection", "hypercube:3", params={"order": "dimension"}, load={"offered": 0.5}, slots=77,
                   warmup=7, seed=5, faults=["crash@10:3", "recover@20:3", "loss=0.01@5-9", "detect=2"],
                   trace=TraceSpec("t.jsonl", nodes=frozenset({1, 2}), slots=(3, 9), kinds=frozenset({"sent"})),
                   max_backlog_per_node=50.0, series=True, node_timeout=2.5)
    defaults = RunSpec("deflection", "hypercube:3")
    for name in sent_fields():
        if name not in ("scheme", "topology"):
            assert getattr(spec, name) != getattr(defaults, name), f"set {name} in this test: it must be seen to travel"
    back = spec_from_wire(decode(encode(spec_to_wire(spec))))
    for name in sent_fields():
        if name == "trace":
            assert back.trace == dataclasses.replace(spec.trace, path="")
        else:
            assert getattr(back, name) == getattr(spec, name), name
    assert back.shards == 1 and back.transport is None


def test_the_fault_schedule_travels_as_data():
    """Every entry kind and the detection setting come back equal, without parsing text again."""
    parts = {f.name for f in dataclasses.fields(FaultSchedule)}
    assert parts == set(FAULT_ENTRIES) | set(FAULT_SETTINGS) | set(FAULT_DERIVED)
    faults = FaultSchedule.parse(["link-down@5:1:0", "link-up@9:1:0", "crash@3:2", "recover@8:2", "stall@10:12:4",
                                  "partition@2:4:0-3,6", "loss=0.1@1-5", "loss=0.2", "dup=0.1", "delay=0.3:2@4",
                                  "corrupt=0.1:undetected", "detect=never"])
    assert all(getattr(faults, part) for part in FAULT_ENTRIES)
    back = faults_from_wire(decode(encode(faults_to_wire(faults))))
    assert back == faults and back.by_slot == faults.by_slot and back.to_list() == faults.to_list()


def test_the_ledger_travels_as_its_books():
    """A shard's ledger, avoidable sub-counts included, comes back equal, and merges exactly."""
    ledger = FaultLedger()
    ledger.add("lost", "link_down", 3)
    ledger.add("lost", "avoidable:link_down", 2)
    ledger.add("duplicated", "dup", 4)
    ledger.add("delayed", "delay", 1)
    ledger.add("corrupted", "undetected", 5)
    back = ledger_from_wire(decode(encode(ledger_to_wire(ledger))))
    assert ledger_to_wire(back) == ledger_to_wire(ledger) and back.avoidable == {"link_down": 2}
    total = FaultLedger()
    total.merge(back)
    total.merge(back)
    assert total.lost == {"link_down": 6, "avoidable:link_down": 4} and dict(total) == {"link_down": 6, "dup": -8}
