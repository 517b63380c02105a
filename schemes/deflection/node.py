"""The deflection-routing node: one-pass deflection on the d-cube (Greenberg & Hajek).

Per slot, at each node (§II-A):

1. packets that reached this node and are destined to it are absorbed (:func:`~._rule.absorb`);
2. the U continuing packets (U <= d, one per in-link) are never blocked;
3. new packets: in the blocking model (§II-B) V ~ B(d, v/d) are offered and
   ``min(V, d - U)`` are accepted, the rest blocked and cleared; in the input-queueing
   model (§IV) A ~ Poisson(λ) arrive, join the node's FIFO input queue, and
   ``min(Q + A, d - U)`` enter the network;
4. all packets to transmit are assigned ports by the one-pass rule and sent
   (:func:`~._rule.transmit`).

Under faults the node uses only the ports its context shows alive (``ctx.live_ports``):
new packets are accepted only up to the live ports left after the continuing ones, and
the one-pass rule routes around dead links (:func:`~._rule.one_pass` with ``live``).
With every port alive -- always without faults, or with ``--detect never`` -- the node
is exactly the paper's. A stalled node misses arrival epochs of its stall.

A packet on the wire is ``(dest, entered_slot, origin)`` (blocking) or
``(dest, entered_slot, origin, arrived_slot)`` (input queueing). The node records one
``step`` event per slot it is awake; delays are computed by the observer from the
stamps of the packets the node absorbed, and each absorption is checked there against
the packet's origin and destination (:mod:`.reporter`).
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache
from typing import Any, NamedTuple, cast

from slotnet.nodes import Inbox, Node, NodeContext

from ._arrivals import ArrivalProcess, binomial_pmf, poisson_pmf
from ._inputs import DeflectionInputs
from ._rule import absorb, admit, transmit

__all__ = ["FIRST_OF", "STEP_FIELDS", "DeflectionNode", "StepEvent"]

class StepEvent(NamedTuple):
    """The ``step`` event a deflection node records once per slot it is awake."""

    offered: int            # new packets offered (blocking) / arrived (input queueing)
    accepted: int           # new packets that entered the network
    sent: int               # packets transmitted (continuing + new)
    deflected: int          # of which deflected
    dist_after: int         # sum over transmitted packets not yet home of their distance after the hop
    n_after: int            # number of such packets
    deflect_dists: Any      # distance to destination of each deflected packet, at deflection
    absorbed_entered: Any   # entered_slot of each packet absorbed here
    absorbed_arrived: Any   # arrived_slot of each absorbed packet (input queueing only)
    queue: int              # input-queue length after the slot
    absorbed_ends: Any      # origin and destination of each absorbed packet (two entries each)


#: The ``step`` event's field names, in order (the trace schema).
STEP_FIELDS = StepEvent._fields

#: ``FIRST_OF[n]``: the name of the choice of the packet considered first among ``n`` (the
#: one-pass rule's order, §II-A; declared by the scheme's ``choices``), one string shared by every node
FIRST_OF = tuple(f"first_of_{n}" for n in range(25))


@lru_cache(maxsize=16)
def _segments(p: DeflectionInputs, d: int) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """The arrival segments ``(start, pmf)`` of a run's inputs on the d-cube: made once for
    every node, not once per node."""
    if p.mode == "queue":
        return ((0, tuple(poisson_pmf(p.lam))),)
    return tuple((start, tuple(binomial_pmf(d, v / d))) for start, v in p.schedule)


class DeflectionNode(Node):
    """One processor of the d-cube running one-pass deflection routing."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        #: arrival slots of packets waiting to enter (input queueing; the blocking model has no queue)
        prm: DeflectionInputs = ctx.params
        self.queue: deque[int] | tuple[()] = deque() if prm.mode == "queue" else ()
        #: the arrival process of the current run() (None before it starts): it counts the
        #: arrivals each slot drew, handed to the observer at the end (:meth:`choice_counts`)
        self.arrivals: ArrivalProcess | None = None

    def held(self) -> int:
        return len(self.queue)

    def held_packets(self) -> list[int]:
        """The arrival slots of the packets in the input queue (the observer's Little's law)."""
        return list(self.queue)

    def choice_counts(self, last_slot: int) -> dict[str, dict[int, int]]:
        """``arrivals``: how many slots up to ``last_slot`` drew each number of new packets
        (one rate forever only: a time-varying ``schedule`` declares no arrival choice)."""
        counts = self.arrivals.counts(last_slot) if self.arrivals is not None else {}
        return {"arrivals": counts} if counts else {}

    def _arrivals(self, rand: Any = None) -> ArrivalProcess:
        """The node's arrival process, drawing with ``rand`` (default: its stream's ``random``)."""
        p: DeflectionInputs = self.ctx.params
        return ArrivalProcess(self.ctx.rng, _segments(p, self.ctx.geometry.d), rand)

    async def run(self) -> None:
        ctx = self.ctx
        me, d, n = ctx.node, ctx.geometry.d, ctx.n_nodes  # a d-cube node has d ports
        rand = ctx.rng.random  # one bound method, shared with the arrival process
        send = ctx.send
        prm: DeflectionInputs = ctx.params
        queueing, continuing_first = prm.mode == "queue", prm.order == "continuing-first"
        queue = cast("deque[int]", self.queue)  # only used as one where there is one
        self.arrivals = arrivals = self._arrivals(rand)
        nxt = arrivals.next_after(ctx.slot - 1)  # a restarted node begins now
        inbox: Inbox = ()
        # A slot's work is _step's: this coroutine lives as long as the node and keeps every
        # local of its body (compiled, in one struct), so it holds only what crosses a park.
        while True:
            nxt = _step(ctx, inbox, me, d, n, rand, send, queueing, continuing_first, queue, arrivals, nxt)
            inbox = ()  # not kept while the node sleeps
            if queue:
                inbox = await ctx.next_slot()
            elif nxt is None:
                inbox = await ctx.idle()
            else:
                inbox = await ctx.idle(until=nxt[0])


def _step(ctx: NodeContext, inbox: Inbox, me: int, d: int, n: int, rand: Any, send: Any, queueing: bool,
          continuing_first: bool, queue: deque[int], arrivals: ArrivalProcess,
          nxt: tuple[int, int] | None) -> tuple[int, int] | None:
    """One slot of a deflection node awake in it: absorb, admit, transmit, record the
    ``step`` event. Returns the next arrival epoch drawn (``nxt`` as it was, or the next)."""
    slot = ctx.slot
    pkts, absorbed_e, absorbed_a, ends = absorb(me, inbox, queueing)
    offered = 0
    if nxt is not None and nxt[0] < slot:  # woken late (a stall): those epochs are gone
        nxt = arrivals.next_after(slot - 1)
    if nxt is not None and nxt[0] == slot:
        offered = nxt[1]
        nxt = arrivals.next_after(slot)
    n_cont = len(pkts)
    live = ctx.live_ports
    live_mask = None
    if len(live) < d:
        live_mask = sum(1 << p for p in live)
    free = len(live) - n_cont  # the live ports left (none: more continuing packets than live ports)
    if free < 0:
        free = 0
    if queueing:
        queue.extend([slot] * offered)
        accepted = len(queue) if len(queue) < free else free
        admit(me, n, slot, accepted, rand, pkts, queue)
    else:
        accepted = offered if offered < free else free
        admit(me, n, slot, accepted, rand, pkts, None)
    for i in range(n_cont, len(pkts)):  # §II-B: each new packet's destination, uniform over the others
        ctx.record_choice("destination", pkts[i][0] ^ me)
    deflected = dist_after = n_after = 0
    ddists: list[int] = []
    if pkts:
        deflected, dist_after, n_after, ddists, lead = transmit(
            me, pkts, d, rand, send, n_cont if continuing_first else 0, live_mask)
        if len(pkts) > 1 and not continuing_first:  # §II-A: every order equally likely
            ctx.record_choice(FIRST_OF[len(pkts)], lead)
    ctx.record("step", offered, accepted, len(pkts), deflected, dist_after, n_after,
               ddists, absorbed_e, absorbed_a, len(queue), ends)
    return nxt
