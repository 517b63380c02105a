"""The deflection hot paths (inlined for speed) against the plain reference code they replace."""

from __future__ import annotations

import random

import pytest

from slotnet.nodes._philox import PhiloxStream
from slotnet.nodes._rng import philox_key
from slotnet.schemes.deflection._arrivals import ArrivalProcess, binomial_pmf, poisson_pmf
from slotnet.schemes.deflection._rule import _shuffled, admit, one_pass, pick_bit


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


def _twin_streams(seed: int) -> tuple[PhiloxStream, PhiloxStream]:
    key = philox_key(seed)
    return PhiloxStream(key, 5), PhiloxStream(key, 5)


@pytest.mark.parametrize("d", [3, 6, 12])
def test_philox_draws_taken_directly_equal_the_called_ones(d):
    """Given a philox stream's own random (what a node passes), the rule, the admission and the arrival process
    draw from the stream directly (compiled: C calls); a plain callable of the same stream takes the Python-call
    path. Both give the same ports, destinations and arrivals, and leave the stream at the same place."""
    gen = random.Random(d)
    for trial in range(300):
        fast, slow = _twin_streams(trial)
        node = gen.randrange(1 << d)
        n = gen.randrange(1, d + 1)
        dests = [x ^ (gen.randrange(1, 1 << d)) for x in [node] * n]
        live = gen.choice([None, gen.randrange(1 << d)])
        assert one_pass(node, dests, d, fast.random, 0, live) == one_pass(node, dests, d, lambda s=slow: s.random(), 0, live)
        a: list = []
        b: list = []
        admit(node, 1 << d, trial, gen.randrange(4), fast.random, a, None)
        admit(node, 1 << d, trial, len(a), lambda s=slow: s.random(), b, None)
        assert a == b
        assert fast.random() == slow.random()
    fast, slow = _twin_streams(99)
    quick = ArrivalProcess(fast, [(0, binomial_pmf(8, 1 / 8))])
    called = ArrivalProcess(slow, [(0, binomial_pmf(8, 1 / 8))], rand=lambda: slow.random())
    assert quick._ps is fast and called._ps is None
    slot = -1
    for _ in range(500):
        got = quick.next_after(slot)
        assert got == called.next_after(slot) and got is not None
        slot = got[0]
    assert fast.random() == slow.random()
