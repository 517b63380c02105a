"""A node's context: the only door a scheme's node has to the world.

Public (what a scheme uses): ``node``, ``ports``, ``n_nodes``, ``geometry``, ``coords``,
``params``, ``rng``, ``slot``, ``quantum``, ``time``, ``send``, ``capacity_left``,
``port``, ``port_to``, ``port_alive``, ``live_ports``, ``record``, ``record_choice``,
``next_slot``, ``idle``. The runtime's bookkeeping lives in underscore slots that a scheme must not
touch. A scheme never sees the fabric, the runtime or the orchestrator behind it.

Failure detection, as a link layer gives it: ``port_alive(port)`` and ``live_ports``
show which ports are dead (the link is down, or the neighbour is crashed or stalled)
as the run's failure detector saw it ``detect`` slots ago. Without faults, or with
``--detect never``, every port is always alive.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from ._geometry import Geometry, Port
from ._rng import NodeStream, PhiloxStreams, SeedTable, node_rng
from ._runtime import Parking, SlotRuntime

__all__ = ["Inbox", "NodeContext", "NotANeighbour", "Outlet", "TraceTap"]

#: A node's inbox: ``(in_port, message)`` pairs by in-port (a list, or ``()`` when empty). A
#: sequence to the type checker, so that ``inbox[0]`` of an inbox known to hold a message
#: (``await ctx.idle()`` without ``until`` wakes only for one) type-checks.
Inbox = Sequence[tuple[int, Any]]

#: Receives (node, slot, kind, values) for every event the node records.
Recorder = Callable[[int, int, str, tuple[Any, ...]], None]
#: Event kind -> its handler, called as ``handler(node, slot, *values)``.
Handlers = dict[str, Callable[..., None]]  # a dict: compiled, the context keeps it as one (``_context.pxd``)
#: Receives (node, slot, kind, fields) for trace-only events (sent, received).
TraceTap = Callable[[int, int, str, dict[str, Any]], None]

#: port-id tuples, one of each, for nodes with the same ports to share (a few dozen at most:
#: on a mesh of many dimensions nearly every node has its own, and those are not kept here)
_PORT_IDS: dict[tuple[int, ...], tuple[int, ...]] = {}
_PORT_IDS_KEPT = 64


def _shared(ids: tuple[int, ...]) -> tuple[int, ...]:
    """The tuple equal to ``ids`` that other nodes already use, where there is one."""
    got = _PORT_IDS.get(ids)
    if got is None:
        if len(_PORT_IDS) >= _PORT_IDS_KEPT:
            return ids
        _PORT_IDS[ids] = got = ids
    return got


class Outlet(Protocol):
    """A node's sending side, provided by the transport."""

    def send(self, port: int, message: Any, size: float = 1.0) -> None: ...
    def capacity_left(self, port: int) -> float: ...


class _Clock(Protocol):
    slot: int


class NodeContext:
    """Everything one node may use. Created by the driver, handed to the node.

    One exists per node, so it holds only what is the node's own and builds the rest when
    asked: ``ports`` anew on each read, the neighbour map of ``port_to`` and the random
    stream ``rng`` on first use (the stream is the same whenever it is made: it depends
    only on the run's seed, the node and its incarnation). ``params`` and the port-id
    tuple are shared by the nodes that have the same.
    """

    __slots__ = (
        "node", "n_nodes", "geometry", "params", "send", "quantum", "incarnation",
        "_clock", "_parking", "_recorder", "_handlers", "_port_of",
        "_coords", "_port_ids", "_dead", "_detect", "_outlet", "_seed", "_rng", "_chooser",
    )

    def __init__(
        self,
        *,
        node: int,
        geometry: Geometry,
        params: Any,
        seed: int | SeedTable | PhiloxStreams,
        outlet: Outlet,
        clock: _Clock,
        runtime: SlotRuntime,
        recorder: Recorder,
        handlers: Handlers | None = None,
        incarnation: int = 0,
        quantum: int = 1,
        dead_ports: tuple[Sequence[int], Sequence[int]] | None = None,
        detect: int = 0,
    ) -> None:
        self.node = node
        self.geometry = geometry
        self.n_nodes = geometry.n_nodes
        #: read-only: the scheme family's frozen record of node parameters (``Inputs.params``),
        #: taken as it is (the driver shares one among the nodes), or a mapping, seen through
        #: a read-only view (a MappingProxyType is taken as it is)
        view: Any = (MappingProxyType(dict(params)) if isinstance(params, Mapping)
                     and not isinstance(params, MappingProxyType) else params)
        self.params = view
        #: ``send(port, message, size=1.0)``: size in paper time units (see the slot model)
        self.send = outlet.send
        self.quantum = quantum
        self.incarnation = incarnation
        self._clock = clock
        #: how this node's task parks: a record the runtime owns (and alone writes while parked)
        self._parking: Parking = runtime.register(node, incarnation)
        self._recorder = recorder
        #: where given, the event kinds whose handlers ``record`` calls itself, without
        #: ``recorder`` in between (any other kind still goes to ``recorder``)
        self._handlers = handlers
        self._port_of: dict[int, int] | None = None  # neighbour -> port, made by the first port_to
        self._coords: tuple[int, ...] | None = None
        self._port_ids = _shared(geometry.port_ids(node))
        #: (slots, masks): from slots[i] on, bit p of masks[i] marks port p dead; None: never
        self._dead = dead_ports
        self._detect = detect
        self._outlet = outlet
        #: the run's seed, or its nodes' (a table), or its philox key: rng is
        #: node_rng(seed, node, incarnation), made on first use
        self._seed = seed
        self._rng: NodeStream | None = None
        #: where ``record_choice`` goes: (the counts by name, then by value; the call that
        #: takes a choice the table lacks, ``(node, slot, name, value)``), shared by every
        #: context of the run; None: nowhere (the scheme declares no choices: recording one
        #: costs nothing)
        self._chooser: tuple[dict[str, dict[Any, int]],
                             Callable[[int, int, str, Any], None]] | None = None

    # -- what a scheme uses -------------------------------------------------------------
    @property
    def ports(self) -> tuple[Port, ...]:
        """This node's out-ports, in increasing index order (built on each read: keep what you need)."""
        return self.geometry.ports(self.node)

    @property
    def rng(self) -> NodeStream:
        """This node's own random stream (see :mod:`slotnet.nodes._rng`), made on first use: a
        ``random.Random``, or with ``--rng philox`` a compact Philox4x32-10 stream with the same methods."""
        rng = self._rng
        if rng is None:
            rng = self._rng = node_rng(self._seed, self.node, self.incarnation)
        return rng

    def capacity_left(self, port: int) -> float:
        """Units ``port`` can still take in the current slot (paper time units at a quantum above 1)."""
        return self._outlet.capacity_left(port)

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
            NotANeighbour: (a ``KeyError``) if ``neighbour`` is not adjacent, naming this
                node's neighbours.
        """
        if self._port_of is None:
            self._port_of = {p.neighbour: p.index for p in self.ports}
        try:
            return self._port_of[neighbour]
        except (KeyError, TypeError):
            raise NotANeighbour(self.node, neighbour, sorted(self._port_of)) from None

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
        handlers = self._handlers
        if handlers is not None:
            handler = handlers.get(kind)
            if handler is not None:  # once per node and slot: no call of the recorder in between
                handler(self.node, self._clock.slot, *values)
                return
        self._recorder(self.node, self._clock.slot, kind, values)

    def record_choice(self, name: str, value: Any) -> None:
        """Tell the observer the outcome of a random choice the scheme declares (``Scheme.choices``),
        after drawing it. Draws nothing from :attr:`rng`, and is not an event: no reporter and no
        trace sees it, so a seeded run is the same with or without it."""
        chooser = self._chooser
        if chooser is not None:
            table = chooser[0]
            counts = table.get(name)
            if counts is None:  # not declared: the monitor names the choice and the node
                chooser[1](self.node, self._clock.slot, name, value)
                return
            counts[value] = counts.get(value, 0) + 1

    def next_slot(self) -> Awaitable[Inbox]:
        """End this slot's step; ``await`` it for the next slot's inbox (possibly empty).

        The inbox is a list of ``(in_port, message)`` in increasing in-port order.
        (Not a coroutine itself: it returns the runtime's parking record, which ``await``
        parks on.)
        """
        return self._parking.next_slot()

    def idle(self, until: int | None = None) -> Awaitable[Inbox]:
        """End this slot's step and sleep until a message arrives or slot ``until``;
        ``await`` it for the inbox.

        Raises:
            ValueError: if ``until`` is not a future slot: the scheme asked to sleep until a
                slot that has already begun (its wake-up time was computed late, or from a
                stale clock), naming the node and both slots.
            TypeError: if ``until`` is not a slot number (an int, or None).
        """
        slot = self._clock.slot
        if until is not None and (type(until) is not int or until <= slot):
            until = _slot_number(self.node, until, slot)
        if until is not None and until <= slot:
            began = "is the current slot" if until == slot else f"began {slot - until} slot(s) ago"
            raise ValueError(f"node {self.node} asked to sleep until slot {until}, which {began} (slot {slot} is "
                             f"running): idle(until=...) must name a later slot, at least {slot + 1}")
        return self._parking.idle(until, slot)


class NotANeighbour(KeyError):
    """``ctx.port_to(v)`` with a ``v`` that is not adjacent (a ``KeyError``, with a message that says so)."""

    def __init__(self, node: int, neighbour: Any, neighbours: Sequence[int]) -> None:
        super().__init__(neighbour)
        self.text = (f"ctx.port_to({neighbour!r}) at node {node}: node {neighbour!r} is not a neighbour of node {node} "
                     f"(its neighbours: {', '.join(map(str, neighbours)) or 'none'}); a node sends only to adjacent nodes")

    def __str__(self) -> str:
        return self.text


def _slot_number(node: int, until: Any, slot: int) -> int:
    """``until`` as a slot number (a bool or a float is no slot).

    Raises:
        TypeError: naming the node, the value and its type.
    """
    if isinstance(until, bool) or not hasattr(until, "__index__"):
        raise TypeError(f"node {node} asked to sleep until {until!r} (a {type(until).__name__}) in slot {slot}: "
                        f"ctx.idle(until=...) takes a slot number (an int, at least {slot + 1}), or None to wait "
                        f"for a message only")
    return int(until.__index__())


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

    def next_slot(self) -> Awaitable[Inbox]:
        return self._traced(super().next_slot())

    def idle(self, until: int | None = None) -> Awaitable[Inbox]:
        return self._traced(super().idle(until))

    async def _traced(self, parked: Awaitable[Inbox]) -> Inbox:
        inbox = await parked
        for port, message in inbox:
            self._tap(self.node, self._clock.slot, "received", {"port": port, "message": message})
        return inbox
