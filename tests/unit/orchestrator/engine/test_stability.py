"""The stability monitor (``orchestrator/engine/_stability.py``) unit by unit.

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line fails here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import pytest

from slotnet.orchestrator.engine._stability import MIN_TREND_SLOTS, StabilityMonitor

# ------------------------------------------------------------------ StabilityMonitor


def _monitor(samples, n=1, warmup=0, per_node=1e9) -> StabilityMonitor:
    m = StabilityMonitor(n, warmup, len(samples), per_node)
    for slot, b in enumerate(samples):
        assert m.sample(slot, b)
    return m


def _pairs(means):
    """Samples whose 10 batch means (20 samples, one node) are ``means``."""
    return [x for m in means for x in (m, m)]


def test_monitor_fields_and_cap():
    m = StabilityMonitor(4, 3, 50, 2.5)
    assert (m.n_nodes, m.warmup, m.slots, m.cap, m.samples, m.stopped_at) == (4, 3, 50, 10.0, [], None)


def test_monitor_samples_only_after_warmup():
    m = StabilityMonitor(2, 3, 10, 100)
    for slot in range(6):
        assert m.sample(slot, slot * 10) is True
    assert m.samples == [30, 40, 50]


def test_monitor_cap_boundary():
    m = StabilityMonitor(4, 0, 10, 2.5)
    assert m.sample(0, 10) is True and m.stopped_at is None
    assert m.sample(1, 11) is False and m.stopped_at == 1
    assert m.samples == [10, 11]
    assert m.verdict() == {"stable": False, "reason": "backlog exceeded 2.5 packets per node", "stopped_at_slot": 1,
                           "final_backlog_per_node": 2.75}


def test_monitor_cap_during_warmup_has_no_final_backlog():
    m = StabilityMonitor(2, 5, 10, 3)
    assert m.sample(0, 7) is False
    assert m.verdict() == {"stable": False, "reason": "backlog exceeded 3 packets per node", "stopped_at_slot": 0,
                           "final_backlog_per_node": None}


def test_monitor_stopped_at_slot_zero_is_still_stopped():
    m = StabilityMonitor(1, 0, 10, 1)
    m.sample(0, 2)
    assert m.verdict()["stable"] is False


def test_monitor_too_few_samples():
    assert _monitor(list(range(19))).verdict() == {"stable": True, "reason": "too few measured slots for a trend test",
                                                   "batches": []}
    assert "batch_backlog_per_node" in _monitor(list(range(20))).verdict()


def test_monitor_uneven_batches_and_undetermined():
    v = _monitor(list(range(25))).verdict()
    assert v == {"stable": None,
                 "reason": ("undetermined: the backlog rose over 25 measured slots, too few to tell growth from "
                            "the start-up transient (at least 200 are needed)"),
                 "batch_backlog_per_node": [0.5, 3.0, 5.5, 8.0, 10.5, 13.0, 15.5, 18.0, 20.5, 23.0],
                 "increasing_steps": 9}
    assert MIN_TREND_SLOTS == 200


def test_monitor_trend_needs_min_trend_slots():
    rising = [i // 20 for i in range(200)]  # ten batches of 20, means 0..9
    v = _monitor(rising).verdict()
    assert v == {"stable": False, "reason": "backlog grows steadily",
                 "batch_backlog_per_node": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], "increasing_steps": 9}
    v = _monitor(rising[:199]).verdict()
    assert v["stable"] is None and "199 measured slots" in v["reason"]


def test_monitor_batch_means_per_node_rounded():
    v = _monitor([1] * 20, n=3).verdict()
    assert v == {"stable": True, "reason": "backlog does not grow steadily",
                 "batch_backlog_per_node": [0.3333] * 10, "increasing_steps": 0}


@pytest.mark.parametrize(("means", "stable"), [
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], None),   # 9 rising steps
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 9], None),    # 8 rising steps, one flat
    ([1, 2, 3, 4, 5, 6, 7, 8, 8, 8], True),    # 7 rising, two flat
    ([1, 2, 3, 4, 5, 6, 7, 6, 5, 9], True),    # 7 rising, two falling
    ([0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5], True),   # growth exactly 0.5
    ([0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5625], None),
    ([2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 3.0], True),      # last exactly 1.5 x first
    ([2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 3.0625], None),
])
def test_monitor_trend_thresholds(means, stable):
    v = _monitor(_pairs(means)).verdict()
    assert v["stable"] is stable


def test_monitor_trend_thresholds_long_window_says_unstable():
    means = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    v = _monitor([m for m in means for _ in range(20)]).verdict()
    assert v["stable"] is False and v["increasing_steps"] == 8
