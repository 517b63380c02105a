"""The bounds of Varvarigos & Bertsekas as pure functions, and the bounds that frame each scheme's run.

Pins ``slotnet.schemes.pmnb.theory``: small cases worked by hand, the paper's internal
identities (Theorem 1 = 2 T^t, (6') = floor of §4.2's expression, (11) at rho -> 0 is
1.5V + X, (14) is where Theorem 7's margin vanishes), the placement lower bounds
against brute force over all cuts of tiny meshes, Theorem 2 against a simulation of its
algorithm, and lower <= upper on a grid of shapes, M and placements.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from slotnet.schemes.pmnb import _placement as PL
from slotnet.schemes.pmnb import _prefix as P
from slotnet.schemes.pmnb import theory as th

# --------------------------------------------------------------------------------------
# Hand-checked values


def test_lower_bounds_3_4_by_hand() -> None:
    """(3) (M-1)/(2d) on tori, (4) (M-1)/d on arrays; ceilings for whole packets."""
    assert th.pmnb_lower_bound((4, 4), True, 16) == 15 / 4
    assert th.pmnb_lower_bound((4, 4), False, 9) == 4.0
    assert th.pmnb_lower_bound((3, 3, 3), False, 11) == 10 / 3
    assert th.pmnb_lower_bound((3, 3, 3), False, 11, integral=True) == 4.0
    assert th.pmnb_lower_bound((3, 5), True, 0) == 0.0  # any sides, M = 0


def test_pmnb_upper_bounds_by_hand() -> None:
    """(5), (6), (5'), (6') and Lemma 2 on small meshes, computed by hand."""
    # (5): 16/4 * 15/16 + 2*2*3*0.1 + 1.5*3
    assert th.pmnb_split_bound((4, 4), True, 16, 0.1) == pytest.approx(3.75 + 1.2 + 4.5)
    # (6): 4/2 * 8/9 + 2*2*2*0.5 + 2*2
    assert th.pmnb_split_bound((3, 3), False, 4, 0.5) == pytest.approx(16 / 9 + 4 + 4)
    # (5'), p = 5 odd: ceil(7/2)=4; 4 * ceil(4/2)/4 * 24/25 + 4*2 + 2*2 + 4*4*2*0.25
    assert th.pmnb_unsplit_bound((5, 5), True, 7, 0.25) == pytest.approx(1.92 + 8 + 4 + 8)
    # (6'): ceil(10/3) + 2*3*3 - 1 + 4*3*3*0.5
    assert th.pmnb_unsplit_bound((4, 4, 4), False, 10, 0.5) == pytest.approx(4 + 17 + 18)
    # Lemma 2 torus: 16/2 * 15/16 + 1.2 + 1.5*3*2
    assert th.lemma2_bound((4, 4), True, 16, 0.1) == pytest.approx(7.5 + 1.2 + 9)
    # end of §4.2, 4 x 4 array: ceil(16/2) * 15/16 + 3*2 + 2*3
    assert th.mnb_unsplit_bound((4, 4), False) == pytest.approx(7.5 + 12)


def test_theorem1_exact_and_printed() -> None:
    """Theorem 1: optimal array MNB is 2 T^t = ceil((N-1)/2); the printed ceil(N/2) is off by one for odd p."""
    assert th.torus_mnb_2d((3, 3)) == 2 and th.torus_mnb_2d((4, 4)) == 4
    assert th.theorem1_mnb_array((3, 3)) == 4 and th.theorem1_printed((3, 3)) == 5
    assert th.theorem1_mnb_array((4, 4)) == th.theorem1_printed((4, 4)) == 8
    for p in range(2, 40):
        sq = (p, p)
        assert th.theorem1_mnb_array(sq) == 2 * th.torus_mnb_2d(sq)
        assert th.theorem1_mnb_array(sq) >= (p * p - 1) / 2  # the proof's lower bound
        assert (th.theorem1_printed(sq) == th.theorem1_mnb_array(sq)) == (p % 2 == 0)
        assert th.torus_mnb_2d(sq) == th.mnb_torus_optimal(sq)  # [BeT89] at d = 2
    with pytest.raises(ValueError, match="Theorem 1 is stated for p x p meshes"):
        th.theorem1_mnb_array((3, 3, 3))


def test_theorem2_and_remark_by_hand() -> None:
    """K + p - 1 on an array, half on a ring with halves; the Remark's single-packet times."""
    assert th.theorem2_bound((4,), False, 5) == 8.0
    assert th.theorem2_bound((4,), True, 5, split=True) == 4.0
    assert th.theorem2_bound((4,), True, 5) == 8.0
    assert th.theorem2_remark((6,), False) == 5.0
    assert th.theorem2_remark((6,), True) == 3.0 and th.theorem2_remark((6,), True, split=True) == 2.5
    with pytest.raises(ValueError, match="K must be an integer >= 0"):
        th.theorem2_bound((4,), False, -1)


def test_packing_and_prefix_times_by_hand() -> None:
    """Theorems 3, 4 and the prefix phases: d(p-1), 2d(p-1), 2d(p-1)t_p; §5's p t_p."""
    assert th.packing_time((3, 4)) == 5 and th.monotone_time((3, 4)) == 10
    assert th.packing_time((5, 5, 5)) == 12
    assert th.prefix_time((4, 4, 4), 0.1) == pytest.approx(1.8)
    assert th.line_prefix_time((5, 5), 0.5) == 2.5 and th.line_prefix_time_exact((5, 5), 0.5) == 2.0
    assert th.line_prefix_time((6, 6), 0.5) == th.line_prefix_time_exact((6, 6), 0.5) == 3.0


def test_pe_bounds_by_hand() -> None:
    """§5: the upper bound, the printed mN/4, the Fig. 3(a) cluster and what the constructions prove."""
    sq = (4, 4)
    assert th.pe_upper_bound(sq, False, 5, 0.5) == 2 * 2 * 12 + 6 + 2
    assert th.pe_lower_worst_case(sq, False, 5) == 8.0 and th.pe_lower_worst_case(sq, True, 5) == 4.0
    assert th.pe_lower_cluster(sq, False, 5) == 4 * 12 / 4
    assert th.pe_lower_cluster(sq, True, 5) == 4 * 12 / 8
    assert th.pe_lower_worst_case_proved(sq, False, 5) == 12.0
    # odd p, M = N: the half cut proves floor(p/2) ceil(p/2) p = 6 < mN/4 = 6.75
    assert th.pe_lower_worst_case((3, 3), False, 9) == 6.75
    assert th.pe_lower_worst_case_proved((3, 3), False, 9) == 6.0


def test_pe_printed_lower_bound_is_proved_where_the_paper_argues_it() -> None:
    """mN/4 follows from the two constructions for M <= N/2, and for every M when p is even."""
    for p in range(2, 16):
        n = p * p
        for wrap in (False, True):
            for m in range(n + 1):
                if 2 * m <= n or p % 2 == 0:
                    proved = th.pe_lower_worst_case_proved((p, p), wrap, m)
                    assert proved >= th.pe_lower_worst_case((p, p), wrap, m) - 1e-9, (p, wrap, m)


def test_dynamic_quantities_by_hand() -> None:
    """(9), (10), (12), (14) on a 16 x 16 torus with t_p = 0.1."""
    sides = (16, 16)
    assert th.unit_broadcast_length(sides, True) == 255 / (4 * 256)
    assert th.reservation_length(sides, True, 0.1) == pytest.approx(2 * 2 * 15 * 0.1 + 1.5 * 15)
    assert th.reservation_length(sides, False, 0.1) == pytest.approx(6 + 2 * 15)
    assert th.rho_from_lam(4 / 255, sides, True) == pytest.approx(1.0)
    assert th.lam_from_rho(0.5, sides, False) == pytest.approx(0.5 * 2 / 255)
    assert th.stability_limit(sides, True, 0.1) == pytest.approx(1 / (1 + 4 * 28.5 / 255))


# --------------------------------------------------------------------------------------
# Identities between the paper's results


SQUARE = [(p,) * d for d in (1, 2, 3) for p in range(2, 8 if d < 3 else 5)]


def test_6prime_is_the_floor_of_section_4_2_expression() -> None:
    """(6') = floor(ceil(M/d)(N-1)/N + 2(p-1)d) + 4(p-1)d t_p for M >= 1."""
    for sides in SQUARE:
        p, d, n = sides[0], len(sides), math.prod(sides)
        for m in range(1, n + 1):
            general = math.ceil(m / d) * (n - 1) / n + 2 * (p - 1) * d
            assert th.pmnb_unsplit_bound(sides, False, m, 0.5) == pytest.approx(math.floor(general + 1e-12) + 4 * (p - 1) * d * 0.5)


def test_lemma1_sum_below_closed_form_and_theorem6_below_lemma2() -> None:
    """Lemma 1's sum <= its closed form; splitting (Theorem 6) never loses to A_0 (Lemma 2)."""
    for sides in SQUARE:
        n = math.prod(sides)
        for wrap in (False, True):
            for m in range(n + 1):
                assert th.lemma1_phase3_sum(sides, wrap, m) <= th.lemma1_phase3(sides, wrap, m) + 1e-9
                assert th.pmnb_split_bound(sides, wrap, m, 0.3) <= th.lemma2_bound(sides, wrap, m, 0.3) + 1e-9


def test_theorem7_light_load_and_stability_limit() -> None:
    """(11) at rho = 0 is 1.5V + X; the margin vanishes at (14); the bound grows with rho and is inf beyond."""
    for sides in [(4, 4), (8, 8), (16, 16), (5, 5, 5), (9,)]:
        for wrap in (False, True):
            for tp in (0.05, 1.0):
                assert th.delay_bound(0.0, sides, wrap, tp) == pytest.approx(th.delay_bound_light(sides, wrap, tp))
                lim = th.stability_limit(sides, wrap, tp)
                assert 0 < lim < 1
                assert th.stability_margin(lim, sides, wrap, tp) == pytest.approx(0.0, abs=1e-12)
                grid = [lim * k / 20 for k in range(20)]
                values = [th.delay_bound(r, sides, wrap, tp) for r in grid]
                assert all(math.isfinite(v) for v in values) and values == sorted(values)
                assert th.delay_bound(lim * 1.0001, sides, wrap, tp) == math.inf
                # unsplit constants: finite below their own limit, inf above
                lim2 = th.stability_limit(sides, wrap, tp, split=False)
                assert 0 < lim2 < 1
                assert math.isfinite(th.delay_bound(lim2 * 0.99, sides, wrap, tp, split=False))
                assert th.delay_bound(lim2 * 1.01, sides, wrap, tp, split=False) == math.inf
    assert th.stability_limit((64, 64), True, 0.1) > th.stability_limit((8, 8), True, 0.1)


def test_unsplit_constants_dominate_5prime_6prime() -> None:
    """X' M + V' >= (5')/(6') for every M, so Theorem 7 applies to the unsplit PMNB."""
    for sides in SQUARE:
        n = math.prod(sides)
        for wrap in (False, True):
            x, v = th.unsplit_constants(sides, wrap, 0.2)
            for m in range(n + 1):
                assert x * m + v >= th.pmnb_unsplit_bound(sides, wrap, m, 0.2) - 1e-9


# --------------------------------------------------------------------------------------
# Placement bounds against brute force


def _neighbours(v: int, sides: tuple[int, ...], wrap: bool) -> list[int]:
    """Out-links of node v as the fabric has them (2 per dimension on a torus)."""
    x = P.coords_at(v, sides)
    out = []
    for k, p in enumerate(sides):
        for step in (1, -1):
            y = list(x)
            y[k] += step
            if not 0 <= y[k] < p:
                if not wrap:
                    continue
                y[k] %= p
            out.append(P.linear_index(tuple(y), sides))
    return out


def _cut_value(s_set: set[int], active: set[int], sides: tuple[int, ...], wrap: bool, task: str) -> float:
    n = math.prod(sides)
    links = sum(1 for v in s_set for w in _neighbours(v, sides, wrap) if w not in s_set)
    inside = len(active & s_set)
    if task == "broadcast":
        need = max(inside, len(active) - inside)
    else:
        need = max(inside * (n - len(s_set)), (len(active) - inside) * len(s_set))
    return math.ceil(need / links)


def _is_box(s_set: set[int], sides: tuple[int, ...], wrap: bool) -> bool:
    pts = [P.coords_at(v, sides) for v in s_set]
    proj = [sorted({x[k] for x in pts}) for k in range(len(sides))]
    if math.prod(len(c) for c in proj) != len(s_set):
        return False
    for c, p in zip(proj, sides):
        if len(c) == p:
            continue
        if not wrap and c[-1] - c[0] + 1 != len(c):
            return False
        if wrap and sum(1 for a, b in zip(c, c[1:] + [c[0] + p]) if b - a > 1) != 1:
            return False
    return True


TINY = [((2, 2), False), ((2, 3), False), ((3, 3), False), ((2, 2), True), ((3, 3), True), ((2, 2, 2), False), ((4,), True), ((5,), False)]


@pytest.mark.parametrize(("sides", "wrap"), TINY)
def test_cut_bound_equals_brute_force_over_boxes(sides: tuple[int, ...], wrap: bool) -> None:
    """Over all node subsets of tiny meshes: box cut = brute force over boxes <= brute force over all cuts."""
    rng = random.Random(21)
    n = math.prod(sides)
    subsets = [set(c) for r in range(1, n) for c in itertools.combinations(range(n), r)]
    boxes = [s for s in subsets if _is_box(s, sides, wrap)]
    for _ in range(12):
        active = set(rng.sample(range(n), rng.randint(1, n)))
        for task in ("broadcast", "personalised"):
            got = th.cut_bound(sorted(active), sides, wrap, task, integral=True)
            assert got == max(_cut_value(s, active, sides, wrap, task) for s in boxes)
            assert got <= max(_cut_value(s, active, sides, wrap, task) for s in subsets)
            assert got >= th.per_node_bound(sorted(active), sides, wrap, task, integral=True)


def test_cut_bound_fallback_is_weaker_but_valid() -> None:
    """With too many boxes, single nodes and slabs only: never above the full enumeration."""
    rng = random.Random(4)
    for sides, wrap in [((6, 6), False), ((5, 5), True), ((4, 3, 3), False)]:
        n = math.prod(sides)
        for _ in range(5):
            active = rng.sample(range(n), rng.randint(1, n))
            full = th.cut_bound(active, sides, wrap, "personalised", integral=True)
            fallback = th.cut_bound(active, sides, wrap, "personalised", integral=True, max_boxes=1)
            assert th.per_node_bound(active, sides, wrap, "personalised", integral=True) <= fallback <= full


def test_placement_bounds_by_hand() -> None:
    """Corner clusters and lone nodes: per node, Fig. 3(a)'s cut, distance."""
    corner = PL.corner_placement((4, 4), 4)  # the 2 x 2 box at (0, 0)
    pb = th.placement_bound(corner, (4, 4), False, "personalised")
    assert pb["per_node"] == 8.0  # (0, 0) sends 15 packets over 2 links
    assert pb["cut"] >= 12.0 == th.pe_lower_cluster((4, 4), False, 4)
    assert pb["distance"] == 6.0
    assert th.distance_bound([0], (5, 5), False) == 8.0 and th.distance_bound([0], (5, 5), True) == 4.0
    assert th.distance_bound([0], (5, 5), True, piece=0.25) == 1.0
    for p in range(3, 9):
        for m in range(1, p):
            box = PL.corner_placement((p, p), m * m)
            assert th.cut_bound(box, (p, p), False, "personalised", integral=True) >= math.ceil(th.pe_lower_cluster((p, p), False, m * m))


# --------------------------------------------------------------------------------------
# Theorem 2 against a simulation of its algorithm


def _simulate_theorem2(counts: list[int], ring: bool) -> float:
    """Theorem 2's algorithm: forward what arrives, insert an own packet into an empty slot.

    Array: a whole copy goes each way to the end. Ring (halves): half s of a packet goes
    one way around, p - 1 hops of 1/2 each; a node needs both halves of every packet.
    """
    p = len(counts)
    dirs = (1, -1)

    def item(pkt: tuple[int, int], s: int) -> tuple[tuple[int, int], int]:
        return (pkt, s if ring else 0)

    have = [{item((v, j), s) for j in range(counts[v]) for s in dirs} for v in range(p)]
    every = set().union(*have)
    own = {(v, s): [(v, j) for j in range(counts[v])] for v in range(p) for s in dirs}
    incoming: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}  # (node, dir) -> (packet, hops left)
    step = 0
    while any(h != every for h in have):
        out = {}
        for v in range(p):
            for s in dirs:
                nxt = v + s
                if not ring and not 0 <= nxt < p:
                    continue
                if (v, s) in incoming and incoming[(v, s)][1] > 0:
                    out[(nxt % p, s)] = (incoming[(v, s)][0], incoming[(v, s)][1] - 1)
                elif own[(v, s)]:
                    hops = p - 1 if ring else (p - 1 - v if s > 0 else v)
                    out[(nxt % p, s)] = (own[(v, s)].pop(), hops - 1)
        incoming = out
        for (w, s), (pkt, _h) in out.items():
            have[w].add(item(pkt, s))
        step += 1
        assert step <= sum(counts) + p
    return step / 2 if ring else float(step)


def test_theorem2_simulation_lies_between_bounds() -> None:
    """Measured time of Theorem 2's algorithm is within [lower, upper] of array_broadcast_bounds."""
    rng = random.Random(9)
    for p in range(2, 9):
        for ring in (False, True):
            for _ in range(25):
                counts = [rng.choice((0, 0, 1, 2, 3)) for _ in range(p)]
                if not sum(counts):
                    continue
                sources = [v for v in range(p) for _ in range(counts[v])]
                measured = _simulate_theorem2(counts, ring)
                b = th.array_broadcast_bounds((p,), ring, sources, ring)
                assert b["lower_bound"] <= measured <= b["upper_bound"], (p, ring, counts, measured, b)
                k = th.array_broadcast_bounds((p,), ring, sum(counts), ring)
                assert k["lower_bound"] <= measured and k["upper_bound"] == b["upper_bound"]


# --------------------------------------------------------------------------------------
# the bounds per scheme: lower <= upper everywhere


def test_bounds_lower_below_upper_on_a_grid() -> None:
    """pmnb and partial-exchange: lower <= upper for random, corner and spread placements and bare M."""
    rng = random.Random(17)
    shapes = [(p, p) for p in range(2, 9)] + [(p, p, p) for p in range(2, 5)] + [(p,) for p in (2, 5, 8)]
    for sides in shapes:
        n = math.prod(sides)
        for wrap, split, tp in itertools.product((False, True), (False, True), (0.05, 1.0)):
            for m in sorted({0, 1, 2, len(sides), n // 2, n - 1, n}):
                cases: list[int | tuple[int, ...]] = [m] + [PL.place(kind, sides, m, rng) for kind in PL.PLACEMENTS]
                for active in cases:
                    b = th.pmnb_bounds(sides, wrap, active, tp, split)
                    assert 0 <= b["lower_bound"] <= b["upper_bound"], (sides, wrap, split, tp, active, b)
                    assert b["lower_bound"] >= b["lower_bound_any_placement"]
                    if len(sides) == 2 and split:
                        e = th.partial_exchange_bounds(sides, wrap, active, tp)
                        assert 0 <= e["lower_bound"] <= e["upper_bound"], (sides, wrap, active, e)
                        assert e["lower_bound_worst_case_proved"] <= e["upper_bound"]


def test_bounds_of_the_other_schemes() -> None:
    """prefix-scan, packing, monotone and dynamic-broadcast: keys present and lower <= upper."""
    for sides in [(2,), (7,), (4, 4), (5, 3), (3, 3, 3)]:
        n = math.prod(sides)
        for wrap in (False, True):
            b = th.prefix_scan_bounds(sides, wrap, 0.2)
            assert b["lower_bound"] <= b["upper_bound"] == pytest.approx(2 * sum(p - 1 for p in sides) * 0.2)
            assert b["row_column_lower_bound"] <= b["row_column_upper_bound"]
            ids, targets = list(range(n))[::2], list(range(n))[: (n + 1) // 2]
            for b in (th.packing_bounds(sides, wrap, ids), th.monotone_bounds(sides, wrap, ids, targets)):
                assert b["lower_bound"] <= b["upper_bound"]
            if len(set(sides)) == 1:
                for split in (True, False):
                    d = th.dynamic_broadcast_bounds(sides, wrap, 0.1, split, rho=0.3)
                    assert d["lower_bound"] <= d["upper_bound"] and d["stable"] == (d["stability_limit"] > 0.3)
                    assert set(d) >= {"upper_bound", "lower_bound", "which", "lower_which", "X", "V", "lam", "rho"}
                d = th.dynamic_broadcast_bounds(sides, wrap, 0.1, lam=th.lam_from_rho(0.999, sides, wrap))
                assert d["upper_bound"] == math.inf and not d["stable"]
    full = th.pmnb_bounds((5, 5), False, 25, 0.1)
    assert full["theorem1_exact"] == 12.0 and full["theorem1_printed"] == 13.0 and full["which"] == "Theorem 6, eq. (6)"
    assert th.pmnb_bounds((4, 4, 4), True, 64, 0.1, False)["which"] == "§4.2, eq. (5')"


def test_bounds_reject_bad_input() -> None:
    """Precise ValueErrors for unequal sides, t_p, M, ids, loads and shapes; no dispatch on a task name."""
    assert not hasattr(th, "bounds_for") and not hasattr(th, "TASKS")  # one named function per scheme
    with pytest.raises(ValueError, match=r"Theorem 6 is stated for a p\^d mesh \(equal sides\), got sides \(4, 6\)"):
        th.pmnb_bounds((4, 6), True, 3, 0.1)
    with pytest.raises(ValueError, match=r"t_p must be in \(0, 1\], got 0"):
        th.pmnb_bounds((4, 4), True, 3, 0)
    with pytest.raises(ValueError, match="needs t_p"):
        th.pmnb_bounds((4, 4), True, 3, None)
    with pytest.raises(ValueError, match="M must be in 0..16, got 17"):
        th.pmnb_bounds((4, 4), True, 17, 0.1)
    with pytest.raises(ValueError, match="distinct"):
        th.pmnb_bounds((4, 4), True, [1, 1], 0.1)
    with pytest.raises(ValueError, match="outside 0..15"):
        th.partial_exchange_bounds((4, 4), False, [16], 0.1)
    with pytest.raises(ValueError, match="stated for p x p meshes"):
        th.partial_exchange_bounds((4, 4, 4), False, 3, 0.1)
    with pytest.raises(ValueError, match="exactly one of rho"):
        th.dynamic_broadcast_bounds((4, 4), True, 0.1, rho=0.1, lam=0.1)
    with pytest.raises(ValueError, match="one side"):
        th.array_broadcast_bounds((4, 4), False, 3)
    with pytest.raises(ValueError, match="wrap must be True"):
        th.pmnb_bounds((4, 4), 1, 3, 0.1)
    with pytest.raises(ValueError, match="rho must be finite and >= 0"):
        th.lam_from_rho(-0.1, (4, 4), True)
