"""Shared fixtures and helpers for the slotnet suite."""

from __future__ import annotations

import random

import pytest
import trio


@pytest.fixture
def shuffled_scheduling(monkeypatch: pytest.MonkeyPatch):
    """Make Trio shuffle every batch of ready tasks with a chosen seed."""
    import trio._core._run as trio_run

    def use(seed: int) -> None:
        monkeypatch.setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)
        monkeypatch.setattr(trio_run, "_r", random.Random(seed))

    return use


__all__ = ["trio"]
