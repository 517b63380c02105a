"""explore (orchestrator/tools/_explore.py) on a general graph: every link of the graph, once."""

from __future__ import annotations

from slotnet import RunSpec, graph_topology
from slotnet.orchestrator.tools._explore import explore
from tests.support.flood import install


def test_explore_takes_down_each_link_of_a_graph(monkeypatch):
    """explore's single-link family tries every undirected link of a graph once; the flood survives each."""
    flood = install(monkeypatch)
    g = graph_topology([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])
    report = explore(RunSpec(flood, g, seed=1, slots=30), "single-link", jobs=1)
    assert report["summary"]["scenarios"] == 5 and report["summary"]["failed"] == 0


