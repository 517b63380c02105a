"""The node base class of the five hypercube broadcast schemes."""

from __future__ import annotations

from slotnet.nodes import NodeContext

from ..kit import BroadcastNode

__all__ = ["CubeNode"]


class CubeNode(BroadcastNode):
    """A broadcast node on the d-cube: ``self.d`` is the cube's dimension (= its port count)."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.d = ctx.geometry.d
