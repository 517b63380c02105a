"""What the two non-idling direct schemes of §4.3 share: parameters, arrival order, the node loop.

* label streams and per-port label heaps come from the kit (:class:`~slotnet.schemes.kit.StreamLabels`,
  :class:`~slotnet.schemes.kit.LabelQueues`): each port sends the waiting packet with the
  smallest key ``(label, slot of the periodic schedule)`` (§4.3.1's contention rule).
* :class:`DirectNode` — the non-idling node loop both schemes run: read copies, add own
  births, send one packet per non-empty port, report, sleep when nothing waits.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Param
from ..kit import LabelQueues, PortQueues, ServiceOrder
from ._cube_node import CubeNode
from ._inputs import BroadcastInputs

__all__ = ["DISCIPLINES", "TIES", "DirectNode", "discipline_params", "fifo_arrival_order"]

#: Queue disciplines of the direct schemes: per-port FIFO, or §4.3.1's label priority.
DISCIPLINES = ("fifo", "label")
#: FIFO tie rules for copies arriving in one slot (see :func:`arrival_order`).
TIES = ("hops", "inport")


def fifo_arrival_order(node: int, inbox: Any, ties: str) -> Any:
    """The order in which a FIFO node queues one slot's arriving copies.

    ``inport``: increasing in-port (the inbox order). ``hops``: the copy that has
    travelled more hops first — ``popcount(node ^ origin)``, its depth in a shortest-path
    tree, a local stand-in for its age — then increasing in-port. The node's own new
    packets (0 hops) are queued after both.

    Example:
        >>> fifo_arrival_order(0b111, [(0, (0b110, 1)), (1, (0b000, 2))], "hops")
        [(1, (0, 2)), (0, (6, 1))]
    """
    if ties == "inport" or len(inbox) < 2:
        return inbox
    return sorted(inbox, key=lambda e: -(node ^ e[1][0]).bit_count())


def discipline_params(default: str, discipline_help: str, ties_help: str) -> tuple[Param, Param]:
    """The ``discipline`` and ``ties`` parameters both direct schemes take."""
    return (Param("discipline", str, default, discipline_help, DISCIPLINES), Param("ties", str, "hops", ties_help, TIES))


class DirectNode(CubeNode):
    """A non-idling direct-broadcast node; subclasses say how to queue a packet.

    Every slot: each arriving copy is a first reception (a tree reaches each node once)
    and is queued by :meth:`forward` (in :func:`fifo_arrival_order`); then the node's own
    new packets, in birth order, by :meth:`originate`; then each out-port with a waiting
    packet sends one (non-idling, §4.3). A node with nothing to send sleeps until its
    next birth or the next arriving copy.
    """

    #: where the message carries its label (§4.3.1; last in both schemes' messages): the
    #: declared service order of the ``label`` discipline is smallest label first, which
    #: the kit's queue checks at every send
    LABEL_FIELD = -1

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        prm: BroadcastInputs = ctx.params
        self.by_label = prm.discipline == "label"
        self.ties = prm.ties
        #: ``queues`` is the kind the discipline uses, with a queue per port; the other kind
        #: has no ports (it is never used: a queue per port is most of a node's memory)
        self.fifo = PortQueues(() if self.by_label else ctx.ports)
        label = itemgetter(self.LABEL_FIELD)
        self.prio = LabelQueues(ctx.ports if self.by_label else (),
                                ServiceOrder(ctx, lambda m, _port: label(m)) if self.by_label else None)
        self.queues: PortQueues | LabelQueues = self.prio if self.by_label else self.fifo

    def held(self) -> int:
        return self.queues.held

    def held_packets(self) -> list[tuple[int, int]]:
        return self.queues.items()

    def forward(self, message: Any) -> None:
        """Queue an arriving copy on the ports its tree still needs here."""
        raise NotImplementedError

    def originate(self, seq: int, slot: int) -> None:
        """Queue the node's own new packet ``seq``, first sendable in ``slot``."""
        raise NotImplementedError

    async def run(self) -> None:
        ctx = self.ctx
        queues = self.queues
        received, forward, originate = self.received, self.forward, self.originate
        me = ctx.node
        ties = "inport" if self.by_label else self.ties  # label keys are total: no ties
        inbox: Any = ()
        while True:
            slot = ctx.slot
            for _, msg in fifo_arrival_order(me, inbox, ties):
                received(msg[0], msg[1])
                forward(msg)
            for seq, _tau in self.births(slot):
                originate(seq, slot)
            inbox = await self.forward_heads(queues)
