"""Poisson births in continuous time (the broadcast and routing papers' traffic model).

Each node generates packets by a Poisson process of rate λ (independent of other nodes),
drawn from its own stream. A packet born at time τ ∈ (t−1, t] — during slot t−1 — can
first be transmitted in slot t (arrivals occur before the end of a slot; Stamoulis &
Tsitsiklis §2.1.1(b)). A lone packet on a d-cube therefore needs d + 1/2 slots on
average to reach every node (the synchronisation term ½ of §2.1.2).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slotnet.nodes import NodeStream

__all__ = ["BirthProcess", "available_slot"]


def available_slot(tau: float) -> int:
    """The first slot in which a packet born at time ``tau`` may be sent: ceil(tau)."""
    return math.ceil(tau)


class BirthProcess:
    """One node's Poisson birth times, drawn from its own stream.

    It also counts, as births are taken, how many fell in each slot ``(s-1, s]`` -- the
    Poisson(λ) count of births per slot that the schemes declare (``Scheme.choices``,
    :meth:`counts`, handed to the observer at the end by the node). Counting draws nothing.
    """

    __slots__ = ("_rate", "_rand", "next_birth", "hist", "_from", "_cur", "_n")

    def __init__(self, rng: NodeStream, lam: float, start: float = 0.0) -> None:
        self._rate = lam
        self._rand = rng.random
        self.next_birth = math.inf
        if lam > 0.0:
            self.next_birth = start + self._gap()
        #: births in a slot -> the slots counted so far that held that many: every slot from
        #: ``_from`` (the first whole slot after ``start``) to before ``_cur``, the slot of the
        #: last birth taken (``_n`` births so far; ``_cur`` -1: none taken yet)
        self.hist: dict[int, int] = {}
        self._from = math.floor(start) + 1 + (start != math.floor(start))
        self._cur = -1
        self._n = 0

    def _gap(self) -> float:
        return -math.log(1.0 - self._rand()) / self._rate

    def take_until(self, slot: float) -> list[float]:
        """Birth times in ``(slot-1, slot]`` not yet taken (all births up to ``slot``)."""
        out = []
        while self.next_birth <= slot:
            tau = self.next_birth
            out.append(tau)
            s = math.ceil(tau)
            if s == self._cur:
                self._n += 1
            else:
                self._count_to(s)
            self.next_birth += self._gap()
        return out

    def _count_to(self, s: int) -> None:
        """A first birth in slot ``s``: the slots before it are complete."""
        hist = self.hist
        if self._cur >= 0:
            hist[self._n] = hist.get(self._n, 0) + 1
            zeros = s - self._cur - 1
        else:
            zeros = s - self._from
        if zeros > 0:
            hist[0] = hist.get(0, 0) + zeros
        self._cur, self._n = s, 1

    def counts(self, last: int) -> dict[int, int]:
        """Births in a slot -> how many of the slots from the first whole one to ``last`` held
        that many: every slot whose births are all drawn (none past the next birth's)."""
        if self._rate <= 0.0:
            return {}
        hist = dict(self.hist)
        nxt = math.ceil(self.next_birth)  # the slot of the next birth: its count is not drawn yet
        end = min(last, nxt - 1)
        if self._cur >= 0:
            if self._cur > end:  # the last birth's slot is past last, or not complete
                return {k: n for k, n in hist.items() if n}
            hist[self._n] = hist.get(self._n, 0) + 1
            zeros = end - self._cur
        else:
            zeros = end + 1 - self._from
        if zeros > 0:
            hist[0] = hist.get(0, 0) + zeros
        return {k: n for k, n in hist.items() if n}

    def wake_slot(self) -> int | None:
        """The slot at which the next birth becomes sendable (None: never)."""
        return None if self.next_birth == math.inf else available_slot(self.next_birth)
