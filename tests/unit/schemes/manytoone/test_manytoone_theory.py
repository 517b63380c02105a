"""Bounds of Mansour & Patt-Shamir (§2, §5) by brute force, and the offline schedule of §3."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest

from slotnet.schemes.manytoone import _offline_schedule as off
from slotnet.schemes.manytoone import theory as th
from slotnet.schemes.manytoone._rec_reference import reference_run
from slotnet.schemes.manytoone.instances import Instance, all_to_one, make_instance, mesh_coords

TINY = [(5,), (7,), (3, 3), (2, 4), (4, 3), (2, 2, 2), (3, 2, 2)]
FAMILIES = ["all-to-one", "uniform", "hotspots:k=2", "bounded:r=2", "region:lo={lo};hi={hi}", "uniform:fraction=0.5"]


def _random_instance(rng: random.Random, sides: tuple[int, ...]) -> Instance:
    n = math.prod(sides)
    srcs = rng.sample(range(n), rng.randint(0, n))
    hot = rng.sample(range(n), rng.randint(1, 3))
    mode = rng.random()
    return Instance(sides, tuple((s, rng.choice(hot) if mode < 0.6 else rng.randrange(n)) for s in srcs))


def _family(spec: str, sides: tuple[int, ...], seed: int) -> Instance:
    lo = ",".join("0" for _ in sides)
    hi = ",".join(str(min(1, s - 1)) for s in sides)
    return make_instance(spec.format(lo=lo, hi=hi), sides, random.Random(seed))


def _edges(sides):
    n = math.prod(sides)
    return [
        (a, b)
        for a in range(n)
        for b in range(a + 1, n)
        if sum(abs(x - y) for x, y in zip(mesh_coords(sides, a), mesh_coords(sides, b))) == 1
    ]


def _boxes(sides):
    for lo in itertools.product(*(range(s) for s in sides)):
        for hi in itertools.product(*(range(a, s) for a, s in zip(lo, sides))):
            yield lo, hi


def _inside(sides, v, lo, hi):
    return all(a <= c <= b for a, c, b in zip(lo, mesh_coords(sides, v), hi))


def _brute(inst: Instance):
    """W_I and B_I by enumerating every box and every edge (no prefix sums)."""
    sides, edges = inst.sides, _edges(inst.sides)
    w, b = Fraction(0), 0
    for lo, hi in _boxes(sides):
        z = sum(_inside(sides, x, lo, hi) != _inside(sides, y, lo, hi) for x, y in edges)
        if z == 0:
            continue
        n_dest = sum(_inside(sides, d, lo, hi) for _, d in inst.packets)
        n_src = sum(_inside(sides, s, lo, hi) for s, _ in inst.packets)
        w = max(w, Fraction(n_dest, z))
        b = max(b, -(-max(0, n_dest - n_src) // z))
    return w, b


def test_boundary_size_counts_leaving_edges():
    """Z(H) of every box of small meshes equals the number of mesh edges with one end inside."""
    for sides in [(5,), (3, 4), (2, 3, 2)]:
        edges = _edges(sides)
        for lo, hi in _boxes(sides):
            z = sum(_inside(sides, x, lo, hi) != _inside(sides, y, lo, hi) for x, y in edges)
            assert th.boundary_size(sides, lo, hi) == z


def test_congestion_and_bandwidth_match_brute_force():
    """W_I and B_I from prefix sums equal a box-by-box, edge-by-edge count on random tiny instances."""
    rng = random.Random(1)
    for trial in range(120):
        inst = _random_instance(rng, TINY[trial % len(TINY)])
        w, b = _brute(inst)
        assert th.congestion(inst) == w
        assert th.bandwidth_bound(inst) == b
        assert th.bandwidth_bound(inst) <= math.ceil(th.congestion(inst))


def test_congestion_witness_and_all_to_one_values():
    """The witness box attains W exactly; all-to-centre on 8x8 has W = 64/4 at the centre node."""
    inst = all_to_one((8, 8), random.Random(1))
    box = th.congestion_box(inst)
    assert box is not None and box.value == Fraction(16) and box.lo == box.hi == (4, 4)
    assert (box.n_dest, box.n_source, box.z) == (64, 1, 4)
    assert th.bandwidth_bound(inst) == 16  # ceil(63/4)
    assert th.congestion(Instance((1,), ((0, 0),))) == 0


def test_dilation_brute_force():
    """D_I is the largest Manhattan distance of a packet (0 when there is none)."""
    rng = random.Random(2)
    for trial in range(50):
        inst = _random_instance(rng, TINY[trial % len(TINY)])
        expect = max(
            (sum(abs(a - b) for a, b in zip(mesh_coords(inst.sides, s), mesh_coords(inst.sides, d))) for s, d in inst.packets), default=0
        )
        assert th.dilation(inst) == expect
    assert th.dilation(Instance((4,), ())) == 0


def test_lower_bound_below_both_references():
    """Theorem 2.1's bound (exact form) never exceeds rec_route's or the offline schedule's time."""
    rng = random.Random(3)
    sides_list = [(4,), (8,), (2, 2), (4, 4), (2, 4), (8, 4), (2, 2, 2), (4, 4, 4), (4, 2, 2)]
    for trial in range(90):
        sides = sides_list[trial % len(sides_list)]
        inst = _random_instance(rng, sides) if trial % 2 else _family(FAMILIES[trial % len(FAMILIES)], sides, trial)
        lb = th.lower_bound(inst)
        rec = reference_run(inst)
        sched = off.offline_schedule(inst)
        assert lb <= rec.paper_time <= rec.completion_time
        assert lb <= sched.length
        assert max(th.dilation(inst), 0) <= lb


def test_mean_delay_lower_bound_holds_for_both_references():
    """§5's average-delay argument, made exact, is below the mean first arrival of both schedules."""
    rng = random.Random(4)
    for trial in range(40):
        sides = [(8,), (4, 4), (8, 8), (2, 2, 2), (4, 4, 4)][trial % 5]
        inst = _random_instance(rng, sides)
        if not len(inst):
            continue
        rec = reference_run(inst, check_links=False)
        sched = off.offline_schedule(inst)
        first_off = [next(t for t, v in traj if v == d) if s != d else 0 for (s, d), traj in zip(inst.packets, sched.trajectories)]
        for cls in [None, *th.distance_classes(inst).values()]:
            idx = range(len(inst)) if cls is None else cls
            bound = th.mean_delay_lower_bound(inst, idx)
            assert bound <= sum(rec.first_arrival[i] for i in idx) / len(idx) + 1e-9
            assert bound <= sum(first_off[i] for i in idx) / len(idx) + 1e-9


def test_mean_delay_lower_bound_all_to_one_value():
    """On 1-D all-to-one the crossing bound of the single target node is the binding one."""
    inst = all_to_one((9,), random.Random(1), node=(4,))
    # 8 packets enter node 4 over 2 links: arrival sum >= 1+1+2+2+3+3+4+4 = 20; distances sum to 20 too
    assert th.mean_delay_lower_bound(inst) == pytest.approx(20 / 9)


def test_crossing_delay_sum_brute_force():
    """sum_{i<=n} ceil(i/z) in closed form."""
    for n in range(30):
        for z in range(1, 7):
            assert th.crossing_delay_sum(n, z) == sum(-(-i // z) for i in range(1, n + 1))


def test_greedy_space_bound_dominates_a_greedy_schedule():
    """Our path-count bound on greedy's buffer holds for a dimension-order greedy run, and is N/2-ish on all-to-centre."""
    rng = random.Random(5)
    for trial in range(20):
        inst = _random_instance(rng, [(6, 5), (4, 4, 3), (9,)][trial % 3])
        paths = [off._dimension_order_path(inst.sides, s, d) for s, d in inst.packets]
        events = [[(0, s)] for s, _ in inst.packets]
        off._greedy(paths, 0, events)
        traj = tuple(tuple(e) for e in events)
        off.verify_schedule(inst, traj)
        assert off.schedule_max_load(inst, traj) <= th.greedy_space_bound(inst)
    inst = all_to_one((16, 16), random.Random(1))
    assert th.greedy_space_bound(inst) == 128


def test_imbalance_classes_and_scales():
    """§5 helpers: imbalance is max - min, classes are floor(log2 d), A(H) = max(1, N/V)."""
    assert th.imbalance([3, 5, 4]) == 2 and th.imbalance([]) == 0
    assert [th.distance_class(d) for d in (0, 1, 2, 3, 4, 7, 8)] == [None, 0, 1, 1, 2, 2, 3]
    assert th.density(3, 4) == 1.0 and th.density(12, 4) == 3.0
    assert th.balance_time_scale(8, 3) == 24
    assert th.bfs_phase_time_scale(12, 4, 2) == 6.0
    inst = Instance((4,), ((0, 3), (1, 1), (2, 3)))
    assert th.distance_classes(inst) == {0: [2], 1: [0]}
    scale = th.bfs_delivery_scale(all_to_one((4,), random.Random(1), node=(0,)))
    # destination 0 lies in blocks of side 1, 2, 4 holding 4 packets: 4*1 + 2*2 + 1*4
    assert scale == [12.0] * 4


def test_theory_metrics_and_ratios():
    """theory_metrics reports D, W, B, the bound and the ratios T/(D+W), T/(D+W log D)."""
    inst = all_to_one((8, 8), random.Random(1))
    m = th.theory_metrics(inst, completion_time=100)
    assert m["dilation"] == 8 and m["congestion"] == 16.0 and m["lower_bound"] == 16
    assert m["ratio_dw"] == pytest.approx(100 / 24)
    assert m["ratio_dw_log"] == pytest.approx(100 / (8 + 16 * 3))
    assert th.ratio_dw_log(100, inst) == pytest.approx(m["ratio_dw_log"])
    assert th.ratio_dw(100, inst) == pytest.approx(m["ratio_dw"])
    assert m["rec_space_scale"] == 4.0 and th.log_d(1) == 1.0


# ---------------------------------------------------------------- §3, the offline schedule


def _w_all_subsets(inst: Instance) -> Fraction:
    """W_I over every node subset (the paper's 'all subgraphs'), by enumeration."""
    n = inst.n_nodes
    edges = _edges(inst.sides)
    dest = [0] * n
    for _, d in inst.packets:
        dest[d] += 1
    best = Fraction(0)
    for mask in range(1, (1 << n) - 1):
        z = sum((mask >> a & 1) != (mask >> b & 1) for a, b in edges)
        if z:
            best = max(best, Fraction(sum(dest[v] for v in range(n) if mask >> v & 1), z))
    return best


def test_theorem_3_1_flow_reaches_n_at_twice_w():
    """Theorem 3.1: the max-flow of F(u) is N(G) once u >= 2W (W over all subsets), on tiny meshes."""
    rng = random.Random(6)
    for trial in range(150):
        inst = _random_instance(rng, [(2, 2), (2, 3), (3, 3), (5,), (2, 2, 2), (2, 4)][trial % 6])
        u = max(1, math.ceil(2 * _w_all_subsets(inst)))
        assert off.flow_network(inst, u).value == len(inst)


def test_offline_schedule_is_valid_and_paths_are_short():
    """The §3 schedule delivers every packet, respects links, and its chains are at most 2 sum(n_i - 1) long."""
    rng = random.Random(7)
    for trial in range(60):
        sides = [(6,), (4, 4), (5, 3), (3, 3, 3), (8, 8)][trial % 5]
        inst = _random_instance(rng, sides)
        sched = off.offline_schedule(inst)
        assert off.verify_schedule(inst, sched.trajectories) == sched.length
        assert sched.length <= sched.stage1_length + sched.stage2_length
        for (_s, d), path, w in zip(inst.packets, sched.paths, sched.intermediate):
            assert path[0] == d and path[-1] == w
            assert len(path) - 1 <= 2 * sum(n - 1 for n in sides)
        per_node: dict[int, int] = {}
        for w in sched.intermediate:
            per_node[w] = per_node.get(w, 0) + 1
        assert max(per_node.values(), default=0) <= 2 * 2 ** len(sides)  # two chains per extended node


def test_verify_schedule_rejects_violations():
    """verify_schedule catches a jump, a shared link, a wrong start and a missed destination."""
    inst = Instance((4,), ((0, 2), (1, 2)))
    good = (((0, 0), (1, 1), (2, 2)), ((0, 1), (1, 2)))
    assert off.verify_schedule(inst, good) == 2
    with pytest.raises(ValueError, match="jumps from 0 to 2"):
        off.verify_schedule(inst, (((0, 0), (1, 2)), ((0, 1), (1, 2))))
    with pytest.raises(ValueError, match=r"packets 0 and 1 cross link 1->2 in step 2"):
        off.verify_schedule(inst, (((0, 0), (1, 1), (2, 2)), ((0, 1), (2, 2), (3, 3), (4, 2))))
    with pytest.raises(ValueError, match="must start at its source"):
        off.verify_schedule(inst, (((0, 1), (1, 2)), ((0, 1), (1, 2))))
    with pytest.raises(ValueError, match="not at its destination"):
        off.verify_schedule(inst, (((0, 0), (1, 1)), ((0, 1), (1, 2))))


def test_offline_schedule_all_to_one_uses_u_at_most_4w():
    """The doubling of §3 stops at some u <= 4W (Theorem 3.1) and the schedule stays within a constant of D + W."""
    inst = all_to_one((16, 16), random.Random(1))
    sched = off.offline_schedule(inst)
    w = th.congestion(inst)
    assert sched.capacity <= 4 * w
    assert th.lower_bound(inst) <= sched.length <= 4 * (th.dilation(inst) + w)
