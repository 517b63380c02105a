"""A one-shot task's completion (``engine/_completion.py``) and its place in ``collect``, on stand-in parts."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from slotnet.fabric import FaultLedger
from slotnet.orchestrator import RunSpec
from slotnet.orchestrator.engine._collect import EndState, collect
from slotnet.orchestrator.engine._completion import LastEvents, Waiting, completion
from slotnet.orchestrator.engine._stability import StabilityMonitor
from slotnet.schemes._base import Claim


def _prep(until="quiescent", cap=None, quantum=1, done=None, claims=None, theory=None, warmup=0):
    spec = RunSpec("deflection", "hypercube:3", slots=100, warmup=warmup, seed=5)  # a real spec: provenance reads it
    scheme = SimpleNamespace(name="sch", theory=theory, claims=claims, until=until, done=done)
    return SimpleNamespace(spec=spec, scheme=scheme, setup=SimpleNamespace(load={}), cap=cap, quantum=quantum,
                           topology=SimpleNamespace(describe=lambda: {"kind": "ring"}), slots=100, params={})


def _c(prep, quiet=True, last_active=30, slots_run=40, stability=None, **kw):
    return completion(prep, None, quiet=quiet, last_active=last_active, slots_run=slots_run,
                      stability=stability or {"stable": True}, **kw)


def test_nothing_for_a_run_of_slots():
    """A scheme that runs for its slots has no completion, and its reporter judges a complete run."""
    c = _c(_prep(until="slots"), waiting=[Waiting(1, 0)])
    assert c.record is None and c.complete and c.invariant is None


def test_quiet_with_every_node_returned_is_complete():
    """Quiet and nobody waiting: complete at the last active slot, time in paper units."""
    c = _c(_prep(quantum=4, cap=500))
    assert c.record == {"complete": True, "slot": 30, "time": 7.5} and c.complete and c.invariant is None


def test_quiet_with_nodes_waiting_is_a_deadlock():
    """Quiet with live nodes parked and no predicate: a deadlock naming each waiting node, its wait and since when."""
    events = LastEvents()
    events.wrap({"got": lambda node, slot, x: None})["got"](2, 7, (1, 2))
    c = _c(_prep(cap=400), waiting=[Waiting(4, 3), Waiting(2, 7, 50)], down=[5], last_events=events)
    assert not c.complete and c.deadlock
    r = c.record
    assert r["ended_by"] == "deadlock" and r["stopped_at_slot"] == 39 and r["complete"] is False and r["cap"] == 400
    assert r["waiting"] == [
        {"node": 2, "waits_for": "a message or slot 50", "since": 7, "last_event": {"slot": 7, "kind": "got",
                                                                                   "values": [[1, 2]]}},
        {"node": 4, "waits_for": "a message", "since": 3, "last_event": None}]
    assert r["down"] == [5]
    assert c.invariant["ok"] is False and c.invariant["waiting"] == [2, 4] and "node 2" in c.invariant["why"]


def test_a_predicate_decides_a_quiet_run_with_nodes_waiting():
    """Scheme.done, asked with the reporter, makes a quiet run with parked nodes complete (True) or a deadlock (False)."""
    asked = []
    ok = _c(_prep(done=lambda rep: asked.append(rep) or True), waiting=[Waiting(0, 0)])
    assert ok.complete and ok.record["complete"] is True and asked == [None]
    bad = _c(_prep(done=lambda rep: False), waiting=[Waiting(0, 0)])
    assert not bad.complete and bad.record["ended_by"] == "deadlock"


def test_not_quiet_ends_by_slots_cap_or_monitor():
    """A run that never went quiet is incomplete, ended by the slots given, the cap, or the stability monitor."""
    assert _c(_prep(), quiet=False).record == {"complete": False, "slot": None, "time": None, "stopped_at_slot": 39,
                                               "ended_by": "slots"}
    assert _c(_prep(cap=400), quiet=False).record["ended_by"] == "cap"
    c = _c(_prep(cap=400), quiet=False, stability={"stable": False, "stopped_at_slot": 3})
    assert c.record["ended_by"] == "unstable" and c.record["cap"] == 400 and c.invariant is None


@given(st.lists(st.integers(0, 63), unique=True, max_size=8), st.booleans(), st.booleans())
def test_deadlock_exactly_when_quiet_with_waiting_nodes(waiting, quiet, has_done):
    """Without a predicate a one-shot run is complete iff quiet with nobody waiting; a predicate that holds excuses waiters."""
    prep = _prep(done=(lambda rep: True) if has_done else None)
    c = _c(prep, quiet=quiet, waiting=[Waiting(v, 0) for v in waiting])
    assert c.complete == (quiet and (not waiting or has_done))
    assert c.deadlock == (quiet and bool(waiting) and not has_done)
    assert (c.invariant is not None) == c.deadlock


# ---------------------------------------------------------------- collect: once


class _Reporter:
    events: dict[str, Any] = {}

    def __init__(self, metrics=None):
        self._metrics = metrics or {}
        self.ended: list[tuple[int, bool]] = []

    def handlers(self):
        return {}

    def run_ended(self, last, complete):
        self.ended.append((last, complete))

    def crash_losses(self, crashed):
        pass

    def packet_books(self):
        return []

    def holdings(self, per_node):
        pass

    def invariants(self, ledger, in_flight, held):
        return {"books": {"ok": True}}

    def metrics(self):
        return dict(self._metrics)

    def per_node(self):
        return {}

    def series(self):
        return []


def _end(**kw):
    return EndState(ledger=FaultLedger(), in_flight=[], held=[], held_packets=[], delivered=0, wakeups=0,
                    transport={"kind": "inprocess"}, **kw)


def _collect(prep, end, reporter=None):
    return collect(prep, reporter or _Reporter(), StabilityMonitor(4, 0, 100, 1000.0), 40, 1.0, end)


def test_collect_deadlock_fails_the_invariants():
    """A deadlock's termination invariant makes invariants.ok false, and the reporter judges an incomplete task."""
    rep = _Reporter()
    r = _collect(_prep(), _end(quiet=True, last_active=3, waiting=[Waiting(1, 0)]), rep)
    assert rep.ended == [(39, False)]
    assert r.invariants["termination"]["ok"] is False and r.invariants["ok"] is False and not r.ok
    assert r.complete is False and r.completion["waiting"][0]["node"] == 1
    assert r.metrics["completion_time"] is None
    assert r.note.startswith("deadlock at slot 39") and "node 1 waits for a message since slot 0" in r.note


def test_collect_complete_sets_the_completion_time():
    """A complete task's completion time is a metric unless the scheme gives its own."""
    r = _collect(_prep(quantum=4), _end(quiet=True, last_active=30))
    assert r.completion == {"complete": True, "slot": 30, "time": 7.5} and r.metrics["completion_time"] == 7.5
    r = _collect(_prep(), _end(quiet=True, last_active=30), _Reporter({"completion_time": 99}))
    assert r.metrics["completion_time"] == 99 and r.ok


def _bound_claims(setup, theory):
    return [Claim("t", "completion_time", "upper-bound")]


def test_collect_judges_the_completion_time_claim_once():
    """The claims are judged once, with the completion time already a metric: a bound it breaks fails, one it keeps holds."""
    r = _collect(_prep(claims=_bound_claims, theory=lambda s: {"t": 20.0}), _end(quiet=True, last_active=30))
    ta = r.invariants["theory_agreement"]
    assert ta["ok"] is False and ta["rows"][0]["simulation"] == 30.0 and r.invariants["ok"] is False
    r = _collect(_prep(claims=_bound_claims, theory=lambda s: {"t": 40.0}), _end(quiet=True, last_active=30))
    assert r.invariants["theory_agreement"]["ok"] is True and r.invariants["ok"] is True


def test_collect_does_not_judge_an_incomplete_task():
    """A task cut short reports its claims unjudged (its completion time is None, not a time it took)."""
    r = _collect(_prep(claims=_bound_claims, theory=lambda s: {"t": 20.0}), _end(quiet=False, last_active=30))
    assert r.metrics["completion_time"] is None
    assert r.invariants["theory_agreement"]["ok"] is True and r.invariants["ok"] is True
