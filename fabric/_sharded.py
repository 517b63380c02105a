"""The fabric of one shard: its own nodes' links, plus an outbox per other shard.

A run split into ``K`` shards gives each shard a contiguous block of node ids (on a
hypercube the high address bits, on a torus or mesh slabs along the last dimension,
since dimension 0 varies fastest). A :class:`ShardTransport` is the in-process
transport for the shard's own nodes; a message to a node of another shard goes, still
as the msgpack bytes its outlet made, into that shard's outbox. At the end of a slot
the shard ships each outbox as one frame and feeds the frames it receives to
:meth:`ShardTransport.accept`; from there on delivery is exactly the in-process one
(inboxes sorted by in-port, faults judged by receiver), so a run's results do not
depend on how its nodes are split. Message faults need nothing more: the frames carry
each message's bytes as its outlet made them (with their CRC-32 when a corrupt fault is
scheduled), and dup or delay hold messages back at the receiving shard.
"""

from __future__ import annotations

import math
from typing import Any

from ._clock import SlotClock
from ._codec import encode, unpackb
from ._errors import FabricError
from ._faults import FaultSchedule
from ._topology import Topology
from ._transport import Frames, InProcessTransport, LostCallback, add_pairs, take_remote

__all__ = ["ShardMap", "ShardTransport"]

#: The ``due`` of an outbox entry that is no message but a sender's unforced dead-port send
#: (``(UNFORCED, sender, slot, b"")``): a real entry's due is a slot, never negative.
UNFORCED = -1


class ShardMap:
    """Which shard hosts each node: contiguous blocks of node ids.

    Example:
        >>> m = ShardMap(10, 3)
        >>> [m.shard_of(v) for v in range(10)], list(m.nodes(2))
        ([0, 0, 0, 0, 1, 1, 1, 1, 2, 2], [8, 9])
    """

    def __init__(self, n_nodes: int, shards: int) -> None:
        if not 1 <= shards <= n_nodes:
            raise FabricError(f"cannot split {n_nodes} nodes into {shards} shards")
        self.n_nodes, self.shards = n_nodes, shards
        self.block = math.ceil(n_nodes / shards)
        if (shards - 1) * self.block >= n_nodes:
            raise FabricError(f"{shards} shards of {self.block} nodes leave the last one empty ({n_nodes} nodes)")

    def shard_of(self, node: int) -> int:
        return node // self.block

    def nodes(self, shard: int) -> range:
        return range(shard * self.block, min((shard + 1) * self.block, self.n_nodes))

    def cross_links(self, topology: Topology) -> tuple[int, int]:
        """(directed links between shards, all directed links).

        Counted from each node's neighbour list (``Topology.out_links``, no ``Port``
        objects): at the end of a run on the 2**20-cube that is 20 million links.
        """
        cross = total = 0
        block = self.block
        for v in range(topology.n_nodes):
            mine = v // block
            for nb in topology.out_links(v)[0]:
                if nb >= 0:
                    total += 1
                    cross += nb // block != mine
        return cross, total


class ShardTransport(InProcessTransport):
    """The in-process transport of one shard, with outboxes for the other shards.

    Its outlets park every message in the pending lists as one process does, whatever
    shard hosts the receiver (the per-message path is the compiled one, no call here);
    :meth:`frames` then takes the other shards' receivers' pending pairs out, as they are.
    Only where that direct path is off (frames with a checksum: a corrupt fault) do
    messages come through :meth:`park`, and other shards' go to an outbox.
    """

    collects_pairs = True

    def __init__(
        self,
        topology: Topology,
        clock: SlotClock,
        shard_map: ShardMap,
        shard: int,
        faults: FaultSchedule | None = None,
        seed: int = 0,
        on_lost: LostCallback | None = None,
        quantum: int = 1,
    ) -> None:
        super().__init__(topology, clock, faults, seed, on_lost, quantum)
        self.map = shard_map
        self.shard = shard
        self.local = shard_map.nodes(shard)
        self._outbox: list[list[tuple[Any, int, int, bytes]]] = [[] for _ in range(shard_map.shards)]
        self.sent_local = 0
        self.sent_cross = 0
        #: pairs pending for this shard's receivers that are counted already (by an earlier
        #: :meth:`frames` of this slot, or by the shard that sent them): the next exchange
        #: hands them all over
        self._counted = 0

    def describe(self) -> dict[str, Any]:
        return {"kind": "shard", "shard": self.shard, "shards": self.map.shards}

    def park(self, receiver: int, in_port: int, data: bytes) -> None:
        if receiver in self.local:
            self.sent_local += 1
            self._counted += 1  # pending now, and counted: frames() must not count it again
            super().park(receiver, in_port, data)
        else:
            self.sent_cross += 1
            self._outbox[self.map.shard_of(receiver)].append((0, receiver, in_port, data))

    def park_later(self, due: int, receiver: int, in_port: int, data: bytes, began: int) -> None:
        if receiver in self.local:
            self.sent_local += 1
            super().park_later(due, receiver, in_port, data, began)
        else:
            self.sent_cross += 1
            # (due, began) in the due field: a message due next slot keeps its plain 0 there
            self._outbox[self.map.shard_of(receiver)].append(((due, began), receiver, in_port, data))

    def mark_unforced(self, sender: int, slot: int) -> None:
        """Also tell every other shard: its receivers judge the losses of ``sender``'s messages."""
        super().mark_unforced(sender, slot)
        for j, box in enumerate(self._outbox):
            if j != self.shard:
                box.append((UNFORCED, sender, slot, b""))

    def frames(self) -> list[bytes]:
        """This slot's messages for each shard, as one frame each (``b""``: none, and always
        for itself): the outbox's entries and the pending pairs of that shard's receivers.
        Both are emptied; the pairs of this shard's receivers stay pending."""
        remote, sent, taken = take_remote(self._pending, self._touched, self.local.start, self.local.stop,
                                          self.map.block, self.map.shards)
        self.sent_cross += taken
        if self.direct:  # else park counted them
            self.sent_local += sent - self._counted
            self._counted = sent
        out = [encode((box, pairs)) if box or pairs else b"" for box, pairs in zip(self._outbox, remote)]
        for box in self._outbox:
            box.clear()
        return out

    async def exchange(self, slot: int) -> list[tuple[int, Frames]]:
        self._counted = 0
        return self._hand_over(slot)

    def accept(self, frame: bytes) -> None:
        """Take another shard's messages for this shard's nodes (a frame of :meth:`frames`)."""
        if not frame:
            return
        box, pairs = unpackb(frame, use_list=True, strict_map_key=False)  # lists: they join the pending as they are
        try:
            self._counted += add_pairs(self._pending, self._touched, pairs, self.local.start, self.local.stop)
        except FabricError as exc:
            raise FabricError(f"shard {self.shard} got {exc}") from None
        for due, receiver, in_port, data in box:
            if due == UNFORCED:  # (UNFORCED, sender, slot, b""): see mark_unforced
                self.unforced.add((receiver, in_port))
                continue
            if receiver not in self.local:
                raise FabricError(f"shard {self.shard} got a message for node {receiver}, hosted elsewhere")
            if due:
                super().park_later(due[0], receiver, in_port, data, due[1])
            else:
                super().park(receiver, in_port, data)

    def busy(self) -> bool:
        return super().busy() or any(self._outbox)
