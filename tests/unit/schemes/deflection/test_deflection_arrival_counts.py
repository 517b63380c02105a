"""The arrival process's own count of arrivals per slot (the ``arrivals`` choice deflection declares)."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import example, given, settings
from hypothesis import strategies as st

from slotnet.schemes.deflection._arrivals import ArrivalProcess, binomial_pmf, poisson_pmf


def _walk(proc: ArrivalProcess, first: int, last: int) -> Counter[int]:
    """Drive ``proc`` as the node does, from slot ``first`` to ``last``: the count each slot drew."""
    seen: Counter[int] = Counter()
    nxt = proc.next_after(first - 1)
    for slot in range(first, last + 1):
        if nxt is not None and nxt[0] == slot:
            seen[nxt[1]] += 1
            nxt = proc.next_after(slot)
        else:
            seen[0] += 1
    return seen


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 8), v=st.floats(0.0, 1.0), first=st.integers(0, 30),
       length=st.integers(0, 200), queue=st.booleans())
@example(seed=0, d=1, v=2.220446049250313e-16, first=0, length=0, queue=True)  # λ below Poisson's 1e-15 tail: never
def test_counts_are_the_counts_of_every_slot_run(seed, d, v, first, length, queue):
    """counts(last) holds exactly the slots first..last, each with the number of arrivals it drew."""
    pmf = poisson_pmf(v * d) if queue and v > 0 else binomial_pmf(d, v)
    proc = ArrivalProcess(random.Random(seed), [(0, pmf)])
    last = first + length
    want = _walk(proc, first, last)
    assert proc.counts(last) == {k: n for k, n in want.items() if n}
    assert sum(proc.counts(last).values()) == length + 1


def test_counting_draws_nothing():
    """Asking for the counts leaves the node's random stream where it was."""
    rng = random.Random(3)
    proc = ArrivalProcess(rng, [(0, binomial_pmf(4, 0.25))])
    _walk(proc, 0, 50)
    state = rng.getstate()
    proc.counts(50)
    proc.counts(80)
    assert rng.getstate() == state


def test_a_time_varying_schedule_counts_nothing():
    """With several rates (Table I's schedule) the slots draw from different laws: no counts."""
    proc = ArrivalProcess(random.Random(1), [(0, binomial_pmf(6, 1.0)), (1, binomial_pmf(6, 0.1))])
    _walk(proc, 0, 20)
    assert proc.counts(20) == {}


def test_slots_past_the_last_are_not_counted():
    """A drawn arrival slot past ``last`` adds only the empty slots up to ``last``."""
    proc = ArrivalProcess(random.Random(7), [(0, binomial_pmf(3, 0.05))])
    nxt = proc.next_after(-1)
    assert nxt is not None
    at = nxt[0]
    assert proc.counts(at - 1) == ({0: at} if at else {})
    assert proc.counts(at) == Counter({0: at, nxt[1]: 1}) - Counter()
