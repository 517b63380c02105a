"""m2o-rec and m2o-bfs on meshes of any sides: §4's partition into halves ⌈s/2⌉ and ⌊s/2⌋.

The schedules run on a virtual mesh of power-of-two sides (:mod:`._embed`); these tests
check the embedding itself (the real nodes of every virtual cube are one box of the
⌈s/2⌉/⌊s/2⌋ partition), and runs on generated meshes and instances: every packet
delivered exactly once, by the bound the scheme states, with every invariant holding,
and under faults every packet in one book.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec, run
from slotnet.schemes.manytoone import bfs, rec
from slotnet.schemes.manytoone._embed import embedding, virtual_coords_1d, virtual_side
from slotnet.schemes.manytoone._inputs import CAP_FACTOR
from slotnet.schemes.manytoone._rec_reference import reference_run
from slotnet.schemes.manytoone.instances import Instance, mesh_coords
from slotnet.schemes.manytoone.theory import greedy_time_bound
from tests.unit.schemes.manytoone.test_manytoone_faults import closes  # the books of a faulted run

# ---------------------------------------------------------------- the embedding


def _boxes(side: int) -> list[list[tuple[int, int]]]:
    """Per level, the real intervals [lo, hi) of the ⌈s/2⌉ / ⌊s/2⌋ partition of one side."""
    levels = [[(0, side)]]
    while any(hi - lo > 1 for lo, hi in levels[-1]):
        nxt = []
        for lo, hi in levels[-1]:
            mid = lo + (hi - lo + 1) // 2
            nxt += [(lo, mid), (mid, hi)] if hi - lo > 1 else [(lo, hi)]
        levels.append(nxt)
    return levels


@settings(deadline=None)
@given(st.integers(1, 200))
def test_virtual_cubes_hold_the_halves_ceil_and_floor(side):
    """Each level-l virtual cube holds exactly one box of the ⌈s/2⌉/⌊s/2⌋ partition; ⌈log2 s⌉ levels."""
    v = virtual_coords_1d(side)
    p = virtual_side(side)
    assert p == 1 << math.ceil(math.log2(side)) if side > 1 else p == 1
    assert list(v) == sorted(set(v)) and all(0 <= x < p for x in v)  # increasing, injective
    boxes = _boxes(side)
    assert len(boxes) - 1 == (side - 1).bit_length()  # ⌈log2 s⌉ levels below the whole side
    for level, intervals in enumerate(boxes):
        span = p >> level
        groups: dict[int, list[int]] = {}
        for c, x in enumerate(v):
            groups.setdefault(x // span, []).append(c)
        got = sorted((g[0], g[-1] + 1) for g in groups.values())
        assert got == sorted(iv for iv in intervals if iv[1] > iv[0])
        assert all(g == list(range(g[0], g[-1] + 1)) for g in groups.values())
    holes = set(range(p)) - set(v)
    assert all(h & 1 and h ^ 1 in set(v) for h in holes)  # a hole is hosted by its even neighbour


@settings(deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=3))
def test_every_virtual_node_is_hosted_once(sides):
    emb = embedding(tuple(sides))
    seen = {}
    for node in range(math.prod(sides)):
        for pattern, vc in enumerate(emb.hosted(node)):
            if vc is not None:
                assert vc not in seen and emb.pattern(vc) == pattern
                assert emb.host_coords(vc) == mesh_coords(emb.sides, node)
                seen[vc] = node
    assert len(seen) == math.prod(emb.vsides)
    assert emb.multiplex == 1 << sum(s & (s - 1) != 0 for s in sides)
    if emb.multiplex == 1:
        assert emb.identity and all(emb.vcoords(n) == mesh_coords(emb.sides, n) for n in range(math.prod(sides)))


# ---------------------------------------------------------------- runs on any mesh

MESHES = st.lists(st.integers(2, 9), min_size=1, max_size=3).filter(lambda s: math.prod(s) <= 64)
#: whole runs: no shrinking (a failing case is printed as drawn; shrinking one takes minutes)
RUN_PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
WORKLOADS = st.sampled_from(["all-to-one", "uniform", "hotspots:k=2", "bounded:r=2", "uniform:fraction=0.5",
                             "all-to-one:fraction=0.6"])


def _topology(sides) -> str:
    return "mesh:" + "x".join(map(str, sides))


def _delivered_once(r) -> None:
    assert r.invariants["ok"], r.invariants
    assert r.completion["complete"]
    cons = r.invariants["conservation"]
    assert cons["delivered"] == cons["created"] == r.metrics["packets"] and cons["second_deliveries"] == 0
    once = r.invariants["every_packet_delivered_once"]
    assert once["missing"] == 0 and once["duplicates"] == 0 and once["wrong_node"] == 0


def _instance(scheme: str, sides, params) -> Instance:
    dest = RunSpec(scheme, _topology(sides), params=params, seed=1).prepare().node_params["dest"]
    return Instance(tuple(sides), tuple((s, d) for s, d in enumerate(dest) if d >= 0))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=RUN_PHASES)
@given(MESHES, WORKLOADS, st.integers(0, 50))
@example([5, 5], "uniform", 0)  # a packet reaching its node at a hole it hosts was once delivered twice
def test_rec_on_any_mesh_delivers_every_packet_once_within_its_bound(sides, workload, seed):
    """m2o-rec: all delivered once, each packet by M times its virtual reference step, the
    nodes' common return and the invocations equal to the reference's, Lemma 4.3 held."""
    params = {"workload": workload, "seed": seed}
    r = run(RunSpec("m2o-rec", _topology(sides), params=params, seed=1))
    _delivered_once(r)
    inst = _instance("m2o-rec", sides, params)
    emb = embedding(inst.sides)
    ref = reference_run(inst if emb.identity else emb.virtual_instance(inst), check_links=False)
    m = emb.multiplex
    got = r.per_node["delivery_time"]
    for (s, _), first in zip(inst.packets, ref.first_arrival):
        assert got[s] <= m * first if m > 1 else got[s] == first
    assert r.metrics["return_time"] == ref.return_time == r.theory["return_time"]
    assert r.metrics["invocations"] == len(ref.invocations)
    assert r.invariants["lemma_4_3"]["ok"] and r.invariants["common_return"]["ok"]
    if m > 1:
        assert r.metrics["completion_time"] <= r.theory["completion_time_bound"]
        assert r.metrics["max_occupancy"] <= r.theory["occupancy_bound"]
    assert r.slots_run <= rec.run_bound(inst)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=RUN_PHASES)
@given(MESHES, WORKLOADS, st.integers(0, 50))
@example([5, 5], "uniform", 0)
@example([3], "uniform:fraction=0.5", 50)  # every packet at home: the empty versions still run their windows
def test_bfs_on_any_mesh_delivers_every_packet_once_within_its_bound(sides, workload, seed):
    """m2o-bfs: all delivered once, within its windows' bound, the phase windows held."""
    params = {"workload": workload, "seed": seed}
    r = run(RunSpec("m2o-bfs", _topology(sides), params=params, seed=1))
    _delivered_once(r)
    assert r.invariants.get("phases_within_windows", {"ok": True})["ok"]  # absent: no phase ran (one packet at home)
    assert r.slots_run <= bfs.run_bound(_instance("m2o-bfs", sides, params))


@pytest.mark.parametrize("scheme", ["m2o-rec", "m2o-bfs"])
@pytest.mark.parametrize("topology", ["mesh:10x10", "mesh:3x7", "mesh:13", "mesh:3x3x5"])
def test_the_meshes_once_refused_run_with_an_instance_file(scheme, topology, tmp_path):
    """Meshes with a side that is not a power of two (once refused, §4's 'D is a power of 2'), from a file."""
    sides = [int(x) for x in topology.partition(":")[2].split("x")]
    corners = [[0] * len(sides), [s - 1 for s in sides]]
    packets = [[list(c), corners[i % 2]] for i, c in enumerate(itertools.product(*(range(s) for s in sides)))]
    path = tmp_path / "inst.json"
    path.write_text(json.dumps({"packets": packets}))
    r = run(RunSpec(scheme, topology, params={"instance": str(path)}, seed=1))
    _delivered_once(r)
    assert r.metrics["packets"] == math.prod(sides)


def test_power_of_two_meshes_keep_the_unmultiplexed_schedule():
    """On power-of-two sides the embedding is the identity: one program, the reference's times exactly."""
    r = run(RunSpec("m2o-rec", "mesh:8x4", params={"workload": "hotspots:k=3"}, seed=1))
    _delivered_once(r)
    assert r.metrics["completion_time"] == r.theory["completion_time"] and "multiplex" not in r.theory


# ---------------------------------------------------------------- faults, and the safety cap


@pytest.mark.parametrize("scheme", ["m2o-rec", "m2o-bfs"])
@pytest.mark.parametrize("faults", [["loss=0.05"], ["crash@3:7"], ["dup=0.1", "delay=0.1:2"], ["stall@2:9:4"]])
def test_faults_on_a_non_power_of_two_mesh_leave_every_packet_in_one_book(scheme, faults):
    """Under faults the multiplexed virtual nodes account for every packet, as on power-of-two meshes."""
    r = run(RunSpec(scheme, "mesh:6x5", params={"workload": "uniform"}, slots=30000, seed=1, faults=faults))
    closes(r)
    assert r.completion["complete"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=RUN_PHASES)
@given(MESHES, WORKLOADS, st.integers(0, 50), st.sampled_from(["fifo", "farthest-first"]))
def test_greedy_ends_by_its_cap_bound(sides, workload, seed, order):
    """greedy_time_bound (the cap's bound): each packet delayed at most once by each other packet."""
    params = {"workload": workload, "seed": seed, "order": order}
    r = run(RunSpec("m2o-greedy", _topology(sides), params=params, seed=1))
    _delivered_once(r)
    assert r.metrics["completion_time"] <= greedy_time_bound(_instance("m2o-greedy", sides, params))


@pytest.mark.parametrize("scheme", ["m2o-rec", "m2o-bfs"])
def test_a_run_cut_short_on_a_non_power_of_two_mesh_is_incomplete_not_violated(scheme):
    """Cut at several slots, the multiplexed run is incomplete and its books close so far."""
    full = run(RunSpec(scheme, "mesh:6x5", params={"workload": "hotspots:k=2"}, seed=1))
    _delivered_once(full)
    for cut in (1, 7, full.slots_run // 3, full.slots_run - 2):
        r = run(RunSpec(scheme, "mesh:6x5", params={"workload": "hotspots:k=2"}, seed=1, slots=cut))
        assert r.invariants["ok"] and not r.completion["complete"], (cut, r.invariants)
        cons = r.invariants["conservation"]
        assert cons["unaccounted"] == 0 and cons["delivered"] + cons["in_flight"] + cons["held"] == cons["packets"]


@pytest.mark.parametrize("scheme", ["m2o-greedy", "m2o-rec", "m2o-bfs", "m2o-offline"])
def test_every_m2o_scheme_declares_a_cap_from_its_bound(scheme):
    """The safety cap is CAP_FACTOR times the scheme's bound (never the 1000-slot fallback alone),
    and a default run completes well inside it."""
    spec = RunSpec(scheme, "mesh:12x12", params={"workload": "all-to-one"}, seed=1)
    prep = spec.prepare()
    cap = prep.scheme.max_slots(prep.topology, prep.node_params)
    assert cap % CAP_FACTOR == 0
    r = run(spec)
    _delivered_once(r)
    assert r.slots_run * CAP_FACTOR <= cap
