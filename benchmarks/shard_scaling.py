"""Where a sharded run's time goes: wall time, speed-up and the per-slot split, for K = 1, 2, ...

For each shard count K it runs deflection on hypercube:d at offered load v, each run in a
fresh process, and prints:

* ``wall s`` -- seconds of slots 1 .. the last (no network building, no shard start-up);
* ``speed-up`` -- the one-process run's wall over this one's; ``efficiency`` -- speed-up / K;
* ``cpu main s``, ``cpu procs s`` -- CPU seconds (user + system) of the run's own process
  (one process, or the coordinator) and of the processes it started (the shards and the
  broker), start-up included: on a busy machine, less noisy than the wall time;
* ``reporting`` -- for K > 1, where the events were reported: ``merged`` (each shard's own
  reporter; deflection's) or ``replayed`` (at the coordinator);
* per slot, in milliseconds, for K > 1 (``SLOTNET_SHARD_TIMING=1``; the mean over the
  shards of each shard's part): ``node work`` (the nodes' steps), ``encoding`` (frames
  made and sent, frames taken in), ``broker`` (a shard waiting for the other shards'
  frames after the go), ``barrier`` (a shard waiting for the go: the slowest shard and the
  coordinator), and ``coordinator`` (the coordinator merging the shards' summaries -- or, for a
  reporter that does not merge, replaying their events -- and closing the slot).

K = 1 is the one-process run (no broker); ``--shards`` lists the K to run beside it.

    python benchmarks/shard_scaling.py                           # d = 10, 200 slots, K = 1 2
    python benchmarks/shard_scaling.py --dim 13 --slots 1100 --shards 2 4

A shared machine makes every figure noisy; K shards need K cores (plus the coordinator's
and the broker's) to run side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def one(d: int, v: float, slots: int, seed: int, k: int) -> dict:
    """One run in this process: its loop seconds, and the timing split of a sharded one."""
    import trio

    import slotnet

    marks: dict[int, float] = {}

    def on_slot(slot: int) -> None:
        if slot in (0, slots - 1):
            marks[slot] = time.perf_counter()

    spec = slotnet.RunSpec("deflection", f"hypercube:{d}", load={"offered": v}, slots=slots, seed=seed, shards=k)
    result = trio.run(lambda: slotnet.run_async(spec, on_slot=on_slot))
    timing = result.transport.get("timing")
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"k": k, "wall_s": marks[slots - 1] - marks[0], "timing": timing,
            "cpu_self_s": me.ru_utime + me.ru_stime, "cpu_children_s": kids.ru_utime + kids.ru_stime,
            "reporting": result.transport.get("reporting", "-"),
            "metrics": json.dumps(result.to_dict()["metrics"], sort_keys=True, default=str)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--offered", type=float, default=1.0)
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, nargs="+", default=[2])
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(one(args.dim, args.offered, args.slots, args.seed, args.child)))
        return
    rows = []
    for k in [1, *args.shards]:
        cmd = [sys.executable, __file__, "--dim", str(args.dim), "--offered", str(args.offered), "--slots",
               str(args.slots), "--seed", str(args.seed), "--child", str(k)]
        env = {**os.environ, "SLOTNET_SHARD_TIMING": "1"}
        rows.append(json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout))
    base = rows[0]["wall_s"]
    print(f"deflection, hypercube:{args.dim}, v = {args.offered:g}, {args.slots} slots, seed {args.seed}"
          f" ({os.cpu_count()} cores)")
    head = ["K", "wall s", "speed-up", "efficiency", "node work", "encoding", "broker", "barrier", "coordinator",
            "cpu main s", "cpu procs s", "reporting", "same"]
    print("  ".join(f"{h:>11}" for h in head) + "   (parts: ms per slot)")
    for r in rows:
        speed = base / r["wall_s"]
        cells = [str(r["k"]), f"{r['wall_s']:.2f}", f"{speed:.2f}", f"{speed / r['k']:.2f}"]
        t = r["timing"]
        if t:
            per = [sum(s.get(p, 0.0) for s in t["shards"]) / len(t["shards"]) / args.slots * 1e3
                   for p in ("node_work", "encoding", "broker", "barrier")]
            per.append(t["coordinator"].get("coordinator", 0.0) / args.slots * 1e3)
            cells += [f"{x:.2f}" for x in per]
        else:
            cells += ["-"] * 5
        cells += [f"{r['cpu_self_s']:.1f}", f"{r['cpu_children_s']:.1f}", r.get("reporting", "-")]
        cells.append("yes" if r["metrics"] == rows[0]["metrics"] else "NO")
        print("  ".join(f"{c:>11}" for c in cells))
    print("(the split: each part's seconds over the run's slots, divided by the slots; building the nodes"
          " is left out. cpu: CPU seconds of the whole run, start-up included: main = the run's own process"
          " (the coordinator), procs = the processes it started (shards, broker))")


if __name__ == "__main__":
    main()
