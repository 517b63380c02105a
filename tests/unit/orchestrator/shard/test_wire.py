"""What crosses a shard link (``orchestrator/shard/_wire.py``): the spec field by field, the
fault schedule as data, the ledger as books; and the GC settings of overlapping slot loops.
"""

from __future__ import annotations

import dataclasses

from slotnet import FaultSchedule, RunSpec, TraceSpec, run
from slotnet.fabric import FaultLedger, decode, encode
from slotnet.orchestrator.engine import _gc
from slotnet.orchestrator.shard import run_sharded_in_memory
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


def test_overlapping_slot_loops_leave_the_gc_as_they_found_it():
    """Shards held in one process each enter the slot loop's GC settings; the last out restores them."""
    import gc

    import trio

    before = gc.get_threshold()
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=20, seed=2)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=2).prepare()))
    assert many.to_dict()["metrics"] == run(spec).to_dict()["metrics"]
    assert gc.get_threshold() == before and _gc._depth == 0


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
                   max_backlog_per_node=50.0, series=True, node_timeout=2.5, rng="mt")
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
