"""The node runtime: the per-node Trio task, its context, its RNG stream."""

from ._context import NodeContext, Port, TracedContext, TraceTap
from ._node import Node
from ._rng import node_rng, node_seed
from ._runtime import SlotRuntime

__all__ = ["Node", "NodeContext", "Port", "SlotRuntime", "TraceTap", "TracedContext", "node_rng", "node_seed"]
