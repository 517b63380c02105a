"""Help text for people: reST markup stripped, prose wrapped, listings aligned, examples laid out.

Each command's ``--help`` is written in :mod:`._parser`; text that comes from elsewhere
(scheme and paper descriptions) passes through :func:`plain` first.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

__all__ = ["HELP_WIDTH", "description", "examples", "listing", "para", "plain"]


#: Width the descriptions and epilogs are wrapped to (they are printed as written).
HELP_WIDTH = 79

_ROLE = re.compile(r":[\w.-]+:`(~?)([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")


def plain(text: str) -> str:
    """``text`` without reST markup, for the terminal: ``x`` and :role:`x` become x (:role:`~a.b` b)."""
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    return _LITERAL.sub(r"\1", text)


def para(text: str, indent: str = "") -> str:
    """One paragraph of plain prose, wrapped to the help width."""
    return textwrap.fill(" ".join(plain(text).split()), HELP_WIDTH, initial_indent=indent, subsequent_indent=indent,
                        break_on_hyphens=False, break_long_words=False)


def listing(title: str, items: Sequence[tuple[str, str]]) -> str:
    """``title:`` then each (name, meaning) on its own line, the meanings aligned."""
    width = max(len(name) for name, _ in items) + 2
    lines = [f"{title}:"]
    for name, text in items:
        body = textwrap.wrap(" ".join(plain(text).split()), HELP_WIDTH - 2 - width, break_on_hyphens=False,
                            break_long_words=False) or [""]
        lines.append(f"  {name.ljust(width)}{body[0]}")
        lines += [" " * (2 + width) + line for line in body[1:]]
    return "\n".join(lines)


def examples(*items: tuple[str, str]) -> str:
    """An epilog: each example command under a comment saying what it does."""
    lines = ["examples:"]
    for what, command in items:
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


def description(*parts: str) -> str:
    """Paragraphs of prose (wrapped here) and pre-formatted blocks (a listing: kept as they are)."""
    return "\n\n".join(p if "\n" in p else para(p) for p in parts)
