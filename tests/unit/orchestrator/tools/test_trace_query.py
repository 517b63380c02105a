"""slotnet trace queries (node, event kind, slot range, packet) and the trace fingerprint."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.orchestrator.tools._trace_query import carries, follow, parse_packet, read_trace
from tests.support.cli import call_main as _main

BCAST = dict(scheme="bcast-simple", topology="hypercube:3", load={"rho": 0.2}, slots=30)
DEFL = dict(scheme="deflection", topology="hypercube:3", load={"offered": 1.0}, slots=20)



def _traced(tmp_path: Path, name: str, seed: int = 3, **spec):
    path = tmp_path / name
    result = run(RunSpec(**spec, seed=seed, trace=TraceSpec(str(path))))
    return path, result


def test_filters_combine(capsys, tmp_path):
    """--node (repeatable), --event and --slots narrow one another; each line names its node."""
    path, _ = _traced(tmp_path, "t.jsonl", **DEFL)
    code, out, _ = _main(capsys, "trace", str(path), "--node", "2", "--node", "5", "--event", "sent", "--slots", "3:9")
    lines = out.splitlines()
    assert code == 0 and lines
    for line in lines:
        slot, word, node, kind = line.split()[:4]
        assert 3 <= int(slot) < 9 and word == "node" and node in ("2", "5") and kind == "sent"
    code, out, _ = _main(capsys, "trace", str(path), "--node", "2", "--event", "step", "--slots", "900:901")
    assert code == 0 and out.startswith("no events for node 2")
    code, out, _ = _main(capsys, "trace", str(path), "--event", "step", "--slots", "900:901")
    assert code == 0 and out.startswith("no events match")


def test_packet_ids_and_matching():
    """A packet id is the leading fields of its messages: integers, or text."""
    assert parse_packet("6, 1") == (6, 1) and parse_packet("p,0,3") == ("p", 0, 3)
    assert carries([6, 1, 0], (6, 1)) and not carries([6, 2], (6, 1)) and carries(7, (7,)) and not carries([6], (6, 1))
    with pytest.raises(ValueError, match="--packet"):
        parse_packet("6,,1")


def test_follow_a_broadcast_from_birth_to_last_reception(capsys, tmp_path):
    """A fault-free broadcast is born at its origin and reaches the 7 other nodes, the last one ending the story."""
    path, _ = _traced(tmp_path, "b.jsonl", **BCAST)
    births = [(ev["node"], b[0]) for ev in read_trace(path) if ev["event"] == "step" for b in ev["births"]]
    origin, seq = births[0]
    mine, summary = follow(read_trace(path), (origin, seq))
    assert summary["birth"]["node"] == origin and summary["nodes_reached"] == 7 and summary["copies_lost"] == 0
    assert summary["birth"]["time"] is not None and mine[-1]["slot"] == summary["last_reception"]
    assert {ev["node"] for ev in mine if ev["event"] == "received"} == set(range(8)) - {origin}
    code, out, _ = _main(capsys, "trace", str(path), "--packet", f"{origin},{seq}")
    last = out.splitlines()[-1]
    assert code == 0 and last.startswith(f"packet {origin},{seq}: born at node {origin}") and "reached 7 nodes" in last


def test_follow_a_deflected_packet_to_its_destination(tmp_path):
    """A deflection packet (dest, birth, origin) is followed hop by hop to the node it is addressed to."""
    path, _ = _traced(tmp_path, "d.jsonl", **DEFL)
    first = next(ev for ev in read_trace(path) if ev["event"] == "sent")
    dest, birth, origin = first["message"][:3]
    mine, summary = follow(read_trace(path), (dest, birth, origin))
    assert summary["birth"] == {"slot": birth, "node": origin, "time": None}
    hops = [ev for ev in mine if ev["event"] == "received"]
    if summary["last_reception"] is not None:  # delivered inside the run
        assert hops[-1]["node"] == dest and hops[-1]["slot"] == summary["last_reception"]


def test_follow_counts_copies_lost_to_a_fault(tmp_path):
    """Copies a crash destroys show up in the packet's story."""
    path, _ = _traced(tmp_path, "c.jsonl", **BCAST, faults=["crash@8:3"])
    lost = [ev for ev in read_trace(path) if ev["event"] == "lost" and ev["node"] == ev["from"]]
    assert lost
    packet = tuple(lost[0]["message"][:2])
    _, summary = follow(read_trace(path), packet)
    assert summary["copies_lost"] >= 1 and summary["nodes_reached"] < 7


def test_fingerprint_is_the_trace_files_sha256_and_pins_a_run(tmp_path):
    """Same seed, same fingerprint (it is sha256sum of the file); another seed, another; no trace, no key."""
    a, ra = _traced(tmp_path, "a.jsonl", **DEFL)
    b, rb = _traced(tmp_path, "b.jsonl", **DEFL)
    c, rc = _traced(tmp_path, "c.jsonl", seed=4, **DEFL)
    assert ra.trace_fingerprint == hashlib.sha256(a.read_bytes()).hexdigest() == rb.trace_fingerprint
    assert rc.trace_fingerprint != ra.trace_fingerprint
    assert ra.to_dict()["trace_fingerprint"] == ra.trace_fingerprint
    assert "trace_fingerprint" not in run(RunSpec(**DEFL, seed=3)).to_dict()
    buffered = run(RunSpec(**DEFL, seed=3, observer="buffered", trace=TraceSpec(str(tmp_path / "d.jsonl"))))
    assert buffered.trace_fingerprint == ra.trace_fingerprint  # the path sharded runs take


def test_fingerprint_in_the_json_result(capsys, tmp_path):
    """slotnet run --trace --json carries the fingerprint; a regression test can pin it."""
    path = tmp_path / "t.jsonl"
    argv = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20", "--seed", "3",
            "--trace", str(path), "--json", "--no-progress"]
    code, out, _ = _main(capsys, *argv)
    pinned = json.loads(out)["trace_fingerprint"]
    assert code == 0 and pinned == hashlib.sha256(path.read_bytes()).hexdigest()
    code, out, _ = _main(capsys, *argv)
    assert json.loads(out)["trace_fingerprint"] == pinned


#: The whole traced run of ``slotnet run deflection -t hypercube:3 --offered 1 --slots 20 --seed 3 --trace F``.
#: A change here means the run's behaviour or the trace format changed: check why, then update it.
PINNED = "3eedddcee53d93841e8b94e7afd5549593af09457c95a20f447158343e9dcf63"


def test_a_whole_run_is_pinned(tmp_path):
    """Every event of a small deflection run, pinned by one hash."""
    _, result = _traced(tmp_path, "p.jsonl", **DEFL)
    assert result.trace_fingerprint == PINNED
