"""Memory per node of a scheme (deflection unless told): peak resident growth per added node, and where a node's bytes go.

For each dimension d it runs deflection at offered load v (default 1) on the d-cube and on
the (d-1)-cube, each in a fresh child process for 30 slots (by then the packets in flight
have reached their steady number), and divides the difference
of their peak resident sizes (``ru_maxrss``) by the difference of their node counts: what
one more node costs the machine, interpreter and libraries cancelled out. That is the
figure the memory pre-check (``orchestrator/engine/_memory.py``) calibrates on.

A third child runs the d-cube again and, at the end of its last slot, walks the objects a
node owns (``gc.get_referents`` from the node's roots, stopping at the run's shared
objects: the network, the transport, the topology, Trio's runner and nursery; an object
another node also reaches is shared and not counted) and sums their ``sys.getsizeof`` by
part, averaged over a sample of nodes:

* ``trio task``: the Task object, its name, contextvars context and cancel status;
* ``coroutine frames``: the task's coroutine chain (the network's task body, the node's
  ``run``, the park), the frame object a compiled coroutine makes when Trio asks for it,
  and what their locals alone hold (the node's arrival process, its
  lists between steps);
* ``scheme node``: the scheme's node object and its own state;
* ``context``: the NodeContext and what only it holds;
* ``ports``: ``ctx.ports`` and the context's port maps;
* ``outlet``: the transport's sending side of the node (targets, per-port load);
* ``rng``: the node's random stream (its compact Philox4x32-10 stream, or with ``--rng mt``
  a ``random.Random``);
* ``network tables`` and ``reporter``: the run's per-node containers (the network's,
  the transport's, the runtime's timers, Trio's nursery sets) and the reporter's per-node
  state, as their total over the number of nodes;
* ``in flight``: the frames sent in the last slot, waiting for delivery, over the nodes.

``sys.getsizeof`` counts what the objects ask for; the allocator's rounding, free lists and
what the build left behind are the rest of the resident figure (the ``unattributed`` line).
With ``--floor`` it also measures the smallest per-task cost Trio allows: bare tasks
started the way the network starts its nodes (``nursery.start``, parked in
``wait_task_rescheduled``), with and without a cancel scope of their own, per added task.
Dicts of plain objects that ``gc.get_referents`` had to make are counted at that size.

    python benchmarks/memory_per_node.py                  # d = 12 13 14, v = 1, installed build
    python benchmarks/memory_per_node.py --dims 12 16 --floor
    python benchmarks/memory_per_node.py --build pure     # SLOTNET_PURE_PYTHON=1
    python benchmarks/memory_per_node.py --no-breakdown --dims 12 13 14 15 16 17   # the issue's range
    python benchmarks/memory_per_node.py --rng mt --dims 12 13   # the Mersenne Twister's node streams
    python benchmarks/memory_per_node.py --fault loss=0.01 --fault dup=0.01 --dims 12 13   # a run with faults
    python benchmarks/memory_per_node.py --scheme bcast-dtree --load rho=0.2 --dims 12 --no-breakdown
    python benchmarks/memory_per_node.py --scheme star --load rho=0.5 --param lam_unicast=0.05 \
        --pair torus:32x32 torus:32x64

``--scheme`` measures another scheme (its load with ``--load``, parameters with
``--param``; ``--pair SMALL LARGE`` for other topologies than d-cubes): the figures the memory
pre-check's per-scheme table (``SCHEME_BYTES_PER_NODE``) is calibrated on. The breakdown
by part walks a node of the larger network of each pair, whatever the scheme.

The walk does not change the run: it happens in its own child, after the slots measured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from slotnet._build import child_env
from slotnet.nodes.runtime import DEFAULT_RNG, RNG_KINDS

#: part -> description, in the order the table prints them (and the walk claims objects)
PARTS = {
    "rng": "the node's random stream (philox or random.Random)",
    "outlet": "outlet (send side, per-port lists)",
    "ports": "ports (ctx.ports, port maps)",
    "context": "NodeContext",
    "scheme node": "scheme node object",
    "coroutine frames": "coroutine frames and their locals",
    "trio task": "Trio task (Task, name, context, cancel status)",
    "network tables": "run's per-node tables (network, transport, Trio nursery)",
    "reporter": "reporter per-node state",
    "in flight": "messages in flight (the transport's pending frames)",
}

#: one run in a child (its RunSpec's fields as JSON): peak resident KiB
_RSS = """
import json, resource, sys, slotnet
spec = slotnet.RunSpec(**json.loads(sys.argv[1]))
r = slotnet.run(spec)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r.performance["build"], r.performance["messages"])
"""


def _pairs(items: list[str], what: str) -> dict[str, object]:
    """``["k=v", ...]`` as a dict, numbers as numbers."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"memory_per_node: {what} {item!r} is not KEY=VALUE")
        try:
            out[key] = float(value) if any(c in value for c in ".e") else int(value)
        except ValueError:
            out[key] = value
    return out

#: bare Trio tasks started and parked as the network's node tasks are (``nursery.start``, the
#: start's status dropped, parked in ``wait_task_rescheduled``), with or without a cancel
#: scope each: peak resident KiB while they are parked
_FLOOR = """
import resource, sys, trio
from trio.lowlevel import Abort, wait_task_rescheduled
n, scoped = int(sys.argv[1]), sys.argv[2] == "1"

def abort(_):
    return Abort.SUCCEEDED

async def body(task_status=trio.TASK_STATUS_IGNORED):
    if scoped:
        with trio.CancelScope():
            task_status.started()
            del task_status
            await wait_task_rescheduled(abort)
    else:
        task_status.started()
        del task_status
        await wait_task_rescheduled(abort)

async def main():
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            await nursery.start(body, name="node")
        await trio.sleep(0)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        nursery.cancel_scope.cancel()

trio.run(main)
"""


def _n_nodes(topology: str) -> int:
    from slotnet.fabric import parse_topology

    return parse_topology(topology).n_nodes


def _child(code: str | None, *args: object, pure: bool) -> list[str]:
    """A child process's output words: ``python -c code args`` (None: this script with ``args``)."""
    cmd = [sys.executable, *(["-c", code] if code is not None else [__file__]), *map(str, args)]
    done = subprocess.run(cmd, env=child_env(pure),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"memory_per_node: a child run failed:\n{done.stderr[-3000:]}")
    return done.stdout.split()


def walk(spec_json: str, sample: int) -> dict[str, object]:
    """In this process: run ``spec_json`` (a RunSpec's fields) and break one node's bytes down by part."""
    import trio

    import slotnet
    from slotnet.orchestrator.engine import _driver  # the one-process driver: it builds the Network
    from slotnet.orchestrator.engine._network import Network

    captured: list[Network] = []

    class Captured(Network):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            captured.append(self)

    _driver.Network = Captured  # type: ignore[misc]  # the driver builds this run's network as a Captured
    out: dict[str, object] = {}
    spec = slotnet.RunSpec(**json.loads(spec_json))

    last = spec.slots - 1 if spec.slots is not None else None

    def at(slot: int) -> None:
        if slot == last:
            out.update(_breakdown(captured[0], sample))

    async def main() -> None:
        await slotnet.run_async(spec, on_slot=at)

    trio.run(main)
    return out


def _reporter(handlers: dict[str, object]) -> object:
    """The reporter behind the network's event handlers (bound methods, maybe wrapped in closures by the checks);
    where none is found, the object the first handler is bound to (deflection's: the reporter's step sums)."""
    todo = list(handlers.values())
    seen: set[int] = set()
    first = next((owner for h in todo if (owner := getattr(h, "__self__", None)) is not None), None)
    while todo:
        h = todo.pop(0)
        if id(h) in seen:
            continue
        seen.add(id(h))
        owner = getattr(h, "__self__", None)
        if owner is not None and callable(getattr(owner, "handlers", None)):
            return owner
        if owner is not None:
            todo.append(owner)
        todo.extend(c.cell_contents for c in (getattr(h, "__closure__", None) or ()) if c.cell_contents is not None)
        func = getattr(h, "func", None)  # functools.partial
        if func is not None:
            todo.append(func)
    if first is None:
        raise SystemExit("memory_per_node: no reporter found behind the network's handlers")
    return first


def _breakdown(net: Any, sample: int) -> dict[str, object]:
    """One node's bytes by part, averaged over ``sample`` nodes of the network ``net``.

    ``net`` is typed ``Any``: this walks the run's objects by their internals (Trio's
    tasks and nurseries, the transport's tables, the contexts' slots), which no type names."""
    import gc
    import sys
    import types

    n = len(net.contexts)
    contexts = net.contexts
    first_task = contexts[0]._parking.task
    runner = first_task._runner
    nursery = first_task._parent_nursery
    reporter = _reporter(net.handlers)  # the reporter's sums
    stop_ids = {id(o) for o in (net, net.transport, net.runtime, net.clock, net.prep, net.prep.topology,
                                net.contexts, net.nodes, net.scopes, net.outlets, net.handlers, net.tracer,
                                runner, nursery, nursery._parent_task, nursery._cancel_status, nursery.cancel_scope,
                                reporter, None, True, False)}
    stop_types = (type, types.ModuleType, types.FunctionType, types.CodeType, types.BuiltinFunctionType,
                  types.MethodDescriptorType, types.WrapperDescriptorType, types.GetSetDescriptorType,
                  types.MemberDescriptorType)

    def shared_kind(o: object) -> bool:
        """Code, types, modules, functions: shared. A builtin bound to an object (``rng.random``) is not."""
        if isinstance(o, types.BuiltinMethodType) and not isinstance(o.__self__, types.ModuleType):
            return False
        return isinstance(o, stop_types)

    def reach(roots: list[object], seen: set[int], stop: set[int], own: bool = False) -> list[object]:
        """Objects reachable from ``roots`` (counted in ``seen``) without passing ``stop``;
        ``own``: the roots are already in ``seen`` (claimed by their part)."""
        found = []
        todo = [r for r in roots if id(r) not in stop and (own or id(r) not in seen)]
        for r in todo:
            seen.add(id(r))
        while todo:
            o = todo.pop()
            found.append(o)
            for c in gc.get_referents(o):
                i = id(c)
                if i in seen or i in stop or shared_kind(c) or (isinstance(c, int) and -5 <= c <= 256):
                    continue
                if isinstance(c, str) and sys.intern(c) is c:
                    continue  # interned names are shared
                seen.add(i)
                todo.append(c)
        return found

    def held(ctx: object, *names: str) -> list[object]:
        """What the context's slots ``names`` hold (never a property: that would build it)."""
        slots = {s for k in type(ctx).__mro__ for s in getattr(k, "__slots__", ())}
        return [getattr(ctx, s) for s in names if s in slots and getattr(ctx, s, None) is not None]

    def roots(v: int) -> dict[str, list[object]]:
        ctx = contexts[v]
        task = ctx._parking.task
        parts = {
            "rng": held(ctx, "rng", "_rng"),
            "outlet": [net.outlets[v]],
            "ports": held(ctx, "ports", "_port_of", "_port_ids"),
            "context": [ctx],
            "scheme node": [net.nodes[v]],
            # Trio asks each task's coroutine for its frame when it spawns it; a compiled
            # coroutine makes one on that request and keeps it, out of gc.get_referents' sight
            "coroutine frames": [task.coro] + ([task.coro.cr_frame] if task.coro.cr_frame is not None else []),
            "trio task": [task],
        }
        return parts

    def owned(v: int, stop: set[int]) -> dict[str, list[object]]:
        """Each part's objects: reached from its roots, not through another part's roots."""
        parts = roots(v)
        seen = {id(r) for rs in parts.values() for r in rs}
        return {part: reach(rs, seen, stop, own=True) for part, rs in parts.items()}

    # whatever a reference node also reaches is shared
    ref = n // 3
    shared = set(stop_ids)
    for objs in owned(ref, stop_ids).values():
        shared.update(id(o) for o in objs)
    picks = sorted({(ref + 1 + k * (n // max(sample, 1))) % n for k in range(sample)} - {ref})
    totals = dict.fromkeys(PARTS, 0.0)
    by_type: dict[str, float] = {}
    for v in picks:
        for part, objs in owned(v, shared).items():
            for o in objs:
                size = sys.getsizeof(o)
                totals[part] += size / len(picks)
                key = f"{part}: {type(o).__name__}"
                by_type[key] = by_type.get(key, 0.0) + size / len(picks)

    # per-node tables of the run, and the reporter's state, as totals over the nodes
    t = net.transport
    tables = [net.contexts, net.nodes, net.scopes, net.outlets, t._pending, t.alive,
              net.runtime.timers, net.runtime.active, nursery._children, nursery._cancel_status.children,
              nursery._cancel_status.tasks]
    table_bytes = sum(sys.getsizeof(x) for x in tables)
    # timer entries and their ints belong to the runtime's table
    table_bytes += sum(sys.getsizeof(e) for e in net.runtime.timers)
    totals["network tables"] = table_bytes / n
    # messages sent in the last slot, waiting for the next one's delivery
    pending = [x for x in t._pending if x is not None]
    flight = sys.getsizeof(t._touched) + sum(sys.getsizeof(x) for x in pending)
    for x in pending:
        for m in x:  # (in_port, frame) pairs, or in-ports and frames one after the other
            if not isinstance(m, int) or not -5 <= m <= 256:
                flight += sys.getsizeof(m) + sum(sys.getsizeof(b) for b in (m if isinstance(m, tuple) else ())
                                                 if isinstance(b, bytes))
    totals["in flight"] = flight / n
    rep_stop = set(stop_ids) - {id(reporter)}
    totals["reporter"] = sum(sys.getsizeof(o) for o in reach([reporter], set(), rep_stop)) / n
    top = sorted(by_type.items(), key=lambda kv: -kv[1])[:25]
    return {"parts": totals, "top": top, "sampled": len(picks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, nargs="+", default=[12, 13, 14])
    ap.add_argument("--slots", type=int, default=30,
                    help="slots each run (30: the traffic in flight has reached its steady level at d <= 16)")
    ap.add_argument("--v", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample", type=int, default=32, help="nodes whose bytes the breakdown averages")
    ap.add_argument("--build", choices=("installed", "pure"), default="installed",
                    help="installed: whatever `pip install` built; pure: SLOTNET_PURE_PYTHON=1")
    ap.add_argument("--rng", choices=RNG_KINDS, default=DEFAULT_RNG,
                    help="the nodes' random generator (RunSpec.rng): the compact philox, the default, or mt")
    ap.add_argument("--floor", action="store_true", help="also measure bare Trio tasks (the per-task floor)")
    ap.add_argument("--no-breakdown", action="store_true", help="only the resident growth per node")
    ap.add_argument("--scheme", default="deflection",
                    help="another scheme than deflection (give its load with --load)")
    ap.add_argument("--load", nargs="*", default=[], metavar="KEY=VALUE",
                    help="the scheme's load (default for deflection: offered=V)")
    ap.add_argument("--param", nargs="*", default=[], metavar="KEY=VALUE", help="the scheme's parameters")
    ap.add_argument("--fault", action="append", default=[], metavar="F",
                    help="a fault entry in the CLI syntax (repeatable), e.g. loss=0.01: a run with faults")
    ap.add_argument("--pair", nargs=2, metavar=("SMALL", "LARGE"),
                    help="measure LARGE against SMALL (e.g. torus:32x32 torus:32x64) instead of the d-cubes of --dims")
    ap.add_argument("--walk", help=argparse.SUPPRESS)  # the breakdown child: a RunSpec's fields as JSON
    args = ap.parse_args()
    if args.walk is not None:
        print(json.dumps(walk(args.walk, args.sample)))
        return
    pure = args.build == "pure"
    rss: dict[str, tuple[int, str, int]] = {}
    load = _pairs(args.load, "--load") or ({"offered": args.v} if args.scheme == "deflection" else {})
    params = _pairs(args.param, "--param")

    def spec(topology: str) -> str:
        return json.dumps({"scheme": args.scheme, "topology": topology, "load": load, "params": params,
                           "slots": args.slots, "warmup": 0, "seed": args.seed, "rng": args.rng,
                           "faults": args.fault})

    def peak(topology: str) -> tuple[int, str, int]:
        if topology not in rss:
            kib, build, _ = _child(_RSS, spec(topology), pure=pure)
            rss[topology] = int(kib), build, _n_nodes(topology)
        return rss[topology]

    what = ", ".join([f"{k}={v}" for k, v in {**load, **params}.items()] + args.fault)
    print(f"{args.scheme} ({what}), {args.slots} slots, seed {args.seed}, rng {args.rng}: peak RSS growth per added node")
    print(f"{'topology':>16} {'nodes':>8} {'build':>9} {'peak RSS':>10} {'per node':>10}")
    pairs = [tuple(args.pair)] if args.pair else [(f"hypercube:{d - 1}", f"hypercube:{d}") for d in args.dims]
    per_node: dict[str, float] = {}
    for small, large in pairs:
        lo, _, n_lo = peak(small)
        hi, build, n_hi = peak(large)
        per_node[large] = (hi - lo) * 1024 / (n_hi - n_lo)
        print(f"{large:>16} {n_hi:>8} {build:>9} {hi / 1024:>7.1f} MiB {per_node[large] / 1024:>6.2f} KiB", flush=True)
    if args.floor:
        n = 1 << 16
        print(f"\nTrio's floor: a bare task started and parked as a node's is, per task ({n // 2} more tasks)")
        for scoped, what in ((0, "without a cancel scope of its own"), (1, "with one (runs with faults)")):
            a = int(_child(_FLOOR, n // 2, scoped, pure=pure)[0])
            b = int(_child(_FLOOR, n, scoped, pure=pure)[0])
            print(f"  {what:<58} {(b - a) * 1024 / (n - n // 2):>8,.0f} B")
    if args.no_breakdown:
        return
    for _, large in pairs:
        got = json.loads(" ".join(_child(None, "--walk", spec(large), "--sample", args.sample, pure=pure)))
        parts = got["parts"]
        total = sum(parts.values())
        print(f"\n{large}: a node's bytes by part (sys.getsizeof, mean of {got['sampled']} nodes)")
        for key, what in PARTS.items():
            print(f"  {what:<58} {parts[key]:>8,.0f} B")
        print(f"  {'sum':<58} {total:>8,.0f} B")
        print(f"  {'unattributed (allocator, build leftovers): RSS - sum':<58} {per_node[large] - total:>8,.0f} B")
        print("  largest owned objects by part and type:")
        for key, size in got["top"]:
            print(f"    {key:<56} {size:>8,.0f} B")


if __name__ == "__main__":
    main()
