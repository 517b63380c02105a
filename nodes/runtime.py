"""What the driver needs from the node runtime (schemes never import this module)."""

from ._context import NodeContext, Recorder, TracedContext, TraceTap
from ._rng import DEFAULT_RNG, RNG_KINDS, PhiloxStreams, SeedTable, node_rng, node_seed, run_streams
from ._runtime import SlotRuntime

__all__ = ["DEFAULT_RNG", "RNG_KINDS", "NodeContext", "PhiloxStreams", "Recorder", "SeedTable", "SlotRuntime", "TraceTap", "TracedContext",
           "node_rng", "node_seed", "run_streams"]
