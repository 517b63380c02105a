"""Any network, end to end: a user's flood declaring topologies=("any",) on every kind, built-in or not.

Runs, shards (the in-memory shard link), faults, traces with their diagrams and Perfetto
export, and the CLI on rings, edge lists, BookSim2 anynet files and graphs built in Python;
the papers' schemes refuse the kinds they do not support in one line. (explore and the
diagram's own pairing on graphs: tests/unit/orchestrator/tools/test_*_any_topology.py.)
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import SCHEMES, RunSpec, SpecError, TraceSpec, graph_topology, run
from slotnet.fabric import FaultSpecError, parse_topology
from slotnet.orchestrator import read_trace
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.shard import run_sharded_in_memory
from tests.support.flood import install
from tests.support.graphs import connected_edges

#: what must not depend on how the nodes are spread over shards
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "completion", "faults", "fault_impact")

ANYNET = "router 0 node 0 node 1 router 1\nrouter 1 node 2 router 2\nrouter 2 node 3 router 3\nrouter 3 router 0 router 1\n"


@pytest.fixture
def flood(monkeypatch):
    return install(monkeypatch)


def _bfs(topology, source: int, skip: frozenset = frozenset()) -> list[int]:
    """Hop counts from ``source``, by BFS over the topology's links minus the undirected ones in ``skip``."""
    dist = [-1] * topology.n_nodes
    dist[source] = 0
    todo = deque([source])
    while todo:
        v = todo.popleft()
        for p in topology.ports(v):
            if topology.link_key(v, p.index) in skip or dist[p.neighbour] >= 0:
                continue
            dist[p.neighbour] = dist[v] + 1
            todo.append(p.neighbour)
    return dist


def _flooded(spec: RunSpec) -> dict:
    r = run(spec).to_dict(per_node=True)
    assert r["invariants"]["ok"], r["invariants"]
    return r


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(connected_edges(max_nodes=12), st.data())
def test_a_flood_reaches_every_node_at_its_distance(flood, edges, data):
    """On any connected graph every node is reached once, at its BFS distance; sent = 2m - n + 1, all accounted;
    the run completes the slot after the last forwarding node sent."""
    g = graph_topology(edges)
    source = data.draw(st.integers(0, g.n_nodes - 1))
    r = _flooded(RunSpec(flood, g, params={"source": source}, seed=1))
    assert r["per_node"]["hops"] == _bfs(g, source)
    assert r["metrics"]["reached"] == g.n_nodes
    assert r["metrics"]["sent"] == r["metrics"]["got"] == g.n_links - g.n_nodes + 1
    dist = _bfs(g, source)  # the last message is read the slot after the farthest node that passes it on sent it
    assert r["metrics"]["completion_time"] == max(dist[v] + 1 for v in range(g.n_nodes) if v == source or g.degree(v) > 1)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(connected_edges(max_nodes=12), st.integers(2, 4), st.sampled_from([[], ["loss=0.2"], ["crash@1:1"]]))
def test_sharded_runs_are_the_one_process_run(flood, edges, shards, faults):
    """Contiguous shards over a graph give the one-process result, with and without faults; the cross-shard link
    fraction reported is the share of directed links between blocks."""
    g = graph_topology(edges)
    shards = min(shards, g.n_nodes)
    while (shards - 1) * -(-g.n_nodes // shards) >= g.n_nodes:  # blocks of ceil(n / K): none may be left empty
        shards -= 1
    spec = RunSpec(flood, g, seed=3, faults=faults)
    one = run(spec).to_dict(per_node=True)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=shards).prepare()))
    many = many.to_dict(per_node=True)
    for key in SAME:
        assert one.get(key) == many.get(key), key
    block = -(-g.n_nodes // shards)
    cross = sum(v // block != w // block for v, _, w in g.links())
    assert many["transport"]["cross_shard_links"] == pytest.approx(cross / g.n_links)


@pytest.mark.parametrize("spec", ["hypercube:3", "torus:3x3", "mesh:2x3", "ring:5", "edges:0-1,1-2,2-3,3-1", "graph",
                                  "anynet"])
def test_a_scheme_for_any_topology_runs_on_every_kind(flood, tmp_path, spec):
    """topologies=("any",) runs on each built-in kind, rings, edge lists and anynet files; hops are BFS distances."""
    if spec == "graph":
        (tmp_path / "g.txt").write_text("# a square with a tail\n0 1\n1 2\n2 3\n3 0\n3 4 1\n")
        spec = f"graph:{tmp_path / 'g.txt'}"
    elif spec == "anynet":
        (tmp_path / "n.anynet").write_text(ANYNET)
        spec = f"anynet:{tmp_path / 'n.anynet'}"
    topo = parse_topology(spec)
    r = _flooded(RunSpec(flood, spec, seed=2))
    assert r["topology"]["kind"] == topo.kind and r["topology"]["spec"] == topo.spec
    assert r["per_node"]["hops"] == _bfs(topo, 0)


def test_a_scheme_refuses_a_kind_it_does_not_declare(monkeypatch):
    """A scheme declaring graph alone refuses a ring in one line naming what it runs on."""
    name = install(monkeypatch, ("graph", "anynet"))
    with pytest.raises(SpecError) as info:
        RunSpec(name, "ring:5").prepare()
    assert str(info.value) == "scheme 'flood-any' runs on graph, anynet, not ring:5"


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("spec", ["ring:6", "edges:0-1,1-2,2-3,3-0"])
def test_the_papers_schemes_refuse_other_kinds_in_one_line(scheme, spec):
    """Every built-in scheme refuses rings and graphs with one line naming the kinds it runs on."""
    kinds = SCHEMES[scheme].topologies
    assert "any" not in kinds and parse_topology(spec).kind not in kinds
    with pytest.raises(SpecError) as info:
        RunSpec(scheme, spec).prepare()
    assert str(info.value) == f"scheme {scheme!r} runs on {', '.join(kinds)}, not {spec}"


def test_a_link_fault_on_a_graph_names_node_and_port(flood):
    """link-down@0:v:p takes down the link at port p of v: the flood goes round it; a port v lacks is refused."""
    g = graph_topology([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)])  # node 0's ports: 1, 3, 2
    r = _flooded(RunSpec(flood, g, seed=1, faults=["link-down@0:0:2"]))
    assert r["per_node"]["hops"] == _bfs(g, 0, frozenset({g.link_key(0, 2)})) == [0, 1, 2, 1]
    # 0 sends on all 3 ports in slot 0 (the detector shows the link dead from slot 1): 0 -> 2 is lost; 2 skips it
    assert (r["metrics"]["sent"], r["metrics"]["got"]) == (6, 5)
    with pytest.raises(FaultSpecError) as info:
        RunSpec(flood, g, faults=["link-down@0:1:2"]).prepare()
    assert str(info.value) == "fault link-down@0:1:2: node 1 has no port 2"


def test_the_trace_command_draws_a_graph_run(flood, tmp_path, capsys):
    """slotnet trace FILE --diagram/--perfetto OUT -t SPEC takes a graph's spec (a file) and pairs every hop."""
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 3\n3 0\n0 2\n")
    trace, out = tmp_path / "t.jsonl", tmp_path / "d.svg"
    run(RunSpec(flood, f"graph:{tmp_path / 'g.txt'}", seed=1, trace=TraceSpec(str(trace))))
    assert main(["trace", str(trace), "--diagram", str(out), "-t", f"graph:{tmp_path / 'g.txt'}"]) == 0
    assert out.read_text().startswith("<svg") and "n3" in out.read_text()
    perfetto = tmp_path / "t.json"
    assert main(["trace", str(trace), "--perfetto", str(perfetto), "-t", f"graph:{tmp_path / 'g.txt'}"]) == 0
    flows = [e for e in json.loads(perfetto.read_text())["traceEvents"] if e.get("ph") in ("s", "f")]
    sent = sum(1 for ev in read_trace(trace) if ev["event"] == "received")
    assert len(flows) == 2 * sent  # every reception paired with its send through the graph's ports


def test_the_cli_runs_a_graph_file_and_refuses_a_bad_one(flood, tmp_path, capsys):
    """slotnet run -t graph:FILE gives the graph's result; a missing file or a ring for deflection: one line, exit != 0."""
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n")
    assert main(["run", flood, "-t", f"graph:{tmp_path / 'g.txt'}", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["topology"] == {"kind": "graph", "spec": f"graph:{tmp_path / 'g.txt'}", "n_nodes": 3, "n_links": 6}
    for argv in (["run", flood, "-t", f"graph:{tmp_path / 'none.txt'}"],
                 ["run", "deflection", "-t", "ring:8", "--offered", "0.5"]):
        assert main(argv) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and ("none.txt" in err or "runs on hypercube, not ring:8" in err), err


@pytest.mark.parametrize("kinds, spec", [(("any",), "hypercube:4"), (("ring",), "ring:8"),
                                         (("graph",), "edges:0-1,1-2,2-3,3-0,0-2")])
def test_a_scheme_for_rings_or_graphs_gets_an_example_command(monkeypatch, kinds, spec):
    """`slotnet schemes NAME`'s example runs a scheme of any kind, a ring or a graph on a small one of its kind."""
    from slotnet.orchestrator.cli.describe import scheme_example

    name = install(monkeypatch, kinds)
    assert scheme_example(SCHEMES[name]) == [["run", name, "-t", spec]]
