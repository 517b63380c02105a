"""Checks that come with the kit: what a correct run of any scheme must show, beyond conservation.

Conservation and exactly-once say that nothing is lost; they do not say that a packet went
where it should, by the way it should, at the time it should. The checks here do, from the
events nodes already record (with the packet's identity) and from the topology alone --
never from what a node says it did. Each is an invariant of the run's result, a dict with
``ok``, how many events it ``checked``, its ``violations`` and, when there are any, the
``first`` (smallest slot, then node, then packet: the same whatever order a slot's events
come in) with a ``problem`` sentence naming the packet, the node and the slot.

Observer side (reporters own them):

* :class:`PathCheck` -- unicast deliveries: ``delivered_at_destination`` (the node that
  delivers a packet is its destination); ``hops_within_bounds`` (hops at least the topology
  distance from source to destination, of the same parity on a bipartite topology, and at
  most the slots the packet lived); ``shortest_paths`` where the scheme declares that its
  packets take shortest paths (hops equal to the distance).
* :class:`BirthCheck` -- ``birth_stamps``: a packet recorded as born in slot ``t`` carries a
  birth time in ``(t-1, t]`` (Poisson births, §2.1.1(b) of Stamoulis & Tsitsiklis; under
  faults only ``<= t``: a node a stall kept asleep takes its births late), and a broadcast
  completes no earlier than its origin's eccentricity after its first slot.
* :class:`Liveness` -- ``liveness``: with no fault in the schedule, no message reaches a
  node whose ``run()`` has returned (the fabric books those ``node_finished``; that is a
  scheme's doing, never a fault's).
* :class:`OrderCheck` -- ``service_order``: the ``disorder`` events of :class:`ServiceOrder`.
* :class:`HopWitness` -- ``hops_witnessed``: the observer's own count of a packet's hops,
  from the sends it saw (a scheme that declares :attr:`~slotnet.schemes.Scheme.follow`
  has every send of its packets reported to the reporter as a ``hop`` event, by the
  orchestrator, not by the node), against the count the node reports at delivery; and,
  where the scheme declares the shape of its routes (``dimension-order``: the dimensions
  crossed never decrease; ``one-turn``: the path changes dimension at most once), that
  shape, hop by hop (``declared_route``); where it declares one FIFO queue per out-port,
  that each port serves packets in the order they reached the node (``fifo_order``).

Node side:

* :class:`FifoOrder` -- a queue declared first come, first served: a packet served while
  one queued strictly before it waits at the head of the same queue is a ``disorder``.
* :class:`ServiceOrder` -- a scheme's declared service order (smallest key first), checked
  by its queue each time a port serves a packet against the packet the queue would serve
  next; a packet served while one its declaration ranks strictly before it waits on the
  same port is recorded as a ``disorder`` event (:data:`CHECK_EVENTS`).

All checks are O(1) per event; only :class:`HopWitness` keeps per-packet state (one entry
per packet on its way, dropped at its delivery).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Geometry, NodeContext

from .._base import HOP_EVENT, HOP_FIELDS
from .._properties import Tally
from ._wire import int_from_wire, int_to_wire

__all__ = [
    "CHECK_EVENTS",
    "HOP_EVENTS",
    "ROUTES",
    "BirthCheck",
    "Book",
    "FifoOrder",
    "HopWitness",
    "Liveness",
    "OrderCheck",
    "PathCheck",
    "ServiceOrder",
    "ShardHops",
    "bipartite",
    "eccentricity",
]

#: The kit's check events (kind -> fields): ``disorder`` -- a port served ``served`` (its
#: declared key ``served_key``) while ``waiting`` (key ``waiting_key``) ranked before it.
CHECK_EVENTS: Mapping[str, tuple[str, ...]] = {"disorder": ("port", "served", "served_key", "waiting", "waiting_key")}

#: The event the orchestrator records for every send of a followed packet (a scheme with
#: :attr:`~slotnet.schemes.Scheme.follow`): the out-port and the packet's identity
#: ``(source, seq)``, as ``follow(message)`` names it. Never recorded by a node.
HOP_EVENTS: Mapping[str, tuple[str, ...]] = {HOP_EVENT: HOP_FIELDS}

#: Route shapes a scheme may declare for :class:`HopWitness`.
ROUTES = ("dimension-order", "one-turn")


#: Kinds whose shape the closed forms below know (a ring is a torus of one dimension); any
#: other (a general graph) is searched.
_GRIDS = ("hypercube", "torus", "mesh", "ring")


def bipartite(topology: Geometry) -> bool:
    """Whether every cycle of the topology is even (hypercubes, meshes, tori of even sides;
    a general graph 2-coloured by search): then every walk between two nodes has the
    parity of their distance."""
    if topology.kind not in _GRIDS:
        return _two_colourable(topology)
    return topology.kind in ("hypercube", "mesh") or all(n % 2 == 0 for n in topology.sides)


def _two_colourable(topology: Geometry) -> bool:
    colour = [-1] * topology.n_nodes
    for root in range(topology.n_nodes):
        if colour[root] >= 0:
            continue
        colour[root] = 0
        todo = [root]
        while todo:
            v = todo.pop()
            for p in topology.ports(v):
                w = p.neighbour
                if colour[w] < 0:
                    colour[w] = 1 - colour[v]
                    todo.append(w)
                elif colour[w] == colour[v]:
                    return False
    return True


def eccentricity(topology: Geometry, v: int) -> int:
    """The largest distance from ``v`` to any node (a broadcast from ``v`` needs at least this many hops)."""
    if topology.kind not in _GRIDS:
        return max(topology.distance(v, w) for w in range(topology.n_nodes))
    if topology.wrap:  # vertex-transitive: every node's is the diameter
        return sum(n // 2 for n in topology.sides)
    return sum(max(c, n - 1 - c) for c, n in zip(topology.coords(v), topology.sides))


class Book(Tally):
    """One invariant's violations: how many, and the first by (slot, node, packet, problem) --
    the same tally a stated property keeps (:class:`slotnet.schemes.kit.properties.Tally`).

    ``keep``: also keep every violation, in the order found (:attr:`found`), for a kit
    property judged by the same check (:class:`~slotnet.schemes.kit.properties.ShortestPaths`).
    """

    __slots__ = ("found",)

    def __init__(self, keep: bool = False) -> None:
        super().__init__(_order)
        self.found: list[tuple[int, int, tuple[Any, ...], str]] | None = [] if keep else None

    def add(self, slot: int, node: int, packet: tuple[Any, ...], problem: str) -> None:  # type: ignore[override]
        """Count a violation; keep it if it is the first so far (whatever the events' order)."""
        Tally.add(self, (slot, node, packet, problem))
        if self.found is not None:
            self.found.append((slot, node, packet, problem))

    def result(self, ok: bool | None = None, **extra: Any) -> dict[str, Any]:
        """The invariant's dict: ``ok`` (no violation, unless given), ``checked``, ``violations``, ``first``."""
        out: dict[str, Any] = {"ok": self.count == 0 if ok is None else ok, "checked": self.checked,
                               "violations": self.count, **extra}
        if self.first is not None:
            slot, node, packet, problem = self.first
            out["first"] = {"slot": slot, "node": node, "packet": list(packet), "problem": problem}
        return out


def _order(key: tuple[int, int, tuple[Any, ...], str]) -> tuple[int, int, str, str]:
    return key[0], key[1], repr(key[2]), key[3]


def _as_packet(name: Any) -> tuple[Any, ...]:
    """A packet's name as a tuple: a sequence of fields (a list once it crossed the wire),
    or the one value a scheme's own ``name`` gave."""
    return tuple(name) if isinstance(name, (list, tuple)) else (name,)


def _name(packet: tuple[Any, ...], what: str = "packet") -> str:
    """``packet (4, 9)``; ``an unnamed packet`` for an empty name."""
    return f"{what} (" + ", ".join(map(str, packet)) + ")" if packet else f"an unnamed {what}"


class PathCheck:
    """Unicast deliveries checked against the topology (see the module docstring).

    Args:
        topology: the run's topology (``Setup.topology``).
        shortest: the scheme declares that every packet takes a shortest path.
        exact_hops: the hop counts handed to :meth:`delivered` are counts of links crossed
            (parity holds whatever the faults); False where they are derived from the
            packet's lifetime (a bufferless scheme), which a ``delay`` fault lengthens, so
            parity is then checked only in a fault-free run.
        faults: the run's schedule holds a fault (``Setup.faults``).
        keep: keep every violation (``Book.found``), not only the first: the kit's
            :class:`~slotnet.schemes.kit.properties.ShortestPaths` property is this check, fed
            from the observer's record of messages.
    """

    __slots__ = ("topology", "shortest", "parity", "at_dest", "bounds", "paths", "_dist")

    def __init__(self, topology: Geometry, *, shortest: bool = False, exact_hops: bool = True,
                 faults: bool = False, keep: bool = False) -> None:
        self.topology = topology
        self.shortest = shortest
        self.parity = bipartite(topology) and (exact_hops or not faults)
        self.at_dest = Book(keep)
        self.bounds = Book(keep)
        self.paths = Book(keep)
        self._dist: Callable[[int, int], int] = topology.distance

    def delivered(self, node: int, slot: int, birth: float, hops: int, packet: tuple[Any, ...],
                  source: int, dest: int) -> None:
        """A packet from ``source`` to ``dest`` (named ``packet``) delivered at ``node`` in
        ``slot`` after ``hops`` hops; born at ``birth`` (first sendable in slot ⌈birth⌉)."""
        self.at_dest.checked += 1
        if node != dest:
            self.at_dest.add(slot, node, packet, f"{_name(packet)} bound for node {dest} was delivered at "
                                                 f"node {node} in slot {slot}")
        dist = self._dist(source, dest)
        lived = slot - math.ceil(birth)
        self.bounds.checked += 1
        if hops < dist:
            self.bounds.add(slot, node, packet, f"{_name(packet)} from {source} to {dest} reports {hops} "
                                                f"hops, fewer than the distance {dist} (slot {slot}, node {node})")
        elif hops > lived:
            self.bounds.add(slot, node, packet, f"{_name(packet)} reports {hops} hops but lived only {lived} "
                                                f"slots (born {birth}, delivered in slot {slot} at node {node})")
        elif self.parity and (hops - dist) & 1:
            self.bounds.add(slot, node, packet, f"{_name(packet)} from {source} to {dest} reports {hops} "
                                                f"hops on a bipartite topology where every path has the parity "
                                                f"of the distance {dist} (slot {slot}, node {node})")
        if self.shortest:
            self.paths.checked += 1
            if hops != dist:
                self.paths.add(slot, node, packet, f"{_name(packet)} from {source} to {dest} took {hops} "
                                                   f"hops where the scheme declares shortest paths of {dist} "
                                                   f"(slot {slot}, node {node})")

    def shard_state(self) -> list[Any]:
        """The books, as plain data (a shard's, for the coordinator: :meth:`merge_shards`)."""
        return [self.at_dest.shard_state(), self.bounds.shard_state(), self.paths.shard_state()]

    def merge_shards(self, states: Sequence[Sequence[Any]]) -> None:
        """Add the shards' :meth:`shard_state` to these books."""
        for book, mine in zip((self.at_dest, self.bounds, self.paths), zip(*states)):
            book.merge_shards(mine)

    def invariants(self) -> dict[str, Any]:
        out = {"delivered_at_destination": self.at_dest.result(), "hops_within_bounds": self.bounds.result()}
        if self.shortest:
            out["shortest_paths"] = self.paths.result()
        return out


class BirthCheck:
    """``birth_stamps``: births within their slot; broadcasts no faster than the topology allows.

    ``faults``: the run's schedule holds a fault; a birth may then be recorded late (a
    stalled node wakes after the slot its birth became sendable), never early.
    """

    __slots__ = ("topology", "book", "_ecc", "late_ok", "offset_sum", "offsets")

    #: births needed before their spread over the slot is judged, and the standard errors
    #: a mean offset may stray from 1/2 (six: a correct run trips it about twice in 10**9)
    EPOCHS_MIN, EPOCHS_SIGMAS = 50, 6.0

    def __init__(self, topology: Geometry, faults: bool = False) -> None:
        self.topology = topology
        self.book = Book()
        self._ecc: dict[int, int] = {}
        self.late_ok = faults
        #: the sum of ``tau - (slot - 1)`` over the births counted in :attr:`offsets`, in
        #: units of 2**-32 (an integer: the sum does not depend on the events' order)
        self.offset_sum = 0
        self.offsets = 0

    def ok(self, slot: int, tau: float) -> bool:
        """Whether a birth at ``tau`` may be recorded in ``slot`` (the fast test callers inline)."""
        return slot - 1 < tau <= slot or (self.late_ok and tau <= slot)

    def born(self, node: int, slot: int, packet: tuple[Any, ...], tau: float) -> None:
        """A packet recorded in ``slot`` as born at time ``tau`` (must be in ``(slot-1, slot]``)."""
        self.book.checked += 1
        if not self.ok(slot, tau):
            window = f"after slot {slot}" if self.late_ok else f"outside ({slot - 1}, {slot}]"
            self.book.add(slot, node, packet, f"{_name(packet)} recorded in slot {slot} as born at time {tau}, "
                                              f"{window} (a birth becomes sendable in the slot that ends its "
                                              f"interval)")

    def completed(self, origin: int, packet: tuple[Any, ...], tau: float, last: int) -> None:
        """A broadcast born at ``tau`` whose last copy was read in slot ``last``."""
        ecc = self._ecc.get(origin)
        if ecc is None:
            ecc = self._ecc[origin] = eccentricity(self.topology, origin)
        if last < math.ceil(tau) + ecc:
            self.book.add(last, origin, packet, f"{_name(packet, 'broadcast')} born at {tau} reached every node by "
                                                f"slot {last}, sooner than its origin's eccentricity {ecc} allows")

    def epochs(self) -> dict[str, Any]:
        """``birth_epochs``: the stamps are Poisson epochs, so where they fall in their slot is uniform.

        Given how many births a slot holds, a Poisson process places them independently and
        uniformly in it; so the offsets ``tau - (slot - 1)`` of a fault-free run are
        independent U(0, 1] draws, of mean 1/2 and standard error ``sqrt(1 / (12 n))``. A
        mean more than :attr:`EPOCHS_SIGMAS` standard errors from 1/2 means the stamps are
        not the epochs (e.g. every birth stamped with the end of its slot). Judged from
        :attr:`EPOCHS_MIN` births on, and only without faults (a stalled node takes its
        births late).
        """
        n = self.offsets
        out: dict[str, Any] = {"ok": True, "checked": n}
        if n:
            mean = self.offset_sum / (n * 4294967296.0)
            se = math.sqrt(1.0 / (12.0 * n))
            out["mean_offset"] = mean
            out["standard_errors"] = (mean - 0.5) / se
            if not self.late_ok and n >= self.EPOCHS_MIN and abs(mean - 0.5) > self.EPOCHS_SIGMAS * se:
                out["ok"] = False
                out["problem"] = (f"the {n} birth stamps sit on average at {mean:.3f} of their slot, "
                                  f"{abs(mean - 0.5) / se:.1f} standard errors from the 1/2 Poisson epochs "
                                  f"give (births stamped otherwise than at their epoch)")
        return out

    def shard_state(self) -> list[Any]:
        """The book and the offsets' sums, as plain data (a shard's: :meth:`merge_shards`)."""
        return [self.book.shard_state(), self.offsets, int_to_wire(self.offset_sum)]

    def merge_shards(self, states: Sequence[Sequence[Any]]) -> None:
        """Add the shards' :meth:`shard_state`: each judged its own nodes' births (the
        completions are judged where the shards' receptions meet: :meth:`completed`)."""
        self.book.merge_shards([st[0] for st in states])
        self.offsets += sum(st[1] for st in states)
        self.offset_sum += sum(int_from_wire(st[2]) for st in states)

    def invariants(self) -> dict[str, Any]:
        return {"birth_stamps": self.book.result(), "birth_epochs": self.epochs()}


class Liveness:
    """``liveness``: without faults, no message reaches a node that has stopped (``node_finished``)."""

    __slots__ = ("faults", "book")

    def __init__(self, faults: bool) -> None:
        self.faults = faults
        self.book = Book()

    def lost(self, slot: int, receiver: int, message: Any, cause: str) -> None:
        """A message the fabric booked lost (``on_lost``); only ``node_finished`` counts here."""
        if cause == "node_finished":
            packet = tuple(message[:2]) if isinstance(message, (list, tuple)) else ()
            self.book.add(slot, receiver, packet, f"node {receiver} had returned from run() when a message "
                                                  f"reached it in slot {slot}; no fault was scheduled, so a node "
                                                  f"must keep running while messages come for it")

    def shard_state(self) -> Any:
        """The book, as plain data (a shard's, for the coordinator: :meth:`merge_shards`)."""
        return self.book.shard_state()

    def merge_shards(self, states: Sequence[Any]) -> None:
        """Add the shards' :meth:`shard_state` to this book."""
        self.book.merge_shards(states)

    def invariants(self) -> dict[str, Any]:
        """Under faults the count is reported but not judged (a node may stop on purpose there)."""
        b = self.book
        out = b.result(ok=self.faults or b.count == 0)
        del out["checked"]
        out["messages_to_finished_nodes"] = out.pop("violations")
        if self.faults:
            out.pop("first", None)
        return {"liveness": out}


class OrderCheck:
    """``service_order``: the ``disorder`` events nodes record (see :class:`ServiceOrder`)."""

    __slots__ = ("book",)

    def __init__(self) -> None:
        self.book = Book()

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {"disorder": self.disorder}

    def disorder(self, node: int, slot: int, port: int, served: Any, served_key: Any, waiting: Any,
                 waiting_key: Any) -> None:
        packet, other = _as_packet(served), _as_packet(waiting)
        self.book.add(slot, node, packet,
                      f"node {node} served {_name(packet)} (key {served_key}) on port {port} in slot "
                      f"{slot} while {_name(other)} (key {waiting_key}) waited there, which the scheme's "
                      f"declared order serves first")

    def shard_state(self) -> Any:
        """The book, as plain data (a shard's: :meth:`merge_shards`)."""
        return self.book.shard_state()

    def merge_shards(self, states: Sequence[Any]) -> None:
        """Add the shards' :meth:`shard_state` (a node's ``disorder`` events are its shard's)."""
        self.book.merge_shards(states)

    def invariants(self) -> dict[str, Any]:
        out = self.book.result()
        del out["checked"]
        return {"service_order": out}


class FifoOrder:
    """A queue declared first come, first served, checked by the queue each time it serves.

    The queue stamps each packet when it queues it (a slot, or a running count) and, on
    serving one, hands :meth:`served` the served packet's stamp and the stamp of the
    packet now at the head of the same queue: a head stamped strictly earlier waited
    while a later one was served, which a FIFO queue never does, and the node records a
    ``disorder`` event (judged by :class:`OrderCheck` as ``service_order``). Callers test
    ``waiting_stamp < stamp`` inline and call only on a breach.
    """

    __slots__ = ("name", "_record")

    def __init__(self, ctx: NodeContext, name: Callable[[Any], tuple[Any, ...]] = lambda m: tuple(m[:2])) -> None:
        self.name = name
        self._record = ctx.record

    def served(self, port: int, message: Any, stamp: Any, waiting: Any, waiting_stamp: Any) -> bool:
        """False (and a ``disorder`` event) when ``waiting`` was queued before ``message``."""
        if waiting is None or not waiting_stamp < stamp:
            return True
        self._record("disorder", port, self.name(message), stamp, self.name(waiting), waiting_stamp)
        return False


class ServiceOrder:
    """A node's declared service order, checked each time a port serves a packet.

    ``key(message, port)`` is the order the paper prescribes for a packet waiting on
    ``port`` (smallest first), written from the paper, not computed by the code that
    queues the packet; ``name(message)`` the packet's identity for the report. A queue
    calls :meth:`served` with the packet it served and a packet still waiting on that
    port -- the one it would serve next, or the head of another priority class -- (or
    None): if the declaration ranks the waiting one strictly before the served one, the
    queue broke the declared order and the node records a ``disorder`` event. One
    comparison per packet served (per class, for priority classes).
    """

    __slots__ = ("key", "name", "_record")

    def __init__(self, ctx: NodeContext, key: Callable[[Any, int], Any],
                 name: Callable[[Any], tuple[Any, ...]] = lambda m: tuple(m[:2])) -> None:
        self.key = key
        self.name = name
        self._record = ctx.record

    def served(self, port: int, message: Any, waiting: Any) -> bool:
        """Check ``message``, just served on ``port``, against ``waiting``; False (and a
        ``disorder`` event) when the declared order puts ``waiting`` first."""
        if waiting is None:
            return True
        k, k_waiting = self.key(message, port), self.key(waiting, port)
        if k_waiting < k:
            self._record("disorder", port, self.name(message), k, self.name(waiting), k_waiting)
            return False
        return True


def port_dimension(topology: Geometry) -> Callable[[int], int]:
    """Out-port -> the dimension it crosses (port ``k`` of a hypercube, ``2k``/``2k+1`` of a grid)."""
    if topology.kind not in ("torus", "mesh", "ring"):  # a hypercube's port k, a graph's port p: its own
        return int
    return lambda port: port >> 1


class HopWitness:
    """``hops_witnessed`` and ``declared_route``: a packet followed from send to send.

    The orchestrator reports every send of a packet the scheme names with ``follow``
    (:data:`HOP_EVENTS`); :meth:`hop` counts them per packet and follows the dimensions
    crossed. At the delivery the reporter calls :meth:`delivered` with the hop count the
    node reports: the two must agree. ``route`` (one of :data:`ROUTES`, or None) is the
    shape the scheme declares its paths have, checked at every hop.

    A packet whose delivery the witness saw no send of (a packet delivered where it was
    born) is not judged. Under faults the witness stands down (each check reads
    ``judged: false``, with no counts): a ``dup`` fault's copy travels under its original's
    name (its sends add to the same count, its route seems to restart where the original
    was delivered), and a restarted node re-sends, so what it would count depends on the
    order one slot's events arrive in, which differs between one process and shards.
    """

    __slots__ = ("route", "faults", "book", "shape", "fifo", "_dim", "_seen", "_served")

    def __init__(self, topology: Geometry, route: str | None = None, faults: bool = False,
                 fifo: bool = False) -> None:
        if route is not None and route not in ROUTES:
            raise ValueError(f"unknown route shape {route!r} (known: {', '.join(ROUTES)})")
        self.route = route
        self.faults = faults
        self.book = Book()
        self.shape = Book()
        #: the scheme declares one FIFO queue per out-port for the packets followed (and no
        #: other traffic shares it): ``fifo_order`` is judged (None: not declared)
        self.fifo = Book() if fifo else None
        self._dim = port_dimension(topology)
        #: (source, seq) -> (hops seen, last dimension, dimension changes, slot of the last send)
        self._seen: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        #: (node, port) -> the largest arrival stamp among the packets that port has served
        self._served: dict[tuple[int, int], int] = {}

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {HOP_EVENT: self.hop}

    def hop(self, node: int, slot: int, port: int, source: int, seq: int) -> None:
        """Packet ``(source, seq)`` sent on ``port`` by ``node`` in ``slot``."""
        if self.faults:
            return
        key = (source, seq)
        dim = self._dim(port)
        was = self._seen.get(key)
        if self.fifo is not None:
            # a FIFO port serves packets in the order they reached the node: the slot each
            # was sent to it (-1: its own packet, there from the start) never decreases
            self._first_come(node, slot, port, key, -1 if was is None else was[3])
        if was is None:
            self._seen[key] = (1, dim, 0, slot)
            return
        hops, last, turns, _ = was
        if dim != last:
            turns += 1
            if self.route is not None:
                self.shape.checked += 1
                if self.route == "dimension-order" and dim < last:
                    self.shape.add(slot, node, key, f"{_name(key)} crossed dimension {dim} at node {node} in "
                                                    f"slot {slot} after dimension {last}; the scheme declares "
                                                    f"dimension-order routes (dimension 0 first, then 1, ...)")
                elif self.route == "one-turn" and turns > 1:
                    self.shape.add(slot, node, key, f"{_name(key)} turned a second time (to dimension {dim}) "
                                                    f"at node {node} in slot {slot}; the scheme declares one-turn "
                                                    f"routes")
        self._seen[key] = (hops + 1, dim, turns, slot)

    def _first_come(self, node: int, slot: int, port: int, key: tuple[int, int], came: int) -> None:
        fifo = self.fifo
        assert fifo is not None
        fifo.checked += 1
        before = self._served.get((node, port), -1)
        if came < before:
            fifo.add(slot, node, key, f"node {node} served {_name(key)} on port {port} in slot {slot}, "
                                      f"though it arrived (sent in slot {came}) before a packet the port had "
                                      f"already served (sent in slot {before}); the scheme declares FIFO queues")
        else:
            self._served[(node, port)] = came

    def delivered(self, node: int, slot: int, source: int, seq: int, hops: int) -> None:
        """Packet ``(source, seq)`` delivered at ``node`` in ``slot``; the node says after ``hops`` hops."""
        if self.faults:
            return
        was = self._seen.pop((source, seq), None)
        if was is None:
            return
        self.book.checked += 1
        if was[0] != hops:
            self.book.add(slot, node, (source, seq), f"{_name((source, seq))} was delivered at node {node} in "
                                                     f"slot {slot} reporting {hops} hops, but was seen sent "
                                                     f"{was[0]} times")

    def in_transit(self) -> int:
        """Followed packets sent at least once and not delivered (in flight, queued, or lost)."""
        return len(self._seen)

    def merge_shards(self, states: Sequence[Sequence[Any]]) -> None:
        """Judge every delivery against its packet's sends over all shards (their
        :meth:`ShardHops.shard_state`), as one process does (fault-free: a delivered packet is
        sent no more; one delivered unsent is not judged)."""
        sends: dict[tuple[int, int], int] = {}
        for seen, _ in states:
            for o, q, n in seen:
                sends[(o, q)] = sends.get((o, q), 0) + n
        for _, deliveries in states:
            for slot, node, source, seq, hops in deliveries:
                n = sends.pop((source, seq), 0)
                if n:
                    self._seen[(source, seq)] = (n, 0, 0, slot)
                    self.delivered(node, slot, source, seq, hops)
        for key, n in sends.items():  # still on their way
            self._seen[key] = (n, 0, 0, -1)

    def invariants(self) -> dict[str, Any]:
        judged = not self.faults
        out = {"hops_witnessed": self._verdict(self.book, judged)}
        if self.route is not None:
            out["declared_route"] = self._verdict(self.shape, judged, route=self.route)
        if self.fifo is not None:
            out["fifo_order"] = self._verdict(self.fifo, judged)
        return out

    @staticmethod
    def _verdict(book: Book, judged: bool, **extra: Any) -> dict[str, Any]:
        if not judged:
            return {"ok": True, "judged": False, **extra}
        return book.result(**extra)


class ShardHops(HopWitness):
    """:class:`HopWitness` on a shard of a sharded run: each packet's sends by the shard's
    nodes counted, the deliveries at them noted, and both handed over (:meth:`shard_state`)
    to the coordinator's witness, which judges the deliveries where the counts meet
    (:meth:`HopWitness.merge_shards`). Only the hop count merges: a declared route or FIFO
    order follows a packet send by send, across shards.
    """

    __slots__ = ("deliveries",)

    def __init__(self, topology: Geometry, faults: bool = False) -> None:
        super().__init__(topology, None, faults)
        #: ``(slot, node, source, seq, hops)`` of each delivery at the shard's nodes
        self.deliveries: list[tuple[int, int, int, int, int]] = []

    def hop(self, node: int, slot: int, port: int, source: int, seq: int) -> None:
        """Count a send of ``(source, seq)``."""
        if self.faults:
            return
        key = (source, seq)
        was = self._seen.get(key)
        self._seen[key] = (1 if was is None else was[0] + 1, 0, 0, slot)

    def delivered(self, node: int, slot: int, source: int, seq: int, hops: int) -> None:
        """Note a delivery, judged at the coordinator."""
        if not self.faults:
            self.deliveries.append((slot, node, source, seq, hops))

    def shard_state(self) -> list[Any]:
        """The sends per packet and the deliveries, as plain data."""
        return [[[o, q, was[0]] for (o, q), was in self._seen.items()], self.deliveries]
