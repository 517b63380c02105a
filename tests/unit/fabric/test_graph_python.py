"""Graphs built in Python (fabric/_graph_python.py): from an edge list, or from any object with nodes() and edges()."""

from __future__ import annotations

import pytest

from slotnet import RunSpec, graph_topology, topology_from
from slotnet.fabric import Graph, TopologyError, parse_topology


class _Net:
    """A stand-in for a networkx graph: nodes() and edges(), labels of any hashable kind."""

    def __init__(self, nodes, edges):
        self._nodes, self._edges = nodes, edges

    def nodes(self):
        return iter(self._nodes)

    def edges(self):
        return iter(self._edges)


def test_topology_from_numbers_nodes_in_listed_order():
    """Labels become 0..n-1 in nodes() order (kept in labels); ports follow edges(); extra edge data is ignored."""
    net = _Net(["a", "b", ("c", 1), "d"], [("a", "b", {"w": 3}), ("b", ("c", 1)), (("c", 1), "d"), ("d", "a")])
    g = topology_from(net)
    assert g.labels == ("a", "b", ("c", 1), "d")
    assert g.spec == "edges:0-1,1-2,2-3,3-0" and [p.neighbour for p in g.ports(0)] == [1, 3]


@pytest.mark.parametrize("obj, message", [
    (object(), "topology_from needs an object with nodes() and edges(), got object"),
    (_Net([1, 2], [(1, 3)]), "topology_from: edge (1, 3) names a node that nodes() does not list"),
    (_Net([1, 1], [(1, 1)]), "topology_from: nodes() lists a node more than once"),
    (_Net([1, 2, 3], [(1, 2)]), "node 0 does not reach 1 node(s): 2"),
])
def test_topology_from_refuses_what_is_no_network(obj, message):
    """An object without nodes()/edges(), an edge to an unknown node, a repeated node, an isolated node: one line each."""
    with pytest.raises(TopologyError) as info:
        topology_from(obj)
    assert message in str(info.value)


def test_a_networkx_graph_works_when_networkx_is_installed():
    """networkx is no dependency; where it is installed its graphs are topologies as they are."""
    nx = pytest.importorskip("networkx")
    g = topology_from(nx.petersen_graph())
    assert g.n_nodes == 10 and g.n_links == 30 and all(g.degree(v) == 3 for v in range(10))
    assert max(g.distance(0, v) for v in range(10)) == 2


def test_a_python_graph_round_trips_through_its_spec():
    """A RunSpec holds a Topology's spec string; parsing it gives the same graph (the same object, in this process)."""
    g = graph_topology([(0, 2), (2, 1), (1, 0), (1, 3)])
    spec = RunSpec("flood", g)
    assert spec.topology == "edges:0-2,2-1,1-0,1-3"
    assert parse_topology(spec.topology) is g and parse_topology(g) is g
    again = Graph([(0, 2), (2, 1), (1, 0), (1, 3)])
    assert again.links() == g.links()


