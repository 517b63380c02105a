"""The most K shards could gain on this machine: one run alone, then K copies side by side, free and in lock-step.

A run sharded over K processes of one machine does at best K times as fast as one process,
and less where

* ``c``: processes running side by side slow each other down (caches and memory bandwidth
  shared, the host's own sharing of its cores): ``c`` = a copy's wall time among K copies
  running at once, over the same run's alone;
* ``m``: a slot lasts as long as its slowest shard's. Each slot's work takes a different
  time from one slot to the next on a shared host, and the shards exchange their frames
  at every slot's end, so each waits for the slowest: ``m`` = the copies' wall time in
  lock-step (a barrier at every slot's end, nothing exchanged) over their wall time free.

This script measures both without any of the shards' machinery (no frames, no broker, no
coordinator). It runs one deflection job (hypercube:d at offered load v) in a fresh
process alone, then K copies of it at once (free), then K copies in lock-step, and repeats
the three ``--repeat`` times, interleaved, printing each round and the median. The
**ceiling** ``K / (c * m)`` is the speed-up a run of K times the work would show on K
shards if sharding cost nothing else: what ``benchmarks/shard_scaling.py`` measures
for the real shards is to be read against it. (It takes a run of K times the work to
cost K times as much in one process; a shard of the K-times-larger cube does about one
copy's work.)

    python benchmarks/shard_ceiling.py                         # d = 12, 200 slots, K = 2, 3 rounds
    python benchmarks/shard_ceiling.py --dim 12 --slots 300 --repeat 5

Wall times are slots 1 .. the last (no network building), per copy; ``m`` and ``c`` use the
mean over the copies.

``slot cpu ms`` shows where ``m`` comes from: the CPU time the run alone spends on each
slot (its thread's own, so not time spent waiting), as the 10th, 50th and 90th
percentiles over the run's second half (past the slots in which the network fills up).
Each of those slots does nearly the same work; a
wide spread is the host running the same work at different speeds from one stretch of
slots to the next, which copies in lock-step pay as the slowest copy's slot.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from typing import Any


def _copy(d: int, v: float, slots: int, seed: int, barrier: Any, out: Any) -> None:
    """One copy of the run, in a process of its own: put its wall seconds over slots 1 .. the
    last, and the CPU seconds of its thread in each of those slots."""
    import trio

    import slotnet

    marks: dict[int, float] = {}
    cpu: list[float] = []

    def on_slot(slot: int) -> None:
        cpu.append(time.thread_time())
        if barrier is not None:
            barrier.wait()  # every copy closes the slot before any goes on: the shards' exchange, without the frames
        if slot in (0, slots - 1):
            marks[slot] = time.perf_counter()

    spec = slotnet.RunSpec("deflection", f"hypercube:{d}", load={"offered": v}, slots=slots, seed=seed)
    result = trio.run(lambda: slotnet.run_async(spec, on_slot=on_slot))
    out.put((marks[slots - 1] - marks[0], [b - a for a, b in zip(cpu, cpu[1:])], result.performance["build"]))


def _spread(per_slot: list[float]) -> str:
    """The 10th, 50th and 90th percentiles of a slot's CPU time over the run's second half, in
    ms, as ``p10/p50/p90``."""
    steady = per_slot[len(per_slot) // 2:]
    if len(steady) < 2:
        return "-"
    deciles = statistics.quantiles(steady, n=10, method="inclusive")
    return f"{deciles[0] * 1000:.0f}/{statistics.median(steady) * 1000:.0f}/{deciles[-1] * 1000:.0f}"


def _round(ctx: Any, k: int, d: int, v: float, slots: int, seed: int, lockstep: bool
           ) -> tuple[float, list[float], set[str]]:
    """The mean wall seconds of ``k`` copies run at once (``k`` = 1: alone), in lock-step or
    free, the first copy's CPU seconds per slot, and the builds the copies ran."""
    out = ctx.Queue()
    barrier = ctx.Barrier(k) if lockstep else None
    procs = [ctx.Process(target=_copy, args=(d, v, slots, seed, barrier, out)) for _ in range(k)]
    for p in procs:
        p.start()
    got = [out.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode:
            raise SystemExit(f"a copy exited with status {p.exitcode}")
    return statistics.mean(wall for wall, _, _ in got), got[0][1], {b for _, _, b in got}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=12)
    ap.add_argument("--offered", type=float, default=1.0)
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=2, help="K: the copies side by side")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.shards < 2 or args.slots < 2 or args.repeat < 1:
        raise SystemExit("--shards must be at least 2, --slots at least 2, --repeat at least 1")
    ctx = mp.get_context("spawn")  # fresh interpreters, as the shards are
    k = args.shards
    from slotnet._build import build

    built = build()  # which hot path the copies take (an edited source in an editable install runs pure)
    print(f"deflection, hypercube:{args.dim}, v = {args.offered:g}, {args.slots} slots, seed {args.seed}, "
          f"K = {k} ({os.cpu_count()} cores, python {sys.version.split()[0]}, {built} build)")
    print(f"{'round':>5} {'alone s':>8} {'free s':>8} {'lockstep s':>10} {'c':>6} {'m':>6} {'ceiling':>8} "
          f"{'slot cpu ms':>14}")
    cs, ms, ceilings = [], [], []
    builds: set[str] = set()
    for i in range(args.repeat):
        alone, per_slot, b1 = _round(ctx, 1, args.dim, args.offered, args.slots, args.seed, False)
        free, _, b2 = _round(ctx, k, args.dim, args.offered, args.slots, args.seed, False)
        lock, _, b3 = _round(ctx, k, args.dim, args.offered, args.slots, args.seed, True)
        builds |= b1 | b2 | b3
        c, m = free / alone, lock / free
        cs.append(c)
        ms.append(m)
        ceilings.append(k / (c * m))
        print(f"{i + 1:>5} {alone:>8.2f} {free:>8.2f} {lock:>10.2f} {c:>6.3f} {m:>6.3f} {k / (c * m):>8.2f} "
              f"{_spread(per_slot):>14}", flush=True)
    print(f"{'median':>5} {'':>8} {'':>8} {'':>10} {statistics.median(cs):>6.3f} {statistics.median(ms):>6.3f} "
          f"{statistics.median(ceilings):>8.2f}")
    print("(c: a copy's wall among K at once over alone; m: lock-step over free; ceiling: K / (c m), the most K "
          "shards could gain here; slot cpu: the run alone, its thread's CPU ms per slot, p10/p50/p90)")
    if builds - {built}:
        print(f"warning: some copies took another build ({', '.join(sorted(builds - {built}))}) than {built}: "
              "a compiled module's source changed during the benchmark; the rounds do not compare")


if __name__ == "__main__":
    main()
