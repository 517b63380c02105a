"""The slot clock every node reads: one integer, set only by the driver."""

from __future__ import annotations

__all__ = ["SlotClock"]


class SlotClock:
    """Current slot number; slot ``t`` covers ``[t, t+1)`` ticks of the run's quantum."""

    __slots__ = ("slot",)

    def __init__(self) -> None:
        self.slot = 0
