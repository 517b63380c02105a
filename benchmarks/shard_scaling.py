"""Where a sharded run's time goes: wall time, speed-up and the per-slot split, for K = 1, 2, ...

For each shard count K it runs a scheme (deflection unless ``--scheme`` says otherwise) on
hypercube:d at the load given (``--offered v`` for deflection, else ``--load NAME=VALUE``),
each run in a fresh process, and prints:

* ``wall s`` -- seconds of slots 1 .. the last (no network building, no shard start-up);
* ``speed-up`` -- the one-process run's wall over this one's; ``efficiency`` -- speed-up / K;
* ``cpu main s``, ``cpu procs s`` -- CPU seconds (user + system) of the run's own process
  (one process, or the coordinator) and of the processes it started (the shards and the
  broker), start-up included: on a busy machine, less noisy than the wall time;
* ``reporting`` -- for K > 1, where the events were reported: ``merged`` (each shard's own
  reporter, for a reporter that merges) or ``replayed`` (at the coordinator). ``--replay``
  makes a merging reporter replay (its class's declaration removed in every process of the
  run, through a ``sitecustomize`` on the children's path), to measure what merging saves;
* per slot, in milliseconds, for K > 1 (``SLOTNET_SHARD_TIMING=1``; the mean over the
  shards of each shard's part): ``node work`` (the nodes' steps), ``encoding`` (frames
  made and sent, frames taken in), ``broker`` (a shard waiting for the other shards'
  frames after the go), ``barrier`` (a shard waiting for the go: the slowest shard and the
  coordinator), and ``coordinator`` (the coordinator merging the shards' summaries -- or, for a
  reporter that does not merge, replaying their events -- and closing the slot).
* for K > 1, from each shard's node work slot by slot: ``m run`` -- the mean over slots of
  the slowest shard's node work over the mean shard's (every slot ends with an exchange, so
  each lasts as long as its slowest shard's: ``benchmarks/shard_ceiling.py``'s m, measured in
  the run itself), and ``lock-step`` -- the milliseconds a slot that costs, the slowest
  shard's node work less the mean shard's: of the ``broker`` wait, the part that is the
  shards' imbalance rather than the frames' trip.

K = 1 is the one-process run (no broker); ``--shards`` lists the K to run beside it.
``--repeat N`` runs them all N times, interleaved (K = 1, 2, ..., then again), each speed-up
against its own round's one-process run, and prints the median speed-up per K: on a
shared host one pair of runs moves by a tenth either way, a median of rounds less.
``benchmarks/shard_ceiling.py`` measures the most K shards could gain on the machine.

    python benchmarks/shard_scaling.py                           # d = 10, 200 slots, K = 1 2
    python benchmarks/shard_scaling.py --dim 13 --slots 1100 --shards 2 4
    python benchmarks/shard_scaling.py --dim 13 --slots 400 --repeat 3     # median of 3 interleaved rounds
    python benchmarks/shard_scaling.py --scheme star --load rho=0.6 --dim 11 --slots 200
    python benchmarks/shard_scaling.py --scheme star --load rho=0.6 --dim 11 --slots 200 --replay

A shared machine makes every figure noisy; K shards need K cores (plus the coordinator's
and the broker's) to run side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

#: what ``--replay`` puts first on the children's path: every process of the run (the shards
#: are processes of their own) imports it at start-up and drops the reporter's declaration
_REPLAY = """from slotnet import RunSpec
prep = RunSpec({scheme!r}, "hypercube:2", load={load!r}, params={params!r}).prepare()
cls = type(prep.scheme.reporter(prep.setup))
if "merges_shards" in vars(cls):
    cls.merges_shards = False
"""


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--{what} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def one(scheme: str, d: int, load: dict[str, float], params: dict[str, str], slots: int, seed: int, k: int) -> dict:
    """One run in this process: its loop seconds, and the timing split of a sharded one."""
    import trio

    import slotnet

    marks: dict[int, float] = {}

    def on_slot(slot: int) -> None:
        if slot in (0, slots - 1):
            marks[slot] = time.perf_counter()

    spec = slotnet.RunSpec(scheme, f"hypercube:{d}", load=load, params=params, slots=slots, seed=seed, shards=k)
    result = trio.run(lambda: slotnet.run_async(spec, on_slot=on_slot))
    timing = result.transport.get("timing")
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"k": k, "wall_s": marks[slots - 1] - marks[0], "timing": timing,
            "cpu_self_s": me.ru_utime + me.ru_stime, "cpu_children_s": kids.ru_utime + kids.ru_stime,
            "reporting": result.transport.get("reporting", "-"), "build": result.performance["build"],
            "metrics": json.dumps(result.to_dict()["metrics"], sort_keys=True, default=str)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scheme", default="deflection")
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--offered", type=float, default=1.0, help="deflection's offered load (without --load)")
    ap.add_argument("--load", action="append", default=[], metavar="NAME=VALUE", help="the load, e.g. rho=0.6")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a scheme parameter")
    ap.add_argument("--replay", action="store_true", help="K > 1: the coordinator replays every event")
    ap.add_argument("--slots", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, nargs="+", default=[2])
    ap.add_argument("--repeat", type=int, default=1, help="rounds, interleaved; the median speed-up per K")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    load = {name: float(v) for name, v in _pairs(args.load, "load").items()} or {"offered": args.offered}
    params = _pairs(args.param, "param")
    if args.child is not None:
        print(json.dumps(one(args.scheme, args.dim, load, params, args.slots, args.seed, args.child)))
        return
    if args.repeat < 1:
        raise SystemExit("--repeat must be at least 1")
    from slotnet._build import build

    built = build()  # which hot path the runs take (an edited source in an editable install runs pure)
    print(f"{args.scheme}, hypercube:{args.dim}, {', '.join(f'{n} = {v:g}' for n, v in load.items())}"
          f"{''.join(f', {n}={v}' for n, v in params.items())}, {args.slots} slots, seed {args.seed}"
          f" ({os.cpu_count()} cores, {built} build)")
    head = ["K", "wall s", "speed-up", "efficiency", "node work", "encoding", "broker", "barrier", "coordinator",
            "m run", "lock-step", "cpu main s", "cpu procs s", "reporting", "same"]
    print("  ".join(f"{h:>11}" for h in head) + "   (parts: ms per slot)")
    speeds: dict[int, list[float]] = {k: [] for k in args.shards}
    with tempfile.TemporaryDirectory() as site:
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write(_REPLAY.format(scheme=args.scheme, load=load, params=params))
        others = set()
        for _ in range(args.repeat):
            rows = [_child(args, k, load, params, site) for k in [1, *args.shards]]
            _print_round(rows, args.slots, speeds)
            others |= {r["build"] for r in rows} - {built}
    if others:
        print(f"warning: some runs took another build ({', '.join(sorted(others))}) than {built}: "
              "a compiled module's source changed during the benchmark; the rounds do not compare")
    print("(the split: each part's seconds over the run's slots, divided by the slots; building the nodes"
          " is left out. cpu: CPU seconds of the whole run, start-up included: main = the run's own process"
          " (the coordinator), procs = the processes it started (shards, broker))")
    if args.repeat > 1:
        for k, got in speeds.items():
            print(f"K = {k}: median speed-up {statistics.median(got):.2f} over {len(got)} rounds "
                  f"({', '.join(f'{x:.2f}' for x in got)})")


def _child(args: argparse.Namespace, k: int, load: dict[str, float], params: dict[str, str], site: str) -> dict:
    """One run with ``k`` shards (1: one process) in a fresh process."""
    cmd = [sys.executable, __file__, "--scheme", args.scheme, "--dim", str(args.dim), "--slots",
           str(args.slots), "--seed", str(args.seed), "--child", str(k)]
    cmd += [f"--load={n}={v}" for n, v in load.items()] + [f"--param={n}={v}" for n, v in params.items()]
    env = {**os.environ, "SLOTNET_SHARD_TIMING": "1"}
    if args.replay and k > 1:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
    return json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)


def _lock_step(per_shard: list[list[float]]) -> tuple[float, float]:
    """(m, seconds) of the shards' node work slot by slot: the mean slowest over the mean shard's,
    and the mean of the slowest less the mean shard's (what a slot loses waiting for the slowest)."""
    slots = list(zip(*per_shard))
    slowest = statistics.fmean(max(s) for s in slots)
    mean = statistics.fmean(statistics.fmean(s) for s in slots)
    return slowest / mean, slowest - mean


def _print_round(rows: list[dict], slots: int, speeds: dict[int, list[float]]) -> None:
    """One round's rows (its one-process run first); each K's speed-up added to ``speeds``."""
    base = rows[0]["wall_s"]
    for r in rows:
        speed = base / r["wall_s"]
        if r["k"] in speeds:
            speeds[r["k"]].append(speed)
        cells = [str(r["k"]), f"{r['wall_s']:.2f}", f"{speed:.2f}", f"{speed / r['k']:.2f}"]
        t = r["timing"]
        if t:
            per = [sum(s.get(p, 0.0) for s in t["shards"]) / len(t["shards"]) / slots * 1e3
                   for p in ("node_work", "encoding", "broker", "barrier")]
            per.append(t["coordinator"].get("coordinator", 0.0) / slots * 1e3)
            cells += [f"{x:.2f}" for x in per]
            m, lost = _lock_step(t["node_work_slots"])
            cells += [f"{m:.3f}", f"{lost * 1e3:.2f}"]
        else:
            cells += ["-"] * 7
        cells += [f"{r['cpu_self_s']:.1f}", f"{r['cpu_children_s']:.1f}", r.get("reporting", "-")]
        cells.append("yes" if r["metrics"] == rows[0]["metrics"] else "NO")
        print("  ".join(f"{c:>11}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
