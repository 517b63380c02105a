"""The one-pass rule of Greenberg & Hajek §II-A as a pure function, and its node."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from slotnet.schemes.deflection._arrivals import ArrivalProcess, binomial_pmf
from slotnet.schemes.deflection._rule import one_pass, pick_bit


def test_pick_bit_is_uniform_over_set_bits():
    """pick_bit maps equal sub-intervals of [0,1) onto the set bits in order."""
    mask = 0b1011010
    picks = [pick_bit(mask, (k + 0.5) / 4) for k in range(4)]
    assert picks == [1, 3, 4, 6]


def test_preferred_link_taken_when_free():
    """A lone packet always leaves on one of its preferred links, uniformly."""
    rng = random.Random(1)
    seen = Counter(one_pass(0b0000, [0b1011], 4, rng.random)[0] for _ in range(3000))
    assert set(seen) == {(0, False), (1, False), (3, False)}
    assert min(seen.values()) > 900


def test_deflection_only_when_every_preferred_link_is_taken():
    """Across random packet sets, a packet is deflected iff all its preferred links were already assigned."""
    rng = random.Random(2)
    d = 6
    for _ in range(2000):
        node = rng.randrange(1 << d)
        k = rng.randint(1, d)
        dests = [rng.choice([x for x in range(1 << d) if x != node]) for _ in range(k)]
        out = one_pass(node, dests, d, rng.random)
        ports = [p for p, _ in out]
        assert len(set(ports)) == k, "every packet gets its own port"
        for (port, defl), dest in zip(out, dests):
            preferred = node ^ dest
            assert defl == (not (preferred >> port) & 1)
        # a deflected packet's preferred links are all held by others
        for (_port, defl), dest in zip(out, dests):
            if defl:
                pref = [b for b in range(d) if (node ^ dest) >> b & 1]
                assert all(b in ports for b in pref)


def test_full_node_sends_every_packet():
    """With d packets (all continuing), every one is transmitted: none is dropped."""
    rng = random.Random(3)
    out = one_pass(5, [4, 4, 4, 4], 4, rng.random)
    assert sorted(p for p, _ in out) == [0, 1, 2, 3]
    assert sum(defl for _, defl in out) == 3


def test_too_many_packets_or_a_home_packet_are_errors():
    """More packets than ports, or a packet already home, is a caller bug."""
    with pytest.raises(ValueError, match="5 packets for 4 ports"):
        one_pass(0, [1, 2, 3, 4, 5], 4, random.Random(0).random)
    with pytest.raises(ValueError, match="packet for itself"):
        one_pass(3, [3], 4, random.Random(0).random)


def test_all_orders_are_equally_likely():
    """Two packets wanting the same single link: each wins it half of the time."""
    rng = random.Random(4)
    wins = sum(one_pass(0, [1, 1], 3, rng.random)[0] == (0, False) for _ in range(4000))
    assert 1850 < wins < 2150


def test_skipped_arrivals_keep_the_binomial_law():
    """Sleeping through empty slots leaves the per-slot count distribution B(d, v/d)."""
    rng = random.Random(5)
    d, v, slots = 6, 1.0, 60000
    proc = ArrivalProcess(rng, [(0, binomial_pmf(d, v / d))])
    counts = Counter()
    t, total = -1, 0
    while True:
        nxt = proc.next_after(t)
        if nxt is None or nxt[0] >= slots:
            break
        t = nxt[0]
        counts[nxt[1]] += 1
        total += nxt[1]
    counts[0] = slots - sum(counts.values())
    pmf = binomial_pmf(d, v / d)
    for k in range(4):
        assert abs(counts[k] / slots - pmf[k]) < 0.01
    assert abs(total / slots - v) < 0.02


def test_schedule_segments_switch_rates():
    """A v=6 slot followed by v=0 offers exactly six packets once, then never."""
    proc = ArrivalProcess(random.Random(6), [(0, binomial_pmf(6, 1.0)), (1, binomial_pmf(6, 0.0))])
    assert proc.next_after(-1) == (0, 6)
    assert proc.next_after(0) is None
