"""The garbage collector's settings during a slot loop (one process, or one shard)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["quiet_gc"]

#: How many slot loops of this process are inside :func:`quiet_gc` now, and the settings
#: the first of them found.
_depth = 0
_saved: tuple[int, int, int] = (0, 0, 0)


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Keep the cyclic GC off the long-lived network during the slot loop.

    The network (tasks, contexts, outlets, queues) is built once and lives for the whole
    run; the slot loop allocates only short-lived messages. Freezing the former and
    collecting the young generation less often saves about a fifth of the time per
    packet-hop (``benchmarks/deflection_throughput.py``). Settings are restored on exit.

    Loops that overlap in one process (the shards of a run held in memory) share the
    settings: the first in sets them, the last out restores them.

    Only the young generations are collected before the freeze: a full collection walks
    every object of the process, which in a process that has imported much (a test run,
    a notebook, a sweep of many runs) costs far more than a small run itself (0.4 s
    against 0.15 s for a 16-slot run of ``bcast-simple`` on the 2-cube inside the test
    suite). Old garbage frozen with the network is unfrozen, and collected, at the end.
    """
    global _depth, _saved
    if not _depth:
        _saved = gc.get_threshold()
        gc.collect(1)
        gc.freeze()
        gc.set_threshold(max(_saved[0], 50_000), _saved[1], _saved[2])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            gc.set_threshold(*_saved)
            gc.unfreeze()
