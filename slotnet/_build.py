"""Which build of the hot path runs: compiled from the Python source, or the source itself.

The modules on the per-packet path (:data:`COMPILED_MODULES`) are also compiled to C
extensions by Cython when slotnet is installed (``setup.py``; skipped without a C
compiler). They are compiled from their ``.py`` files as they stand -- no ``.pyx``,
``annotation_typing`` off -- so the compiled module runs the same Python semantics, only
without the interpreter's dispatch; the ``.py`` file stays the one source a reader and a
reviewer see. Where a module has a ``.pxd`` beside it (an "augmenting" declaration file:
no code, only types), the compiled module gives the locals and fields it names C types:
the outlet's fields (``fabric/_transport.pxd``), a node's context and parking record
(``nodes/_context.pxd``, ``nodes/_runtime.pxd``), the philox stream's words
(``nodes/_philox.pxd``), the one-pass rule's bit masks and
counters (``schemes/deflection/_rule.pxd``) and the deflection observer's counts
(``schemes/deflection/reporter.pxd``). Only values with a stated bound are typed (node
ids and masks below 2**24, counts of events below 2**63), so the results stay exactly the
source's.

``SLOTNET_PURE_PYTHON=1`` in the environment makes every process of a run import the
``.py`` files even where the compiled ones exist (the finder below), so the two builds
can be run side by side. An extension older than its source is never loaded: the source
runs instead (a file edited since the last install), and :func:`build` says so.
``tests/unit/slotnet/test_build_identity.py`` proves them identical: function by function on
random inputs, and run by run on whole JSON results and traces.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["COMPILED_MODULES", "PURE_ENV", "build", "child_env"]

#: The modules setup.py compiles, by import name (their sources sit under the package
#: directories of pyproject.toml's ``package-dir``): the fabric's per-message path (send,
#: park, deliver, decode), the node's park and wake-up, the compact random stream
#: (``--rng philox``), the observer's event path, and deflection routing's node, rule,
#: arrivals and reporter.
COMPILED_MODULES = (
    "slotnet.fabric._transport",
    "slotnet.nodes._context",
    "slotnet.nodes._philox",
    "slotnet.nodes._runtime",
    "slotnet.orchestrator.engine._network",
    "slotnet.schemes.deflection._arrivals",
    "slotnet.schemes.deflection._rule",
    "slotnet.schemes.deflection.reporter",
    "slotnet.schemes.deflection.node",
)

#: Environment variable: "1" runs the pure-Python modules even where compiled ones exist.
PURE_ENV = "SLOTNET_PURE_PYTHON"

#: A source newer than its extension by less than this was written by the same install.
_SAME_INSTALL_S = 2.0


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Imports a compiled module's ``.py`` source instead of its extension when the
    environment asks for pure Python, or when the extension is older than the source (an
    edited file in an editable install runs as edited until the next install compiles it)."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name not in COMPILED_MODULES or path is None:
            return None
        leaf = name.rpartition(".")[2]
        for entry in path:
            source = os.path.join(entry, leaf + ".py")
            if not os.path.isfile(source):
                continue
            if os.environ.get(PURE_ENV) != "1":
                built = [os.path.join(entry, leaf + s) for s in importlib.machinery.EXTENSION_SUFFIXES]
                built = [f for f in built if os.path.isfile(f)]
                # current, give or take an installer writing the two files a moment apart
                if built and os.path.getmtime(source) - os.path.getmtime(built[0]) < _SAME_INSTALL_S:
                    return None  # the ordinary finder loads the extension
            return importlib.util.spec_from_file_location(name, source)
        return None


def _install() -> None:
    """Put the finder first on the import path (once)."""
    if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())


def build() -> str:
    """``"compiled"`` if every hot-path module runs compiled, ``"pure"`` if none does,
    else ``"mixed"`` (a partial build). Imports the modules."""
    compiled = [isinstance(importlib.import_module(m).__loader__, importlib.machinery.ExtensionFileLoader)
                for m in COMPILED_MODULES]
    return "compiled" if all(compiled) else "pure" if not any(compiled) else "mixed"


def child_env(pure: bool) -> dict[str, str]:
    """This process's environment for a child that runs the pure-Python build (``pure``) or
    whatever is installed (the benchmarks' and tests' side-by-side runs)."""
    env = {k: v for k, v in os.environ.items() if k != PURE_ENV}
    if pure:
        env[PURE_ENV] = "1"
    return env


_install()  # slotnet/__init__.py imports this module before anything else
