"""The deflection hot paths (inlined for speed) against the plain reference code they replace."""

from __future__ import annotations

import random

import pytest

from slotnet.schemes.deflection._arrivals import ArrivalProcess, binomial_pmf, poisson_pmf
from slotnet.schemes.deflection._rule import _shuffled, one_pass, pick_bit


def _reference_one_pass(node, dests, d, rand, first=0, live=None):
    """§II-A written plainly with pick_bit and _shuffled (the code one_pass inlines)."""
    n = len(dests)
    if first:
        order = _shuffled(list(range(first)), rand) + _shuffled(list(range(first, n)), rand)
    else:
        order = _shuffled(list(range(n)), rand)
    free = (1 << d) - 1
    spare = 0
    if live is not None:
        free, spare = live & free, free & ~live
    out = [(0, False)] * n
    for k in order:
        if not free:
            free, spare = spare, 0
        pref = (node ^ dests[k]) & free
        port = pick_bit(pref if pref else free, rand())
        out[k] = (port, not pref)
        free &= ~(1 << port)
    return out


@pytest.mark.parametrize("d", [1, 3, 6, 12])
def test_one_pass_equals_the_reference_draw_for_draw(d):
    """Same ports, same deflections and the same random draws consumed, with and without dead ports."""
    gen = random.Random(d)
    for _ in range(3000):
        node = gen.randrange(1 << d)
        n = gen.randrange(1, d + 1)
        dests = [x ^ (gen.randrange(1, 1 << d)) for x in [node] * n]
        first = gen.choice([0, 0, gen.randrange(0, n + 1)])
        live = gen.choice([None, gen.randrange(1 << d)])
        a, b = random.Random(gen.random()), random.Random()
        b.setstate(a.getstate())
        assert one_pass(node, dests, d, a.random, first, live) == _reference_one_pass(node, dests, d, b.random, first, live)
        assert a.random() == b.random()


@pytest.mark.parametrize("pmf", [binomial_pmf(8, 1 / 8), binomial_pmf(12, 0.9), poisson_pmf(0.3), [0.0, 0.5, 0.5]])
def test_one_rate_arrivals_equal_the_general_segment_walk(pmf):
    """The single-segment shortcut of ArrivalProcess.next_after gives the general walk's slots and counts."""
    fast = ArrivalProcess(random.Random(7), [(3, pmf)])
    slow = ArrivalProcess(random.Random(7), [(3, pmf)])
    slow._only = None  # force the general walk
    assert fast._only is not None
    slot = -1
    for _ in range(2000):
        got = fast.next_after(slot)
        assert got == slow.next_after(slot)
        assert got is not None
        slot = got[0] + (got[1] % 3)  # also ask from slots past the last arrival
