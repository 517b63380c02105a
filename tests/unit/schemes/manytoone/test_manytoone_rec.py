"""rec_route of Mansour & Patt-Shamir §4: its local rules and its step-by-step reference."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

from slotnet.schemes.manytoone import _rec_route as rec
from slotnet.schemes.manytoone._rec_reference import RecInvariantError, _Run, reference_run
from slotnet.schemes.manytoone.instances import Instance, all_to_one, make_instance, mesh_coords, mesh_node
from slotnet.schemes.manytoone.theory import lower_bound

SIDES = [(2,), (8,), (16,), (2, 2), (4, 4), (8, 8), (8, 4), (2, 8), (2, 2, 2), (4, 4, 4), (4, 2, 8)]
FAMILIES = ["all-to-one", "uniform", "hotspots:k={k}", "bounded:r=2", "uniform:fraction=0.4", "all-to-one:fraction=0.7"]


def _random_instance(rng: random.Random, sides: tuple[int, ...]) -> Instance:
    n = math.prod(sides)
    srcs = rng.sample(range(n), rng.randint(0, n))
    hot = rng.sample(range(n), rng.randint(1, min(4, n)))
    mode = rng.random()
    return Instance(sides, tuple((s, rng.choice(hot) if mode < 0.6 else rng.randrange(n)) for s in srcs))


def _instances(count: int, seed: int):
    rng = random.Random(seed)
    for trial in range(count):
        sides = SIDES[trial % len(SIDES)]
        if trial % 3 == 0:
            yield _random_instance(rng, sides)
        else:
            spec = FAMILIES[trial % len(FAMILIES)].format(k=min(3, math.prod(sides)))
            yield make_instance(spec, sides, random.Random(trial))


# ---------------------------------------------------------------- the partition and Definition 4.1


def test_address_is_definition_4_1_on_cubes():
    """R(v) = sum_j sum_i b_{i,j} 2^{jk+i} (coordinate 0 least significant in each group) on cubes."""
    for k in (1, 2, 3):
        for m in (1, 2, 3):
            hier = rec.Hierarchy((1 << m,) * k)
            seen = set()
            for c in itertools.product(range(1 << m), repeat=k):
                expect = sum(((c[i] >> j) & 1) << (j * k + i) for j in range(m) for i in range(k))
                assert hier.address(c) == expect
                assert hier.coords_of_address(expect) == c
                seen.add(expect)
            assert seen == set(range((1 << m) ** k))


@pytest.mark.parametrize("sides", [(8,), (4, 4), (8, 4), (2, 8), (4, 2, 8), (4, 4, 4)])
def test_subcubes_are_aligned_address_ranges(sides):
    """Every level-l cube is a contiguous, aligned range of R; local indices and children follow R."""
    hier = rec.Hierarchy(sides)
    n = math.prod(sides)
    for level in range(hier.levels + 1):
        vol = hier.volume(level)
        assert vol == math.prod(hier.level_sides(level))
        cubes: dict[int, list[int]] = {}
        for v in range(n):
            c = mesh_coords(sides, v)
            cubes.setdefault(hier.cube_id(c, level), []).append(hier.address(c))
            idx = hier.local_index(c, level)
            assert idx == hier.address(c) % vol
            assert hier.node_of_local(hier.corner(c, level), level, idx) == c
        for addrs in cubes.values():
            addrs.sort()
            assert addrs == list(range(addrs[0], addrs[0] + vol)) and addrs[0] % vol == 0
        if level < hier.levels:
            for cid in cubes:
                corner = mesh_coords(sides, cid)
                kids = hier.children(corner, level)
                assert len(kids) == 1 << len(hier.split_dims(level))
                starts = [hier.address(k) for k in kids]
                assert starts == sorted(starts)
                assert all(hier.corner(k, level) == corner for k in kids)
    assert hier.volume(hier.levels) == 1


def test_hierarchy_rejects_non_powers_of_two():
    """§4 assumes a power-of-two side; other sides are refused with the sides named."""
    with pytest.raises(ValueError, match=r"power of two.*6x4"):
        rec.Hierarchy((6, 4))
    with pytest.raises(ValueError, match="power of two"):
        reference_run(Instance((3,), ((0, 2),)))


def test_approx_direction_brute_force():
    """Step 1 moves a packet along dim iff its destination is in the other half, towards it."""
    hier = rec.Hierarchy((8, 4))
    for level in range(hier.levels):
        for dim in hier.split_dims(level):
            half = hier.level_sides(level)[dim] // 2
            for own in itertools.product(range(8), range(4)):
                corner = hier.corner(own, level)
                for dest in itertools.product(range(8), range(4)):
                    if hier.corner(dest, level) != corner:
                        continue
                    mine = (own[dim] - corner[dim]) >= half
                    theirs = (dest[dim] - corner[dim]) >= half
                    expect = 0 if mine == theirs else (1 if not mine else -1)
                    assert rec.approx_direction(hier, level, dim, own, dest) == expect


# ---------------------------------------------------------------- the sort


def _network_sort(values: list, capacity: int) -> list[list]:
    """Run the bitonic network with merge-split on blocks (index = node)."""
    b = (len(values) - 1).bit_length()
    blocks = [sorted(v) for v in values]
    for stage, bit in rec.bitonic_steps(b):
        new = list(blocks)
        for x in range(len(blocks)):
            if x >> bit & 1:
                continue
            y = x | 1 << bit
            kx, _ = rec.merge_split(blocks[x], blocks[y], capacity, rec.keeps_low(x, stage, bit))
            ky, _ = rec.merge_split(blocks[y], blocks[x], capacity, rec.keeps_low(y, stage, bit))
            new[x], new[y] = kx, ky
        blocks = new
    return blocks


def test_bitonic_network_sorts_every_zero_one_input():
    """0-1 principle: the network with keeps_low's directions sorts all 0/1 inputs up to 8 keys (and random ones to 32)."""
    rng = random.Random(0)
    for b in range(6):
        n = 1 << b
        assert len(rec.bitonic_steps(b)) == b * (b + 1) // 2
        inputs = range(1 << n) if b <= 3 else (rng.getrandbits(n) for _ in range(400))
        for bits in inputs:
            values = [[(bits >> x) & 1] for x in range(n)]
            out = [v[0] for v in _network_sort(values, 1)]
            assert out == sorted(out)


def test_merge_split_blocks_sort_front_loaded():
    """Blocks of up to C keys come out sorted and front-loaded (node x holds ranks xC..xC+C-1)."""
    rng = random.Random(1)
    for _ in range(300):
        b = rng.randint(0, 4)
        cap = rng.choice([1, 2, 4, 8])
        n = 1 << b
        values = [rng.sample(range(1000), rng.randint(0, cap)) for _ in range(n)]
        keys = sorted(k for v in values for k in v)
        blocks = _network_sort(values, cap)
        assert [k for blk in blocks for k in blk] == keys
        assert [len(blk) for blk in blocks] == [min(cap, max(0, len(keys) - x * cap)) for x in range(n)]


def test_merge_split_conserves_keys():
    """The two halves of a merge-split partition the union; a node sends only its own keys."""
    rng = random.Random(2)
    for _ in range(500):
        cap = rng.randint(1, 6)
        pool = rng.sample(range(100), rng.randint(0, 2 * cap))
        cut = rng.randint(max(0, len(pool) - cap), min(cap, len(pool)))
        a, c = pool[:cut], pool[cut:]
        low, sent = rec.merge_split(a, c, cap, True)
        high, _ = rec.merge_split(c, a, cap, False)
        assert sorted(low + high) == sorted(pool) and set(low).isdisjoint(high)
        assert set(sent) <= set(a) and set(sent).isdisjoint(low)
        assert all(x < y for x in low for y in high)


def test_spread_targets_are_balanced_and_collision_free():
    """The spread target layout is balanced and consecutive, and fixing bits from the top never collides."""
    for volume in (1, 2, 4, 8):
        for cap in (1, 2, 4, 8):
            for n in range(cap * volume + 1):
                targets = [rec.spread_target(r, n, volume, cap) for r in range(n)]
                assert targets == sorted(set(targets))
                loads = Counter(t // cap for t in targets)
                per = [loads.get(x, 0) for x in range(volume)]
                assert max(per) - min(per) <= 1 and max(per, default=0) == -(-n // volume)
                for x in range(volume):
                    ranks = [r for r in range(n) if targets[r] // cap == x]
                    assert ranks == list(range(rec.balanced_start(x, n, volume), rec.balanced_start(x, n, volume) + len(ranks)))
                cur = list(range(n))
                for vb in range((volume * cap).bit_length() - 2, -1, -1):
                    cur = [c ^ (1 << vb) if (c ^ t) >> vb & 1 else c for c, t in zip(cur, targets)]
                    assert len(set(cur)) == n
                assert cur == targets


def test_batches_hold_at_most_two_packets_per_node():
    """With h = max(1, ceil(n1/V)) and up to n1 + 1 packets later, every batch has <= 2 per node (Step 2.2)."""
    for volume in (1, 2, 4, 8, 16):
        for n_first in range(0, 4 * volume + 1):
            h = rec.h_value(n_first, volume)
            assert h == max(1, math.ceil(n_first / volume))
            for n in (n_first - 1, n_first, n_first + 1):
                if n < 0:
                    continue
                for x in range(volume):
                    ranks = range(rec.balanced_start(x, n, volume), rec.balanced_start(x + 1, n, volume))
                    per_batch = Counter(rec.batch_index(r, h) for r in ranks)
                    assert max(per_batch.values(), default=0) <= 2


# ---------------------------------------------------------------- the fixed schedule


def test_level_plan_of_a_4x4_mesh_by_hand():
    """The 4x4 mesh's schedule: level 0 is 6 + 25 steps and a 6-step barrier; level 1 is 6 steps."""
    hier = rec.Hierarchy((4, 4))
    top = rec.level_plan(hier, 0)
    # Step 1: dim 0, 1 round of 2 hops; dim 1, 2 rounds of 2 hops. C = 4.
    # Sort in 2x2: 3 network steps of (1 key + 4 data) steps, count 2, spread 2 bits x 4 rounds.
    assert (top.c_in, top.capacity, top.approx_time, top.sort_time, top.barrier_time) == (1, 4, 6, 25, 6)
    low = rec.level_plan(hier, 1)
    assert (low.c_in, low.capacity, low.approx_time, low.sort_time, low.barrier_time) == (2, 8, 6, 0, 0)
    with pytest.raises(ValueError):
        rec.level_plan(hier, 2)


@pytest.mark.parametrize("sides", [(16,), (8, 8), (8, 4), (4, 4, 4)])
def test_level_plan_segments_tile_the_fixed_time(sides):
    """Segments are back to back from 0 to approx + sort, and segment_at finds each offset's segment."""
    hier = rec.Hierarchy(sides)
    for level in range(hier.levels):
        plan = rec.level_plan(hier, level)
        t = 0
        for seg in plan.segments:
            assert seg.start == t and seg.duration > 0
            assert plan.segment_at(t) == seg and plan.segment_at(t + seg.duration - 1) == seg
            t += seg.duration
        assert t == plan.fixed_time
        assert plan.segment_at(t) is None and plan.segment_at(-1) is None
        approx = [s for s in plan.segments if s.phase == "approx"]
        assert sum(s.duration for s in approx) == plan.approx_time


@pytest.mark.parametrize("sides", [(8, 8), (4, 2, 8)])
def test_segment_partners_pair_up_inside_the_cube(sides):
    """Partners are mutual, in the same cube (the subcube for sort phases), at the segment's distance along its dimension."""
    hier = rec.Hierarchy(sides)
    for level in range(hier.levels):
        plan = rec.level_plan(hier, level)
        for seg in plan.segments:
            for v in range(math.prod(sides)):
                c = mesh_coords(sides, v)
                other = rec.segment_partner(hier, level, c, seg)
                if seg.phase == "count":
                    assert other is None
                    continue
                assert other is not None
                assert rec.segment_partner(hier, level, other, seg) == c
                assert sum(abs(a - b) for a, b in zip(c, other)) == seg.distance == abs(c[seg.dim] - other[seg.dim])
                cube_level = level if seg.phase == "approx" else level + 1
                assert hier.corner(other, cube_level) == hier.corner(c, cube_level)


# ---------------------------------------------------------------- the reference execution


def _expected_duration(hier: rec.Hierarchy, h: dict, level: int, corner: tuple[int, ...]) -> int:
    """Invocation length recomputed from the plans and the h values alone."""
    if level == hier.levels:
        return 0
    plan = rec.level_plan(hier, level)
    longest = 0
    for kid in hier.children(corner, level):
        kid_h = h[(level + 1, mesh_node(hier.sides, kid))]
        longest = max(longest, kid_h * _expected_duration(hier, h, level + 1, kid))
    return plan.fixed_time + longest + plan.barrier_time


def test_reference_delivers_every_packet_exactly_once():
    """Every packet ends at its destination, goes through one invocation per level and one final call."""
    for inst in _instances(66, seed=1):
        res = reference_run(inst)
        hier = rec.Hierarchy(inst.sides)
        per_level = Counter()
        final = Counter()
        for inv in res.invocations:
            per_level[inv.level] += inv.n_packets
            if inv.level == hier.levels:
                final[inv.cube] += inv.n_packets
        assert all(per_level[lev] == len(inst) for lev in range(hier.levels + 1))
        assert final == Counter(d for _, d in inst.packets)
        for (s, d), first, last in zip(inst.packets, res.first_arrival, res.delivery):
            assert inst.distance(s, d) <= first <= last <= res.completion_time
        assert res.completion_time <= res.return_time


def test_reference_lemmas_4_2_and_4_3():
    """Lemma 4.3 (at most 2V(H) packets per invocation) and Lemma 4.2's counts per cube differ by <= 1."""
    for inst in _instances(66, seed=2):
        res = reference_run(inst)
        assert res.lemma_4_3_violations == ()
        counts: dict[tuple[int, int], list[int]] = {}
        for inv in res.invocations:
            assert inv.n_packets <= 2 * inv.volume
            counts.setdefault((inv.level, inv.cube), []).append(inv.n_packets)
        for seq in counts.values():
            assert max(seq) - min(seq) <= 1


def test_reference_fixed_durations_and_buffers():
    """Invocations of a cube all last the same; the return time follows from plans and h; buffers stay within sum C_l + 2."""
    for inst in _instances(44, seed=3):
        res = reference_run(inst)
        hier = rec.Hierarchy(inst.sides)
        root = tuple(0 for _ in inst.sides)
        assert res.return_time == _expected_duration(hier, res.h, 0, root) == rec.invocation_duration(hier, res.h, 0, root)
        for (level, cube), dur in res.durations.items():
            assert dur == _expected_duration(hier, res.h, level, mesh_coords(inst.sides, cube))
        assert res.max_load <= res.max_occupancy <= rec.occupancy_bound(hier)
        assert lower_bound(inst) <= res.paper_time


def test_reference_is_deterministic():
    """The same instance gives the same delivery times, buffers and invocation records."""
    for inst in _instances(12, seed=4):
        assert reference_run(inst) == reference_run(inst, check_links=False)


def test_reference_all_to_one_structure():
    """All-to-centre on 8x8: h = 4 on the centre's cubes, each invocation holding V(H) packets."""
    inst = all_to_one((8, 8), random.Random(1))
    res = reference_run(inst)
    hier = rec.Hierarchy((8, 8))
    for level in range(1, hier.levels + 1):
        cube = hier.cube_id((4, 4), level)
        assert res.h[(level, cube)] == 4
        sizes = {i.n_packets for i in res.invocations if (i.level, i.cube) == (level, cube)}
        assert sizes == {hier.volume(level)}
    assert res.node_max_load[mesh_node((8, 8), (4, 4))] == 0


def test_round_checker_refuses_two_packets_on_a_link():
    """The lockstep-round checker fails loudly when a node sends twice in a round or a link is reused."""
    run = _Run(Instance((4,), ((0, 3), (1, 3))), check_links=True)
    run._round([(0, 1)], 0, 1, 0)  # packet 0 crosses 0->1 in step 0; both packets now at node 1
    with pytest.raises(RecInvariantError, match="sends two packets"):
        run._round([(0, 1), (1, 1)], 0, 1, 1)
    run._round([(0, 1)], 0, 1, 1)  # packet 0 crosses 1->2 in step 1
    with pytest.raises(RecInvariantError, match=r"link 1->2 used twice at step 1"):
        run._round([(1, 1)], 0, 1, 1)
