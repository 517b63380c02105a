"""Throughput and scaling of the emulator on one-pass deflection routing.

For each dimension d (each in a fresh subprocess, so peak memory is its own) it runs
deflection at offered load v and prints: packet-hops per second, node-slots per second,
wall seconds per slot (slots 1 to the last, i.e. without building or tearing down the
network; set-up and tear-down are printed apart), peak
resident memory, and -- measured in the same process right after the run -- the bare
msgpack encode+decode cost of packets of the same shape, so the emulator's cost per
packet-hop is reported as a multiple of that floor.

    python benchmarks/deflection_throughput.py                     # d = 6 8 10 12 13, 200 slots
    python benchmarks/deflection_throughput.py --dims 13 --slots 1100   # the paper's d=13 point
    python benchmarks/deflection_throughput.py --idle               # idle nodes cost nothing
    python benchmarks/deflection_throughput.py --dims 12 --build both   # compiled hot path against pure Python
    python benchmarks/deflection_throughput.py --dims 12 --rng philox mt   # the two node generators side by side

The ``build`` column says which build of the hot path ran (``slotnet/_build.py``):
``compiled`` (the Cython extensions setup.py builds from the same sources) or ``pure``
(``SLOTNET_PURE_PYTHON=1``). ``--build both`` runs each d in both, alternately, and
checks that they gave the same run.

``gc s`` is the time the cyclic garbage collector took during the slot loop (slots 1 to
the last, from ``gc.callbacks``), ``cpu s`` the loop's CPU seconds (its thread's): on a
shared host, steadier than the wall time.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import resource
import subprocess
import sys
import time

import msgpack
import trio

from slotnet._build import child_env
from slotnet.nodes.runtime import DEFAULT_RNG, RNG_KINDS


def _floor(n_nodes: int, slots: int, samples: int = 300_000) -> float:
    """Seconds per packet to msgpack-encode and decode (dest, entered_slot, origin)."""
    rnd = random.Random(1)
    pkts = [(rnd.randrange(n_nodes), rnd.randrange(slots), rnd.randrange(n_nodes)) for _ in range(samples)]
    pack = msgpack.Packer().pack
    unpackb = msgpack.unpackb
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for p in pkts:
            unpackb(pack(p), use_list=False, strict_map_key=False)
        best = min(best, time.perf_counter() - t0)
    return best / samples


def one(d: int, v: float, slots: int, seed: int, rng: str) -> dict:
    import slotnet

    marks: dict[int, float] = {}
    cpu: dict[int, float] = {}
    collecting = [0.0, 0.0, False]  # seconds in the collector during the loop, the current start, in the loop

    def on_slot(slot: int) -> None:
        if slot == 0 or slot == slots - 1:
            marks[slot] = time.perf_counter()
            cpu[slot] = time.thread_time()
            collecting[2] = slot == 0

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            collecting[1] = time.perf_counter()
        elif collecting[2]:
            collecting[0] += time.perf_counter() - collecting[1]

    spec = slotnet.RunSpec("deflection", f"hypercube:{d}", load={"offered": v}, slots=slots, warmup=0, seed=seed, rng=rng)
    t0 = time.perf_counter()
    gc.callbacks.append(on_gc)
    try:
        result = trio.run(lambda: slotnet.run_async(spec, on_slot=on_slot))
    finally:
        gc.callbacks.remove(on_gc)
    t1 = time.perf_counter()
    hops = result.performance["messages"]
    loop = marks[slots - 1] - marks[0]  # slots 1 .. slots-1: no set-up, no tear-down
    floor = _floor(1 << d, slots)
    per_hop = loop / hops if hops else float("nan")
    return {
        "d": d, "v": v, "nodes": 1 << d, "slots": slots, "hops": hops,
        "setup_s": marks[0] - t0, "loop_s": loop, "teardown_s": t1 - marks[slots - 1],
        "loop_cpu_s": cpu[slots - 1] - cpu[0], "gc_s": collecting[0],
        "hops_per_s": hops / loop, "node_slots_per_s": (1 << d) * (slots - 1) / loop,
        "wall_per_slot_ms": loop / (slots - 1) * 1e3,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "us_per_hop": per_hop * 1e6, "floor_us": floor * 1e6, "ratio_to_floor": per_hop / floor,
        "invariants_ok": result.invariants["ok"], "link_utilization": result.metrics["link_utilization"],
        "mean_delay": result.metrics["mean_delay"], "build": result.performance["build"], "rng": rng,
    }


def _child(args: list[str], pure: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True,
                         env=child_env(pure))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, nargs="+", default=[6, 8, 10, 12, 13])
    ap.add_argument("--v", type=float, default=1.0)
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--idle", action="store_true", help="light load on d=10 and d=14 with equal total traffic")
    ap.add_argument("--build", choices=("installed", "pure", "both"), default="installed",
                    help="installed: the hot path as installed (compiled where it could be); pure: SLOTNET_PURE_PYTHON=1; "
                         "both: each d in both builds, alternately")
    ap.add_argument("--rng", nargs="+", choices=RNG_KINDS, default=[DEFAULT_RNG],
                    help=f"the nodes' random generator (RunSpec.rng; default {DEFAULT_RNG}); two: each d with both, "
                         "alternately")
    ap.add_argument("--child", nargs=5, metavar=("D", "V", "SLOTS", "SEED", "RNG"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        d, v, slots, seed, rng = a.child
        print(json.dumps(one(int(d), float(v), int(slots), int(seed), rng)))
        return
    if a.idle:
        rows = [_child([str(d), str(v), str(a.slots), str(a.seed), a.rng[0]]) for d, v in ((10, 0.016), (14, 0.001))]
        print(f"{'d':>3} {'nodes':>6} {'v':>6} {'hops/slot':>10} {'ms/slot':>8} {'us/hop':>7} {'setup s':>8} {'teardown s':>10}")
        for r in rows:
            print(f"{r['d']:>3} {r['nodes']:>6} {r['v']:>6} {r['hops'] / r['slots']:>10.1f} "
                  f"{r['wall_per_slot_ms']:>8.2f} {r['us_per_hop']:>7.2f} {r['setup_s']:>8.2f} {r['teardown_s']:>10.2f}")
        return
    print(f"deflection, v = {a.v}, {a.slots} slots, seed {a.seed} (python {sys.version.split()[0]})")
    print(f"{'d':>3} {'nodes':>6} {'build':>8} {'rng':>6} {'hops/s':>9} {'node-slots/s':>12} {'ms/slot':>8} {'peak MiB':>9} "
          f"{'us/hop':>7} {'floor us':>8} {'x floor':>7} {'setup s':>7} {'loop s':>7} {'cpu s':>7} {'gc s':>6} ok")
    builds = {"installed": (False,), "pure": (True,), "both": (False, True)}[a.build]
    for d in a.dims:
        rows = [_child([str(d), str(a.v), str(a.slots), str(a.seed), rng], pure) for pure in builds for rng in a.rng]
        for r in rows:
            print(f"{r['d']:>3} {r['nodes']:>6} {r['build']:>8} {r['rng']:>6} {r['hops_per_s']:>9.0f} {r['node_slots_per_s']:>12.0f} "
                  f"{r['wall_per_slot_ms']:>8.2f} {r['peak_rss_mib']:>9.0f} {r['us_per_hop']:>7.2f} "
                  f"{r['floor_us']:>8.3f} {r['ratio_to_floor']:>7.1f} {r['setup_s']:>7.2f} {r['loop_s']:>7.1f} "
                  f"{r['loop_cpu_s']:>7.1f} {r['gc_s']:>6.2f} {r['invariants_ok']}", flush=True)
        if len(builds) == 2 and len(a.rng) == 1:
            same = all(rows[0][k] == rows[1][k] for k in ("hops", "link_utilization", "mean_delay", "invariants_ok"))
            print(f"    compiled/pure time per hop {rows[0]['us_per_hop'] / rows[1]['us_per_hop']:.2f}; "
                  f"same run (hops, utilization, delay): {same}", flush=True)


if __name__ == "__main__":
    main()
