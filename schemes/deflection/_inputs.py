"""What a deflection node knows, and its reporter and theory read: the record the scheme's
``prepare`` returns inside :class:`~slotnet.schemes.Inputs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DeflectionInputs", "Given"]


@dataclass(frozen=True, slots=True)
class Given:
    """The ``--param`` values of ``deflection``, parsed (defaults: the declared ones).

    Example:
        >>> Given.of({"schedule": ((6.0, 1), (0.0, None))}).order
        'random'
    """

    #: Table I's time-varying offered load: ``(v, slots)`` segments, the last one's slots
    #: None (forever); None: the load is ``--offered`` or ``--lam``
    schedule: tuple[tuple[float, int | None], ...] | None = None
    #: one-pass consideration order: ``random`` (§II-A) or ``continuing-first``
    order: str = "random"

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Given:
        """The record of the scheme's parsed parameters."""
        return cls(**params)


@dataclass(frozen=True, slots=True)
class DeflectionInputs:
    """What a ``deflection`` node knows.

    Example:
        >>> DeflectionInputs("blocking", 6, "random", schedule=((0, 1.0),)).lam
        0.0
    """

    #: ``blocking`` (§II-B: offered load, no queue) or ``queue`` (§IV: input queueing)
    mode: str
    #: the cube's dimension
    d: int
    #: one-pass consideration order: ``random`` or ``continuing-first``
    order: str
    #: blocking: the offered load v from each ``(start slot, v)`` on; queue: empty
    schedule: tuple[tuple[int, float], ...] = ()
    #: queue: the Poisson arrival rate per node per slot; blocking: 0 (unused)
    lam: float = 0.0
