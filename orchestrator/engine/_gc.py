"""The garbage collector's settings while a network is built and during its slot loop (one process, or one shard)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_PER_NODE", "building", "collector_off", "quiet_gc"]

#: The young generation's threshold, per node of the network, during a slot loop (and at
#: least 50,000): the live young objects a collection walks grow with the network, so at a
#: fixed threshold the collections of a big network come ever more often and each walks
#: more -- on the 2**16-cube (deflection, v = 1, 40 slots) 549 young collections took 15.3 s
#: of a 194 s loop, and 51 middle ones 4.8 s more; at 20 per node, 18 and 3 took 0.06 s.
YOUNG_PER_NODE = 20

#: How many slot loops of this process are inside :func:`quiet_gc` now, and the settings
#: the first of them found.
_depth = 0
_saved: tuple[int, int, int] = (0, 0, 0)
#: How many network builds of this process are inside :func:`building` now, and whether
#: the collector was on when the first of them began.
_builds = 0
_was_enabled = True
#: How many bodies of :func:`collector_off` are running now, and whether the collector was
#: on when the first began.
_offs = 0
_off_was_enabled = True


@contextmanager
def quiet_gc(nodes: int = 0) -> Iterator[None]:
    """Keep the cyclic GC off the long-lived network during the slot loop (of ``nodes`` nodes).

    The network (tasks, contexts, outlets, queues) is built once and lives for the whole
    run; the slot loop allocates only short-lived messages. Freezing the former and
    collecting the young generation less often saves about a fifth of the time per
    packet-hop (``benchmarks/deflection_throughput.py``). The young generation's threshold
    grows with the network (:data:`YOUNG_PER_NODE`). Settings are restored on exit.

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
        gc.set_threshold(max(_saved[0], 50_000, YOUNG_PER_NODE * nodes), _saved[1], _saved[2])
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            gc.set_threshold(*_saved)
            gc.unfreeze()


@contextmanager
def building() -> Iterator[None]:
    """Keep the cyclic GC off while a network is built, and freeze what was built.

    Building a network allocates millions of long-lived objects and almost no garbage, so
    every collection during the build walks a growing heap to free nothing: on the
    2**19-node shard of a 2**20-node run, 14 full collections took 13 s of its start-up,
    the longest 5.8 s, all of it holding the GIL -- long enough, on a busy machine, that
    the shard's heartbeat thread could not beat and the coordinator named it frozen. A
    build that ends normally leaves its objects frozen (``gc.freeze``), so no collection
    walks them until the slot loop's end unfreezes them (:func:`quiet_gc`); a build that
    fails leaves them to the collector. The collector's on/off state is restored on exit;
    builds that overlap in one process (shards held in memory) share it: the first in
    turns it off, the last out freezes and restores.
    """
    global _builds, _was_enabled
    if not _builds:
        _was_enabled = gc.isenabled()
        gc.disable()
    _builds += 1
    ok = False
    try:
        yield
        ok = True
    finally:
        _builds -= 1
        if not _builds:
            if ok:
                gc.freeze()
            if _was_enabled:
                gc.enable()


@contextmanager
def collector_off() -> Iterator[None]:
    """No automatic collection at all in the body (a shard's whole run: build, slots, final state).

    A collection holds the GIL for as long as it walks: in a shard of a few hundred
    thousand nodes, young collections of one slot's survivors took up to 2 s and full
    ones 4 to 8 s on a busy 2-core machine (2**18 and 2**19 nodes, 5 slots), and the
    unfrozen network after the slot loop is a heap of gigabytes. Meanwhile the shard's
    heartbeat thread cannot beat, and the coordinator names a working shard frozen. A run
    leaves little cyclic garbage (606 objects after 300 slots of deflection on the
    12-cube), so a shard runs without the collector; it runs again, if it was on, once
    the body ends (the last of overlapping bodies: shards held in memory). Explicit
    ``gc.collect`` calls (:func:`quiet_gc`'s) still run.
    """
    global _offs, _off_was_enabled
    if not _offs:
        _off_was_enabled = gc.isenabled()
        gc.disable()
    _offs += 1
    try:
        yield
    finally:
        _offs -= 1
        if not _offs and _off_was_enabled:
            gc.enable()
