"""The ``slotnet`` command line.

    slotnet run SCHEME --topology SPEC [--param k=v ...] [--offered v | --lam λ | --rho ρ]
                       --slots N --warmup W --seed S [--json]
    slotnet theory SCHEME --topology SPEC [load flags] [--json]
    slotnet trace FILE --node N [--event KIND ...] [--perfetto OUT]
    slotnet repro PAPER [--quick] [--sweep-d D --plot FILE] [--json]
    slotnet schemes

Bad input exits with status 2 and one line on stderr; a scheme that breaks the slot
model (or raises) exits with status 1 and one line naming the node and slot.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FaultSchedule
from slotnet.schemes import SCHEMES, Load, get_scheme

from ._driver import run
from ._progress import Progress
from ._report import format_result, format_theory
from ._repro import papers
from ._spec import RunSpec, SpecError, TraceSpec
from ._trace import read_trace, timeline, to_perfetto

__all__ = ["build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input on one line and exits with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _load_flags() -> dict[str, list[tuple[str, Load]]]:
    """Every load flag some scheme declares, with each scheme's meaning of it."""
    flags: dict[str, list[tuple[str, Load]]] = {}
    for name in sorted(SCHEMES):
        for load in SCHEMES[name].loads:
            flags.setdefault(load.name, []).append((name, load))
    return flags


def _add_load(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("load (declared by the schemes; which flags apply depends on the scheme)")
    for flag, users in _load_flags().items():
        meanings: dict[str, list[str]] = {}
        for scheme, load in users:
            meanings.setdefault(load.help, []).append(scheme)
        text = "; ".join(f"{h} ({', '.join(s)})" for h, s in meanings.items())
        g.add_argument(f"--{flag}", type=float, metavar=users[0][1].metavar, help=text)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scheme", help="scheme name (see `slotnet schemes`)")
    p.add_argument("--topology", "-t", required=True, metavar="SPEC", help="hypercube:D, torus:N1xN2[x...] or mesh:N1xN2[x...]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="K=V", help="scheme parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    _add_load(p)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to render ``--help``)."""
    parser = _Parser(prog="slotnet", description="Slotted, message-passing emulator of interconnection networks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    r = sub.add_parser("run", help="run a scheme on the emulated network", description="Run a scheme; every node is its own Trio task.")
    _add_common(r)
    r.add_argument("--slots", type=int, default=1000, metavar="N", help="slots to run, warm-up included (default 1000)")
    r.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="one seed fixes the whole run (default 0)")
    r.add_argument("--fault", action="append", default=[], metavar="F",
                   help="link-down@SLOT:NODE:PORT, link-up@..., crash@SLOT:NODE, recover@SLOT:NODE, loss=RATE[@FROM[-UNTIL]]")
    r.add_argument("--faults", metavar="FILE", help="JSON list of fault objects")
    r.add_argument("--trace", metavar="FILE", help="write trace events as JSON lines")
    r.add_argument("--trace-nodes", metavar="N,N,...", help="trace only these nodes (default: all)")
    r.add_argument("--trace-slots", metavar="A:B", help="trace only slots A <= slot < B")
    r.add_argument("--trace-events", metavar="K,K,...", help="trace only these event kinds")
    r.add_argument("--per-node", action="store_true", help="include per-node statistics in --json")
    r.add_argument("--series", action="store_true", help="include per-slot values in --json")
    r.add_argument("--max-backlog", type=float, default=None, metavar="Q",
                   help="stop and report unstable when queues exceed Q packets per node "
                        "(default 1000, more for schemes whose stable queues are long)")
    r.add_argument("--no-progress", action="store_true", help="never draw the progress bar")

    t = sub.add_parser("theory", help="the scheme's analytic model", description="Evaluate the paper's analytic model.")
    _add_common(t)
    t.add_argument("--slots", type=int, default=25, metavar="N", help="slots of a transient prediction (default 25)")

    tr = sub.add_parser("trace", help="read a trace file", description="Print one node's timeline from a trace file.")
    tr.add_argument("file", help="trace file written by `slotnet run --trace`")
    tr.add_argument("--node", type=int, metavar="N", help="the node whose timeline to print")
    tr.add_argument("--event", action="append", default=[], metavar="KIND", help="only these event kinds (repeatable)")
    tr.add_argument("--perfetto", metavar="OUT", help="write the Chrome/Perfetto trace-event JSON to OUT")

    rp = sub.add_parser("repro", help="rerun a paper's comparisons", description=_repro_doc())
    rp.add_argument("paper", help="the paper to reproduce: " + ", ".join(papers()))
    rp.add_argument("--seed", type=int, default=1, metavar="S", help="seed of every run (default 1)")
    rp.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default: min(2, cores))")
    rp.add_argument("--quick", action="store_true", help="a subset of rows and shorter runs (a smoke test)")
    rp.add_argument("--sweep-d", type=int, metavar="D", help="also sweep the paper's schemes over load on dimension D")
    rp.add_argument("--sweep-rho", metavar="R,R,...", help="the loads of the sweep (default: the paper's)")
    rp.add_argument("--plot", metavar="FILE", help="save the sweep's plot (needs matplotlib: the plot extra)")
    rp.add_argument("--sweep-only", action="store_true", help="run only the sweep, not the table checks")
    rp.add_argument("--json", action="store_true", help="print the rows as one JSON object")

    sub.add_parser("schemes", help="list the schemes", description="List every scheme with its parameters.")
    return parser


def _params(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SpecError(f"--param {item!r} must look like NAME=VALUE")
        out[key.strip()] = value.strip()
    return out


def _load(args: argparse.Namespace) -> dict[str, float]:
    return {k: getattr(args, k) for k in _load_flags() if getattr(args, k, None) is not None}


def _int_set(text: str | None, what: str) -> frozenset[int] | None:
    if text is None:
        return None
    try:
        return frozenset(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SpecError(f"{what} must be comma-separated integers, got {text!r}") from None


def _trace_spec(args: argparse.Namespace) -> TraceSpec | None:
    if not args.trace:
        if args.trace_nodes or args.trace_slots or args.trace_events:
            raise SpecError("--trace-nodes/--trace-slots/--trace-events need --trace FILE")
        return None
    slots = None
    if args.trace_slots:
        a, sep, b = args.trace_slots.partition(":")
        try:
            slots = (int(a) if a else 0, int(b) if b else 1 << 62)
        except ValueError:
            raise SpecError(f"--trace-slots must look like A:B, got {args.trace_slots!r}") from None
        if not sep or slots[0] >= slots[1]:
            raise SpecError(f"--trace-slots must look like A:B with A < B, got {args.trace_slots!r}")
    kinds = frozenset(k.strip() for k in args.trace_events.split(",")) if args.trace_events else None
    return TraceSpec(args.trace, _int_set(args.trace_nodes, "--trace-nodes"), slots, kinds)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(_jsonable(v) for v in x)
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    return x


def _cmd_run(args: argparse.Namespace) -> int:
    spec = RunSpec(
        scheme=args.scheme, topology=args.topology, params=_params(args.param), load=_load(args),
        slots=args.slots, warmup=args.warmup, seed=args.seed,
        faults=FaultSchedule.parse(args.fault, args.faults), trace=_trace_spec(args),
        max_backlog_per_node=args.max_backlog,
    )
    spec.prepare()  # every input error surfaces here, before any slot runs
    progress = None if args.no_progress or args.json else Progress(args.slots)
    result = run(spec, progress=progress)
    if args.json:
        print(json.dumps(_jsonable(result.to_dict(per_node=args.per_node, series=args.series))))
    else:
        print(format_result(result, get_scheme(args.scheme).columns))
    return 0


def _cmd_theory(args: argparse.Namespace) -> int:
    scheme = get_scheme(args.scheme)
    if scheme.theory is None:
        raise SpecError(f"scheme {scheme.name!r} has no analytic model")
    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=_params(args.param), load=_load(args),
                   slots=max(args.slots, 1), warmup=0)
    prep = spec.prepare()
    theory = scheme.theory(prep.setup)
    if args.json:
        print(json.dumps(_jsonable({"scheme": scheme.name, "topology": prep.topology.describe(),
                                    "load": prep.setup.load, "params": prep.params, "theory": theory})))
    else:
        print(format_theory(scheme.name, prep.topology.spec, theory, scheme.columns))
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    if args.perfetto:
        data = to_perfetto(ev for ev in read_trace(args.file) if args.node is None or ev["node"] == args.node)
        try:
            with open(args.perfetto, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
        except OSError as exc:
            raise SpecError(f"cannot write {args.perfetto!r}: {exc.strerror or exc}") from None
        print(f"wrote {len(data['traceEvents'])} events to {args.perfetto}")
        return 0
    if args.node is None:
        raise SpecError("slotnet trace needs --node N (or --perfetto OUT)")
    lines = timeline(read_trace(args.file), args.node, set(args.event) or None)
    if not lines:
        print(f"no events for node {args.node} in {args.file}")
    for line in lines:
        print(line)
    return 0


def _repro_doc() -> str:
    from slotnet.schemes import EXPERIMENTS

    from . import _repro

    lines = [(_repro.__doc__ or "").strip(), ""]
    lines += [f"* {name}: {EXPERIMENTS[name].doc}" for name in sorted(EXPERIMENTS)]
    return "\n".join(lines)


def _cmd_repro(args: argparse.Namespace) -> int:
    from ._repro import format_rows, repro

    rhos = None
    if args.sweep_rho:
        try:
            rhos = [float(x) for x in args.sweep_rho.split(",") if x.strip()]
        except ValueError:
            raise SpecError(f"--sweep-rho must be comma-separated numbers, got {args.sweep_rho!r}") from None
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(f"--jobs must be >= 1, got {args.jobs}")
    rows, wall = repro(args.paper, seed=args.seed, jobs=args.jobs, quick=args.quick, sweep_d=args.sweep_d,
                       sweep_rho=rhos, plot=args.plot, sweep_only=args.sweep_only)
    if args.json:
        print(json.dumps(_jsonable({"paper": args.paper, "seed": args.seed, "wall_seconds": wall,
                                    "rows": [r.as_dict() for r in rows]})))
    else:
        print(format_rows(rows))
        print(f"{len(rows)} rows in {wall:.1f} s")
        if args.plot:
            print(f"plot saved to {args.plot}")
    return 0


def _cmd_schemes(_: argparse.Namespace) -> int:
    for name in sorted(SCHEMES):
        s = SCHEMES[name]
        print(f"{name}: {s.summary}")
        print(f"    source: {s.source}")
        print(f"    topologies: {', '.join(s.topologies)}; load: {', '.join('--' + k for k in s.load_names) or 'none'}")
        for p in s.params:
            choices = f" (one of {', '.join(map(str, p.choices))})" if p.choices else ""
            print(f"    --param {p.name}=...  {p.help}{choices}; default {p.default}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``slotnet`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {"run": _cmd_run, "theory": _cmd_theory, "trace": _cmd_trace, "repro": _cmd_repro,
               "schemes": _cmd_schemes}[args.command]
    try:
        return handler(args)
    except NodeFailure as exc:
        print(f"slotnet {args.command}: failed: {exc}", file=sys.stderr)
        return 1
    except SlotnetError as exc:
        code = 2 if isinstance(exc, ValueError) else 1
        print(f"slotnet {args.command}: error: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(f"slotnet {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
