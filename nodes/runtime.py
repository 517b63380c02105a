"""What the driver needs from the node runtime (schemes never import this module)."""

from ._context import NodeContext, Recorder, TracedContext, TraceTap
from ._rng import SeedTable, node_rng, node_seed
from ._runtime import SlotRuntime

__all__ = ["NodeContext", "Recorder", "SeedTable", "SlotRuntime", "TraceTap", "TracedContext", "node_rng", "node_seed"]
