"""The non-idling indirect scheme without redundant transmissions (Stamoulis & Tsitsiklis §5.6).

§5.6 reports simulations (Figs. 15, 17-21) of a non-idling version of the §5 scheme that
"did not involve any redundant transmissions" (§5.5.1): Rule A is kept (tree ``j``
uniform per packet); Rules C-F and the detour to the root are dropped.  The packet of
origin ``y`` on tree ``j`` is broadcast along ``T^(j)`` re-rooted at ``y``: every holder
``z`` sends it once on each port of ``reoriented_ports(z, y, j, d)`` (the reversed tree
arcs up to the root, the tree arcs elsewhere; ``2^d - 1`` transmissions, one reception
per node).  Every port sends one waiting packet per slot and idles only if none waits.

Contention (the paper gives no rule; trees docstring): FIFO per port by slot of arrival
at ``z``; packets arriving in one slot are ordered by generation slot, then origin, then
tree (then the origin's sequence number).  Messages are ``(origin, seq, tree,
generation slot)``; a packet born in ``(t-1, t]`` was generated during slot ``t - 1`` and
may leave in slot ``t``.

Any scheme obeying Rule A is stable only below (35) (Proposition 7, §5.5.1): the arc
into each root from ``T_1^(j)`` carries that subtree's tree-``j`` packets on top of a
broadcast tree's traffic.
"""

from __future__ import annotations

from typing import Any

from slotnet.nodes import NodeContext

from ..kit import PortQueues
from ._cube_node import CubeNode
from ._indirect_rules import NodePlan, node_plan, path_test
from .trees import reoriented_ports

__all__ = ["IndirectNonIdlingNode", "forward_ports", "generation_order"]


def forward_ports(plan: NodePlan, z: int, origin: int, j: int, d: int) -> tuple[int, ...]:
    """``reoriented_ports(z, origin, j, d)`` for node ``z`` with ``plan = node_plan(z, d, ...)``.

    Off the root path of ``origin`` (all but ``k + 1`` nodes) the answer is ``down_ports(z, j,
    d)``, read from the plan after an O(1) path test; on it, ``reoriented_ports`` is asked.
    """
    if path_test(plan.path_key[j], origin, d):
        return reoriented_ports(z, origin, j, d)
    return plan.down[j]


def generation_order(msg: Any) -> tuple[int, int, int, int]:
    """Sort key of packets reaching a node in one slot: generation slot, origin, tree, seq."""
    return (msg[3], msg[0], msg[2], msg[1])


class IndirectNonIdlingNode(CubeNode):
    """One node of the non-idling indirect scheme (§5.6)."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.queues = PortQueues(ctx.ports)
        self.plan = node_plan(ctx.node, self.d, "D")
        self._randrange = ctx.rng.randrange

    def held(self) -> int:
        return self.queues.held

    def held_packets(self) -> list[tuple[int, int]]:
        return self.queues.items()

    async def run(self) -> None:
        ctx, d, me = self.ctx, self.d, self.ctx.node
        queues, plan = self.queues, self.plan
        randrange = self._randrange
        choose = ctx.record_choice
        inbox: Any = ()
        while True:
            slot = ctx.slot
            batch = []
            for _, msg in inbox:
                self.received(msg[0], msg[1])
                batch.append(msg)
            for seq, _tau in self.births(slot):
                j = randrange(d)
                choose("tree", j)  # Rule A: uniform over the d trees (§5.2)
                batch.append((me, seq, j, slot - 1))
            if len(batch) > 1:
                batch.sort(key=generation_order)
            for msg in batch:
                queues.add(msg, forward_ports(plan, me, msg[0], msg[2], d))
            inbox = await self.forward_heads(queues)
