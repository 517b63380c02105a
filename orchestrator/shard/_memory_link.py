"""The shard link in memory: the coordinator and every shard as Trio tasks of one process.

The same slot protocol as over MQTT (``_coordinator``, ``_shard``), with no broker and no
process: :func:`run_sharded_in_memory` runs a sharded run's coordinator and its K shards in
the caller's Trio loop. Every frame still goes through the wire codec (encoded, then
decoded for its receiver), so what a shard and the coordinator see is what they would see
from another process, and a frame that names a sender outside the run is refused and
counted as over MQTT (``rejected``). The tests run the shard logic this way; a failure in
any task ends the run with that error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from slotnet.fabric import decode, encode

from ..engine._collect import single_error
from ..engine._progress import Progress
from ..engine._result import Result
from ..engine._spec import Prepared
from ._coordinator import coordinate
from ._link import UNKNOWN_SHARD, Done, is_shard
from ._shard import serve_shard

__all__ = ["MemoryHub", "run_sharded_in_memory"]

#: The slot under which frames before the first slot travel (spec, ready, start, finals).
_BEFORE = -1

#: The shard a frame of each topic a shard sends names as its sender (the coordinator's
#: topics, ``spec`` and ``go``, name none).
_SENDER: dict[str, Callable[[Any], Any]] = {
    "ready": lambda body: body,
    "data": lambda body: body[0],
    "done": lambda body: body[1],
    "final": lambda body: body[0],
}


class _Mailbox:
    """The frames waiting for one receiver, by (topic, slot); a frame from a shard the run
    does not have is refused and counted in :attr:`rejected`."""

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self.rejected: dict[str, int] = {}
        self._pool: dict[tuple[str, int], list[Any]] = {}
        self._arrived = trio.Event()

    def put(self, topic: str, slot: int, body: Any) -> None:
        body = decode(encode(body))
        sender = _SENDER.get(topic)
        if sender is not None and not is_shard(sender(body), self.shards):
            self.rejected[UNKNOWN_SHARD] = self.rejected.get(UNKNOWN_SHARD, 0) + 1
            return
        self._pool.setdefault((topic, slot), []).append(body)
        self._arrived.set()
        self._arrived = trio.Event()

    async def take(self, topic: str, slot: int, count: int) -> list[Any]:
        """``count`` frames of ``topic`` for ``slot``, once they are all in."""
        key = (topic, slot)
        while len(self._pool.get(key, ())) < count:
            await self._arrived.wait()
        return self._pool.pop(key)


class MemoryHub:
    """The mailboxes of one run: the coordinator's and each shard's."""

    def __init__(self, shards: int) -> None:
        self.shards = shards
        self.coordinator = _Mailbox(shards)
        self.boxes = [_Mailbox(shards) for _ in range(shards)]

    def coordinator_link(self) -> MemoryCoordinatorLink:
        return MemoryCoordinatorLink(self)

    def shard_link(self, shard: int) -> MemoryShardLink:
        return MemoryShardLink(self, shard)


class MemoryCoordinatorLink:
    """The coordinator's end in memory (see :class:`~._link.CoordinatorLink`)."""

    def __init__(self, hub: MemoryHub) -> None:
        self.hub = hub
        self.rejected = hub.coordinator.rejected

    def _to_shards(self, topic: str, slot: int, body: Any) -> None:
        for box in self.hub.boxes:
            box.put(topic, slot, body)

    async def start(self, spec: dict[str, Any]) -> None:
        self._to_shards("spec", _BEFORE, spec)
        await self.hub.coordinator.take("ready", _BEFORE, self.hub.shards)
        self._to_shards("go", _BEFORE, True)

    async def done(self, slot: int) -> list[Done]:
        got = await self.hub.coordinator.take("done", slot, self.hub.shards)
        return [Done(*d) for d in sorted(got, key=lambda d: d[1])]

    def go(self, slot: int, go: bool) -> None:
        self._to_shards("go", slot, go)

    async def finals(self) -> list[dict[str, Any]]:
        got = await self.hub.coordinator.take("final", _BEFORE, self.hub.shards)
        return [state for _, state in sorted(got, key=lambda f: f[0])]

    def describe(self) -> dict[str, Any]:
        return {"kind": "memory"}


class MemoryShardLink:
    """A shard's end in memory (see :class:`~._link.ShardLink`)."""

    def __init__(self, hub: MemoryHub, shard: int) -> None:
        self.hub = hub
        self.shard = shard
        self.shards = hub.shards
        self._box = hub.boxes[shard]
        self.rejected = self._box.rejected

    def report_progress(self, progress: Callable[[], int]) -> None:
        """No heartbeats in one process: nothing to report."""

    async def spec(self) -> dict[str, Any]:
        (wire,) = await self._box.take("spec", _BEFORE, 1)
        return dict(wire)

    async def ready(self) -> None:
        self.hub.coordinator.put("ready", _BEFORE, self.shard)
        await self._box.take("go", _BEFORE, 1)

    def send(self, slot: int, to: int, frame: bytes) -> None:
        self.hub.boxes[to].put("data", slot, (self.shard, frame))

    def done(self, report: Done) -> None:
        self.hub.coordinator.put("done", report.slot, tuple(report))

    async def go(self, slot: int) -> bool:
        (go,) = await self._box.take("go", slot, 1)
        return bool(go)

    async def frames(self, slot: int) -> list[bytes]:
        got = await self._box.take("data", slot, self.shards - 1)
        return [frame for _, frame in sorted(got, key=lambda d: d[0])]

    def final(self, state: dict[str, Any]) -> None:
        self.hub.coordinator.put("final", _BEFORE, (self.shard, state))


async def run_sharded_in_memory(prep: Prepared, *, progress: Progress | None = None,
                                on_slot: Callable[[int], None] | None = None) -> Result:
    """A sharded run (``prep.spec.shards`` shards) with every shard a task of this Trio loop.

    Raises:
        SlotnetError: as a run over MQTT would, from the coordinator or a shard.
    """
    hub = MemoryHub(prep.spec.shards)
    try:
        async with trio.open_nursery() as nursery:
            for i in range(hub.shards):
                nursery.start_soon(serve_shard, hub.shard_link(i))
            result = await coordinate(prep, hub.coordinator_link(), progress=progress, on_slot=on_slot)
    except BaseExceptionGroup as group:  # a lone failure, not a group around it
        raise single_error(group) from None
    return result
