"""Errors raised by the fabric (all derive from :class:`SlotnetError`)."""

from __future__ import annotations

__all__ = ["CapacityError", "FabricError", "FaultSpecError", "SlotnetError", "TopologyError"]


class SlotnetError(Exception):
    """Base of every error slotnet raises on purpose (bad input or a broken rule)."""


class TopologyError(SlotnetError, ValueError):
    """A topology spec or a topology query is invalid."""


class FaultSpecError(SlotnetError, ValueError):
    """A fault schedule entry is malformed or names a link/node that does not exist."""


class FabricError(SlotnetError):
    """A node used the fabric in a way the slot model forbids."""


class CapacityError(FabricError):
    """A node sent more than one unit of traffic on one port in one slot."""

    def __init__(self, node: int, port: int, slot: int, load: float) -> None:
        super().__init__(
            f"node {node} oversent port {port} in slot {slot}: {load:g} units > capacity 1"
        )
        self.node, self.port, self.slot, self.load = node, port, slot, load
