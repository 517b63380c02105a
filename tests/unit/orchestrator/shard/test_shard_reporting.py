"""Where a sharded run's events are reported: on the shards (merged) or at the coordinator (replayed).

A reporter class that declares ``merges_shards`` runs on every shard and the coordinator
merges; a subclass that does not declare it again, a scheme that states properties, or a
reporter that declares it without the methods keep the replay path or are refused; either
way the result is the one-process result.
"""

from __future__ import annotations

import dataclasses

import pytest
import trio

from slotnet import RunSpec, SlotnetError, run
from slotnet.orchestrator.engine._open import merges_on_shards
from slotnet.orchestrator.shard import run_sharded_in_memory
from slotnet.orchestrator.shard._coordinator import _summaries
from slotnet.orchestrator.shard._link import Done
from slotnet.schemes import SCHEMES
from slotnet.schemes.deflection.reporter import DeflectionReporter
from slotnet.schemes.kit.properties import AtEnd

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
