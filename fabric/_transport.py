"""The in-process transport: the embedded default fabric.

A node sends through its :class:`Outlet`; the outlet enforces link capacity, encodes the
message to msgpack bytes (through :mod:`._codec`) and parks it with the receiver. At the
start of the slot it is due, :meth:`InProcessTransport.exchange` applies link and node
state and the message-fault pipeline, decodes, orders each inbox by in-port (so inboxes
never depend on the order in which Trio ran the senders) and hands the inboxes over.

Durations. Slots are ticks of the run's *quantum* (``q`` ticks per paper time unit,
default 1). A message of size ``s`` (paper units) needs ``u = s·q`` ticks of its link:
``u <= 1`` shares one tick with others up to a total of 1 and arrives next tick; a whole
``u > 1`` holds the link for ``u`` ticks and arrives ``u`` ticks later (:class:`TimedOutlet`).
At ``q = 1`` this is the plain slot model: at most one unit per link per slot, delivery
at ``t + 1``.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from ._clock import SlotClock
from ._codec import DECODE_ERRORS, decode, packer
from ._errors import CapacityError, FabricError
from ._faults import FaultSchedule
from ._ledger import FaultLedger
from ._protocol import Delivery
from ._topology import Topology

__all__ = ["InProcessTransport", "LostCallback", "Outlet", "TimedOutlet"]

from collections.abc import Callable

#: Called for every message a fault destroys: (slot, sender, port, receiver, message, cause).
LostCallback = Callable[[int, int, int, int, Any, str], None]

_by_port = itemgetter(0)
_EPS = 1e-9


class Outlet:
    """A node's sending side at quantum 1: ``send(port, message, size=1.0)``."""

    __slots__ = ("node", "_targets", "_stamp", "_load", "_park", "_clock", "_pack")

    def __init__(self, transport: InProcessTransport, node: int) -> None:
        topo = transport.topology
        self.node = node
        self._targets: list[tuple[int, int] | None] = [None] * topo.n_ports
        for p in range(topo.n_ports):
            nb = topo.neighbour(node, p)
            if nb is not None:
                self._targets[p] = (nb, topo.reverse_port(node, p))
        self._stamp = [-1] * topo.n_ports
        self._load = [0.0] * topo.n_ports
        self._park = transport.park
        self._clock = transport.clock
        self._pack = packer()

    def _target(self, port: int, slot: int) -> tuple[int, int]:
        try:
            target = self._targets[port] if port >= 0 else None
        except (IndexError, TypeError):
            target = None
        if target is None:
            raise FabricError(f"node {self.node} has no port {port!r} (slot {slot})")
        return target

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        """Put ``message`` on out-port ``port`` for delivery at the next slot.

        Args:
            port: the out-port index (see ``ctx.ports``).
            message: msgpack-encodable data; the receiver gets a decoded copy.
            size: the share of the link's per-slot capacity it uses, in (0, 1].

        Raises:
            FabricError: if the node has no such port or ``size`` is out of range.
            CapacityError: if the port's load in this slot would exceed 1.
        """
        slot = self._clock.slot
        try:  # the per-message hot path: _target inlined
            target = self._targets[port] if port >= 0 else None
        except (IndexError, TypeError):
            target = None
        if target is None:
            raise FabricError(f"node {self.node} has no port {port!r} (slot {slot})")
        if size == 1.0:
            stamp = self._stamp
            if stamp[port] == slot:
                raise CapacityError(self.node, port, slot, self._load[port] + 1.0)
            stamp[port] = slot
            self._load[port] = 1.0
        else:
            self._share(port, size, slot)
        self._park(target[0], target[1], self._pack(message))

    def _share(self, port: int, units: float, slot: int) -> None:
        if not 0.0 < units <= 1.0:
            raise FabricError(f"node {self.node}: message size must be in (0, 1], got {units!r} (slot {slot})")
        load = (self._load[port] if self._stamp[port] == slot else 0.0) + units
        if load > 1.0 + _EPS:
            raise CapacityError(self.node, port, slot, load)
        self._stamp[port] = slot
        self._load[port] = load

    def capacity_left(self, port: int) -> float:
        """Units ``port`` can still take in the current slot."""
        self._target(port, self._clock.slot)
        return 1.0 - self._load[port] if self._stamp[port] == self._clock.slot else 1.0


class TimedOutlet(Outlet):
    """A node's sending side at a quantum ``q > 1`` (see the module docstring)."""

    __slots__ = ("_q", "_busy", "_later")

    def __init__(self, transport: InProcessTransport, node: int) -> None:
        super().__init__(transport, node)
        self._q = transport.quantum
        self._busy = [0] * len(self._stamp)  # first tick at which the port is free again
        self._later = transport.park_later

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        """Put ``message`` (``size`` in paper time units) on ``port``.

        Raises:
            FabricError: no such port, or ``size·q`` neither <= 1 nor a whole number.
            CapacityError: the port is still busy, or this tick's share would exceed 1.
        """
        slot = self._clock.slot
        target = self._target(port, slot)
        if not 0.0 < size <= 1.0:
            raise FabricError(f"node {self.node}: message size must be in (0, 1], got {size!r} (slot {slot})")
        if self._busy[port] > slot:
            raise CapacityError(self.node, port, slot, 1.0 + size * self._q)
        units = size * self._q
        if units <= 1.0 + _EPS:
            self._share(port, min(units, 1.0), slot)
            self._park(target[0], target[1], self._pack(message))
            return
        ticks = round(units)
        if abs(units - ticks) > 1e-6:
            raise FabricError(f"node {self.node}: a message of size {size!r} takes {units:g} ticks at quantum "
                              f"{self._q}; sizes must be multiples of 1/{self._q} (slot {slot})")
        if self._stamp[port] == slot and self._load[port] > 0.0:
            raise CapacityError(self.node, port, slot, self._load[port] + units)
        self._stamp[port] = slot
        self._load[port] = 1.0
        self._busy[port] = slot + ticks
        self._later(slot + ticks, target[0], target[1], self._pack(message))

    def capacity_left(self, port: int) -> float:
        """Largest message size (paper units) ``port`` can start now: 0 while it is busy."""
        slot = self._clock.slot
        self._target(port, slot)
        if self._busy[port] > slot:
            return 0.0
        if self._stamp[port] == slot:
            return (1.0 - self._load[port]) / self._q
        return 1.0


class InProcessTransport:
    """All links of one topology, in one process."""

    def __init__(
        self,
        topology: Topology,
        clock: SlotClock,
        faults: FaultSchedule | None = None,
        seed: int = 0,
        on_lost: LostCallback | None = None,
        quantum: int = 1,
    ) -> None:
        self.topology = topology
        self.clock = clock
        self.faults = faults or FaultSchedule()
        self.seed = seed
        self.on_lost = on_lost
        self.quantum = quantum
        self._pending: list[list[tuple[int, bytes]] | None] = [None] * topology.n_nodes
        self._touched: list[int] = []
        self._later: dict[int, list[tuple[int, int, bytes]]] = {}  # due slot -> (receiver, in_port, bytes)
        self.alive = [True] * topology.n_nodes
        self._n_dead = 0
        self.down_links: set[tuple[int, int]] = set()  # (receiver, in_port) of links out of service
        self._stages = self.faults.message_stages()
        self.delivered = 0
        self.ledger = FaultLedger()

    def describe(self) -> dict[str, Any]:
        return {"kind": "inprocess"}

    def outlet(self, node: int) -> Outlet:
        """The sending side of ``node``."""
        return Outlet(self, node) if self.quantum == 1 else TimedOutlet(self, node)

    def park(self, receiver: int, in_port: int, data: bytes) -> None:
        """Hold ``data`` for ``receiver`` until the next slot (outlets call this)."""
        pend = self._pending[receiver]
        if pend is None:
            self._pending[receiver] = pend = []
            self._touched.append(receiver)
        pend.append((in_port, data))

    def park_later(self, due: int, receiver: int, in_port: int, data: bytes) -> None:
        """Hold ``data`` for ``receiver`` until slot ``due``."""
        self._later.setdefault(due, []).append((receiver, in_port, data))

    # -- link and node state --------------------------------------------------------------
    def set_alive(self, node: int, alive: bool) -> None:
        """Mark a node up or down; messages to a down node are lost ("node_down")."""
        if self.alive[node] != alive:
            self.alive[node] = alive
            self._n_dead += -1 if alive else 1

    def is_alive(self, node: int) -> bool:
        return self.alive[node]

    def lose_unread(self, node: int, message: Any, cause: str) -> None:
        """Account a delivered message its receiver never read (it crashed or finished)."""
        self.ledger.add("lost", cause)
        if self.on_lost is not None:
            self.on_lost(self.clock.slot, -1, -1, node, message, cause)

    def set_link(self, node: int, port: int, up: bool) -> None:
        """Take both directions of the link at (node, port) out of or into service."""
        nb = self.topology.neighbour(node, port)
        if nb is None:
            raise FabricError(f"node {node} has no port {port}")
        back = self.topology.reverse_port(node, port)
        for key in ((nb, back), (node, port)):
            if up:
                self.down_links.discard(key)
            else:
                self.down_links.add(key)

    # -- delivery -------------------------------------------------------------------------
    async def exchange(self, slot: int) -> list[Delivery]:
        """Deliver what is due at ``slot`` (see :meth:`deliver`)."""
        return self.deliver(slot)

    def deliver(self, slot: int) -> list[Delivery]:
        """Hand over what is due at ``slot``, as ``(receiver, inbox)`` pairs.

        Each inbox is a list of ``(in_port, message)`` ordered by in-port (messages that
        shared one link keep their send order).
        """
        if self._later and slot in self._later:
            for r, p, data in self._later.pop(slot):
                self.park(r, p, data)
        touched = self._touched
        if not touched:
            return []
        pending = self._pending
        out = []
        faulty = bool(self.down_links) or bool(self._stages) or self._n_dead > 0
        for r in touched:
            pend = pending[r]
            assert pend is not None
            pending[r] = None
            if len(pend) > 1:
                pend.sort(key=_by_port)
            if faulty:
                pend = self._filter(r, pend, slot - 1)
                if not pend:
                    continue
            try:
                inbox = [(p, decode(b)) for p, b in pend]
            except DECODE_ERRORS as exc:
                raise FabricError(f"node {r}: undecodable frame in slot {slot} ({type(exc).__name__}: {exc})") from None
            out.append((r, inbox))
            self.delivered += len(pend)
        touched.clear()
        return out

    def _filter(self, r: int, pend: list[tuple[int, bytes]], sent: int) -> list[tuple[int, bytes]]:
        # Messages are judged against the faults in force in the slot they were on the wire.
        stages = [s for s in self._stages if s.active(sent)]
        kept = []
        for k, (p, b) in enumerate(pend):
            cause = None
            if not self.alive[r]:
                cause = "node_down"
            elif (r, p) in self.down_links:
                cause = "link_down"
            else:
                for stage in stages:
                    cause = stage.judge(self.seed, sent, r, p, k)
                    if cause is not None:
                        break
            if cause is None:
                kept.append((p, b))
            else:
                self._lose(sent, r, p, b, cause)
        return kept

    def _lose(self, slot: int, r: int, in_port: int, data: bytes, cause: str) -> None:
        self.ledger.add("lost", cause)
        if self.on_lost is not None:
            sender = self.topology.neighbour(r, in_port)
            assert sender is not None
            port = self.topology.reverse_port(r, in_port)
            self.on_lost(slot, sender, port, r, decode(data), cause)

    def busy(self) -> bool:
        return bool(self._touched) or bool(self._later)

    def in_flight(self) -> list[tuple[int, int, Any]]:
        """Messages sent but not yet delivered, as ``(receiver, in_port, message)``."""
        out = [(r, p, decode(b)) for r in sorted(self._touched) for p, b in (self._pending[r] or [])]
        for due in sorted(self._later):
            out += [(r, p, decode(b)) for r, p, b in self._later[due]]
        return out
