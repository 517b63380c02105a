"""Poisson births in continuous time (the broadcast and routing papers' traffic model).

Each node generates packets by a Poisson process of rate λ (independent of other nodes),
drawn from its own stream. A packet born at time τ ∈ (t−1, t] — during slot t−1 — can
first be transmitted in slot t (arrivals occur before the end of a slot; Stamoulis &
Tsitsiklis §2.1.1(b)). A lone packet on a d-cube therefore needs d + 1/2 slots on
average to reach every node (the synchronisation term ½ of §2.1.2).
"""

from __future__ import annotations

import math
import random

__all__ = ["BirthProcess", "available_slot"]


def available_slot(tau: float) -> int:
    """The first slot in which a packet born at time ``tau`` may be sent: ceil(tau)."""
    return math.ceil(tau)


class BirthProcess:
    """One node's Poisson birth times, drawn from its own stream."""

    __slots__ = ("_rate", "_rand", "next_birth")

    def __init__(self, rng: random.Random, lam: float, start: float = 0.0) -> None:
        self._rate = lam
        self._rand = rng.random
        self.next_birth = math.inf
        if lam > 0.0:
            self.next_birth = start + self._gap()

    def _gap(self) -> float:
        return -math.log(1.0 - self._rand()) / self._rate

    def take_until(self, slot: float) -> list[float]:
        """Birth times in ``(slot-1, slot]`` not yet taken (all births up to ``slot``)."""
        out = []
        while self.next_birth <= slot:
            out.append(self.next_birth)
            self.next_birth += self._gap()
        return out

    def wake_slot(self) -> int | None:
        """The slot at which the next birth becomes sendable (None: never)."""
        return None if self.next_birth == math.inf else available_slot(self.next_birth)
