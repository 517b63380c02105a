"""The shard link: how the coordinator and the shards of one run exchange their frames.

The slot protocol (``_coordinator`` and ``_shard``) is written against two protocols, one
per end, and knows nothing of how frames travel:

0. the coordinator publishes the spec (:meth:`CoordinatorLink.start`); each shard reads
   it (:meth:`ShardLink.spec`), builds its nodes and says it is ready; once all are, the
   coordinator says go (no frame can reach a shard not yet listening);
1. each shard runs the slot for its own nodes, then sends one frame of cross-shard
   messages to every other shard (:meth:`ShardLink.send`) and one :class:`Done` to the
   coordinator (:meth:`ShardLink.done`): the slot's events, or, where the run's reporter
   merges across shards, its own reporter's small summary of the slot;
2. the coordinator takes every shard's :class:`Done` (:meth:`CoordinatorLink.done`),
   closes the slot and says go (next slot) or stop (:meth:`CoordinatorLink.go`);
3. before the next slot each shard takes the other shards' frames of the slot
   (:meth:`ShardLink.frames`); after the last, it sends its end-of-run state
   (:meth:`ShardLink.final`), which the coordinator takes (:meth:`CoordinatorLink.finals`).

Two links implement them: MQTT through a broker (``_mqtt_link``: one process per shard,
heartbeats, rejected frames counted) and memory (``_memory_link``: every shard a Trio task
of one process, for tests and for runs without a broker). Frames are msgpack-able data
either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

__all__ = ["UNKNOWN_SHARD", "CoordinatorLink", "Done", "ShardLink", "is_shard"]

#: The reason a frame that names a sender outside the run is refused for (``rejected``).
UNKNOWN_SHARD = "unknown shard"


def is_shard(origin: Any, shards: int) -> bool:
    """Whether ``origin``, the sender a frame names, is a shard of a run of ``shards``: an
    integer 0..shards-1 (a frame that claims shard ``shards``, one past the last, is foreign)."""
    return isinstance(origin, int) and not isinstance(origin, bool) and 0 <= origin < shards


class Done(NamedTuple):
    """A shard's report of one slot, to the coordinator."""

    slot: int
    shard: int
    #: the slot's events of the shard's nodes (``SlotBatch.frame``); empty where the shard's
    #: own reporter takes them (:attr:`summary`)
    events: bytes
    #: the slot's trace events, as ``(node, order key, event)``
    traced: list[Any]
    #: nothing left to do on this shard (no node awake or due, nothing in flight)
    idle: bool
    #: the last slot in which a node of the shard was active
    last_active: int
    #: where the reporter merges across shards (``engine._open.merges_on_shards``): the shard's
    #: reporter's summary of the slot (``shard_slot``), in place of the events; else None
    summary: Any = None


class ShardLink(Protocol):
    """A shard's end of the link.

    Attributes:
        shard, shards: this shard's index, and how many there are.
        rejected: frames refused, by reason (malformed, foreign, stale, duplicate).
    """

    shard: int
    shards: int
    rejected: dict[str, int]

    def report_progress(self, progress: Callable[[], int]) -> None:
        """From now on, ``progress()`` counts this shard's work done so far (node steps, nodes
        built, slot phases): a link with heartbeats reports it, so a long slot that moves is
        told from a stuck one."""

    async def spec(self) -> dict[str, Any]:
        """The run spec, as ``_wire.spec_to_wire`` made it."""

    async def ready(self) -> None:
        """Tell the coordinator this shard is listening; return once it says go."""

    def send(self, slot: int, to: int, frame: bytes) -> None:
        """Send shard ``to`` this shard's cross-shard messages of ``slot``."""

    def done(self, report: Done) -> None:
        """Report the slot to the coordinator."""

    async def go(self, slot: int) -> bool:
        """The coordinator's word after ``slot``: True for the next slot, False to stop."""

    async def frames(self, slot: int) -> list[bytes]:
        """The other shards' frames of ``slot``, in shard order."""

    def final(self, state: dict[str, Any]) -> None:
        """Send the coordinator this shard's end-of-run state."""


class CoordinatorLink(Protocol):
    """The coordinator's end of the link.

    Attributes:
        rejected: frames refused, by reason.
    """

    rejected: dict[str, int]

    async def start(self, spec: dict[str, Any]) -> None:
        """Give every shard the spec; return once all are ready and told to go."""

    async def done(self, slot: int) -> list[Done]:
        """Every shard's report of ``slot``, in shard order."""

    def go(self, slot: int, go: bool) -> None:
        """Tell every shard to run the slot after ``slot`` (``go``) or to stop."""

    async def finals(self) -> list[dict[str, Any]]:
        """Every shard's end-of-run state, in shard order."""

    def describe(self) -> dict[str, Any]:
        """What the result's ``transport`` says of the link (its ``kind`` first)."""
