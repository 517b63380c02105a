"""The slot diagram (orchestrator/tools/_diagram.py) of a run on a general graph: nodes as columns, no layout needed."""

from __future__ import annotations

from slotnet import RunSpec, TraceSpec, graph_topology, run
from slotnet.orchestrator.tools._diagram import diagram_svg
from slotnet.orchestrator.tools._trace_query import read_trace
from tests.support.flood import install


def test_a_traced_graph_run_draws_every_hop(monkeypatch, tmp_path):
    """A graph run's trace pairs every reception with its send on the diagram (hops = receptions)."""
    flood = install(monkeypatch)
    g = graph_topology([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (1, 3)])
    path = tmp_path / "t.jsonl"
    run(RunSpec(flood, g, seed=1, trace=TraceSpec(str(path))))
    events = list(read_trace(path))
    received = sum(ev["event"] == "received" for ev in events)
    assert received == g.n_links - g.n_nodes + 1
    svg, shown = diagram_svg(events, topology=g)
    assert shown["hops"] == received and shown["nodes"] == g.n_nodes and svg.startswith("<svg")


