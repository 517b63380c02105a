"""A node's context: the only door a scheme's node has to the world.

Public (what a scheme uses): ``node``, ``ports``, ``n_nodes``, ``geometry``, ``coords``,
``params``, ``rng``, ``slot``, ``quantum``, ``time``, ``send``, ``capacity_left``,
``port``, ``port_to``, ``port_alive``, ``live_ports``, ``record``, ``next_slot``,
``idle``. The runtime's bookkeeping lives in underscore slots that a scheme must not
touch. A scheme never sees the fabric, the runtime or the orchestrator behind it.

Failure detection, as a link layer gives it: ``port_alive(port)`` and ``live_ports``
show which ports are dead (the link is down, or the neighbour is crashed or stalled)
as the run's failure detector saw it ``detect`` slots ago. Without faults, or with
``--detect never``, every port is always alive.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from trio.lowlevel import Abort, Task, wait_task_rescheduled

from ._geometry import Geometry, Port
from ._runtime import SlotRuntime, resume

__all__ = ["Inbox", "NodeContext", "Outlet", "TraceTap"]

Inbox = list[tuple[int, Any]] | tuple[()]

#: Receives (node, slot, kind, values) for every event the node records.
Recorder = Callable[[int, int, str, tuple[Any, ...]], None]
#: Receives (node, slot, kind, fields) for trace-only events (sent, received).
TraceTap = Callable[[int, int, str, dict[str, Any]], None]


class Outlet(Protocol):
    """A node's sending side, provided by the transport."""

    def send(self, port: int, message: Any, size: float = 1.0) -> None: ...
    def capacity_left(self, port: int) -> float: ...


class _Clock(Protocol):
    slot: int


class NodeContext:
    """Everything one node may use. Created by the driver, handed to the node."""

    __slots__ = (
        "node", "ports", "n_nodes", "geometry", "params", "rng", "send", "capacity_left", "quantum", "incarnation",
        "_clock", "_runtime", "_recorder", "_on_unread", "_task", "_parked", "_wake_slot", "_timer", "_port_of",
        "_coords", "_port_ids", "_dead", "_detect",
    )

    def __init__(
        self,
        *,
        node: int,
        ports: tuple[Port, ...],
        geometry: Geometry,
        params: Mapping[str, Any],
        rng: random.Random,
        outlet: Outlet,
        clock: _Clock,
        runtime: SlotRuntime,
        recorder: Recorder,
        on_unread: Callable[[int, Inbox], None],
        incarnation: int = 0,
        quantum: int = 1,
        dead_ports: tuple[Sequence[int], Sequence[int]] | None = None,
        detect: int = 0,
    ) -> None:
        self.node = node
        self.ports = ports
        self.geometry = geometry
        self.n_nodes = geometry.n_nodes
        self.params = MappingProxyType(dict(params))
        self.rng = rng
        #: ``send(port, message, size=1.0)``: size in paper time units (see the slot model)
        self.send = outlet.send
        #: ``capacity_left(port)``: units the port can still take in the current slot
        self.capacity_left = outlet.capacity_left
        self.quantum = quantum
        self.incarnation = incarnation
        self._clock = clock
        self._runtime = runtime
        self._recorder = recorder
        self._on_unread = on_unread
        self._task: Task | None = None
        self._parked = False
        self._wake_slot = -1
        self._timer: int | None = None
        self._port_of = {p.neighbour: p.index for p in ports}
        self._coords: tuple[int, ...] | None = None
        self._port_ids = tuple(p.index for p in ports)
        #: (slots, masks): from slots[i] on, bit p of masks[i] marks port p dead; None: never
        self._dead = dead_ports
        self._detect = detect

    # -- what a scheme uses -------------------------------------------------------------
    @property
    def topology(self) -> str:
        """The topology's spec string (e.g. ``torus:8x8``)."""
        return self.geometry.spec

    @property
    def slot(self) -> int:
        """The current slot number (the same at every node; ticks of the run's quantum)."""
        return self._clock.slot

    @property
    def time(self) -> float:
        """The current time in the paper's unit: ``slot / quantum``."""
        return self._clock.slot / self.quantum

    @property
    def coords(self) -> tuple[int, ...]:
        """This node's coordinates (bits on a hypercube; dimension 0 first)."""
        if self._coords is None:
            self._coords = self.geometry.coords(self.node)
        return self._coords

    def port(self, dim: int, direction: int = 0) -> int | None:
        """The out-port along ``dim`` in ``direction`` (+1/−1; 0 on a hypercube), or None
        where this node has no such port (a mesh boundary)."""
        p = self.geometry.port_index(dim, direction)
        return p if self.geometry.neighbour(self.node, p) is not None else None

    def port_to(self, neighbour: int) -> int:
        """The out-port leading to ``neighbour``.

        Raises:
            KeyError: if ``neighbour`` is not adjacent.
        """
        return self._port_of[neighbour]

    @property
    def live_ports(self) -> tuple[int, ...]:
        """Indices of the ports this node sees alive now, in increasing order (all of its
        ports unless the failure detector reported one dead)."""
        mask = self._dead_mask() if self._dead is not None else 0
        if not mask:
            return self._port_ids
        return tuple(i for i in self._port_ids if not mask >> i & 1)

    def port_alive(self, port: int) -> bool:
        """Whether this node sees out-port ``port`` alive now (False for a port it lacks).

        A port is dead while its link is down or the neighbour it leads to is crashed or
        stalled; the node learns of a change ``detect`` slots after it happened.
        """
        if port not in self._port_ids:
            return False
        return self._dead is None or not self._dead_mask() >> port & 1

    def _dead_mask(self) -> int:
        assert self._dead is not None
        slots, masks = self._dead
        i = bisect_right(slots, self._clock.slot - self._detect) - 1
        return masks[i] if i >= 0 else 0

    def record(self, kind: str, *values: Any) -> None:
        """Emit an event to the observer (never to other nodes)."""
        self._recorder(self.node, self._clock.slot, kind, values)

    async def next_slot(self) -> Inbox:
        """End this slot's step; return the next slot's inbox (possibly empty).

        The inbox is a list of ``(in_port, message)`` in increasing in-port order.
        """
        self._runtime.active.append(self)
        return await self._park()

    async def idle(self, until: int | None = None) -> Inbox:
        """End this slot's step and sleep until a message arrives or slot ``until``.

        Raises:
            ValueError: if ``until`` is not a future slot: the scheme asked to sleep until a
                slot that has already begun (its wake-up time was computed late, or from a
                stale clock), naming the node and both slots.
        """
        if until is not None:
            slot = self._clock.slot
            if until <= slot:
                began = "is the current slot" if until == slot else f"began {slot - until} slot(s) ago"
                raise ValueError(f"node {self.node} asked to sleep until slot {until}, which {began} (slot {slot} is "
                                 f"running): idle(until=...) must name a later slot, at least {slot + 1}")
            if until == slot + 1:  # due next slot in any case: next_slot(), without a timer
                self._runtime.active.append(self)
            else:
                self._timer = until
                self._runtime.add_timer(until, self)
        return await self._park()

    # -- runtime side (the driver and the runtime only) -----------------------------------
    async def _park(self) -> Inbox:
        self._parked = True
        self._runtime.step_done()
        inbox: Inbox = await wait_task_rescheduled(self._abort)
        return inbox

    def _abort(self, _: Any) -> Abort:
        self._parked = False
        self._timer = None
        return Abort.SUCCEEDED

    def _wake(self, inbox: Inbox) -> None:
        """Resume the parked node with ``inbox``."""
        self._parked = False
        self._timer = None
        assert self._task is not None
        resume(self._task, inbox)

    def _unread(self, inbox: Inbox) -> None:
        """Messages reached a node that is not parked (crashed or finished)."""
        self._on_unread(self.node, inbox)


class TracedContext(NodeContext):
    """A context whose sends and receptions are also written to the trace."""

    __slots__ = ("_tap", "_raw_send")

    def __init__(self, *, tap: TraceTap, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tap = tap
        self._raw_send = self.send
        self.send = self._traced_send

    def _traced_send(self, port: int, message: Any, size: float = 1.0) -> None:
        self._raw_send(port, message, size)
        self._tap(self.node, self._clock.slot, "sent", {"port": port, "message": message, "size": size})

    async def _park(self) -> Inbox:
        inbox = await super()._park()
        for port, message in inbox:
            self._tap(self.node, self._clock.slot, "received", {"port": port, "message": message})
        return inbox
