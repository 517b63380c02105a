"""Invariants checked on every run, gathered into the result's ``invariants`` object.

* ``link_capacity``: no directed link carried more than one unit in a slot. The fabric
  refuses an oversend on the spot (a run with a violation ends with CapacityError), so
  a finished run has held it in every slot.
* the scheme's own invariants (conservation for unicast, exactly-once reception for
  broadcasts), each a dict with ``ok``.
* ``theory_agreement`` (:func:`theory_agreement`), where the scheme declares what its
  theory values are (``Scheme.claims``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["AGREEMENT_WIDTHS", "check_invariants", "theory_agreement"]

#: How many of the run's 95% half-widths an exact model or a bound may miss by before
#: ``theory_agreement`` fails (4 half-widths: about 8 standard errors; correct runs over
#: many seeds never come near, a skewed rule is caught by tens of them).
AGREEMENT_WIDTHS = 4.0


def check_invariants(scheme_invariants: dict[str, Any]) -> dict[str, Any]:
    """Combine the fabric's and the scheme's invariants; ``ok`` is their conjunction."""
    out: dict[str, Any] = {"link_capacity": {"ok": True, "enforced": "every send"}}
    out.update(scheme_invariants)
    out["ok"] = all(v.get("ok", False) for k, v in out.items() if isinstance(v, dict))
    return out


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


#: A steady-state claim is judged from a warm-up of this many horizons on ...
STEADY_WARMUP = 2.0
#: ... and a measured window of this many
STEADY_WINDOW = 50.0


def theory_agreement(claims: Sequence[Any], theory: Mapping[str, Any] | None, metrics: Mapping[str, Any],
                     judged: bool, warmup: int = 0, window: int = 0) -> dict[str, Any]:
    """``theory_agreement``: the run against each theory value its scheme declares (``Scheme.claims``).

    A row per claim whose theory value and metric the run has: the gap, the metric's
    95% half-width (``<metric>_ci95``; 0 for a metric without one, e.g. a one-shot
    completion time) and the verdict. An ``exact`` value fails when the gap exceeds
    :data:`AGREEMENT_WIDTHS` half-widths (plus the claim's stated error); a bound when
    the metric lies beyond it by more than that; an ``approximation`` is never failed on
    (``within_error`` says whether its gap lies inside the known error). A statistical
    metric without a half-width (too few batches) is not judged. ``judged``: False under
    faults, on an unstable run (the theory is the fault-free steady state) or on a
    one-shot task cut short (its metrics are partial); the rows are then reported only.
    A claim with a ``horizon`` is judged only when the run's ``warmup`` is at least
    :data:`STEADY_WARMUP` horizons and its measured ``window`` at least
    :data:`STEADY_WINDOW` (a short run's mean is biased: it starts empty and leaves its
    slowest packets unfinished). Theory values no claim names are listed as ``undeclared``.
    """
    theory = theory or {}
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    named = set()
    for c in claims:
        named.add(c.key)
        th, sim = _number(theory.get(c.key)), _number(metrics.get(c.metric))
        if th is None or sim is None:
            continue
        ci_key = f"{c.metric}_ci95"
        ci = _number(metrics.get(ci_key)) if ci_key in metrics else 0.0
        row: dict[str, Any] = {"theory": c.key, "metric": c.metric, "kind": c.kind, "value": th, "simulation": sim,
                               "gap": sim - th, "ci95": ci, "error": c.error}
        if c.why:
            row["why"] = c.why
        slack = None if ci is None else AGREEMENT_WIDTHS * ci + c.error + 1e-9 * max(1.0, abs(th))
        steady = not c.horizon or (warmup >= STEADY_WARMUP * c.horizon and window >= STEADY_WINDOW * c.horizon)
        if c.horizon:
            row["horizon"] = c.horizon
        if c.kind == "approximation":
            row["within_error"] = abs(sim - th) <= c.error + (ci or 0.0)
        elif slack is None or not judged or not steady:
            row["judged"] = False
        else:
            bad = (abs(sim - th) > slack if c.kind == "exact" else
                   sim > th + slack if c.kind == "upper-bound" else sim < th - slack)
            row["ok"] = not bad
            if bad:
                what = {"exact": "differs from the exact model", "upper-bound": "exceeds the upper bound",
                        "lower-bound": "falls below the lower bound"}[c.kind]
                failed.append(f"{c.metric} = {sim:.6g} {what} {c.key} = {th:.6g} by {abs(sim - th):.3g}, more than "
                              f"{AGREEMENT_WIDTHS:g} x its 95% half-width {ci:.3g}" + (f" + {c.error:g}" if c.error else ""))
        rows.append(row)
    out: dict[str, Any] = {"ok": not failed, "rows": rows}
    undeclared = sorted(k for k, v in theory.items() if k not in named and _number(v) is not None)
    if undeclared:
        out["undeclared"] = undeclared
    if failed:
        out["problem"] = failed[0]
        out["violations"] = len(failed)
    return out
