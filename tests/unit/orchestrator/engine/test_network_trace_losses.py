"""Lost messages in a trace (:meth:`slotnet.orchestrator.engine._network.Network._lost`): each written once,
with its real sender, and a loss to a finished node never drawn as a fault's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from slotnet import RunSpec, TraceSpec, run
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools._diagram import diagram_svg
from slotnet.orchestrator.tools._trace_query import follow, read_trace
from slotnet.schemes import SCHEMES

CRASH = dict(load={"rho": 0.15}, slots=40, seed=2, faults=["crash@12:5"])


def _lost(path: Path) -> list[dict[str, Any]]:
    return [ev for ev in read_trace(path) if ev["event"] == "lost"]


def test_each_lost_copy_is_written_once(tmp_path):
    """The traces how-to's crash run: as many lost events in the trace as the books count (12), none twice."""
    path = tmp_path / "b.jsonl"
    r = run(RunSpec("bcast-simple", "hypercube:3", **CRASH, trace=TraceSpec(str(path))))
    lost = _lost(path)
    assert r.fault_impact is not None
    assert len(lost) == sum(r.fault_impact["messages"]["lost"].values()) == 12
    keys = [json.dumps({k: v for k, v in ev.items() if k != "node"}, sort_keys=True) for ev in lost]
    assert len(set(keys)) == len(keys)
    assert all(ev["node"] == ev["from"] for ev in lost)  # every sender traced: each at its sender
    assert sum(follow(read_trace(path), (p[0], p[1]))[1]["copies_lost"]
               for p in {tuple(ev["message"][:2]) for ev in lost}) == 12


def test_a_loss_is_written_at_its_receiver_when_only_the_receiver_is_traced(tmp_path):
    """Trace node 5 alone: every copy lost on its way to it is written once, at node 5."""
    full, only = tmp_path / "full.jsonl", tmp_path / "only.jsonl"
    run(RunSpec("bcast-simple", "hypercube:3", **CRASH, trace=TraceSpec(str(full))))
    run(RunSpec("bcast-simple", "hypercube:3", **CRASH, trace=TraceSpec(str(only), nodes=frozenset({5}))))
    to5 = [{k: v for k, v in ev.items() if k != "node"} for ev in _lost(full) if ev["to"] == 5]
    at5 = _lost(only)
    assert to5 and all(ev["node"] == 5 for ev in at5)
    assert [{k: v for k, v in ev.items() if k != "node"} for ev in at5] == to5


def test_a_message_to_a_finished_node_names_its_sender_and_is_not_drawn_as_a_fault(monkeypatch, tmp_path):
    """packing whose node 3 returns from run() at once: the messages it never read name their real sender
    and port, and the diagram says the node had finished, not that a fault destroyed them."""
    base = SCHEMES["packing"]

    class Finishing(base.node):  # type: ignore[name-defined, misc]
        async def run(self) -> None:
            if self.ctx.node != 3:
                await super().run()

    monkeypatch.setitem(SCHEMES, "packing", replace(base, node=Finishing))
    path = tmp_path / "p.jsonl"
    run(RunSpec("packing", "mesh:4x4", seed=1, trace=TraceSpec(str(path))))
    lost = [ev for ev in _lost(path) if ev["cause"] == "node_finished"]
    topo = parse_topology("mesh:4x4")
    assert lost and all(ev["to"] == 3 and ev["from"] >= 0 and topo.neighbour(ev["from"], ev["port"]) == 3 for ev in lost)
    svg, _ = diagram_svg(read_trace(path), topology=topo)
    assert "had returned from run() (the scheme's doing, not a fault)" in svg
    assert "lost to a fault" not in svg and "n-1" not in svg
