"""The garbage collector's settings during a slot loop (``orchestrator/engine/_gc.py``).

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line fails here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import gc

import pytest

from slotnet.orchestrator.engine import _gc
from slotnet.orchestrator.engine._invariants import (
    AGREEMENT_WIDTHS,
    theory_agreement,
)
from slotnet.schemes._base import Claim

# ------------------------------------------------------------------ quiet_gc


def test_quiet_gc_collects_only_the_young_generations_before_freezing(monkeypatch):
    """Entering the slot loop collects generations 0 and 1 only: a full collection walks the whole process."""
    calls = []
    monkeypatch.setattr(_gc.gc, "collect", lambda *a: calls.append(a) or 0)
    with _gc.quiet_gc(), _gc.quiet_gc():
        pass
    assert calls == [(1,)]


def test_quiet_gc_young_threshold_grows_with_the_network():
    """The young threshold is 20 per node from 2,501 nodes on (50,000 below): a big network's
    collections would otherwise come ever more often, each walking more live objects."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        for nodes, young in ((0, 50_000), (2_500, 50_000), (2_501, 50_020), (65_536, 1_310_720)):
            with _gc.quiet_gc(nodes):
                assert gc.get_threshold() == (young, 11, 12)
            assert gc.get_threshold() == (700, 11, 12)
        gc.set_threshold(2_000_000, 11, 12)
        with _gc.quiet_gc(65_536):
            assert gc.get_threshold() == (2_000_000, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_quiet_gc_sets_and_restores(monkeypatch):
    before = gc.get_threshold()
    assert _gc._depth == 0
    try:
        gc.set_threshold(700, 11, 12)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (50_000, 11, 12)
            assert gc.get_freeze_count() > 0
            assert _gc._depth == 1 and _gc._saved == (700, 11, 12)
            with _gc.quiet_gc():
                assert _gc._depth == 2
                assert gc.get_threshold() == (50_000, 11, 12)
            assert _gc._depth == 1
            assert gc.get_threshold() == (50_000, 11, 12) and gc.get_freeze_count() > 0
        assert _gc._depth == 0
        assert gc.get_threshold() == (700, 11, 12) and gc.get_freeze_count() == 0
        gc.set_threshold(80_000, 5, 6)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (80_000, 5, 6)
        gc.set_threshold(49_999, 5, 6)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (50_000, 5, 6)
        with pytest.raises(KeyError), _gc.quiet_gc():
            raise KeyError("x")
        assert _gc._depth == 0 and gc.get_threshold() == (49_999, 5, 6) and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)



# ------------------------------------------------------------------ building


def test_building_keeps_the_collector_off_and_freezes_what_was_built():
    """No collection runs while a network is built; what it built is frozen after, the collector back on."""
    assert gc.isenabled() and _gc._builds == 0
    try:
        with _gc.building():
            assert not gc.isenabled()
            built = [[i] for i in range(1000)]
            with _gc.building():  # a second shard's build in the same process
                assert not gc.isenabled() and _gc._builds == 2
            assert not gc.isenabled() and gc.get_freeze_count() == 0  # the last out freezes
        assert gc.isenabled() and _gc._builds == 0
        assert gc.get_freeze_count() >= len(built)
    finally:
        gc.unfreeze()


def test_building_that_fails_freezes_nothing_and_restores_the_collector():
    """A build that raises leaves its objects to the collector, and the collector as it found it."""
    try:
        with pytest.raises(KeyError), _gc.building():
            raise KeyError("x")
        assert gc.isenabled() and gc.get_freeze_count() == 0 and _gc._builds == 0
        gc.disable()  # a caller that runs with the collector off keeps it off
        with _gc.building():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_collector_off_keeps_it_off_until_the_last_overlapping_body_ends():
    """No automatic collection inside; the collector is back on only when the last of two overlapping bodies ends."""
    assert gc.isenabled()
    try:
        first, second = _gc.collector_off(), _gc.collector_off()
        first.__enter__()
        assert not gc.isenabled()
        second.__enter__()
        first.__exit__(None, None, None)  # the shards of an in-memory run end in any order
        assert not gc.isenabled()
        second.__exit__(None, None, None)
        assert gc.isenabled() and _gc._offs == 0
        gc.disable()
        with _gc.collector_off():
            pass
        assert not gc.isenabled()  # a collector that was off stays off
    finally:
        gc.enable()


def test_agreement_a_bound_met_exactly_at_its_slack_holds():
    # th = 10, half-width 0.125: the slack is 4 x 0.125 + 1e-9 x 10; a value exactly at th + slack is no violation
    slack = AGREEMENT_WIDTHS * 0.125 + 0.0 + 1e-9 * 10.0
    for kind, sim in (("upper-bound", 10.0 + slack), ("lower-bound", 10.0 - slack)):
        c = Claim("w", "delay", kind)
        assert theory_agreement([c], {"w": 10.0}, {"delay": sim, "delay_ci95": 0.125}, True)["ok"] is True, kind
