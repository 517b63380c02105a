"""Shared fixtures and helpers for the slotnet suite."""

from __future__ import annotations

import random

import pytest
import trio


@pytest.fixture
def shuffled_scheduling(monkeypatch: pytest.MonkeyPatch):
    """Make Trio shuffle every batch of ready tasks with a chosen seed (skipped on a Trio
    without the two private names this patches)."""
    import trio._core._run as trio_run

    if not (hasattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING") and hasattr(trio_run, "_r")):
        pytest.skip(f"trio {trio.__version__} has no _ALLOW_DETERMINISTIC_SCHEDULING/_r to shuffle its scheduling")

    def use(seed: int) -> None:
        monkeypatch.setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", True)
        monkeypatch.setattr(trio_run, "_r", random.Random(seed))

    return use


@pytest.fixture(scope="session")
def _results_cache_base(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("results-cache")


@pytest.fixture(autouse=True)
def _private_results_cache(_results_cache_base, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """`slotnet repro` keeps finished runs in a results cache: each test gets an empty one of
    its own (made only if the test writes to it), never the user's: a test runs what it asks for."""
    monkeypatch.setenv("SLOTNET_CACHE_DIR", str(_results_cache_base / f"t{id(request.node):x}"))


__all__ = ["trio"]
