"""Finding schemes: every package under ``slotnet.schemes`` and the ``slotnet.schemes`` entry points.

A scheme package exposes ``SCHEMES`` (a tuple of :class:`Scheme`) and optionally
``EXPERIMENTS`` (``slotnet repro`` reproductions). Packages inside this distribution are
discovered by walking ``slotnet.schemes``; another distribution publishes its package in
the entry-point group ``slotnet.schemes`` (``name = "package.module"``). Nothing is
imported until a scheme is first looked up, so ``import slotnet`` stays light.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, MutableMapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from slotnet.errors import SchemeError

from ._base import Experiment, Scheme

__all__ = ["EXPERIMENTS", "FAILED", "SCHEMES", "get_experiment", "get_scheme", "register"]

#: Packages of ``slotnet.schemes`` that hold shared code, not schemes.
_NOT_SCHEMES = frozenset({"kit"})

#: Scheme packages that failed to import: package -> "ExceptionType: message". A broken
#: package never hides the others; lookups that fail name it (and ``slotnet schemes``).
FAILED: dict[str, str] = {}


class _Registry(MutableMapping[str, Any]):
    """A name -> record mapping filled on first use (tests may add and remove entries)."""

    def __init__(self, attribute: str, key: str) -> None:
        self._attribute, self._key = attribute, key
        self._items: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._items is None:
            items: dict[str, Any] = {}
            for module in _scheme_modules():
                for record in getattr(module, self._attribute, ()):
                    name = getattr(record, self._key)
                    if name in items:
                        raise SchemeError(f"{self._key} {name!r} is declared twice (second time in {module.__name__})")
                    items[name] = record
            self._items = items
        return self._items

    def __getitem__(self, name: str) -> Any:
        return self._load()[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self._load()[name] = value

    def __delitem__(self, name: str) -> None:
        del self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


def _scheme_modules() -> Iterator[ModuleType]:
    from slotnet import schemes

    for info in sorted(pkgutil.iter_modules(schemes.__path__), key=lambda i: i.name):
        if info.ispkg and not info.name.startswith("_") and info.name not in _NOT_SCHEMES:
            try:
                module = importlib.import_module(f"slotnet.schemes.{info.name}")
            except Exception as exc:
                FAILED[f"slotnet.schemes.{info.name}"] = f"{type(exc).__name__}: {exc}"
                continue
            if hasattr(module, "SCHEMES"):
                yield module
    for ep in sorted(entry_points(group="slotnet.schemes"), key=lambda e: e.name):
        if ep.value.startswith("slotnet.schemes."):
            continue  # found above
        try:
            loaded = ep.load()
        except Exception as exc:  # a broken plugin is named, not a traceback
            FAILED[ep.value] = f"{type(exc).__name__}: {exc}"
            continue
        if isinstance(loaded, ModuleType):
            yield loaded
        else:
            yield _Holder(loaded)


class _Holder(ModuleType):
    """An entry point that names a SCHEMES tuple rather than a module."""

    def __init__(self, schemes: Any) -> None:
        super().__init__("entry-point")
        self.SCHEMES = tuple(schemes)


#: Every scheme by name.
SCHEMES: MutableMapping[str, Scheme] = _Registry("SCHEMES", "name")
#: Every ``slotnet repro`` reproduction by paper name.
EXPERIMENTS: MutableMapping[str, Experiment] = _Registry("EXPERIMENTS", "paper")


def register(scheme: Scheme, *, replace: bool = False) -> Scheme:
    """Make ``scheme`` known for this process (for schemes built at run time).

    Args:
        scheme: the scheme record; its ``name`` is what ``RunSpec`` and the CLI take.
        replace: replace a scheme of the same name, built-in or registered before.

    Raises:
        SchemeError: ``scheme`` is no :class:`Scheme`, or its name is taken and ``replace`` is false.
    """
    if not isinstance(scheme, Scheme):
        raise SchemeError(f"register() takes a Scheme record, got {type(scheme).__name__} {scheme!r:.60}")
    taken = SCHEMES.get(scheme.name)
    if taken is not None and taken is not scheme and not replace:
        where = f"from {taken.source}" if getattr(taken, "source", None) else "already"
        raise SchemeError(f"scheme name {scheme.name!r} is taken ({where}); choose another name, "
                          "or pass replace=True to replace it")
    SCHEMES[scheme.name] = scheme
    return scheme


def get_scheme(name: str) -> Scheme:
    """Look a scheme up by name.

    Raises:
        SchemeError: naming the unknown scheme and listing the known ones.
    """
    try:
        return SCHEMES[name]
    except KeyError:
        broken = "".join(f"; {pkg} failed to load ({why})" for pkg, why in sorted(FAILED.items()))
        raise SchemeError(f"unknown scheme {name!r} (known: {', '.join(sorted(SCHEMES))}){broken}") from None


def get_experiment(paper: str) -> Experiment:
    """Look a reproduction up by paper name.

    Raises:
        SchemeError: naming the unknown paper and listing the known ones.
    """
    try:
        return EXPERIMENTS[paper]
    except KeyError:
        raise SchemeError(f"unknown paper {paper!r} (known: {', '.join(sorted(EXPERIMENTS))})") from None
