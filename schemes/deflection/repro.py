"""``slotnet repro greenberg-hajek``: Tables I-III of Greenberg & Hajek beside the emulator,
and (``--dims``) the mean delay at v = 1 against the cube dimension d beside the §III model."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from .._base import SchemeError
from .._repro import Experiment, Row, Runner
from .._verdict import Explanation
from . import theory
from .paper import TABLE_I, TABLE_II, TABLE_II_III_COLUMNS, TABLE_III

__all__ = ["DELAY_VS_D", "EXPERIMENTS", "PAPER_DELAY_AGREEMENT", "TABLE_II_VS_VI", "PointPlan", "estimated_seconds",
           "greenberg_hajek", "makespan", "parse_dims", "run_seconds", "slot_plan", "table_ii_against_table_vi"]

#: The experiment name of the ``--dims`` rows (and of their plan, with ": plan").
DELAY_VS_D = "Delay vs d, v = 1 (§III model T(m̄, d, v))"

#: The paper's own agreement between simulated and modelled mean delay: the largest
#: |Table II − Table III| of the delay column (d = 6), 0.0724 slots.
_DELAY = TABLE_II_III_COLUMNS.index("mean_delay")
PAPER_DELAY_AGREEMENT = max(abs(TABLE_II[v][_DELAY] - TABLE_III[v][_DELAY]) for v in TABLE_II)

#: Offered load of the ``--dims`` column: v = 1 new packet per node and slot (Table VI's load).
OFFERED = 1.0

#: Emulator cost model of :func:`slot_plan`: seconds per packet-hop with two runs side by side, as
#: ``--jobs 2`` runs them. Measured at d = 10, v = 1 (1,091 slots) on this 2-core machine: 5.5 µs
#: alone, 8.0 µs each with two runs at once (they share the caches and the memory bus; pure
#: arithmetic does not slow down), up to 10.9 µs when the machine is busy besides, and 4.8 µs in
#: ``benchmarks/deflection_throughput.py`` (100 slots).
HOP_S = 8e-6
#: Seconds per slot whatever the traffic: the slot barrier, the reporter (~100 µs at d = 2).
SLOT_S = 1e-4
#: Seconds per node to build the network and tear it down (0.26 s for 1,024 nodes at d = 10).
NODE_S = 3e-4
#: The fewest measured slots a ``--hours`` budget may leave a point: one per batch of the
#: batch means behind the mean delay's CI.
MIN_MEASURED = 10


def _no_options(paper: str, options: dict[str, Any]) -> None:
    given = [k for k, v in options.items() if v not in (None, False)]
    if given:
        raise SchemeError(f"repro {paper} takes no {', '.join('--' + k.replace('_', '-') for k in given)}")


def greenberg_hajek(runner: Runner, *, seed: int, quick: bool, dims: str | int | Sequence[int] | None = None,
                    hours: float | None = None, shards: int = 1, **options: Any) -> list[Row]:
    """Table III (model) and Table II (1,100-slot runs, d = 6) for every offered load,
    Table I's transient run beside the update equations, and Table II's v = 1 delay
    beside a run of Table VI's length (2·10^4 slots; --quick: of Table II's). --dims A-B (or D, or
    A,B,...) instead runs one point per cube dimension at v = 1: the measured mean delay
    (± 95% CI) beside the §III model T(m̄, d, v) of (3.14) at the fixed point (3.17), with
    each point's warm-up + measured slots and its wall seconds (``wall_s``: simulation =
    measured, theory = the cost model's estimate); a plan with the estimates is printed
    first, then each point as it completes, largest cube first. ``--hours H`` cuts each
    point's measured window to what the cost model says fits in H hours (the warm-up is
    never cut); ``--shards K`` runs each point over K shard processes (the same results)."""
    _no_options("greenberg-hajek", options)
    if dims is not None:
        return delay_vs_d(runner, parse_dims(dims), seed=seed, quick=quick, hours=hours, shards=shards)
    if hours is not None or shards != 1:
        raise SchemeError("repro greenberg-hajek: --hours and --shards are for the --dims points")

    loads = sorted(TABLE_II)[::3] if quick else sorted(TABLE_II)
    specs: list[dict[str, Any]] = [dict(scheme="deflection", topology="hypercube:6", load={"offered": v}, slots=1100,
                                      warmup=100, seed=seed) for v in loads]
    specs.append(dict(scheme="deflection", topology="hypercube:6", params={"schedule": "6:1,0"}, slots=12, seed=seed))
    # Table II's v = 1 point (a run of its length), and in full runs one of Table VI's length
    extra = [] if SLIP_LOAD in loads else [dict(specs[0], load={"offered": SLIP_LOAD})]
    if not quick:
        extra.append(dict(specs[0], load={"offered": SLIP_LOAD}, slots=TABLE_VI_SLOTS[0], warmup=TABLE_VI_SLOTS[1]))
    results = runner(specs + extra)
    short = results[loads.index(SLIP_LOAD)] if SLIP_LOAD in loads else results[len(specs)]
    long = results[-1] if not quick else None
    results = results[:len(specs)]
    rows: list[Row] = []
    for v, res in zip(loads, results):
        model: dict[str, Any] = dict(theory.steady_state_metrics(6, v))
        for i, key in enumerate(TABLE_II_III_COLUMNS):
            rows.append(Row("Table II (sim)", f"v={v:g}", key, TABLE_II[v][i], res[key], res.get(f"{key}_ci95"), model[key]))
            rows.append(Row("Table III (model)", f"v={v:g}", key, TABLE_III[v][i], None, None, model[key]))
    transient = results[-1]
    pred = transient["_theory"]["series"]
    keys = ("link_utilization", "accept_fraction", "deflection_fraction", "mean_distance")
    for slot, vals in sorted(TABLE_I.items()):
        sim = transient["_series"][slot - 1]
        for i, key in enumerate(keys):
            rows.append(Row("Table I (transient)", f"slot {slot}", key, vals[1 + i], sim.get(key), None, pred[slot - 1].get(key)))
    rows.append(table_ii_against_table_vi(short, long))
    return rows


#: The experiment name of the row that sets Table II's v = 1 delay beside longer runs.
TABLE_II_VS_VI = "Table II against Table VI (d = 6, v = 1)"
#: The load of that row: Table VI's (v = 1), one of Table II's rows.
SLIP_LOAD = 1.0
#: (slots, warm-up) of a run of Table VI's length: 2·10^4 slots, the last 10^4 averaged (§III-D).
TABLE_VI_SLOTS = (20_000, 10_000)


def table_ii_against_table_vi(short: Mapping[str, Any], long: Mapping[str, Any] | None) -> Row:
    """Table II's mean delay at v = 1 (d = 6) beside a run of Table VI's length (``long``,
    full reproductions) or of Table II's own (``short``, ``--quick``), and the §III model.

    Table VI reruns the same point (d = 6, v = 1) for 2·10^4 slots beside the same model;
    its printed values are withheld from the copy used here, so the row shows what a run of its
    length measures here, not Table VI's number. The tolerance is the noise of Table II's
    own value -- the 95% half-width of our run of its length (1,100 slots) -- when the row's
    simulation is the long run, and nothing besides the row's √2·CI when it is the short run
    itself (two runs of one length). The note gives the evidence: the printed value, the
    model, the run, and Little's law (``util = accept·v·T/d``, exact for long-run averages)
    applied to Table II's own row and to the run.
    """
    util_p, accept_p, delay_p, _ = TABLE_II[SLIP_LOAD]
    d = 6
    model = float(theory.steady_state_metrics(d, SLIP_LOAD)["mean_delay"])  # type: ignore[arg-type]
    run = long if long is not None else short
    slots = f"{TABLE_VI_SLOTS[1]}+{TABLE_VI_SLOTS[0] - TABLE_VI_SLOTS[1]}" if long is not None else "100+1000"
    sim, ci = run.get("mean_delay"), run.get("mean_delay_ci95")
    tolerance = float(short.get("mean_delay_ci95") or 0.0) if long is not None else 0.0
    little_p = util_p * d / (accept_p * SLIP_LOAD)
    note = (f"Table II prints T = {delay_p:.4f} at v = 1 (1,100-slot runs, the last 1,000 averaged), {model - delay_p:.4f} "
            f"below the §III model's {model:.4f} (Table III); Table VI reruns d = 6, v = 1 for 2·10^4 slots (the last "
            "10^4 averaged) beside the same model, its values withheld from the copy used here")
    if sim is not None:
        note += f"; our run of {slots} slots measures {sim:.4f}"
        if isinstance(ci, float) and ci > 0:
            note += f" ± {ci:.4f}, {(sim - delay_p) / ci:+.1f} half-widths from Table II and {(sim - model) / ci:+.1f} from the model"
    note += (f". Independent check, Little's law (util = accept·v·T/d): Table II's own row implies T = util·d/(accept·v) "
             f"= {little_p:.4f}, {100 * (little_p - delay_p) / delay_p:+.2f}% off its printed delay")
    util, accept = run.get("link_utilization"), run.get("accept_fraction")
    if sim is not None and util is not None and accept:
        little = util * d / (accept * SLIP_LOAD)
        note += f"; our run's implies {little:.4f}, {100 * (little - sim) / sim:+.2f}% off its measured delay"
    row = Row(TABLE_II_VS_VI, f"{slots} slots", "mean_delay", delay_p, sim, ci, model, tolerance=tolerance)
    # the slip is Table II's: known only where the run sides with the model; a run off it is OUTSIDE
    row.note = Explanation(note + ".", corrected=model)
    return row


# --- --dims: the mean delay at v = 1 against d ------------------------------------------


def parse_dims(spec: str | int | Sequence[int]) -> list[int]:
    """The cube dimensions of ``--dims``: ``"2-16"``, ``"6"``, ``"2,4,8"`` (items may be ranges), or ints.

    Args:
        spec: the option as typed, one dimension, or a sequence of dimensions.

    Returns:
        The dimensions in the order given.

    Raises:
        SchemeError: one line naming the bad item: not an integer, below 1, a reversed
            range, a dimension named twice, or nothing at all.

    Example:
        >>> parse_dims("2-4,7")
        [2, 3, 4, 7]
    """
    out: list[int] = []
    if isinstance(spec, str):
        for item in spec.split(","):
            lo_text, dash, hi_text = item.strip().partition("-")
            lo = _dim(lo_text, item, spec)
            hi = _dim(hi_text, item, spec) if dash else lo
            if hi < lo:
                raise SchemeError(f"--dims range {item.strip()} is reversed (write {hi}-{lo}), in {spec!r}")
            out += range(lo, hi + 1)
    else:
        items: Iterable[Any] = [spec] if isinstance(spec, int) else spec
        for d in items:
            if isinstance(d, bool) or not isinstance(d, int):
                raise SchemeError(f"--dims wants integer cube dimensions, got {d!r} in {spec!r}")
            if d < 1:
                raise SchemeError(f"--dims: cube dimension {d} is below 1, in {spec!r}")
            out.append(d)
    if not out:
        raise SchemeError(f"--dims names no cube dimension: {spec!r}")
    twice = sorted({d for d in out if out.count(d) > 1})
    if twice:
        raise SchemeError(f"--dims names d = {', '.join(map(str, twice))} more than once, in {spec!r}")
    return out


def _dim(text: str, item: str, spec: str) -> int:
    text = text.strip()
    if not text.isdigit():  # also refuses a sign: "-1" splits into "" and "1"
        raise SchemeError(f"--dims wants D, A-B or a comma list of them (e.g. 2-16 or 2,4,8); {item.strip()!r} "
                          f"in {spec!r} is not that (dimensions are integers >= 1)")
    d = int(text)
    if d < 1:
        raise SchemeError(f"--dims: cube dimension {d} is below 1, in {spec!r}")
    return d


class PointPlan(NamedTuple):
    """How one ``--dims`` point is run, and what it is expected to cost.

    Attributes:
        d: cube dimension.
        warmup: slots run before measuring.
        measured: slots measured after the warm-up (the run has ``warmup + measured`` slots).
        model_delay: the §III model's mean delay T(m̄, d, 1), slots (= hops).
        hops_per_slot: the model's packet-hops per slot, ``N a v T`` (Little's law).
        est_seconds: the cost model's wall seconds for the point.
    """

    d: int
    warmup: int
    measured: int
    model_delay: float
    hops_per_slot: float
    est_seconds: float


def slot_plan(d: int, *, quick: bool = False, hours: float | None = None, shards: int = 1) -> PointPlan:
    """Warm-up and measured slots of the v = 1 point on the d-cube, and its estimated wall time.

    The budget arithmetic. Under one-pass deflection a packet moves one hop per slot
    until it arrives, so its delay is its number of hops; by Little's law the network
    carries ``H(d) = N·a·v·T`` packet-hops per slot (N = 2^d nodes, a the acceptance
    probability, T the mean delay, both from the §III fixed point (3.17)). A point of S
    slots costs about ``S·(SLOT_S + HOP_S·H(d)) + NODE_S·N`` seconds, with ``HOP_S`` =
    8 µs per packet-hop (two runs side by side), ``SLOT_S`` = 0.1 ms per slot and
    ``NODE_S`` = 0.3 ms per node to build and tear down: 4.8 s per slot at d = 16
    (65,536 nodes, H ≈ 604,000), about half that for each smaller d.

    * Warm-up ``W = max(50, ⌈6·T⌉)``: the network starts empty and its link utilisation
      settles within about 3 mean delays (d = 10: 20 slots), so six mean delays are
      twice that; 50 slots at least (W = 50 for d <= 14, 53 and 56 for d = 15, 16).
    * Measured window ``M = max(⌈10^6 / (N·a·v)⌉, 30·⌈T⌉)``: about 10^6 delivered packets
      (N·a·v are delivered per slot), and at least 30 mean delays, so that each of the 10
      batches behind the batch-means CI spans 3 mean delays (3 packet lifetimes; the
      network-wide load swings over about 4 mean delays, so the CI may be somewhat
      narrow there, but at d >= 13 it is a few thousandths of a slot, far inside the
      model gap). 10^6 packets cost about ``10^6·T·HOP_S`` ≈ 8·T seconds of hops at any
      d, so the first term rules for d <= 12 (d = 2: 316,275 slots, under a minute, a
      4-node slot being cheap); for d >= 13 the second does: there 30 mean delays
      already deliver 2·10^6 (d = 13) to 2·10^7 (d = 16) packets, and the window is as
      short as the batch means allow, because slots are what cost (d = 16: 56 + 300).

    Projection for d = 2..16 (:func:`makespan`, 2 jobs, largest first): d = 16 ≈ 1,740 s
    on one job; d = 2..15 ≈ 1,750 s on the other (d = 15 ≈ 750 s, d = 14 ≈ 350 s,
    d = 13 ≈ 150 s, the rest ≈ 500 s); the column ≈ 1,750 s = 29 minutes. Measured on
    2026-11-22 (2 jobs): 2,723 s = 45 minutes, all of it d = 16 (d = 15: 1,002 s, d = 14:
    353 s): past d = 13 the hop cost grows (about 1.2-fold per dimension, the caches), which
    this flat model leaves out, so it underestimates d >= 14. The hop cost
    varies with what else the machine runs: measured at d = 10 (1,041-1,091 slots),
    5.5 µs alone, 8.0 µs beside another d = 10 run, 10.9 µs beside d = 9 on a busy
    machine; at 11 µs the column takes ≈ 2,390 s = 40 minutes, still inside the issue's
    hour. Not measured here for d >= 12 (alone, 5.35 µs at d = 11: no growth with N
    yet). ``quick``: 2·10^4 delivered packets, 20 mean delays measured,
    ``W = max(20, ⌈3·T⌉)`` (a smoke test).

    Over K shards the hops and the nodes of a slot are shared by K processes, so the model
    divides their terms by K (a measured d = 13 run over 2 shards took 0.45 of one
    process's time; on a small cube the broker's exchange costs more than it saves). With a
    budget of ``hours`` the measured window is cut to the slots that fit after the warm-up,
    and a point that cannot measure :data:`MIN_MEASURED` slots in it is refused.

    Args:
        d: cube dimension (>= 1).
        quick: the smoke-test plan.
        hours: the most wall time a point may take, by the cost model (None: no limit).
        shards: shard processes per point.

    Returns:
        The PointPlan.

    Raises:
        SchemeError: ``hours`` is not a positive number, ``shards`` not a positive
            integer, or the point does not fit in ``hours``.
    """
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise SchemeError(f"--shards must be an integer >= 1, got {shards!r}")
    if hours is not None and not (isinstance(hours, (int, float)) and math.isfinite(hours) and hours > 0):
        raise SchemeError(f"--hours must be a positive number, got {hours!r}")
    model = theory.steady_state_metrics(d, OFFERED)
    delay = float(model["mean_delay"])  # type: ignore[arg-type]
    delivered_per_slot = float(model["throughput_per_node"]) * 2**d  # type: ignore[arg-type]
    target, delays_measured = (2 * 10**4, 20) if quick else (10**6, 30)
    warmup = max(20, math.ceil(3 * delay)) if quick else max(50, math.ceil(6 * delay))
    measured = max(math.ceil(target / delivered_per_slot), delays_measured * math.ceil(delay))
    hops = delivered_per_slot * delay
    per_slot = SLOT_S + HOP_S * hops / shards
    fixed = NODE_S * 2**d / shards
    if hours is not None:
        fits = math.floor((hours * 3600 - fixed) / per_slot) - warmup
        if fits < MIN_MEASURED:
            need = (warmup + MIN_MEASURED) * per_slot + fixed
            raise SchemeError(f"--hours {hours:g}: the d = {d} point needs about {need / 3600:.2f} h by the cost model "
                              f"({warmup} warm-up slots and the {MIN_MEASURED} measured slots its batch means need, "
                              f"{per_slot:.1f} s a slot over {shards} process{'es' if shards > 1 else ''})")
        measured = min(measured, fits)
    est = (warmup + measured) * per_slot + fixed
    return PointPlan(d, warmup, measured, delay, hops, est)


def run_seconds(d: int, v: float, slots: int) -> float:
    """The cost model of :func:`slot_plan` for one run of ``slots`` slots at load v on the d-cube."""
    model = theory.steady_state_metrics(d, v)
    hops = float(model["throughput_per_node"]) * 2**d * float(model["mean_delay"])  # type: ignore[arg-type]
    return slots * (SLOT_S + HOP_S * hops) + NODE_S * 2**d


def estimated_seconds(*, quick: bool, dims: str | None = None, jobs: int = 2, hours: float | None = None,
                      shards: int = 1) -> float:
    """Wall seconds the cost model expects for ``repro greenberg-hajek`` (``--dims``), ``jobs`` workers.

    Example:
        >>> round(estimated_seconds(quick=True, dims="2-4"), 1)
        1.4
    """
    if dims is not None:
        plans = [slot_plan(d, quick=quick, hours=hours, shards=shards) for d in parse_dims(dims)]
        return makespan(sorted((p.est_seconds for p in plans), reverse=True), jobs)
    loads = sorted(TABLE_II)[::3] if quick else sorted(TABLE_II)
    runs = [run_seconds(6, v, 1100) for v in loads] + [run_seconds(6, SLIP_LOAD, 1100 if quick else TABLE_VI_SLOTS[0])]
    return makespan(sorted(runs, reverse=True), jobs)


def makespan(seconds: Sequence[float], jobs: int) -> float:
    """Wall time of runs taking ``seconds`` each on ``jobs`` workers, started in the order given.

    Each run starts on the first worker to come free (what the repro runner's process pool
    does); run largest first, this is the LPT schedule.

    Example:
        >>> makespan([10.0, 6.0, 5.0, 1.0], 2)
        11.0
    """
    free = [0.0] * max(1, jobs)
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def _completed(runner: Runner, specs: list[dict[str, Any]]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(index, result)`` as each run finishes when the runner can say so, else all at the end."""
    each: Callable[[list[dict[str, Any]]], Iterator[tuple[int, Mapping[str, Any]]]] | None = getattr(
        runner, "as_completed", None)
    return each(specs) if each is not None else enumerate(runner(specs))


def delay_vs_d(runner: Runner, dims: Sequence[int], *, seed: int, quick: bool, hours: float | None = None,
               shards: int = 1) -> list[Row]:
    """One v = 1 point per dimension: mean delay beside T(m̄, d, 1), slots and wall seconds.

    Rows (experiment :data:`DELAY_VS_D`), per point ``case = "d=D, W+M slots"``:
    ``mean_delay`` (simulation ± CI, theory T(m̄, d, 1) of (3.14) at the fixed point
    (3.17)), ``delivered`` (packets delivered in the measured window) and ``wall_s`` (the
    run's wall seconds; theory: the :func:`slot_plan` estimate); last, ``wall_s`` of the
    whole column against the projected :func:`makespan`. The plan (every estimate, under
    ``DELAY_VS_D + ": plan"``) is published before any run starts, then each point as it
    completes. Points start largest first, so that parallel jobs balance.

    No paper value: Table VI, the paper's simulated delay against d at v = 1 (d <= 13),
    is withheld from the copy used here and not reconstructed. The verdict allows, besides the
    noise, :data:`PAPER_DELAY_AGREEMENT`, the largest gap the paper shows between its
    simulated and its modelled delay (Tables II and III, d = 6): our reading of "the
    paper's own agreement" at every d, as ``tests/papers/test_deflection_tables.py`` reads it.

    Model against simulation, seed 1, this plan (sim − model, relative): d = 2 −4.07%
    (1.7311 ± 0.0011 against 1.8046), d = 3 −1.51%, d = 4 −0.42%, d = 5 −0.07%, then
    +0.18%, +0.27%, +0.37%, +0.23%, +0.24%, +0.23% for d = 6..11 (d = 11: 6.8411 ±
    0.0160 against 6.8255), all within the verdict's allowance (d = 2 only just). The
    two converge as d grows rather than diverge; d = 12..16 not yet run here. Why the model
    overestimates the delay of small cubes: Approximation 3.2 takes a packet's preferred
    links to be uniform and independent of the links other packets took, but a packet
    that came in over dimension k after a correct move no longer prefers k (after a
    deflection, it prefers k), and the packets at a node came in over distinct links, so
    their preferences collide less than the model assumes. The effect is of order 1/d:
    at d = 2 a correctly arrived packet at distance 1 prefers exactly the other link.
    Measured at d = 2 (20,000 slots): deflections are 11.5% of transitions against the
    model's 13.1%, acceptance 0.810 against 0.791; from d = 4 the two agree within
    0.1-0.2 points. The small positive gap for d >= 6 (1-3 half-widths, 0.01-0.02
    slots) is steady through d = 11 and not explained here.
    """
    publish: Callable[[list[Row]], None] = getattr(runner, "publish", None) or (lambda rows: None)
    jobs = int(getattr(runner, "jobs", 1) or 1)
    plans = sorted((slot_plan(d, quick=quick, hours=hours, shards=shards) for d in dims),
                   key=lambda p: (-p.est_seconds, -p.d))
    sharded: dict[str, Any] = {"shards": shards} if shards > 1 else {}
    specs = [dict(scheme="deflection", topology=f"hypercube:{p.d}", load={"offered": OFFERED},
                  slots=p.warmup + p.measured, warmup=p.warmup, seed=seed, **sharded) for p in plans]
    cases = {p.d: f"d={p.d}, {p.warmup}+{p.measured} slots" for p in plans}
    total_case = f"all {len(plans)} points, {min(jobs, len(plans))} job{'s' if min(jobs, len(plans)) > 1 else ''}"
    projected = makespan([p.est_seconds for p in plans], jobs)

    t0 = time.perf_counter()
    results = _completed(runner, specs)  # checks every request before any run starts
    plan_rows = [Row(DELAY_VS_D + ": plan", cases[p.d], "wall_s", None, None, None, p.est_seconds)
                 for p in sorted(plans, key=lambda p: p.d)]
    plan_rows.append(Row(DELAY_VS_D + ": plan", total_case, "wall_s", None, None, None, projected))
    publish(plan_rows)
    done: dict[int, list[Row]] = {}
    for i, res in results:
        p = plans[i]
        if not res.get("_ok", True):
            raise SchemeError(f"the d = {p.d} run broke an invariant (conservation or link capacity)")
        batch = [
            Row(DELAY_VS_D, cases[p.d], "mean_delay", None, res["mean_delay"], res.get("mean_delay_ci95"), p.model_delay,
                tolerance=PAPER_DELAY_AGREEMENT),
            Row(DELAY_VS_D, cases[p.d], "delivered", None, res.get("delivered"), None, None),
            Row(DELAY_VS_D, cases[p.d], "wall_s", None, res.get("_wall_s"), None, p.est_seconds),
        ]
        done[p.d] = batch
        publish(batch)
    total = [Row(DELAY_VS_D, total_case, "wall_s", None, time.perf_counter() - t0, None, projected)]
    publish(total)
    return plan_rows + [r for d in sorted(done) for r in done[d]] + total


EXPERIMENTS = (Experiment("greenberg-hajek", "Table III (model) and Table II (1,100-slot runs, d = 6) for every "
                          "offered load, Table I's transient run beside the update equations, and Table II's v = 1 "
                          "delay beside a run of Table VI's length; --dims A-B: the "
                          "mean delay at v = 1 for each cube dimension beside the §III model, with each point's "
                          "slots and wall seconds.", greenberg_hajek,
                          # the report draws Table VI's column, the delay against d at v = 1 (d <= 13 as in the paper)
                          report_pass=({"dims": "2-7"}, {"dims": "2-13"}),
                          estimate=lambda quick, options: estimated_seconds(
                              quick=quick, dims=options.get("dims"), hours=options.get("hours"),
                              shards=options.get("shards") or 1),
                          citation="Greenberg & Hajek (1992), Deflection routing in hypercube networks",
                          claims=(
                              "An approximate analysis (§III: a fixed point for the steady state, update equations "
                              "for the transient) predicts how one-pass deflection routing performs on the d-cube "
                              "under uniform traffic, from light to heavy load.",
                              "Deflection routing performs remarkably well on hypercubes, small and large, over the "
                              "whole range of load: delay, link use and the fraction of packets accepted (Tables "
                              "II-III at d = 6 for every offered load v, Table VI against d at v = 1).",
                              "Simulations suggest that the approximations are quite accurate (Table II beside "
                              "Table III; Table I: a full 6-cube emptying out beside the update equations).",
                          )),)
