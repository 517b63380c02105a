"""A griffe extension for the API reference: slotnet's docstrings as mkdocstrings reads them.

slotnet's docstrings are Google style with a few reStructuredText habits. Before they
are parsed this extension

* reads an ``Example:`` heading as ``Examples:`` (doctests then render as code), and
* turns Sphinx roles (``:class:`~slotnet.fabric.FaultSchedule```, ``:func:`run```) into
  code spans (``FaultSchedule``, ``run``).

It also shows a ``RunSpec`` field that takes more than it keeps (``_Taken[In, Kept] =
_Taken(default, convert)``, ``orchestrator/engine/_spec.py``) as ``In = default``: what
the class's signature takes, not the descriptor that converts it.

It changes nothing in the sources: mkdocs.yml loads it (``extensions:``) for the docs build.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.M)
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    target = match.group(2)
    if match.group(1):
        target = target.rsplit(".", 1)[-1]
    return f"``{target}``"


def rewrite(text: str) -> str:
    """The docstring ``text`` with ``Example:`` headings and Sphinx roles rewritten."""
    return _ROLE.sub(_role, _EXAMPLE.sub(r"\1Examples:", text))


def _taken(attr: griffe.Attribute) -> None:
    """Show a ``_Taken`` field by the type and default its class's ``__init__`` takes."""
    value, annotation = attr.value, attr.annotation
    if not (isinstance(value, griffe.ExprCall) and str(value.function) == "_Taken"):
        return
    attr.value = value.arguments[0]
    if isinstance(annotation, griffe.ExprSubscript) and isinstance(annotation.slice, griffe.ExprTuple):
        attr.annotation = annotation.slice.elements[0]


class SlotnetDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded objects (see the module's docstring)."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **_: Any) -> None:
        _taken(attr)

    def on_instance(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
