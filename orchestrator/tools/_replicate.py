"""Replications and sweeps of any scheme: independent seeds, each metric's mean with a 95% interval.

``slotnet run ... --seeds 1-10`` runs one spec under each seed (independent replications: a
seed fixes every node's stream and every fault decision) and reports, for every scalar
metric, the mean over the seeds with its Student-t 95% half-width, the smallest and the
largest value. ``slotnet sweep ... --over rho=0.1:0.6:0.1`` does the same at each value of
one load or parameter. Runs go to worker processes (:class:`._repro._Runner`, as ``slotnet
repro``): results do not depend on how many, and a run finished before is taken from the
results cache. User schemes run too: a scheme registered in this process is known to the
workers it forks, and a package's scheme is found through its entry point.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slotnet.errors import SpecError
from slotnet.schemes.kit import t_half_width

from .._run import run
from ..engine._result import WALL_CLOCK_FIELDS
from ..engine._spec import RunSpec
from ._report import format_value, table

__all__ = ["Sweep", "format_replications", "format_sweep", "parse_over", "parse_seeds", "run_result", "summarise",
           "sweep_csv"]

#: A run's own batch-means half-width of a metric ends so: the tables leave it for the one over the seeds.
_RUN_CI = "_ci95"

#: The most seeds or sweep points one command takes (a typo such as 1-100000 is refused).
MAX_RUNS = 10_000


def parse_seeds(text: str) -> list[int]:
    """``1-10``, ``1,3,5`` or ``1-3,7``: the seeds, in the order given, each once.

    Raises:
        SpecError: a malformed list, a range running backwards, or more than :data:`MAX_RUNS` seeds.

    Example:
        >>> parse_seeds("1-3,7,2")
        [1, 2, 3, 7]
    """
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-") if not part.startswith("-") else (part, "", "")
        try:
            first, last = int(lo), int(hi) if sep else int(lo)
        except ValueError:
            raise SpecError(f"--seeds takes seeds and ranges such as 1-10 or 1,3,5, got {text!r}") from None
        if last < first:
            raise SpecError(f"--seeds range {part!r} runs backwards")
        if len(seeds) + last - first + 1 > MAX_RUNS:
            raise SpecError(f"--seeds asks for more than {MAX_RUNS} runs: {text!r}")
        seeds += [s for s in range(first, last + 1) if s not in seeds]
    if not seeds:
        raise SpecError("--seeds names no seed")
    return seeds


def parse_over(text: str) -> tuple[str, list[float]]:
    """``NAME=A:B:STEP`` (A, A+STEP, ... up to B included) or ``NAME=V1,V2,...``.

    Raises:
        SpecError: a malformed range, a step that is not positive, or too many points.

    Example:
        >>> parse_over("rho=0.1:0.5:0.1")
        ('rho', [0.1, 0.2, 0.3, 0.4, 0.5])
    """
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise SpecError(f"--over takes NAME=A:B:STEP or NAME=V1,V2,..., got {text!r}")
    try:
        numbers = [float(x) for x in values.split(":" if ":" in values else ",")]
    except ValueError:
        raise SpecError(f"--over takes NAME=A:B:STEP or NAME=V1,V2,... with numbers, got {text!r}") from None
    if ":" not in values:
        return name, numbers
    if len(numbers) != 3:
        raise SpecError(f"--over takes NAME=A:B:STEP or NAME=V1,V2,..., got {text!r}")
    a, b, step = numbers
    if not step > 0 or (b - a) / step < -1e-9:
        raise SpecError(f"--over {text!r}: the step must be positive and B >= A")
    count = int(math.floor((b - a) / step + 1e-9)) + 1
    if count > MAX_RUNS:
        raise SpecError(f"--over {text!r} has more than {MAX_RUNS} points")
    return name, [round(a + i * step, 12) for i in range(count)]


def run_result(request: Mapping[str, Any]) -> dict[str, Any]:
    """One run's whole result as JSON data, without its machine-dependent ``timing`` (a worker's job)."""
    result = run(RunSpec(**request)).to_dict(per_node=False, series=False)
    return {k: v for k, v in result.items() if k not in WALL_CLOCK_FIELDS}


def _scalar(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def summarise(results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each metric over the runs: a number's ``mean``, ``ci95`` (Student-t half-width, None below
    two values), ``min``, ``max`` and ``n`` (the runs that report it finite); a yes/no metric's
    ``true`` count of ``n``. Lists (histograms) are left to the per-seed results.

    Example:
        >>> summarise([{"metrics": {"d": 2.0, "stable": True}}, {"metrics": {"d": 4.0, "stable": False}}])["d"]
        {'mean': 3.0, 'ci95': 12.706, 'min': 2.0, 'max': 4.0, 'n': 2}
    """
    names: list[str] = []
    for r in results:
        names += [k for k in r.get("metrics", {}) if k not in names]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        values = [r["metrics"].get(name) for r in results if name in r.get("metrics", {})]
        if values and all(isinstance(v, bool) for v in values):
            out[name] = {"true": sum(values), "n": len(values)}
            continue
        numbers = [float(v) for v in values if _scalar(v) and math.isfinite(v)]
        if not numbers or not all(_scalar(v) or v is None for v in values):
            continue
        half = t_half_width(numbers)
        out[name] = {"mean": math.fsum(numbers) / len(numbers), "ci95": None if half is None else round(half, 12),
                     "min": min(numbers), "max": max(numbers), "n": len(numbers)}
    return out


def _mean_text(s: Mapping[str, Any]) -> str:
    if "true" in s:
        return f"yes in {s['true']} of {s['n']}"
    ci = s["ci95"]
    return format_value(s["mean"]) + (f" ± {format_value(ci)}" if ci is not None else "")


def format_replications(results: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> str:
    """The human report of replications: each metric's mean ± 95% half-width, range and the theory."""
    first = results[0]
    summary = summarise(results)
    theory = first.get("theory") or {}
    ok = sum(1 for r in results if r["invariants"]["ok"])
    load = " ".join(f"{k}={v:g}" for k, v in first["load"].items())
    lines = [f"scheme {first['scheme']} on {first['topology']['spec']} ({first['topology']['n_nodes']} nodes)",
             f"load {load or '-'}  {len(seeds)} replications, seeds {_seed_text(seeds)}",
             f"invariants ok in {ok} of {len(results)} runs"
             + ("" if ok == len(results) else " (failing seeds: "
                + ", ".join(str(s) for s, r in zip(seeds, results) if not r["invariants"]["ok"]) + ")"),
             ""]
    rows = [[name, _mean_text(s), "" if "true" in s else f"{format_value(s['min'])} .. {format_value(s['max'])}",
             format_value(theory.get(name)) if _scalar(theory.get(name)) else ""]
            for name, s in summary.items() if not name.endswith(_RUN_CI)]
    lines += table(rows, ["metric", "mean over seeds", "range", "theory"])
    lines.append("± is the Student-t 95% half-width over the seeds (independent replications); each run's own "
                 "batch-means half-widths are in --json")
    return "\n".join(lines)


def _seed_text(seeds: Sequence[int]) -> str:
    if list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ",".join(map(str, seeds))


@dataclass(frozen=True)
class Sweep:
    """A sweep's points: the swept name, its values, and each value's runs (one per seed)."""

    name: str
    values: list[float]
    seeds: list[int]
    runs: list[list[dict[str, Any]]]

    def summaries(self) -> list[dict[str, dict[str, Any]]]:
        """Each point's :func:`summarise`."""
        return [summarise(runs) for runs in self.runs]

    def metric_names(self) -> list[str]:
        """The numeric metrics reported at some point, in first-seen order."""
        names: list[str] = []
        for s in self.summaries():
            names += [k for k, v in s.items() if "mean" in v and k not in names and not k.endswith(_RUN_CI)]
        return names

    def to_dict(self) -> dict[str, Any]:
        """The sweep as JSON data: per point, the summary, the theory and every run."""
        return {"over": self.name, "values": self.values, "seeds": self.seeds,
                "points": [{"value": v, "metrics": s, "theory": runs[0].get("theory"), "runs": runs}
                           for v, s, runs in zip(self.values, self.summaries(), self.runs)]}


def format_sweep(sweep: Sweep, metrics: Sequence[str] | None = None) -> str:
    """A table: one row per value, each metric's mean ± half-width beside its theory."""
    names = list(metrics) if metrics else sweep.metric_names()[:4]
    header = [sweep.name]
    for name in names:
        header += [name, "theory"]
    rows = []
    for value, summary, runs in zip(sweep.values, sweep.summaries(), sweep.runs):
        theory = runs[0].get("theory") or {}
        row = [f"{value:g}"]
        for name in names:
            row += [_mean_text(summary[name]) if name in summary else "-",
                    format_value(theory.get(name)) if _scalar(theory.get(name)) else ""]
        rows.append(row)
    return "\n".join(table(rows, header) + [f"{len(sweep.seeds)} seed(s) per point; ± is the Student-t 95% half-width"])


def sweep_csv(sweep: Sweep) -> str:
    """The sweep as CSV: one row per value; per metric its mean, half-width and theory."""
    names = sweep.metric_names()
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([sweep.name, "runs"] + [f"{n}{suffix}" for n in names for suffix in ("", "_ci95", "_theory")])
    for value, summary, runs in zip(sweep.values, sweep.summaries(), sweep.runs):
        theory = runs[0].get("theory") or {}
        row: list[Any] = [repr(value), len(runs)]
        for n in names:
            s = summary.get(n, {})
            row += [s.get("mean", ""), "" if s.get("ci95") is None else s["ci95"],
                    theory[n] if _scalar(theory.get(n)) else ""]
        w.writerow(row)
    return out.getvalue()


def plot_sweep(sweep: Sweep, metric: str, path: str) -> None:
    """Draw ``metric`` against the swept value (means with 95% bars, the theory as a line) to ``path``.

    Raises:
        SpecError: matplotlib is missing (``pip install 'slotnet[plot]'``) or the metric is unknown.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SpecError("--plot needs matplotlib: pip install 'slotnet[plot]'") from None
    if metric not in sweep.metric_names():
        raise SpecError(f"--plot-metric {metric!r} is no numeric metric of this sweep "
                        f"(known: {', '.join(sweep.metric_names())})")
    points = [(v, s[metric]) for v, s in zip(sweep.values, sweep.summaries()) if metric in s]
    theory = [(v, runs[0]["theory"][metric]) for v, runs in zip(sweep.values, sweep.runs)
              if _scalar((runs[0].get("theory") or {}).get(metric))]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar([v for v, _ in points], [s["mean"] for _, s in points], yerr=[s["ci95"] or 0.0 for _, s in points],
                fmt="o", capsize=3, label="simulation (mean, 95% interval)")
    if theory:
        ax.plot([v for v, _ in theory], [t for _, t in theory], "-", label="theory")
    ax.set_xlabel(sweep.name)
    ax.set_ylabel(metric)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _runner(jobs: int | None, progress: Any, cache: Any) -> Any:
    import os

    from ._repro import _Runner

    if jobs is not None and jobs < 1:
        raise SpecError(f"--jobs must be >= 1, got {jobs}")
    return _Runner(jobs or min(2, os.cpu_count() or 1), progress, None, cache, None, work=run_result)


def replicate(request: Mapping[str, Any], seeds: Sequence[int], *, jobs: int | None = None, progress: Any = None,
              cache: Any = None) -> list[dict[str, Any]]:
    """Run ``request`` (RunSpec fields, its seed left out) once per seed; each run's whole result, in seed order.

    Raises:
        SpecError: a bad request, before any run starts.
    """
    runner = _runner(jobs, progress, cache)
    try:
        return list(runner([{**request, "seed": s} for s in seeds]))
    finally:
        if progress is not None:
            progress.close()


def sweep(request: Mapping[str, Any], name: str, values: Sequence[float], seeds: Sequence[int], *,
          jobs: int | None = None, progress: Any = None, cache: Any = None) -> Sweep:
    """Run ``request`` at each value of the load or parameter ``name``, once per seed.

    ``name`` is one of the scheme's loads (``rho``, ``offered``, ...) or one of its parameters.

    Raises:
        SpecError: ``name`` is neither, or a point's request is bad (before any run starts).
    """
    from slotnet.schemes import get_scheme

    scheme = get_scheme(request["scheme"])
    loads = {load.name for load in scheme.loads}
    params = {p.name for p in scheme.params}
    if name in loads:
        requests = [{**request, "load": {name: v}, "seed": s} for v in values for s in seeds]
    elif name in params:
        requests = [{**request, "params": {**request.get("params", {}), name: _param_text(v)}, "seed": s}
                    for v in values for s in seeds]
    else:
        raise SpecError(f"--over {name!r}: {scheme.name} has no load or parameter of that name "
                        f"(loads: {', '.join(sorted(loads)) or 'none'}; parameters: {', '.join(sorted(params)) or 'none'})")
    runner = _runner(jobs, progress, cache)
    try:
        results = list(runner(requests))
    finally:
        if progress is not None:
            progress.close()
    k = len(seeds)
    return Sweep(name, list(values), list(seeds), [results[i * k:(i + 1) * k] for i in range(len(values))])


def _param_text(v: float) -> str:
    """A swept value as a parameter's text: ``3`` for an integral value (integer parameters), else ``0.25``."""
    return str(int(v)) if float(v).is_integer() else repr(v)
