"""The sharded slot's timing split (``_timing``): off unless SLOTNET_SHARD_TIMING asks; laps
charge the time since the last lap to a part; a timed run's transport says where time went."""

from __future__ import annotations

import time

import pytest
import trio

from slotnet import RunSpec
from slotnet.orchestrator.shard import _timing
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory


def test_timing_is_off_unless_asked(monkeypatch):
    """No variable, empty or 0: no split; 1: a split."""
    monkeypatch.delenv(_timing.ENV, raising=False)
    assert _timing.split() is None
    for off in ("", "0"):
        monkeypatch.setenv(_timing.ENV, off)
        assert _timing.split() is None
    monkeypatch.setenv(_timing.ENV, "1")
    assert isinstance(_timing.split(), _timing.Split)


def test_laps_charge_the_time_since_the_last_lap():
    """Each lap adds the seconds since the previous lap (or a restart) to its part, and to it alone."""
    s = _timing.Split()
    time.sleep(0.02)
    s.lap("a")
    s.restart()
    s.lap("b")
    time.sleep(0.02)
    s.lap("a")
    assert set(s.seconds) == {"a", "b"}
    assert s.seconds["a"] >= 0.04 and s.seconds["b"] < 0.02


def _transport(monkeypatch, value: str | None) -> dict:
    if value is None:
        monkeypatch.delenv(_timing.ENV, raising=False)
    else:
        monkeypatch.setenv(_timing.ENV, value)
    spec = RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=20, seed=2, shards=2)
    return trio.run(lambda: run_sharded_in_memory(spec.prepare())).transport


def test_a_timed_run_says_where_its_slots_went(monkeypatch):
    """Asked for, the transport holds every shard's parts and the coordinator's; not asked, no key."""
    assert "timing" not in _transport(monkeypatch, None)
    timing = _transport(monkeypatch, "1")["timing"]
    assert len(timing["shards"]) == 2
    assert all(set(s) == set(_timing.SHARD_PARTS) and all(v >= 0 for v in s.values()) for s in timing["shards"])
    assert set(timing["coordinator"]) == {"waiting", "coordinator"}
    # and each shard's node work slot by slot (slots 1 to 19: slot 0 is the nodes' start), adding up to its part
    slots = timing["node_work_slots"]
    assert [len(s) for s in slots] == [19, 19]
    for per_slot, parts in zip(slots, timing["shards"]):
        assert sum(per_slot) == pytest.approx(parts["node_work"]) and min(per_slot) > 0
