"""Planted bugs: realistic mistakes in schemes' node rules, each of which the run's invariants must catch.

Every bug is a small subclass of a scheme's node or a monkeypatched rule function -- never a
change to a reporter, a check or the fabric -- run fault-free on a small instance. A caught
bug fails ``invariants.ok`` and the failing invariant names the problem (its name, and the
sentence of its first violation). Bugs no invariant can see are listed too, as strict
``xfail``s with the reason: the suite reports its catch rate honestly, and a new check that
starts catching one of them turns its xfail into a failure to be promoted.

Families: deflection (Greenberg & Hajek), STAR (Yeh, Varvarigos & Eshoul), the hypercube
broadcast schemes (Stamoulis & Tsitsiklis), many-to-one greedy routing, and the partial
exchange (Varvarigos & Bertsekas §5).

Invariants judged on the whole run (``birth_epochs``, ``choices``, ``littles_law``,
``theory_agreement``) name their problem in one sentence of their own instead of a first
offending packet.
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

import slotnet.schemes.broadcast.indirect as indirect_mod
import slotnet.schemes.broadcast.simple as simple_mod
import slotnet.schemes.deflection._rule as deflection_rule
import slotnet.schemes.deflection.node as deflection_node
import slotnet.schemes.manytoone.greedy as greedy_mod
import slotnet.schemes.pmnb._exchange_rule as exchange_rule
import slotnet.schemes.star._plans as star_plans
import slotnet.schemes.star._rule as star_rule
import slotnet.schemes.star.node as star_node
from slotnet import RunSpec, run
from slotnet.errors import NodeFailure
from slotnet.nodes import Node
from slotnet.schemes import SCHEMES
from slotnet.schemes.broadcast.balanced import BalancedNode, balanced_plan
from slotnet.schemes.broadcast.dtree import DtreeNode, dtree_plan
from slotnet.schemes.broadcast.simple import SimpleNode
from slotnet.schemes.deflection._arrivals import binomial_pmf
from slotnet.schemes.deflection.node import DeflectionNode
from slotnet.schemes.kit import FifoOrder
from slotnet.schemes.manytoone._engine import DST, SRC
from slotnet.schemes.manytoone.greedy import CROSSED, GreedyNode
from slotnet.schemes.star.node import StarNode, TimedClassQueues


class _Stop(Exception):
    """Ends a node's run() from inside its step (a node that believes it is done)."""


# -- deflection ----------------------------------------------------------------------------------
def _absorb_early(node: int, inbox: Any, queueing: bool) -> Any:
    """absorb() with the test a hop too generous: a packet one link from home is taken as home."""
    continuing, entered, arrived, ends = [], [], [], []
    for _, pkt in inbox:
        if (pkt[0] ^ node).bit_count() <= 1:
            entered.append(pkt[1])
            ends += [pkt[2], pkt[0]]
            if queueing:
                arrived.append(pkt[3])
        else:
            continuing.append(pkt)
    return continuing, entered, arrived, ends


def _absorb_swapped(node: int, inbox: Any, queueing: bool) -> Any:
    """absorb() that reads the input-queueing stamps the wrong way round (arrived for entered)."""
    continuing, entered, arrived, ends = [], [], [], []
    for _, pkt in inbox:
        if pkt[0] == node:
            entered.append(pkt[3] if queueing else pkt[1])
            ends += [pkt[2], pkt[0]]
            if queueing:
                arrived.append(pkt[1])
        else:
            continuing.append(pkt)
    return continuing, entered, arrived, ends


def _absorb_wrong_field(node: int, inbox: Any, queueing: bool) -> Any:
    """absorb() that takes the entered stamp from field 2 (the origin) instead of field 1."""
    continuing, entered, arrived, ends = [], [], [], []
    for _, pkt in inbox:
        if pkt[0] == node:
            entered.append(pkt[2])
            ends += [pkt[2], pkt[0]]
        else:
            continuing.append(pkt)
    return continuing, entered, arrived, ends


_transmit = deflection_rule.transmit


def _transmit_restamps_origin(node: int, pkts: Any, d: int, rand: Any, send: Any, first: int = 0,
                              live: Any = None) -> Any:
    """transmit() whose forwarder writes its own id into the header's origin field."""
    return _transmit(node, [(p[0], p[1], node, *p[3:]) for p in pkts], d, rand, send, first, live)


def _one_pass_inverted(node: int, dests: Any, d: int, rand: Any, first: int = 0, live: Any = None,
                       shuffle: bool = True, invert: bool = True) -> Any:
    """one_pass() with the preference inverted: links that lead away from the destination first
    (``invert``); without ``shuffle``, the packets considered in list order. Each packet's
    ``(port, deflected)``, then the index of the packet considered first."""
    order = list(range(len(dests)))
    for i in range(len(order) - 1, 0, -1) if shuffle else ():
        j = int(rand() * (i + 1))
        order[i], order[j] = order[j], order[i]
    free = (1 << d) - 1
    out = [(0, False)] * len(dests)
    for k in order:
        diff = node ^ dests[k]
        mask = free & ~diff if invert else free & diff  # the bug: should be free & diff
        deflected = not mask
        if deflected:
            mask = free
        bit = deflection_rule.pick_bit(mask, rand())
        out[k] = (bit, deflected)
        free &= ~(1 << bit)
    return [*out, order[0] if order else 0]


def _offered_per_node_not_per_link(n: int, p: float) -> list[float]:
    """The blocking model's offered packets drawn from B(d, v), the load v taken for each
    of the d trials' probability instead of v/d (§II-B): the node's pmf for B(d, v/d)."""
    return binomial_pmf(n, p * n)


def _transmit_inverted(node: int, pkts: Any, d: int, rand: Any, send: Any, first: int = 0, live: Any = None,
                       shuffle: bool = True, invert: bool = True) -> Any:
    """transmit() assigning ports by :func:`_one_pass_inverted` (patched where the node calls it:
    in the compiled build the rule's own call to one_pass is a C call no patch reaches)."""
    *assigned, lead = _one_pass_inverted(node, [pkt[0] for pkt in pkts], d, rand, first, live, shuffle, invert)
    deflected = dist_after = n_after = 0
    ddists: list[int] = []
    for (port, defl), pkt in zip(assigned, pkts):
        send(port, pkt)
        after = (node ^ (1 << port) ^ pkt[0]).bit_count()
        if after:
            dist_after += after
            n_after += 1
        if defl:
            deflected += 1
            ddists.append(after - 1)
    return deflected, dist_after, n_after, ddists, lead


#: transmit() considering the packets in the order they are listed (continuing ones in
#: in-port order, then the new ones), where §II-A considers them in a uniformly random order
_transmit_unshuffled = functools.partial(_transmit_inverted, shuffle=False, invert=False)


class _DeflectionQuits(DeflectionNode):
    """Node 5's arrival generator ends at slot 20, and the node takes that for the end of its work."""

    def _arrivals(self, rand: Any = None) -> Any:
        inner, me, ctx = super()._arrivals(rand), self.ctx.node, self.ctx

        class Ending:
            def next_after(self, slot: int) -> Any:
                if me == 5 and ctx.slot >= 20:
                    raise _Stop
                return inner.next_after(slot)

            def counts(self, last: int) -> Any:
                return inner.counts(last)

        return Ending()

    async def run(self) -> None:
        try:
            await super().run()
        except _Stop:
            return


# -- STAR ----------------------------------------------------------------------------------------
def _next_hop_off_by_one(sides: Any, coords: Any, dest: Any, tie: int = 0) -> Any:
    """unicast_next_hop() with the "shorter side" test off by one: on an odd ring an offset of
    (n-1)/2 is taken for a tie, and the tie bit (0: drawn only for even rings) sends it the long way."""
    for k, n in enumerate(sides):
        off = (dest[k] - coords[k]) % n
        if off:
            if 2 * off < n - 1:  # the bug: should be 2 * off < n
                return k, 1
            if 2 * off > n:
                return k, -1
            return k, 1 if tie >> k & 1 else -1
    return None


def _broadcast_class_inverted(dim: int, ending: int, classes: int = 2) -> int:
    """broadcast_class() with §3.2's classes swapped: the ending dimension gets the high priority."""
    if classes == 1:
        return 0
    return 0 if dim == ending else classes - 1


class _StarHopsReset(StarNode):
    """A forwarder that re-queues a unicast with its hop count reset (the count reads 1 at delivery)."""

    def _arrivals(self, inbox: Any, slot: int) -> None:
        super()._arrivals([(p, m if m[0] >= 0 else (*m[:5], 0)) for p, m in inbox], slot)


class _StarHopsTwice(StarNode):
    """A forwarder that counts each hop twice (once on arrival, once more when re-queueing)."""

    def _arrivals(self, inbox: Any, slot: int) -> None:
        super()._arrivals([(p, m if m[0] >= 0 else (*m[:5], m[5] + 1)) for p, m in inbox], slot)


class _StarDeliversEarly(StarNode):
    """The unicast branch tests "home" by distance <= 1: a packet is delivered at its destination's neighbour."""

    def _arrivals(self, inbox: Any, slot: int) -> None:
        book, me = self.book, self.ctx.node
        staged: list[Any] = []
        for i, (_, msg) in enumerate(inbox):
            head = msg[0]
            if head >= 0:
                self.received(head, msg[1])
                hops, plan = book.broadcast(self._rel_from(head), msg[2], msg[3])
                if plan:
                    staged.append((-hops, i, msg, plan))
                continue
            dest, hops = msg[2], msg[5] + 1
            if self.ctx.geometry.distance(dest, me) <= 1:  # the bug: should be dest == me
                self.ctx.record("delivered", msg[4], hops, -head - 1, msg[1], dest)
                continue
            port = book.unicast_port(self._rel_to(dest), msg[3])
            staged.append((-hops, i, (head, msg[1], dest, msg[3], msg[4], hops), ((port, book.ucls),)))
        staged.sort()
        for _, _, msg, plan in staged:
            self.queues.add_at(msg, plan, slot)


class _StarQuits(StarNode):
    """Node 5 ends its loop once slot 20 is over, though copies still come for it."""

    def report(self, q_start: int, q_after: int) -> None:
        super().report(q_start, q_after)
        if self.ctx.node == 5 and self.ctx.slot >= 20:
            raise _Stop

    async def run(self) -> None:
        try:
            await super().run()
        except _Stop:
            return


# -- hypercube broadcasts --------------------------------------------------------------------
class _BalancedLargestFirst(BalancedNode):
    """§4.3.1's label priority with the key's sign flipped: the largest label is served first."""

    def forward(self, message: Any) -> None:
        self.prio.add(message, -message[2], balanced_plan(self.ctx.node ^ message[0], self.d))

    def originate(self, seq: int, slot: int) -> None:
        label = self.labels.next(0, slot)
        self.prio.add((self.ctx.node, seq, label), -label, balanced_plan(0, self.d))


class _DtreeLargestFirst(DtreeNode):
    """The d-tree scheme's label discipline with the key's sign flipped."""

    def forward(self, message: Any) -> None:
        self.prio.add(message, -message[3], dtree_plan(self.ctx.node ^ message[0], message[2], self.d))

    def originate(self, seq: int, slot: int) -> None:
        j = self._randrange(self.d)
        label = self.labels.next(j, slot)
        self.prio.add((self.ctx.node, seq, j, label), -label, dtree_plan(0, j, self.d))


class _BirthAtSlotStart(SimpleNode):
    """Births stamped with the slot they happened in (⌊τ⌋) instead of their Poisson epoch τ."""

    def births(self, slot: int) -> list[tuple[int, float]]:
        out = []
        for tau in self.births_proc.take_until(slot):
            self.seq += 1
            out.append((self.seq, float(int(tau))))
        self._new_births.extend(out)
        return out


class _BirthAtSlotEnd(SimpleNode):
    """Births stamped with the slot they became sendable in (⌈τ⌉) instead of τ."""

    def births(self, slot: int) -> list[tuple[int, float]]:
        out = []
        for _ in self.births_proc.take_until(slot):
            self.seq += 1
            out.append((self.seq, float(slot)))
        self._new_births.extend(out)
        return out


class _BirthOneSlotEarly(SimpleNode):
    """The birth window off by one: packets born in (t, t+1] are taken (and sent) in slot t."""

    def births(self, slot: int) -> list[tuple[int, float]]:
        out = []
        for tau in self.births_proc.take_until(slot + 1):
            self.seq += 1
            out.append((self.seq, tau))
        self._new_births.extend(out)
        return out

    def next_wake(self) -> int | None:
        w = self.births_proc.wake_slot()
        return None if w is None else max(w - 1, self.ctx.slot + 1)


class _SimpleQuits(SimpleNode):
    """Node 5 ends its loop once slot 20 is over, though copies still come for it."""

    def report(self, q_start: int, q_after: int) -> None:
        super().report(q_start, q_after)
        if self.ctx.node == 5 and self.ctx.slot >= 20:
            raise _Stop

    async def run(self) -> None:
        try:
            await super().run()
        except _Stop:
            return


_children = simple_mod.unbalanced_children


def _children_of_neighbour(rel: int, d: int, order: Any) -> Any:
    """The tree lookup with the relative address off by one bit (x ^ origin ^ 1)."""
    return _children(rel ^ 1, d, order)


# -- many-to-one greedy -------------------------------------------------------------------------
class _NearestFirst(GreedyNode):
    """Farthest-first with the key's sign flipped: the packet nearest its destination goes first."""

    def _enqueue(self, msg: list[Any]) -> None:
        dest = self.ctx.geometry.coords(msg[DST])
        dim, sign = greedy_mod.next_port(self.sides, self.coords, dest)  # type: ignore[misc]
        port = self.ctx.port(dim, sign)
        self.occ += 1
        self.load += 1
        self.seq += 1
        left = sum(abs(a - b) for a, b in zip(self.coords, dest))
        heapq.heappush(self.queues.setdefault(port, []), (left, self.seq, msg))  # the bug: should be -left


class _SourceCountsItself(GreedyNode):
    """The hop counter off by one: the source counts its own queueing as a hop."""

    def _enqueue(self, msg: list[Any]) -> None:
        if msg[SRC] == self.me and msg[CROSSED] == 0:
            msg[CROSSED] = 1
        super()._enqueue(msg)


class _DeliversNextDoor(GreedyNode):
    """A shortcut: a packet one hop from its destination is taken as delivered."""

    def _enqueue(self, msg: list[Any]) -> None:
        if msg[CROSSED] and self.ctx.geometry.distance(self.me, msg[DST]) == 1:
            self.ctx.record("delivered", msg[SRC], self.ctx.slot, self.ctx.slot, msg[CROSSED])
            return
        super()._enqueue(msg)


class _QuitsWhenEmpty(GreedyNode):
    """A node that returns as soon as its queues are empty, though packets still come through it."""

    def _peak(self) -> None:
        super()._peak()
        if self.ctx.slot >= 1 and not any(self.queues.values()):
            raise _Stop

    async def run(self) -> None:
        try:
            await super().run()
        except _Stop:
            return


def _next_port_reversed(sides: Any, here: Any, dest: Any) -> Any:
    """Dimension order backwards: the last dimension is corrected first."""
    for dim in reversed(range(len(here))):
        if here[dim] != dest[dim]:
            return dim, 1 if dest[dim] > here[dim] else -1
    return None


# -- bugs only the observer's own witnesses see -----------------------------------------------
class _EntryStampQueue(deque):  # type: ignore[type-arg]
    """An input queue that hands back the slot it is read in for a packet's arrival stamp."""

    def __init__(self, ctx: Any) -> None:
        super().__init__()
        self.ctx = ctx

    def popleft(self) -> Any:
        super().popleft()
        return self.ctx.slot


class _DeflectionArrivalAtEntry(DeflectionNode):
    """Input queueing with each packet's arrival stamped with the slot it entered the network."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        if ctx.params.mode == "queue":
            self.queue = _EntryStampQueue(ctx)


class _StarHopsFromDistance(StarNode):
    """The unicast branch reports the distance as the hop count instead of the count it carried."""

    def _arrivals(self, inbox: Any, slot: int) -> None:
        me, geo = self.ctx.node, self.ctx.geometry
        rest = []
        for port, msg in inbox:
            if msg[0] < 0 and msg[2] == me:
                source = -msg[0] - 1
                self.ctx.record("delivered", msg[4], geo.distance(source, me), source, msg[1], me)
            else:
                rest.append((port, msg))
        super()._arrivals(rest, slot)


class _LifoQueues(TimedClassQueues):
    """STAR's per-port queues, each class a stack: the newest packet is served first."""

    __slots__ = ()

    def add_at(self, message: Any, plan: Any, slot: int) -> None:
        rec = [message, 0, slot]
        for p, c in plan:
            self.queues[p][c].insert(0, rec)
            self.waiting[p] += 1
        rec[1] = len(plan)
        if plan:
            self.held += 1


class _StarLifo(StarNode):
    """``discipline=fcfs`` served newest first (a stack where the paper has a FIFO queue)."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.queues = _LifoQueues(ctx.ports, self.classes, None, FifoOrder(ctx))


class _GreedyLifo(GreedyNode):
    """``order=fifo`` with each port's queue a stack: the packet that came last leaves first."""

    def _enqueue(self, msg: list[Any]) -> None:
        dest = self.ctx.geometry.coords(msg[DST])
        dim, sign = greedy_mod.next_port(self.sides, self.coords, dest)  # type: ignore[misc]
        port = self.ctx.port(dim, sign)
        self.occ += 1
        self.load += 1
        self.seq += 1
        self.queues.setdefault(port, deque()).appendleft(msg)  # the bug: should be append


def _next_hop_staircase(here: Any, dest: Any, cls: int) -> Any:
    """§5's next hop taking the dimension with more still to go (a staircase, not one turn)."""
    first = exchange_rule.first_leg_dim(cls)
    left = [abs(dest[k] - here[k]) for k in (0, 1)]
    if not any(left):
        return None
    dim = first if left[first] >= left[1 - first] else 1 - first
    return dim, 1 if dest[dim] > here[dim] else -1


class _IndirectSkewed(indirect_mod.IndirectNode):
    """Rule A's tree drawn from ``randrange(d - 1)``: the last tree never carries a broadcast."""

    def originate(self, seq: int) -> None:
        j = self._randrange(self.d - 1)  # the bug: should be randrange(self.d)
        msg = (self.ctx.node, seq, j, indirect_mod.UP)
        (self.v_wait if self.plan.virtual[j] else self.up_q)[j].append(msg)
        self.n_up += 1


def _indirect_skewed(ctx: Any) -> Any:
    return _IndirectSkewed(ctx) if ctx.params.idling else indirect_mod.IndirectNonIdlingNode(ctx)


class _IndirectCoinStuck(indirect_mod.IndirectNode):
    """Rule F's coin stuck at 0 (§5.2 tosses a fair one): B1's packet, or a lone one, always starts in t + 1."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._getrandbits = lambda bits: 0


def _indirect_coin_stuck(ctx: Any) -> Any:
    return _IndirectCoinStuck(ctx) if ctx.params.idling else indirect_mod.IndirectNonIdlingNode(ctx)


def _tie_always_plus(rng: Any, sides: Any, source: Any, dest: Any) -> int:
    """pick_tie() without its coin: a unicast n/2 away on an even ring always goes the +1 way round."""
    return sum(1 << k for k in star_rule.tied_dims(sides, source, dest))


class _DtreeQAfterSends(DtreeNode):
    """Q (§4.3.3) taken after the slot's transmissions: packets about to be sent are left out."""

    def report(self, q_start: int, q_after: int) -> None:
        super().report(q_after, q_after)


class _SimpleQPerPort(SimpleNode):
    """Q counted once per port a packet still needs, where §4.3.3 counts one unit per packet."""

    def _per_port(self) -> int:
        return sum(len(self.queues.queues[p]) for p in self.queues.ports)

    async def forward_heads(self, queues: Any) -> Any:
        self._q_start = self._per_port()
        return await super().forward_heads(queues)

    def report(self, q_start: int, q_after: int) -> None:
        super().report(self._q_start, self._per_port())


class _IndirectQWithoutVirtualArcs(indirect_mod.IndirectNode):
    """Q leaves out the packets crossing their origin's virtual arcs (Rule D's tandem)."""

    def report_pieces(self, start: tuple[int, int], after: tuple[int, int]) -> None:
        self.report(start[0] + start[1] - self.n_arcs, after[0] + after[1] - self.n_arcs)


class _LateUnicastStamps(TimedClassQueues):
    """STAR's queues stamping a unicast with the slot after the one it is queued in."""

    __slots__ = ()

    def add_at(self, message: Any, plan: Any, slot: int) -> None:
        super().add_at(message, plan, slot + 1 if message[0] < 0 else slot)


class _StarLateUnicastStamps(StarNode):
    """Unicasts' queueing slots one late: their waits (W) come out a slot short."""

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        q = self.queues
        self.queues = _LateUnicastStamps(ctx.ports, self.classes, q.order, q.fifo)


# -- the table ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bug:
    """A planted bug: how to plant it, the run that shows it, and what must catch it."""

    name: str
    scheme: str
    topology: str
    #: node class (or factory) to put in the scheme's record, or None
    node: type[Node] | Any = None
    #: (module, attribute, replacement) to monkeypatch
    patches: tuple[tuple[Any, str, Any], ...] = ()
    load: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    slots: int = 120
    warmup: int = 0
    #: the invariant that must fail, and a phrase its first violation must contain
    invariant: str = ""
    phrase: str = ""
    #: why no invariant sees it (an expected miss), else ""
    missed: str = ""


BUGS = [
    # deflection
    Bug("deflection: absorbs a packet one hop early", "deflection", "hypercube:4", load={"offered": 1.0},
        patches=((deflection_node, "absorb", _absorb_early),),
        invariant="delivered_at_destination", phrase="was delivered at node"),
    Bug("deflection: input-queueing stamps swapped", "deflection", "hypercube:4", load={"lam": 1.2},
        patches=((deflection_node, "absorb", _absorb_swapped),),
        invariant="hops_within_bounds", phrase="parity"),
    Bug("deflection: entered stamp read from the origin field", "deflection", "hypercube:4", load={"offered": 1.0},
        patches=((deflection_node, "absorb", _absorb_wrong_field),),
        invariant="hops_within_bounds", phrase="hops"),
    Bug("deflection: forwarder rewrites the origin", "deflection", "hypercube:4", load={"offered": 1.0},
        patches=((deflection_node, "transmit", _transmit_restamps_origin),),
        invariant="hops_within_bounds", phrase="parity"),
    Bug("deflection: a node stops early", "deflection", "hypercube:4", load={"offered": 1.0}, node=_DeflectionQuits,
        invariant="liveness", phrase="had returned from run()"),
    Bug("deflection: preference inverted (away from home first)", "deflection", "hypercube:4", load={"offered": 0.5},
        patches=((deflection_node, "transmit", _transmit_inverted),),
        invariant="forced_deflections", phrase="were free"),
    Bug("deflection: offered packets drawn from B(d, v) instead of B(d, v/d)", "deflection", "hypercube:4",
        load={"offered": 0.5}, patches=((deflection_node, "binomial_pmf", _offered_per_node_not_per_link),),
        invariant="choices", phrase="choice 'arrivals'"),
    Bug("deflection: packets considered in list order, not a random one", "deflection", "hypercube:4",
        load={"offered": 1.0}, patches=((deflection_node, "transmit", _transmit_unshuffled),),
        invariant="choices", phrase="choice 'first_of_2'"),
    Bug("deflection: arrival stamped with the entry slot", "deflection", "hypercube:4", load={"lam": 1.0},
        node=_DeflectionArrivalAtEntry, invariant="littles_law", phrase="Little's law"),
    # STAR
    Bug("star: unicasts the long way round", "star", "torus:5x5", load={"lam": 0.002}, params={"lam_unicast": 0.05},
        patches=((star_plans, "unicast_next_hop", _next_hop_off_by_one),),
        invariant="shortest_paths", phrase="declares shortest paths"),
    Bug("star: unicast ties always broken the +1 way", "star", "torus:4x4", load={"lam": 0.002},
        params={"lam_unicast": 0.05}, patches=((star_node, "pick_tie", _tie_always_plus),),
        invariant="choices", phrase="choice 'tie'"),
    Bug("star: hop counter stuck at 1", "star", "torus:4x4", load={"lam": 0.002}, params={"lam_unicast": 0.05},
        node=_StarHopsReset, invariant="hops_within_bounds", phrase="fewer than the distance"),
    Bug("star: hop counted twice", "star", "torus:4x4", load={"lam": 0.002}, params={"lam_unicast": 0.05},
        node=_StarHopsTwice, invariant="shortest_paths", phrase="declares shortest paths"),
    Bug("star: unicast delivered at its destination's neighbour", "star", "torus:4x4", load={"lam": 0.002},
        params={"lam_unicast": 0.05}, node=_StarDeliversEarly,
        invariant="delivered_at_destination", phrase="was delivered at node"),
    Bug("star: priority classes inverted", "star", "torus:4x4", load={"rho": 0.8},
        patches=((star_rule, "broadcast_class", _broadcast_class_inverted),),
        invariant="service_order", phrase="declared order serves first"),
    Bug("star: a node stops early", "star", "torus:4x4", load={"rho": 0.5}, node=_StarQuits,
        invariant="liveness", phrase="had returned from run()"),
    Bug("star: unicasts the long way round, hops reported as the distance", "star", "torus:5x5",
        load={"lam": 0.002}, params={"lam_unicast": 0.05}, node=_StarHopsFromDistance,
        patches=((star_plans, "unicast_next_hop", _next_hop_off_by_one),),
        invariant="hops_witnessed", phrase="was seen sent"),
    Bug("star: fcfs queues served newest first", "star", "torus:4x4", load={"rho": 0.8},
        params={"discipline": "fcfs"}, node=_StarLifo,
        invariant="service_order", phrase="declared order serves first"),
    Bug("star: unicasts stamped with the slot after they are queued", "star", "torus:4x4", load={"lam": 0.002},
        params={"lam_unicast": 0.05}, node=_StarLateUnicastStamps, invariant="littles_law", phrase="Little's law"),
    # hypercube broadcasts
    Bug("bcast-balanced: largest label first", "bcast-balanced", "hypercube:4", load={"rho": 0.7},
        node=_BalancedLargestFirst, invariant="service_order", phrase="declared order serves first"),
    Bug("bcast-dtree: largest label first", "bcast-dtree", "hypercube:4", load={"rho": 0.7},
        params={"discipline": "label"}, node=_DtreeLargestFirst,
        invariant="service_order", phrase="declared order serves first"),
    Bug("bcast-simple: birth stamped with the slot it happened in", "bcast-simple", "hypercube:4", load={"rho": 0.4},
        node=_BirthAtSlotStart, invariant="birth_stamps", phrase="as born at time"),
    Bug("bcast-simple: births taken one slot early", "bcast-simple", "hypercube:4", load={"rho": 0.4},
        node=_BirthOneSlotEarly, invariant="birth_stamps", phrase="as born at time"),
    Bug("bcast-simple: a node stops early", "bcast-simple", "hypercube:4", load={"rho": 0.4}, node=_SimpleQuits,
        invariant="liveness", phrase="had returned from run()"),
    Bug("bcast-simple: tree lookup off by one bit", "bcast-simple", "hypercube:4", load={"rho": 0.4},
        patches=((simple_mod, "unbalanced_children", _children_of_neighbour),),
        invariant="exactly_once", phrase=""),
    Bug("bcast-simple: birth stamped with the slot it became sendable in", "bcast-simple", "hypercube:4",
        load={"rho": 0.4}, node=_BirthAtSlotEnd, invariant="birth_epochs", phrase="standard errors"),
    Bug("bcast-dtree: Q taken after the slot's transmissions", "bcast-dtree", "hypercube:4", load={"rho": 0.5},
        node=_DtreeQAfterSends, invariant="littles_law", phrase="Little's law"),
    Bug("bcast-indirect: Q without the packets on virtual arcs", "bcast-indirect", "hypercube:4", load={"rho": 0.4},
        node=_IndirectQWithoutVirtualArcs, invariant="littles_law", phrase="Little's law"),
    Bug("bcast-simple: Q counted once per port", "bcast-simple", "hypercube:4", load={"rho": 0.4},
        node=_SimpleQPerPort, invariant="littles_law", phrase="Little's law"),
    Bug("bcast-indirect: Rule A's tree choice skewed (last tree never drawn)", "bcast-indirect", "hypercube:4",
        load={"rho": 0.4}, node=_indirect_skewed, slots=2200, warmup=200,
        invariant="theory_agreement", phrase="differs from the exact model"),
    Bug("bcast-indirect: Rule F's coin stuck (B1 always first)", "bcast-indirect", "hypercube:4", load={"rho": 0.4},
        node=_indirect_coin_stuck, slots=300, invariant="choices", phrase="choice 'rule_f'"),
    # many-to-one greedy
    Bug("m2o-greedy: nearest-first instead of farthest-first", "m2o-greedy", "mesh:8x8",
        params={"workload": "uniform", "order": "farthest-first"}, node=_NearestFirst, slots=400,
        invariant="service_order", phrase="declared order serves first"),
    Bug("m2o-greedy: the source counts itself as a hop", "m2o-greedy", "mesh:8x8", params={"workload": "uniform"},
        node=_SourceCountsItself, slots=400, invariant="shortest_paths", phrase="declares shortest paths"),
    Bug("m2o-greedy: delivered one hop early", "m2o-greedy", "mesh:8x8", params={"workload": "uniform"},
        node=_DeliversNextDoor, slots=400, invariant="delivered_at_destination", phrase="was delivered at node"),
    Bug("m2o-greedy: a node returns when its queues are empty", "m2o-greedy", "mesh:8x8",
        params={"workload": "uniform"}, node=_QuitsWhenEmpty, slots=400,
        invariant="liveness", phrase="had returned from run()"),
    Bug("m2o-greedy: dimension order reversed", "m2o-greedy", "mesh:8x8", params={"workload": "uniform"},
        patches=((greedy_mod, "next_port", _next_port_reversed),), slots=400,
        invariant="declared_route", phrase="dimension-order"),
    Bug("m2o-greedy: fifo queues served newest first", "m2o-greedy", "mesh:8x8",
        params={"workload": "all-to-one"}, node=_GreedyLifo, slots=400,
        invariant="fifo_order", phrase="declares FIFO"),
    # partial exchange
    Bug("partial-exchange: staircase routes instead of one turn", "partial-exchange", "mesh:6x6",
        patches=((exchange_rule, "next_hop", _next_hop_staircase),), slots=400,
        invariant="declared_route", phrase="one-turn"),
]

#: invariants judged on the whole run: their problem is a sentence of their own, not a first packet
WHOLE_RUN = frozenset({"birth_epochs", "choices", "littles_law", "theory_agreement"})


def _plant(bug: Bug, monkeypatch: pytest.MonkeyPatch) -> None:
    for module, attr, value in bug.patches:
        monkeypatch.setattr(module, attr, value)
    if bug.node is not None:
        monkeypatch.setitem(SCHEMES, bug.scheme, replace(SCHEMES[bug.scheme], node=bug.node))
    # STAR's plans are cached per shape: none may outlive a patch (_fresh_star_plans clears again after the test)
    star_plans.plan_book.cache_clear()
    # deflection's arrival laws are cached per run inputs: a planted run gets a cache of its own
    monkeypatch.setattr(deflection_node, "_segments", functools.lru_cache(maxsize=16)(deflection_node._segments.__wrapped__))


def _run(scheme: str, topology: str, load: dict[str, float], params: dict[str, Any], slots: int,
         warmup: int = 0) -> Any:
    """The seeded run every planted bug, and every clean counterpart, is judged on."""
    return run(RunSpec(scheme, topology, params=params, load=load, slots=slots, warmup=warmup, seed=1))


def run_bug(bug: Bug) -> Any:
    return _run(bug.scheme, bug.topology, bug.load, bug.params, bug.slots, bug.warmup)


def failing(result: Any) -> dict[str, Any]:
    """The invariants a result fails, by name."""
    return {k: v for k, v in result.invariants.items() if isinstance(v, dict) and not v.get("ok", False)}


@pytest.fixture(autouse=True)
def _fresh_star_plans():
    """STAR's plan cache empty before every test and again after it, once monkeypatch has undone the test's
    patches (autouse: set up before, so torn down after, monkeypatch): a planted bug's plans reach no later test."""
    star_plans.plan_book.cache_clear()
    yield
    star_plans.plan_book.cache_clear()


@pytest.mark.parametrize("bug", [
    pytest.param(b, id=b.name, marks=pytest.mark.xfail(strict=True, reason=b.missed) if b.missed else ())
    for b in BUGS])
def test_planted_bug_is_caught(bug, monkeypatch):
    """The run's invariants fail, and the failing invariant names the problem."""
    _plant(bug, monkeypatch)
    result = run_bug(bug)
    bad = failing(result)
    assert not result.invariants["ok"], f"{bug.name}: every invariant holds"
    assert bug.invariant in bad, f"{bug.name}: {bug.invariant} holds; failing: {sorted(bad)}"
    if bug.invariant in WHOLE_RUN:
        assert bug.phrase in bad[bug.invariant].get("problem", ""), (bug.name, bad[bug.invariant])
        return
    first = bad[bug.invariant].get("first")
    if bug.phrase:
        assert first is not None and bug.phrase in first["problem"], (bug.name, first)
        assert {"slot", "node", "packet"} <= set(first), first


def test_the_suite_plants_at_least_twenty_bugs_across_five_families():
    assert len(BUGS) >= 20
    assert {b.scheme.split("-")[0] for b in BUGS} >= {"deflection", "star", "bcast", "m2o", "partial"}
    caught = [b for b in BUGS if not b.missed]
    assert len(caught) >= 20


def test_every_planted_bug_is_expected_caught():
    """The catch rate the docs state (docs/explanation/validator.md): every bug planted is caught."""
    assert [b.name for b in BUGS if b.missed] == []
    assert len(BUGS) == 38


@pytest.mark.parametrize("scheme,topology,load,params", [
    ("deflection", "hypercube:4", {"offered": 1.0}, {}),
    ("deflection", "hypercube:4", {"lam": 1.2}, {}),
    ("star", "torus:5x5", {"rho": 0.6}, {"lam_unicast": 0.05}),
    ("star", "torus:4x4", {"rho": 0.6}, {"lam_unicast": 0.05, "classes": 3}),
    ("bcast-balanced", "hypercube:4", {"rho": 0.7}, {}),
    ("bcast-dtree", "hypercube:4", {"rho": 0.7}, {"discipline": "label"}),
    ("bcast-simple", "hypercube:4", {"rho": 0.4}, {}),
    ("m2o-greedy", "mesh:8x8", {}, {"workload": "uniform", "order": "farthest-first"}),
    ("m2o-greedy", "mesh:8x8", {}, {"workload": "uniform"}),
    ("deflection", "hypercube:4", {"lam": 1.0}, {}),
    ("star", "torus:4x4", {"rho": 0.8}, {"discipline": "fcfs"}),
    ("m2o-greedy", "mesh:8x8", {}, {"workload": "all-to-one"}),
    ("partial-exchange", "mesh:6x6", {}, {}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.4}, {}),
])
def test_the_same_runs_without_the_bugs_pass_every_check(scheme, topology, load, params):
    """The runs the bugs are planted in, unplanted: every invariant holds (no check cries wolf)."""
    slots = {"m2o-greedy": 400, "partial-exchange": 400, "bcast-indirect": 2200}.get(scheme, 120)
    result = _run(scheme, topology, load, params, slots, 200 if scheme == "bcast-indirect" else 0)
    assert result.invariants["ok"], failing(result)


def test_a_node_that_asks_to_sleep_into_the_past_is_told_so(monkeypatch):
    """idle(until=slot) names the rule it broke: the slot asked for has already begun."""

    class SleepsNow(SimpleNode):
        def next_wake(self) -> int | None:
            return self.ctx.slot

    monkeypatch.setitem(SCHEMES, "bcast-simple", replace(SCHEMES["bcast-simple"], node=SleepsNow))
    with pytest.raises(NodeFailure, match=r"asked to sleep until slot (\d+), which is the current slot"):
        run(RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.1}, slots=30, warmup=0, seed=1))
