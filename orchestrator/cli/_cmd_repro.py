"""``slotnet repro``: rerun a paper's comparisons (several papers or the HTML report: :mod:`..tools.repro_all`)."""

from __future__ import annotations

import argparse
import sys

from slotnet.schemes import Row

from ..engine._progress import RunsProgress
from ..engine._spec import SpecError
from ._common import OutputError, print_json

__all__ = ["check_plot", "cmd_repro"]


def check_plot(path: str) -> None:
    """--plot needs matplotlib and a writable path: both checked before any run."""
    from ..tools.repro_all import check_figure_output

    check_figure_output("--plot", path, "pip install 'slotnet[plot]' (or leave out --plot)")


def cmd_repro(args: argparse.Namespace) -> int:
    """``slotnet repro``."""
    from ..tools._repro import LEGEND, PartialRepro, format_rows, repro

    rhos = None
    if args.sweep_rho:
        try:
            rhos = [float(x) for x in args.sweep_rho.split(",") if x.strip()]
        except ValueError:
            raise SpecError(f"--sweep-rho must be comma-separated numbers, got {args.sweep_rho!r}") from None
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(f"--jobs must be >= 1, got {args.jobs}")
    if args.sweep_d is not None and args.sweep_d < 1:
        raise SpecError(f"--sweep-d must be a cube dimension (an integer >= 1), got {args.sweep_d}")
    if args.paper == "all" or args.html:  # several papers, or the HTML report
        from ..tools.repro_all import repro_many

        return repro_many(args, rhos)
    if args.plot:
        check_plot(args.plot)
    from ..tools.repro_all import open_cache

    cache = open_cache(args)
    printed: list[Row] = []

    def show(batch: list[Row]) -> None:  # human output: each batch as soon as it is done
        print(format_rows(batch, legend=False), flush=True)
        printed.extend(batch)

    try:
        # only a paper that names them takes these
        extra = {k: v for k, v in (("dims", args.dims), ("hours", args.hours), ("shards", args.shards)) if v is not None}
        rows, wall = repro(args.paper, seed=args.seed, jobs=args.jobs, quick=args.quick, sweep_d=args.sweep_d,
                           sweep_rho=rhos, plot=args.plot, sweep_only=args.sweep_only, progress=RunsProgress(),
                           on_rows=None if args.json else show, cache=cache, **extra)
    except PartialRepro as exc:  # never discard what was computed: print it, then fail
        if args.json:
            print_json({"paper": args.paper, "seed": args.seed, "error": str(exc), "rows": [r.as_dict() for r in exc.rows]})
        else:
            rest = [r for r in exc.rows if not any(r is p for p in printed)]
            if rest:
                print(format_rows(rest))
        raise OutputError(str(exc)) from None
    if args.json:
        print_json({"paper": args.paper, "seed": args.seed, "timing": {"wall_seconds": wall},
                    "rows": [r.as_dict() for r in rows]})
    else:
        rest = [r for r in rows if not any(r is p for p in printed)]
        if rest:
            print(format_rows(rest, legend=False))
        print("\n".join(LEGEND) if rows else "no rows")
        print(f"{len(rows)} rows in {wall:.1f} s")
        if args.plot:
            print(f"plot saved to {args.plot}")
    if cache is not None and cache.write_error:
        print(f"slotnet repro: note: results not kept: {cache.write_error}", file=sys.stderr)
    return 0
