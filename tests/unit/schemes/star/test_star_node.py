"""The ``star`` scheme end to end: node rule, reporter, prepare, theory beside the run, CLI.

Every run here is short (the slowest, 8x8 at ρ = 0.8, ~3 s); the ordering checks use
a fixed seed and margins far wider than the runs' batch-means intervals.
"""

from __future__ import annotations

import json
import math
from functools import cache

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.errors import SpecError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.tools._trace_query import read_trace


@cache  # several tests read one run: run it once
def _run(topology: str, rho: float, slots: int, warmup: int, seed: int = 1, **params: object):
    return run(RunSpec("star", topology, params=params, load={"rho": rho}, slots=slots, warmup=warmup, seed=seed))


def _brute_distances(spec: str) -> tuple[int, float]:
    """(diameter, mean distance to the other nodes) by BFS over the fabric's ports."""
    top = parse_topology(spec)
    dist = {0: 0}
    frontier = [0]
    while frontier:
        nxt = []
        for v in frontier:
            for p in top.ports(v):
                if p.neighbour not in dist:
                    dist[p.neighbour] = dist[v] + 1
                    nxt.append(p.neighbour)
        frontier = nxt
    return max(dist.values()), sum(dist.values()) / (top.n_nodes - 1)


@pytest.mark.parametrize("topology", ["torus:5x5", "torus:4x4", "torus:3x6", "torus:2x5", "torus:3x4x5",
                                      "torus:2x2x3", "hypercube:4"])
def test_every_broadcast_reaches_every_other_node_exactly_once(topology):
    """Odd, even, unequal, 2-D, 3-D tori and a cube: no duplicate, no miss, N - 1 transmissions each."""
    r = _run(topology, 0.7, 400, 50)
    inv = r.invariants["exactly_once"]
    assert r.invariants["ok"], r.invariants
    assert inv["duplicate_receptions"] == 0 and inv["missed"] == 0 and inv["unknown_packets"] == 0
    assert inv["completed"] > 50 and inv["completed"] + inv["in_progress"] == inv["broadcasts"]
    n = parse_topology(topology).n_nodes
    # every transmission is a first reception: messages = receptions (+ copies still in flight)
    received = sum(r.per_node["received"])
    assert received <= r.performance["messages"] <= received + parse_topology(topology).n_links
    assert sum(r.per_node["born"]) == inv["broadcasts"]
    assert received >= inv["completed"] * (n - 1)


def test_link_utilization_is_the_throughput_factor_on_torus_and_cube():
    """Measured mean link use matches ρ (2d links per torus node, d per cube node, §2)."""
    for topology in ("torus:4x4", "hypercube:4", "torus:3x4x5"):
        r = _run(topology, 0.7, 400, 50)
        assert r.metrics["link_utilization"] == pytest.approx(0.7, rel=0.1)
        assert r.theory["link_utilization"] == pytest.approx(0.7)


def test_unicasts_are_delivered_on_shortest_paths_and_conserved(tmp_path):
    """Every unicast is delivered or accounted for; each delivered one crossed exactly d(src, dest) links."""
    trace = tmp_path / "t.jsonl"
    spec = RunSpec("star", "torus:4x5", params={"lam_unicast": 0.08}, load={"rho": 0.6}, slots=400, warmup=50,
                   seed=2, trace=TraceSpec(str(trace), kinds=frozenset({"sent"})))
    r = run(spec)
    cons = r.invariants["unicast_conservation"]
    assert r.invariants["ok"] and cons["ok"], r.invariants
    assert cons["delivered"] > 300 and cons["born"] == cons["delivered"] + cons["in_flight"] + cons["held"]
    top = parse_topology("torus:4x5")
    paths: dict[tuple[int, int], list[int]] = {}
    dest_of = {}
    for ev in read_trace(trace):  # slot order: a packet's senders in path order
        msg = ev["message"]
        if msg[0] < 0:
            key = (-msg[0] - 1, msg[1])
            paths.setdefault(key, []).append(ev["node"])
            dest_of[key] = msg[2]
            assert msg[5] == len(paths[key]) - 1  # the header's hop count: links crossed so far
    assert len(paths) == cons["born"] - cons["held"]  # every packet but those still at their source
    finished = 0
    for key, path in paths.items():
        dest = dest_of[key]
        assert path[0] == key[0]
        for a, b in zip(path, path[1:]):  # every hop one link closer to the destination
            assert top.distance(a, b) == 1 and top.distance(b, dest) == top.distance(a, dest) - 1
        finished += len(path) == top.distance(key[0], dest)
    assert cons["delivered"] <= finished <= cons["delivered"] + cons["in_flight"]


def test_same_seed_same_metrics_other_seed_other_metrics():
    """One seed fixes the run; another seed changes it."""
    kw = dict(params={"lam_unicast": 0.05}, load={"rho": 0.7}, slots=300, warmup=50)
    a = run(RunSpec("star", "torus:3x5", seed=4, **kw))
    b = run(RunSpec("star", "torus:3x5", seed=4, **kw))
    c = run(RunSpec("star", "torus:3x5", seed=5, **kw))
    assert a.metrics == b.metrics and a.per_node == b.per_node
    assert a.metrics != c.metrics


@pytest.mark.parametrize("topology", ["torus:5x4", "torus:3x4x2", "hypercube:4"])
def test_lone_packets_take_exactly_the_sdc_path_length(topology, tmp_path):
    """Without contention D = diameter + (ceil τ - τ) and R = mean distance + (ceil τ - τ), per packet."""
    trace = tmp_path / "t.jsonl"
    slots = 3000
    r = run(RunSpec("star", topology, load={"lam": 0.0005}, slots=slots, warmup=0, seed=3,
                    trace=TraceSpec(str(trace), kinds=frozenset({"step"}))))
    assert r.metrics["mean_wait"] == 0  # no transmission ever waited: no contention
    diam, mean = _brute_distances(topology)
    taus = [tau for ev in read_trace(trace) for _, tau in ev["births"]]
    done = [t for t in taus if math.ceil(t) + diam < slots]
    assert len(done) == r.metrics["broadcasts_measured"] >= 10
    sync = sum(math.ceil(t) - t for t in done) / len(done)
    assert r.metrics["mean_broadcast_delay"] == pytest.approx(diam + sync, abs=1e-9)
    assert r.metrics["mean_reception_delay"] == pytest.approx(mean + sync, abs=1e-9)
    assert r.theory["mean_broadcast_delay_zero_load"] == diam + 0.5
    assert r.theory["mean_reception_delay_zero_load"] == pytest.approx(mean + 0.5)


def test_priority_star_beats_fcfs_on_a_loaded_8x8_torus():
    """Fixed seed, ρ = 0.8: priority gives smaller reception and broadcast delays (Figs. 2, 5)."""
    p = _run("torus:8x8", 0.8, 2500, 500, discipline="priority")
    f = _run("torus:8x8", 0.8, 2500, 500, discipline="fcfs")
    assert p.invariants["ok"] and f.invariants["ok"]
    assert p.metrics["mean_reception_delay"] < 0.9 * f.metrics["mean_reception_delay"]
    assert p.metrics["mean_broadcast_delay"] + p.metrics["mean_broadcast_delay_ci95"] < (
        f.metrics["mean_broadcast_delay"] - f.metrics["mean_broadcast_delay_ci95"])
    # §3.2: high-priority copies hardly wait; under FCFS both kinds see the same queue
    assert p.metrics["mean_wait_high"] < 0.2 * p.metrics["mean_wait_low"]
    assert f.metrics["mean_wait_other_dims"] == pytest.approx(f.metrics["mean_wait_ending_dim"], rel=0.25)


def test_balanced_ending_probabilities_balance_an_unequal_torus():
    """4x8 at ρ = 0.5: x of eq. (2) puts ρ on both dimensions; a fixed ending dimension does not."""
    bal = _run("torus:4x8", 0.5, 3000, 300)
    fixed = _run("torus:4x8", 0.5, 3000, 300, ending=2)
    assert bal.metrics["link_imbalance"] < 1.12
    assert bal.metrics["link_utilization_per_dim"] == pytest.approx([0.5, 0.5], rel=0.05)
    assert fixed.theory["link_imbalance"] == pytest.approx(56 / 31)  # 0.9032 / 0.5: all but n_1 - 1 on dim 2
    assert fixed.metrics["link_imbalance"] > 1.7
    assert fixed.metrics["link_utilization_per_dim"] == pytest.approx(fixed.theory["link_utilization_per_dim"], rel=0.06)


def test_three_classes_order_the_waits_and_unicast_beats_low_priority():
    """End of §4: broadcast-high waits least, unicast (medium) next, ending-dimension copies most."""
    r = _run("torus:4x6", 0.8, 2000, 200, classes=3, lam_unicast=0.15)
    m = r.metrics
    assert r.invariants["ok"]
    assert m["mean_wait_high"] < m["mean_wait_medium"] < m["mean_wait_low"]
    assert m["mean_wait_medium"] == m["mean_wait_unicast"]
    assert r.theory["mean_wait_high"] < r.theory["mean_wait_medium"] < r.theory["mean_wait_low"]


@pytest.mark.parametrize(
    "topology,params,load,message",
    [
        ("mesh:4x4", {}, {"rho": 0.5}, "runs on torus, hypercube"),
        ("torus:4x4", {"ending": 3}, {"rho": 0.5}, r"ending=3.*1\.\.2"),
        ("torus:4x4", {"discipline": "fcfs", "classes": 3}, {"rho": 0.5}, "classes=3.*needs discipline=priority"),
        ("torus:4x4", {}, {"rho": 0.5, "lam": 0.1}, "exactly one load"),
        ("torus:4x4", {}, {}, "exactly one load"),
        ("torus:4x4", {"lam_unicast": 2.0}, {"rho": 0.5}, "unicast rate.*alone gives"),
        ("torus:4x4", {"lam_unicast": -1.0}, {"rho": 0.5}, "lam_unicast=-1.0"),
        ("torus:4x4", {"hops": "floor"}, {"rho": 0.5}, "expected one of exact, paper"),
    ],
)
def test_prepare_refuses_bad_input_with_precise_messages(topology, params, load, message):
    """Bad topology, ending, class count, load or unicast rate fail before any slot runs."""
    with pytest.raises(SpecError, match=message):
        RunSpec("star", topology, params=params, load=load, slots=10).prepare()


def test_prepare_computes_x_once_and_the_cube_load_convention():
    """Node params carry x of eq. (2); on a hypercube ρ = λ(2^d - 1)/d (one link per dimension)."""
    p = RunSpec("star", "torus:3x5", load={"rho": 0.75}, slots=10).prepare().node_params
    assert p.x == [0.625, 0.375] and p.lam == pytest.approx(0.75 * 4 / 14) and p.n_classes == 2
    q = RunSpec("star", "hypercube:5", load={"rho": 0.6}, slots=10).prepare().node_params
    assert q.lam == pytest.approx(0.6 * 5 / 31) and q.x == [0.2] * 5
    f = RunSpec("star", "torus:3x5", params={"discipline": "fcfs", "ending": 2}, load={"lam": 0.1}, slots=10)
    fp = f.prepare().node_params
    assert fp.x == [0.0, 1.0] and fp.n_classes == 1 and fp.rho == pytest.approx(0.1 * 14 / 4)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_run_theory_and_schemes(capsys):
    """`slotnet run/theory star` work on tori and `slotnet schemes` lists star with its parameters."""
    code, out, _ = _cli(capsys, "run", "star", "-t", "torus:8x8", "--rho", "0.5", "--slots", "600", "--warmup", "100",
                        "--no-progress")
    assert code == 0 and "invariants: ok" in out
    assert any(line.startswith("link_utilization ") for line in out.splitlines())
    code, out, _ = _cli(capsys, "theory", "star", "-t", "torus:4x6", "--rho", "0.5", "--json")
    assert code == 0
    th = json.loads(out)["theory"]
    assert sum(th["ending_dimension_probs"]) == pytest.approx(1.0) and th["throughput_factor"] == pytest.approx(0.5)
    assert th["link_utilization_per_dim"] == pytest.approx([0.5, 0.5])
    code, out, _ = _cli(capsys, "schemes")
    assert code == 0 and "\nstar: " in "\n" + out
    assert "--param discipline=" in out and "--param lam_unicast=" in out


@pytest.mark.slow
def test_fcfs_star_on_a_hypercube_is_the_d_tree_scheme():
    """On the d-cube, STAR with FCFS queues is the non-idling d-tree scheme of [12]: same delays (CI)."""
    kw = dict(load={"rho": 0.6}, slots=3000, warmup=300, seed=2)
    s = run(RunSpec("star", "hypercube:6", params={"discipline": "fcfs"}, **kw)).metrics
    t = run(RunSpec("bcast-dtree", "hypercube:6", **kw)).metrics
    width = 2 * math.hypot(s["mean_broadcast_delay_ci95"], t["mean_broadcast_delay_ci95"])
    assert abs(s["mean_broadcast_delay"] - t["mean_broadcast_delay"]) < width
    assert s["mean_reception_delay"] == pytest.approx(t["mean_reception_delay"], rel=0.03)


def test_unicast_conservation_closes_under_duplication():
    """A dup fault's extra unicast copies are neither losses nor a conservation failure."""
    from slotnet import RunSpec, run

    r = run(RunSpec("star", "torus:4x4", load={"rho": 0.3}, params={"lam_unicast": "0.1"}, slots=300, warmup=50,
                    seed=4, faults=["dup=0.05"]))
    cons = r.invariants["unicast_conservation"]
    assert cons["ok"], cons
    assert r.invariants["ok"]
