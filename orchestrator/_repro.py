"""``slotnet repro PAPER``: rerun a paper's comparisons and print paper, simulation, theory.

The reproductions themselves belong to the scheme packages (their ``EXPERIMENTS``); this
module only runs them. Each experiment hands over a list of independent run requests
(one seed fixes each), which are spread over worker processes; results do not depend
on how many workers there are.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from slotnet.errors import SchemeError, SpecError
from slotnet.schemes import EXPERIMENTS, Row, get_experiment, relative

from ._driver import run
from ._report import format_value, table
from ._spec import RunSpec

__all__ = ["format_rows", "papers", "repro"]


def papers() -> list[str]:
    """Every paper ``slotnet repro`` knows (from the scheme packages)."""
    return sorted(EXPERIMENTS)


def _run_metrics(request: Mapping[str, Any]) -> dict[str, Any]:
    r = run(RunSpec(**request))
    out = dict(r.metrics)
    out["_theory"] = r.theory or {}
    out["_series"] = r.series
    out["_ok"] = r.invariants["ok"]
    return out


class _Runner:
    """Runs an experiment's requests in ``jobs`` worker processes."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def __call__(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        for r in requests:
            RunSpec(**r).prepare()  # every bad request surfaces before any run
        if self.jobs <= 1 or len(requests) <= 1:
            return [_run_metrics(r) for r in requests]
        with ProcessPoolExecutor(max_workers=self.jobs) as pool:
            return list(pool.map(_run_metrics, requests))


def repro(paper: str, *, seed: int = 1, jobs: int | None = None, quick: bool = False, **options: Any) -> tuple[list[Row], float]:
    """Run one paper's comparisons; returns the rows and the wall time in seconds.

    Raises:
        SpecError: for an unknown paper name or options the paper does not take.
    """
    try:
        experiment = get_experiment(paper)
        t0 = time.perf_counter()
        rows = experiment.run(_Runner(jobs or min(2, os.cpu_count() or 1)), seed=seed, quick=quick, **options)
    except SchemeError as exc:
        raise SpecError(str(exc)) from None
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
                         _pct(relative(r.sim, r.paper)), _pct(relative(r.sim, r.theory)), _pct(relative(r.theory, r.paper))])
        out.append(exp)
        out += table(body, header)
        out.append("")
    return "\n".join(out)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.2%}"
