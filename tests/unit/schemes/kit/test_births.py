"""The kit's Poisson births (``schemes/kit/_births.py``) unit by unit.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import math

import pytest

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
