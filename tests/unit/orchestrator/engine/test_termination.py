"""Termination, not quiescence: a user's one-shot task is done when its live nodes return.

A run that goes quiet with live nodes still waiting is a deadlock, named node by node,
in one process and over shards alike; crashed nodes are not waited for.
"""

from __future__ import annotations

import json

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, run
from slotnet.orchestrator.engine import verdict
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory
from tests.support.user_ring import NeverReturns, NobodyStarts, TokenRing, user_scheme

N = 6


def test_the_ring_completes_when_every_node_has_returned():
    """The correct token ring is complete in the slot the token comes back, every node done, the verdict ok."""
    with user_scheme("ring-ok", TokenRing) as name:
        r = run(RunSpec(name, f"torus:{N}"))
    assert r.completion == {"complete": True, "slot": N, "time": float(N)}
    assert r.metrics["done"] == list(range(N)) and r.ok and verdict(r).ok


def test_everyone_waiting_is_a_deadlock_not_completion():
    """Nobody starts the token: quiet at slot 0 with all six nodes waiting for a message, complete false, verdict fails."""
    with user_scheme("ring-stuck", NobodyStarts) as name:
        r = run(RunSpec(name, f"torus:{N}"))
    c = r.completion
    assert c["complete"] is False and c["ended_by"] == "deadlock" and c["stopped_at_slot"] == 0
    assert [(w["node"], w["waits_for"], w["since"]) for w in c["waiting"]] == [(v, "a message", 0) for v in range(N)]
    assert r.invariants["termination"]["ok"] is False and not r.ok
    v = verdict(r)
    assert not v.ok and any(x.startswith("deadlock at slot 0: 6 live node(s)") for x in v.reasons)
    assert r.note.startswith("deadlock at slot 0")


def test_the_deadlock_names_each_nodes_last_event():
    """A node that recorded something before it got stuck shows that event as its last."""
    with user_scheme("ring-lost", TokenRing) as name:
        r = run(RunSpec(name, f"torus:{N}", faults=["crash@3:3"]))
    waiting = {w["node"]: w for w in r.completion["waiting"]}
    assert sorted(waiting) == [0, 4, 5] and r.completion["down"] == [3]
    assert waiting[0]["last_event"] is None  # node 0 sent the token and recorded nothing yet


def test_a_node_that_never_returns_leaves_the_task_incomplete():
    """A node stepping forever after its part keeps the run busy: ended by its slots, incomplete, verdict fails."""
    with user_scheme("ring-busy", NeverReturns) as name:
        r = run(RunSpec(name, f"torus:{N}", slots=40))
    assert r.completion["complete"] is False and r.completion["ended_by"] == "slots"
    assert r.invariants["ok"]  # nothing unaccounted: not a deadlock, only not done
    assert not verdict(r).ok and verdict(r).reasons == ("task incomplete: its slots ended the run at slot 39 before "
                                                         "the task completed",)


def _expected_deadlock(slot: int, node: int) -> bool:
    """Node 0 sends in slot 0 and node v forwards in slot v: a crash before that loses the token."""
    return slot <= node if node else slot == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 8), st.integers(0, N - 1))
def test_a_crash_loses_the_token_exactly_when_it_strikes_first(slot, node):
    """Under crash@S:V the live nodes that never finished are named, the crashed one is not, and the verdict matches."""
    with user_scheme("ring-crash", TokenRing) as name:
        r = run(RunSpec(name, f"torus:{N}", faults=[f"crash@{slot}:{node}"]))
    deadlock = _expected_deadlock(slot, node)
    assert (r.completion.get("ended_by") == "deadlock") == deadlock
    assert r.complete is (not deadlock) and verdict(r).ok is (not deadlock)
    if deadlock:
        waiting = [w["node"] for w in r.completion["waiting"]]
        done = r.metrics["done"]
        assert node not in waiting and r.completion["down"] == [node]
        assert sorted(waiting + done + [node]) == list(range(N))  # every node: waiting, done, or down


def test_a_sharded_run_reports_the_same_deadlock():
    """Over two shards (in memory) the deadlock and its waiting nodes are those of the one-process run."""
    with user_scheme("ring-shards", TokenRing) as name:
        spec = RunSpec(name, f"torus:{N}", faults=["crash@2:2"], seed=1)
        one = run(spec).to_dict()
        import dataclasses

        two = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=2).prepare())).to_dict()
    assert one["completion"]["ended_by"] == "deadlock"
    assert json.dumps(one["completion"], sort_keys=True) == json.dumps(two["completion"], sort_keys=True)
    assert one["invariants"] == two["invariants"]
