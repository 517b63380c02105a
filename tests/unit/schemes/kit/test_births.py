"""The kit's Poisson births (``schemes/kit/_births.py``) unit by unit.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.schemes.kit._births import BirthProcess, available_slot

# ------------------------------------------------------------------ Poisson births


class _Draws:
    """A stand-in for ``random.Random`` whose ``random()`` returns the given values in turn."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_available_slot_is_the_ceiling():
    assert [available_slot(t) for t in (0.0, 0.5, 2.0, 2.000001, 7.9)] == [0, 1, 2, 3, 8]


def test_births_are_exponential_gaps_after_the_start():
    """u = 1 - e^-1 gives a gap of exactly 1/λ; u = 0 a gap of 0 (a birth at the start itself)."""
    u1 = 1.0 - math.exp(-1.0)
    p = BirthProcess(_Draws(0.0, u1, u1, u1), lam=2.0, start=3.0)  # type: ignore[arg-type]
    assert p.next_birth == 3.0 and p.wake_slot() == 3
    assert p.take_until(3.0) == [3.0]  # a birth at the slot boundary is taken (<=)
    assert p.next_birth == pytest.approx(3.5) and p.wake_slot() == 4
    assert p.take_until(3.4) == []
    assert p.take_until(4.0) == pytest.approx([3.5, 4.0])
    assert p.next_birth == pytest.approx(4.5)


def test_no_births_at_rate_zero():
    p = BirthProcess(_Draws(), lam=0.0)  # type: ignore[arg-type]
    assert p.next_birth == math.inf and p.wake_slot() is None and p.take_until(1e9) == []


def test_births_start_at_zero_by_default():
    u1 = 1.0 - math.exp(-1.0)
    assert BirthProcess(_Draws(u1), lam=4.0).next_birth == pytest.approx(0.25)  # type: ignore[arg-type]


# ------------------------------------------------------------------ births counted per slot


def _births_per_slot(proc: BirthProcess, first: int, last: int) -> dict[int, int]:
    """Drive ``proc`` as a broadcast node does (take every slot's births in that slot): the
    number of slots from ``first`` to ``last`` that held each number of births."""
    seen: dict[int, int] = {}
    for slot in range(first, last + 1):
        k = len(proc.take_until(slot))
        seen[k] = seen.get(k, 0) + 1
    return seen


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), lam=st.floats(0.01, 4.0), start=st.integers(0, 20), length=st.integers(0, 150))
def test_counts_hold_every_whole_slot_with_its_births(seed, lam, start, length):
    """counts(last) holds the slots start+1..last, each with the births it held, and draws nothing."""
    rng = random.Random(seed)
    proc = BirthProcess(rng, lam, start=float(start))
    want = _births_per_slot(proc, start + 1, start + length)
    state = rng.getstate()
    assert proc.counts(start + length) == want
    assert rng.getstate() == state


def test_counts_stop_before_a_slot_whose_births_are_not_all_drawn():
    """A slot with births still to come (taken up to mid-slot) is not counted yet."""
    proc = BirthProcess(_Draws(1 - math.exp(-0.5), 1 - math.exp(-0.2), 1 - math.exp(-3.0)), 1.0)
    assert proc.take_until(0.6) == [0.5]  # slot 1 holds 0.5 and 0.7: only one taken
    assert proc.counts(5) == {}
    assert proc.take_until(1.0) == [pytest.approx(0.7)]
    assert proc.counts(1) == {2: 1}
    assert proc.counts(3) == {2: 1, 0: 2}  # the next birth, at 3.7, falls in slot 4


def test_no_births_no_counts():
    """At rate 0 there is no Poisson law to declare: no counts."""
    proc = BirthProcess(_Draws(), 0.0)
    assert proc.take_until(10) == [] and proc.counts(10) == {}
