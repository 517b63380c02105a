"""The mutation runner's selection (``devtools/mutation/run_tests.py``): derived from paths, never stale.

Each source module's selection is its mirrored unit tests plus a short list of extra
pairs; a test file that moves or is renamed must not leave a module guarded by nothing or
by a path that no longer exists.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
SOURCES = ("fabric", "nodes", "orchestrator", "schemes", "slotnet")


def _runner():
    spec = importlib.util.spec_from_file_location("run_tests", ROOT / "devtools" / "mutation" / "run_tests.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RT = _runner()
MODULES = sorted(str(p.relative_to(ROOT)) for top in SOURCES for p in (ROOT / top).rglob("*.py"))


def _exists(test: str) -> bool:
    path, _, name = test.partition("::")
    target = ROOT / path
    return target.exists() and (not name or f"def {name}(" in target.read_text(encoding="utf-8"))


def test_every_listed_test_exists():
    """Every path of DEFAULT and EXTRA names a test file, folder or function that is there."""
    listed = RT.DEFAULT + [f"tests/{t}" for tests in RT.EXTRA.values() for t in tests]
    assert [t for t in listed if not _exists(t)] == []


def test_every_extra_prefix_names_a_source():
    """Each EXTRA prefix starts at least one source module's path (none is left from a module that moved)."""
    assert [p for p in RT.EXTRA if not any(m.startswith(p) for m in MODULES)] == []


@pytest.mark.parametrize("module", MODULES)
def test_every_module_has_a_selection_that_exists(module):
    """Every source module gets a non-empty selection, each entry present."""
    chosen = RT.selection(module)
    assert chosen and all(_exists(t) for t in chosen), (module, chosen)


def test_the_selection_mirrors_the_source_path():
    """A module's own tests are found by its path: fabric/_topology.py -> tests/unit/fabric/test_topology*.py,
    a paper's module -> test_PAPER_NAME*.py, plus the folder's test_FOLDER_parts.py; __init__.py has none."""
    assert RT.own_tests("fabric/_topology.py") == ["tests/unit/fabric/test_topology.py", "tests/unit/fabric/test_topology_ring.py",
                                                   "tests/unit/fabric/test_topology_specs.py"]
    assert RT.own_tests("schemes/star/_rule.py") == ["tests/unit/schemes/star/test_star_rule.py"]
    assert RT.own_tests("schemes/kit/_stats.py") == ["tests/unit/schemes/kit/test_stats.py"]
    assert RT.own_tests("orchestrator/shard/_mqtt.py") == ["tests/unit/orchestrator/shard/test_shard_parts.py"]
    assert RT.own_tests("fabric/__init__.py") == []
    assert RT.selection(None) == RT.DEFAULT and RT.selection("schemes/pmnb/monotone.py") == RT.DEFAULT
    assert RT.selection("./fabric/_ledger.py")[-1] == "tests/unit/orchestrator/shard/test_wire.py::test_the_ledger_travels_as_its_books"
