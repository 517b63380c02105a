"""Layer rules, checked on the import statements of every module.

* schemes see only the node context, the errors, the kit and numerical libraries: never
  trio, the orchestrator or the fabric, and never a sibling scheme package;
* nodes do not import the fabric (nor the orchestrator or the schemes);
* the fabric imports no other slotnet package (the shared errors module aside).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_OF = {"fabric": "slotnet.fabric", "nodes": "slotnet.nodes", "schemes": "slotnet.schemes",
              "orchestrator": "slotnet.orchestrator"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [PACKAGE_OF[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    """Absolute names of everything ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = _module_name(path).split(".")
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = me if is_pkg else me[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def _files(folder: str) -> list[Path]:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files
    return files


def _hits(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("path", _files("schemes"), ids=lambda p: str(p.relative_to(ROOT)))
def test_schemes_see_only_the_node_context_and_the_kit(path):
    """No scheme module imports trio, the orchestrator, the fabric or a sibling scheme package."""
    me = _module_name(path).split(".")
    own = me[2] if len(me) > 2 else None  # slotnet.schemes.<package>
    for name in _imports(path):
        assert not _hits(name, ("trio", "slotnet.orchestrator", "slotnet.fabric", "slotnet.nodes.runtime")), \
            f"{path} imports {name}"
        parts = name.split(".")
        if name.startswith("slotnet.schemes.") and len(parts) > 2 and not parts[2].startswith("_"):
            other = parts[2]
            if other not in ("kit",) and own not in (None, "kit") and other != own and other[0].islower():
                pytest.fail(f"{path} imports {name}: scheme packages share code through the kit only")


@pytest.mark.parametrize("path", _files("nodes"), ids=lambda p: str(p.relative_to(ROOT)))
def test_nodes_do_not_import_the_fabric(path):
    """The node runtime knows nothing of the fabric, the orchestrator or the schemes."""
    for name in _imports(path):
        assert not _hits(name, ("slotnet.fabric", "slotnet.orchestrator", "slotnet.schemes")), f"{path} imports {name}"


@pytest.mark.parametrize("path", _files("fabric"), ids=lambda p: str(p.relative_to(ROOT)))
def test_fabric_imports_no_other_slotnet_package(path):
    """The fabric depends on msgpack and the shared errors only."""
    for name in _imports(path):
        if name.startswith("slotnet") and not name.startswith("slotnet.fabric"):
            assert _hits(name, ("slotnet.errors",)), f"{path} imports {name}"
