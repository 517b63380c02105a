"""Sharded runs against the one-process run: wall time, throughput, cross-shard traffic.

Runs one deflection workload (hypercube:D, offered load v) in one process and over K
shard processes through a private mosquitto, checks that every sharded result equals
the one-process one, and prints per K: wall seconds (slots only for K = 1; the whole
run, shard start-up and broker included, for K > 1), packet-hops per second, the share
of messages that crossed shards, and the broker frames per slot.

    python benchmarks/sharded_scaling.py                      # d = 10, 200 slots, K = 1 2 4
    python benchmarks/sharded_scaling.py --dim 12 --slots 300 --shards 1,2

The machine's core count bounds the speed-up: K shards run K Python processes.
"""

from __future__ import annotations

import argparse
import os
import time

import slotnet


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--offered", type=float, default=1.0)
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    base = dict(scheme="deflection", topology=f"hypercube:{a.dim}", load={"offered": a.offered}, slots=a.slots,
                warmup=0, seed=a.seed)
    print(f"deflection hypercube:{a.dim} v={a.offered} {a.slots} slots, {os.cpu_count()} cores")
    print(f"{'K':>3} {'wall s':>8} {'hops/s':>10} {'cross':>6}  same as K=1")
    reference = None
    for k in (int(x) for x in a.shards.split(",")):
        t0 = time.perf_counter()
        r = slotnet.run(slotnet.RunSpec(**base, shards=k))
        wall = time.perf_counter() - t0
        d = r.to_dict(per_node=True)
        same = "" if reference is None else ("yes" if all(d[x] == reference[x] for x in ("metrics", "invariants", "per_node")) else "NO")
        reference = reference or d
        cross = r.transport.get("cross_shard_fraction", 0.0)
        print(f"{k:>3} {wall:>8.2f} {r.performance['messages'] / wall:>10.0f} {cross:>6.1%}  {same}")


if __name__ == "__main__":
    main()
