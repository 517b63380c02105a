"""Trace views: the Perfetto export (tracks, flow arrows, instants) and the SVG slot diagram."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools._diagram import diagram_svg
from slotnet.orchestrator.tools._perfetto import to_perfetto
from slotnet.orchestrator.tools._trace_query import Hops, learn_links, read_trace
from tests.support.cli import call_main as _main

SVG = "{http://www.w3.org/2000/svg}"


def _trace(tmp_path: Path, scheme: str, topology: str, load: dict, faults=(), slots=30, name="t.jsonl", **kw) -> Path:
    path = tmp_path / name
    run(RunSpec(scheme, topology, load=load, slots=slots, seed=3, faults=list(faults), trace=TraceSpec(str(path), **kw)))
    return path


@pytest.fixture
def broadcast(tmp_path) -> Path:
    return _trace(tmp_path, "bcast-simple", "hypercube:3", {"rho": 0.2}, ["crash@12:5"])


@pytest.fixture
def deflection(tmp_path) -> Path:
    return _trace(tmp_path, "deflection", "hypercube:3", {"offered": 1.0}, ["link-down@6:0:1"], name="d.jsonl")



@pytest.mark.parametrize("which", ["broadcast", "deflection"])
def test_perfetto_flows_pair_every_hop(request, which):
    """One track per node; each received message is one s/f flow from its sender's slice to its receiver's."""
    path = request.getfixturevalue(which)
    events = list(read_trace(path))
    data = to_perfetto(events, parse_topology("hypercube:3"))["traceEvents"]
    names = [e for e in data if e["ph"] == "M"]
    assert [e["tid"] for e in names] == list(range(8)) and {e["name"] for e in names} == {"thread_name"}
    starts = {e["id"]: e for e in data if e["ph"] == "s"}
    ends = {e["id"]: e for e in data if e["ph"] == "f"}
    received = sum(e["event"] == "received" for e in events)
    assert received and len(starts) == len(ends) == received and starts.keys() == ends.keys()
    slices = [e for e in data if e["ph"] == "X"]

    def inside(flow, name):
        return any(s["tid"] == flow["tid"] and s["name"] == name and s["ts"] <= flow["ts"] < s["ts"] + s["dur"]
                   for s in slices)

    for i, s in starts.items():
        f = ends[i]
        assert f["bp"] == "e" and s["cat"] == f["cat"] == "hop" and s["tid"] != f["tid"]
        assert f["ts"] // 1000 == s["ts"] // 1000 + 1  # read in the slot after it was sent
        assert inside(s, "sent") and inside(f, "received")
    instants = [e for e in data if e["ph"] == "i"]
    assert instants and all(e["s"] == "t" for e in instants)
    faults = [e for e in instants if not e["name"].startswith("lost")]
    assert faults and {"crash", "link-down port 1"} & {e["name"] for e in faults}
    assert {e["name"] for e in instants} - {e["name"] for e in faults} <= {"lost (node_down)", "lost (link_down)"}


@pytest.mark.parametrize("which", ["broadcast", "deflection"])
def test_inferred_hops_equal_the_topologys(request, which):
    """Without the topology, the hops inferred from the messages are those the topology gives."""
    path = request.getfixturevalue(which)

    def pairs(topology, links):
        hops, out = Hops(topology, links), []
        for i, ev in enumerate(read_trace(path)):
            got = hops.feed(ev, i)
            if got is not None and ev["event"] == "received":
                out.append(got)
        return out

    exact = pairs(parse_topology("hypercube:3"), None)
    assert pairs(None, learn_links(read_trace(path))) == exact and exact


def test_perfetto_cli_with_and_without_topology(capsys, broadcast, tmp_path):
    """slotnet trace --perfetto writes the same flows whether --topology is given or inferred."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert _main(capsys, "trace", str(broadcast), "--perfetto", str(a))[0] == 0
    assert _main(capsys, "trace", str(broadcast), "--perfetto", str(b), "-t", "hypercube:3")[0] == 0
    assert json.loads(a.read_text()) == json.loads(b.read_text())
    phases = Counter(e["ph"] for e in json.loads(a.read_text())["traceEvents"])
    assert phases["s"] == phases["f"] > 0


def test_diagram_is_svg_with_a_column_per_node_and_an_arrow_per_message(broadcast):
    """The diagram parses as SVG: one label per node, one row per slot, one arrow per hop, the fault drawn."""
    svg, shown = diagram_svg(read_trace(broadcast), window=(0, 30))
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert [t for t in texts if t and t.startswith("n") and t[1:].isdigit()] == [f"n{v}" for v in range(8)]
    assert {str(s) for s in range(30)} <= set(texts)
    arrows = [ln for ln in root.iter(f"{SVG}line") if ln.get("marker-end") and not ln.get("stroke-dasharray")]
    received = sum(ev["event"] == "received" for ev in read_trace(broadcast))
    assert shown == {"nodes": 8, "slots": 30, "first": 0, "last": 29, "hops": received, "note": ""}
    assert len(arrows) == received
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any("crash at n5" in t for t in titles) and any("lost to a fault (node_down)" in t for t in titles)


def test_diagram_limits_and_cuts(capsys, tmp_path):
    """More than 16 nodes or 40 slots is refused; without --slots the first 40 are drawn, and said so."""
    big = _trace(tmp_path, "deflection", "hypercube:5", {"offered": 1.0}, slots=5, name="big.jsonl")
    code, _, err = _main(capsys, "trace", str(big), "--diagram", str(tmp_path / "x.svg"))
    assert code == 2 and "at most 16 nodes" in err and "32" in err
    code, out, _ = _main(capsys, "trace", str(big), "--diagram", str(tmp_path / "x.svg"), *sum((["--node", str(v)]
                                                                                                for v in range(16)), []))
    assert code == 0 and "16 nodes x 5 slots" in out
    long = _trace(tmp_path, "bcast-simple", "hypercube:2", {"rho": 0.2}, slots=60, name="long.jsonl")
    code, out, _ = _main(capsys, "trace", str(long), "--diagram", str(tmp_path / "l.svg"))
    assert code == 0 and "x 40 slots (slots 0..39" in out and "choose others with --slots" in out
    code, _, err = _main(capsys, "trace", str(long), "--diagram", str(tmp_path / "l.svg"), "--slots", "0:41")
    assert code == 2 and "at most 40 slots" in err


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="needs rsvg-convert (librsvg2-bin)")
def test_diagram_renders(capsys, broadcast, tmp_path):
    """A real SVG renderer draws the diagram (as the README's example was checked)."""
    svg, png = tmp_path / "d.svg", tmp_path / "d.png"
    assert _main(capsys, "trace", str(broadcast), "--diagram", str(svg), "--packet", "0,1")[0] == 0
    subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], check=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
