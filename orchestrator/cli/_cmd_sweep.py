"""``slotnet sweep``: a scheme over a range of one load or parameter, each point under one or more seeds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from slotnet.fabric import FaultSchedule

from ..engine._progress import RunsProgress
from ..engine._spec import SpecError
from ._common import print_json

__all__ = ["cmd_sweep"]


def cmd_sweep(args: argparse.Namespace) -> int:
    """``slotnet sweep``."""
    from ..tools._replicate import format_sweep, parse_over, parse_seeds, plot_sweep, sweep, sweep_csv
    from ..tools.repro_all import check_figure_output, open_cache
    from ..tools.results_cache import ResultsCache, code_version
    from ._common import load_args, params

    name, values = parse_over(args.over)
    seeds = parse_seeds(args.seeds)
    load = load_args(args)
    if name in load:
        raise SpecError(f"--over {name} and --{name} contradict each other: the sweep sets {name}")
    if args.plot:
        check_figure_output("--plot", args.plot, "pip install 'slotnet[plot]' (or leave out --plot)")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    request = dict(scheme=args.scheme, topology=args.topology, params=params(args.param), load=load,
                   slots=args.slots, warmup=args.warmup, rng=args.rng,
                   faults=FaultSchedule.parse(args.fault, args.faults, detect="default" if args.detect is None else args.detect))
    cache = open_cache(args)
    if cache is not None:  # whole results, apart from repro's metrics-only entries
        cache = ResultsCache(cache.root, version=code_version() + "-whole")
    result = sweep(request, name, values, seeds, jobs=args.jobs, progress=RunsProgress(), cache=cache)
    known = result.metric_names()
    unknown = [m for m in metrics or () if m not in known]
    if unknown:
        raise SpecError(f"--metrics {', '.join(unknown)}: no numeric metric of this sweep (known: {', '.join(known)})")
    if args.csv:
        Path(args.csv).write_text(sweep_csv(result), encoding="utf-8")
    if args.plot:
        plot_sweep(result, args.plot_metric or (metrics or known)[0], args.plot)
    if args.json:
        print_json({"scheme": args.scheme, "topology": args.topology, **result.to_dict()})
    else:
        print(format_sweep(result, metrics))
        for flag, path in (("CSV", args.csv), ("plot", args.plot)):
            if path:
                print(f"{flag} saved to {path}")
    if cache is not None and cache.write_error:
        print(f"slotnet sweep: note: results not kept: {cache.write_error}", file=sys.stderr)
    return 0
