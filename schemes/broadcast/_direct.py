"""What the two non-idling direct schemes of §4.3 share: label streams and per-port heaps.

* :class:`StreamLabels` — the origin's label recursion of §4.3.1 (``l_1 = ⌈τ_1/P⌉ + 1``,
  ``l_{n+1} = max{l_n + 1, ⌈τ_{n+1}/P⌉ + 1}``, via :func:`trees.first_label` /
  :func:`trees.next_label`), one stream per origin (§4.3.1) or per (origin, tree) (§4.3.2).
* :class:`LabelQueues` — per-port priority queues with the same interface as
  :class:`._common.PortQueues`: each port sends the waiting packet with the smallest key
  ``(label, slot of the periodic schedule)`` (§4.3.1's contention rule).
* :class:`DirectNode` — the non-idling node loop both schemes run: read copies, add own
  births, send one packet per non-empty port, report, sleep when nothing waits.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from ._common import BroadcastNode, PortQueues
from .trees import first_label, next_label

__all__ = ["DISCIPLINES", "TIES", "DirectNode", "LabelQueues", "StreamLabels", "arrival_order"]

#: Queue disciplines of the direct schemes: per-port FIFO, or §4.3.1's label priority.
DISCIPLINES = ("fifo", "label")
#: FIFO tie rules for copies arriving in one slot (see :func:`arrival_order`).
TIES = ("hops", "inport")


def arrival_order(node: int, inbox: Any, ties: str) -> Any:
    """The order in which a FIFO node queues one slot's arriving copies.

    ``inport``: increasing in-port (the inbox order). ``hops``: the copy that has
    travelled more hops first — ``popcount(node ^ origin)``, its depth in a shortest-path
    tree, a local stand-in for its age — then increasing in-port. The node's own new
    packets (0 hops) are queued after both.

    Example:
        >>> arrival_order(0b111, [(0, (0b110, 1)), (1, (0b000, 2))], "hops")
        [(1, (0, 2)), (0, (6, 1))]
    """
    if ties == "inport" or len(inbox) < 2:
        return inbox
    return sorted(inbox, key=lambda e: -(node ^ e[1][0]).bit_count())


class StreamLabels:
    """The labels an origin stamps on its packets, one recursion per stream (§4.3.1).

    Example:
        >>> s = StreamLabels(1, period=3)
        >>> [s.next(0, t) for t in (1, 1, 1, 9)]
        [2, 3, 4, 5]
    """

    __slots__ = ("_last", "period")

    def __init__(self, streams: int, period: int) -> None:
        if streams < 1 or period < 1:
            raise ValueError(f"need streams >= 1 and period >= 1, got {streams}, {period}")
        self.period = period
        self._last: list[int | None] = [None] * streams

    def next(self, stream: int, tau: int) -> int:
        """Label of the stream's next packet, first sendable in slot ``tau``.

        ``tau`` is the paper's τ: a packet generated during slot ``t`` has ``τ = t + 1``,
        the slot from which it may be sent (see :func:`trees.first_label`).
        """
        last = self._last[stream]
        label = first_label(tau, self.period) if last is None else next_label(last, tau, self.period)
        self._last[stream] = label
        return label


class LabelQueues:
    """Per-port heaps of packets ordered by ``(label, slot_in_period)`` (§4.3.1).

    A packet record is ``[message, ports_left]`` as in :class:`._common.PortQueues`; the
    node's Q counts records with ``ports_left > 0``. Keys of distinct packets wanting one
    port are distinct (``trees.dtree_priority`` / ``trees.balanced_priority``); an insertion
    counter still closes the order so that it never falls back on comparing messages.
    """

    __slots__ = ("_count", "held", "queues")

    def __init__(self, d: int) -> None:
        self.queues: list[list[tuple[int, int, int, list[Any]]]] = [[] for _ in range(d)]
        self.held = 0
        self._count = 0

    def add(self, message: Any, label: int, plan: Iterable[tuple[int, int]]) -> None:
        """Queue ``message`` of ``label`` on each ``(port, slot_in_period)`` of ``plan``."""
        rec = [message, 0]
        queues = self.queues
        for port, slot in plan:
            self._count += 1
            heapq.heappush(queues[port], (label, slot, self._count, rec))
            rec[1] += 1
        if rec[1]:
            self.held += 1

    def pop(self, port: int) -> Any:
        """The waiting packet of smallest key on ``port`` (its record is released when done)."""
        rec = heapq.heappop(self.queues[port])[3]
        rec[1] -= 1
        if rec[1] == 0:
            self.held -= 1
        return rec[0]

    def items(self) -> set[tuple[int, int]]:
        """(origin, seq) of every packet still to forward."""
        return {(e[3][0][0], e[3][0][1]) for q in self.queues for e in q}


class DirectNode(BroadcastNode):
    """A non-idling direct-broadcast node; subclasses say how to queue a packet.

    Every slot: each arriving copy is a first reception (a tree reaches each node once)
    and is queued by :meth:`forward` (in :func:`arrival_order`); then the node's own
    new packets, in birth order, by :meth:`originate`; then each out-port with a waiting
    packet sends one (non-idling, §4.3). A node with nothing to send sleeps until its
    next birth or the next arriving copy.
    """

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        discipline = ctx.params.get("discipline", "fifo")
        if discipline not in DISCIPLINES:
            raise ValueError(f"discipline must be one of {', '.join(DISCIPLINES)}, got {discipline!r}")
        for k, port in enumerate(ctx.ports):
            if port.index != k or port.dim != k:
                raise ValueError(f"node {ctx.node}: port {k} is not dimension {k} (hypercube expected)")
        self.by_label = discipline == "label"
        self.ties = ctx.params.get("ties", "hops")
        if self.ties not in TIES:
            raise ValueError(f"ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        #: both kinds exist (they are tiny); ``queues`` is the one the discipline uses
        self.fifo = PortQueues(self.d)
        self.prio = LabelQueues(self.d)
        self.queues: PortQueues | LabelQueues = self.prio if self.by_label else self.fifo

    def held(self) -> int:
        return self.queues.held

    def held_packets(self) -> set[tuple[int, int]]:
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
            for _, msg in arrival_order(me, inbox, ties):
                received(msg[0], msg[1])
                forward(msg)
            for seq, _tau in self.births(slot):
                originate(seq, slot)
            inbox = await self.forward_heads(queues)
