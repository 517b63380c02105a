"""How nodes' events reach the reporter: directly, or batched per slot as a shard does.

A reporter is split along the slot: its handlers *accumulate* events, and
``end_slot``/``metrics``/``invariants`` *finalise* once every event of the slot is in.
In one process the handlers are called as nodes record (``direct``). When nodes live in
other processes, each shard batches its slot's events into one msgpack frame and the
central reporter replays every shard's frame in node order before closing the slot
(``buffered``). Reporters never depend on the order of one slot's events (the
determinism tests shuffle the scheduler to hold them to it), so both give identical
results; ``RunSpec(observer="buffered")`` runs the shard path in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from slotnet.errors import SlotnetError
from slotnet.fabric import decode, encode

__all__ = ["OBSERVERS", "SlotBatch"]

#: The observer modes a run spec may name.
OBSERVERS = ("direct", "buffered")

_node_then_seq = itemgetter(0, 1)


class SlotBatch:
    """One slot's events of a shard, encoded as they would cross a process boundary.

    Node events are replayed in node order (a node's own events keep their order); the
    messages faults destroyed in the slot (``on_lost``) are replayed first, in a
    canonical order, as the in-process transport reports them before nodes run.
    """

    __slots__ = ("_events", "_handlers", "_lost", "_on_lost")

    def __init__(self, handlers: Mapping[str, Callable[..., None]],
                 on_lost: Callable[..., None] | None = None) -> None:
        self._handlers = handlers
        self._on_lost = on_lost
        self._events: list[tuple[int, int, str, bytes]] = []
        self._lost: list[bytes] = []

    def record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        """Keep an event of ``slot`` (its values as wire bytes).

        Raises:
            SlotnetError: for an event kind the reporter does not handle.
        """
        if kind not in self._handlers:
            raise SlotnetError(f"node {node} recorded unknown event {kind!r} in slot {slot}")
        self._events.append((node, len(self._events), kind, encode((slot, values))))

    def lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """Keep a message a fault destroyed."""
        self._lost.append(encode((slot, sender, port, receiver, message, cause)))

    def frame(self) -> bytes:
        """The slot's events as one frame (what a shard publishes); the batch is emptied."""
        out = encode((sorted(self._lost), [(n, k, data) for n, _, k, data in sorted(self._events, key=_node_then_seq)]))
        self._events.clear()
        self._lost.clear()
        return out

    def replay(self, frames: list[bytes]) -> None:
        """Apply every shard's frame of the slot to the reporter: losses, then events in node order."""
        parts = [decode(f) for f in frames]
        if self._on_lost is not None:
            for data in sorted(x for lost, _ in parts for x in lost):
                self._on_lost(*decode(data))
        events = [e for _, evs in parts for e in evs]
        events.sort(key=itemgetter(0))  # stable: a node's own events keep their order
        handlers = self._handlers
        for node, kind, data in events:
            slot, values = decode(data)
            handlers[kind](node, slot, *values)

    def flush(self) -> None:
        """In one process: this batch is the only frame of the slot."""
        if self._events or self._lost:
            self.replay([self.frame()])
