"""What the driver needs from the node runtime (schemes never import this module)."""

from ._context import NodeContext, Recorder, TracedContext, TraceTap
from ._rng import node_rng, node_seed
from ._runtime import SlotRuntime

__all__ = ["NodeContext", "Recorder", "SlotRuntime", "TraceTap", "TracedContext", "node_rng", "node_seed"]
