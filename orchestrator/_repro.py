"""``slotnet repro``: rerun a paper's comparisons and print paper, simulation, theory.

Each experiment is a list of independent runs (one seed fixes each), spread over worker
processes; results do not depend on how many workers there are.

* ``greenberg-hajek``: Table III (model) and Table II (1,100-slot runs, d = 6) for every
  offered load, and Table I's transient run beside the update equations.
* ``stamoulis``: Table 1 (d = 8, non-idling d-tree scheme, 5,000 measured slots), the
  periodic randomised scheme against eq. (7), the indirect scheme against Proposition 5
  (Rule D), Corollary 8 (Rule D') and Proposition 6 (Q), and a sweep of D against ρ for
  every scheme on one d (optionally plotted; matplotlib is the ``plot`` extra).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from ._driver import run
from ._report import format_value
from ._spec import RunSpec, SpecError

__all__ = ["PAPERS", "Row", "format_rows", "repro"]


@dataclass
class Row:
    """One compared quantity."""

    experiment: str
    case: str
    metric: str
    paper: float | None
    sim: float | None
    ci95: float | None
    theory: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "case": self.case, "metric": self.metric, "paper": self.paper,
            "simulation": self.sim, "ci95": self.ci95, "theory": self.theory,
            "sim_vs_paper": _rel(self.sim, self.paper), "sim_vs_theory": _rel(self.sim, self.theory),
            "theory_vs_paper": _rel(self.theory, self.paper),
        }


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or isinstance(a, bool):
        return None
    return (a - b) / abs(b)


def _run_metrics(spec: RunSpec) -> dict[str, Any]:
    r = run(spec)
    out = dict(r.metrics)
    out["_theory"] = r.theory or {}
    out["_series"] = r.series
    out["_ok"] = r.invariants["ok"]
    return out


def _map(specs: Sequence[RunSpec], jobs: int) -> list[dict[str, Any]]:
    if jobs <= 1 or len(specs) <= 1:
        return [_run_metrics(s) for s in specs]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_run_metrics, specs))


# -- Greenberg & Hajek ------------------------------------------------------------------------
def _greenberg_hajek(seed: int, jobs: int, quick: bool, **_: Any) -> list[Row]:
    from slotnet.schemes.deflection import theory
    from slotnet.schemes.deflection.paper import (
        TABLE_I,
        TABLE_II,
        TABLE_II_III_COLUMNS,
        TABLE_III,
    )

    loads = sorted(TABLE_II)[::3] if quick else sorted(TABLE_II)
    specs = [RunSpec("deflection", "hypercube:6", load={"offered": v}, slots=1100, warmup=100, seed=seed) for v in loads]
    specs.append(RunSpec("deflection", "hypercube:6", params={"schedule": "6:1,0"}, slots=12, seed=seed))
    results = _map(specs, jobs)
    rows: list[Row] = []
    for v, res in zip(loads, results):
        model = theory.steady_state_metrics(6, v)
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
    return rows


# -- Stamoulis & Tsitsiklis -------------------------------------------------------------------
SWEEP_SCHEMES: tuple[tuple[str, dict[str, str]], ...] = (
    ("bcast-simple", {}),
    ("bcast-periodic", {"variant": "random"}),
    ("bcast-dtree", {}),
    ("bcast-balanced", {}),
    ("bcast-indirect", {"rule": "D"}),
)


def _stamoulis(seed: int, jobs: int, quick: bool, sweep_d: int | None = None, sweep_rho: Sequence[float] | None = None,
               plot: str | None = None, sweep_only: bool = False, **_: Any) -> list[Row]:
    from slotnet.schemes.broadcast import theory
    from slotnet.schemes.broadcast.paper import TABLE_1

    table = [] if sweep_only else TABLE_1[::5] if quick else TABLE_1
    measured = 1000 if quick else 5000
    specs = [RunSpec("bcast-dtree", "hypercube:8", load={"rho": rho}, slots=measured + 500, warmup=500, seed=seed)
             for rho, *_ in table]
    from slotnet.schemes.broadcast import _indirect_model as slot_model

    # (scheme, params, d, rho, metric, [(experiment, theory function), ...]) -- one run each
    checks = [
        ("bcast-periodic", {"variant": "random"}, 5, 0.3, "mean_broadcast_delay_period_end",
         [("periodic random, eq. (7)", theory.periodic_random_delay)]),
        ("bcast-periodic", {"variant": "random"}, 5, 0.7, "mean_broadcast_delay_period_end",
         [("periodic random, eq. (7)", theory.periodic_random_delay)]),
        ("bcast-indirect", {"rule": "D"}, 6, 0.3, "mean_broadcast_delay",
         [("indirect Rule D, Prop. 5", theory.indirect_delay),
          ("indirect Rule D, Rules E-F slot by slot", lambda d, r: slot_model.slot_delay(d, r, "D"))]),
        ("bcast-indirect", {"rule": "Dprime"}, 6, 0.3, "mean_broadcast_delay",
         [("indirect Rule D', Cor. 8", theory.indirect_delay_rule_d_prime),
          ("indirect Rule D', Rules E-F slot by slot", lambda d, r: slot_model.slot_delay(d, r, "D'"))]),
        ("bcast-indirect", {"rule": "D"}, 6, 0.3, "mean_queue_per_node",
         [("indirect Q, Prop. 6", theory.indirect_queue),
          ("indirect Q, Rules E-F slot by slot", slot_model.slot_queue)]),
    ]
    if sweep_only:
        checks = []
    check_slots = 2000 if quick else 8000
    specs += [RunSpec(s, f"hypercube:{d}", params=p, load={"rho": rho}, slots=check_slots + 500, warmup=500, seed=seed)
              for s, p, d, rho, _, _ in checks]
    sweep: list[tuple[str, float]] = []
    if sweep_d:
        specs += _sweep_specs(sweep_d, sweep_rho, seed, sweep)
    results = _map(specs, jobs)
    rows: list[Row] = []
    for (rho, paper_sim, _approx, _err), res in zip(table, results):
        rows.append(Row("Table 1, d=8, D", f"rho={rho:g}", "mean_broadcast_delay", paper_sim, res["mean_broadcast_delay"],
                        res.get("mean_broadcast_delay_ci95"), theory.dtree_delay(8, rho)))
    for (_s, _p, d, rho, metric, models), res in zip(checks, results[len(table):]):
        for exp, fn in models:
            rows.append(Row(exp, f"d={d} rho={rho:g}", metric, None, res.get(metric), res.get(f"{metric}_ci95"), fn(d, rho)))
    points = results[len(table) + len(checks):]
    for (scheme, rho), res in zip(sweep, points):
        rows.append(Row(f"sweep d={sweep_d}", f"{scheme} rho={rho:g}", "mean_broadcast_delay", None,
                        res["mean_broadcast_delay"], res.get("mean_broadcast_delay_ci95"),
                        res["_theory"].get("mean_broadcast_delay")))
    if plot and sweep:
        _plot(plot, sweep_d or 0, sweep, points)
    return rows


def _sweep_specs(d: int, rhos: Sequence[float] | None, seed: int, points: list[tuple[str, float]]) -> list[RunSpec]:
    """One run per (scheme, ρ) below the scheme's stability limit; fills ``points``.

    Runs are 1,000 measured slots after 100 of warm-up (the length of the paper's
    figures, §4.3.3), except the periodic scheme: its broadcasts take 1.5 periods of
    2^d − 1 slots, so it gets five periods after two of warm-up, at ρ <= 0.5 only (at
    d = 10 each such run is ~7,000 slots; higher loads would dominate the sweep's time).
    """
    from slotnet.schemes.broadcast import theory

    limits = theory.stability_limits(d)
    limit_of = {"bcast-simple": limits["simple"], "bcast-indirect": limits["indirect"]}
    grid = list(rhos or (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9))
    period = (1 << d) - 1
    specs = []
    for scheme, params in SWEEP_SCHEMES:
        slots, warmup = 1100, 100
        loads = grid
        if scheme == "bcast-periodic":
            slots, warmup = 7 * period, 2 * period
            loads = [r for r in grid if r <= 0.5]
        if scheme == "bcast-simple":  # its limit (§4.1) is ~2/d: add points below it
            lim = limit_of[scheme]
            loads = sorted({round(lim * f, 3) for f in (0.25, 0.5, 0.75)} | {r for r in grid if r < lim})
        for rho in loads:
            if rho < limit_of.get(scheme, 1.0):
                points.append((scheme, rho))
                specs.append(RunSpec(scheme, f"hypercube:{d}", params=params, load={"rho": rho},
                                     slots=slots, warmup=warmup, seed=seed))
    return specs


def _plot(path: str, d: int, sweep: list[tuple[str, float]], points: list[dict[str, Any]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpecError("--plot needs matplotlib: pip install 'slotnet[plot]'") from None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for scheme, _ in SWEEP_SCHEMES:
        pairs = [(rho, p["mean_broadcast_delay"]) for (s, rho), p in zip(sweep, points)
                 if s == scheme and p["mean_broadcast_delay"] is not None]
        xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
        if xs:
            ax.plot(xs, ys, marker="o", label=scheme)
    ax.set_xlabel("load factor ρ = λ(2^d − 1)/d")
    ax.set_ylabel("mean broadcast delay D (slots)")
    ax.set_yscale("log")
    ax.set_title(f"Stamoulis & Tsitsiklis schemes on the {d}-cube (slotnet)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


PAPERS: dict[str, Callable[..., list[Row]]] = {"greenberg-hajek": _greenberg_hajek, "stamoulis": _stamoulis}


def repro(paper: str, *, seed: int = 1, jobs: int | None = None, quick: bool = False, **kw: Any) -> tuple[list[Row], float]:
    """Run one paper's comparisons; returns the rows and the wall time in seconds.

    Raises:
        SpecError: for an unknown paper name.
    """
    if paper not in PAPERS:
        raise SpecError(f"unknown paper {paper!r} (known: {', '.join(sorted(PAPERS))})")
    t0 = time.perf_counter()
    rows = PAPERS[paper](seed=seed, jobs=jobs or min(2, os.cpu_count() or 1), quick=quick, **kw)
    return rows, time.perf_counter() - t0


def format_rows(rows: list[Row]) -> str:
    """One table per experiment: paper, simulation (± CI), theory, relative errors."""
    out: list[str] = []
    experiments: list[str] = []
    for r in rows:
        if r.experiment not in experiments:
            experiments.append(r.experiment)
    for exp in experiments:
        sel = [r for r in rows if r.experiment == exp]
        header = ["case", "metric", "paper", "simulation", "theory", "sim vs paper", "sim vs theory", "theory vs paper"]
        body = []
        for r in sel:
            sim = format_value(r.sim) + (f" ± {r.ci95:.4f}" if isinstance(r.ci95, float) and math.isfinite(r.ci95) else "")
            body.append([r.case, r.metric, format_value(r.paper), sim if r.sim is not None else "-", format_value(r.theory),
                         _pct(_rel(r.sim, r.paper)), _pct(_rel(r.sim, r.theory)), _pct(_rel(r.theory, r.paper))])
        widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
        out.append(exp)
        out.append("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in body]
        out.append("")
    return "\n".join(out)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.2%}"
