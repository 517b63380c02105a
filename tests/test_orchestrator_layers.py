"""The orchestrator's rooms, checked on the import statements of every module.

Imports anywhere in a module count, those inside functions too (a lazy import is still an
import):

* the engine (``orchestrator/engine/``) imports nothing else of the orchestrator: no
  tool, no shard module, not the CLI (``_run`` picks the shard coordinator, not the driver);
* the shard room imports the engine, never a tool or the CLI;
* the orchestrator imports no scheme package (``slotnet.schemes.<paper>``, the kit):
  only ``slotnet.schemes`` and its private core modules;
* no circle of imports among the orchestrator's modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORCH = ROOT / "orchestrator"
PACKAGE = "slotnet.orchestrator"


def _module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ORCH).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


FILES = sorted(ORCH.rglob("*.py"))
MODULES = {_module_name(p): p for p in FILES}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every import of ``path`` as (absolute module or package, names taken from it), relative ones resolved."""
    me = _module_name(path).split(".")
    anchor_of = me if path.name == "__init__.py" else me[:-1]
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                anchor = anchor_of[: len(anchor_of) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out.append((base, [a.name for a in node.names]))
    return out


def _names(path: Path) -> list[str]:
    """Everything ``path`` imports, as dotted names (``from m import x`` gives ``m`` and ``m.x``)."""
    return [n for base, names in _imports(path) for n in (base, *(f"{base}.{x}" for x in names))]


def _edges(path: Path) -> set[str]:
    """The orchestrator modules ``path`` imports: ``from m import x`` is module ``m.x`` where that
    is a module, else ``m`` (``x`` is a name in it)."""
    out = set()
    for base, names in _imports(path):
        for target in [f"{base}.{x}" if f"{base}.{x}" in MODULES else base for x in names] or [base]:
            if target in MODULES:
                out.add(target)
    return out


def _room(room: str) -> list[Path]:
    files = sorted((ORCH / room).rglob("*.py"))
    assert files, room
    return files


def _ids(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("path", _room("engine"), ids=_ids)
def test_the_engine_imports_no_tool_and_no_shard_module(path):
    """An engine module imports only engine modules of the orchestrator, even lazily."""
    for name in _names(path):
        if _within(name, PACKAGE):
            assert _within(name, f"{PACKAGE}.engine"), f"{_ids(path)} imports {name}"


@pytest.mark.parametrize("path", _room("shard"), ids=_ids)
def test_the_shard_room_imports_the_engine_only(path):
    """A shard module imports shard and engine modules of the orchestrator, never a tool or the CLI."""
    for name in _names(path):
        if _within(name, PACKAGE):
            assert _within(name, f"{PACKAGE}.shard") or _within(name, f"{PACKAGE}.engine"), f"{_ids(path)} imports {name}"


@pytest.mark.parametrize("path", FILES, ids=_ids)
def test_the_orchestrator_imports_no_scheme_package(path):
    """Only ``slotnet.schemes`` and its private core modules: never a paper's package or the kit."""
    for name in _names(path):
        parts = name.split(".")
        if len(parts) > 2 and parts[:2] == ["slotnet", "schemes"] and not parts[2].startswith("_"):
            sub = ROOT / "schemes" / parts[2]
            assert not (sub.is_dir() or sub.with_suffix(".py").is_file()), f"{_ids(path)} imports {name}"


def test_no_import_cycle_among_orchestrator_modules():
    """The graph of imports between orchestrator modules (function-level ones included) has no cycle."""
    graph = {m: _edges(p) for m, p in MODULES.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_walk_sees_lazy_imports():
    """The checks above read imports inside functions: the CLI's lazy import of a tool is an edge."""
    assert f"{PACKAGE}.tools._explore" in _edges(ORCH / "cli" / "_cmd_explore.py")
    assert f"{PACKAGE}.shard._coordinator" in _edges(ORCH / "_run.py")
