"""The embedded prefix tree P of §4 (Fig. 2) and the §5 row/column prefix, without Trio.

Pins ``slotnet.schemes.pmnb._prefix``: the tree is a spanning tree rooted at node N - 1,
every node's schedule (computed from its own coordinates) matches its neighbours',
the step counts are the paper's, and the step-by-step scan computes what
``itertools.accumulate`` computes, also for non-commutative operations.
"""

from __future__ import annotations

import itertools
import math
import operator
import random

import pytest

from slotnet.schemes.pmnb import _prefix as P

SHAPES = [(2,), (5,), (6,), (2, 2), (3, 3), (4, 4), (3, 4), (5, 2), (2, 2, 2), (3, 3, 3), (4, 3, 2), (2, 5, 3), (2, 3, 2, 2)]


def _orders(d: int) -> list[tuple[int, ...] | None]:
    return [None] + [P.rotation(c, d) for c in range(d)] + ([tuple(reversed(range(d)))] if d > 2 else [])


def _all_coords(sides: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [P.coords_at(v, sides) for v in range(math.prod(sides))]


def _leaf_order(sides: tuple[int, ...], order: tuple[int, ...] | None) -> list[int]:
    """Node ids sorted by their digits in ``order`` read most significant first (brute force)."""
    ordr = order or tuple(range(len(sides)))
    strides = [math.prod(sides[:k]) for k in range(len(sides))]
    nodes = _all_coords(sides)
    nodes.sort(key=lambda x: tuple(x[k] for k in reversed(ordr)))
    return [sum(c * s for c, s in zip(x, strides)) for x in nodes]


def test_linear_index_matches_node_ids_and_rotations() -> None:
    """Default order = the project's node ids; every order is a bijection matching brute force."""
    for sides in SHAPES:
        n = math.prod(sides)
        strides = [math.prod(sides[:k]) for k in range(len(sides))]
        for v in range(n):
            x = P.coords_at(v, sides)
            assert sum(c * s for c, s in zip(x, strides)) == v
            assert P.linear_index(x, sides) == v
        for order in _orders(len(sides)):
            assert P.linear_order(sides, order) == _leaf_order(sides, order)
            assert sorted(P.linear_index(x, sides, order) for x in _all_coords(sides)) == list(range(n))


def test_rotation_is_footnote_3_order() -> None:
    """Class c reads dimension (l + c) mod d as digit l."""
    assert P.rotation(0, 3) == (0, 1, 2)
    assert P.rotation(1, 3) == (1, 2, 0)
    assert P.rotation(2, 3) == (2, 0, 1)
    # on a 3 x 3 mesh, class 1 orders by x_0 first (most significant), then x_1
    assert P.linear_index((2, 0), (3, 3), P.rotation(1, 2)) == 6
    assert P.linear_index((0, 2), (3, 3), P.rotation(1, 2)) == 2


def test_every_node_but_the_root_has_one_parent() -> None:
    """Parents are neighbours one step up; following them reaches the root N - 1; children agree."""
    for sides in SHAPES:
        for order in _orders(len(sides)):
            nodes = _all_coords(sides)
            root = P.root(sides)
            assert P.parent(root, sides, order) is None
            kids: dict[tuple[int, ...], set[tuple[int, ...]]] = {x: set() for x in nodes}
            for x in nodes:
                par = P.parent(x, sides, order)
                if x == root:
                    continue
                assert par is not None
                assert sum(abs(a - b) for a, b in zip(x, par)) == 1 and sum(par) == sum(x) + 1
                kids[par].add(x)
                seen, y = 0, x
                while y != root:
                    y = P.parent(y, sides, order)
                    seen += 1
                    assert seen <= sum(sides)
            for x in nodes:
                assert set(P.children(x, sides, order)) == kids[x]
            assert sum(len(k) for k in kids.values()) == len(nodes) - 1


def test_ancestor_and_level_describe_fig2_tree() -> None:
    """The level-l tree node above a leaf is embedded where its l low digits are maximal."""
    sides = (3, 4, 2)
    for x in _all_coords(sides):
        h = P.level(x, sides)
        assert P.ancestor(x, 0, sides) == x
        assert P.ancestor(x, 3, sides) == P.root(sides)
        for lvl in range(h + 1):
            assert P.ancestor(x, lvl, sides) == x
        if h < 3:
            assert P.ancestor(x, h + 1, sides) != x
    assert P.level((2, 3, 0), sides) == 2 and P.level((2, 0, 1), sides) == 1 and P.level((0, 3, 1), sides) == 0


def test_schedules_are_consistent() -> None:
    """A node sends exactly when the neighbour it sends to receives, up to its parent, down to its children."""
    for sides in SHAPES:
        for order in _orders(len(sides)):
            events = {x: P.scan_events(x, sides, order) for x in _all_coords(sides)}
            recvs = {(x, e.step, e.dim, e.direction, e.phase) for x, evs in events.items() for e in evs if e.action == "recv"}
            n_sends = 0
            for x, evs in events.items():
                ups = [e for e in evs if e.action == "send" and e.phase == "up"]
                downs_in = [e for e in evs if e.action == "recv" and e.phase == "down"]
                assert len(ups) == (0 if x == P.root(sides) else 1)
                assert len(downs_in) == len(ups)
                for e in evs:
                    if e.action != "send":
                        continue
                    n_sends += 1
                    y = list(x)
                    y[e.dim] += e.direction
                    y_t = tuple(y)
                    assert (y_t, e.step, e.dim, -e.direction, e.phase) in recvs
                    if e.phase == "up":
                        assert P.parent(x, sides, order) == y_t
                    else:
                        assert P.parent(y_t, sides, order) == x
            assert n_sends == len(recvs) == 2 * (math.prod(sides) - 1)


def test_step_counts_and_one_dimension_per_step() -> None:
    """d subphases of p - 1 steps each way; at every step only links of one dimension are used."""
    for sides in SHAPES:
        for order in _orders(len(sides)):
            ordr = order or tuple(range(len(sides)))
            u = P.scan_steps(sides)
            assert u == sum(p - 1 for p in sides)
            dims_at: dict[int, set[int]] = {}
            for x in _all_coords(sides):
                for e in P.scan_events(x, sides, order):
                    dims_at.setdefault(e.step, set()).add(e.dim)
                    start = P.subphase_start(e.phase, e.subphase, sides, order)
                    assert 0 <= e.step - start <= sides[e.dim] - 2
                    assert e.dim == ordr[e.subphase]
            assert sorted(dims_at) == list(range(2 * u))
            assert all(len(ds) == 1 for ds in dims_at.values())
    assert P.scan_steps((5, 5, 5)) == 3 * 4


def test_scan_equals_accumulate() -> None:
    """The step-by-step scan gives itertools.accumulate's prefix and the total, for every order."""
    rng = random.Random(8)
    for sides in SHAPES:
        n = math.prod(sides)
        for order in _orders(len(sides)):
            for _ in range(3):
                values = [rng.randint(-9, 9) for _ in range(n)]
                inclusive, total = P.reference_scan(values, sides, order)
                leaves = _leaf_order(sides, order)
                assert [inclusive[v] for v in leaves] == list(itertools.accumulate(values[v] for v in leaves))
                assert total == sum(values)


def test_scan_respects_order_for_non_commutative_op() -> None:
    """With tuple concatenation each node gets exactly the leaves to its left, in order."""
    for sides in [(3, 4), (2, 3, 2), (4,), (3, 2, 2, 2)]:
        n = math.prod(sides)
        for order in _orders(len(sides)):
            values = [(v,) for v in range(n)]
            inclusive, total = P.reference_scan(values, sides, order, op=operator.add, identity=())
            leaves = _leaf_order(sides, order)
            for pos, v in enumerate(leaves):
                assert inclusive[v] == tuple(leaves[: pos + 1])
            assert total == tuple(leaves)


def test_ranks_from_prefix() -> None:
    """Value 1 on active nodes: inclusive - 1 is the rank, total is M (§4.1 Phase 1)."""
    rng = random.Random(3)
    sides = (4, 3, 3)
    n = math.prod(sides)
    for _ in range(20):
        active = set(rng.sample(range(n), rng.randint(0, n)))
        inclusive, total = P.reference_scan([int(v in active) for v in range(n)], sides)
        assert total == len(active)
        assert [inclusive[v] - 1 for v in sorted(active)] == list(range(len(active)))


def test_scan_node_rejects_an_unscheduled_message() -> None:
    """A message outside the node's schedule is an error, not silently absorbed."""
    node = P.ScanNode((0, 0), (3, 3), 1)
    with pytest.raises(ValueError, match="no scan receive scheduled"):
        node.incoming(0, 0, -1, 5)
    with pytest.raises(RuntimeError, match="not finished"):
        _ = node.total


def test_line_scan_median_tree() -> None:
    """§5 prefix on a line: root floor((p-1)/2), 2 floor(p/2) <= p steps, results = accumulate."""
    rng = random.Random(5)
    for p in range(2, 14):
        m = P.median(p)
        assert max(m, p - 1 - m) == p // 2
        steps = P.line_scan_steps(p)
        assert steps == (p if p % 2 == 0 else p - 1)
        last = max(step for c in range(p) for step, _a, _d in P.line_scan_events(c, p))
        assert last == steps - 1
        for _ in range(3):
            values = [(rng.randint(0, 9),) for _ in range(p)]
            inclusive, totals = P.reference_line_scan(values, op=operator.add, identity=())
            assert inclusive == list(itertools.accumulate(values))
            assert totals == [sum(values, ())] * p


def test_line_scan_schedule_is_consistent() -> None:
    """Every send on the line is received by the neighbour at the same step."""
    for p in range(2, 12):
        ev = {c: set(P.line_scan_events(c, p)) for c in range(p)}
        for c in range(p):
            for step, action, direction in ev[c]:
                if action == "send":
                    assert (step, "recv", -direction) in ev[c + direction]
        sends = sum(1 for c in range(p) for e in ev[c] if e[1] == "send")
        assert sends == 2 * (p - 1)


def test_input_checks() -> None:
    """Bad shapes, orders, coordinates and indices raise precise ValueErrors."""
    with pytest.raises(ValueError, match="at least one side"):
        P.check_sides(())
    with pytest.raises(ValueError, match="side 1 must be >= 2, got 1"):
        P.check_sides((3, 1))
    with pytest.raises(ValueError, match="permutation of 0..1"):
        P.check_order((0, 0), 2)
    with pytest.raises(ValueError, match="class c must be in 0..2"):
        P.rotation(3, 3)
    with pytest.raises(ValueError, match="outside 0..2"):
        P.linear_index((3, 0), (3, 3))
    with pytest.raises(ValueError, match="index must be in 0..8"):
        P.coords_at(9, (3, 3))
    with pytest.raises(ValueError, match="need 9 values"):
        P.reference_scan([1, 2], (3, 3))
