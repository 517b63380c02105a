"""``slotnet repro greenberg-hajek``: Tables I-III of Greenberg & Hajek beside the emulator."""

from __future__ import annotations

from typing import Any

from .._base import Experiment, Row, Runner, SchemeError
from . import theory
from .paper import TABLE_I, TABLE_II, TABLE_II_III_COLUMNS, TABLE_III

__all__ = ["EXPERIMENTS", "greenberg_hajek"]


def _no_options(paper: str, options: dict[str, Any]) -> None:
    given = [k for k, v in options.items() if v not in (None, False)]
    if given:
        raise SchemeError(f"repro {paper} takes no {', '.join('--' + k.replace('_', '-') for k in given)}")


def greenberg_hajek(runner: Runner, *, seed: int, quick: bool, **options: Any) -> list[Row]:
    """Table III (model) and Table II (1,100-slot runs, d = 6) for every offered load, and
    Table I's transient run beside the update equations."""
    _no_options("greenberg-hajek", options)

    loads = sorted(TABLE_II)[::3] if quick else sorted(TABLE_II)
    specs: list[dict[str, Any]] = [dict(scheme="deflection", topology="hypercube:6", load={"offered": v}, slots=1100,
                                      warmup=100, seed=seed) for v in loads]
    specs.append(dict(scheme="deflection", topology="hypercube:6", params={"schedule": "6:1,0"}, slots=12, seed=seed))
    results = runner(specs)
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
    return rows


EXPERIMENTS = (Experiment("greenberg-hajek", "Table III (model) and Table II (1,100-slot runs, d = 6) for every "
                          "offered load, and Table I's transient run beside the update equations.", greenberg_hajek),)
