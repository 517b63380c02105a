"""Every scheme package follows one layout, so a scheme is found from its name alone.

The convention (``docs/explanation/writing-a-scheme.md``):

* ``__init__.py`` holds the package's docstring index, ``SCHEMES`` and ``EXPERIMENTS``;
* a package with one scheme: ``scheme.py`` (the record, its params, prepare and theory
  adapter), ``node.py``, ``reporter.py``;
* a package with several: one public module per scheme, named after the scheme without
  its family prefix (``bcast-simple`` -> ``simple.py``, ``prefix-scan`` -> ``prefix_scan.py``),
  holding its record ``SCHEME``, node, prepare and theory adapter (the reporter too, unless
  it is shared: ``reporter.py``, or the kit's);
* ``_inputs.py`` what the family's schemes share on the prepare side;
* the paper's algorithms in private modules, the analysis in ``theory.py`` and
  ``_theory_<topic>.py``, then ``repro.py``, ``paper.py`` and data modules.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import slotnet
from slotnet.schemes import EXPERIMENTS, Scheme

ROOT = Path(__file__).resolve().parents[2] / "schemes"
FAMILIES = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "kit")
#: family prefixes dropped from a scheme's name to name its module
PREFIXES = ("bcast-", "m2o-")
#: public modules a package may hold besides its scheme modules
PUBLIC = {"__init__", "scheme", "node", "reporter", "theory", "repro", "paper", "instances", "trees"}


def _family(scheme: Scheme) -> str:
    module = scheme.node.__module__
    return module.split(".")[2]


def _schemes_of(family: str) -> list[Scheme]:
    return [s for s in slotnet.SCHEMES.values() if _family(s) == family]


def _home(scheme: Scheme) -> str:
    """The module that must define ``scheme``'s record."""
    family = _family(scheme)
    if len(_schemes_of(family)) == 1:
        return f"slotnet.schemes.{family}.scheme"
    short = scheme.name
    for prefix in PREFIXES:
        short = short.removeprefix(prefix)
    return f"slotnet.schemes.{family}.{short.replace('-', '_')}"


SCHEMES = sorted(slotnet.SCHEMES.values(), key=lambda s: s.name)


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.name)
def test_the_record_lives_in_the_module_named_after_the_scheme(scheme):
    """``<family>/<short>.py`` (or ``scheme.py``) defines ``SCHEME``, and it is this record."""
    home = importlib.import_module(_home(scheme))
    assert getattr(home, "SCHEME", None) is scheme, f"{home.__name__}.SCHEME is not {scheme.name}'s record"


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda s: s.name)
def test_node_prepare_theory_and_reporter_are_found_beside_the_record(scheme):
    """Node, prepare and theory adapter are defined in the scheme's module; the reporter there, in
    ``reporter.py`` or in the kit; node may be ``node.py`` and prepare ``_inputs.py``."""
    home = _home(scheme)
    package = home.rpartition(".")[0]
    assert scheme.node.__module__ in (home, f"{package}.node"), scheme.node.__module__
    assert scheme.prepare.__module__ in (home, f"{package}._inputs"), scheme.prepare.__module__
    if scheme.theory is not None:
        assert scheme.theory.__module__ == home, scheme.theory.__module__
    reporter = getattr(scheme.reporter, "__module__", home)
    assert reporter in (home, f"{package}.reporter") or reporter.startswith("slotnet.schemes.kit"), reporter


@pytest.mark.parametrize("family", FAMILIES)
def test_a_package_holds_only_the_modules_the_layout_names(family):
    """Every public module is a scheme module or one of the layout's public names; the rest is private."""
    scheme_modules = {_home(s).rpartition(".")[2] for s in _schemes_of(family)}
    for path in sorted((ROOT / family).glob("*.py")):
        name = path.stem
        assert name.startswith("_") or name in PUBLIC | scheme_modules, \
            f"schemes/{family}/{path.name}: neither a scheme module ({sorted(scheme_modules)}) nor one of {sorted(PUBLIC)}"


@pytest.mark.parametrize("family", FAMILIES)
def test_init_defines_only_the_index(family):
    """``__init__.py`` binds SCHEMES and EXPERIMENTS (and imports what they need); nothing else."""
    tree = ast.parse((ROOT / family / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        assert names and names <= {"SCHEMES", "EXPERIMENTS", "__all__"}, \
            f"schemes/{family}/__init__.py defines {ast.dump(node)[:80]}"


def _compares_to_names(fn: ast.FunctionDef, arg: str, names: set[str]) -> bool:
    """Whether ``fn`` compares its argument ``arg`` with one of ``names`` as a literal (``if name == "x"``, ``in ("a", "b")``)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == arg:
            for right in node.comparators:
                items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
                if any(isinstance(x, ast.Constant) and x.value in names for x in items):
                    return True
    return False


def test_no_name_string_dispatch_in_theory_modules():
    """No theory function branches on a scheme's name (BookSim's hand-kept map): each adapter calls its own function."""
    names = {s.name for s in SCHEMES} | {s.name.removeprefix(p) for s in SCHEMES for p in PREFIXES}
    names |= {n.replace("-", "_") for n in names}
    for path in sorted(ROOT.glob("*/theory.py")) + sorted(ROOT.glob("*/_theory_*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef):
                for arg in {a.arg for a in fn.args.args + fn.args.kwonlyargs}:
                    assert not _compares_to_names(fn, arg, names), f"{path.parent.name}/{path.name}:{fn.name} dispatches on {arg}"


def test_every_family_is_found_and_has_its_experiments():
    """Each family package declares schemes, and every reproduction is reachable by its paper."""
    assert {_family(s) for s in SCHEMES} == set(FAMILIES)
    assert all(e.paper for e in EXPERIMENTS.values())
