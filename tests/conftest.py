"""Shared fixtures and helpers for the slotnet suite."""

from __future__ import annotations

import random

import pytest
import trio

from slotnet import RunSpec, run


@pytest.fixture
def shuffled_scheduling(monkeypatch: pytest.MonkeyPatch):
    """Make Trio shuffle every batch of ready tasks with a chosen seed."""
    import trio._core._run as trio_run

    def use(seed: int) -> None:
        monkeypatch.setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)
        monkeypatch.setattr(trio_run, "_r", random.Random(seed))

    return use


def small_run(**kw):
    """A short deflection run on the 5-cube, overridable field by field."""
    base = dict(scheme="deflection", topology="hypercube:5", load={"offered": 1.0}, slots=120, warmup=20, seed=3)
    base.update(kw)
    return run(RunSpec(**base))


__all__ = ["small_run", "trio"]
