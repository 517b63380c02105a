"""Sharded runs against the one-process run: µs per hop, node-slots per second, peak memory.

For each dimension d and shard count K it runs deflection on hypercube:d at offered load
v in a fresh process (so peak memory is that run's own) and prints:

* ``loop s`` -- wall seconds of slots 1 .. the last (no network building, no shard
  start-up or broker; those are ``setup s``);
* ``us/hop`` -- loop seconds per packet-hop; ``node-slots/s`` -- nodes x slots per
  loop second;
* ``peak MiB`` -- the largest resident size of the run's processes: for K = 1 the one
  process; for K > 1 the coordinator and the largest shard (``coord/shard``);
* ``cross`` -- the share of messages that crossed shards;
* ``build`` -- the hot path the run's processes ran: ``compiled`` or ``pure``
  (``SLOTNET_PURE_PYTHON=1``; see ``slotnet/_build.py``);
* ``same`` -- whether metrics, invariants and per-node figures equal the K = 1 run's.

    python benchmarks/sharded_scaling.py                                  # d = 10, 200 slots, K = 1 2
    python benchmarks/sharded_scaling.py --dims 10 12 13 --slots 200      # the issue's table
    python benchmarks/sharded_scaling.py --dims 13 --slots 1100 --shards 2  # the d = 13 target run

The machine's core count bounds the speed-up: K shards run K Python processes, plus the
coordinator and the broker.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time


def one(d: int, v: float, slots: int, seed: int, k: int) -> dict:
    import trio

    import slotnet

    marks: dict[int, float] = {}

    def on_slot(slot: int) -> None:
        if slot == 0 or slot == slots - 1:
            marks[slot] = time.perf_counter()

    spec = slotnet.RunSpec("deflection", f"hypercube:{d}", load={"offered": v}, slots=slots, warmup=0, seed=seed,
                           shards=k)
    t0 = time.perf_counter()
    result = trio.run(lambda: slotnet.run_async(spec, on_slot=on_slot))
    t1 = time.perf_counter()
    hops = result.performance["messages"]
    loop = marks[slots - 1] - marks[0]
    out = result.to_dict(per_node=True)
    digest = hashlib.sha256(json.dumps([out[x] for x in ("metrics", "invariants", "per_node")], sort_keys=True,
                                       default=str).encode()).hexdigest()
    return {
        "d": d, "k": k, "slots": slots, "hops": hops, "loop_s": loop, "setup_s": (marks[0] - t0) + (t1 - marks[slots - 1]),
        "us_per_hop": loop / hops * 1e6, "node_slots_per_s": (1 << d) * (slots - 1) / loop,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_child_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "cross": result.transport.get("cross_shard_fraction", 0.0), "digest": digest,
        "mean_delay": result.metrics["mean_delay"], "ok": result.invariants["ok"], "build": result.performance["build"],
    }


def _child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"run {' '.join(args)} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, nargs="+", default=[10])
    ap.add_argument("--offered", type=float, default=1.0)
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--shards", default="1,2", help="comma-separated shard counts (1 = in-process)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        d, v, slots, seed, k = a.child
        print(json.dumps(one(int(d), float(v), int(slots), int(seed), int(k))))
        return
    ks = [int(x) for x in a.shards.split(",")]
    print(f"deflection, v = {a.offered}, {a.slots} slots, seed {a.seed}, {os.cpu_count()} cores "
          f"(python {sys.version.split()[0]})")
    print(f"{'d':>3} {'K':>2} {'loop s':>8} {'setup s':>7} {'us/hop':>7} {'node-slots/s':>12} {'peak MiB':>13} "
          f"{'cross':>6} {'delay':>7} {'build':>8} same")
    for d in a.dims:
        ref = None
        for k in ks:
            r = _child([str(d), str(a.offered), str(a.slots), str(a.seed), str(k)])
            ref = ref or r["digest"]
            peak = f"{r['peak_mib']:.0f}" if k == 1 else f"{r['peak_mib']:.0f}/{r['peak_child_mib']:.0f}"
            same = "-" if r["digest"] == ref and k == ks[0] else ("yes" if r["digest"] == ref else "NO")
            print(f"{d:>3} {k:>2} {r['loop_s']:>8.1f} {r['setup_s']:>7.1f} {r['us_per_hop']:>7.2f} "
                  f"{r['node_slots_per_s']:>12.0f} {peak:>13} {r['cross']:>6.1%} {r['mean_delay']:>7.3f} {r['build']:>8} {same}",
                  flush=True)


if __name__ == "__main__":
    main()
