"""The kit's shape facts (schemes/kit/_checks.py) on rings and general graphs: bipartite, eccentricity, port dimension."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings

from slotnet import graph_topology, parse_topology
from slotnet.schemes.kit._checks import bipartite, eccentricity, port_dimension
from tests.support.graphs import connected_edges


def _depths(g, root: int) -> list[int]:
    depth = [-1] * g.n_nodes
    depth[root] = 0
    todo = deque([root])
    while todo:
        v = todo.popleft()
        for w in g.neighbours(v):
            if depth[w] < 0:
                depth[w] = depth[v] + 1
                todo.append(w)
    return depth


@settings(max_examples=60, deadline=None)
@given(connected_edges())
def test_a_graph_is_bipartite_iff_no_link_joins_two_nodes_of_one_depth(edges):
    """bipartite(graph) agrees with the BFS-depth test (a link within one depth closes an odd cycle)."""
    g = graph_topology(edges)
    depth = _depths(g, 0)
    assert bipartite(g) == all(depth[u] != depth[v] for u, v in g.edges())


@settings(max_examples=60, deadline=None)
@given(connected_edges())
def test_a_graph_nodes_eccentricity_is_its_largest_bfs_depth(edges):
    """eccentricity(graph, v) is the largest hop count from v (not the closed form of a grid)."""
    g = graph_topology(edges)
    for v in range(g.n_nodes):
        assert eccentricity(g, v) == max(_depths(g, v))
    assert [port_dimension(g)(p) for p in range(g.n_ports)] == list(range(g.n_ports))


@pytest.mark.parametrize("n", [3, 4, 7, 8])
def test_ring_facts(n):
    """A ring is bipartite iff even, every node's eccentricity is n // 2, both its ports cross dimension 0."""
    r = parse_topology(f"ring:{n}")
    assert bipartite(r) == (n % 2 == 0)
    assert {eccentricity(r, v) for v in range(n)} == {n // 2}
    assert [port_dimension(r)(p) for p in (0, 1)] == [0, 0]
