"""The transport seam: what the driver needs from whatever carries the messages.

The driver receives a :class:`Transport` (it never constructs one itself). The
in-process fabric is the embedded default. A shard's transport
(:class:`~._sharded.ShardTransport`) is the in-process one for the shard's own nodes,
with an outbox per other shard; the shard's slot loop carries the outboxes over its
shard link (``slotnet.orchestrator.shard``), between slots, never inside one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ._ledger import FaultLedger

__all__ = ["Delivery", "SendSide", "Transport", "Undecoded"]

#: One receiver's inbox for a slot: ``(receiver, [(in_port, message), ...])``.
Delivery = tuple[int, list[tuple[int, Any]]]


class Undecoded(Protocol):
    """An inbox not decoded yet: :meth:`exchange` may hand one over in place of the list
    (the in-process transport's :class:`~._transport.Frames`); the receiver decodes it."""

    def decode(self) -> list[tuple[int, Any]]: ...
    def __iter__(self) -> Iterator[tuple[int, Any]]: ...


class SendSide(Protocol):
    """A node's outlet: ``send(port, message, size)`` and ``capacity_left(port)``.

    Under faults a node sees (a failure detector), the network also asks an outlet, at the
    end of each slot, for ``idle_ports(slot)`` (the ports that carried nothing) and, where
    it has it, ``started_ports(slot)`` (the ports a message was started on; without it,
    every port not idle counts as started), to judge which losses a sender could avoid."""

    def send(self, port: int, message: Any, size: float = 1.0) -> None: ...
    def capacity_left(self, port: int) -> float: ...


class Transport(Protocol):
    """Carries messages between nodes slot by slot, applying message faults.

    Attributes:
        ledger: every message a fault touched (lost, duplicated, delayed, corrupted).
        delivered: messages handed to receivers so far.
    """

    ledger: FaultLedger
    delivered: int

    def outlet(self, node: int) -> SendSide:
        """The sending side of ``node``."""

    async def exchange(self, slot: int) -> Sequence[tuple[int, list[tuple[int, Any]] | Undecoded]]:
        """Deliver what is due at ``slot`` (sent in earlier slots), each inbox by in-port
        (a list, or an :class:`Undecoded` one that gives it)."""

    def set_link(self, node: int, port: int, up: bool) -> None:
        """Take both directions of the link at ``(node, port)`` out of or into service."""

    def set_alive(self, node: int, alive: bool) -> None:
        """Mark a node up or down; messages to a down node are lost (``node_down``)."""

    def set_stalled(self, node: int, stalled: bool) -> None:
        """Mark a node stalled or not; messages to a stalled node are lost (``stalled``)."""

    def cut(self, nodes: frozenset[int], down: bool) -> None:
        """Begin (``down``) or end a partition of ``nodes`` from the rest (links combine with link faults)."""

    def is_alive(self, node: int) -> bool:
        """Whether ``node`` is up."""

    def mark_unforced(self, sender: int, slot: int) -> None:
        """``sender`` used a port it saw dead in ``slot`` while one it saw alive stayed idle: the
        losses of its messages that slot were avoidable (the network judges this under a failure
        detector, and the fault books count them apart)."""

    def lose_unread(self, node: int, message: Any, cause: str, in_port: int | None = None) -> None:
        """Account a delivered message its receiver never read (it crashed or finished); ``in_port``,
        the port it came in on, names its sender."""

    def busy(self) -> bool:
        """Whether any message is still on its way."""

    def in_flight(self) -> Sequence[tuple[int, int, Any]]:
        """Messages sent but not yet delivered, as ``(receiver, in_port, message)``."""

    def describe(self) -> dict[str, Any]:
        """What the result's ``transport`` object says (``{"kind": "inprocess"}``)."""
