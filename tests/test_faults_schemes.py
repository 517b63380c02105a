"""Schemes under faults: bcast-indirect after a stall, star's unicast books under crashes."""

from __future__ import annotations

import pytest

from slotnet import RunSpec, run


def _indirect(faults: list[str], seed: int, slots: int = 28, rho: float = 0.6, d: int = 3, **params: str):
    return run(RunSpec("bcast-indirect", f"hypercube:{d}", load={"rho": rho}, params=dict(params), slots=slots,
                       seed=seed, faults=faults))


def test_indirect_resumes_from_the_current_slot_after_a_stall():
    """The stall that made node 6 ask for a wake-up in the past: the run ends, every broadcast accounted for."""
    r = _indirect(["stall@25:26:6"], seed=8448)
    ex = r.invariants["exactly_once"]
    assert r.invariants["ok"], ex
    assert ex["duplicate_receptions"] == 0 and ex["unknown_packets"] == 0
    assert ex["completed"] + ex["missed"] + ex["in_progress"] == ex["broadcasts"]


@pytest.mark.parametrize("rule", ["D", "Dprime"])
def test_indirect_drops_and_counts_the_broadcast_sends_a_stall_took(rule):
    """Long stalls at busy nodes: the forwards and starts due in the stall are dropped and counted, never sent late."""
    missed = 0
    for seed in range(6):
        for node in (1, 2, 6):  # 1, 2: roots of trees 0, 1 (Rule F starts); 6: a forwarding node
            r = _indirect([f"stall@20:31:{node}"], seed=seed, slots=80, rho=0.7, rule=rule)
            ex = r.invariants["exactly_once"]
            assert r.invariants["ok"], (seed, node, ex)
            assert ex["completed"] + ex["missed"] + ex["in_progress"] == ex["broadcasts"]
            missed += ex.get("sends_missed_while_stalled", 0)
            if ex.get("sends_missed_while_stalled"):
                assert ex["lost_to_faults"] == ex["missed"]
    assert missed > 0


def test_indirect_non_idling_runs_through_a_stall():
    """The non-idling version has no schedule to miss: a stall only loses what reached the stalled node."""
    for seed in range(4):
        r = _indirect(["stall@10:25:3"], seed=seed, slots=60, idling="false")
        assert r.invariants["ok"], r.invariants


def test_indirect_without_faults_reports_no_stall_keys():
    """A fault-free run has none of the stall books."""
    ex = _indirect([], seed=3, slots=60).invariants["exactly_once"]
    assert ex["ok"] and "sends_missed_while_stalled" not in ex
