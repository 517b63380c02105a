"""The slot clock every node reads: one integer, advanced only by the driver."""

from __future__ import annotations

__all__ = ["SlotClock"]


class SlotClock:
    """Current slot number; slot ``t`` covers ``[t, t+1)``."""

    __slots__ = ("slot",)

    def __init__(self) -> None:
        self.slot = 0

    def advance(self) -> int:
        """Move to the next slot and return it."""
        self.slot += 1
        return self.slot
