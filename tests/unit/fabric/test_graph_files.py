"""Graph files (fabric/_graph_files.py): edge lists and BookSim2's anynet format, parsed and refused."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import graph_topology
from slotnet.fabric import AnyNet, TopologyError, parse_topology
from slotnet.fabric._graph_files import parse_anynet, parse_edge_list
from tests.support.graphs import connected_edges

#: BookSim2's src/examples/anynet/anynet_file, as shipped.
BOOKSIM_EXAMPLE = """router 0 node 0 node 1 node 2 router 1
router 1 node 3 node 4 node 5
router 2 node 6 node 7 node 8 router 1 router 0
"""


# ------------------------------------------------------------------ edge lists


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(connected_edges(), st.booleans())
def test_an_edge_list_file_is_the_graph_of_its_lines(tmp_path, edges, latency):
    """graph:FILE gives the same ports as the links given in Python, with comments, blanks and a latency column of 1."""
    path = tmp_path / f"g{abs(hash(tuple(edges)))}.txt"
    lines = ["# generated", ""] + [f"{u} {v}" + (" 1" if latency else "") + "  # a link" for u, v in edges]
    path.write_text("\n".join(lines) + "\n")
    g = parse_topology(f"graph:{path}")
    want = graph_topology(edges)
    assert g.kind == "graph" and g.spec == f"graph:{path}"
    assert g.links() == want.links() and g.n_nodes == want.n_nodes


@pytest.mark.parametrize("text, message", [
    ("0 1\n1 2 3\n", "g line 2: link 1-2 has latency 3: slotnet's links take one slot each (per-link latency is not "
                     "supported; give 1 or leave it out)"),
    ("0 1\n1\n", "g line 2: expected 'u v' or 'u v latency', got '1'"),
    ("0 1\n1 2 3 4\n", "g line 2: expected 'u v' or 'u v latency', got '1 2 3 4'"),
    ("0 1\n1 b\n", "g line 2: a node id must be an integer >= 0, got 'b'"),
    ("0 1\n1 -2\n", "g line 2: a node id must be an integer >= 0, got '-2'"),
    ("0 1\n2 2\n", "g line 2: link 2-2 goes from node 2 to itself (self-loops are not supported)"),
    ("0 1\n1 2 x\n", "g line 2: a latency must be an integer >= 0, got 'x'"),
    ("# nothing\n\n", "g: no links (expected lines 'u v', nodes numbered from 0)"),
    ("0 1\n2 3\n", "g is not connected: node 0 does not reach 2 node(s): 2, 3"),
    ("0 2\n", "g is not connected: node 0 does not reach 1 node(s): 1"),
])
def test_bad_edge_lists_are_refused_naming_the_line(text, message):
    """Latency other than 1, malformed lines, bad ids, self-loops, no links and gaps each get one line."""
    with pytest.raises(TopologyError) as info:
        parse_edge_list(text, "g")
    assert str(info.value) == message


def test_a_file_is_read_once_per_version(tmp_path):
    """The same unchanged file gives the same graph object; a rewritten file is read again."""
    path = tmp_path / "ring.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    first = parse_topology(f"graph:{path}")
    assert parse_topology(f"graph:{path}") is first
    path.write_text("0 1\n1 2\n2 3\n3 0\n")
    os.utime(path, ns=(1, 1))  # a different modification time even within the clock's resolution
    assert parse_topology(f"graph:{path}").n_nodes == 4


def test_a_missing_file_is_refused_in_one_line(tmp_path):
    """graph:FILE naming no file: one line with the path and the reason."""
    with pytest.raises(TopologyError) as info:
        parse_topology(f"graph:{tmp_path}/none.txt")
    assert str(info.value) == f"graph:{tmp_path}/none.txt: cannot read '{tmp_path}/none.txt': No such file or directory"


# ------------------------------------------------------------------ anynet


def test_booksims_example_file():
    """The shipped example: 3 routers in a triangle, 9 terminals 3 per router, ports in first-mention order."""
    g = parse_anynet(BOOKSIM_EXAMPLE, "anynet:x")
    assert isinstance(g, AnyNet) and g.kind == "anynet" and g.n_nodes == 3 and g.n_links == 6
    assert [g.neighbours(r) for r in range(3)] == [(1, 2), (0, 2), (1, 0)]
    assert [g.terminals(r) for r in range(3)] == [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
    assert g.n_terminals == 9 and g.terminal_router(7) == 2 and g.terminal_latency(7) == 1


def test_anynet_lines_in_every_form_booksim_reads():
    """A node head attaches to its router; a router pair listed again (either way) is one link; words in any case."""
    text = "Router 0 router 1 1 Node 0 2\nnode 1 router 1\nrouter 1 router 0\nrouter 2 router 1 node 2\n"
    g = parse_anynet(text, "anynet:y")
    assert g.n_links == 4 and [g.neighbours(r) for r in range(3)] == [(1,), (0, 2), (1,)]
    assert [g.terminals(r) for r in range(3)] == [(0,), (1,), (2,)]
    assert g.terminal_latency(0) == 2 and g.terminal_latency(1) == 1
    with pytest.raises(TopologyError, match="has no terminal 3"):
        g.terminal_router(3)


@pytest.mark.parametrize("text, message", [
    ("router 0 router 1 15\n", "a line 1: link router 0 -> router 1 has latency 15: slotnet's links take one slot each"),
    ("router 0 node 0\nnode 0 node 1\n", "a line 2: node 0 connected to node 1 (a terminal connects to a router)"),
    ("router 0 node 0 router 1\nrouter 1 node 0\n", "a line 2: node 0 is on router 0 and router 1"),
    ("router 0 router 1\nrouter 1 router 1\n", "a line 2: router 1 connected to itself"),
    ("switch 0 router 1\n", "a line 1: a line starts with 'router' or 'node', got 'switch'"),
    ("router 0 link 1\n", "a line 1: expected 'router' or 'node', got 'link'"),
    ("router 0 router\n", "a line 1: 'router' without an id"),
    ("router 0 router x\n", "a line 1: a router id must be an integer >= 0, got 'x'"),
    ("router 0 router 2\n", "a: routers must be numbered 0..2 without gaps: router 1 is missing"),
    ("router 0 router 1 node 1\n", "a: nodes must be numbered 0..1 without gaps: node 0 is missing"),
    ("router 0 router 1\nrouter 2 node 0\n", "a is not connected: node 0 does not reach 1 node(s): 2"),
    ("router 0 node 0 node 1\n", "a: a network needs at least two nodes and one link, got 1 node(s)"),
    ("# empty\n", "a: no routers (expected lines such as 'router 0 router 1 node 0')"),
])
def test_bad_anynet_files_are_refused_naming_the_line(text, message):
    """Channel latency, node-node links, a terminal on two routers, unknown words, gaps, islands: one line each."""
    with pytest.raises(TopologyError) as info:
        parse_anynet(text, "a")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_anynet_spec_reads_a_file(tmp_path):
    """anynet:FILE parses the file, its spec the one given."""
    path = tmp_path / "net.anynet"
    path.write_text(BOOKSIM_EXAMPLE)
    g = parse_topology(f"anynet:{path}")
    assert g.kind == "anynet" and g.spec == f"anynet:{path}" and g.n_nodes == 3
