"""Priority STAR's local decisions (schemes/star/_rule.py) checked by brute force on small tori."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import pytest

from slotnet.schemes.star._rule import (
    broadcast_class,
    pick_ending,
    pick_split,
    pick_tie,
    ring_split,
    sdc_order,
    star_forward,
    unicast_class,
    unicast_next_hop,
)
from slotnet.schemes.star.theory import ending_dimension_probs, link_loads, transmissions_matrix, unicast_hops

SHAPES_2D = [(a, b) for a in range(2, 7) for b in range(2, 7)]
SHAPES_3D = [(2, 2, 2), (2, 3, 4), (3, 3, 3), (4, 4, 4), (3, 5, 2), (6, 5, 4), (5, 2, 6)]


def _step(sides, coords, dim, direction):
    c = list(coords)
    c[dim] = (c[dim] + direction) % sides[dim]
    return tuple(c)


def _distance(sides, a, b):
    return sum(min((x - y) % n, (y - x) % n) for x, y, n in zip(a, b, sides))


def _broadcast(sides, source, ending, split, classes=2):
    """Run the rule from the source; per node: copies received and hop depth; per link: uses."""
    received = Counter()
    depth = {source: 0}
    hops_by_class = {source: Counter()}
    links = Counter()
    frontier = [source]
    while frontier:
        nxt = []
        for v in frontier:
            for dim, direction, cls in star_forward(sides, source, ending, split, v, classes):
                w = _step(sides, v, dim, direction)
                links[(v, dim, direction)] += 1
                received[w] += 1
                if w not in depth:
                    depth[w] = depth[v] + 1
                    hops_by_class[w] = hops_by_class[v] + Counter({cls: 1})
                    nxt.append(w)
        frontier = nxt
    return received, depth, hops_by_class, links


def _splits(sides):
    """Every split mask with its probability (one fair bit per even side)."""
    even = [k for k, n in enumerate(sides) if n % 2 == 0]
    for bits in itertools.product((0, 1), repeat=len(even)):
        yield sum(b << k for b, k in zip(bits, even)), Fraction(1, 2 ** len(even))


def _all_coords(sides):
    return [tuple(reversed(c)) for c in itertools.product(*(range(n) for n in reversed(sides)))]


def test_sdc_order_is_the_papers_rotation():
    """Ending l (paper 1..d) gives l+1..d,1..l; 0-based it is l0+1..d-1,0..l0, ending last."""
    for d in range(1, 6):
        for l in range(1, d + 1):
            paper = [*range(l + 1, d + 1), *range(1, l + 1)]
            assert [k + 1 for k in sdc_order(d, l - 1)] == paper
    with pytest.raises(ValueError, match="ending dimension must be in 0..2, got 3"):
        sdc_order(3, 3)


def test_ring_split_covers_the_ring_with_n_minus_1_transmissions():
    """plus + minus = n - 1; odd rings split evenly, even rings give n/2 to the side the bit names."""
    for n in range(2, 12):
        for bit in (0, 1):
            plus, minus = ring_split(n, bit)
            assert plus + minus == n - 1 and min(plus, minus) >= 0
            if n % 2:
                assert plus == minus
            else:
                assert (plus, minus) == ((n // 2, n // 2 - 1) if bit else (n // 2 - 1, n // 2))


@pytest.mark.parametrize("sides", SHAPES_2D + SHAPES_3D)
def test_broadcast_reaches_every_node_exactly_once(sides):
    """Every source, ending dimension and split: each other node gets one copy, N-1 transmissions, shortest paths."""
    nodes = _all_coords(sides)
    big_n = math.prod(sides)
    sources = nodes if len(sides) == 2 else nodes[:: max(1, len(nodes) // 7)]
    for source in sources:
        for ending in range(len(sides)):
            for split, _ in _splits(sides):
                received, depth, _, links = _broadcast(sides, source, ending, split)
                assert received[source] == 0
                assert all(received[v] == 1 for v in nodes if v != source)
                assert sum(links.values()) == big_n - 1 == sum(received.values())
                assert all(depth[v] == _distance(sides, source, v) for v in nodes)


@pytest.mark.parametrize("sides", SHAPES_2D + SHAPES_3D)
def test_transmissions_per_dimension_match_eq_1(sides):
    """Counted transmissions on each dimension equal a_{i,l} of eq. (1) (transmissions_matrix)."""
    a = transmissions_matrix(sides)
    source = tuple(n - 1 for n in sides)
    for ending in range(len(sides)):
        for split, _ in _splits(sides):
            links = _broadcast(sides, source, ending, split)[3]
            per_dim = Counter()
            for (_, dim, _), c in links.items():
                per_dim[dim] += c
            assert [per_dim[i] for i in range(len(sides))] == [a[i][ending] for i in range(len(sides))]


@pytest.mark.parametrize("classes", [1, 2, 3])
def test_priority_classes_of_broadcast_transmissions(classes):
    """Ending-dimension transmissions are the last class (low), others class 0; one class: all 0."""
    sides = (4, 3, 5)
    for ending in range(3):
        for v in _all_coords(sides):
            for dim, _, cls in star_forward(sides, (1, 2, 0), ending, 0b001, v, classes):
                low = classes - 1 if classes > 1 else 0
                assert cls == (low if dim == ending else 0)
                assert cls == broadcast_class(dim, ending, classes)
    assert [unicast_class(c) for c in (1, 2, 3)] == [0, 0, 1]


def test_high_and_low_priority_hops_on_the_way_to_a_node():
    """§3.2: at most floor(n/2)(d-1) high-priority and floor(n/2) low-priority hops to any node."""
    for n, d in [(4, 2), (5, 2), (3, 3), (4, 3), (6, 2)]:
        sides = (n,) * d
        source = (0,) * d
        for ending in range(d):
            for split, _ in _splits(sides):
                hops = _broadcast(sides, source, ending, split)[2]
                assert max(h[0] for h in hops.values()) <= n // 2 * (d - 1)
                assert max(h[1] for h in hops.values()) <= n // 2


@pytest.mark.parametrize("sides", [(3, 4), (2, 5), (4, 6), (2, 2), (2, 3, 4), (3, 3, 2), (5, 3, 3)])
def test_expected_link_loads_match_theory_exactly(sides):
    """Exact expectation over sources, x_l and split bits equals link_loads on every directed link."""
    lam_b = 0.25  # binary fractions keep the expectation exact
    x = [Fraction(v) for v in ending_dimension_probs(sides, exact=True)]
    theory = link_loads(sides, lam_b, 0.0, x, exact=True)
    assert len(set(theory)) == 1  # eq. (2): balanced
    nodes = _all_coords(sides)
    load = Counter()
    for source in nodes:
        for ending, p in enumerate(x):
            if p:
                for split, w in _splits(sides):
                    for link, c in _broadcast(sides, source, ending, split)[3].items():
                        load[link] += Fraction(lam_b) * p * w * c
    for v in nodes:
        for dim in range(len(sides)):
            for direction in (1, -1):
                assert load[(v, dim, direction)] == theory[dim]


@pytest.mark.parametrize("sides", [(3, 4), (2, 5), (4, 6), (6, 3), (2, 3, 4), (4, 2, 2)])
def test_unicast_paths_are_shortest_in_dimension_order(sides):
    """Next hops reach the destination along a shortest path, dimension 0 first."""
    nodes = _all_coords(sides)
    for src in nodes:
        for dst in nodes:
            for tie in range(1 << len(sides)):
                v, dims, steps = src, [], 0
                while (hop := unicast_next_hop(sides, v, dst, tie)) is not None:
                    v = _step(sides, v, *hop)
                    dims.append(hop[0])
                    steps += 1
                    assert steps <= sum(sides)
                assert v == dst and steps == _distance(sides, src, dst)
                assert dims == sorted(dims)


@pytest.mark.parametrize("sides", [(3, 4), (2, 5), (4, 6), (2, 2, 4), (3, 4, 2)])
def test_unicast_expected_link_loads_match_theory_exactly(sides):
    """Uniform other-node destinations and fair tie bits load every dim-i link with lam_r h_i / 2."""
    lam_r = Fraction(1, 2)
    nodes = _all_coords(sides)
    big_n = len(nodes)
    load = Counter()
    for src in nodes:
        for dst in nodes:
            if dst == src:
                continue
            tied = [k for k, n in enumerate(sides) if n % 2 == 0 and (dst[k] - src[k]) % n == n // 2]
            for bits in itertools.product((0, 1), repeat=len(tied)):
                tie = sum(b << k for b, k in zip(bits, tied))
                w = lam_r / (big_n - 1) / 2 ** len(tied)
                v = src
                while (hop := unicast_next_hop(sides, v, dst, tie)) is not None:
                    load[(v, *hop)] += w
                    v = _step(sides, v, *hop)
    h = unicast_hops(sides)
    for v in nodes:
        for dim in range(len(sides)):
            for direction in (1, -1):
                assert load[(v, dim, direction)] == lam_r * h[dim] / 2
    xs = [Fraction(1)] + [Fraction(0)] * (len(sides) - 1)
    assert link_loads(sides, 0.0, 0.5, xs, exact=True) == [lam_r * hi / 2 for hi in h]


class _Stub:
    """A stand-in for random.Random with scripted draws."""

    def __init__(self, u: float = 0.0, bit: int = 1) -> None:
        self.u, self.bit, self.bits_drawn = u, bit, 0

    def random(self) -> float:
        return self.u

    def getrandbits(self, k: int) -> int:
        self.bits_drawn += 1
        return self.bit


def test_pick_ending_inverts_the_cumulative_distribution():
    """u in [F(l-1), F(l)) gives l; dimensions with probability 0 are never drawn."""
    x = [0.25, 0.0, 0.5, 0.25, 0.0]
    assert [pick_ending(_Stub(u), x) for u in (0.0, 0.2499, 0.25, 0.7499, 0.75, 0.999999)] == [0, 0, 2, 2, 3, 3]
    assert pick_ending(_Stub(1.0 - 1e-17), [0.5, 0.5, 0.0]) == 1
    with pytest.raises(ValueError, match="positive entry"):
        pick_ending(_Stub(0.5), [0.0, 0.0])


def test_pick_split_and_pick_tie_draw_only_where_needed():
    """Split bits only for even sides; tie bits only for dimensions at offset n/2."""
    rng = _Stub(bit=1)
    assert pick_split(rng, (4, 3, 2, 5, 6)) == 0b10101 and rng.bits_drawn == 3
    rng = _Stub(bit=1)
    assert pick_tie(rng, (4, 3, 6, 2), (0, 0, 1, 1), (2, 1, 4, 0)) == 0b1101 and rng.bits_drawn == 3
    rng = _Stub(bit=1)
    assert pick_tie(rng, (4, 6), (0, 0), (1, 2)) == 0 and rng.bits_drawn == 0


def test_star_forward_rejects_mismatched_coordinates():
    """Coordinates of the wrong length are a caller bug with a precise message."""
    with pytest.raises(ValueError, match="need 2 coordinates"):
        star_forward((4, 4), (0, 0, 0), 0, 0, (1, 0))
