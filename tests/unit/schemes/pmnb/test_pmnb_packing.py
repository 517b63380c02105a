"""Greedy packing (Theorem 3), monotone routing (Theorem 4) and active-node placements.

Pins ``slotnet.schemes.pmnb._packing`` and ``._placement``: the per-step port rule,
the theorems' invariants (no link asked twice in a step, no two packets at one node at
a phase boundary), completion within d(p-1) / 2d(p-1) and attaining it, and the
paper's over-claim about mid-phase co-location (a counterexample).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from slotnet.schemes.pmnb import _packing as K
from slotnet.schemes.pmnb import _placement as PL
from slotnet.schemes.pmnb import _prefix as P
from slotnet.schemes.pmnb import theory as th

SHAPES = [(2,), (7,), (2, 2), (3, 3), (4, 4), (5, 5), (6, 4), (3, 5), (2, 2, 2), (3, 3, 3), (4, 3, 2), (4, 4, 4), (2, 3, 2, 3)]


def _ok(trace: K.RoutingTrace) -> bool:
    return trace.delivered and trace.link_conflicts == 0 and trace.boundary_collisions == 0 and trace.max_at_node <= 2


def _rotations(d: int) -> list[tuple[int, ...]]:
    return [P.rotation(c, d) for c in range(d)]


def test_packing_phase_and_port_rule_by_hand() -> None:
    """Phase k covers p_k - 1 steps of dimension order[k]; a packet steps towards its digit."""
    sides = (3, 4)
    assert [K.packing_phase(s, sides) for s in range(6)] == [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1), None]
    assert [K.packing_phase(s, sides, (1, 0)) for s in range(6)] == [(0, 1), (0, 1), (0, 1), (1, 0), (1, 0), None]
    # on a line of 5 a packet at 3 bound for 0 moves left three times, then waits
    assert [K.packing_port((3,), (0,), s, (5,)) for s in range(5)] == [(0, -1), (0, -1), (0, -1), (0, -1), None]
    assert [K.packing_port((1,), (0,), s, (5,)) for s in range(4)] == [(0, -1), (0, -1), (0, -1), (0, -1)]
    assert K.packing_port((2, 3), (2, 0), 0, sides) is None and K.packing_port((2, 3), (2, 0), 2, sides) == (1, -1)
    assert K.rank_destination(7, sides) == (1, 2)
    with pytest.raises(ValueError, match="step must be >= 0"):
        K.packing_phase(-1, sides)


def test_monotone_port_unpacks_in_reverse_dimension_order() -> None:
    """After d(p-1) packing steps the unpacking phases cross dimensions order[d-1], ..., order[0]."""
    sides = (3, 3)
    # steps 4, 5 are dimension 1, steps 6, 7 dimension 0
    assert K.monotone_port((0, 0), (0, 0), (2, 2), 4, sides) == (1, +1)
    assert K.monotone_port((0, 0), (0, 0), (2, 2), 6, sides) == (0, +1)
    assert K.monotone_port((0, 2), (0, 0), (2, 2), 3, sides) == (1, -1)
    assert K.monotone_port((2, 2), (0, 0), (2, 2), 8, sides) is None
    assert K.monotone_steps(sides) == 8


def test_packing_invariants_on_every_placement_of_small_arrays() -> None:
    """Exhaustively: no link asked twice, no collision at phase ends, all delivered, <= d(p-1)."""
    for sides in [(3, 3), (2, 2, 2), (4, 3), (6,), (2, 2, 3)]:
        n = math.prod(sides)
        for mask in range(1 << n):
            active = [v for v in range(n) if mask >> v & 1]
            trace = K.simulate_packing(active, sides)
            assert _ok(trace), (sides, active, trace)
            assert trace.steps == sum(p - 1 for p in sides)
            assert trace.completion <= trace.steps


def test_packing_invariants_on_random_placements() -> None:
    """Random placements, every class order: the invariants hold and completion <= d(p-1)."""
    rng = random.Random(11)
    for sides in SHAPES:
        n = math.prod(sides)
        for _ in range(40):
            active = rng.sample(range(n), rng.randint(0, n))
            for order in _rotations(len(sides)):
                trace = K.simulate_packing(active, sides, order)
                assert _ok(trace), (sides, order, active, trace)
                assert trace.completion <= trace.steps == th.packing_time(sides)


def test_packing_bound_is_attained() -> None:
    """A lone active node at N - 1 packs to node 0 in exactly d(p-1) steps (Theorem 3 is tight)."""
    for sides in SHAPES:
        trace = K.simulate_packing([math.prod(sides) - 1], sides)
        assert _ok(trace)
        assert trace.completion == trace.steps == sum(p - 1 for p in sides)


def test_packets_may_meet_inside_a_phase() -> None:
    """The proof's 'no two packets at any time at one node' fails mid-phase; links are still never shared."""
    trace = K.simulate_packing([0, 1, 2, 3, 5, 9], (5, 5))
    assert trace.meetings >= 1 and trace.max_at_node == 2
    assert trace.link_conflicts == 0 and trace.boundary_collisions == 0 and trace.delivered
    # the two packets of the docstring: node 5 (rank 4) and node 9 (rank 5), after two steps
    pos = {5: (0, 1), 9: (4, 1)}
    dest = {5: K.rank_destination(4, (5, 5)), 9: K.rank_destination(5, (5, 5))}
    for step in range(2):
        for v in pos:
            hop = K.packing_port(pos[v], dest[v], step, (5, 5))
            assert hop is not None
            x = list(pos[v])
            x[hop[0]] += hop[1]
            pos[v] = (x[0], x[1])
    assert pos[5] == pos[9] == (2, 1)


def test_monotone_invariants_on_random_instances() -> None:
    """Increasing sources to increasing targets: invariants hold and completion <= 2d(p-1)."""
    rng = random.Random(12)
    for sides in SHAPES:
        n = math.prod(sides)
        for _ in range(40):
            k = rng.randint(0, n)
            for order in _rotations(len(sides)):
                rank = {v: P.linear_index(P.coords_at(v, sides), sides, order) for v in range(n)}
                src = sorted(rng.sample(range(n), k), key=rank.__getitem__)
                dst = sorted(rng.sample(range(n), k), key=rank.__getitem__)
                trace = K.simulate_monotone(src, dst, sides, order)
                assert _ok(trace), (sides, order, src, dst, trace)
                assert trace.completion <= trace.steps == th.monotone_time(sides)


def test_monotone_bound_is_attained() -> None:
    """One packet from N - 1 to N - 1 goes to node 0 and back: exactly 2d(p-1)."""
    for sides in SHAPES:
        n = math.prod(sides)
        trace = K.simulate_monotone([n - 1], [n - 1], sides)
        assert _ok(trace) and trace.completion == trace.steps == 2 * sum(p - 1 for p in sides)


def test_monotone_checks_its_input() -> None:
    """Unequal lengths or non-increasing lists are refused."""
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        K.simulate_monotone([0, 1], [3], (3, 3))
    with pytest.raises(ValueError, match="targets must be increasing"):
        K.simulate_monotone([0, 1], [4, 3], (3, 3))
    with pytest.raises(ValueError, match="distinct"):
        K.simulate_packing([1, 1], (3, 3))


def test_packing_time_lies_between_bounds() -> None:
    """The reference's completion is within packing_bounds for the same placement."""
    rng = random.Random(13)
    for sides in [(4, 4), (5, 3), (3, 3, 3)]:
        n = math.prod(sides)
        for wrap in (False, True):
            for _ in range(20):
                active = rng.sample(range(n), rng.randint(1, n))
                b = th.packing_bounds(sides, wrap, active)
                trace = K.simulate_packing(active, sides)
                assert b["lower_bound"] <= trace.completion <= b["upper_bound"]


def test_ranks_match_sorted_order() -> None:
    """ranks() numbers the active nodes in the order's linear order from 0."""
    sides = (3, 3)
    assert K.ranks([8, 1, 5], sides) == {1: 0, 5: 1, 8: 2}
    # class 1 order: x_0 is the most significant digit
    assert K.ranks([8, 1, 5], sides, (1, 0)) == {1: 0, 5: 1, 8: 2}
    assert K.ranks([6, 2], sides, (1, 0)) == {6: 0, 2: 1}


# --------------------------------------------------------------------------------------
# Placements


def test_random_placement_is_deterministic_given_rng() -> None:
    """Same seed, same set; sorted, distinct, in range, of size M."""
    a = PL.place("random", (4, 4, 4), 20, random.Random(7))
    b = PL.place("random", (4, 4, 4), 20, random.Random(7))
    assert a == b and len(set(a)) == 20 and list(a) == sorted(a) and all(0 <= v < 64 for v in a)
    assert PL.place("random", (4, 4, 4), 20, random.Random(8)) != a


def test_corner_placement_fills_the_fig3_box() -> None:
    """M = m^d gives exactly the m x ... x m box at node 0; other M grow it shell by shell."""
    for sides in [(6, 6), (5, 4, 3), (8,)]:
        d = len(sides)
        for m in range(1, min(sides) + 1):
            box = {P.linear_index(x, sides) for x in itertools.product(range(m), repeat=d)}
            assert set(PL.corner_placement(sides, m**d)) == box
        n = math.prod(sides)
        prev: set[int] = set()
        for m in range(n + 1):
            cur = set(PL.corner_placement(sides, m))
            assert len(cur) == m and prev <= cur
            prev = cur


def _closest(nodes: tuple[int, ...], sides: tuple[int, ...]) -> int:
    pts = [P.coords_at(v, sides) for v in nodes]
    return min(sum(abs(a - b) for a, b in zip(x, y)) for x, y in itertools.combinations(pts, 2))


def test_spread_placement_is_spread() -> None:
    """Distinct, right size; one node goes to the centre; its closest pair is no closer than the corner's."""
    for sides in [(8, 8), (5, 7), (4, 4, 4), (9,)]:
        n = math.prod(sides)
        for m in range(n + 1):
            s = PL.spread_placement(sides, m)
            assert len(set(s)) == m and list(s) == sorted(s)
        assert PL.spread_placement(sides, n) == tuple(range(n))
        assert PL.spread_placement(sides, 1) == (P.linear_index(tuple(p // 2 for p in sides), sides),)

        for m in (2, 4, n // 4, n // 2):
            assert _closest(PL.spread_placement(sides, m), sides) >= _closest(PL.corner_placement(sides, m), sides)
    # a 2-D lattice: 16 of 64 sit on every other row and column
    assert {P.coords_at(v, (8, 8)) for v in PL.spread_placement((8, 8), 16)} == set(itertools.product((1, 3, 5, 7), repeat=2))


def test_placement_checks_its_input() -> None:
    """Unknown kinds, bad M and a missing rng are refused."""
    with pytest.raises(ValueError, match="placement must be one of random, corner, spread"):
        PL.place("diagonal", (3, 3), 2)
    with pytest.raises(ValueError, match="in 0..9, got 10"):
        PL.place("corner", (3, 3), 10)
    with pytest.raises(ValueError, match="needs a random.Random"):
        PL.place("random", (3, 3), 2)
