"""``bcast-simple``: the simple direct scheme of Stamoulis & Tsitsiklis §4.1.

Every node broadcasts its packets on its own completely unbalanced spanning tree
(§2.2.2) with dimensions in increasing order: a node at relative address ``rel = node ^
origin`` forwards the packet on every dimension above the highest set bit of ``rel``
(all d at the origin). Each out-port serves its queue first-in first-out and never idles
while it has work (non-idling). Arcs of dimension 1 carry 2^{d−1} trees each, so the
scheme is stable only for ρ < (2/d)(1 − 2^{−d}) (§4.1) — far below the ρ < 1 of the
balanced schemes, which the emulator shows as growing queues.

FIFO ties: copies arriving in one slot are queued in increasing in-port order, then the
node's own new packets in birth order.
"""

from __future__ import annotations

from typing import Any

from slotnet.nodes import NodeContext

from .._base import Setup
from ..kit import PortQueues
from . import theory
from ._cube_node import CubeNode
from ._inputs import delay_bound_claims, make_scheme
from .trees import unbalanced_children

__all__ = ["SCHEME", "SimpleNode"]


class SimpleNode(CubeNode):
    """One node of the simple direct scheme."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.queues = PortQueues(ctx.ports)

    def held(self) -> int:
        return self.queues.held

    def held_packets(self) -> list[tuple[int, int]]:
        return self.queues.items()

    async def run(self) -> None:
        ctx, d, me = self.ctx, self.d, self.ctx.node
        order = tuple(range(d))
        queues = self.queues
        inbox: Any = ()
        while True:
            slot = ctx.slot
            for _, msg in inbox:
                origin, seq = msg
                self.received(origin, seq)
                queues.add(msg, unbalanced_children(me ^ origin, d, order))
            for seq, _tau in self.births(slot):
                queues.add((me, seq), order)
            inbox = await self.forward_heads(queues)


def simple_theory(setup: Setup) -> dict[str, Any]:
    """§4.1 beside the run: the stability limit and Proposition 2's lower bound (:func:`.theory.simple_metrics`)."""
    return theory.simple_metrics(setup.topology.d, setup.params.rho)


SCHEME = make_scheme("bcast-simple", "simple direct broadcast on completely unbalanced trees (§4.1)", SimpleNode,
                     theory=simple_theory, claims=lambda setup, th: delay_bound_claims(th),
                     stability="stable only for ρ ≤ (2/d)(1 − 2^−d), which falls to 0 as d grows "
                               "(§4.1: the dimension-1 arc into each node carries λ2^(d−1))")
