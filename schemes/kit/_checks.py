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

Node side:

* :class:`ServiceOrder` -- a scheme's declared service order (smallest key first), checked
  by its queue each time a port serves a packet against the packet the queue would serve
  next; a packet served while one its declaration ranks strictly before it waits on the
  same port is recorded as a ``disorder`` event (:data:`CHECK_EVENTS`).

All checks are O(1) per event and keep no per-packet state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from slotnet.nodes import Geometry, NodeContext

__all__ = [
    "CHECK_EVENTS",
    "BirthCheck",
    "Book",
    "Liveness",
    "OrderCheck",
    "PathCheck",
    "ServiceOrder",
    "bipartite",
    "eccentricity",
]

#: The kit's check events (kind -> fields): ``disorder`` -- a port served ``served`` (its
#: declared key ``served_key``) while ``waiting`` (key ``waiting_key``) ranked before it.
CHECK_EVENTS: Mapping[str, tuple[str, ...]] = {"disorder": ("port", "served", "served_key", "waiting", "waiting_key")}


def bipartite(topology: Geometry) -> bool:
    """Whether every cycle of the topology is even (hypercubes, meshes, tori of even sides):
    then every walk between two nodes has the parity of their distance."""
    return topology.kind in ("hypercube", "mesh") or all(n % 2 == 0 for n in topology.sides)


def eccentricity(topology: Geometry, v: int) -> int:
    """The largest distance from ``v`` to any node (a broadcast from ``v`` needs at least this many hops)."""
    if topology.wrap:  # vertex-transitive: every node's is the diameter
        return sum(n // 2 for n in topology.sides)
    return sum(max(c, n - 1 - c) for c, n in zip(topology.coords(v), topology.sides))


class Book:
    """One invariant's violations: how many, and the first by (slot, node, packet, problem)."""

    __slots__ = ("checked", "count", "_first")

    def __init__(self) -> None:
        self.checked = 0
        self.count = 0
        self._first: tuple[int, int, tuple[Any, ...], str] | None = None

    def add(self, slot: int, node: int, packet: tuple[Any, ...], problem: str) -> None:
        """Count a violation; keep it if it is the first so far (whatever the events' order)."""
        self.count += 1
        key = (slot, node, packet, problem)
        if self._first is None or _order(key) < _order(self._first):
            self._first = key

    def result(self, ok: bool | None = None, **extra: Any) -> dict[str, Any]:
        """The invariant's dict: ``ok`` (no violation, unless given), ``checked``, ``violations``, ``first``."""
        out: dict[str, Any] = {"ok": self.count == 0 if ok is None else ok, "checked": self.checked,
                               "violations": self.count, **extra}
        if self._first is not None:
            slot, node, packet, problem = self._first
            out["first"] = {"slot": slot, "node": node, "packet": list(packet), "problem": problem}
        return out


def _order(key: tuple[int, int, tuple[Any, ...], str]) -> tuple[int, int, str, str]:
    return key[0], key[1], repr(key[2]), key[3]


def _name(packet: tuple[Any, ...]) -> str:
    return "(" + ", ".join(map(str, packet)) + ")" if packet else "a packet"


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
    """

    __slots__ = ("topology", "shortest", "parity", "at_dest", "bounds", "paths", "_dist")

    def __init__(self, topology: Geometry, *, shortest: bool = False, exact_hops: bool = True,
                 faults: bool = False) -> None:
        self.topology = topology
        self.shortest = shortest
        self.parity = bipartite(topology) and (exact_hops or not faults)
        self.at_dest = Book()
        self.bounds = Book()
        self.paths = Book()
        self._dist: Callable[[int, int], int] = topology.distance

    def delivered(self, node: int, slot: int, birth: float, hops: int, packet: tuple[Any, ...],
                  source: int, dest: int) -> None:
        """A packet from ``source`` to ``dest`` (named ``packet``) delivered at ``node`` in
        ``slot`` after ``hops`` hops; born at ``birth`` (first sendable in slot ⌈birth⌉)."""
        self.at_dest.checked += 1
        if node != dest:
            self.at_dest.add(slot, node, packet, f"packet {_name(packet)} bound for node {dest} was delivered at "
                                                 f"node {node} in slot {slot}")
        dist = self._dist(source, dest)
        lived = slot - math.ceil(birth)
        self.bounds.checked += 1
        if hops < dist:
            self.bounds.add(slot, node, packet, f"packet {_name(packet)} from {source} to {dest} reports {hops} "
                                                f"hops, fewer than the distance {dist} (slot {slot}, node {node})")
        elif hops > lived:
            self.bounds.add(slot, node, packet, f"packet {_name(packet)} reports {hops} hops but lived only {lived} "
                                                f"slots (born {birth}, delivered in slot {slot} at node {node})")
        elif self.parity and (hops - dist) & 1:
            self.bounds.add(slot, node, packet, f"packet {_name(packet)} from {source} to {dest} reports {hops} "
                                                f"hops on a bipartite topology where every path has the parity "
                                                f"of the distance {dist} (slot {slot}, node {node})")
        if self.shortest:
            self.paths.checked += 1
            if hops != dist:
                self.paths.add(slot, node, packet, f"packet {_name(packet)} from {source} to {dest} took {hops} "
                                                   f"hops where the scheme declares shortest paths of {dist} "
                                                   f"(slot {slot}, node {node})")

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

    __slots__ = ("topology", "book", "_ecc", "late_ok")

    def __init__(self, topology: Geometry, faults: bool = False) -> None:
        self.topology = topology
        self.book = Book()
        self._ecc: dict[int, int] = {}
        self.late_ok = faults

    def ok(self, slot: int, tau: float) -> bool:
        """Whether a birth at ``tau`` may be recorded in ``slot`` (the fast test callers inline)."""
        return slot - 1 < tau <= slot or (self.late_ok and tau <= slot)

    def born(self, node: int, slot: int, packet: tuple[Any, ...], tau: float) -> None:
        """A packet recorded in ``slot`` as born at time ``tau`` (must be in ``(slot-1, slot]``)."""
        self.book.checked += 1
        if not self.ok(slot, tau):
            window = f"after slot {slot}" if self.late_ok else f"outside ({slot - 1}, {slot}]"
            self.book.add(slot, node, packet, f"packet {_name(packet)} recorded in slot {slot} as born at time {tau}, "
                                              f"{window} (a birth becomes sendable in the slot that ends its "
                                              f"interval)")

    def completed(self, origin: int, packet: tuple[Any, ...], tau: float, last: int) -> None:
        """A broadcast born at ``tau`` whose last copy was read in slot ``last``."""
        ecc = self._ecc.get(origin)
        if ecc is None:
            ecc = self._ecc[origin] = eccentricity(self.topology, origin)
        if last < math.ceil(tau) + ecc:
            self.book.add(last, origin, packet, f"broadcast {_name(packet)} born at {tau} reached every node by "
                                                f"slot {last}, sooner than its origin's eccentricity {ecc} allows")

    def invariants(self) -> dict[str, Any]:
        return {"birth_stamps": self.book.result()}


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
        self.book.add(slot, node, tuple(served) if isinstance(served, (list, tuple)) else (served,),
                      f"node {node} served packet {_name(tuple(served))} (key {served_key}) on port {port} in slot "
                      f"{slot} while {_name(tuple(waiting))} (key {waiting_key}) waited there, which the scheme's "
                      f"declared order serves first")

    def invariants(self) -> dict[str, Any]:
        out = self.book.result()
        del out["checked"]
        return {"service_order": out}


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
