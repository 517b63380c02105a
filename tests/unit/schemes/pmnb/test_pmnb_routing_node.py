"""packing and monotone's node (:class:`slotnet.schemes.pmnb.node.RoutingNode`) and its reporter:
deliveries counted once, a restart, a stall, and packets whose phases are over."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.orchestrator.tools._trace_query import read_trace
from slotnet.schemes import SCHEMES
from slotnet.schemes.pmnb.node import RoutingNode

#: links that fail for good at slot 0 (node, port): some packets can no longer be moved
DOWN = [f"link-down@0:{v}:{p}" for v, p in ((5, 0), (6, 2), (9, 1))]
TOPOLOGY = {"packing": "mesh:4x4", "monotone": "torus:4x4"}


class _Twice:
    """A context whose ``arrive`` records come twice (the planted bug: a packet delivered twice)."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def record(self, kind: str, *values: Any) -> None:
        self._ctx.record(kind, *values)
        if kind == "arrive":
            self._ctx.record(kind, *values)


class _DeliversTwice(RoutingNode):
    async def run(self) -> None:
        if self.ctx.node == 0:  # node 0 is packing's rank-0 node: a packet always arrives there
            self.ctx = _Twice(self.ctx)  # type: ignore[assignment]
        await super().run()


def _events(path: Path) -> list[dict[str, Any]]:
    return list(read_trace(path))


@pytest.mark.parametrize("scheme", ["packing", "monotone"])
def test_a_packet_delivered_twice_to_one_node_fails_delivered_exactly_once(monkeypatch, scheme):
    """A fault-free run whose node 0 records its packet's arrival twice: ``delivered_exactly_once`` fails."""
    monkeypatch.setitem(SCHEMES, scheme, replace(SCHEMES[scheme], node=_DeliversTwice))
    params = {"rank": "given"} if scheme == "packing" else {"rank": "given", "targets": "corner"}
    r = run(RunSpec(scheme, TOPOLOGY[scheme], params=params, seed=1))
    check = r.invariants["delivered_exactly_once"]
    assert r.invariants["ok"] is False
    assert check["ok"] is False and check["wrong"] >= 1 and check["missing"] == 0


@pytest.mark.parametrize(("scheme", "faults", "phase"), [
    ("packing", ["crash@3:5", "recover@5:5"], "scan"),
    ("packing", ["crash@14:5", "recover@15:5"], "routing"),
    ("monotone", ["crash@20:5", "recover@22:5"], "routing"),
])
def test_a_node_restarted_after_a_crash_stops_for_good(tmp_path, scheme, faults, phase):
    """A restarted routing node has lost its place in the schedule: it records one stop in the phase it came
    back in, sends nothing from then on, and the run still completes when the schedule ends."""
    trace = tmp_path / "t.jsonl"
    r = run(RunSpec(scheme, TOPOLOGY[scheme], seed=1, faults=faults, trace=TraceSpec(str(trace))))
    block = r.invariants["delivered_exactly_once"]["correctness"]
    back = int(faults[1].split("@")[1].split(":")[0])
    assert r.invariants["ok"]
    assert block["stopped_by"] == {"restarted": 1}
    assert block["first_stopped"] == {"slot": back, "node": 5, "phase": phase, "why": "restarted"}
    assert not [e for e in _events(trace) if e["event"] == "sent" and e["node"] == 5 and e["slot"] >= back]
    assert r.completion is not None and r.completion["complete"]
    assert r.completion["slot"] <= block["routing_end"]


@pytest.mark.parametrize(("scheme", "stranded_at"), [("packing", {10: 1}), ("monotone", {9: 2})])
def test_a_packet_whose_phases_are_over_is_stranded_at_the_last_step(tmp_path, scheme, stranded_at):
    """Links down for good (ranks given): the packets they keep are stranded at the schedule's last step,
    not a step later, and the run completes in that slot."""
    trace = tmp_path / "t.jsonl"
    r = run(RunSpec(scheme, TOPOLOGY[scheme], params={"rank": "given"}, seed=1, faults=DOWN, trace=TraceSpec(str(trace))))
    block = r.invariants["delivered_exactly_once"]["correctness"]
    end = block["routing_end"]
    stranded = [e for e in _events(trace) if e["event"] == "off_schedule" and e.get("why") == "stranded"]
    assert {e["slot"] for e in stranded} == {end}
    assert {v: sum(1 for e in stranded if e["node"] == v) for v in {e["node"] for e in stranded}} == stranded_at
    assert r.completion == {"complete": True, "slot": end, "time": float(end)}


def _scan_sends(tmp_path: Path, faults: list[str]) -> tuple[Any, list[tuple[int, int, Any]]]:
    trace = tmp_path / f"t{len(faults)}.jsonl"
    r = run(RunSpec("packing", "mesh:4x4", seed=1, faults=faults, trace=TraceSpec(str(trace))))
    return r, [(e["slot"], e["port"], e["message"]) for e in _events(trace)
               if e["event"] == "sent" and e["node"] == 5 and e["message"][0] == "s"]


def test_a_node_stalled_in_the_scan_makes_no_sends_for_steps_already_past(tmp_path):
    """packing, node 5 stalled through slots 1..4 of its scan: the send its schedule had in slot 1 is not
    made when it wakes (``late send``); its other scan sends are the fault-free run's, in the same slots."""
    _, free = _scan_sends(tmp_path, [])
    r, stalled = _scan_sends(tmp_path, ["stall@1:4:5"])
    assert [s for s in free if 1 <= s[0] <= 4]  # the schedule has a send in the stall
    assert stalled == [s for s in free if not 1 <= s[0] <= 4]
    block = r.invariants["delivered_exactly_once"]["correctness"]
    assert r.invariants["ok"] and block["off_schedule"]["late send"] == 1
