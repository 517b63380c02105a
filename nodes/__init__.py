"""The node runtime, scheme side: the node base class, its context, the geometry it may read.

The driver-facing pieces (the slot barrier, traced contexts, RNG streams) are in
:mod:`slotnet.nodes.runtime`.
"""

from ._context import Inbox, NodeContext, Outlet
from ._geometry import Geometry, Port
from ._node import Node
from ._rng import NodeStream

__all__ = ["Geometry", "Inbox", "Node", "NodeContext", "NodeStream", "Outlet", "Port"]
