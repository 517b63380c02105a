"""A node's context: the only door a scheme's node has to the world.

It holds the node's id, its ports (index, dimension, direction, neighbour label), the
static parameters of the run, the slot clock, the node's own RNG stream, ``send``,
``next_slot``/``idle`` and ``record`` (events for the observer). A scheme never sees
the fabric, the runtime or the orchestrator behind it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from trio.lowlevel import Abort, Task, wait_task_rescheduled

from ._runtime import SlotRuntime, resume

__all__ = ["NodeContext", "Port", "Sender", "TraceTap"]

Inbox = list[tuple[int, Any]] | tuple[()]


class Port(Protocol):
    """What a node knows of one of its out-ports."""

    index: int
    dim: int
    direction: int
    neighbour: int


#: ``send(port, message, size=1.0)``
Sender = Callable[..., None]
#: Receives (node, slot, kind, values) for every event the node records.
Recorder = Callable[[int, int, str, tuple[Any, ...]], None]
#: Receives (node, slot, kind, fields) for trace-only events (sent, received).
TraceTap = Callable[[int, int, str, dict[str, Any]], None]


class _Clock(Protocol):
    slot: int


class NodeContext:
    """Everything one node may use. Created by the driver, handed to the node."""

    __slots__ = (
        "node", "ports", "n_nodes", "topology", "params", "rng", "send", "_clock", "_runtime",
        "_recorder", "_on_unread", "task", "parked", "wake_slot", "timer", "_port_of", "incarnation",
    )

    def __init__(
        self,
        *,
        node: int,
        ports: tuple[Port, ...],
        n_nodes: int,
        topology: str,
        params: Mapping[str, Any],
        rng: random.Random,
        send: Sender,
        clock: _Clock,
        runtime: SlotRuntime,
        recorder: Recorder,
        on_unread: Callable[[int, Inbox], None],
        incarnation: int = 0,
    ) -> None:
        self.node = node
        self.ports = ports
        self.n_nodes = n_nodes
        self.topology = topology
        self.params = MappingProxyType(dict(params))
        self.rng = rng
        self.send = send
        self._clock = clock
        self._runtime = runtime
        self._recorder = recorder
        self._on_unread = on_unread
        self.task: Task | None = None
        self.parked = False
        self.wake_slot = -1
        self.timer: int | None = None
        self._port_of = {p.neighbour: p.index for p in ports}
        self.incarnation = incarnation

    # -- what a scheme uses -------------------------------------------------------------
    @property
    def slot(self) -> int:
        """The current slot number (the same at every node)."""
        return self._clock.slot

    def port_to(self, neighbour: int) -> int:
        """The out-port leading to ``neighbour``.

        Raises:
            KeyError: if ``neighbour`` is not adjacent.
        """
        return self._port_of[neighbour]

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
            ValueError: if ``until`` is not a future slot.
        """
        if until is not None:
            if until <= self._clock.slot:
                raise ValueError(f"node {self.node}: idle(until={until}) is not after slot {self._clock.slot}")
            self.timer = until
            self._runtime.add_timer(until, self)
        return await self._park()

    # -- runtime side ---------------------------------------------------------------------
    async def _park(self) -> Inbox:
        self.parked = True
        self._runtime.step_done()
        inbox: Inbox = await wait_task_rescheduled(self._abort)
        return inbox

    def _abort(self, _: Any) -> Abort:
        self.parked = False
        self.timer = None
        return Abort.SUCCEEDED

    def wake(self, inbox: Inbox) -> None:
        """Resume the parked node with ``inbox`` (driver only)."""
        self.parked = False
        self.timer = None
        assert self.task is not None
        resume(self.task, inbox)

    def unread(self, inbox: Inbox) -> None:
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
