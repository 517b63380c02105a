"""The priority STAR node (Yeh, Varvarigos & Eshoul §3.1, §3.2, §4) as a local rule.

Every node of a torus (or hypercube) runs the same loop once per slot it is awake:

1. **Arriving copies** (the inbox, in-port order, then re-ordered so that copies that
   have travelled more hops come first -- a local stand-in for "older first"; the paper
   does not say how one slot's arrivals are ordered). A broadcast copy is a first
   reception (STAR reaches every node exactly once, §3.1) and is queued on the
   transmissions :func:`._rule.star_forward` gives from the node's own coordinates and
   the header; a unicast addressed here is delivered, any other unicast queued on its
   next hop (:func:`._rule.unicast_next_hop`).
2. **Births**: broadcasts at rate ``lam`` (the kit's Poisson :class:`BirthProcess`, via
   :class:`~slotnet.schemes.kit.BroadcastNode`), each drawing its ending dimension ``l``
   with probability ``x_l`` (eq. (2)/(4), fixed by ``prepare``) and its split mask
   (even rings: the longer side at random); unicasts at rate ``lam_unicast`` to a
   uniform other node, drawing their tie mask. A packet born in ``(t-1, t]`` is queued in
   slot ``t``, after that slot's arriving copies.
3. **Service**: non-idling and all-port (§3.1): every out-port with a queued packet sends
   one, the oldest of its highest-priority non-empty class (:class:`ClassQueues`,
   §3.2; one class under ``discipline=fcfs``). The classes are also declared
   (:meth:`StarNode.priority_class`) and every send is checked against the heads of the
   classes left on the port (the kit's ``service_order``); within a class (the one class
   of ``fcfs``) the queue is first come, first served by queueing slot, checked at every
   send too (:class:`~slotnet.schemes.kit.FifoOrder`, also ``service_order``).

Headers (msgpack tuples of small ints): broadcast ``(source, seq, ending, split)`` with
``source >= 0``; unicast ``(-(source + 1), seq, dest, tie, birth, hops)`` -- the
negative first field tells the two apart and keeps unicast identities clear of the
broadcast observer's ``(origin, seq)`` keys; ``hops`` counts the links crossed so far.
``seq`` only names a packet for the observer (a restarted node numbers both kinds after
its earlier incarnations', :func:`~slotnet.schemes.kit.first_seq`), and the unicast's
``birth`` and ``hops`` are read by the observer at delivery (delay, path length) and by
the arrival order; none of them steers a packet.

Observer events: the kit's ``step`` (births, first receptions, Q), unicast ``born`` and
``delivered`` (the kit's unicast reporter's events; ``delivered`` names the packet, its
source and destination, so that the observer checks where and how far it went), and ``links``: cumulative counters
``(sent per port..., wait sum per traffic type..., transmissions per traffic type...)``
recorded in every slot the node transmits (waits are ``send slot - queueing slot``:
service slot excluded, the W of §3.2); and the kit's ``residence`` ledger of the same
queueing slots (a packet resides from its queueing slot to the slot its last copy is
sent), which the observer's ``littles_law`` holds against Q.
"""

from __future__ import annotations

from typing import Any

from slotnet.nodes import Inbox, NodeContext

from ..kit import BirthProcess, BroadcastNode, ClassQueues, FifoOrder, ServiceOrder, first_seq
from ._inputs import StarInputs
from ._plans import TYPE_BCAST_ENDING, TYPE_BCAST_OTHER, TYPE_UNICAST, PlanBook, plan_book
from ._rule import pick_ending, pick_split, pick_tie, tied_dims

__all__ = ["LINK_FIELDS", "StarNode", "TimedClassQueues", "port_table"]

#: Values of the ``links`` event (one tuple, cumulative since the node started).
LINK_FIELDS = ("counters",)

_COORDS: dict[str, tuple[tuple[int, ...], ...]] = {}


def _coords_table(ctx: NodeContext) -> tuple[tuple[int, ...], ...]:
    """Coordinates of every node (``ctx.geometry.coords``), computed once per shape."""
    geo = ctx.geometry
    table = _COORDS.get(geo.spec)
    if table is None:
        table = _COORDS[geo.spec] = tuple(tuple(geo.coords(v)) for v in range(geo.n_nodes))
    return table


def port_table(ctx: NodeContext) -> tuple[tuple[int, int], ...]:
    """For each dimension, the out-ports of direction +1 and -1 (a hypercube: its one port twice)."""
    out = []
    for k in range(ctx.geometry.d):
        if ctx.geometry.kind == "hypercube":
            p = ctx.port(k, 0)
            plus, minus = p, p
        else:
            plus, minus = ctx.port(k, 1), ctx.port(k, -1)
        if plus is None or minus is None:
            raise ValueError(f"node {ctx.node} has no port along dimension {k}: STAR needs a torus")
        out.append((plus, minus))
    return tuple(out)


class TimedClassQueues(ClassQueues):
    """The kit's priority classes, each record also holding the slot it was queued in."""

    __slots__ = ("fifo",)

    def __init__(self, ports: Any, classes: int, order: ServiceOrder | None, fifo: FifoOrder | None = None) -> None:
        super().__init__(ports, classes, order)
        #: "the oldest of its highest-priority non-empty class": each class is FIFO (by queueing slot)
        self.fifo = fifo

    def add_at(self, message: Any, plan: Any, slot: int) -> None:
        """Queue ``message`` on each ``(port, class)`` of ``plan`` in ``slot``."""
        rec = [message, 0, slot]
        queues, waiting = self.queues, self.waiting
        for p, c in plan:
            queues[p][c].append(rec)
            waiting[p] += 1
        rec[1] = len(plan)
        if plan:
            self._entered(rec)

    def send_heads(self, send: Any, slot: int, port_dim: list[int], counters: list[int]) -> None:
        """Send the head packet of every busy port; count sends and waits in ``counters``.

        ``counters``: sent per port (``len(port_dim)`` entries), then the wait sums and the
        transmission counts of the traffic types broadcast-off-ending, unicast,
        broadcast-on-ending (:mod:`._plans`). A unicast header starts with a negative
        number; a broadcast header holds its ending dimension in field 2.
        """
        queues, waiting = self.queues, self.waiting
        w0 = len(port_dim)
        c0 = w0 + 3
        for port in self.ports:
            if not waiting[port]:
                continue
            for q in queues[port]:
                if q:
                    break
            rec = q.pop(0)
            if q and q[0][2] < rec[2] and self.fifo is not None:  # FIFO within the class, by queueing slot
                self.fifo.served(port, rec[0], rec[2], q[0][0], q[0][2])
            waiting[port] -= 1
            rec[1] -= 1
            if rec[1] == 0:
                self.held -= 1
                if self.ledger is not None:  # its last copy leaves: residence slot - queueing slot + 1
                    self.ledger.left(slot, rec[2])
            msg = rec[0]
            send(port, msg)
            if self.order is not None and waiting[port]:
                self.check_served(port, msg)
            if msg[0] < 0:
                kind = TYPE_UNICAST
            elif port_dim[port] == msg[2]:
                kind = TYPE_BCAST_ENDING
            else:
                kind = TYPE_BCAST_OTHER
            counters[port] += 1
            counters[w0 + kind] += slot - rec[2]
            counters[c0 + kind] += 1


class StarNode(BroadcastNode):
    """One node of priority STAR broadcasting (and §4 unicast routing) on a torus."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        p: StarInputs = ctx.params
        geo = ctx.geometry
        self.sides: tuple[int, ...] = tuple(geo.sides)
        self.d = len(self.sides)
        self.classes: int = p.n_classes
        self.x: tuple[float, ...] = tuple(p.x)
        self.lam_unicast: float = p.lam_unicast
        self.ubirths = BirthProcess(ctx.rng, self.lam_unicast, start=float(ctx.slot))
        self.useq = first_seq(ctx)  # unicast names stay unique across incarnations, as broadcasts'
        ports = port_table(ctx)
        self.book: PlanBook = plan_book(self.sides, ports, self.classes)
        self.coords_of = _coords_table(ctx)
        self.port_dim = [0] * len(ctx.ports)
        for k, pair in enumerate(ports):
            for port in pair:
                self.port_dim[port] = k
        order = ServiceOrder(ctx, self.priority_class, lambda m: tuple(m[:2])) if self.classes > 1 else None
        self.queues = TimedClassQueues(ctx.ports, self.classes, order, FifoOrder(ctx))
        n_ports = len(self.port_dim)
        #: sent per port, then wait sums and transmission counts per traffic type
        self.counters = [0] * (n_ports + 6)

    # -- what the observer and the driver read ------------------------------------------
    def held(self) -> int:
        return self.queues.held

    def held_packets(self) -> list[tuple[int, int]]:
        return self.queues.items()

    def choice_counts(self, last_slot: int) -> dict[str, dict[int, int]]:
        """``births`` (the kit's) and ``unicast_births``: births per slot, counted here."""
        out = super().choice_counts(last_slot)
        counts = self.ubirths.counts(last_slot)
        if counts:
            out["unicast_births"] = counts
        return out

    def next_wake(self) -> int | None:
        a, b = self.births_proc.wake_slot(), self.ubirths.wake_slot()
        if a is None or b is None:
            return b if a is None else a
        return min(a, b)

    def priority_class(self, msg: Any, port: int) -> int:
        """The class §3.2 (and the end of §4) gives ``msg`` on ``port``: the declared service order.

        Two classes: broadcast copies on their ending dimension low (1), everything else high
        (0); three: broadcast off the ending dimension 0, unicast 1, broadcast on it 2. Written
        here from the paper, apart from the plans that queue packets, so the queues are
        checked against it (:class:`~slotnet.schemes.kit.ServiceOrder`).
        """
        if msg[0] < 0:
            return 1 if self.classes == 3 else 0
        return self.classes - 1 if self.port_dim[port] == msg[2] else 0

    # -- the rule ---------------------------------------------------------------------------
    def _rel_from(self, other: int) -> tuple[int, ...]:
        """This node's offset from ``other``: ``(coords - coords(other)) mod sides``.

        Computed per packet, not memoised per node: a memo per node and origin is a table of
        ``n_nodes`` entries in every node, memory quadratic in the network's size.
        """
        sides, here, there = self.sides, self.ctx.coords, self.coords_of[other]
        if len(sides) == 2:  # the tori of the paper: two dimensions, without the generator
            return (here[0] - there[0]) % sides[0], (here[1] - there[1]) % sides[1]
        return tuple((a - b) % n for a, b, n in zip(here, there, sides))

    def _rel_to(self, other: int) -> tuple[int, ...]:
        """``other``'s offset from this node: ``(coords(other) - coords) mod sides``."""
        return tuple((b - a) % n for a, b, n in zip(self.ctx.coords, self.coords_of[other], self.sides))

    def _arrivals(self, inbox: Inbox, slot: int) -> None:
        """Queue (or deliver) this slot's arriving packets, farthest-travelled first."""
        book, me, rel_from = self.book, self.ctx.node, self._rel_from
        received, plan_of = self.received, book.broadcast
        staged: list[tuple[int, int, Any, Any]] = []
        for i, (_, msg) in enumerate(inbox):
            head = msg[0]
            if head >= 0:
                received(head, msg[1])
                hops, plan = plan_of(rel_from(head), msg[2], msg[3])
                if plan:
                    staged.append((-hops, i, msg, plan))
                continue
            dest, hops = msg[2], msg[5] + 1
            if dest == me:
                self.ctx.record("delivered", msg[4], hops, -head - 1, msg[1], dest)
                continue
            port = book.unicast_port(self._rel_to(dest), msg[3])
            staged.append((-hops, i, (head, msg[1], dest, msg[3], msg[4], hops), ((port, book.ucls),)))
        if len(staged) > 1:
            staged.sort()  # (-hops, inbox index): unique keys, messages never compared
        add = self.queues.add_at
        for _, _, msg, plan in staged:
            add(msg, plan, slot)

    def _births(self, slot: int) -> None:
        """Queue the broadcasts and unicasts born here that became sendable in ``slot``."""
        ctx, book, add = self.ctx, self.book, self.queues.add_at
        rng, me = ctx.rng, ctx.node
        zero = book.zero
        for seq, _tau in self.births(slot):
            ending = pick_ending(rng, self.x)
            split = pick_split(rng, self.sides)
            ctx.record_choice("ending", ending)  # with probability x_l (§3.1)
            ctx.record_choice("split", split)  # a fair coin per even side (§3.1)
            _, plan = book.broadcast(zero, ending, split)
            add((me, seq, ending, split), plan, slot)
        if self.ubirths.next_birth <= slot:
            taus = self.ubirths.take_until(slot)
            ctx.record("born", len(taus))
            n = ctx.n_nodes
            for tau in taus:
                dest = int(rng.random() * (n - 1))
                dest += dest >= me
                ctx.record_choice("destination", (dest - me) % n)  # uniform over the other nodes (§4)
                to = self.coords_of[dest]
                tie = pick_tie(rng, self.sides, ctx.coords, to)
                for k in tied_dims(self.sides, ctx.coords, to):
                    ctx.record_choice("tie", tie >> k & 1)  # a fair coin per tied ring (§4)
                self.useq += 1
                port = book.unicast_port(self._rel_to(dest), tie)
                add((-me - 1, self.useq, dest, tie, tau, 0), ((port, book.ucls),), slot)

    def _serve(self, slot: int) -> None:
        """Non-idling all-port service: each busy port sends one packet (§3.1, §3.2)."""
        self.queues.send_heads(self.ctx.send, slot, self.port_dim, self.counters)
        self.ctx.record("links", tuple(self.counters))

    async def run(self) -> None:
        ctx = self.ctx
        queues = self.queues
        # the queue's residence ledger, from the queueing slots W is measured from (``littles_law``)
        ledger = queues.ledger or queues.start_ledger(ctx.slot)
        inbox: Inbox = ()
        while True:
            slot = ctx.slot
            if inbox:
                self._arrivals(inbox, slot)
            self._births(slot)
            q_start = queues.held
            if q_start:
                self._serve(slot)
            self.report(q_start, queues.held)
            ledger.record(ctx)
            if queues.held:
                inbox = await ctx.next_slot()
            else:
                inbox = await ctx.idle(until=self.next_wake())
