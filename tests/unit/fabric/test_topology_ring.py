"""Rings (fabric/_topology.py's Ring): the cycle graph under the torus's closed forms."""

from __future__ import annotations

import pytest

from slotnet import graph_topology
from slotnet.fabric import Ring, TopologyError, Torus, parse_topology


@pytest.mark.parametrize("n", [3, 4, 7, 10])
def test_a_ring_is_the_cycle_graph(n):
    """ring:N: port 0 to v+1, port 1 to v-1, distances those of the n-cycle as a graph, kind 'ring'."""
    r = parse_topology(f"ring:{n}")
    cycle = graph_topology([(v, (v + 1) % n) for v in range(n)])
    assert isinstance(r, Ring) and r.kind == "ring" and r.spec == f"ring:{n}" and r.n_links == 2 * n
    for v in range(n):
        assert [p.neighbour for p in r.ports(v)] == [(v + 1) % n, (v - 1) % n]
        assert [r.distance(v, w) for w in range(n)] == [cycle.distance(v, w) for w in range(n)]
    assert [r.neighbour(v, p) for v in range(n) for p in (0, 1)] == [Torus((n,)).neighbour(v, p) for v in range(n)
                                                                     for p in (0, 1)]


@pytest.mark.parametrize("spec, message", [
    ("ring:2", "ring needs at least 3 nodes, got 2 (torus:2 is two nodes with two links)"),
    ("ring:x", "ring size must be a positive integer, got 'x' in 'ring:x'"),
    ("edges:0-1,1", "edges: link 2 must look like u-v (node ids >= 0), got '1'"),
    ("graph:", "graph: needs a file after the colon, as in graph:FILE"),
    ("edges:", "edges: needs links after the colon, as in edges:U-V,U-V,..."),
])
def test_bad_ring_and_inline_specs_are_refused_word_for_word(spec, message):
    """Each malformed ring or inline spec gets its one line."""
    with pytest.raises(TopologyError) as info:
        parse_topology(spec)
    assert str(info.value) == message


