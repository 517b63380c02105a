"""Contract tests reach slotnet through its public names only, checked on their syntax trees.

A contract test pins what a user or a plugin may rely on, so it imports no private module
or name of slotnet (a dotted part starting with ``_``, dunders aside) and names none in a
string either (``monkeypatch.setattr("slotnet.x._y.z", ...)``, ``import_module``): a test
that needs a private piece is a unit test, under ``tests/unit/`` beside its module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

#: a dotted slotnet path in a string
_DOTTED = re.compile(r"^slotnet(\.\w+)+$")


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def private_uses(source: str) -> list[str]:
    """Every private slotnet module or name that ``source`` imports or names in a dotted string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] == "slotnet":
            if any(_private(p) for p in node.module.split(".")):
                found.append(f"line {node.lineno}: from {node.module} import ...")
            found += [f"line {node.lineno}: {node.module}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "slotnet" and any(_private(p) for p in a.name.split("."))]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED.match(node.value)
              and any(_private(p) for p in node.value.split("."))):
            found.append(f"line {node.lineno}: {node.value!r}")
    return found


@pytest.mark.parametrize("path", sorted(HERE.glob("test_*.py")), ids=lambda p: p.name)
def test_a_contract_test_uses_public_names_only(path):
    """No contract test imports (or names in a dotted string) a private slotnet module or name."""
    assert private_uses(path.read_text(encoding="utf-8")) == [], f"{path.name} reaches private names"


def test_the_check_sees_each_way_to_reach_a_private_name():
    """The checker flags a private module, a private name, a plain import and a dotted string, and
    passes public names and dunders."""
    source = ("from slotnet.fabric._codec import encode\nfrom slotnet.schemes import _registry\n"
              "import slotnet.orchestrator.engine._spec\nx = 'slotnet.orchestrator.engine._progress.time'\n"
              "from slotnet import RunSpec, __version__\nimport slotnet.fabric\ny = 'slotnet.fabric'\n")
    assert private_uses(source) == ["line 1: from slotnet.fabric._codec import ...", "line 2: slotnet.schemes._registry",
                                    "line 3: import slotnet.orchestrator.engine._spec",
                                    "line 4: 'slotnet.orchestrator.engine._progress.time'"]
