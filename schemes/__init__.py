"""Schemes: one package per scheme, each its node rule beside the paper's analysis.

The registry maps ``slotnet run SCHEME`` names to :class:`Scheme` records.
"""

from __future__ import annotations

from ._base import Param, Reporter, Scheme, SchemeError, Setup
from .broadcast import SCHEMES as _BROADCAST
from .deflection import SCHEME as _DEFLECTION

__all__ = ["SCHEMES", "Param", "Reporter", "Scheme", "SchemeError", "Setup", "get_scheme"]

SCHEMES: dict[str, Scheme] = {s.name: s for s in (_DEFLECTION, *_BROADCAST)}


def get_scheme(name: str) -> Scheme:
    """Look a scheme up by name.

    Raises:
        SchemeError: naming the unknown scheme and listing the known ones.
    """
    try:
        return SCHEMES[name]
    except KeyError:
        raise SchemeError(f"unknown scheme {name!r} (known: {', '.join(sorted(SCHEMES))})") from None
