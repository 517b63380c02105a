"""Completion predicates of one-shot tasks (``Scheme.done``)."""

from __future__ import annotations

from typing import Any

__all__ = ["parked_when_done"]


def parked_when_done(reporter: Any) -> bool:
    """``Scheme.done`` of a rule whose nodes park idle (``await ctx.idle()``) once their part
    is done instead of returning: a run that goes quiet is complete. The scheme's reporter
    must then judge that the work was done (every packet delivered, every result right):
    quiet is not the same as done, and this predicate leaves that judgement to its invariants.
    """
    return True
