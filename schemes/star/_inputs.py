"""What a priority STAR node knows, and its reporter and theory read: the record
:func:`~.scheme.prepare` returns inside :class:`~slotnet.schemes.Inputs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Given", "StarInputs"]


@dataclass(frozen=True, slots=True)
class Given:
    """The ``--param`` values of ``star``, parsed (defaults: the declared ones).

    Example:
        >>> Given.of({"ending": 1}).ending, Given().discipline
        (1, 'priority')
    """

    #: ``priority`` (§3.2) or ``fcfs``
    discipline: str = "priority"
    #: 0: the ending dimension drawn with x of eq. (2)/(4); 1..d: always that dimension
    ending: int = 0
    #: priority classes: 2 or 3 (end of §4)
    classes: int = 2
    #: unicast birth rate per node and slot (§4)
    lam_unicast: float = 0.0
    #: unicast hops per ring in eq. (4) and ρ: ``exact`` or ``paper``
    hops: str = "exact"

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Given:
        """The record of the scheme's parsed parameters."""
        return cls(**params)


@dataclass(frozen=True, slots=True)
class StarInputs:
    """What a ``star`` node knows: the rates, the ending-dimension probabilities and the queues."""

    #: broadcast birth rate λ_B per node and slot, and the throughput factor ρ it makes
    lam: float
    rho: float
    #: unicast birth rate λ_R per node and slot
    lam_unicast: float
    #: x_l: the probability that a broadcast ends in dimension l (eq. (2)/(4), or one-hot)
    x: list[float]
    #: 0 (balanced) or the fixed ending dimension 1..d
    ending: int
    discipline: str
    #: the classes asked for, and those the queues hold (1 under fcfs)
    classes: int
    n_classes: int
    hops: str
