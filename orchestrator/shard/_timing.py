"""Where a sharded slot's time goes: monotonic-clock accumulators, off unless asked.

With ``SLOTNET_SHARD_TIMING=1`` in the environment (shards started by the run inherit it),
each shard adds up, over its slots, the seconds it spends in each part of a slot, and the
coordinator its own; the run's ``transport["timing"]`` then holds them
(``benchmarks/shard_scaling.py`` prints them per slot). Off, nothing is timed and the
result has no such key. The parts:

* ``node_work``: the shard's nodes' steps (``Network.step``; building them is start-up, not timed);
* ``encoding``: the shard's cross-shard frames and its report of the slot (the event frame,
  or its reporter's summary where the reporter merges) made and handed to the link, and the
  other shards' frames taken in (decoded into the transport);
* ``broker``: the shard waiting for the other shards' frames (the slowest shard, and a
  hop through the broker);
* ``barrier``: the shard waiting, after it took those frames in, for the coordinator's go
  (the rest of the coordinator's round trip, and its own work);
* ``waiting`` (coordinator): waiting for every shard's report of the slot;
* ``coordinator``: handing the shards' reports to the reporter (merging their summaries, or
  replaying their events) and closing the slot.

Each shard's ``node_work`` is also kept slot by slot (``transport["timing"]["node_work_slots"]``,
one list per shard, slots 1 on): every slot ends with an exchange, so it lasts as long as its
slowest shard's node work, and these show how much of the ``broker`` wait is that (the
lock-step loss) rather than the frames' trip.
"""

from __future__ import annotations

import os
import time

__all__ = ["ENV", "SHARD_PARTS", "Split", "split"]

#: The environment variable that turns the timing on.
ENV = "SLOTNET_SHARD_TIMING"
#: The parts of a shard's slot, in the order a slot goes through them.
SHARD_PARTS = ("node_work", "encoding", "broker", "barrier")


class Split:
    """Seconds per part, added up; :meth:`lap` charges the time since the last lap to a part."""

    __slots__ = ("seconds", "_last")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, part: str) -> float:
        """Charge the seconds since the last lap (or creation) to ``part``; those seconds."""
        now = time.perf_counter()
        lapped = now - self._last
        self.seconds[part] = self.seconds.get(part, 0.0) + lapped
        self._last = now
        return lapped

    def restart(self) -> None:
        """Start the next lap now (what came since the last lap is charged to nothing)."""
        self._last = time.perf_counter()


def split() -> Split | None:
    """A new :class:`Split` when ``SLOTNET_SHARD_TIMING`` asks for timing, else None."""
    return Split() if os.environ.get(ENV, "") not in ("", "0") else None
