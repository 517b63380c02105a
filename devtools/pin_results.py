"""Pin the seeded results of every scheme, to prove a refactor or a speed-up changes none.

Runs every registered scheme on a small topology over a few seeds, fault-free and (where the
scheme runs under faults) with a mixed fault schedule, each with a full trace, and writes one
JSON object: case name -> the run's result without its machine-dependent ``timing`` and
``provenance`` (``WALL_CLOCK_FIELDS``), plus the
trace fingerprint. Compare two such files with ``--compare``.

Usage:
    python devtools/pin_results.py OUT.json            # write the pins of this tree
    python devtools/pin_results.py --compare A.json B.json   # exit 1 and list what differs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

#: scheme -> (topology, load, params): small instances that finish in about a second
CASES: dict[str, tuple[str, dict, dict]] = {
    "deflection": ("hypercube:4", {"offered": 1.0}, {}),
    "bcast-simple": ("hypercube:4", {"rho": 0.4}, {}),
    "bcast-dtree": ("hypercube:4", {"rho": 0.4}, {}),
    "bcast-balanced": ("hypercube:4", {"rho": 0.4}, {}),
    "bcast-indirect": ("hypercube:4", {"rho": 0.4}, {}),
    "bcast-periodic": ("hypercube:4", {"rho": 0.4}, {}),
    "star": ("torus:4x4", {"rho": 0.5}, {"lam_unicast": 0.05}),
    "prefix-scan": ("mesh:4x4", {}, {}),
    "packing": ("mesh:4x4", {}, {}),
    "monotone": ("mesh:4x4", {}, {}),
    "pmnb": ("mesh:4x4", {}, {}),
    "array-broadcast": ("torus:8", {}, {}),
    "partial-exchange": ("mesh:4x4", {}, {}),
    "dynamic-broadcast": ("mesh:4x4", {"rho": 0.3}, {}),
    "m2o-greedy": ("mesh:8x8", {}, {"workload": "uniform"}),
    "m2o-rec": ("mesh:8x8", {}, {"workload": "uniform"}),
    "m2o-bfs": ("mesh:8x8", {}, {"workload": "uniform"}),
    "m2o-offline": ("mesh:8x8", {}, {"workload": "uniform"}),
}

SEEDS = (1, 2, 3)
SLOTS = 60
#: one-shot schemes are also pinned run to the end
LONG_SLOTS = 2000
FAULTS = ["link-down@5:1:0", "link-up@20:1:0", "crash@8:2", "recover@25:2", "loss=0.02", "dup=0.02", "delay=0.02:2",
          "stall@30:33:3"]


def _one(scheme: str, topology: str, load: dict, params: dict, seed: int, faults: list[str], slots: int = SLOTS) -> dict:
    import slotnet
    from slotnet.orchestrator import WALL_CLOCK_FIELDS

    with tempfile.TemporaryDirectory() as tmp:
        spec = slotnet.RunSpec(scheme, topology, params=params, load=load, slots=slots, warmup=10, seed=seed,
                               faults=faults, trace=slotnet.TraceSpec(os.path.join(tmp, "t.jsonl")))
        try:
            result = slotnet.run(spec)
        except slotnet.SlotnetError as exc:
            return {"refused": f"{type(exc).__name__}: {exc}"}
        out = result.to_dict(per_node=True)
        for key in WALL_CLOCK_FIELDS:  # timing and provenance: machine-dependent
            out.pop(key, None)
        return json.loads(json.dumps(out, default=repr))


def pin() -> dict:
    pins = {}
    for scheme, (topology, load, params) in CASES.items():
        for seed in SEEDS:
            pins[f"{scheme}/seed={seed}"] = _one(scheme, topology, load, params, seed, [])
        pins[f"{scheme}/faults"] = _one(scheme, topology, load, params, 1, FAULTS)
        if not load:
            pins[f"{scheme}/long"] = _one(scheme, topology, load, params, 1, [], LONG_SLOTS)
        print(scheme, file=sys.stderr, flush=True)
    return pins


def compare(a: dict, b: dict) -> list[str]:
    """The cases whose pinned values differ (a key only in ``b``, a field added since, is no difference)."""
    return [key for key in sorted(set(a) | set(b)) if key not in a or key not in b or changed(a[key], b[key])]


def changed(a: object, b: object) -> bool:
    """Whether a value of ``a`` differs in ``b``: keys ``b`` adds to a dict are left out (see :func:`added`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) - set(b) != set() or any(changed(a[k], b[k]) for k in a)
    return a != b


def added(a: object, b: object, path: str = "") -> list[str]:
    """The JSON paths of the keys ``b`` has and ``a`` lacks (new fields)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return []
    out = [f"{path}/{k}" for k in b if k not in a]
    for k in a:
        if k in b:
            out += added(a[k], b[k], f"{path}/{k}")
    return out


def _load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        a, b = (_load(p) for p in args.compare)
        diffs = compare(a, b)
        for key in diffs:
            print("differs:", key)
        new: dict[str, int] = {}
        for key in sorted(set(a) & set(b)):
            for path in added(a[key], b[key]):
                new[path] = new.get(path, 0) + 1
        for path, n in sorted(new.items()):
            print(f"new field: {path} (in {n} cases)")
        print(f"{len(a)} cases, {len(diffs)} differ, {len(new)} new fields")
        return 1 if diffs else 0
    with open(args.out, "w") as f:
        json.dump(pin(), f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
