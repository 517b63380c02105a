"""Schemes under faults: bcast-indirect after a stall, star's unicast books under crashes."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, TraceSpec, run


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


def _star(faults: list[str], seed: int, slots: int = 40, **params: str):
    return run(RunSpec("star", "torus:4x4", load={"rho": 0.7}, params={"lam_unicast": "0.1", **params}, slots=slots,
                       seed=seed, faults=faults))


def test_star_books_the_unicasts_a_crashed_node_held():
    """The crash of node 5 at slot 20 destroys a queued unicast: the unicast book names it lost to the crash."""
    r = _star(["crash@20:5"], seed=2, discipline="fcfs")  # a seed whose run has a unicast queued at node 5 then
    cons = r.invariants["unicast_conservation"]
    assert r.invariants["ok"], cons
    assert cons["lost"].get("crash", 0) == 1 <= r.fault_impact["messages"]["lost"]["crash"]
    assert cons["born"] == cons["delivered"] + cons["in_flight"] + cons["held"] + sum(cons["lost"].values())
    assert r.fault_impact["packets"]["unicast_conservation"]["lost_to_faults"] == sum(cons["lost"].values())


@pytest.mark.parametrize("discipline", ["fcfs", "priority"])
def test_star_unicast_books_close_under_crashes_with_and_without_recovery(discipline):
    """Crashes of loaded nodes, restarted or not: born == delivered + in flight + held + lost by cause, every seed."""
    crashed = 0
    for seed in range(6):
        for faults in (["crash@15:5"], ["crash@15:5", "recover@22:5"], ["crash@10:0", "crash@12:9", "recover@30:0"]):
            cons = _star(faults, seed=seed, discipline=discipline).invariants["unicast_conservation"]
            assert cons["ok"], (seed, faults, cons)
            crashed += cons["lost"].get("crash", 0)
    assert crashed > 0


def test_star_unicast_names_stay_unique_across_a_restart(tmp_path):
    """A restarted node numbers its unicasts after its earlier incarnation's: no name carries two packets."""
    path = tmp_path / "t.jsonl"
    run(RunSpec("star", "torus:4x4", load={"rho": 0.3}, params={"lam_unicast": "0.3"}, slots=40, seed=2,
                faults=["crash@10:5", "recover@12:5"], trace=TraceSpec(str(path), kinds=frozenset({"sent"}))))
    births: dict[tuple[int, int], set[float]] = {}
    for line in path.read_text().splitlines():
        ev = json.loads(line)
        msg = ev.get("message")
        if ev.get("event") == "sent" and isinstance(msg, list) and len(msg) == 6 and msg[0] < 0:
            births.setdefault((msg[0], msg[1]), set()).add(msg[4])
    assert any(origin == -6 for origin, _ in births)  # node 5 sent unicasts
    assert all(len(taus) == 1 for taus in births.values()), {k: v for k, v in births.items() if len(v) > 1}
