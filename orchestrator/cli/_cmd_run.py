"""``slotnet run``: one run of a scheme, printed as tables or one JSON object."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import trio

from slotnet.fabric import FaultSchedule
from slotnet.schemes import get_scheme

from .._run import run
from ..engine._progress import Progress
from ..engine._spec import RunSpec, SpecError, TraceSpec
from ..tools._report import format_per_node, format_result, format_series
from ._common import OutputError, broker_arg, int_set, load_args, params, print_json, slot_window

__all__ = ["VERDICT_FAILED", "cmd_run", "trace_spec", "verdict_status"]


def trace_spec(args: argparse.Namespace) -> TraceSpec | None:
    """What ``--trace`` and its filters ask for (None: no trace)."""
    if not args.trace:
        if args.trace_nodes or args.trace_slots or args.trace_events:
            raise SpecError("--trace-nodes/--trace-slots/--trace-events need --trace FILE")
        return None
    slots = slot_window(args.trace_slots, "--trace-slots") if args.trace_slots else None
    kinds = frozenset(k.strip() for k in args.trace_events.split(",") if k.strip()) if args.trace_events else None
    errors = args.trace_errors = []
    return TraceSpec(args.trace, int_set(args.trace_nodes, "--trace-nodes"), slots, kinds, on_error=errors.append)


def cmd_run(args: argparse.Namespace) -> int:
    """``slotnet run``."""
    if args.seeds is not None:
        return _replications(args)
    if args.jobs is not None:
        raise SpecError("--jobs needs --seeds: one run is one process (or --shards K of them)")
    spec = RunSpec(
        scheme=args.scheme, topology=args.topology, params=params(args.param), load=load_args(args),
        slots=args.slots, warmup=args.warmup, seed=args.seed, rng=args.rng,
        faults=FaultSchedule.parse(args.fault, args.faults, detect="default" if args.detect is None else args.detect),
        trace=trace_spec(args),
        max_backlog_per_node=args.max_backlog, shards=args.shards, broker=broker_arg(args), series=args.series,
        node_timeout=None if args.node_timeout == 0 else args.node_timeout,
    )
    prep = spec.prepare()  # every input error surfaces here, before any slot runs
    if (args.no_spawn or args.run_id) and args.shards < 2:
        raise SpecError("--no-spawn and --run-id need --shards K (K >= 2)")
    if args.no_spawn and not args.broker:
        raise SpecError("--no-spawn needs --broker URL: the shards started by hand must reach the same broker")
    # stderr, on a terminal only; it also carries a stop asked for with Ctrl-C (one process only)
    progress = Progress(prep.slots, enabled=False if args.no_progress else None)
    if args.no_spawn or args.run_id:
        import secrets

        from ..shard._coordinator import run_sharded

        run_id = args.run_id or secrets.token_hex(6)
        if args.no_spawn:
            tls = "".join(f" {flag} {value}" for flag, value in (("--broker-ca", args.broker_ca),
                          ("--broker-cert", args.broker_cert), ("--broker-key", args.broker_key)) if value)
            print(f"waiting for {args.shards} shards: slotnet shard --broker {args.broker}{tls} --run {run_id} "
                  f"--shard I/{args.shards}  (I = 0..{args.shards - 1})", file=sys.stderr)
        result = trio.run(lambda: run_sharded(prep, progress=progress, spawn=not args.no_spawn, run_id=run_id))
    else:
        with stop_on_interrupt(progress, spec.shards == 1):
            result = run(spec, progress=progress)
    interrupted = progress.stop_requested and result.slots_run < prep.slots
    if args.json:
        data = result.to_dict(per_node=args.per_node, series=args.series)
        if interrupted:
            data["interrupted"] = {"after_slot": result.slots_run - 1}
        print_json(data)
    else:
        scheme = get_scheme(args.scheme)
        columns = scheme.columns
        out = [format_result(result, columns, scheme.theory_label)]
        if args.series and not ("series" in (result.theory or {}) and columns):  # else already beside the prediction
            out.append(format_series(result))
        if args.per_node:
            out.append(format_per_node(result))
        print("\n\n".join(out))
    trace_errors = getattr(args, "trace_errors", None)
    if trace_errors:
        raise OutputError(trace_errors[0] + " (the results above are complete)")
    if interrupted:
        print(f"slotnet run: interrupted after slot {result.slots_run - 1} of {prep.slots}: the result above covers "
              "the slots run", file=sys.stderr)
        return 130
    return verdict_status(result.verdict)


#: The exit status of a run whose verdict fails (``slotnet check``'s for a violation too).
VERDICT_FAILED = 1


def verdict_status(verdict: dict[str, Any] | None) -> int:
    """0 for a verdict that holds; :data:`VERDICT_FAILED` for one that fails, with one line
    on stderr saying why (its reasons; the result printed above has them all)."""
    if verdict is None or verdict.get("ok", True):
        return 0
    reasons = list(verdict.get("reasons") or ["(no reason given)"])
    more = f" (and {len(reasons) - 1} more reason{'s' if len(reasons) > 2 else ''})" if len(reasons) > 1 else ""
    print(f"slotnet run: the run's verdict failed: {reasons[0]}{more}", file=sys.stderr)
    return VERDICT_FAILED


@contextmanager
def stop_on_interrupt(progress: Progress, here: bool) -> Iterator[None]:
    """While the body runs: the first Ctrl-C asks the run to stop after its current slot (its
    result is printed), a second one interrupts at once. Only for a run in this process and in the
    main thread (a sharded run's coordinator stops its shards and broker itself)."""
    if not here or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def first(signum: int, frame: object) -> None:
        progress.request_stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the second Ctrl-C: KeyboardInterrupt

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _replications(args: argparse.Namespace) -> int:
    """``slotnet run --seeds LIST``: one run per seed, each metric's mean over them."""
    from ..engine._progress import RunsProgress
    from ..tools._replicate import format_replications, parse_seeds, replicate, summarise

    if args.seed != 0:  # --seed's default is 0
        raise SpecError("--seed and --seeds contradict each other: give one")
    single = [flag for flag, on in (("--trace", args.trace), ("--per-node", args.per_node), ("--series", args.series),
                                    ("--shards", args.shards > 1), ("--no-spawn", args.no_spawn),
                                    ("--run-id", args.run_id), ("--broker", args.broker)) if on]
    if single:
        raise SpecError(f"{', '.join(single)} describe one run: leave {'them' if len(single) > 1 else 'it'} out "
                        "with --seeds (replay one seed with --seed S to trace it)")
    seeds = parse_seeds(args.seeds)
    request = dict(scheme=args.scheme, topology=args.topology, params=params(args.param), load=load_args(args),
                   slots=args.slots, warmup=args.warmup, rng=args.rng,
                   faults=FaultSchedule.parse(args.fault, args.faults, detect="default" if args.detect is None else args.detect),
                   max_backlog_per_node=args.max_backlog)
    RunSpec(**request, seed=seeds[0]).prepare()  # every input error before any run
    runs = replicate(request, seeds, jobs=args.jobs, progress=None if args.no_progress else RunsProgress())
    if args.json:
        first = runs[0]
        print_json({"scheme": first["scheme"], "topology": first["topology"], "load": first["load"],
                    "params": first["params"], "seeds": seeds, "metrics": summarise(runs), "theory": first.get("theory"),
                    "invariants_ok": sum(1 for r in runs if r["invariants"]["ok"]), "runs": runs})
    else:
        print(format_replications(runs, seeds))
    failed = [(seed, r) for seed, r in zip(seeds, runs) if not (r.get("verdict") or {}).get("ok", True)]
    if not failed:
        return 0
    seed, first = failed[0]
    print(f"slotnet run: the verdict failed in {len(failed)} of {len(seeds)} runs (seeds "
          f"{', '.join(str(s) for s, _ in failed[:8])}{', ...' if len(failed) > 8 else ''}); seed {seed}: "
          f"{(first['verdict'].get('reasons') or ['(no reason given)'])[0]}", file=sys.stderr)
    return VERDICT_FAILED
