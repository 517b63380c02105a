"""Shared fixtures and helpers for the slotnet suite, and the markers its folders set.

Each top folder of ``tests/`` marks its tests with its own name (``unit``, ``contract``,
``papers``, ``broker``, ``docs``; see ``tests/README.md``), so ``-m contract`` runs the
contract tests wherever they are collected from; ``slow`` stays explicit, test by test.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import trio

#: the folders of tests/ that mark their tests with their own name
FOLDER_MARKERS = ("unit", "contract", "papers", "broker", "docs")

_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its top folder's name, before ``-m`` selects (hence ``tryfirst``)."""
    for item in items:
        try:
            top = Path(item.path).resolve().relative_to(_TESTS).parts[0]
        except ValueError:  # collected from outside tests/
            continue
        if top in FOLDER_MARKERS:
            item.add_marker(getattr(pytest.mark, top))


@pytest.fixture
def shuffled_scheduling(monkeypatch: pytest.MonkeyPatch):
    """Make Trio shuffle every batch of ready tasks with a chosen seed."""
    import trio._core._run as trio_run

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
