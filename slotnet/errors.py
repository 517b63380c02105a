"""The one error hierarchy of slotnet, importable by every layer.

Every error slotnet raises on purpose derives from :class:`SlotnetError`. Errors that
mean "bad input" also derive from :class:`ValueError`; the CLI maps those to exit
status 2 and the rest (a scheme breaking the slot model, a node failing) to 1.

This module imports nothing from slotnet, so the fabric, the node runtime, the schemes
and the orchestrator can all raise and catch the same classes.
"""

from __future__ import annotations

__all__ = [
    "CapacityError",
    "FabricError",
    "FaultSpecError",
    "NodeFailure",
    "SchemeError",
    "SlotnetError",
    "SpecError",
    "Stopped",
    "TopologyError",
]


class SlotnetError(Exception):
    """Base of every error slotnet raises on purpose (bad input or a broken rule)."""


class TopologyError(SlotnetError, ValueError):
    """A topology spec or a topology query is invalid."""


class FaultSpecError(SlotnetError, ValueError):
    """A fault schedule entry is malformed or names a link/node that does not exist."""


class SpecError(SlotnetError, ValueError):
    """A run spec is invalid; the message names the field and the value."""


class SchemeError(SlotnetError, ValueError):
    """A scheme parameter or load is invalid for this scheme and topology."""


class FabricError(SlotnetError):
    """A node used the fabric in a way the slot model forbids (or a frame failed to decode)."""


class CapacityError(FabricError):
    """A node sent more than its link can carry in one slot."""

    def __init__(self, node: int, port: int, slot: int, load: float) -> None:
        super().__init__(f"node {node} oversent port {port} in slot {slot}: {load:g} units > capacity 1")
        self.node, self.port, self.slot, self.load = node, port, slot, load


class NodeFailure(SlotnetError):
    """A node's rule raised (in its constructor or its run); names the node and the slot."""

    def __init__(self, node: int, slot: int, exc: BaseException) -> None:
        super().__init__(f"node {node} failed in slot {slot}: {type(exc).__name__}: {exc}")
        self.node, self.slot = node, slot


class Stopped(SlotnetError):
    """A run was stopped from outside by a signal (SIGTERM) after stopping what it started."""

    def __init__(self, signum: int, what: str) -> None:
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}: {what}")
        self.signum = signum
