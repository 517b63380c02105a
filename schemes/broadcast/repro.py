"""``slotnet repro stamoulis``: the paper's Table 1, eq. (7), Props 5-6, Cor 8 and a sweep of D."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._base import SchemeError
from .._plot_ticks import plain_log_ticks
from .._repro import Experiment, Row, Runner
from .._verdict import Explanation
from . import _theory_indirect_slots as slot_model
from . import theory
from .paper import TABLE_1

__all__ = ["CHECKS", "EXPERIMENTS", "NOTES", "SWEEP_SCHEMES", "check_requests", "check_rows", "evidence", "stamoulis"]

#: Why a row is expected to sit outside the simulation's interval: the paper's analysis
#: and the slot-by-slot rules it states differ by a known amount (``_theory_indirect_slots``).
NOTES = {
    "Prop. 5": "Prop. 5 counts the l1/l2 crossing as a 3-slot service: Rules A-F give "
               "Prop. 5 - 3/2 - (3/2)2^-d (the Rules E-F slot-by-slot row)",
    "Cor. 8": "Cor. 8 counts the l1/l2 crossing as a 3-slot service: Rules A-F give "
              "Cor. 8 - 3/2 - (3/2)2^-d (the Rules E-F slot-by-slot row)",
    "Prop. 6": "Prop. 6 uses the per-3-slot arrival probability as a per-slot rate: Rules A-F give "
               "lam(3d + 2 + X) + lam(3/4)2^d (the Rules E-F slot-by-slot row)",
}



def evidence(key: str, d: int, rho: float, sim: float | None, ci: float | None) -> Explanation:
    """The note of a Prop. 5 / Cor. 8 / Prop. 6 row: the reason (:data:`NOTES`), then the
    numbers behind it at this (d, ρ) -- the paper's formula, what Rules A-F give slot by
    slot (:mod:`._theory_indirect_slots`, exact), and what the run measured. The rules'
    value is the corrected value: the row is ``known`` only when the run agrees with it.

    Example:
        >>> evidence("Prop. 5", 6, 0.3, None, None).split(" -- ")[1]
        "the paper's formula gives 32.2632; Rules A-F slot by slot give 30.7397 (1.5234 lower)"
    """
    if key == "Prop. 6":
        printed, rules = theory.indirect_queue(d, rho), slot_model.slot_queue(d, rho)
    else:
        rule = "D" if key == "Prop. 5" else "D'"
        printed = theory.indirect_delay(d, rho) if rule == "D" else theory.indirect_delay_rule_d_prime(d, rho)
        rules = slot_model.slot_delay(d, rho, rule)
    text = (f"{NOTES[key]} -- the paper's formula gives {printed:.4f}; Rules A-F slot by slot give {rules:.4f} "
            f"({printed - rules:.4f} lower)")
    if sim is not None:
        text += f"; the run measures {sim:.4f}"
        if isinstance(ci, float) and math.isfinite(ci) and ci > 0:
            text += (f" ± {ci:.4f}: {abs(sim - rules) / ci:.1f} half-widths from the rules' value, "
                     f"{abs(sim - printed) / ci:.1f} from the paper's")
    return Explanation(text, corrected=rules)


SWEEP_SCHEMES: tuple[tuple[str, dict[str, str]], ...] = (
    ("bcast-simple", {}),
    ("bcast-periodic", {"variant": "random"}),
    ("bcast-dtree", {}),
    ("bcast-balanced", {}),
    ("bcast-indirect", {"rule": "D"}),
)


#: Measured slots (after 500 of warm-up) of each Table 1 run: (--quick, full); the paper's are 5,000.
TABLE_SLOTS = (1000, 5000)
#: Measured slots (after 500 of warm-up) of each run beside eq. (7), Props 5-6 and Cor. 8: (--quick, full).
CHECK_SLOTS = (2000, 8000)


def stamoulis(runner: Runner, *, seed: int, quick: bool, sweep_d: int | None = None,
              sweep_rho: Sequence[float] | None = None, plot: str | None = None, sweep_only: bool = False,
              **options: Any) -> list[Row]:
    """Table 1 of the paper and its formulas beside runs (the text is :data:`DOC`)."""
    if sweep_d is not None and (isinstance(sweep_d, bool) or not isinstance(sweep_d, int) or not 2 <= sweep_d <= 14):
        raise SchemeError(f"--sweep-d must be a cube dimension between 2 and 14, got {sweep_d}")
    if (sweep_rho or plot or sweep_only) and sweep_d is None:
        raise SchemeError("--sweep-rho, --sweep-only and --plot need --sweep-d D")
    for rho in sweep_rho or ():
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0.0 < rho < 1.0:
            raise SchemeError(f"--sweep-rho values must be load factors strictly between 0 and 1, got {rho!r}")
    publish: Callable[[list[Row]], None] = getattr(runner, "publish", None) or (lambda rows: None)

    table = [] if sweep_only else TABLE_1[::5] if quick else TABLE_1
    measured = TABLE_SLOTS[0] if quick else TABLE_SLOTS[1]
    table_specs: list[dict[str, Any]] = [dict(scheme="bcast-dtree", topology="hypercube:8", load={"rho": rho},
                                              slots=measured + 500, warmup=500, seed=seed) for rho, *_ in table]

    checks = [] if sweep_only else CHECKS
    check_specs = check_requests(checks, seed=seed, quick=quick)
    sweep: list[tuple[str, float]] = []
    skipped: list[Row] = []
    sweep_specs = _sweep_specs(sweep_d, sweep_rho, seed, sweep, skipped) if sweep_d is not None else []

    rows: list[Row] = []
    batch: list[Row] = []
    for (rho, paper_sim, _approx, _err), res in zip(table, runner(table_specs) if table_specs else []):
        batch.append(Row("Table 1, d=8, D", f"rho={rho:g}", "mean_broadcast_delay", paper_sim, res["mean_broadcast_delay"],
                         res.get("mean_broadcast_delay_ci95"), theory.dtree_delay(8, rho)))
    rows += batch
    publish(batch)
    batch = check_rows(checks, runner(check_specs) if check_specs else [])
    rows += batch
    publish(batch)
    points = runner(sweep_specs) if sweep_specs else []
    # the indirect scheme's theory is Prop. 5, which Rules A-F undercut by a known amount
    batch = [Row(f"sweep d={sweep_d}", f"{scheme} rho={rho:g}", "mean_broadcast_delay", None,
                 res["mean_broadcast_delay"], res.get("mean_broadcast_delay_ci95"),
                 res["_theory"].get("mean_broadcast_delay"),
                 note=_sweep_note(scheme, sweep_d or 0, rho, res))
             for (scheme, rho), res in zip(sweep, points)]
    rows += batch + skipped
    publish(batch + skipped)
    if plot and sweep:
        _plot(plot, sweep_d or 0, sweep, points)
    return rows


#: (scheme, params, d, rho, metric, [(experiment, theory function), ...]): the checks beside
#: eq. (7), Prop. 5, Cor. 8 and Prop. 6 -- one run each.
Check = tuple[str, dict[str, str], int, float, str, list[tuple[str, Callable[[int, float], float]]]]
CHECKS: list[Check] = [
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


def check_requests(checks: Sequence[Check], *, seed: int, quick: bool) -> list[dict[str, Any]]:
    """The run of each check: :data:`CHECK_SLOTS` measured slots after 500 of warm-up."""
    slots = CHECK_SLOTS[0] if quick else CHECK_SLOTS[1]
    return [dict(scheme=s, topology=f"hypercube:{d}", params=p, load={"rho": rho}, slots=slots + 500, warmup=500,
                 seed=seed) for s, p, d, rho, _, _ in checks]


def check_rows(checks: Sequence[Check], results: Sequence[dict[str, Any]]) -> list[Row]:
    """A row per model of each check; a Prop. 5 / Cor. 8 / Prop. 6 row carries its
    :func:`evidence` (it sits outside the run's interval by the documented amount)."""
    rows = []
    for (_s, _p, d, rho, metric, models), res in zip(checks, results):
        for exp, fn in models:
            key = next((key for key in NOTES if exp.endswith(key)), None)
            sim, ci = res.get(metric), res.get(f"{metric}_ci95")
            note: str = evidence(key, d, rho, sim, ci) if key is not None else ""
            rows.append(Row(exp, f"d={d} rho={rho:g}", metric, None, sim, ci, fn(d, rho), note=note))
    return rows


def _sweep_specs(d: int, rhos: Sequence[float] | None, seed: int, points: list[tuple[str, float]],
                 skipped: list[Row]) -> list[dict[str, Any]]:
    """One run per (scheme, ρ) below the scheme's stability limit; fills ``points``.

    Runs are 1,000 measured slots after 100 of warm-up (the length of the paper's
    figures, §4.3.3), except the periodic scheme: its broadcasts take 1.5 periods of
    2^d − 1 slots, so it gets five periods after two of warm-up, at ρ <= 0.5 only (at
    d = 10 each such run is ~7,000 slots; higher loads would dominate the sweep's time).
    Of the paper's grid, points past a scheme's limit are left out; a load the user
    asked for (``rhos``) that a scheme cannot run becomes a ``not run`` row in
    ``skipped``, saying why, so no asked-for point disappears silently.
    """
    limits = theory.stability_limits(d)
    limit_of = {"bcast-simple": limits["simple"], "bcast-indirect": limits["indirect"]}
    grid = list(rhos or (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9))
    period = (1 << d) - 1
    specs = []
    for scheme, params in SWEEP_SCHEMES:
        slots, warmup = 1100, 100
        loads = grid
        lim = limit_of.get(scheme, 1.0)
        if scheme == "bcast-periodic":
            slots, warmup = 7 * period, 2 * period
            loads = [r for r in grid if r <= 0.5]
            skipped += [_not_run(d, scheme, rho, "the sweep runs the periodic scheme at rho <= 0.5 only "
                                 f"(each run is 7 periods of {period} slots)") for rho in rhos or () if rho > 0.5]
        if scheme == "bcast-simple":  # its limit (§4.1) is ~2/d: add points below it
            loads = sorted({round(lim * f, 3) for f in (0.25, 0.5, 0.75)} | {r for r in grid if r < lim})
        skipped += [_not_run(d, scheme, rho, f"past the scheme's stability limit rho < {lim:.4g}")
                    for rho in rhos or () if rho >= lim and math.isfinite(lim)]
        for rho in loads:
            if rho < lim:
                points.append((scheme, rho))
                specs.append(dict(scheme=scheme, topology=f"hypercube:{d}", params=params, load={"rho": rho},
                                  slots=slots, warmup=warmup, seed=seed))
    return specs


#: §4.3.3 on (25), the d-tree scheme's approximate model: "in excellent agreement ... for
#: ρ <= 0.3"; "the accuracy of the approximate formula (25) deteriorates gradually for ρ > 0.3"
DTREE_MODEL_RANGE = 0.3


def _sweep_note(scheme: str, d: int, rho: float, res: Mapping[str, Any]) -> str:
    """Why a sweep point may differ from its model: the indirect scheme's Prop. 5 over-count
    (with its numbers), or the d-tree model past the loads the paper vouches for."""
    sim, ci = res["mean_broadcast_delay"], res.get("mean_broadcast_delay_ci95")
    if scheme == "bcast-indirect":
        return evidence("Prop. 5", d, rho, sim, ci)
    if scheme == "bcast-dtree" and rho > DTREE_MODEL_RANGE:
        model = res["_theory"].get("mean_broadcast_delay")
        text = (f"§4.3.3: the approximate model (25) is in excellent agreement for rho <= {DTREE_MODEL_RANGE:g} and "
                f"'deteriorates gradually for rho > {DTREE_MODEL_RANGE:g}' (its assumptions of well-mixed arrivals)")
        if isinstance(model, float) and isinstance(sim, float) and model:
            text += f"; here (25) gives {model:.4f}, the run {sim:.4f} ({(sim - model) / model:+.1%})"
        if isinstance(model, float):
            # Table 1: past rho = 0.3 the paper's own runs sit above (25); the note explains a run above it only
            return Explanation(text + "; the paper's Table 1 runs sit above (25) there", low=model)
        return text
    return ""


def _not_run(d: int, scheme: str, rho: float, why: str) -> Row:
    return Row(f"sweep d={d}", f"{scheme} rho={rho:g}", "mean_broadcast_delay", None, None, None, None, note=why)


def _plot(path: str, d: int, sweep: list[tuple[str, float]], points: list[dict[str, Any]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SchemeError("--plot needs matplotlib: pip install 'slotnet[plot]'") from None
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
    plain_log_ticks(ax.yaxis)
    ax.set_title(f"Stamoulis & Tsitsiklis (1993): D against ρ on the {d}-cube (slotnet runs)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as exc:  # an unwritable path, an unknown extension
        raise SchemeError(f"--plot: cannot save {path!r}: {getattr(exc, 'strerror', None) or exc}") from None
    finally:
        plt.close(fig)


def _estimate(quick: bool, options: Mapping[str, Any]) -> float | None:
    """Wall seconds with two workers, measured on a 2-core machine with the compiled hot path
    (docs/explanation/performance.md): the default full reproduction 175 s; the sweep on the
    10-cube 1,715 s, so on the d-cube about 1,715 · 2^(d-10) (the runs' slots are fixed, the
    periodic scheme's grow with 2^d too). None where not measured (the default --quick)."""
    d = options.get("sweep_d")
    if d is not None and options.get("sweep_only"):
        return 1715.0 * 2.0 ** (int(d) - 10) * (len(options.get("sweep_rho") or ()) or 9) / 9
    if not options and not quick:
        return 175.0
    return None


#: What the reproduction compares, for a reader (``slotnet repro --help`` and the report); the run
#: lengths come from :data:`TABLE_SLOTS` and :data:`CHECK_SLOTS`, the ones the runs use.
DOC = (f"Table 1 (d = 8, the non-idling d-tree scheme, runs of {TABLE_SLOTS[1]:,} measured slots as in the paper; "
       f"{TABLE_SLOTS[0]:,} with --quick), the periodic randomised scheme beside eq. (7), the indirect scheme beside "
       f"Proposition 5 (Rule D), Corollary 8 (Rule D') and Proposition 6 (queue per node), each in one run of "
       f"{CHECK_SLOTS[1]:,} measured slots ({CHECK_SLOTS[0]:,} with --quick); with --sweep-d D, the mean broadcast "
       "delay against ρ for every scheme on the D-cube (--plot FILE draws it; needs matplotlib).")

CLAIMS = (
    "Packets to be broadcast arrive at every node of the d-cube at rate λ; no scheme can be stable unless the "
    "load factor ρ = λ(2^d − 1)/d is below 1, and the schemes the paper calls efficient stay stable up to a "
    "ρ* that does not depend on d, with a mean broadcast delay D of Θ(d) + O(d)ρ at small ρ.",
    "The non-idling d-tree scheme: the approximate formula (25) for D agrees closely with simulation for "
    "ρ ≤ 0.3 and deteriorates gradually above (Table 1, d = 8).",
    "The periodic randomised scheme's delay is given by eq. (7).",
    "The indirect scheme's delay is given by Proposition 5 (Rule D) and Corollary 8 (Rule D'), its mean queue "
    "per node by Proposition 6.",
)

EXPERIMENTS = (Experiment("stamoulis", DOC, stamoulis,
                          # the report draws the sweep of D against ρ for every scheme (the experiment's --plot)
                          report_pass=({"sweep_d": 4, "sweep_rho": [0.2, 0.4, 0.6, 0.8], "sweep_only": True},
                                       {"sweep_d": 8, "sweep_only": True}),
                          estimate=_estimate,
                          citation="Stamoulis & Tsitsiklis (1993), Efficient routing schemes for multiple "
                                   "broadcasts in hypercubes",
                          claims=CLAIMS),)
