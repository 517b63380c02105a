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

from slotnet.fabric import decode, encode

__all__ = ["OBSERVERS", "SlotBatch"]

#: The observer modes a run spec may name.
OBSERVERS = ("direct", "buffered")

_node_then_seq = itemgetter(0, 1)


class SlotBatch:
    """One slot's events of a shard, encoded as they would cross a process boundary."""

    __slots__ = ("_events", "_handlers")

    def __init__(self, handlers: Mapping[str, Callable[..., None]]) -> None:
        self._handlers = handlers
        self._events: list[tuple[int, int, str, bytes]] = []

    def record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        """Keep an event of ``slot`` (its values as wire bytes)."""
        self._events.append((node, len(self._events), kind, encode((slot, values))))

    def frame(self) -> bytes:
        """The slot's events as one frame (what a shard publishes)."""
        return encode([(n, k, data) for n, _, k, data in sorted(self._events, key=_node_then_seq)])

    def replay(self, frames: list[bytes]) -> None:
        """Apply every shard's frame of the slot to the reporter, in node order."""
        events = [e for f in frames for e in decode(f)]
        events.sort(key=itemgetter(0))  # stable: a node's own events keep their order
        handlers = self._handlers
        for node, kind, data in events:
            slot, values = decode(data)
            handlers[kind](node, slot, *values)
        self._events.clear()

    def flush(self) -> None:
        """In one process: this batch is the only frame of the slot."""
        if self._events:
            self.replay([self.frame()])
