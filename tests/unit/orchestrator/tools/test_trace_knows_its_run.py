"""``slotnet run --trace`` and ``slotnet trace``: a trace starts with a header naming its run, and the
trace commands take the topology from it and refuse what the run cannot have."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.orchestrator.tools._trace_query import read_header, read_trace
from tests.support.cli import call_main as _main

RUN = ["run", "bcast-simple", "-t", "hypercube:3", "--rho", "0.15", "--slots", "40", "--seed", "2", "--fault", "crash@12:5"]


@pytest.fixture
def trace(tmp_path, capsys):
    path = tmp_path / "b.jsonl"
    code, _, _ = _main(capsys, *RUN, "--trace", str(path))
    assert code == 1  # written in full; bcast-simple keeps sending to the crashed node: its verdict fails
    return path


def test_a_trace_starts_with_a_header_naming_its_run(trace):
    """The first line: format, version, scheme, topology, seed and the command that reruns the run."""
    head = json.loads(trace.read_text().splitlines()[0])
    assert head == read_header(trace)
    assert head["slotnet_trace"] == 1 and isinstance(head["slotnet"], str) and head["slotnet"]
    assert (head["scheme"], head["topology"], head["seed"]) == ("bcast-simple", "hypercube:3", 2)
    assert head["command"] == ("slotnet run bcast-simple -t hypercube:3 --rho 0.15 --slots 40 --warmup 0 --seed 2 "
                               "--rng philox --fault crash@12:5")
    assert all("event" in ev for ev in read_trace(trace))  # the events follow, the header is not one


def test_the_headers_command_reruns_the_run(trace, tmp_path, capsys):
    """Rerunning the header's command with --trace writes the same trace, byte for byte."""
    again = tmp_path / "again.jsonl"
    argv = read_header(trace)["command"].split()[1:]  # type: ignore[index]
    code, _, _ = _main(capsys, *argv, "--trace", str(again))
    assert code == 1 and again.read_bytes() == trace.read_bytes()


def test_the_header_is_the_same_over_shards_and_event_paths(tmp_path):
    """The header names the run, not how it was carried: in-process and buffered runs write the same bytes."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    base = dict(load={"rho": 0.15}, slots=20, seed=2)
    run(RunSpec("bcast-simple", "hypercube:3", **base, trace=TraceSpec(str(a))))
    run(RunSpec("bcast-simple", "hypercube:3", **base, observer="buffered", trace=TraceSpec(str(b))))
    assert a.read_bytes() == b.read_bytes()


def test_the_diagram_takes_the_topology_from_the_header_and_refuses_another(trace, tmp_path, capsys):
    """No -t: every hop is paired (59 messages in slots 0..19); a -t that disagrees is refused, one that agrees is not."""
    svg = tmp_path / "d.svg"
    code, out, _ = _main(capsys, "trace", str(trace), "--diagram", str(svg), "--slots", "0:20")
    assert code == 0 and "59 messages" in out
    code, out2, _ = _main(capsys, "trace", str(trace), "--diagram", str(svg), "--slots", "0:20", "-t", "hypercube:3")
    assert code == 0 and out2 == out
    code, _, err = _main(capsys, "trace", str(trace), "--diagram", str(svg), "-t", "torus:4x4")
    assert code == 2
    assert "-t torus:4x4 disagrees with the trace" in err and "hypercube:3 (its header)" in err


@pytest.mark.parametrize(("argv", "phrase"), [
    (["--event", "nosuch"], "--event 'nosuch': no such event in"),
    (["--node", "999"], "--node 999: no node 999 in"),
    (["--packet", "nonsense"], "--packet 'nonsense': no message of that packet in"),
])
def test_filters_the_run_cannot_have_are_refused_with_the_known_values(trace, capsys, argv, phrase):
    """An unknown event kind, node or packet: exit 2, one line naming the kinds, the nodes or example packet ids."""
    code, out, err = _main(capsys, "trace", str(trace), *argv)
    assert code == 2 and out == ""
    line = err.strip().splitlines()[-1]
    assert phrase in line
    known = {"--event": "its kinds: disorder, fault, lost, received, residence, sent, step",
             "--node": "its nodes: 0..7", "--packet": "e.g. 1,1; 0,1; 0,2"}[argv[0]]
    assert line.endswith(known)


def test_a_kind_the_scheme_has_but_the_trace_lacks_is_no_error(trace, capsys):
    """``disorder`` is a kind bcast-simple can record; none in this run: nothing printed, no refusal."""
    code, out, _ = _main(capsys, "trace", str(trace), "--event", "disorder")
    assert code == 0 and out.startswith("no events match")
