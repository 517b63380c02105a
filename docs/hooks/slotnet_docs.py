"""MkDocs hooks of the slotnet site (``hooks:`` in mkdocs.yml).

* The API reference is read from the sources by mkdocstrings (griffe). The installed
  package maps the top-level folders (``fabric/``, ``nodes/``, ``schemes/``,
  ``orchestrator/``) into one import namespace, ``slotnet.*``, through pyproject's
  ``package-dir``, which griffe cannot follow; so before the build this hook lays out
  ``build/apidocs/slotnet/`` in the installed shape (a copy of the ``.py`` sources),
  and mkdocs.yml points mkdocstrings there.
* The generated reference pages (the CLI and the scheme list, written by
  ``python docs/hooks/reference.py``) must be current: a stale one fails the build.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
#: modules left out of the API tree: importing ``slotnet.__main__`` runs the command line
SKIP = {"__main__.py"}


def _package_dirs(root: Path) -> dict[str, str]:
    """Sub-package (``""`` for ``slotnet`` itself) -> its source folder, from pyproject's ``package-dir``."""
    with open(root / "pyproject.toml", "rb") as fh:
        mapping = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    return {name.removeprefix("slotnet").lstrip("."): folder for name, folder in mapping.items()
            if name == "slotnet" or name.startswith("slotnet.")}


def api_tree(root: Path = ROOT) -> Path:
    """Lay out ``build/apidocs/slotnet`` in the installed shape; returns ``build/apidocs``.

    Only the ``.py`` sources are copied: the compiled build's extension modules beside
    them would make griffe import them instead of reading the source, and a symbolic link
    would lead griffe back to the folder's real place, outside the namespace.
    """
    out = root / "build" / "apidocs"
    shutil.rmtree(out, ignore_errors=True)
    for sub, folder in _package_dirs(root).items():
        src = root / folder
        dest = out / "slotnet" / sub if sub else out / "slotnet"
        for path in sorted(src.rglob("*.py")):
            rel = path.relative_to(src)
            if "__pycache__" in rel.parts or (not sub and (rel.name in SKIP or len(rel.parts) > 1)):
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / rel)
    return out


def _reference() -> Any:
    spec = importlib.util.spec_from_file_location("slotnet_docs_reference", Path(__file__).with_name("reference.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# Before mkdocstrings' own on_config: griffe drops a search path that does not exist yet,
# so on a fresh clone the tree must be laid out before the handler reads `paths`.
@event_priority(100)
def on_config(config: Any, **_: Any) -> Any:
    api_tree(Path(config.config_file_path).resolve().parent if config.config_file_path else ROOT)
    return config


def on_pre_build(config: Any, **_: Any) -> None:
    stale = _reference().stale(Path(config.docs_dir))
    if stale:
        raise PluginError(f"{', '.join(stale)} out of date: run `python docs/hooks/reference.py` and commit the pages")


