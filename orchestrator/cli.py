"""The ``slotnet`` command line.

    slotnet run SCHEME --topology SPEC [--param k=v ...] [--offered v | --lam λ | --rho ρ]
                       --slots N --warmup W --seed S [--json] [--per-node] [--series]
    slotnet theory SCHEME --topology SPEC [load flags] [--json]
    slotnet trace FILE [--node N ...] [--event KIND ...] [--slots A:B] [--packet ID] [--perfetto OUT] [--diagram OUT]
    slotnet repro PAPER|all [--quick] [--sweep-d D --plot FILE] [--dims A-B] [--json] [--html FILE] [--cache DIR | --no-cache]
    slotnet explore SCHEME --topology SPEC [load flags] --faults FAMILY|FILE [--samples K] [--shrink OUT] [--json]
    slotnet schemes [NAME]
    slotnet --version

Bad input exits with status 2 and one line on stderr; a scheme that breaks the slot
model (or raises) exits with status 1 and one line naming the node and slot; an output
that cannot be written (a trace or plot on a full disk, a closed or full stdout) exits
with status 1 and one line, after every result that could be printed.

Each command's ``--help`` is written here for people (a short description, the options,
examples in the epilog), never taken from a module docstring: text that comes from
elsewhere (scheme and paper descriptions) is stripped of reST markup by :func:`_plain`.
Every ``--json`` object is :func:`~.engine._result.json_ready` data: a number that is not
finite is null, its JSON Pointer listed under the top-level ``non_finite``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import trio

from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FAULT_KINDS, FaultSchedule, parse_topology
from slotnet.schemes import SCHEMES, Load, Row, Scheme, get_scheme

from ._run import run
from .engine._progress import Progress, RunsProgress
from .engine._result import json_ready
from .engine._spec import RunSpec, SpecError, TraceSpec
from .tools._perfetto import write_perfetto
from .tools._report import format_per_node, format_result, format_series, format_theory
from .tools._repro import papers
from .tools._trace_query import describe_follow, follow, format_event, learn_links, parse_packet, read_trace, timeline

__all__ = ["build_parser", "describe_scheme", "main", "scheme_example", "scheme_faults", "scheme_theory"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input on one line and exits with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class _OutputError(SlotnetError):
    """An output could not be written after the results were computed (exit status 1)."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("slotnet")
    except Exception:  # not installed as a distribution: the package's own
        import slotnet

        return str(getattr(slotnet, "__version__", "unknown"))


class _VersionAction(argparse.Action):
    """``--version``: the version, and whether the hot path runs compiled (slotnet/_build.py),
    worked out only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> NoReturn:
        from slotnet._build import build

        print(f"slotnet {_version()} (hot path: {build()})")
        parser.exit()


def _slot_window(text: str, flag: str) -> tuple[int, int]:
    """``A:B`` (either side may be left out) as ``[A, B)``."""
    a, sep, b = text.partition(":")
    try:
        window = (int(a) if a.strip() else 0, int(b) if b.strip() else 1 << 62)
    except ValueError:
        raise SpecError(f"{flag} must look like A:B with integer slots, got {text!r}") from None
    if not sep or window[0] < 0 or window[0] >= window[1]:
        raise SpecError(f"{flag} must look like A:B with 0 <= A < B, got {text!r}")
    return window


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
            meanings.setdefault(_plain(load.help), []).append(scheme)
        text = "; ".join(f"{h} ({', '.join(s)})" for h, s in meanings.items())
        g.add_argument(f"--{flag}", type=float, metavar=users[0][1].metavar, help=text)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("scheme", help="scheme name (see `slotnet schemes`)")
    p.add_argument("--topology", "-t", required=True, metavar="SPEC", help="hypercube:D, torus:N1xN2[x...] or mesh:N1xN2[x...]")
    p.add_argument("--param", "-p", action="append", default=[], metavar="K=V", help="scheme parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    _add_load(p)


#: Width the descriptions and epilogs are wrapped to (they are printed as written).
_HELP_WIDTH = 79

_ROLE = re.compile(r":[\w.-]+:`(~?)([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``")


def _plain(text: str) -> str:
    """``text`` without reST markup, for the terminal: ``x`` and :role:`x` become x (:role:`~a.b` b)."""
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    return _LITERAL.sub(r"\1", text)


def _para(text: str, indent: str = "") -> str:
    """One paragraph of plain prose, wrapped to the help width."""
    return textwrap.fill(" ".join(_plain(text).split()), _HELP_WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def _listing(title: str, items: Sequence[tuple[str, str]]) -> str:
    """``title:`` then each (name, meaning) on its own line, the meanings aligned."""
    width = max(len(name) for name, _ in items) + 2
    lines = [f"{title}:"]
    for name, text in items:
        body = textwrap.wrap(" ".join(_plain(text).split()), _HELP_WIDTH - 2 - width, break_on_hyphens=False,
                             break_long_words=False) or [""]
        lines.append(f"  {name.ljust(width)}{body[0]}")
        lines += [" " * (2 + width) + line for line in body[1:]]
    return "\n".join(lines)


def _examples(*items: tuple[str, str]) -> str:
    """An epilog: each example command under a comment saying what it does."""
    lines = ["examples:"]
    for what, command in items:
        lines += [f"  # {what}", f"  {command}"]
    return "\n".join(lines)


def _description(*parts: str) -> str:
    """Paragraphs of prose (wrapped here) and pre-formatted blocks (a listing: kept as they are)."""
    return "\n\n".join(p if "\n" in p else _para(p) for p in parts)


_RUN_EXAMPLES = _examples(
    ("one-pass deflection routing on a 64-node cube at full offered load",
     "slotnet run deflection -t hypercube:6 --offered 1 --slots 2000 --warmup 200"),
    ("a broadcast scheme with node 5 crashing at slot 12, every event written to a trace",
     "slotnet run bcast-simple -t hypercube:3 --rho 0.15 --slots 40 --fault crash@12:5 --trace run.jsonl"),
    ("the result as one JSON object, with the per-slot series",
     "slotnet run star -t torus:8x8 --rho 0.5 --slots 500 --json --series"),
)
_THEORY_EXAMPLES = _examples(
    ("the blocking model of deflection routing on a 64-node cube",
     "slotnet theory deflection -t hypercube:6 --offered 1"),
    ("a million nodes: the model is answered for sizes no run could hold",
     "slotnet theory deflection -t hypercube:20 --offered 1"),
    ("above saturation as JSON: an infinite delay is null, its key listed under non_finite",
     "slotnet theory star -t torus:8x8 --rho 1.2 --json"),
)
_TRACE_EXAMPLES = _examples(
    ("what node 3 did in the first 20 slots",
     "slotnet trace run.jsonl --node 3 --slots 0:20"),
    ("follow one broadcast (origin 7, sequence number 1) from birth to its last reception",
     "slotnet trace run.jsonl --packet 7,1"),
    ("the first 20 slots as an SVG slot diagram and as Perfetto JSON",
     "slotnet trace run.jsonl --slots 0:20 -t hypercube:3 --diagram run.svg --perfetto run.json"),
)
_EXPLORE_EXAMPLES = _examples(
    ("deflection routing with each link of a 16-node cube down in turn",
     "slotnet explore deflection -t hypercube:4 --offered 0.5 --faults single-link"),
    ("every node crashed in turn; the first failing scenario shrunk to a faults file",
     "slotnet explore bcast-simple -t hypercube:3 --rho 0.2 --faults single-node --shrink minimal.json"),
    ("five pairs of links drawn with seed 2, as one JSON object",
     "slotnet explore star -t torus:4x4 --rho 0.5 --faults double-link --samples 5 --seed 2 --json"),
)
_REPRO_EXAMPLES = _examples(
    ("a quick smoke test of Greenberg & Hajek's tables",
     "slotnet repro greenberg-hajek --quick"),
    ("Stamoulis & Tsitsiklis's delay against load on the 6-cube, plotted",
     "slotnet repro stamoulis --sweep-d 6 --plot stamoulis.png"),
    ("the mean delay at full load on cubes of dimension 4 to 10, beside the model",
     "slotnet repro greenberg-hajek --dims 4-10"),
)
_SHARD_EXAMPLES = _examples(
    ("a coordinator whose two shards are started by hand, on machines that reach the broker",
     "slotnet run deflection -t hypercube:10 --offered 1 --shards 2 --no-spawn --broker mqtt://host:1883 --run-id demo"),
    ("shard 0 of 2 of that run", "slotnet shard --broker mqtt://host:1883 --run demo --shard 0/2"),
    ("shard 1 of 2", "slotnet shard --broker mqtt://host:1883 --run demo --shard 1/2"),
)
_SCHEMES_EXAMPLES = _examples(
    ("every scheme with its parameters", "slotnet schemes"),
    ("one scheme in full, with a command that runs it", "slotnet schemes deflection"),
)
_TOP_EXAMPLES = _examples(
    ("the schemes, and one of them in full with a command that runs it", "slotnet schemes deflection"),
    ("a run of 2,000 slots, the paper's theory beside the simulation",
     "slotnet run deflection -t hypercube:6 --offered 1 --slots 2000 --warmup 200"),
    ("a command's options and examples", "slotnet run --help"),
)

#: What each fault family of ``slotnet explore`` is (families not listed here are named only).
_FAMILY_HELP = {
    "single-link": "every undirected link down, one at a time",
    "single-node": "every node crashed, one at a time",
    "double-link": "pairs of links down, --samples K of them (default 20) drawn with the seed",
    "crash-points": "every node crashing at each of the --crash-slots",
    "random": "--samples K random mixed schedules of the kinds the scheme runs under, each checked for "
              "crashes, open books and determinism beyond the verdict (--shrink keeps the failing check)",
}


def _explore_description() -> str:
    from .tools._explore import FAMILIES

    return _description(
        "Run a scheme once under each fault of a family (or once under a faults file) and judge every run, "
        "the fault-free run first. A run is ok when nothing is unaccounted for (the invariants hold), no "
        "message was lost to a port its sender could already see dead (after --detect slots), and no node "
        "the faults left reachable missed a broadcast.",
        _listing("families (each fault of the first four lasts from slot 0, or from its crash slot, to the end of "
                 "the run)",
                 [(f, _FAMILY_HELP.get(f, "")) for f in FAMILIES]),
        "So deflection, which routes around a dead link, is ok under single-link, while a broadcast on fixed "
        "spanning trees is not: the subtree behind the link misses packets although it is still reachable. "
        "--samples K caps every family (a sample drawn with the seed). Scenarios run in worker processes; "
        "results do not depend on how many.",
    )


def _repro_description() -> str:
    from slotnet.schemes import EXPERIMENTS

    return _description(
        "Rerun a paper's comparisons: each row puts the paper's figure beside the simulation and the theory, "
        "with a verdict (within the paper's agreement, outside it for a documented reason, or outside it). "
        "Runs are spread over worker processes (results do not depend on how many); rows print as they are "
        "done, and progress goes to stderr on a terminal.",
        _listing("papers", [(name, EXPERIMENTS[name].doc) for name in sorted(EXPERIMENTS)]),
    )


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to render ``--help``)."""
    parser = _Parser(prog="slotnet", description="Slotted, message-passing emulator of interconnection networks.",
                     epilog=_TOP_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show the version and which build of the hot path runs")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    def command(name: str, help: str, description: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, epilog=epilog,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    r = command("run", "run a scheme on the emulated network", _description(
        "Run a scheme on an emulated network, slot by slot, and report what it measured beside the paper's "
        "theory: delays, queues and link use, the invariants checked and a stability verdict. Every node is "
        "its own task; one --seed fixes the whole run. Faults, a trace and a sharded run are options."),
        _RUN_EXAMPLES)
    _add_common(r)
    r.add_argument("--slots", type=int, default=None, metavar="N",
                   help="slots to run, warm-up included (default 1000; a one-shot task: until it completes, at most "
                        "a safety cap from the scheme's bound, and --slots N cuts it short, reported incomplete)")
    r.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="one seed fixes the whole run (default 0)")
    r.add_argument("--fault", action="append", default=[], metavar="F",
                   help="link-down@SLOT:NODE:PORT, link-up@..., crash@SLOT:NODE, recover@SLOT:NODE, "
                        "partition@FROM:TO:NODES, stall@FROM:TO:NODE, loss=RATE, dup=RATE, delay=RATE:SLOTS, "
                        "corrupt=RATE[:undetected] (message faults take @FROM[-UNTIL])")
    r.add_argument("--faults", metavar="FILE", help="JSON list of fault objects")
    r.add_argument("--detect", metavar="SLOTS|never", default=None,
                   help="slots a node takes to see a dead port (link down, neighbour crashed or stalled); "
                        "never: nodes are never told (default 1)")
    r.add_argument("--trace", metavar="FILE", help="write trace events as JSON lines")
    r.add_argument("--trace-nodes", metavar="N,N,...", help="trace only these nodes (default: all)")
    r.add_argument("--trace-slots", metavar="A:B", help="trace only slots A <= slot < B")
    r.add_argument("--trace-events", metavar="K,K,...",
                   help="trace only these event kinds (the scheme's, or sent, received, lost, fault)")
    r.add_argument("--per-node", action="store_true", help="per-node statistics (a table, or a key of --json)")
    r.add_argument("--series", action="store_true", help="keep and show per-slot values (a table, or a key of --json)")
    r.add_argument("--max-backlog", type=float, default=None, metavar="Q",
                   help="stop and report unstable when queues exceed Q packets per node "
                        "(default 1000, more for schemes whose stable queues are long)")
    r.add_argument("--no-progress", action="store_true", help="never draw the progress bar")
    g = r.add_argument_group("sharded runs (nodes spread over processes through an MQTT broker)")
    g.add_argument("--shards", type=int, default=1, metavar="K", help="worker processes (default 1: this process)")
    g.add_argument("--broker", metavar="URL", help="mqtt://[user@]host:port of an existing broker "
                   "(password in $SLOTNET_MQTT_PASSWORD); default: a private mosquitto for the run")
    g.add_argument("--no-spawn", action="store_true", help="start no shards: wait for K `slotnet shard` processes")
    g.add_argument("--run-id", metavar="ID", help="the run's id (topic namespace slotnet/ID); default random")

    t = command("theory", "the scheme's analytic model", _description(
        "Evaluate the scheme's analytic model (the paper's formulas and bounds) for a topology and load, under "
        "the metric names `slotnet run` reports. No network is built, so the answer does not wait for memory a "
        "run would need: any size the model can compute is answered."), _THEORY_EXAMPLES)
    _add_common(t)
    t.add_argument("--slots", type=int, default=25, metavar="N", help="slots of a transient prediction (default 25)")

    tr = command("trace", "query a trace file", _description(
        "Query a trace written by `slotnet run --trace`: filters combine (node, event kind, slot range, packet); "
        "print the events, follow one packet, or export them to Perfetto or a slot diagram."), _TRACE_EXAMPLES)
    tr.add_argument("file", help="trace file written by `slotnet run --trace`")
    tr.add_argument("--node", type=int, action="append", default=[], metavar="N", help="only this node (repeatable)")
    tr.add_argument("--event", action="append", default=[], metavar="KIND", help="only these event kinds (repeatable)")
    tr.add_argument("--slots", metavar="A:B", help="only slots A <= slot < B")
    tr.add_argument("--packet", metavar="ID", help="follow one packet from birth to its last reception: the leading "
                    "fields of its messages, e.g. ORIGIN,SEQ for a broadcast, DEST,BIRTH,ORIGIN for deflection")
    tr.add_argument("--topology", "-t", metavar="SPEC", help="the run's topology: pairs every hop of --perfetto and "
                    "--diagram exactly (without it hops are inferred from the messages)")
    tr.add_argument("--perfetto", metavar="OUT", help="write the Chrome/Perfetto trace-event JSON to OUT")
    tr.add_argument("--diagram", metavar="OUT", help="draw the slot diagram (nodes as columns, slots as rows, "
                    "messages as arrows; at most 16 nodes and 40 slots) as SVG to OUT")

    ex = command("explore", "run a scheme under every fault of a family and judge each run", _explore_description(),
                 _EXPLORE_EXAMPLES)
    _add_common(ex)
    ex.add_argument("--slots", type=int, default=200, metavar="N", help="slots of every run, warm-up included (default 200)")
    ex.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    ex.add_argument("--seed", type=int, default=0, metavar="S", help="seed of every run and of the samples (default 0)")
    ex.add_argument("--faults", required=True, metavar="FAMILY|FILE",
                    help="single-link, single-node, double-link, crash-points, random (random schedules of the "
                    "fault kinds the scheme runs under), or a --faults JSON file to judge alone")
    ex.add_argument("--samples", type=int, metavar="K", help="at most K scenarios, drawn with the seed "
                    "(default: all; double-link and random: 20)")
    ex.add_argument("--crash-slots", metavar="A,B,...", help="crash-points: the crash slots (default: 1/4, 1/2, 3/4 "
                    "into the measured slots)")
    ex.add_argument("--detect", metavar="SLOTS|never", default=None,
                    help="slots a node takes to see a dead port (default 1; never: nodes are never told)")
    ex.add_argument("--jobs", type=int, default=None, metavar="J", help="worker processes (default: every core)")
    ex.add_argument("--shrink", metavar="OUT", help="shrink the first failing scenario to a minimal schedule "
                    "and write it to OUT as a --faults file (random: the first sample of the gravest class, to a "
                    "schedule that fails the same check)")
    ex.add_argument("--max-backlog", type=float, default=None, metavar="Q", help="as for slotnet run")

    rp = command("repro", "rerun a paper's comparisons", _repro_description(), _REPRO_EXAMPLES)
    rp.add_argument("paper", help="the paper to reproduce: " + ", ".join(papers()) + "; or all")
    rp.add_argument("--seed", type=int, default=1, metavar="S", help="seed of every run (default 1)")
    rp.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default: min(2, cores))")
    rp.add_argument("--quick", action="store_true", help="a subset of rows and shorter runs (a smoke test)")
    rp.add_argument("--sweep-d", type=int, metavar="D", help="also sweep the paper's schemes over load on dimension D")
    rp.add_argument("--sweep-rho", metavar="R,R,...", help="the loads of the sweep (default: the paper's)")
    rp.add_argument("--plot", metavar="FILE", help="save the sweep's plot (needs matplotlib: the plot extra)")
    rp.add_argument("--sweep-only", action="store_true", help="run only the sweep, not the table checks")
    rp.add_argument("--dims", metavar="A-B", help="greenberg-hajek: the mean delay at v = 1 for each cube dimension "
                    "A..B (or D, or a comma list) beside the §III model, with each point's wall seconds")
    rp.add_argument("--hours", type=float, metavar="H", help="greenberg-hajek --dims: cut each point's measured "
                    "slots to what the cost model says fits in H hours (the warm-up is never cut)")
    rp.add_argument("--shards", type=int, metavar="K", help="greenberg-hajek --dims: run each point over K shard "
                    "processes and a broker (the same results; for cubes of 2^17 nodes and more)")
    rp.add_argument("--json", action="store_true", help="print the rows as one JSON object")
    rp.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report: tables, figures, verdicts, "
                    "where the papers slip, metadata (needs matplotlib: the report extra)")
    rp.add_argument("--cache", metavar="DIR", help="the results cache (default $SLOTNET_CACHE_DIR, else "
                    "~/.cache/slotnet/runs): a run finished before is not run again by the same code")
    rp.add_argument("--no-cache", action="store_true", help="run everything afresh and keep nothing")

    sh = command("shard", "run one shard of a sharded run", _description(
        "Host one shard of a run whose coordinator is `slotnet run --shards K --no-spawn --broker URL --run-id ID`; "
        "start K of these, on any machines that reach the broker."), _SHARD_EXAMPLES)
    sh.add_argument("--broker", required=True, metavar="URL", help="mqtt://[user@]host:port (password in $SLOTNET_MQTT_PASSWORD)")
    sh.add_argument("--run", required=True, metavar="ID", help="the run's id")
    sh.add_argument("--shard", required=True, metavar="I/K", help="this shard's index and the number of shards")

    sc = command("schemes", "list the schemes, or show one", _description(
        "List every scheme with its parameters, or show one in full: its source, topologies, load flags and "
        "parameters, the theory beside its runs, the faults it runs under, and a command that runs it."),
        _SCHEMES_EXAMPLES)
    sc.add_argument("name", nargs="?", metavar="NAME", help="show this scheme only, in full")
    return parser


def _params(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SpecError(f"--param {item!r} must look like NAME=VALUE")
        if key in out:
            raise SpecError(f"--param {key} given twice ({key}={out[key]} and {key}={value.strip()}): give it once")
        out[key] = value.strip()
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
    slots = _slot_window(args.trace_slots, "--trace-slots") if args.trace_slots else None
    kinds = frozenset(k.strip() for k in args.trace_events.split(",") if k.strip()) if args.trace_events else None
    errors = args.trace_errors = []
    return TraceSpec(args.trace, _int_set(args.trace_nodes, "--trace-nodes"), slots, kinds, on_error=errors.append)


def _print_json(obj: Any) -> None:
    """One JSON object on stdout: non-finite numbers as null, listed under ``non_finite`` (``json_ready``)."""
    print(json.dumps(json_ready(obj), allow_nan=False))


def _cmd_run(args: argparse.Namespace) -> int:
    spec = RunSpec(
        scheme=args.scheme, topology=args.topology, params=_params(args.param), load=_load(args),
        slots=args.slots, warmup=args.warmup, seed=args.seed,
        faults=FaultSchedule.parse(args.fault, args.faults, detect="default" if args.detect is None else args.detect),
        trace=_trace_spec(args),
        max_backlog_per_node=args.max_backlog, shards=args.shards, broker=args.broker, series=args.series,
    )
    prep = spec.prepare()  # every input error surfaces here, before any slot runs
    if (args.no_spawn or args.run_id) and args.shards < 2:
        raise SpecError("--no-spawn and --run-id need --shards K (K >= 2)")
    if args.no_spawn and not args.broker:
        raise SpecError("--no-spawn needs --broker URL: the shards started by hand must reach the same broker")
    progress = None if args.no_progress else Progress(prep.slots)  # stderr, on a terminal only
    if args.no_spawn or args.run_id:
        import secrets

        from .shard._coordinator import run_sharded

        run_id = args.run_id or secrets.token_hex(6)
        if args.no_spawn:
            print(f"waiting for {args.shards} shards: slotnet shard --broker {args.broker} --run {run_id} "
                  f"--shard I/{args.shards}  (I = 0..{args.shards - 1})", file=sys.stderr)
        result = trio.run(lambda: run_sharded(prep, progress=progress, spawn=not args.no_spawn, run_id=run_id))
    else:
        result = run(spec, progress=progress)
    if args.json:
        _print_json(result.to_dict(per_node=args.per_node, series=args.series))
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
        raise _OutputError(trace_errors[0] + " (the results above are complete)")
    return 0


def _cmd_theory(args: argparse.Namespace) -> int:
    scheme = get_scheme(args.scheme)
    if scheme.theory is None:
        raise SpecError(f"scheme {scheme.name!r} has no analytic model")
    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=_params(args.param), load=_load(args),
                   slots=max(args.slots, 1), warmup=0)
    prep = spec.prepare(check_memory=False)  # the model only: no network is built, whatever its size
    theory = scheme.theory(prep.setup)
    if args.json:
        _print_json({"scheme": scheme.name, "topology": prep.topology.describe(), "load": prep.setup.load,
                     "params": prep.params, "theory": theory})
    else:
        print(format_theory(scheme.name, prep.topology.spec, theory, scheme.columns))
    return 0


def _cmd_trace(args: argparse.Namespace) -> int:
    from .tools._diagram import MAX_NODES, MAX_SLOTS, write_diagram

    window = _slot_window(args.slots, "--slots") if args.slots else None
    kinds = set(args.event) or None
    nodes = set(args.node) or None
    packet = parse_packet(args.packet) if args.packet is not None else None
    topology = parse_topology(args.topology) if args.topology else None
    for flag, out in (("--perfetto", args.perfetto), ("--diagram", args.diagram)):
        if out and Path(out).resolve() == Path(args.file).resolve():
            raise SpecError(f"{flag} {out!r} would overwrite the trace it reads")
    if args.diagram and window is not None and window[1] - window[0] > MAX_SLOTS:
        raise SpecError(f"--diagram draws at most {MAX_SLOTS} slots, --slots asks for {window[1] - window[0]}")
    if args.diagram and nodes is not None and len(nodes) > MAX_NODES:
        raise SpecError(f"--diagram draws at most {MAX_NODES} nodes, --node names {len(nodes)}")

    def selected() -> Iterator[dict[str, Any]]:
        events = (ev for ev in read_trace(args.file)
                  if (nodes is None or ev["node"] in nodes) and (not kinds or ev["event"] in kinds)
                  and (window is None or window[0] <= ev["slot"] < window[1]))
        return follow(events, packet)[0].__iter__() if packet is not None else events

    # without the topology, learn who sends to each in-port from the whole trace, not just the selection
    links = None if topology is not None or not (args.perfetto or args.diagram) else learn_links(read_trace(args.file))
    if args.perfetto:
        count = write_perfetto(selected(), args.perfetto, topology, links)
        print(f"wrote {count} events to {args.perfetto}")
    if args.diagram:
        drawn = write_diagram(selected(), args.diagram, topology=topology, links=links, window=window)
        print(f"wrote a diagram of {drawn['nodes']} nodes x {drawn['slots']} slots (slots {drawn['first']}.."
              f"{drawn['last']}, {drawn['hops']} messages) to {args.diagram}" + drawn["note"])
    if args.perfetto or args.diagram:
        return 0
    if packet is not None:
        mine, summary = follow(selected(), packet)
        for ev in mine:
            print(format_event(ev))
        print(describe_follow(summary))
        return 0
    if nodes is not None and len(nodes) == 1:
        (node,) = nodes
        lines = timeline(read_trace(args.file), node, kinds, window)
        if not lines:
            print(f"no events for node {node} in {args.file}")
        for line in lines:
            print(line)
        return 0
    count = 0
    for ev in selected():
        print(format_event(ev))
        count += 1
    if not count:
        print(f"no events match in {args.file}")
    return 0


def _check_writable(path: str, flag: str) -> None:
    """``path`` can be written (checked before any run); nothing is left behind.

    Raises:
        SpecError: naming the flag and why.
    """
    existed = os.path.exists(path)
    if existed and not os.path.isfile(path):
        raise SpecError(f"{flag}: {path!r} is not a regular file")
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise SpecError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None
    if not existed:
        os.unlink(path)


def _explore_schedule(text: str) -> list[dict[str, Any]] | None:
    """None for a family name; else the JSON objects of the faults file ``text`` (checked)."""
    from .tools._explore import FAMILIES

    if text in FAMILIES:
        return None
    if not os.path.isfile(text):
        raise SpecError(f"--faults must be one of {', '.join(FAMILIES)} or a faults file, got {text!r}")
    FaultSchedule.parse(file=text)  # every malformed entry is refused here
    with open(text, encoding="utf-8") as fh:
        return list(json.load(fh))


def _cmd_explore(args: argparse.Namespace) -> int:
    from .tools._explore import explore, format_explore, shrink_failure

    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=_params(args.param), load=_load(args),
                   slots=args.slots, warmup=args.warmup, seed=args.seed, max_backlog_per_node=args.max_backlog)
    spec.prepare()
    schedule = _explore_schedule(args.faults)
    crash = None
    if args.crash_slots is not None:
        crash = sorted(_int_set(args.crash_slots, "--crash-slots") or ())
        if not crash:
            raise SpecError("--crash-slots needs at least one slot")
    if args.shrink:
        if schedule is not None and Path(args.shrink).resolve() == Path(args.faults).resolve():
            raise SpecError(f"--shrink {args.shrink!r} would overwrite the faults file it judges")
        _check_writable(args.shrink, "--shrink")
    report = explore(spec, None if schedule is not None else args.faults, schedule=schedule, samples=args.samples,
                     crash_slots=crash, jobs=args.jobs, progress=RunsProgress(),
                     detect="default" if args.detect is None else args.detect)
    shrunk = None
    failing = next((r for r in report["scenarios"] if not r["ok"]), None)
    if report["family"] == "random":  # the first sample of the gravest class (a refusal is no failure)
        from .tools._explore import CLASSES

        grave = [r for r in report["scenarios"] if r["class"] not in ("ok", "refused")]
        failing = min(grave, key=lambda r: CLASSES.index(r["class"]), default=None)
    if args.shrink and failing is not None:
        shrunk = shrink_failure(spec, failing["faults"], failing.get("class"))
        shrunk["from"] = failing["fault"]
        shrunk["file"] = args.shrink
        shrunk["replay"] = _replay_command(args, spec)
        if failing.get("class") is not None:  # a random sample's checks are a run's: replay the run
            from .tools._explore import base_request
            from .tools._fuzz import run_command

            shrunk["run"] = run_command(base_request(spec), [], args.shrink)
        text = json.dumps(shrunk["faults"], indent=1) + "\n"
        try:
            with open(args.shrink, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise _OutputError(f"--shrink: cannot write {args.shrink!r}: {exc.strerror or exc}") from None
        report["shrunk"] = shrunk
    if args.json:
        _print_json(report)
        return 0
    print(format_explore(report))
    if shrunk is not None:
        v = shrunk["verdict"]
        texts = ", ".join(FaultSchedule.parse(file=args.shrink).to_list())
        if all(o.get("kind") == "detect" for o in shrunk["faults"]):
            texts += ("; " if texts else "") + "no fault: the run fails without faults"
        print(f"\nshrunk {shrunk['from']!r} in {shrunk['runs']} runs to {len(shrunk['faults'])} fault entries: {texts}")
        print(f"  fails: {'; '.join(v['reasons'])}")
        print(f"  written to {args.shrink}; replay: {shrunk['replay']}")
        if "run" in shrunk:
            print(f"  run: {shrunk['run']}")
    elif args.shrink:
        print("\nnothing to shrink: every scenario is ok (no file written)")
    return 0


def _replay_command(args: argparse.Namespace, spec: RunSpec) -> str:
    import shlex

    parts = ["slotnet", "explore", spec.scheme, "-t", spec.topology]
    for item in args.param:
        parts += ["--param", item]
    for k, v in spec.load.items():
        parts += [f"--{k}", f"{v:g}"]
    parts += ["--slots", str(spec.slots), "--warmup", str(spec.warmup), "--seed", str(spec.seed)]
    if args.max_backlog is not None:
        parts += ["--max-backlog", f"{args.max_backlog:g}"]
    return " ".join(shlex.quote(p) for p in [*parts, "--faults", args.shrink])


def _check_plot(path: str) -> None:
    """--plot needs matplotlib and a writable path: both checked before any run."""
    from .tools.repro_all import check_figure_output

    check_figure_output("--plot", path, "pip install 'slotnet[plot]' (or leave out --plot)")


def _cmd_repro(args: argparse.Namespace) -> int:
    from .tools._repro import LEGEND, PartialRepro, format_rows, repro

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
        from .tools.repro_all import repro_many

        return repro_many(args, rhos)
    if args.plot:
        _check_plot(args.plot)
    from .tools.repro_all import open_cache

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
            _print_json({"paper": args.paper, "seed": args.seed, "error": str(exc), "rows": [r.as_dict() for r in exc.rows]})
        else:
            rest = [r for r in exc.rows if not any(r is p for p in printed)]
            if rest:
                print(format_rows(rest))
        raise _OutputError(str(exc)) from None
    if args.json:
        _print_json({"paper": args.paper, "seed": args.seed, "timing": {"wall_seconds": wall},
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


#: Small topologies of each kind a scheme's example command tries, in order: the first its spec accepts.
_EXAMPLE_TOPOLOGIES = {"hypercube": ("hypercube:4", "hypercube:3"), "torus": ("torus:4x4", "torus:8", "torus:4x4x4"),
                       "mesh": ("mesh:4x4", "mesh:8", "mesh:4x4x4")}
#: The value of a scheme's first load flag in its example command.
_EXAMPLE_LOAD = 0.5
#: Slots of a slot-bound scheme's example run (a one-shot run stops when the network is quiet).
_EXAMPLE_SLOTS = 500


def scheme_example(scheme: Scheme) -> list[list[str]]:
    """Commands (argv without ``slotnet``) that run ``scheme`` small, and evaluate its theory if it has one.

    The topology is the first small one of the scheme's kinds that its spec accepts (with
    the first load flag at 0.5 and the default parameters); no command if none is.
    """
    load = {scheme.loads[0].name: _EXAMPLE_LOAD} if scheme.loads else {}
    flags = [word for k, v in load.items() for word in (f"--{k}", f"{v:g}")]
    for kind in scheme.topologies:
        for topology in _EXAMPLE_TOPOLOGIES.get(kind, ()):
            try:
                RunSpec(scheme.name, topology, load=load, slots=_EXAMPLE_SLOTS).prepare()
            except SlotnetError:
                continue
            run = ["run", scheme.name, "-t", topology, *flags]
            if scheme.until == "slots":
                run += ["--slots", str(_EXAMPLE_SLOTS)]
            return [run] + ([["theory", scheme.name, "-t", topology, *flags]] if scheme.theory is not None else [])
    return []


def scheme_theory(scheme: Scheme) -> str:
    """One line: whether the scheme has a theory, what a run heads it, and where ``slotnet theory`` stands."""
    if scheme.theory is None:
        return "none: `slotnet theory` refuses this scheme, and a run shows the simulation alone"
    what = ("the paper's formulas and bounds" if scheme.theory_label == "theory"
            else "computed by executing the paper's algorithm centrally, not a formula")
    return (f"yes, headed {scheme.theory_label!r} beside a run's simulation ({what}); "
            f"`slotnet theory {scheme.name}` prints it alone, under the run's metric names")


def scheme_faults(scheme: Scheme) -> tuple[str, str | None]:
    """The fault kinds the scheme runs under, and (if it refuses some) which and why."""
    if scheme.faults is None:
        return f"every kind ({', '.join(sorted(FAULT_KINDS))})", None
    refused = sorted(k for k in FAULT_KINDS if k not in scheme.faults)
    return ", ".join(sorted(scheme.faults)) or "none", f"{', '.join(refused)}: {scheme.faults_why}" if refused else None


def describe_scheme(scheme: Scheme) -> str:
    """What ``slotnet schemes NAME`` prints: one scheme in full, with commands that run it."""
    runs = "the given --slots" if scheme.until == "slots" else "until the network is quiet (--slots is an upper bound)"
    takes, refuses = scheme_faults(scheme)
    facts = [("source", scheme.source), ("topologies", ", ".join(scheme.topologies)), ("runs", runs),
             ("theory", scheme_theory(scheme)), ("faults", takes)]
    if refuses is not None:
        facts.append(("refuses", refuses))
    parts = [_para(f"{scheme.name}: {scheme.summary}"), _listing("about", facts)]
    if scheme.loads:
        parts.append(_listing("load flags", [(f"--{ld.name} {ld.metavar}", ld.help) for ld in scheme.loads]))
    else:
        parts.append("load flags: none")
    if scheme.params:
        params = []
        for p in scheme.params:
            choices = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            params.append((f"--param {p.name}=...", f"{p.help}{choices}; default {p.default}"))
        parts.append(_listing("parameters", params))
    else:
        parts.append("parameters: none")
    examples = scheme_example(scheme)
    if examples:
        parts.append("\n".join(["example:", *("  slotnet " + shlex.join(argv) for argv in examples)]))
    return "\n\n".join(parts)


def _cmd_schemes(args: argparse.Namespace) -> int:
    if args.name is not None:
        print(describe_scheme(get_scheme(args.name)))
        return 0
    for name in sorted(SCHEMES):
        s = SCHEMES[name]
        print(f"{name}: {_plain(s.summary)}")
        print(f"    source: {_plain(s.source)}")
        print(f"    topologies: {', '.join(s.topologies)}; load: {', '.join('--' + k for k in s.load_names) or 'none'}")
        takes, refuses = scheme_faults(s)
        print(f"    faults: {takes}" + (f"; refuses {_plain(refuses)}" if refuses else ""))
        for p in s.params:
            choices = f" (one of {', '.join(map(str, p.choices))})" if p.choices else ""
            print(f"    --param {p.name}=...  {_plain(p.help)}{choices}; default {p.default}")
    print("\n(`slotnet schemes NAME` shows one scheme in full, with a command that runs it)")
    from slotnet.schemes._registry import FAILED

    for pkg, why in sorted(FAILED.items()):
        print(f"(scheme package {pkg} failed to load: {why})", file=sys.stderr)
    return 0


def _cmd_shard(args: argparse.Namespace) -> int:
    from .shard._shard import run_shard

    index, sep, total = args.shard.partition("/")
    if not (sep and index.isdigit() and total.isdigit() and int(index) < int(total)):
        raise SpecError(f"--shard must look like I/K with 0 <= I < K, got {args.shard!r}")
    trio.run(run_shard, args.broker, args.run, int(index), int(total))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``slotnet`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {"run": _cmd_run, "theory": _cmd_theory, "trace": _cmd_trace, "repro": _cmd_repro, "explore": _cmd_explore,
               "schemes": _cmd_schemes, "shard": _cmd_shard}[args.command]
    if sys.stdout is None:  # started with stdout closed (``>&-``)
        print(f"slotnet {args.command}: error: stdout is closed: nothing can be printed", file=sys.stderr)
        return 1
    try:
        code = handler(args)
        sys.stdout.flush()  # a full device fails here, not silently at exit
        return code
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
    except BrokenPipeError:  # the reader went away (``| head``): not an error
        _drop_stdout()
        return 0
    except OSError as exc:  # stdout on a full device or otherwise unwritable, or another I/O failure
        if exc.filename is None:
            _drop_stdout()
            what = f"cannot write output: {exc.strerror or exc}"
        else:
            what = f"{exc.filename}: {exc.strerror or exc}"
        print(f"slotnet {args.command}: error: {what}", file=sys.stderr)
        return 1


def _drop_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
