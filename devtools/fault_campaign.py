"""A fault campaign: random fault schedules over every registered scheme, each run checked.

Runs N random schedules, spread evenly over the schemes that run under at least one fault
kind, on small topologies, in a process pool. Each scheme's samples come in blocks of 20,
and block ``b`` is exactly ``slotnet explore SCHEME -t TOPO ... --slots L --seed S --faults
random --samples 20`` (its topology, load and run length rotate with ``b``; its seed is
``1000 * --seed + b``), so every sample is judged and checked as ``explore --faults random``
does (see ``slotnet.orchestrator.tools._explore``): a refusal, a crash, a second run that
differs (every 20th sample), ``invariants.ok`` false (unaccounted), a packet book that does
not close, and explore's own verdict (an avoidable loss or a missed broadcast).

A scheme that runs under no fault kind gets a few fault-free runs instead (checked the
same way, over the same rotation of topologies, seeds and run lengths): they are counted
apart, not among the N schedules.

A scheme this file does not list (a user's own) gets a campaign too, on a small topology
of its first kind (``hypercube:3``, ``torus:4x4``, ``mesh:4x4``) with its first load at
0.3; ``--config SCHEME=TOPO[,LOAD=V][,param:K=V]`` replaces the table's choice.

Prints, per scheme, the counts of every class, then for each failure class the first
sample that fell in it, with the ``slotnet run`` command that replays it and the
``slotnet explore`` command whose last sample it is. "wrong" counts samples that crashed,
were nondeterministic, unaccounted or whose books did not close.

Usage:
    python devtools/fault_campaign.py -n 2000 [--seed S] [--jobs 2] [--scheme NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from typing import Any

#: scheme -> [(topology, load, params), ...] rotated by block; run lengths rotated with them
CONFIGS: dict[str, list[tuple[str, dict[str, float], dict[str, str]]]] = {
    "deflection": [("hypercube:3", {"lam": 0.3}, {}), ("hypercube:4", {"offered": 1.0}, {}),
                   ("hypercube:2", {"lam": 0.5}, {})],
    **{name: [("hypercube:3", {"rho": 0.4}, {}), ("hypercube:4", {"rho": 0.7}, {}), ("hypercube:2", {"rho": 0.5}, {})]
       for name in ("bcast-simple", "bcast-periodic", "bcast-dtree", "bcast-balanced", "bcast-indirect")},
    "star": [("torus:4x4", {"rho": 0.5}, {"lam_unicast": "0.05"}), ("hypercube:3", {"rho": 0.4}, {}),
             ("torus:3x3", {"rho": 0.5}, {"lam_unicast": "0.1"})],
    "m2o-greedy": [("mesh:4x4", {}, {"workload": "uniform"}), ("mesh:4x4", {}, {}),
                   ("mesh:3x5", {}, {"workload": "hotspots:k=2"}), ("mesh:2x2x2", {}, {"workload": "uniform"})],
    "array-broadcast": [("torus:8", {}, {}), ("mesh:6", {}, {}), ("torus:5", {}, {"split": "false"})],
    **{name: [("mesh:4x4", {}, {"workload": "uniform"}), ("mesh:4x4", {}, {})]
       for name in ("m2o-rec", "m2o-bfs", "m2o-offline")},
    **{name: [("mesh:4x4", {}, {}), ("torus:4x4", {}, {})]
       for name in ("prefix-scan", "packing", "monotone", "pmnb", "partial-exchange")},
    "dynamic-broadcast": [("mesh:4x4", {"rho": 0.3}, {}), ("torus:4x4", {"rho": 0.5}, {})],
}
#: run lengths: schemes that run for their slots, one-shot collectives (which stop when done)
SLOTS = {"slots": (24, 40, 80), "quiescent": (8, 16, 40, 120)}
BLOCK = 20
CLASSES = ("refused", "crash", "nondeterministic", "unaccounted", "incomplete", "books", "verdict")
WRONG = ("crash", "nondeterministic", "unaccounted", "books")
#: how the reason of each class begins (explore's verdict: anything else)
_REASON = {"nondeterministic": "a second run", "unaccounted": "invariant ", "books": "book "}
# ``incomplete`` (a one-shot task cut short by the short runs drawn here, or deadlocked) is
# counted, not "wrong": SLOTS draws one-shot runs shorter than their tasks on purpose
_SMALL = {"hypercube": "hypercube:3", "torus": "torus:4x4", "mesh": "mesh:4x4"}


def _configs(scheme: Any, given: list[str]) -> list[tuple[str, dict[str, float], dict[str, str]]]:
    if given:
        out = []
        for text in given:
            topo, *rest = text.split(",")
            load: dict[str, float] = {}
            params: dict[str, str] = {}
            for item in rest:
                k, _, v = item.partition("=")
                if k.startswith("param:"):
                    params[k[6:]] = v
                else:
                    load[k] = float(v)
            out.append((topo, load, params))
        return out
    if scheme.name in CONFIGS:
        return CONFIGS[scheme.name]
    topo = _SMALL.get(scheme.topologies[0], f"{scheme.topologies[0]}:4") if scheme.topologies else "hypercube:3"
    return [(topo, {scheme.loads[0].name: 0.3} if scheme.loads else {}, {})]


def _blocks(name: str, samples: int, seed: int, configs: list[Any], until: str) -> list[dict[str, Any]]:
    """The requests of ``samples`` samples of ``name``, block by block (each block one explore call)."""
    from slotnet import RunSpec, parse_topology
    from slotnet.orchestrator.tools import _fuzz
    from slotnet.orchestrator.tools._explore import REPEAT_EVERY, base_request, scenarios
    from slotnet.schemes import SCHEMES

    kinds = _fuzz.drawable_kinds(SCHEMES[name].refuses_fault)
    lengths = SLOTS.get(until, SLOTS["slots"])
    out: list[dict[str, Any]] = []
    b = 0
    while len(out) < samples:
        topo, load, params = configs[b % len(configs)]
        slots = lengths[(b // len(configs)) % len(lengths)]
        spec = RunSpec(name, topo, params=params, load=load, slots=slots, warmup=0, seed=1000 * seed + b)
        base = base_request(spec)
        n = min(BLOCK, samples - len(out))
        if kinds:
            cases = scenarios(parse_topology(topo), "random", slots=slots, seed=spec.seed, samples=n, kinds=kinds)
        else:
            cases = [("fault-free", [])]
        for i, (label, faults) in enumerate(cases):
            explore = _explore_command(base, i + 1) if kinds else None
            out.append({**base, "label": label, "faults": faults, "checks": True,
                        "repeat": i % REPEAT_EVERY == 0, "_explore": explore})
        b += 1
    return out


def _explore_command(base: Mapping[str, Any], samples: int) -> str:
    parts = ["slotnet", "explore", base["scheme"], "-t", base["topology"]]
    for k, v in base["params"].items():
        parts += ["--param", f"{k}={v}"]
    for k, v in base["load"].items():
        parts += [f"--{k}", repr(float(v))]
    parts += ["--slots", str(base["slots"]), "--seed", str(base["seed"]), "--faults", "random", "--samples", str(samples)]
    return " ".join(shlex.quote(p) for p in parts)


def _one(request: dict[str, Any]) -> dict[str, Any]:
    from slotnet.orchestrator.tools._explore import judge

    explore = request.pop("_explore")
    r = judge(request)
    return {"scheme": request["scheme"], "fault": r["fault"], "class": r["class"], "classes": r["classes"],
            "reasons": r["reasons"][:3], "command": r["command"], "explore": explore, "faults": r["faults"],
            "repeated": bool(r.get("repeated")), "sha256": r.get("sha256")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--samples", type=int, default=2000, help="random schedules in all (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--scheme", action="append", default=[], help="only these schemes (repeatable; default: all)")
    ap.add_argument("--config", action="append", default=[], metavar="SCHEME=TOPO[,LOAD=V][,param:K=V]",
                    help="a scheme's topology, load and params instead of the table's (repeatable)")
    ap.add_argument("--json", metavar="OUT", help="write every sample's record to OUT")
    args = ap.parse_args(argv)

    from slotnet import RunSpec
    from slotnet.orchestrator.tools import _fuzz
    from slotnet.schemes import SCHEMES

    names = args.scheme or sorted(SCHEMES)
    unknown = [n for n in names if n not in SCHEMES]
    if unknown:
        ap.error(f"unknown scheme {', '.join(unknown)} (known: {', '.join(sorted(SCHEMES))})")
    given: dict[str, list[str]] = {}
    for c in args.config:
        k, _, v = c.partition("=")
        given.setdefault(k, []).append(v)
    faulty = [n for n in names if _fuzz.drawable_kinds(SCHEMES[n].refuses_fault)]
    plain = [n for n in names if n not in faulty]
    share = {n: args.samples // len(faulty) + (i < args.samples % len(faulty)) for i, n in enumerate(faulty)} if faulty else {}
    share |= {n: max(2, args.samples // max(1, len(names)) // BLOCK) for n in plain}
    requests: list[dict[str, Any]] = []
    for n in names:
        configs = _configs(SCHEMES[n], given.get(n, []))
        for topo, load, params in configs:  # a bad configuration stops here, before any run
            RunSpec(n, topo, params=params, load=load, slots=8, seed=0).prepare()
        requests += _blocks(n, share[n], args.seed, configs, SCHEMES[n].until)
    print(f"{len(requests)} runs: {sum(share[n] for n in faulty)} random schedules over {len(faulty)} schemes, "
          f"{sum(share[n] for n in plain)} fault-free runs of {len(plain)} schemes without fault kinds; "
          f"{args.jobs} workers", file=sys.stderr, flush=True)
    t0 = time.time()
    records = []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, r in enumerate(pool.map(_one, requests, chunksize=4), 1):
            records.append(r)
            if i % 200 == 0 or i == len(requests):
                print(f"  {i}/{len(requests)} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=0)
    print(report(records, faulty, plain, time.time() - t0))
    return 1 if any(c in WRONG or c == "refused" for r in records for c in r["classes"]) else 0


def report(records: list[dict[str, Any]], faulty: list[str], plain: list[str], seconds: float) -> str:
    """The counts per scheme and class, and the first reproducer of each class."""
    head = ["scheme", "samples", "ok", *CLASSES, "repeated"]
    rows = []
    for group in (faulty, plain):
        for n in group:
            mine = [r for r in records if r["scheme"] == n]
            rows.append([n + ("" if n in faulty else " (fault-free)"), len(mine), sum(r["class"] == "ok" for r in mine),
                         *(sum(c in r["classes"] for r in mine) for c in CLASSES), sum(r["repeated"] for r in mine)])
    rand = [r for r in records if r["scheme"] in faulty]
    for label, rs in (("random, all schemes", rand), ("fault-free, all", [r for r in records if r["scheme"] in plain])):
        rows.append([label, len(rs), sum(r["class"] == "ok" for r in rs), *(sum(c in r["classes"] for r in rs)
                                                                             for c in CLASSES),
                     sum(r["repeated"] for r in rs)])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths)))
             for row in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    wrong = [r for r in rand if any(c in WRONG for c in r["classes"])]
    lines += ["", f"{len(rand)} random schedules: {len(wrong)} wrong ({' / '.join(WRONG)}), "
              f"{sum('refused' in r['classes'] for r in rand)} refused, "
              f"{sum(r['class'] == 'verdict' for r in rand)} failing only explore's verdict "
              f"(avoidable loss or missed broadcast); {seconds:.0f} s"]
    for c in CLASSES:
        first = next((r for r in records if c in r["classes"]), None)
        if first is None:
            continue
        why = next((x for x in first["reasons"] if x.startswith(_REASON.get(c, ""))), first["reasons"][0])
        lines += ["", f"first {c}: {first['scheme']} {first['fault']}: {why[:400]}",
                  f"  {first['command'] or json.dumps(first['faults'])}"]
        if first["explore"]:
            lines.append(f"  (sample {first['fault']} of: {first['explore']})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
