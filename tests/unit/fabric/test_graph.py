"""General graphs (fabric/_graph.py): ports in listed order, links, BFS distances and their bound, refusals."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slotnet.fabric._graph as _graph
from slotnet import graph_topology
from slotnet.fabric import Graph, TopologyError
from tests.support.graphs import connected_edges

# ------------------------------------------------------------------ generated graphs


def _first_listing(edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    seen: set[frozenset[int]] = set()
    out = []
    for u, v in edges:
        if frozenset((u, v)) not in seen:
            seen.add(frozenset((u, v)))
            out.append((u, v))
    return out


def _bfs(n: int, edges: list[tuple[int, int]], source: int) -> list[int]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for u, v in edges:
        adj[u].add(v)
        adj[v].add(u)
    dist = [-1] * n
    dist[source] = 0
    todo = deque([source])
    while todo:
        v = todo.popleft()
        for w in adj[v]:
            if dist[w] < 0:
                dist[w] = dist[v] + 1
                todo.append(w)
    return dist


@settings(max_examples=60, deadline=None)
@given(connected_edges())
def test_ports_follow_the_listing_and_degrees_count_links(edges):
    """Each node's ports are its links in the order first listed; degrees sum to the directed links; repeats are one link."""
    g = graph_topology(edges)
    unique = _first_listing(edges)
    n = 1 + max(max(e) for e in edges)
    assert g.n_nodes == n and g.kind == "graph"
    assert g.n_links == 2 * len(unique) == sum(g.degree(v) for v in range(n)) == len(g.links())
    for v in range(n):
        expected = [b if a == v else a for a, b in unique if v in (a, b)]
        assert [p.neighbour for p in g.ports(v)] == expected == list(g.neighbours(v))
        assert [p.index for p in g.ports(v)] == list(range(len(expected)))
    assert g.n_ports == max(g.degree(v) for v in range(n))
    assert g.edges() == unique


@settings(max_examples=60, deadline=None)
@given(connected_edges())
def test_every_link_leads_back_through_its_reverse_port(edges):
    """From (v, p) to w, w's reverse port leads back to v, and either end names the same link."""
    g = graph_topology(edges)
    for v, p, w in g.links():
        q = g.reverse_port(v, p)
        assert g.neighbour(w, q) == v and g.reverse_port(w, q) == p
        assert g.link_key(v, p) == g.link_key(w, q)
    assert g.neighbour(0, g.degree(0)) is None and g.neighbour(0, -1) is None


@settings(max_examples=60, deadline=None)
@given(connected_edges())
def test_distances_are_the_bfs_hop_counts(edges):
    """distance(a, b) is the shortest hop count (an independent BFS), symmetric."""
    g = graph_topology(edges)
    n = g.n_nodes
    for a in range(n):
        want = _bfs(n, edges, a)
        assert [g.distance(a, b) for b in range(n)] == want
        assert [g.distance(b, a) for b in range(n)] == want


@settings(max_examples=40, deadline=None)
@given(connected_edges(), st.integers(1, 11))
def test_a_disconnected_graph_is_refused_naming_the_unreachable_nodes(edges, extra):
    """Another component (or isolated ids) makes a one-line refusal that names exactly the nodes 0 cannot reach."""
    n = 1 + max(max(e) for e in edges)
    island = [(n + i, n + i + 1) for i in range(extra - 1)]  # a path of `extra` nodes (one: an isolated id)
    with pytest.raises(TopologyError) as info:
        graph_topology(edges + island, n=n + extra)
    far = list(range(n, n + extra))
    msg = str(info.value)
    assert "\n" not in msg and "is not connected" in msg
    assert msg.endswith(f"node 0 does not reach {len(far)} node(s): {', '.join(map(str, far[:8]))}"
                        + (f" and {len(far) - 8} more" if len(far) > 8 else ""))


def test_the_distance_cache_stays_within_its_budget(monkeypatch):
    """On a graph of n nodes at most max(1, budget // n) BFS rows are kept, least recently used out."""
    monkeypatch.setattr(_graph, "DISTANCE_BUDGET", 100)
    g = Graph([(v, v + 1) for v in range(39)])  # a path of 40 nodes: 2 rows fit
    assert g.distance(0, 39) == 39 and g.distance(5, 1) == 4
    assert list(g._rows) == [0, 5]
    assert g.distance(20, 3) == 17 and list(g._rows) == [5, 20]
    assert g.distance(39, 5) == 34 and list(g._rows) == [20, 5]  # 5's row answered and kept
    for a in range(40):
        assert g.distance(a, 39 - a) == abs(39 - 2 * a)
        assert len(g._rows) <= 2


def test_graph_geometry_names_ports_by_index():
    """A graph port is labelled (index, 0): port_index(p, 0) is p; anything else is refused in one line."""
    g = graph_topology([(0, 1), (1, 2), (1, 3)])
    assert g.port_label(2) == (2, 0) and g.port_index(2, 0) == 2
    assert g.coords(3) == (3,) and g.node_at((3,)) == 3 and g.sides == (4,) and g.d == 1 and not g.wrap
    with pytest.raises(TopologyError, match=r"names ports by index 0\.\.2 \(direction 0\), not dimension 0, direction 1"):
        g.port_index(0, 1)
    with pytest.raises(TopologyError, match="has no node 9"):
        g.distances(9)


@pytest.mark.parametrize("edges, n, message", [
    ([(0, 0)], None, "link 0-0 goes from node 0 to itself (self-loops are not supported)"),
    ([(0, -1)], None, "a link must be two node ids (integers >= 0), got (0, -1)"),
    ([(0, 1, 2)], None, "a link must be two node ids (integers >= 0), got (0, 1, 2)"),
    ([(0, True)], None, "a link must be two node ids (integers >= 0), got (0, True)"),
    ([(0, 3)], 2, "n=2 leaves out node 3, which a link names (n must be > every node id)"),
    ([], None, "edges:: a network needs at least two nodes and one link, got 0 node(s)"),
    ([(0, v) for v in range(1, 66)], None, "node 0 has 65 links, more than the 64 ports a node can have"),
])
def test_bad_graphs_are_refused_in_one_line(edges, n, message):
    """Self-loops, bad ids, a short n, no links and a node of degree over 64 each get one precise line."""
    with pytest.raises(TopologyError) as info:
        graph_topology(edges, n=n)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_star_of_64_leaves_fits_the_port_mask():
    """Degree 64 is the most a node may have (the outlets' 64-bit port mask), and it is accepted."""
    g = graph_topology([(0, v) for v in range(1, 65)])
    assert g.degree(0) == g.n_ports == 64 and g.reverse_port(0, 63) == 0


def test_ids_of_any_integer_type_are_node_ids():
    """numpy integers name nodes as ints do (the slow path); a string or a bool does not."""
    np = pytest.importorskip("numpy")
    g = graph_topology([(np.int64(0), np.int32(1)), (np.uint8(1), 2)])
    assert g.links() == graph_topology([(0, 1), (1, 2)]).links()
    for bad in (["01"], [("0", "1")], [(False, 1)], [5]):
        with pytest.raises(TopologyError, match="a link must be two node ids"):
            graph_topology(bad)
