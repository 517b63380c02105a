"""The in-process transport: the embedded default fabric.

A node sends through its :class:`Outlet`; the outlet enforces link capacity (at most one
unit per directed link per slot), encodes the message to msgpack bytes and parks it with
the receiver. At the start of the next slot :meth:`InProcessFabric.deliver` applies link
faults, decodes, orders each inbox by in-port (so inboxes never depend on the order in
which Trio ran the senders) and hands the inboxes to the runtime.

The seam for other transports (a sharded fabric exchanging cross-shard traffic per slot
through a broker) is :meth:`deliver`: it is the only place messages leave the sending
side, so a transport that ships the parked bytes elsewhere changes nothing for schemes.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

import msgpack

from ._clock import SlotClock
from ._errors import CapacityError, FabricError
from ._faults import FaultSchedule, loss_draw
from ._topology import Topology

__all__ = ["InProcessFabric", "LostCallback", "Outlet"]

#: Called for every message a fault destroys: (slot, sender, port, receiver, message, cause).
LostCallback = Callable[[int, int, int, int, Any, str], None]

_by_port = itemgetter(0)
_EPS = 1e-9


class Outlet:
    """A node's sending side: ``send(port, message, size=1.0)``."""

    __slots__ = ("node", "_targets", "_stamp", "_load", "_pending", "_touched", "_clock", "_pack", "_fabric")

    def __init__(self, fabric: InProcessFabric, node: int) -> None:
        topo = fabric.topology
        self.node = node
        self._targets: list[tuple[int, int] | None] = [None] * topo.n_ports
        for p in range(topo.n_ports):
            nb = topo.neighbour(node, p)
            if nb is not None:
                self._targets[p] = (nb, topo.reverse_port(node, p))
        self._stamp = [-1] * topo.n_ports
        self._load = [0.0] * topo.n_ports
        self._pending = fabric._pending
        self._touched = fabric._touched
        self._clock = fabric.clock
        self._pack = msgpack.Packer().pack
        self._fabric = fabric

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
        try:
            target = self._targets[port]
        except (IndexError, TypeError):
            target = None
        if target is None:
            raise FabricError(f"node {self.node} has no port {port!r} (slot {slot})")
        if size == 1.0:
            if self._stamp[port] == slot:
                raise CapacityError(self.node, port, slot, self._load[port] + 1.0)
            self._stamp[port] = slot
            self._load[port] = 1.0
        else:
            if not 0.0 < size <= 1.0:
                raise FabricError(f"node {self.node}: message size must be in (0, 1], got {size!r} (slot {slot})")
            load = (self._load[port] if self._stamp[port] == slot else 0.0) + size
            if load > 1.0 + _EPS:
                raise CapacityError(self.node, port, slot, load)
            self._stamp[port] = slot
            self._load[port] = load
        receiver, in_port = target
        pend = self._pending[receiver]
        if pend is None:
            self._pending[receiver] = pend = []
            self._touched.append(receiver)
        pend.append((in_port, self._pack(message)))

    def port_load(self, port: int) -> float:
        """Units already sent on ``port`` in the current slot."""
        return self._load[port] if self._stamp[port] == self._clock.slot else 0.0


class InProcessFabric:
    """All links of one topology, in one process."""

    def __init__(
        self,
        topology: Topology,
        clock: SlotClock,
        faults: FaultSchedule | None = None,
        seed: int = 0,
        on_lost: LostCallback | None = None,
    ) -> None:
        self.topology = topology
        self.clock = clock
        self.faults = faults or FaultSchedule()
        self.seed = seed
        self.on_lost = on_lost
        self._pending: list[list[tuple[int, bytes]] | None] = [None] * topology.n_nodes
        self._touched: list[int] = []
        self.alive = [True] * topology.n_nodes
        self._n_dead = 0
        self.down_links: set[tuple[int, int]] = set()  # (receiver, in_port) of links out of service
        self.delivered = 0
        self.lost: dict[str, int] = {}

    def outlet(self, node: int) -> Outlet:
        """The sending side of ``node``."""
        return Outlet(self, node)

    # -- faults ---------------------------------------------------------------------
    def set_alive(self, node: int, alive: bool) -> None:
        """Mark a node up or down; messages to a down node are lost ("node_down")."""
        if self.alive[node] != alive:
            self.alive[node] = alive
            self._n_dead += -1 if alive else 1

    def lose_unread(self, node: int, message: Any, cause: str) -> None:
        """Account a delivered message its receiver never read (it crashed or finished)."""
        self.lost[cause] = self.lost.get(cause, 0) + 1
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

    # -- delivery -------------------------------------------------------------------
    def deliver(self) -> list[tuple[int, list[tuple[int, Any]]]]:
        """Hand over what was sent in the previous slot, as ``(receiver, inbox)`` pairs.

        Each inbox is a list of ``(in_port, message)`` ordered by in-port (messages that
        shared one link keep their send order).
        """
        touched = self._touched
        if not touched:
            return []
        pending = self._pending
        out = []
        faulty = bool(self.down_links) or bool(self.faults.loss) or self._n_dead > 0
        unpack = msgpack.unpackb
        for r in touched:
            pend = pending[r]
            assert pend is not None
            pending[r] = None
            if len(pend) > 1:
                pend.sort(key=_by_port)
            if faulty:
                pend = self._filter(r, pend)
                if not pend:
                    continue
            out.append((r, [(p, unpack(b, use_list=False, strict_map_key=False)) for p, b in pend]))
            self.delivered += len(pend)
        touched.clear()
        return out

    def _filter(self, r: int, pend: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        # Messages sent in the previous slot are judged against the faults in force then.
        slot = self.clock.slot - 1
        rate = self.faults.loss_rate(slot)
        kept = []
        for k, (p, b) in enumerate(pend):
            cause = None
            if not self.alive[r]:
                cause = "node_down"
            elif (r, p) in self.down_links:
                cause = "link_down"
            elif rate > 0.0 and loss_draw(self.seed, slot, r, p, k) < rate:
                cause = "loss"
            if cause is None:
                kept.append((p, b))
            else:
                self._lose(slot, r, p, b, cause)
        return kept

    def _lose(self, slot: int, r: int, in_port: int, data: bytes, cause: str) -> None:
        self.lost[cause] = self.lost.get(cause, 0) + 1
        if self.on_lost is not None:
            sender = self.topology.neighbour(r, in_port)
            assert sender is not None
            port = self.topology.reverse_port(r, in_port)
            self.on_lost(slot, sender, port, r, msgpack.unpackb(data, use_list=False, strict_map_key=False), cause)

    def in_flight(self) -> list[tuple[int, int, Any]]:
        """Messages sent but not yet delivered, as ``(receiver, in_port, message)``."""
        return [
            (r, p, msgpack.unpackb(b, use_list=False, strict_map_key=False))
            for r in sorted(self._touched)
            for p, b in (self._pending[r] or [])
        ]
