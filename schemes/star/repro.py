"""``slotnet repro yeh``: the shapes of Figs. 2-7, the balance of eq. (2)/(4), the order of §3.2.

The paper's figures are plots without printed values, so the ``paper`` column stays
empty: what is reproduced is their *order* -- priority STAR below FCFS, the gap
widening with ρ and with the dimension (Figs. 2-4 against each other, "the superiority
of priority STAR is more pronounced" in 3-D), and STAR stable up to ρ close to 1.
The rows (all runs seed ``seed``, first ``warmup`` slots discarded):

* ``Fig. 2-4, TxT`` / ``Fig. 5-7, TxT``: ``mean_reception_delay`` and
  ``mean_broadcast_delay`` (± 95% batch-means CI) of ``discipline=priority`` and
  ``fcfs`` against ρ on 8x8, 16x16 and 8x8x8. No theory column: the paper gives no
  delay formula (the plots draw the exact zero-load limits, mean distance + 1/2 and
  diameter + 1/2, as dotted lines).
* ``Figs. 2-7 gap``: FCFS over priority, both delays, per torus and ρ; ``stable`` at the
  highest ρ (1 = the instability monitor saw no growth).
* ``balance 4x8`` (§3.1, eq. (2)): ``link_imbalance`` (busiest directed link over the
  mean) and the mean utilisation of each dimension's links, with x of eq. (2) and with
  a fixed ending dimension, beside the expected loads; at ρ = 0.9 the fixed ending is
  past its stability limit (``max_stable_rho`` 0.65) and the balanced scheme is not.
* ``heterogeneous 4x8`` (§4, full runs only): half of ρ = 0.8 from unicasts, x from
  eq. (4): unicast and reception delays with two classes, three classes and FCFS.
* ``order, 4-ary d-cubes`` (§3.2): reception delay R, its exact zero-load value R_0,
  the queueing part R - R_0 and R / (nd + n/(1-ρ)) for d = 2..5 (``--sweep-d`` sets
  the largest d): under priority STAR the queueing part stays O(n/(1-ρ)) as d grows,
  under FCFS it grows with d (the O(dn/(1-ρ)) of the direct scheme).

* ``§4 unicast hops`` and ``§3.2 G/D/1 waits (V = ρ)``: where the paper slips, each row
  with its evidence in the note. §4 takes the mean distance of an n-node ring as
  ``floor(n/4)``: a unicast-only run on a 5x6 torus measures the hops shortest-path
  routing really takes, beside the exact mean and the paper's. §3.2 gives the G/D/1
  waits with ``V = O(ρ)`` only; with ``V = ρ`` (Poisson) they sit well above what the
  8x8 runs of Figs. 2 and 5 measure (judged to 10% of the model: an estimate).

``--sweep-rho`` replaces the ρ grid of the figures; ``--sweep-only`` runs only the d
sweep. ``--plot FILE.png`` saves one PNG per paper figure beside FILE,
``FILE_fig2.png`` ... ``FILE_fig7.png``, and the six side by side in FILE itself;
matplotlib is the ``plot`` extra.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from .._base import SchemeError
from .._repro import Experiment, Row, Runner
from .._verdict import Explanation
from .theory import gd1_wait, rates_from_rho, throughput_factor, unicast_hops

__all__ = ["EXPERIMENTS", "EXP_HOPS", "EXP_WAITS", "FIGURES", "hops_request", "hops_rows", "wait_rows", "yeh"]

#: (torus, reception-delay figure, broadcast-delay figure) as in the paper
FIGURES = (("8x8", 2, 5), ("16x16", 3, 6), ("8x8x8", 4, 7))
#: ρ grids of the figures (full runs); the 3-D torus skips 0.8 to stay in the time budget
_GRID = {"8x8": (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95), "16x16": (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95),
         "8x8x8": (0.1, 0.3, 0.5, 0.7, 0.9, 0.95)}
#: (slots, warm-up) per torus, full and quick
_LENGTH = {"8x8": (5500, 500), "16x16": (3500, 500), "8x8x8": (2000, 400)}
_QUICK = {"8x8": ((0.5, 0.9), (1200, 200)), "8x8x8": ((0.9,), (450, 150))}
DISCIPLINES = ("priority", "fcfs")

EXP_HOPS = "§4 unicast hops: floor(n/4) per ring"
EXP_WAITS = "§3.2 G/D/1 waits (V = ρ)"
#: The unicast-only run of the hops row: a torus with an odd side and an even side not divisible by 4.
HOPS_RUN = ("5x6", 0.1, 3300, 300)
#: The figure runs whose waits are set beside §3.2: torus and loads (those of the run's grid).
WAITS_OF = ("8x8", (0.5, 0.9))
#: The waits are an estimate (the paper gives V = O(ρ) only): judged to this share of the model.
WAIT_AGREEMENT = 0.10


def _spec(topology: str, rho: float, slots: int, warmup: int, seed: int, **params: Any) -> dict[str, Any]:
    return dict(scheme="star", topology=topology, params=params, load={"rho": rho}, slots=slots, warmup=warmup,
                seed=seed)


def yeh(runner: Runner, *, seed: int, quick: bool, sweep_d: int | None = None,
        sweep_rho: Sequence[float] | None = None, plot: str | None = None, sweep_only: bool = False,
        **options: Any) -> list[Row]:
    """Figs. 2-7 (reception and broadcast delay against ρ, priority STAR and FCFS, on 8x8,
    16x16 and 8x8x8: their order), the link balance of eq. (2) on an unequal torus against a
    fixed ending dimension, unicast beside broadcast (§4), the O(nd + n/(1-ρ)) reception
    delay of §3.2 on 4-ary d-cubes, and where the paper slips: §4's floor(n/4) ring distance
    and the §3.2 G/D/1 waits with V = ρ."""
    if sweep_d is not None and (isinstance(sweep_d, bool) or not 2 <= sweep_d <= 6):
        raise SchemeError(f"--sweep-d for yeh is the largest d of the 4-ary d-cube sweep, 2..6; got {sweep_d}")
    for rho in sweep_rho or ():
        if isinstance(rho, bool) or not 0.0 < rho < 1.0:
            raise SchemeError(f"--sweep-rho values must be load factors strictly between 0 and 1, got {rho!r}")
    if plot and sweep_only:
        raise SchemeError("--plot draws Figs. 2-7, which --sweep-only skips")
    publish: Callable[[list[Row]], None] = getattr(runner, "publish", None) or (lambda rows: None)
    rows: list[Row] = []
    figs: list[tuple[str, str, float]] = []  # (torus, discipline, rho)
    fig_res: list[dict[str, Any]] = []
    if not sweep_only:
        balance = _balance_cases(quick)
        b_len = (1500, 300) if quick else (5000, 500)
        hetero = [] if quick else [("priority", 2), ("priority", 3), ("fcfs", 2)]
        specs = [_spec("torus:4x8", rho, *b_len, seed, ending=e) for rho, e in balance]
        specs += [_spec("torus:4x8", 0.8, 5000, 500, seed, discipline=disc, classes=c, lam_unicast=_half_unicast())
                  for disc, c in hetero]
        res = _run_sorted(runner, specs)
        batch = _balance_rows(balance, res[:len(balance)]) + _hetero_rows(hetero, res[len(balance):])
        rows += batch
        publish(batch)

        specs = []
        for torus, _, _ in FIGURES:
            if quick and torus not in _QUICK:
                continue
            grid, (slots, warmup) = _QUICK[torus] if quick else (_GRID[torus], _LENGTH[torus])
            for rho in sorted(sweep_rho) if sweep_rho else grid:
                for disc in DISCIPLINES:
                    figs.append((torus, disc, rho))
                    specs.append(_spec(f"torus:{torus}", rho, slots, warmup, seed, discipline=disc))
        fig_res = _run_sorted(runner, specs + [hops_request(seed)])
        hops_res, fig_res = fig_res[-1], fig_res[:-1]
        batch = _figure_rows(figs, fig_res)
        batch += hops_rows(hops_res) + wait_rows(figs, fig_res)
        rows += batch
        publish(batch)

    top_d = sweep_d or (3 if quick else 5)
    order = [(d, rho, disc) for d in range(2, top_d + 1) for rho in ((0.9,) if quick else (0.5, 0.9))
             for disc in DISCIPLINES]
    specs = [_spec("torus:" + "x".join(["4"] * d), rho, *_order_length(d, quick), seed, discipline=disc)
             for d, rho, disc in order]
    batch = _order_rows(order, _run_sorted(runner, specs))
    rows += batch
    publish(batch)
    if plot:
        _plot(plot, figs, fig_res)
    return rows


def _run_sorted(runner: Runner, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run ``specs`` largest first (link-slots times ρ), so that two workers finish together;
    results come back in the order of ``specs``."""
    if not specs:
        return []

    def cost(spec: dict[str, Any]) -> float:
        sides = [int(n) for n in spec["topology"].partition(":")[2].split("x")]  # torus specs only
        load = spec["load"].get("rho", 0.1)  # the unicast-only run (rate, not rho): light, about 0.1
        return math.prod(sides) * 2 * len(sides) * spec["slots"] * load

    order = sorted(range(len(specs)), key=lambda i: -cost(specs[i]))
    done = runner([specs[i] for i in order])
    out: list[dict[str, Any]] = [{}] * len(specs)
    for i, res in zip(order, done):
        out[i] = res
    return out


def _balance_cases(quick: bool) -> list[tuple[float, int]]:
    """(ρ, ending) of the balance runs: 0 = x of eq. (2)."""
    if quick:
        return [(0.5, 0), (0.5, 2)]
    return [(0.5, 0), (0.5, 1), (0.5, 2), (0.9, 0), (0.9, 1)]


def _half_unicast() -> float:
    """λ_R giving half of ρ = 0.8 on the 4x8 torus (§4's mix, exact hops)."""
    return rates_from_rho((4, 8), 0.8, 0.5)[1]


def _order_length(d: int, quick: bool) -> tuple[int, int]:
    """(slots, warm-up) of a 4-ary d-cube run: shorter where the cube is large."""
    if quick:
        return 1000, 200
    return {2: (5000, 500), 3: (3000, 500), 4: (1500, 300), 5: (800, 200)}.get(d, (500, 150))


def _case(case: str, res: dict[str, Any]) -> str:
    """The row's case, flagged when the run broke one of its invariants."""
    return case if res.get("_ok", True) else f"{case} [invariants VIOLATED]"


def _figure_rows(figs: list[tuple[str, str, float]], res: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    fig_of = {t: (r, b) for t, r, b in FIGURES}
    by_key = {k: r for k, r in zip(figs, res)}
    for (torus, disc, rho), r in zip(figs, res):
        fr, fb = fig_of[torus]
        rows.append(Row(f"Fig. {fr}, {torus}", _case(f"{disc} rho={rho:g}", r), "mean_reception_delay", None,
                        r["mean_reception_delay"], None, None))
    for (torus, disc, rho), r in zip(figs, res):
        fr, fb = fig_of[torus]
        rows.append(Row(f"Fig. {fb}, {torus}", _case(f"{disc} rho={rho:g}", r), "mean_broadcast_delay", None,
                        r["mean_broadcast_delay"], r.get("mean_broadcast_delay_ci95"), None))
    for torus, _, _ in FIGURES:
        rhos = sorted({rho for t, _, rho in figs if t == torus})
        for rho in rhos:
            p, f = by_key.get((torus, "priority", rho)), by_key.get((torus, "fcfs", rho))
            if p is None or f is None:
                continue
            for metric in ("mean_reception_delay", "mean_broadcast_delay"):
                rows.append(Row("Figs. 2-7 gap (fcfs / priority)", f"{torus} rho={rho:g}", metric, None,
                                _ratio(f[metric], p[metric]), None, None))
        if rhos:
            for disc in DISCIPLINES:
                top = by_key.get((torus, disc, rhos[-1]))
                if top is not None:
                    rows.append(Row("Figs. 2-7 gap (fcfs / priority)", f"{torus} {disc} rho={rhos[-1]:g}", "stable",
                                    None, float(bool(top["stable"])), None, None))
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _balance_rows(cases: list[tuple[float, int]], res: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for (rho, ending), r in zip(cases, res):
        th = r["_theory"]
        case = f"rho={rho:g} " + (f"ending={ending}" if ending else "x of eq. (2)")
        rows.append(Row("balance 4x8 (eq. (2))", _case(case, r), "link_imbalance", None, r["link_imbalance"], None,
                        th["link_imbalance"]))
        for k, (sim, exp) in enumerate(zip(r["link_utilization_per_dim"], th["link_utilization_per_dim"])):
            rows.append(Row("balance 4x8 (eq. (2))", case, f"link_utilization dim {k + 1}", None, sim, None, exp))
        rows.append(Row("balance 4x8 (eq. (2))", case, "stable", None, float(bool(r["stable"])), None,
                        float(bool(th["stable"]))))
    return rows


def _hetero_rows(cases: list[tuple[str, int]], res: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for (disc, classes), r in zip(cases, res):
        th = r["_theory"]
        case = f"{disc}" + (f" classes={classes}" if disc == "priority" else "")
        rows.append(Row("heterogeneous 4x8, rho=0.8, half unicast (eq. (4))", _case(case, r), "link_imbalance", None,
                        r["link_imbalance"], None, th["link_imbalance"]))
        for metric in ("mean_unicast_delay", "mean_reception_delay", "mean_wait_unicast"):
            rows.append(Row("heterogeneous 4x8, rho=0.8, half unicast (eq. (4))", case, metric, None, r.get(metric),
                            r.get(f"{metric}_ci95"), th.get(metric) if metric.startswith("mean_wait") else None))
    return rows


def _order_rows(cases: list[tuple[int, float, str]], res: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for (d, rho, disc), r in zip(cases, res):
        th = r["_theory"]
        exp = f"order, 4-ary d-cubes, rho={rho:g} (§3.2)"
        case = f"d={d} {disc}"
        rec, zero = r["mean_reception_delay"], th["mean_reception_delay_zero_load"]
        rows.append(Row(exp, _case(case, r), "mean_reception_delay R", None, rec, None, None))
        rows.append(Row(exp, case, "R_0 (zero load, exact)", None, None, None, zero))
        rows.append(Row(exp, case, "queueing part R - R_0", None, None if rec is None else rec - zero, None, None))
        rows.append(Row(exp, case, "R / (nd + n/(1-rho))", None, _ratio(rec, th["reception_delay_order"]), None, None))
    return rows


def hops_request(seed: int) -> dict[str, Any]:
    """The unicast-only run of :func:`hops_rows` (:data:`HOPS_RUN`, exact hops)."""
    torus, lam_r, slots, warmup = HOPS_RUN
    return dict(scheme="star", topology=f"torus:{torus}", params={"lam_unicast": lam_r}, load={"lam": 0.0},
                slots=slots, warmup=warmup, seed=seed)


def _hop_counts(sides: Sequence[int]) -> tuple[float, float]:
    """Mean and variance of the shortest-path hop count from a node to a uniform other node."""
    per_ring = [[min(k, n - k) for k in range(n)] for n in sides]
    counts = [0]
    for ring in per_ring:
        counts = [c + h for c in counts for h in ring]
    others = counts[1:]  # the node itself is coordinate 0 in every ring, the first entry
    mean = sum(others) / len(others)
    return mean, sum((c - mean) ** 2 for c in others) / len(others)


def hops_rows(res: dict[str, Any]) -> list[Row]:
    """§4's ``h_i = floor(n_i/4)`` beside the exact mean hops and a run's measured hops.

    The paper's column is ``sum floor(n_i/4)``, the model's the exact mean hop count to a
    uniform other node (:func:`.theory.unicast_hops`), the simulation the run's mean hops
    per unicast with a 95% interval from the exact variance of the hop count (each
    unicast's destination is drawn independently). No tolerance besides that interval:
    a hop count is exact.
    """
    torus, lam_r, _, _ = HOPS_RUN
    sides = [int(n) for n in torus.split("x")]
    paper = [float(h) for h in unicast_hops(sides, "paper")]
    exact = [float(h) for h in unicast_hops(sides, "exact")]
    _mean, var = _hop_counts(sides)  # _mean is sum(exact), counted node by node
    sim, count = res.get("mean_unicast_hops"), res.get("unicasts_measured") or 0
    ci = 1.96 * math.sqrt(var / count) if count else None
    big_n = math.prod(sides)
    ring = ", ".join(f"n = {n}: {n / 4 if n % 2 == 0 else (n * n - 1) / (4 * n):g}" for n in sides)
    rho_paper = throughput_factor(sides, 0.0, lam_r, hops="paper")
    rho_exact = throughput_factor(sides, 0.0, lam_r, hops="exact")
    note = (f"§4 takes the mean distance of an n-node ring as floor(n/4) ({', '.join(f'{h:g}' for h in paper)} here), so "
            f"a unicast takes {sum(paper):g} hops; the exact mean ring distance to a uniform node is n/4 (even n) or "
            f"(n^2 - 1)/(4n) (odd n) -- {ring} -- times N/(N - 1) = {big_n}/{big_n - 1} for a destination among the other "
            f"nodes: {sum(exact):.4f}")
    if sim is not None:
        note += f"; shortest-path routing on the {torus} torus measures {sim:.4f}" + (
            f" ± {ci:.4f} over {count} unicasts" if ci is not None else "")
    note += f". With floor(n/4), §4's ρ for this traffic is {rho_paper:.4f}; the exact hops give {rho_exact:.4f}"
    if res.get("link_utilization") is not None:
        note += f", and the run's links are busy {res['link_utilization']:.4f} of the slots"
    # the slip is known only where the run sides with the exact mean; a run off it is OUTSIDE
    return [Row(EXP_HOPS, _case(f"torus:{torus} unicast only, lam_unicast={lam_r:g}", res), "mean unicast hops",
                sum(paper), sim, ci, sum(exact), note=Explanation(note + ".", corrected=sum(exact)), tolerance=0.0)]


def wait_rows(figs: list[tuple[str, str, float]], res: list[dict[str, Any]]) -> list[Row]:
    """The §3.2 waits with ``V = ρ`` beside the waits the figure runs of :data:`WAITS_OF` measured.

    Priority STAR: the high class (its own G/D/1 queue) and the low class (by the
    conservation law); FCFS: all packets (one G/D/1 queue). No paper value (the paper
    gives ``V = O(ρ)``, no number); the tolerance is :data:`WAIT_AGREEMENT` of the model.
    The note adds an independent estimate: the port's arrivals as ``k = 2d`` equal
    Bernoulli streams (its ``2d - 1`` in-links that can feed it and its own node), whose
    variance is ``ρ(1 - ρ/k)``.
    """
    torus, loads = WAITS_OF
    d = len(torus.split("x"))
    k = 2 * d
    rows = []
    for (t, disc, rho), r in zip(figs, res):
        if t != torus or rho not in loads:
            continue
        th = r.get("_theory") or {}
        metrics = (("mean_wait_high", "high-priority", "rho_high"), ("mean_wait_low", "low-priority", None)) \
            if disc == "priority" else (("mean_wait", "overall", "throughput_factor"),)
        for metric, who, load_key in metrics:
            sim, model = r.get(metric), th.get(metric)
            if model is None:
                continue
            note = (f"§3.2 gives W = V/(2ρ(1 - ρ)) - 1/2 with V = O(ρ) only, no value; with V = ρ (Poisson arrivals) the "
                    f"{who} wait under {disc} is {model:.4f}")
            if sim is not None:
                note += (f"; the run measures {sim:.4f} ({100 * (sim - model) / model:+.0f}%): a port's packets come over at "
                         "most one per in-link and slot, so they vary less than Poisson")
            if load_key is not None and th.get(load_key):
                lo = float(th[load_key])
                note += f". Independent estimate, {k} equal Bernoulli streams (V = ρ(1 - ρ/{k})): {gd1_wait(lo, lo * (1 - lo / k)):.4f}"
            # the slip is that the waits vary less than V = ρ implies: it explains a wait below the model only
            rows.append(Row(EXP_WAITS, _case(f"{disc} rho={rho:g}", r), f"{metric} ({who})", None, sim, None, model,
                            note=Explanation(note + ".", high=model), tolerance=WAIT_AGREEMENT * model))
    return rows


def _plot(path: str, figs: list[tuple[str, str, float]], res: list[dict[str, Any]]) -> None:
    """One PNG per paper figure (2-7) and all six in ``path``: delay against ρ, priority and FCFS."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SchemeError("--plot needs matplotlib: pip install 'slotnet[plot]'") from None
    stem = os.path.splitext(path)[0]
    panels = [(torus, fig_no, metric, label) for torus, f_rec, f_bc in FIGURES
              for fig_no, metric, label in ((f_rec, "mean_reception_delay", "average reception delay"),
                                            (f_bc, "mean_broadcast_delay", "average broadcast delay"))]
    panels.sort(key=lambda p: p[1])
    overview, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    try:
        for (torus, fig_no, metric, label), big in zip(panels, axes.flat):
            pts = [(disc, rho, r) for (t, disc, rho), r in zip(figs, res) if t == torus]
            _draw(big, pts, torus, fig_no, metric, label)
            if not pts:
                continue
            fig, ax = plt.subplots(figsize=(6.4, 4.4))
            try:
                _draw(ax, pts, torus, fig_no, metric, label)
                _save(fig, f"{stem}_fig{fig_no}.png", path)
            finally:
                plt.close(fig)
        overview.tight_layout()
        _save(overview, path, path)
    finally:
        plt.close(overview)


def _draw(ax: Any, pts: list[tuple[str, float, dict[str, Any]]], torus: str, fig_no: int, metric: str,
          label: str) -> None:
    """One figure's curves: priority STAR, FCFS, and the exact zero-load limit."""
    for disc, name in (("priority", "priority STAR"), ("fcfs", "FCFS (direct scheme of [12])")):
        xy = [(rho, r[metric]) for dd, rho, r in pts if dd == disc and r[metric] is not None]
        if xy:
            ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", label=name)
    if pts:
        zero = pts[0][2]["_theory"].get(f"{metric}_zero_load")
        if zero is not None:
            ax.axhline(zero, color="grey", linestyle=":", label="zero-load limit (exact)")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("throughput factor ρ")
    ax.set_ylabel(f"{label} (slots)")
    ax.set_title(f"Yeh, Varvarigos & Eshoul, Fig. {fig_no}: {label}, {torus} torus (slotnet runs)" if pts
                 else f"Yeh, Varvarigos & Eshoul, Fig. {fig_no}: not run")
    ax.grid(True, alpha=0.3)
    if pts:
        ax.legend()


def _save(fig: Any, name: str, path: str) -> None:
    try:
        fig.tight_layout()
        fig.savefig(name, dpi=110)
    except OSError as exc:
        raise SchemeError(f"--plot {path!r}: cannot write {name}: {exc.strerror or exc}") from None


EXPERIMENTS = (Experiment("yeh", (yeh.__doc__ or "").strip(), yeh,
                          # the full reproduction measured 446 s with 2 workers (compiled hot path); quick not measured
                          estimate=lambda quick, options: None if options or quick else 446.0,
                          citation="Yeh, Varvarigos & Eshoul, A priority-based balanced routing scheme for random "
                                   "broadcasting and routing in tori",
                          claims=(
                              "Priority STAR, a priority-based balanced routing scheme, reaches the optimal "
                              "throughput and the optimal order of mean delay at once for random broadcasting on "
                              "tori: the mean reception delay is O(nd + n/(1 − ρ)) on n-ary d-cubes (§3.2).",
                              "It balances the load over the dimensions' links (eq. (2)), also for mixed broadcast "
                              "and unicast traffic (eq. (4), §4).",
                              "In simulation it considerably outperforms the best previous routing schemes: "
                              "priority STAR against FCFS, reception and broadcast delay against ρ (Figs. 2-7).",
                          )),)
