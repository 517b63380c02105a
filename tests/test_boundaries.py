"""Schemes reach the world only through their node context."""

from __future__ import annotations

import ast
from pathlib import Path

SCHEMES = Path(__file__).resolve().parents[1] / "schemes"
FORBIDDEN = ("slotnet.orchestrator", "slotnet.fabric", "trio.lowlevel")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.module
            elif node.level > 0:
                # a relative import must stay inside schemes/
                depth = len(path.relative_to(SCHEMES).parts) - 1
                assert node.level <= depth + 1, f"{path}: relative import escapes schemes/"


def test_schemes_never_import_orchestrator_or_fabric_internals():
    """No module under schemes/ imports the orchestrator, the fabric or Trio's internals."""
    files = sorted(SCHEMES.rglob("*.py"))
    assert len(files) > 5
    for path in files:
        for name in _imports(path):
            assert not any(name == f or name.startswith(f + ".") for f in FORBIDDEN), f"{path} imports {name}"
