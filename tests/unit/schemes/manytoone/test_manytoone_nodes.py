"""The many-to-one schemes on the fabric: rec == its reference, delivery, buffers, bfs, offline, errors."""

from __future__ import annotations

import dataclasses
import json
import math
import random

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.schemes import SCHEMES, Setup
from slotnet.schemes.manytoone._bfs_route import class_count
from slotnet.schemes.manytoone._inputs import instance_of
from slotnet.schemes.manytoone._rec_reference import reference_run
from slotnet.schemes.manytoone.instances import Instance, instance_to_json, make_instance, mesh_coords, mesh_node
from slotnet.schemes.manytoone.offline import node_plans
from slotnet.schemes.manytoone.reporter import M2OReporter

FAMILIES = ["all-to-one", "hotspots:k=3", "uniform", "region:lo=0,0;hi=1,2", "bounded:r=2", "uniform:fraction=0.5"]
FAMILIES_3D = ["all-to-one", "hotspots:k=3", "uniform", "region:lo=1,0,0;hi=2,1,3", "bounded:r=2",
               "all-to-one:fraction=0.5"]
SCHEME_NAMES = ["m2o-greedy", "m2o-rec", "m2o-bfs", "m2o-offline"]


def _capturing(monkeypatch, name: str) -> tuple[str, list[M2OReporter]]:
    """A copy of scheme ``name`` whose reporters are kept for inspection."""
    kept: list[M2OReporter] = []

    class Keep(M2OReporter):
        def __init__(self, setup: Setup) -> None:
            super().__init__(setup)
            kept.append(self)

    copy = f"{name}-kept"
    monkeypatch.setitem(SCHEMES, copy, dataclasses.replace(SCHEMES[name], name=copy, reporter=Keep))
    return copy, kept


def _file(tmp_path, inst: Instance, name: str = "inst.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(instance_to_json(inst)))
    return str(path)


def _topo(sides: tuple[int, ...]) -> str:
    return "mesh:" + "x".join(map(str, sides))


def _random_instance(rng: random.Random, sides: tuple[int, ...]) -> Instance:
    n = math.prod(sides)
    srcs = rng.sample(range(n), rng.randint(0, n))
    hot = rng.sample(range(n), rng.randint(1, min(4, n)))
    mode = rng.random()
    return Instance(sides, tuple((s, rng.choice(hot) if mode < 0.6 else rng.randrange(n)) for s in srcs))


# ---------------------------------------------------------------- m2o-rec against its reference

REC_SIDES = [(2,), (8,), (16,), (2, 2), (4, 4), (8, 8), (8, 4), (2, 8), (2, 2, 2), (4, 4, 4), (4, 2, 8), (2, 4, 2)]


def test_rec_on_the_fabric_equals_the_reference_step_for_step(monkeypatch, tmp_path):
    """On 72 small 1-D/2-D/3-D instances: same delivery times, per-node buffer maxima, invocations and return step."""
    name, kept = _capturing(monkeypatch, "m2o-rec")
    rng = random.Random(2024)
    for trial in range(72):
        sides = REC_SIDES[trial % len(REC_SIDES)]
        if trial % 2:
            inst = _random_instance(rng, sides)
        else:
            fam = ["all-to-one", "uniform", "hotspots:k={k}", "bounded:r=2"][trial // 2 % 4]
            inst = make_instance(fam.format(k=min(3, math.prod(sides))), sides, random.Random(trial))
        kept.clear()
        r = run(RunSpec(name, _topo(sides), params={"instance": _file(tmp_path, inst)}, slots=100_000))
        assert r.invariants["ok"], r.invariants
        inst = instance_of(kept[0].setup.topology, kept[0].setup.params)
        ref = reference_run(inst)
        srcs = [s for s, _ in inst.packets]
        assert tuple(r.per_node["delivery_time"][s] for s in srcs) == ref.first_arrival
        assert tuple(r.per_node["final_arrival"][s] for s in srcs) == ref.delivery
        assert tuple(r.per_node["max_load"]) == ref.node_max_load
        assert tuple(r.per_node["max_occupancy"]) == ref.node_max_occupancy
        want = sorted((i.level, i.cube, i.index, i.start, i.n_packets) for i in ref.invocations)
        assert sorted(kept[0].invocations()) == want
        assert r.metrics["return_time"] == ref.return_time == r.completion["slot"]
        assert r.metrics["completion_time"] == ref.paper_time and r.metrics["max_queue"] == ref.max_load


def test_rec_all_to_centre_matches_the_reference_on_16x16_and_8x8x8():
    """The acceptance instances at small scale: T, buffers and Lemma 4.3 from the nodes' own events."""
    for topo, sides in (("mesh:16x16", (16, 16)), ("mesh:8x8x8", (8, 8, 8))):
        r = run(RunSpec("m2o-rec", topo, params={"workload": "all-to-one"}, slots=100_000))
        ref = reference_run(make_instance("all-to-one", sides, random.Random(0)), check_links=False)
        assert r.invariants["ok"] and r.invariants["lemma_4_3"]["invocations"] == len(ref.invocations)
        assert (r.metrics["completion_time"], r.metrics["max_queue"]) == (ref.paper_time, ref.max_load)
        assert r.metrics["lemma_4_3_max"] <= 2
        assert r.theory["completion_time"] == r.metrics["completion_time"]


def test_lemma_4_3_and_delivery_invariants_can_fail():
    """The reporter flags an invocation above 2 V(H), a duplicate, a wrong node and a missing packet."""
    inst = Instance((4, 4), ((0, 5), (1, 5)))
    params = {"dest": [5, 5] + [-1] * 14}

    class Geo:
        kind, sides, n_nodes, spec = "mesh", (4, 4), 16, "mesh:4x4"

    rep = M2OReporter(Setup(Geo(), params, {}, 10, 0, 0))  # type: ignore[arg-type]
    assert instance_of(Geo(), params) == inst
    rep._inv(0, 0, 1, 0, 0, 8, 7)  # 8 packets in a level-1 cube of 4 nodes: 2 V(H) = 8, allowed
    rep._inv(0, 0, 2, 0, 0, 3, 9)  # 3 packets at one node: 2 V(H) = 2, Lemma 4.3 broken
    rep._delivered(5, 3, 0, 3, 3)
    rep._delivered(5, 4, 0, 4, 4)  # again
    rep._delivered(6, 4, 1, 4, 4)  # wrong node
    inv = rep.invariants({}, [], [0] * 16)
    assert inv["lemma_4_3"] == {"ok": False, "invocations": 2, "over_2V": 1, "inconsistent_starts": 0}
    assert inv["every_packet_delivered_once"] == {"ok": False, "missing": 1, "duplicates": 1, "wrong_node": 1}


# ---------------------------------------------------------------- every scheme, every family


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
@pytest.mark.parametrize("topo,families", [("mesh:8x8", FAMILIES), ("mesh:4x4x4", FAMILIES_3D)])
def test_every_scheme_delivers_every_packet_of_every_family(scheme, topo, families):
    """2-D and 3-D: each family, every packet delivered once at its destination, invariants hold, T >= the lower bound."""
    for fam in families:
        r = run(RunSpec(scheme, topo, params={"workload": fam, "seed": 5}, slots=100_000))
        assert r.completion["complete"] and r.invariants["ok"], (scheme, fam, r.invariants)
        m = r.metrics
        assert m["delivered"] == m["packets"] > 0
        assert m["completion_time"] >= r.theory["lower_bound"]
        assert m["mean_delay"] >= r.theory["mean_delay_lower_bound"] - 1e-9
        for got, bound in zip(m["class_mean_delay"], r.theory["class_mean_delay_lower_bound"]):
            assert (got is None) == (bound is None) and (got is None or got >= bound - 1e-9)


@pytest.mark.parametrize("scheme", ["m2o-greedy", "m2o-offline"])
def test_schemes_without_the_hierarchy_take_any_sides(scheme):
    """Greedy and the offline plan run on sides that are not powers of two, in 1, 2 and 3 dimensions."""
    for topo in ("mesh:7", "mesh:5x3", "mesh:3x5x2"):
        r = run(RunSpec(scheme, topo, params={"workload": "uniform"}, slots=10_000))
        assert r.invariants["ok"] and r.metrics["delivered"] == r.metrics["packets"]


# ---------------------------------------------------------------- greedy against a sequential simulation


def _greedy_reference(inst: Instance, farthest: bool) -> tuple[dict[int, int], list[int]]:
    """Dimension-order routing with per-port queues, step by step (delivery per source, max load per node)."""
    sides = inst.sides
    n = inst.n_nodes
    strides = [math.prod(sides[:i]) for i in range(len(sides))]
    queues: list[dict[int, list]] = [{} for _ in range(n)]
    seq = [0] * n
    peak = [0] * n
    done: dict[int, int] = {}

    def enqueue(v: int, src: int, dst: int) -> None:
        a, b = mesh_coords(sides, v), mesh_coords(sides, dst)
        dim = next(i for i in range(len(sides)) if a[i] != b[i])
        port = 2 * dim + (0 if b[dim] > a[dim] else 1)
        seq[v] += 1
        queues[v].setdefault(port, []).append((-sum(abs(x - y) for x, y in zip(a, b)), seq[v], src, dst))

    for s, d in inst.packets:
        if s == d:
            done[s] = 0
        else:
            enqueue(s, s, d)
    t = 0
    while any(q for qs in queues for q in qs.values()):
        for v in range(n):
            peak[v] = max(peak[v], sum(len(q) for q in queues[v].values()))
        moves = []
        for v in range(n):
            for port in sorted(queues[v]):
                q = queues[v][port]
                if q:
                    item = min(q) if farthest else q[0]
                    q.remove(item)
                    dim, sign = port // 2, (1 if port % 2 == 0 else -1)
                    moves.append((v + sign * strides[dim], port ^ 1, item))
        t += 1
        for w, _in_port, (_, _, src, dst) in sorted(moves, key=lambda m: (m[0], m[1])):
            if w == dst:
                done[src] = t
            else:
                enqueue(w, src, dst)
    return done, peak


@pytest.mark.parametrize("order", ["fifo", "farthest-first"])
def test_greedy_equals_a_sequential_simulation(order, tmp_path):
    """Delivery times and per-node buffer maxima equal an independent step-by-step simulation."""
    rng = random.Random(11)
    for trial, sides in enumerate([(9,), (6, 5), (8, 8), (3, 4, 3), (4, 4, 4)] * 3):
        inst = _random_instance(rng, sides) if trial % 2 else make_instance("all-to-one", sides, rng)
        r = run(RunSpec("m2o-greedy", _topo(sides), params={"instance": _file(tmp_path, inst), "order": order},
                        slots=10_000))
        done, peak = _greedy_reference(inst, order == "farthest-first")
        assert r.invariants["ok"]
        assert {s: r.per_node["delivery_time"][s] for s, _ in inst.packets} == done
        assert r.per_node["max_load"] == peak


def test_greedy_buffers_grow_with_the_packets_on_all_to_centre():
    """All-to-centre: greedy's largest buffer is the packets of the longest row (n/2 a side), rec's stays small."""
    q = {}
    for side in (8, 16):
        topo = f"mesh:{side}x{side}"
        q[side] = (run(RunSpec("m2o-greedy", topo, slots=10_000)).metrics["max_queue"],
                   run(RunSpec("m2o-rec", topo, slots=10_000)).metrics["max_queue"])
    assert q[8][0] == 8 and q[16][0] == 16
    assert q[16][1] - q[8][1] <= 4


# ---------------------------------------------------------------- m2o-bfs


def test_bfs_versions_use_only_their_own_slots(tmp_path):
    """Time multiplexing: a class-k packet arrives only in slots t = k + 1 (mod K), K the number of versions."""
    for sides in ((16, 16), (8, 8, 8), (16,)):
        r = run(RunSpec("m2o-bfs", _topo(sides), params={"workload": "uniform", "seed": 3}, slots=100_000))
        assert r.invariants["ok"] and r.invariants["phases_within_windows"]["overruns"] == 0
        k = class_count(sides)
        inst = make_instance("uniform", sides, random.Random(3))
        for s, d in inst.packets:
            dist = inst.distance(s, d)
            t = r.per_node["delivery_time"][s]
            assert t == 0 if dist == 0 else t % k == (dist.bit_length() - 1 + 1) % k


def test_bfs_short_classes_are_fast_with_the_preliminary_simplification():
    """Distance-1 packets of a uniform 16x16 instance are delivered within a small multiple of K, not of the side."""
    r = run(RunSpec("m2o-bfs", "mesh:16x16", params={"workload": "bounded:r=1"}, slots=100_000))
    assert r.invariants["ok"]
    assert r.metrics["class_mean_delay"][0] <= 12 * class_count((16, 16))


# ---------------------------------------------------------------- m2o-offline (centralised)


def test_offline_replay_is_the_planned_schedule():
    """The nodes carry the §3 schedule exactly: T_loc and every delivery time as planned."""
    from slotnet.schemes.manytoone._offline_schedule import offline_schedule

    for sides, fam in (((8, 8), "all-to-one"), ((6, 5), "hotspots:k=2"), ((4, 4, 4), "uniform")):
        inst = make_instance(fam, sides, random.Random(0))
        sched = offline_schedule(inst)
        r = run(RunSpec("m2o-offline", _topo(sides), params={"workload": fam}, slots=10_000))
        assert r.invariants["ok"] and r.metrics["completion_time"] == sched.length
        firsts = {}
        for (s, d), traj in zip(inst.packets, sched.trajectories):
            firsts[s] = min((t for t, v in traj if v == d), default=0)
        assert {s: r.per_node["delivery_time"][s] for s, _ in inst.packets} == firsts
        plans, length = node_plans(inst)
        assert length == sched.length and sum(map(len, plans)) == sum(len(t) - 1 for t in sched.trajectories)


# ---------------------------------------------------------------- errors and the command line


def test_rec_and_bfs_take_any_sides_and_other_kinds_are_refused():
    """rec and bfs take sides that are not powers of two (§4's halves ⌈s/2⌉, ⌊s/2⌋: test_manytoone_embed);
    other topology kinds and dimensions are refused."""
    for scheme in ("m2o-rec", "m2o-bfs"):
        prep = RunSpec(scheme, "mesh:6x4").prepare()
        assert len(prep.node_params["dest"]) == 24
    with pytest.raises(SpecError, match="runs on mesh"):
        RunSpec("m2o-greedy", "torus:4x4").prepare()
    with pytest.raises(SpecError, match="dimension 1 to 3"):
        RunSpec("m2o-greedy", "mesh:2x2x2x2").prepare()


def test_bad_instances_are_refused_before_the_run(tmp_path):
    """A bad file names the file, the entry and the fault; a workload that does not fit names itself."""
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"packets": [[[0, 0], [3, 3]], [[0, 0], [1, 1]]]}))
    with pytest.raises(SpecError, match=r"bad.json: packets\[1\]: source \[0, 0\] already used by packets\[0\]"):
        RunSpec("m2o-rec", "mesh:4x4", params={"instance": str(bad)}).prepare()
    bad.write_text(json.dumps({"packets": [[[0, 0], [4, 0]]]}))
    with pytest.raises(SpecError, match=r"packets\[0\]: destination coordinate 0 is 4, outside \[0, 4\)"):
        RunSpec("m2o-greedy", "mesh:4x4", params={"instance": str(bad)}).prepare()
    with pytest.raises(SpecError, match="cannot read instance file"):
        RunSpec("m2o-bfs", "mesh:4x4", params={"instance": str(tmp_path / "none.json")}).prepare()
    with pytest.raises(SpecError, match=r"workload 'hotspots:k=20' on mesh 4x4: hotspots: k must be"):
        RunSpec("m2o-greedy", "mesh:4x4", params={"workload": "hotspots:k=20"}).prepare()
    with pytest.raises(SpecError, match="unknown workload 'nope'"):
        RunSpec("m2o-greedy", "mesh:4x4", params={"workload": "nope"}).prepare()


def test_cli_run_theory_and_bad_file(capsys, tmp_path):
    """slotnet run m2o-rec / theory m2o-greedy work; a bad instance file exits 2 with one line."""
    from slotnet.orchestrator.cli import main

    assert main(["run", "m2o-rec", "-t", "mesh:8x8", "--param", "workload=all-to-one"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("completion_time"))
    assert line.split()[1] == line.split()[2] == "447"  # the run beside the reference execution
    assert main(["theory", "m2o-greedy", "-t", "mesh:8x8", "--param", "workload=hotspots:k=3"]) == 0
    out = capsys.readouterr().out
    assert "congestion" in out and "lower_bound" in out and "dilation" in out
    bad = tmp_path / "bad.json"
    bad.write_text("{\"packets\": [[[0, 0]]]}")
    assert main(["run", "m2o-rec", "-t", "mesh:8x8", "--param", f"instance={bad}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "packets[0]: must be a pair [source, destination]" in err[0]


def test_a_one_node_wide_family_and_an_empty_instance(tmp_path):
    """Packets born at their destination are delivered at 0; an instance without packets finishes at once."""
    inst = Instance((4, 4), ((0, 0), (5, 5), (6, 10)))
    empty = Instance((4, 4), ())
    for scheme in SCHEME_NAMES:
        r = run(RunSpec(scheme, "mesh:4x4", params={"instance": _file(tmp_path, inst)}, slots=10_000))
        assert r.invariants["ok"] and r.per_node["delivery_time"][0] == r.per_node["delivery_time"][5] == 0
        assert r.per_node["delivery_time"][6] >= inst.distance(6, 10) == 1
        r = run(RunSpec(scheme, "mesh:4x4", params={"instance": _file(tmp_path, empty, "e.json")}, slots=10_000))
        assert r.invariants["ok"] and r.metrics["completion_time"] == 0 and r.metrics["delivered"] == 0


def test_greedy_next_hop_corrects_dimension_zero_first():
    """Greedy's next hop corrects dimension 0 first, then 1; None at the destination."""
    from slotnet.schemes.manytoone.greedy import next_port

    assert next_port((4, 4), (0, 0), (2, 3)) == (0, 1)
    assert next_port((4, 4), (2, 0), (2, 3)) == (1, 1)
    assert next_port((4, 4), (2, 3), (2, 3)) is None
    assert mesh_node((4, 4), (2, 3)) == 14
