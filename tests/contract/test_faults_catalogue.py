"""The fault catalogue: dup, delay, corrupt, partition and stall, parsed, checked and carried out."""

from __future__ import annotations

import json

import pytest

from slotnet import FaultSchedule, RunSpec, TraceSpec, run
from slotnet.errors import FaultSpecError
from slotnet.fabric import FAULT_KINDS, InProcessTransport, SlotClock, parse_topology
from slotnet.nodes import Node
from slotnet.orchestrator import WALL_CLOCK_FIELDS
from slotnet.orchestrator.cli import main
from tests.support.probes import register

ALL_KINDS = ["link-down@5:1:0", "link-up@9:0:0", "crash@12:2", "recover@15:2", "partition@4:8:0-1,3",
             "stall@10:12:5", "loss=0.01", "dup=0.1@2-30", "delay=0.2:3@5", "corrupt=0.05", "corrupt=0.02:undetected@1-9"]


class Stream(Node):
    """Node 0 sends ``(slot, k)`` on port 0 in slots 0..n-1; node 1 logs every inbox it reads."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            for _ in range(ctx.params["n"]):
                ctx.send(0, (ctx.slot, 0))
                await ctx.next_slot()
            return
        while True:
            inbox = await ctx.idle()
            ctx.record("log", [ctx.slot, [list(m) for _, m in inbox]])


def _stream(monkeypatch, faults, n=10, slots=30, **kw):
    register("stream", Stream, monkeypatch, params=("n",))
    r = run(RunSpec("stream", "hypercube:1", params={"n": n}, slots=slots, faults=faults, **kw))
    return {slot: [tuple(m) for m in msgs] for _, slot, (_, msgs) in r.metrics["log"]}, r


def test_every_kind_reads_back_from_its_text_and_its_json_form(tmp_path):
    """to_list() parses back to the same schedule (shards rely on it), and each JSON object means its text."""
    s = FaultSchedule.parse(ALL_KINDS + ["detect=3"])
    assert FaultSchedule.parse(s.to_list()).to_list() == s.to_list() and s.detect == 3
    objects = [{"kind": "partition", "from": 4, "to": 8, "nodes": [3, 0, 1]}, {"kind": "stall", "from": 10, "to": 12, "node": 5},
               {"kind": "dup", "rate": 0.1, "from": 2, "until": 30}, {"kind": "delay", "rate": 0.2, "slots": 3, "from": 5},
               {"kind": "corrupt", "rate": 0.02, "undetected": True, "from": 1, "until": 9}, {"kind": "detect", "slots": "never"}]
    path = tmp_path / "f.json"
    path.write_text(json.dumps(objects))
    f = FaultSchedule.parse(file=path)
    assert f.to_list() == ["partition@4:8:0-1,3", "stall@10:12:5", "dup=0.1@2-30", "delay=0.2:3@5",
                           "corrupt=0.02:undetected@1-9", "detect=never"]
    assert {"dup", "delay", "corrupt", "partition", "stall"} <= set(FAULT_KINDS)


@pytest.mark.parametrize("fault, fragment", [
    ("dup=1.5", "dup rate must be in [0, 1], got 1.5"),
    ("dup=x", "dup rate 'x' is not a number"),
    ("delay=0.1:-2", "delay must be a whole number of slots >= 1, got a negative delay -2"),
    ("delay=0.1:0", "got 0 (no delay)"),
    ("delay=0.1", "delay takes delay=RATE:SLOTS"),
    ("corrupt=0.1:loud", "corrupt takes corrupt=RATE[:undetected]"),
    ("dup=0.1@9-3", "dup window end 3 must be after its start 9"),
    ("delay=0.1:2@5-", "delay window '5-' must be FROM or FROM-UNTIL"),
    ("partition@9:3:0-1", "partition range 9..3 is reversed"),
    ("partition@1:3:3-1", "node range 3-1 is reversed"),
    ("partition@1:3:", "the node set is empty"),
    ("partition@1:3:0,,2", "has an empty item"),
    ("partition@1:3", "partition needs FROM:TO:NODES"),
    ("partition@1:3:0-9", "node 8 not in 0..7"),
    ("partition@1:3:0-7", "the set holds every node of hypercube:3, so it cuts no link"),
    ("partition@1:60:0", "it ends at slot 60, past the run's 50 slots (0..49)"),
    ("stall@2:4:0-1", "stall NODE must be one node id"),
    ("stall@70:80:1", "it begins at slot 70, past the run's 50 slots"),
    ("stall@2:4:12", "node 12 not in 0..7"),
    ("dup=0.1@60", "the window starts at slot 60, after the run's 50 slots"),
    ("detect=soon", "detection delay must be a whole number of slots >= 0 or 'never'"),
])
def test_malformed_or_impossible_faults_exit_2_naming_the_part(capsys, fault, fragment):
    """Each bad entry is refused before the run: status 2 and one line that names what is wrong."""
    code = main(["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "50", "--no-progress",
                 "--fault", fault])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("faults, fragment", [
    (["crash@2:3", "stall@3:5:3"], "stall@3:5:3: node 3 is down at slot 3 (since crash@2:3)"),
    (["stall@3:5:3", "crash@4:3"], "node 3 cannot crash while stalled (crash@4:3)"),
    (["stall@3:5:3", "stall@5:7:3"], "node 3 is already stalled at slot 5 by stall@3:5:3"),
])
def test_a_stall_needs_its_node_up_throughout(faults, fragment):
    """Stalls do not overlap a crash, a recovery or another stall of their node."""
    with pytest.raises(FaultSpecError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        FaultSchedule.parse(faults).validate(parse_topology("hypercube:3"), 20)


def test_detection_given_twice_differently_is_refused(capsys):
    """--detect and a detect= entry that disagree are one error, naming both."""
    code = main(["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20", "--no-progress",
                 "--fault", "detect=2", "--detect", "never"])
    err = capsys.readouterr().err
    assert code == 2 and "detection delay given twice" in err and "detect=2" in err


def test_dup_delivers_a_copy_in_the_next_free_slot_of_the_link(monkeypatch):
    """Copies of slots 0-4 wait while the link is busy and then follow one per slot, oldest first."""
    got, r = _stream(monkeypatch, ["dup=1.0@0-5"])
    assert all(len(msgs) == 1 for msgs in got.values())  # never two units on one in-port in one slot
    assert [got[s][0] for s in sorted(got)] == [(s, 0) for s in range(10)] + [(s, 0) for s in range(5)]
    assert sorted(got)[10:] == [11, 12, 13, 14, 15]
    assert r.fault_impact["messages"] == {"duplicated": {"dup": 5}}
    assert r.invariants["probe"]["lost"] == {"dup": -5}  # the ledger's net view: five copies added


def test_delay_holds_a_message_back_and_respects_link_capacity(monkeypatch):
    """A message held 3 slots arrives 3 slots late when its link is free, later while it is busy."""
    got, r = _stream(monkeypatch, ["delay=1.0:3@1-2"], n=3)
    assert got == {1: [(0, 0)], 3: [(2, 0)], 5: [(1, 0)]}
    got, r = _stream(monkeypatch, ["delay=1.0:2@0-1"], n=10)
    assert got[11] == [(0, 0)] and 1 not in got and all(len(m) == 1 for m in got.values())
    assert r.fault_impact["messages"] == {"delayed": {"delay": 1}}


def test_detected_corruption_is_dropped_as_corrupt(monkeypatch):
    """Flipped bytes fail the frame's CRC-32: the message never reaches the node, lost cause corrupt."""
    got, r = _stream(monkeypatch, ["corrupt=1.0@0-4"])
    assert sorted(got) == list(range(5, 11))
    assert r.metrics["lost"] == [((s, 0), "corrupt") for s in range(4)]  # the original message, for accounting
    assert r.fault_impact["messages"] == {"lost": {"corrupt": 4}, "corrupted": {"corrupt": 4}}


def test_undetected_corruption_is_a_counted_traced_rejection_never_a_crash(monkeypatch, tmp_path):
    """Garbage past the checksum is refused by the receiving fabric's decode: lost undecodable, traced."""
    path = tmp_path / "t.jsonl"
    got, r = _stream(monkeypatch, ["corrupt=1.0:undetected@0-4"], trace=TraceSpec(str(path), nodes=frozenset({1})))
    assert sorted(got) == list(range(5, 11))
    assert r.fault_impact["messages"] == {"lost": {"undecodable": 4}, "corrupted": {"undetected": 4}}
    lost = [json.loads(line) for line in path.read_text().splitlines() if '"lost"' in line]
    assert [(e["slot"], e["cause"], e["message"]) for e in lost] == [(s + 1, "undecodable", [s, 0]) for s in range(4)]


def test_frames_carry_a_checksum_only_when_a_corrupt_fault_is_scheduled():
    """The hot path keeps its plain msgpack frames unless corruption can happen."""
    topo = parse_topology("hypercube:1")
    plain = InProcessTransport(topo, SlotClock(), FaultSchedule.parse(["loss=0.5", "dup=0.5", "delay=0.5:2"]))
    sealed = InProcessTransport(topo, SlotClock(), FaultSchedule.parse(["corrupt=0.001@900"]))
    assert not plain.checksums and sealed.checksums
    plain.outlet(0).send(0, (1, 2))
    sealed.outlet(0).send(0, (1, 2))
    assert len(sealed.pending_frames(1)[0][1]) == len(plain.pending_frames(1)[0][1]) + 4


class PingEvery(Node):
    """Every node sends its id on every port in every slot below ``n`` and logs what it reads."""

    async def run(self) -> None:
        ctx = self.ctx
        while True:
            if ctx.slot < ctx.params["n"]:
                for p in ctx.ports:
                    ctx.send(p.index, ctx.node)
            inbox = await ctx.next_slot()
            if inbox:
                ctx.record("log", [ctx.slot, [m for _, m in inbox]])


def test_a_partition_cuts_every_link_between_the_set_and_the_rest(monkeypatch):
    """Links from {0, 1} to {2, 3} are down in slots 3..5; links inside each side keep working."""
    register("pingevery", PingEvery, monkeypatch, params=("n",))
    r = run(RunSpec("pingevery", "hypercube:2", params={"n": 10}, slots=12, faults=["partition@3:5:0-1"]))
    for node, slot, (_, msgs) in r.metrics["log"]:
        across = node ^ 2
        assert (across in msgs) == (not 3 <= slot <= 5), (node, slot, msgs)
        assert node ^ 1 in msgs
    assert r.invariants["probe"]["lost"] == {"partition": 12}
    assert r.fault_impact["avoidable"] == {"partition": 4}  # sent in slot 4, after the detector showed it


def test_partitions_and_link_faults_combine(monkeypatch):
    """A link-up inside a partition does not bring the link back before the partition ends."""
    register("pingevery", PingEvery, monkeypatch, params=("n",))
    r = run(RunSpec("pingevery", "hypercube:2", params={"n": 10}, slots=12,
                    faults=["link-down@2:0:1", "link-up@4:2:1", "partition@3:5:0-1"]))
    got = {(node, slot): msgs for node, slot, (_, msgs) in r.metrics["log"]}
    assert all(2 not in got[(0, s)] for s in range(2, 6)) and 2 in got[(0, 6)]
    assert r.invariants["probe"]["lost"] == {"link_down": 4, "partition": 10}  # a link held down by both: link_down


class Counter(Node):
    """Node 0 counts the slots it runs (logging slot, count, inbox); node 1 pings it every slot."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 1:
            while True:
                ctx.send(0, ctx.slot)
                await ctx.next_slot()
        count = 0
        inbox: object = ()
        while True:
            ctx.record("log", [ctx.slot, count, [m for _, m in inbox]])  # type: ignore[attr-defined]
            count += 1
            inbox = await (ctx.idle(until=ctx.slot + 2) if ctx.params.get("n") == "timer" else ctx.next_slot())


@pytest.mark.parametrize("mode", ["every-slot", "timer"])
def test_a_stalled_node_misses_its_slots_keeps_its_state_and_loses_its_inbox(monkeypatch, mode):
    """Node 0 runs no step in slots 3..6, counts on afterwards, and what reached it meanwhile is lost."""
    register("counter", Counter, monkeypatch, params=("n",))
    r = run(RunSpec("counter", "hypercube:1", params={"n": mode}, slots=10, faults=["stall@3:6:0"]))
    log = [(slot, count, msgs) for node, slot, (_, count, msgs) in r.metrics["log"]]
    assert not any(3 <= slot <= 6 for slot, _, _ in log)
    after = [e for e in log if e[0] >= 7]
    assert after[0][0] == 7 and after[0][1] == len(log) - len(after)  # the count went on where it stopped
    assert after[0][2] == [6]  # sent in the stall's last slot, read in the first after it
    assert r.invariants["probe"]["lost"] == {"stalled": 4}


def test_a_node_stalled_from_slot_0_takes_its_first_step_after_the_stall(monkeypatch):
    """stall@0:2 on a node: its first step is in slot 3, with its state fresh."""
    register("counter", Counter, monkeypatch, params=("n",))
    r = run(RunSpec("counter", "hypercube:1", params={"n": "x"}, slots=6, faults=["stall@0:2:0"]))
    log = [(slot, count) for node, slot, (_, count, _) in r.metrics["log"]]
    assert log[0] == (3, 0) and [s for s, _ in log] == [3, 4, 5]


def _det(result) -> str:
    d = result.to_dict(per_node=True, series=True)
    for k in WALL_CLOCK_FIELDS:
        d.pop(k)
    return json.dumps(d, sort_keys=True)


@pytest.mark.parametrize("scheme, load", [("deflection", {"offered": 1.2}), ("bcast-dtree", {"rho": 0.4})])
def test_every_kind_is_deterministic_under_any_scheduling_order(tmp_path, shuffled_scheduling, scheme, load):
    """Same spec and seed, Trio shuffling differently: byte-identical JSON and trace, every kind at once."""
    out = []
    for seed in (1, 2):
        shuffled_scheduling(seed)
        path = tmp_path / f"t{seed}.jsonl"
        r = run(RunSpec(scheme, "hypercube:4", load=load, slots=60, seed=5, faults=ALL_KINDS,
                        trace=TraceSpec(str(path), nodes=frozenset({0, 1, 5}))))
        out.append((_det(r), path.read_text()))
    assert out[0] == out[1]
    assert r.invariants["ok"], r.invariants


def test_conservation_closes_under_every_kind():
    """created = delivered + dropped + in flight + held - dup copies; drops are causes, copies apart."""
    r = run(RunSpec("deflection", "hypercube:5", load={"lam": 1.0}, slots=150, seed=2, faults=ALL_KINDS))
    c = r.invariants["conservation"]
    assert c["ok"] and c["unaccounted"] == 0 and c["dup_copies"] == r.fault_impact["messages"]["duplicated"]["dup"] > 0
    assert all(n > 0 for n in c["dropped"].values()) and "dup" not in c["dropped"]
    assert c["created"] == c["delivered"] + sum(c["dropped"].values()) + c["in_flight"] + c["held"] - c["dup_copies"]
    assert set(c["dropped"]) >= {"loss", "partition", "stalled", "corrupt", "undecodable", "link_down", "node_down"}


def test_sharded_runs_judge_message_faults_as_one_process_does():
    """Frames carry the (checksummed) bytes: 2 shards give the in-process result, fault impact included."""
    spec = RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=40, seed=9, faults=ALL_KINDS)
    one = run(spec).to_dict(per_node=True)
    two = run(RunSpec(**{**spec.__dict__, "shards": 2})).to_dict(per_node=True)
    assert two["transport"]["kind"] == "mqtt"
    for key in ("metrics", "invariants", "per_node", "faults", "fault_impact"):
        assert one[key] == two[key], key


@pytest.mark.slow
def test_sharded_broadcast_under_every_kind():
    """A broadcast scheme over 3 shards equals the in-process run under every fault kind."""
    spec = RunSpec("bcast-dtree", "hypercube:5", load={"rho": 0.5}, slots=100, warmup=10, seed=4, faults=ALL_KINDS)
    one = run(spec).to_dict(per_node=True)
    three = run(RunSpec(**{**spec.__dict__, "shards": 3})).to_dict(per_node=True)
    for key in ("metrics", "invariants", "per_node", "fault_impact"):
        assert one[key] == three[key], key
