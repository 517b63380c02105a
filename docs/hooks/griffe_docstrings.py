"""A griffe extension for the API reference: slotnet's docstrings as mkdocstrings reads them.

slotnet's docstrings are Google style with a few reStructuredText habits. Before they
are parsed this extension

* reads an ``Example:`` heading as ``Examples:`` (doctests then render as code), and
* turns Sphinx roles (``:class:`~slotnet.fabric.FaultSchedule```, ``:func:`run```) into
  code spans (``FaultSchedule``, ``run``).

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


class SlotnetDocstrings(griffe.Extension):
    """Rewrite every docstring of the loaded objects (see the module's docstring)."""

    def on_instance(self, *, obj: griffe.Object, **_: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
