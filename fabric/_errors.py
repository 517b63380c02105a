"""Errors the fabric raises: the shared hierarchy of :mod:`slotnet.errors`."""

from __future__ import annotations

from slotnet.errors import CapacityError, FabricError, FaultSpecError, SlotnetError, TopologyError

__all__ = ["CapacityError", "FabricError", "FaultSpecError", "SlotnetError", "TopologyError"]
