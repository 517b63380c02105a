"""``slotnet check``: every fault schedule of a small space, run and judged; each violation shrunk."""

from __future__ import annotations

import argparse

from ..engine._progress import RunsProgress
from ..engine._spec import RunSpec, SpecError
from ._cmd_run import VERDICT_FAILED
from ._common import load_args, params, print_json

__all__ = ["cmd_check"]


def cmd_check(args: argparse.Namespace) -> int:
    """``slotnet check``: exit status 1 when a schedule (or the fault-free run) violates something."""
    from ..tools._check import check, format_check, parse_window

    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=params(args.param), load=load_args(args),
                   slots=args.slots, warmup=args.warmup, seed=args.seed, rng=args.rng,
                   max_backlog_per_node=args.max_backlog)
    spec.prepare()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds:
        raise SpecError("--kinds needs at least one fault kind")
    window = parse_window(args.window) if args.window is not None else None
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(f"--jobs {args.jobs}: expected at least 1")
    report = check(spec, kinds, args.max_faults, window=window, jobs=args.jobs or 1, shrink=not args.no_shrink,
                   reduce=False if args.no_symmetry else None, progress=RunsProgress())
    if args.json:
        print_json(report)
    else:
        print(format_check(report))
    return 0 if report["ok"] else VERDICT_FAILED
