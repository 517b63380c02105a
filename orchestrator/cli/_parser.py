"""The argument parser: one function adds each sub-command, with its description and examples."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from slotnet._version import version
from slotnet.nodes.runtime import DEFAULT_RNG

from ..engine._spec import DEFAULT_NODE_TIMEOUT
from ..tools._repro import papers
from ._common import Parser, load_flags
from ._help import description, examples, listing, plain

__all__ = ["build_parser"]

#: ``command(name, help, description, epilog)``: a new sub-command's parser.
Command = Callable[[str, str, str, str], argparse.ArgumentParser]


class VersionAction(argparse.Action):
    """``--version``: the version, and whether the hot path runs compiled (slotnet/_build.py),
    worked out only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> NoReturn:
        from slotnet._build import build

        print(f"slotnet {version()} (hot path: {build()})")
        parser.exit()


def add_load(p: argparse.ArgumentParser) -> None:
    """The load flags every scheme declares, each with its meanings."""
    g = p.add_argument_group("load (declared by the schemes; which flags apply depends on the scheme)")
    for flag, users in load_flags().items():
        meanings: dict[str, list[str]] = {}
        for scheme, load in users:
            meanings.setdefault(plain(load.help), []).append(scheme)
        text = " ".join(f"{', '.join(s)}: {h}." for h, s in meanings.items())  # each scheme's own meaning
        g.add_argument(f"--{flag}", type=float, metavar=users[0][1].metavar, help=text)


def add_common(p: argparse.ArgumentParser) -> None:
    """The scheme, topology, parameters, --json and load flags of run, theory and explore."""
    p.add_argument("scheme", help="scheme name (see `slotnet schemes`)")
    p.add_argument("--topology", "-t", required=True, metavar="SPEC",
                   help="hypercube:D, torus:N1xN2[x...], mesh:N1xN2[x...], ring:N, graph:FILE (an edge list), "
                        "anynet:FILE (BookSim2's format) or edges:U-V,U-V,...")
    p.add_argument("--param", "-p", action="append", default=[], metavar="K=V", help="scheme parameter (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    add_load(p)


RUN_EXAMPLES = examples(
    ("one-pass deflection routing on a 64-node cube at full offered load",
     "slotnet run deflection -t hypercube:6 --offered 1 --slots 2000 --warmup 200"),
    ("a broadcast scheme with node 5 crashing at slot 12, every event written to a trace",
     "slotnet run bcast-simple -t hypercube:3 --rho 0.15 --slots 40 --fault crash@12:5 --trace run.jsonl"),
    ("the result as one JSON object, with the per-slot series",
     "slotnet run star -t torus:8x8 --rho 0.5 --slots 500 --json --series"),
)
THEORY_EXAMPLES = examples(
    ("the blocking model of deflection routing on a 64-node cube",
     "slotnet theory deflection -t hypercube:6 --offered 1"),
    ("a million nodes: the model is answered for sizes no run could hold",
     "slotnet theory deflection -t hypercube:20 --offered 1"),
    ("above saturation as JSON: an infinite delay is null, its key listed under non_finite",
     "slotnet theory star -t torus:8x8 --rho 1.2 --json"),
)
TRACE_EXAMPLES = examples(
    ("what node 3 did in the first 20 slots",
     "slotnet trace run.jsonl --node 3 --slots 0:20"),
    ("follow one broadcast (origin 7, sequence number 1) from birth to its last reception",
     "slotnet trace run.jsonl --packet 7,1"),
    ("the first 20 slots as an SVG slot diagram and as Perfetto JSON",
     "slotnet trace run.jsonl --slots 0:20 -t hypercube:3 --diagram run.svg --perfetto run.json"),
)
EXPLORE_EXAMPLES = examples(
    ("deflection routing with each link of a 16-node cube down in turn",
     "slotnet explore deflection -t hypercube:4 --offered 0.5 --faults single-link"),
    ("every node crashed in turn; the first failing scenario shrunk to a faults file",
     "slotnet explore bcast-simple -t hypercube:3 --rho 0.2 --faults single-node --shrink minimal.json"),
    ("five pairs of links drawn with seed 2, as one JSON object",
     "slotnet explore star -t torus:4x4 --rho 0.5 --faults double-link --samples 5 --seed 2 --json"),
)
CHECK_EXAMPLES = examples(
    ("every crash and every link down, one at a time, in slots 0 to 3 of a broadcast",
     "slotnet check bcast-simple -t hypercube:3 --rho 0.2 --slots 40 --kinds crash,link-down --window 0:3"),
    ("every pair of stalls and crashes of a one-shot task, over two processes, as one JSON object",
     "slotnet check prefix-scan -t mesh:2x2 --kinds crash,stall --max-faults 2 --window 0:2 --jobs 2 --json"),
)
REPRO_EXAMPLES = examples(
    ("a quick smoke test of Greenberg & Hajek's tables",
     "slotnet repro greenberg-hajek --quick"),
    ("Stamoulis & Tsitsiklis's delay against load on the 6-cube, plotted",
     "slotnet repro stamoulis --sweep-d 6 --plot stamoulis.png"),
    ("the mean delay at full load on cubes of dimension 4 to 10, beside the model",
     "slotnet repro greenberg-hajek --dims 4-10"),
)
SHARD_EXAMPLES = examples(
    ("a coordinator whose two shards are started by hand, on machines that reach the broker",
     "slotnet run deflection -t hypercube:10 --offered 1 --shards 2 --no-spawn --broker mqtt://host:1883 --run-id demo"),
    ("shard 0 of 2 of that run", "slotnet shard --broker mqtt://host:1883 --run demo --shard 0/2"),
    ("shard 1 of 2", "slotnet shard --broker mqtt://host:1883 --run demo --shard 1/2"),
)
SCHEMES_EXAMPLES = examples(
    ("every scheme with its parameters", "slotnet schemes"),
    ("one scheme in full, with a command that runs it", "slotnet schemes deflection"),
)
TOP_EXAMPLES = examples(
    ("the schemes, and one of them in full with a command that runs it", "slotnet schemes deflection"),
    ("a run of 2,000 slots, the paper's theory beside the simulation",
     "slotnet run deflection -t hypercube:6 --offered 1 --slots 2000 --warmup 200"),
    ("a command's options and examples", "slotnet run --help"),
)

#: What each fault family of ``slotnet explore`` is (families not listed here are named only).
FAMILY_HELP = {
    "single-link": "every undirected link down, one at a time",
    "single-node": "every node crashed, one at a time",
    "double-link": "pairs of links down, --samples K of them (default 20) drawn with the seed",
    "crash-points": "every node crashing at each of the --crash-slots",
    "random": "--samples K random mixed schedules of the kinds the scheme runs under, each checked for "
              "crashes, open books and determinism beyond the verdict (--shrink keeps the failing check)",
}


def explore_description() -> str:
    """``slotnet explore --help``'s description, with the fault families."""
    from ..tools._explore import FAMILIES

    return description(
        "Run a scheme once under each fault of a family (or once under a faults file) and judge every run, "
        "the fault-free run first. A run is ok when nothing is unaccounted for (the invariants hold), no "
        "message was lost to a port its sender could already see dead (after --detect slots), and no node "
        "the faults left reachable missed a broadcast.",
        listing("families (each fault of the first four lasts from slot 0, or from its crash slot, to the end of "
                "the run)",
                [(f, FAMILY_HELP.get(f, "")) for f in FAMILIES]),
        "So deflection, which routes around a dead link, is ok under single-link, while a broadcast on fixed "
        "spanning trees is not: the subtree behind the link misses packets although it is still reachable. "
        "--samples K caps every family (a sample drawn with the seed). Scenarios run in worker processes; "
        "results do not depend on how many. Exit status 0 when every scenario and the fault-free run are ok, 1 "
        "when one fails (as slotnet run and check; a refused scenario is no failure), 2 for bad input.",
    )


def repro_description() -> str:
    """``slotnet repro --help``'s description, with the papers."""
    from slotnet.schemes import EXPERIMENTS

    return description(
        "Rerun a paper's comparisons: each row puts the paper's figure beside the simulation and the theory, "
        "with a verdict (within the paper's agreement, outside it for a documented reason, or outside it). "
        "Runs are spread over worker processes (results do not depend on how many); rows print as they are "
        "done, and progress goes to stderr on a terminal.",
        listing("papers", [(name, EXPERIMENTS[name].doc) for name in sorted(EXPERIMENTS)]),
    )


def add_run(command: Command) -> None:
    """``slotnet run``: its options."""
    r = command("run", "run a scheme on the emulated network", description(
        "Run a scheme on an emulated network, slot by slot, and report what it measured beside the paper's "
        "theory: delays, queues and link use, the invariants checked and a stability verdict. Every node is "
        "its own task; one --seed fixes the whole run. Faults, a trace and a sharded run are options. Ctrl-C ends a "
        "run in this process after its current slot and prints what it measured so far (exit status 130).",
        "Exit status: 0 when the run's verdict holds; 1 when it fails (an invariant or a property violated, a "
        "one-shot task incomplete or deadlocked, a message lost on a port its sender saw dead, a broadcast that "
        "missed a node the faults left reachable: one line on stderr says why, and the result is printed in "
        "full, --json too), or when a node's rule failed, or the output could not be written; 2 for bad input; "
        "130 after Ctrl-C. With --seeds: 1 when any run's verdict fails."),
        RUN_EXAMPLES)
    add_common(r)
    r.add_argument("--slots", type=int, default=None, metavar="N",
                   help="slots to run, warm-up included (default 1000; a one-shot task: until it completes, at most "
                        "a safety cap from the scheme's bound, and --slots N cuts it short, reported incomplete)")
    r.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="one seed fixes the whole run (default 0)")
    add_rng(r)
    r.add_argument("--seeds", metavar="LIST", help="independent replications, one run per seed (1-10, 1,3,5): each "
                   "metric's mean over the seeds with a 95%% interval; --json holds every run")
    r.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="with --seeds: worker processes (default: min(2, cores); results do not depend on it)")
    add_faults(r)
    add_run_rest(r)


def add_faults(r: argparse.ArgumentParser) -> None:
    """The fault options of run and sweep."""
    r.add_argument("--fault", action="append", default=[], metavar="F",
                   help="link-down@SLOT:NODE:PORT, link-up@..., crash@SLOT:NODE, recover@SLOT:NODE, "
                        "partition@FROM:TO:NODES, stall@FROM:TO:NODE, loss=RATE, dup=RATE, delay=RATE:SLOTS, "
                        "corrupt=RATE[:undetected] (message faults take @FROM[-UNTIL])")
    r.add_argument("--faults", metavar="FILE", help="JSON list of fault objects")
    r.add_argument("--detect", metavar="SLOTS|never", default=None,
                   help="slots a node takes to see a dead port (link down, neighbour crashed or stalled); "
                        "never: nodes are never told (default 1)")


def add_run_rest(r: argparse.ArgumentParser) -> None:
    """run's options after the faults: trace, output, limits, shards."""
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
    r.add_argument("--node-timeout", type=float, default=DEFAULT_NODE_TIMEOUT, metavar="S",
                   help="end the run, naming the node, when one node holds it for S seconds of wall-clock time "
                        f"in one step (a loop without await, or an await of anything but its context; default "
                        f"{DEFAULT_NODE_TIMEOUT:g}; 0: no limit)")
    r.add_argument("--debug", action="store_true",
                   help="on a node's failure, print the whole traceback of its rule (--json: under error.traceback)")
    g = r.add_argument_group("sharded runs (nodes spread over processes through an MQTT broker)")
    g.add_argument("--shards", type=int, default=1, metavar="K", help="worker processes (default 1: this process)")
    g.add_argument("--broker", metavar="URL", help="mqtt://[user@]host:port of an existing broker, or mqtts:// for "
                   "TLS (password in $SLOTNET_MQTT_PASSWORD); default: a private mosquitto for the run")
    _tls_options(g)
    g.add_argument("--no-spawn", action="store_true", help="start no shards: wait for K `slotnet shard` processes")
    g.add_argument("--run-id", metavar="ID", help="the run's id (topic namespace slotnet/ID); default random")


SWEEP_EXAMPLES = examples(
    ("the broadcast delay of bcast-dtree on the 6-cube from rho = 0.1 to 0.6, three seeds a point",
     "slotnet sweep bcast-dtree -t hypercube:6 --over rho=0.1:0.6:0.1 --seeds 1-3 --slots 2000 --warmup 200"),
    ("the same as CSV and a plot of one metric",
     "slotnet sweep bcast-dtree -t hypercube:6 --over rho=0.1:0.6:0.1 --csv dtree.csv --plot dtree.png "
     "--plot-metric mean_broadcast_delay"),
)


def add_sweep(command: Command) -> None:
    """``slotnet sweep``: its options."""
    sw = command("sweep", "run a scheme over a range of one load or parameter", description(
        "Run a scheme at each value of one load (rho, offered, lam, ...) or parameter, each value under one or more "
        "seeds, and print each metric's mean (with a 95% interval over the seeds) beside the theory, one row per "
        "value. Runs are spread over worker processes (results do not depend on how many) and kept in the results "
        "cache, like repro's: a point run before is not run again by the same code."), SWEEP_EXAMPLES)
    add_common(sw)
    sw.add_argument("--over", required=True, metavar="NAME=A:B:STEP",
                    help="the load or parameter to vary: NAME=A:B:STEP (B included) or NAME=V1,V2,...")
    sw.add_argument("--seeds", default="1", metavar="LIST", help="seeds of each point: 1-10, 1,3,5 (default 1)")
    sw.add_argument("--slots", type=int, default=None, metavar="N", help="slots of each run, warm-up included")
    sw.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    add_rng(sw)
    add_faults(sw)
    sw.add_argument("--metrics", metavar="M,M,...", help="the metrics of the table (default: the first four)")
    sw.add_argument("--csv", metavar="FILE", help="also write the sweep as CSV (every metric: mean, half-width, theory)")
    sw.add_argument("--plot", metavar="FILE", help="also draw one metric against the swept value (needs matplotlib)")
    sw.add_argument("--plot-metric", metavar="M", help="the metric --plot draws (default: the table's first)")
    sw.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default: min(2, cores))")
    sw.add_argument("--cache", metavar="DIR", help="the results cache (default $SLOTNET_CACHE_DIR, else "
                    "~/.cache/slotnet/runs)")
    sw.add_argument("--no-cache", action="store_true", help="run everything afresh and keep nothing")


def _tls_options(group: Any) -> None:
    """``--broker-ca``, ``--broker-cert``, ``--broker-key``: the TLS files of an ``mqtts://`` broker."""
    group.add_argument("--broker-ca", metavar="FILE", help="CA certificate to trust for an mqtts:// broker "
                       "(default: the system's)")
    group.add_argument("--broker-cert", metavar="FILE", help="client certificate for an mqtts:// broker that asks "
                       "for one (with --broker-key)")
    group.add_argument("--broker-key", metavar="FILE", help="the client certificate's private key")


def add_theory(command: Command) -> None:
    """``slotnet theory``: its options."""
    t = command("theory", "the scheme's analytic model", description(
        "Evaluate the scheme's analytic model (the paper's formulas and bounds) for a topology and load, under "
        "the metric names `slotnet run` reports. No network is built, so the answer does not wait for memory a "
        "run would need: any size the model can compute is answered."), THEORY_EXAMPLES)
    add_common(t)
    t.add_argument("--slots", type=int, default=25, metavar="N", help="slots of a transient prediction (default 25)")


def add_trace(command: Command) -> None:
    """``slotnet trace``: its options."""
    tr = command("trace", "query a trace file", description(
        "Query a trace written by `slotnet run --trace`: filters combine (node, event kind, slot range, packet); "
        "print the events, follow one packet, or export them to Perfetto or a slot diagram."), TRACE_EXAMPLES)
    tr.add_argument("file", help="trace file written by `slotnet run --trace`")
    tr.add_argument("--node", type=int, action="append", default=[], metavar="N", help="only this node (repeatable)")
    tr.add_argument("--event", action="append", default=[], metavar="KIND", help="only these event kinds (repeatable)")
    tr.add_argument("--slots", metavar="A:B", help="only slots A <= slot < B")
    tr.add_argument("--packet", metavar="ID", help="follow one packet from birth to its last reception: the leading "
                    "fields of its messages, e.g. ORIGIN,SEQ for a broadcast, DEST,BIRTH,ORIGIN for deflection")
    tr.add_argument("--topology", "-t", metavar="SPEC", help="the run's topology, for a trace without a header (a trace "
                    "names its own, and a -t that disagrees is refused): pairs every hop of --perfetto and --diagram "
                    "exactly (without it hops are inferred from the messages)")
    tr.add_argument("--perfetto", metavar="OUT", help="write the Chrome/Perfetto trace-event JSON to OUT")
    tr.add_argument("--diagram", metavar="OUT", help="draw the slot diagram (nodes as columns, slots as rows, "
                    "messages as arrows; at most 16 nodes and 40 slots) as SVG to OUT")


def add_rng(parser: argparse.ArgumentParser) -> None:
    """``--rng``, the nodes' random generator (``RunSpec.rng``): for run, explore and check."""
    parser.add_argument("--rng", default=DEFAULT_RNG, metavar="philox|mt",
                        help="the nodes' random generator: philox, a compact Philox4x32-10 stream per node (default; "
                             "a few bytes a node), or mt, the Mersenne Twister (2.5 KiB a node; the default of "
                             "earlier versions: reruns their results; other numbers than philox's)")


def add_explore(command: Command) -> None:
    """``slotnet explore``: its options."""
    ex = command("explore", "run a scheme under every fault of a family and judge each run", explore_description(),
                 EXPLORE_EXAMPLES)
    add_common(ex)
    ex.add_argument("--slots", type=int, default=200, metavar="N", help="slots of every run, warm-up included (default 200)")
    ex.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    ex.add_argument("--seed", type=int, default=0, metavar="S", help="seed of every run and of the samples (default 0)")
    add_rng(ex)
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


def add_check(command: Command) -> None:
    """``slotnet check``: its options."""
    ck = command("check", "run every schedule of up to K faults and report each violation, shrunk", description(
        "Run the scheme under every schedule of 1 to K faults of the given kinds, each at a slot of the window, "
        "no two on one target; judge each run by the verdict `slotnet run` gives (invariants, the scheme's "
        "properties and choices, completion, avoidable losses, missed broadcasts); shrink each violation (the "
        "first ten) and print its replay command.",
        "Kinds (A < B in the window): crash (the node stays down), recover (crash at A, restart at B), link-down "
        "(the link stays down), link-up (down at A, up at B), stall (the node sleeps through one slot), partition "
        "(every cut of the nodes in two, for one slot; at most 10 nodes), loss, dup, delay, corrupt (every message "
        "sent in one slot lost, duplicated, held back one slot, corrupted). A scheme that declares its rule "
        "symmetric runs one schedule per class of schedules the topology's symmetries map onto each other. "
        "Exit status 0 when every run's verdict holds, 1 when one fails, 2 for bad input."), CHECK_EXAMPLES)
    add_common(ck)
    ck.add_argument("--kinds", required=True, metavar="K,K,...", help="the fault kinds: crash, recover, link-down, "
                    "link-up, stall, partition, loss, dup, delay, corrupt")
    ck.add_argument("--max-faults", type=int, default=1, metavar="K", help="the most faults in a schedule (default 1)")
    ck.add_argument("--window", metavar="A:B", help="the faults' slots, A to B included (default: every slot of the "
                    "fault-free run)")
    ck.add_argument("--slots", type=int, default=None, metavar="N", help="slots of every run (default: as slotnet run)")
    ck.add_argument("--warmup", type=int, default=0, metavar="W", help="leading slots excluded from metrics (default 0)")
    ck.add_argument("--seed", type=int, default=0, metavar="S", help="seed of every run (default 0)")
    add_rng(ck)
    ck.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes (default 1)")
    ck.add_argument("--no-shrink", action="store_true", help="report the violations unshrunk")
    ck.add_argument("--no-symmetry", action="store_true", help="run every schedule, even of a symmetric scheme")
    ck.add_argument("--max-backlog", type=float, default=None, metavar="Q", help="as for slotnet run")


def add_repro(command: Command) -> None:
    """``slotnet repro``: its options."""
    rp = command("repro", "rerun a paper's comparisons", repro_description(), REPRO_EXAMPLES)
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


def add_shard(command: Command) -> None:
    """``slotnet shard``: its options."""
    sh = command("shard", "run one shard of a sharded run", description(
        "Host one shard of a run whose coordinator is `slotnet run --shards K --no-spawn --broker URL --run-id ID`; "
        "start K of these, on any machines that reach the broker."), SHARD_EXAMPLES)
    sh.add_argument("--broker", required=True, metavar="URL",
                    help="mqtt://[user@]host:port, or mqtts:// for TLS (password in $SLOTNET_MQTT_PASSWORD)")
    _tls_options(sh)
    sh.add_argument("--run", required=True, metavar="ID", help="the run's id")
    sh.add_argument("--shard", required=True, metavar="I/K", help="this shard's index and the number of shards")


def add_schemes(command: Command) -> None:
    """``slotnet schemes``: its options."""
    sc = command("schemes", "list the schemes, or show one", description(
        "List every scheme with its parameters, or show one in full: its source, topologies, load flags and "
        "parameters, the theory beside its runs, the faults it runs under, and a command that runs it."),
        SCHEMES_EXAMPLES)
    sc.add_argument("name", nargs="?", metavar="NAME", help="show this scheme only, in full")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to render ``--help``)."""
    parser = Parser(prog="slotnet", description="Slotted, message-passing emulator of interconnection networks.",
                    epilog=TOP_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=VersionAction, nargs=0, help="show the version and which build of the hot path runs")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")

    def command(name: str, help: str, description: str, epilog: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, epilog=epilog,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    for add in (add_run, add_sweep, add_theory, add_trace, add_explore, add_check, add_repro, add_shard, add_schemes):
        add(command)
    return parser
