"""§5's bfs_route, pure parts: classes, the preliminary step, line balancing (Theorem 5.1) and its window."""

from __future__ import annotations

import itertools
import random

from slotnet.schemes.manytoone import _bfs_route as bfs
from slotnet.schemes.manytoone._rec_route import Hierarchy


def test_class_count_and_classes():
    """K = floor(log2 of the mesh diameter) + 1; class k holds distances [2^k, 2^(k+1))."""
    assert [bfs.class_count(s) for s in ((2,), (4,), (8, 8), (64, 64), (16, 16, 16))] == [1, 2, 4, 7, 6]
    for d in range(1, 300):
        k = bfs.distance_class_of(d)
        assert 2**k <= d < 2 ** (k + 1)
    assert bfs.slot_of(3, 10, 7) == 73


def test_balanced_layout_is_consecutive_and_within_one():
    """target_of puts floor(T/m) or one more at each position, the extra ones first, ranks in order."""
    for m in (1, 2, 4, 8):
        for total in range(0, 5 * m + 1):
            targets = [bfs.target_of(r, total, m) for r in range(total)]
            assert targets == sorted(targets)
            counts = [targets.count(j) for j in range(m)]
            assert counts == [total // m + (1 if j < total % m else 0) for j in range(m)]


def test_line_prefix_is_the_sequential_prefix():
    """(P, T) per position: the load before it and the line's total."""
    assert bfs.line_prefix([2, 0, 3, 1]) == [(0, 6), (2, 6), (2, 6), (5, 6)]


def test_line_flow_fits_its_window_on_every_small_line():
    """Every load vector up to M on lines of 2, 4, 8 (and random longer ones): balanced within the window, peak <= M + 1."""
    cases = [loads for m, top in ((2, 6), (4, 4), (8, 2)) for loads in itertools.product(range(top + 1), repeat=m)]
    rng = random.Random(5)
    for _ in range(600):
        m, top = rng.choice([16, 32]), rng.randint(1, 9)
        cases.append(tuple(rng.choice([0, top]) if rng.random() < 0.5 else rng.randint(0, top) for _ in range(m)))
    for loads in cases:
        top = max(loads)
        steps, peak, final = bfs.line_flow(loads)
        assert steps <= bfs.flow_window(top, len(loads)), loads
        assert max(final) - min(final) <= 1 and sum(final) == sum(loads)
        assert peak <= top + 1
    assert bfs.line_flow([8, 0, 0, 0]) == (6, 8, [2, 2, 2, 2])  # 6 packets leave node 0, one per step
    assert bfs.flow_window(0, 8) == 7 and bfs.flow_window(5, 1) == 0


def test_dimension_by_dimension_balancing_is_within_k():
    """Theorem 5.1's k-load balancing: after one pass per dimension, loads of a k-cube differ by at most k."""
    rng = random.Random(9)
    for _ in range(300):
        sides = rng.choice([(4,), (4, 4), (8, 2), (2, 2, 2), (4, 4, 2)])
        top = rng.randint(0, 9)
        loads = {c: rng.randint(0, top) for c in itertools.product(*[range(s) for s in sides])}
        final, imbalance = bfs.balance_rounds(loads, sides)
        assert sum(final.values()) == sum(loads.values())
        assert imbalance[-1] <= len(sides) and imbalance == sorted(imbalance, reverse=True)


def test_the_preliminary_step_puts_every_packet_within_one_cube():
    """From level l_k, the destination's cube is at most one cube away along every dimension, for every class-k pair."""
    for sides in [(16,), (8, 8), (8, 4), (2, 8), (16, 2), (4, 4, 4), (8, 2, 4)]:
        hier = Hierarchy(sides)
        for k in range(bfs.class_count(sides)):
            level = bfs.start_level(hier.exponents, k)
            assert all(max(1, s >> level) >= min(s, 2 ** (k + 1)) for s in sides)
            if level + 1 <= hier.levels:  # and l_k is the deepest such level
                assert level == hier.levels or any(max(1, s >> (level + 1)) < min(s, 2 ** (k + 1)) for s in sides)
            for a in itertools.product(*[range(s) for s in sides]):
                for b in itertools.product(*[range(s) for s in sides]):
                    d = sum(abs(x - y) for x, y in zip(a, b))
                    if d and bfs.distance_class_of(d) == k:
                        assert all(abs(o) <= 1 for o in bfs.block_offsets(sides, level, a, b))
    assert bfs.prestep_time((16, 16), 2) == 4 + 3 * 4 and bfs.prestep_time((8, 4), 0) == 0
