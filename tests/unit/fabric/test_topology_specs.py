"""Topologies: sizes, degrees, neighbour symmetry, distances, spec errors."""

from __future__ import annotations

from collections import deque

import pytest

from slotnet.fabric import Hypercube, Mesh, TopologyError, Torus, parse_topology

SPECS = ["hypercube:1", "hypercube:4", "torus:4x4", "torus:3x5", "torus:2x3", "torus:4x4x4", "mesh:4x4", "mesh:3x2x4", "mesh:5"]


def _bfs(topo, src):
    dist = {src: 0}
    q = deque([src])
    while q:
        v = q.popleft()
        for p in topo.ports(v):
            if p.neighbour not in dist:
                dist[p.neighbour] = dist[v] + 1
                q.append(p.neighbour)
    return dist


@pytest.mark.parametrize("spec", SPECS)
def test_neighbours_are_symmetric(spec):
    """Every link has a reverse link, reached through reverse_port."""
    t = parse_topology(spec)
    for v in range(t.n_nodes):
        for p in t.ports(v):
            back = t.reverse_port(v, p.index)
            assert t.neighbour(p.neighbour, back) == v


@pytest.mark.parametrize("spec", SPECS)
def test_distance_matches_breadth_first_search(spec):
    """distance() equals the hop count of a shortest path, for every pair."""
    t = parse_topology(spec)
    for s in range(t.n_nodes):
        bfs = _bfs(t, s)
        assert len(bfs) == t.n_nodes
        for v in range(t.n_nodes):
            assert t.distance(s, v) == bfs[v]


def test_degrees_and_sizes():
    """Hypercube degree d, torus degree 2D, mesh corners and interiors."""
    h = Hypercube(5)
    assert (h.n_nodes, h.degree(7), h.n_links) == (32, 5, 160)
    t = Torus((4, 4, 4))
    assert (t.n_nodes, t.degree(0), t.n_links) == (64, 6, 384)
    m = Mesh((4, 4))
    assert [m.degree(v) for v in (0, 1, 5)] == [2, 3, 4]
    assert m.n_links == 2 * (2 * 4 * 3)
    assert parse_topology("torus:8x8").spec == "torus:8x8"


def test_port_labels():
    """Ports carry (dimension, direction): hypercube dims, torus +/- per dimension."""
    assert [(p.dim, p.direction) for p in Hypercube(3).ports(0)] == [(0, 0), (1, 0), (2, 0)]
    assert [(p.dim, p.direction) for p in Torus((3, 3)).ports(4)] == [(0, 1), (0, -1), (1, 1), (1, -1)]
    assert Torus((3, 3)).neighbour(4, 2) == 7


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("hypercube:0", "dimension must be an integer >= 1"),
        ("hypercube:x", "must be a positive integer"),
        ("torus:1x4", "torus side must be >= 2, got 1"),
        ("mesh:3x", "sides must be positive integers"),
        ("mesh:", "sides must be positive integers"),
        ("ring:2", "ring needs at least 3 nodes"),
        ("lattice:8", "unknown topology kind 'lattice'"),
        ("hypercube", "must look like"),
        ("hypercube:40", "too large"),
    ],
)
def test_bad_specs_raise_precise_errors(spec, fragment):
    """Malformed specs raise TopologyError naming the problem."""
    with pytest.raises(TopologyError, match=fragment):
        parse_topology(spec)
