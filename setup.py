"""Package discovery for the design card's layout (see pyproject.toml), and the compiled
hot path.

The top-level folders are installed under one namespace (``fabric/`` as
``slotnet.fabric``, ...); every sub-package below them is found here, so a new scheme
package needs no edit to any list.

The modules named in ``slotnet/_build.py`` (``COMPILED_MODULES``) are also compiled by Cython from
their unchanged ``.py`` source, with the C types of a ``.pxd`` beside it where there is one
(see ``slotnet/_build.py``). Compilation is optional: where
Cython or a C compiler is missing, or ``SLOTNET_PURE_PYTHON=1`` is set at install time,
slotnet installs as pure Python and gives the same results, only more slowly.
"""

import ast
import os
import shutil

from setuptools import Extension, find_packages, setup

#: parallel jobs for translating (Cython) and compiling (the C compiler) the hot path
_JOBS = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))

ROOTS = ("fabric", "nodes", "schemes", "orchestrator")

packages = ["slotnet"] + [f"slotnet.{root}" for root in ROOTS]
packages += [f"slotnet.{root}.{sub}" for root in ROOTS for sub in find_packages(root)]


def _compiled_sources() -> list[tuple[str, str]]:
    """(module, source path) of slotnet/_build.py's COMPILED_MODULES, read without importing slotnet."""
    with open(os.path.join("slotnet", "_build.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = next(ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPILED_MODULES" for t in node.targets))
    return [(name, name.removeprefix("slotnet.").replace(".", "/") + ".py") for name in names]


def _declarations(sources: list[tuple[str, str]]) -> str:
    """A folder holding each compiled module's ``.pxd`` (C types, beside its ``.py``) at the
    path of the module's installed name, where Cython looks for it: the installed name
    (``slotnet/fabric/...``) is not the source tree's (``fabric/...``)."""
    folder = os.path.join("build", "cython", "declarations")
    for name, path in sources:
        pxd = path[:-3] + ".pxd"
        target = os.path.join(folder, *name.split(".")) + ".pxd"
        if os.path.isfile(pxd):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(pxd, target)
        elif os.path.isfile(target):
            os.remove(target)
    return folder


def _extensions() -> list[Extension]:
    if os.environ.get("SLOTNET_PURE_PYTHON") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:  # building without the declared build requirements (e.g. --no-build-isolation)
        return []
    sources = _compiled_sources()
    # -g0: no debug line tables (a tenth of the install's compile time; the code is the same)
    modules = [Extension(name, [path], optional=True, extra_compile_args=["-g0"]) for name, path in sources]
    # annotation_typing off: annotations stay hints, never C types, so the compiled code
    # keeps Python's semantics (arbitrary-precision ints, duck typing) exactly; C types
    # come only from a module's .pxd, for values whose bounds it states.
    return cythonize(modules, build_dir="build/cython", quiet=True, include_path=[_declarations(sources)],
                     nthreads=_JOBS,
                     compiler_directives={"language_level": 3, "annotation_typing": False})


# Translate and compile the modules on every core: the install is most of the README's
# first command (about 45 s on one core of the 2-core reference machine).
setup(packages=packages, ext_modules=_extensions(), options={"build_ext": {"parallel": _JOBS}})
