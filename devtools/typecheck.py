"""Type-check slotnet as the package it installs as: ``python devtools/typecheck.py [mypy options]``.

The tree keeps ``slotnet.fabric``, ``slotnet.nodes``, ``slotnet.schemes`` and
``slotnet.orchestrator`` in top-level folders (``fabric/``, ...), which setuptools maps
into the package (``[tool.setuptools] package-dir`` in ``pyproject.toml``). mypy knows
nothing of that mapping: run on the folders themselves it checks ``fabric`` as a package
of its own, cannot find ``slotnet.fabric`` and (``ignore_missing_imports``) types every
``from slotnet.nodes import ...`` as ``Any``, so a call across two of the folders was never
checked. This script lays the package out as it installs -- ``build/typecheck/slotnet``, a
folder of links to ``slotnet/``'s files and to the mapped folders, made again each run
from the mapping itself, so a new file or scheme needs nothing here -- and runs mypy on
it there, with ``[tool.mypy]``'s settings. Its messages name the files in the tree
(``fabric/_transport.py``, not the link), and it exits with mypy's status.

It also checks the type tests, ``tests/types/*.py``: scripts as a user writes them against
the public API, never run, in which ``assert_type`` pins what mypy infers and a
``type: ignore[code]`` an error it must report (``warn_unused_ignores``). They are linked
into ``build/typecheck/type_tests/`` so that their ``import slotnet`` finds the laid-out
package, not the tree's ``slotnet/`` folder alone. The scripts of ``benchmarks/`` and
``devtools/`` (this one included) are linked and checked the same way: they import
slotnet, some of them its internals, and a change there must not break one unseen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEW = ROOT / "build" / "typecheck"
TYPE_TESTS = ROOT / "tests" / "types"
#: folders of scripts checked beside the package, as modules of their own (their names only)
SCRIPTS = ("benchmarks", "devtools")


def package_dirs() -> dict[str, str]:
    """The ``package-dir`` mapping of ``pyproject.toml``: package name to folder in the tree."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]["package-dir"]


def build_view() -> dict[str, str]:
    """Make ``VIEW/slotnet`` as installed; return each linked prefix of the view's paths and its folder in the tree."""
    mapping = package_dirs()
    top = VIEW / "slotnet"
    shutil.rmtree(VIEW, ignore_errors=True)
    top.mkdir(parents=True)
    for entry in (ROOT / mapping["slotnet"]).iterdir():
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    prefixes = {"slotnet/": f"{mapping['slotnet']}/"}
    for package, folder in mapping.items():
        if package == "slotnet":
            continue
        parts = package.split(".")
        if len(parts) != 2 or parts[0] != "slotnet":
            raise SystemExit(f"typecheck: package-dir maps {package!r}; only slotnet.<name> is laid out")
        (top / parts[1]).symlink_to(ROOT / folder, target_is_directory=True)
        prefixes[f"slotnet/{parts[1]}/"] = f"{folder}/"
    (VIEW / "type_tests").mkdir()
    for test in sorted(TYPE_TESTS.glob("check_*.py")):
        (VIEW / "type_tests" / test.name).symlink_to(test)
    prefixes["type_tests/"] = f"{TYPE_TESTS.relative_to(ROOT)}/"
    for scripts in SCRIPTS:  # the benchmark and developer scripts, which import slotnet as a user does
        (VIEW / scripts).mkdir()
        for script in sorted((ROOT / scripts).glob("*.py")):
            (VIEW / scripts / script.name).symlink_to(script)
        prefixes[f"{scripts}/"] = f"{scripts}/"
    return prefixes


def main(argv: list[str]) -> int:
    prefixes = build_view()
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
           "--cache-dir", str(ROOT / ".mypy_cache"), "slotnet", "type_tests", *SCRIPTS, *argv]
    # mypy looks for `slotnet` in its working directory first: the view, not the tree's own slotnet/.
    done = subprocess.run(cmd, cwd=VIEW, capture_output=True, text=True, env={**os.environ, "MYPYPATH": ""})
    longest_first = sorted(prefixes, key=len, reverse=True)
    for line in (done.stdout + done.stderr).splitlines():
        for prefix in longest_first:
            if line.startswith(prefix):
                line = prefixes[prefix] + line[len(prefix):]
                break
        print(line)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
