"""``slotnet repro PAPER``: rerun a paper's comparisons and print paper, simulation, theory.

The reproductions themselves belong to the scheme packages (their ``EXPERIMENTS``); this
module only runs them. Each experiment hands over lists of independent run requests
(one seed fixes each), which are spread over worker processes; results do not depend
on how many workers there are; a run finished before is taken from the results cache
(:mod:`.tools.results_cache`) when one is given. Progress (runs done of those submitted,
elapsed time, an estimate of what is left) goes to stderr on a terminal; an experiment that publishes
its rows batch by batch (``runner.publish(rows)``) has them printed as they complete.
Every row carries a verdict (:meth:`~slotnet.schemes.Row.verdict`): within the paper's
agreement, outside it for a documented reason (the row's note), or outside it.
"""

from __future__ import annotations

import inspect
import math
import os
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from slotnet.errors import SchemeError, SlotnetError, SpecError
from slotnet.schemes import EXPERIMENTS, Row, get_experiment, relative

from .._run import run
from ..engine._progress import RunsProgress
from ..engine._spec import RunSpec
from ._report import CI_LEGEND, WIDTH, format_value, table
from .results_cache import ResultsCache

__all__ = ["LEGEND", "PartialRepro", "format_rows", "papers", "repro"]


class PartialRepro(SlotnetError):
    """A reproduction failed after some of its rows were computed (e.g. its plot could not be saved).

    Attributes:
        rows: the rows computed before the failure (to be printed, never discarded).
    """

    def __init__(self, message: str, rows: list[Row]) -> None:
        super().__init__(message)
        self.rows = rows


def papers() -> list[str]:
    """Every paper ``slotnet repro`` knows (from the scheme packages)."""
    return sorted(EXPERIMENTS)


def _run_metrics(request: Mapping[str, Any]) -> dict[str, Any]:
    """One run's metrics, with ``_theory``, ``_series``, ``_ok`` and ``_wall_s`` (its wall seconds)."""
    t0 = time.perf_counter()
    r = run(RunSpec(**request))
    out = dict(r.metrics)
    out["_theory"] = r.theory or {}
    out["_series"] = r.series
    out["_ok"] = r.invariants["ok"]
    out["_wall_s"] = time.perf_counter() - t0
    return out


#: Called with each finished run: its request, its result, and whether it came from the cache.
OnRun = Callable[[Mapping[str, Any], Mapping[str, Any], bool], None]


class _Runner:
    """Runs an experiment's requests in ``jobs`` worker processes, reporting each finished run.

    ``work`` turns a request into what is returned and cached (default: the metrics a
    reproduction reads; replications and sweeps keep whole results). With a ``cache``, a
    request kept there is answered from it (and not counted in the progress), and every run
    finished here is kept.
    """

    def __init__(self, jobs: int, progress: RunsProgress | None = None,
                 on_rows: Callable[[list[Row]], None] | None = None, cache: ResultsCache | None = None,
                 on_run: OnRun | None = None, work: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None) -> None:
        self.jobs = jobs
        self.work = work  # what a worker returns for a request (a module-level function: it is pickled)
        self.progress = progress
        self.on_rows = on_rows
        self.cache = cache
        self.on_run = on_run
        self.published: list[Row] = []

    def publish(self, rows: list[Row]) -> None:
        """An experiment's finished rows, printed before the rest of it has run."""
        self.published += rows
        if self.on_rows is not None and rows:
            if self.progress is not None:
                self.progress.clear()
            self.on_rows(rows)

    def _done(self) -> None:
        if self.progress is not None:
            self.progress.done()

    def __call__(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in requests]
        for i, result in self.as_completed(requests):
            out[i] = result
        return out

    def as_completed(self, requests: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, metrics)`` of each request as its run finishes (requests start in the order given).

        Every request is checked now, before any run starts; the runs start when the
        iterator is first advanced.
        """
        for r in requests:
            RunSpec(**r).prepare()  # every bad request surfaces before any run
        kept = {i: res for i, r in enumerate(requests) if self.cache is not None and (res := self.cache.get(r)) is not None}
        if self.progress is not None:
            self.progress.add(len(requests) - len(kept))
        return self._completed(list(requests), kept)

    def _completed(self, requests: list[Mapping[str, Any]], kept: dict[int, dict[str, Any]]
                   ) -> Iterator[tuple[int, dict[str, Any]]]:
        for i, result in kept.items():
            if self.on_run is not None:
                self.on_run(requests[i], result, True)
            yield i, result
        todo = [i for i in range(len(requests)) if i not in kept]
        for i, result in self._run(requests, todo):
            if self.cache is not None:
                self.cache.put(requests[i], result)
            if self.on_run is not None:
                self.on_run(requests[i], result, False)
            yield i, result

    def _run(self, requests: list[Mapping[str, Any]], todo: list[int]) -> Iterator[tuple[int, dict[str, Any]]]:
        work = self.work or _run_metrics
        if self.jobs <= 1 or len(todo) <= 1:
            for i in todo:
                result = work(requests[i])
                self._done()
                yield i, result
            return
        with ProcessPoolExecutor(max_workers=min(self.jobs, len(todo))) as pool:
            futures: dict[Future[dict[str, Any]], int] = {pool.submit(work, requests[i]): i for i in todo}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=futures.__getitem__):
                    if f.exception() is not None:
                        pool.shutdown(wait=True, cancel_futures=True)
                        raise f.exception()  # type: ignore[misc]
                    self._done()
                    yield futures[f], f.result()


#: Options an experiment receives only if its ``run`` names them: older experiments take
#: ``**options`` and would otherwise ignore them silently.
_NAMED_ONLY = ("dims", "hours", "shards")


def _refuse_unnamed(paper: str, run_it: Callable[..., Any], options: Mapping[str, Any]) -> None:
    """Refuse an option of :data:`_NAMED_ONLY` that was given to an experiment not naming it.

    Raises:
        SchemeError: ``repro PAPER takes no --OPTION``.
    """
    try:
        params = inspect.signature(run_it).parameters
    except (TypeError, ValueError):  # pragma: no cover - a callable without a signature
        return
    given = [k for k in _NAMED_ONLY if options.get(k) not in (None, False) and k not in params]
    if given:
        raise SchemeError(f"repro {paper} takes no {', '.join('--' + k.replace('_', '-') for k in given)}")


def repro(paper: str, *, seed: int = 1, jobs: int | None = None, quick: bool = False,
          progress: RunsProgress | None = None, on_rows: Callable[[list[Row]], None] | None = None,
          cache: ResultsCache | None = None, on_run: OnRun | None = None, **options: Any) -> tuple[list[Row], float]:
    """Run one paper's comparisons; returns the rows and the wall time in seconds.

    Args:
        progress: shows runs done / submitted, elapsed time and an estimate (a terminal).
        on_rows: called with each batch of rows an experiment publishes as it completes
            (the returned list holds them too).
        cache: answers the runs it keeps and keeps every run finished here (None: none).
        on_run: called with each finished run (request, result, taken from the cache?).

    Raises:
        SpecError: for an unknown paper name or options the paper does not take.
        PartialRepro: the experiment failed after publishing rows (they are attached).
    """
    runner = _Runner(jobs or min(2, os.cpu_count() or 1), progress, on_rows, cache, on_run)
    t0 = time.perf_counter()
    try:
        experiment = get_experiment(paper)
        _refuse_unnamed(paper, experiment.run, options)
        rows = experiment.run(runner, seed=seed, quick=quick, **options)
    except SchemeError as exc:
        if runner.published:
            raise PartialRepro(str(exc), runner.published) from None
        raise SpecError(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()
    return rows, time.perf_counter() - t0


def format_rows(rows: list[Row], *, legend: bool = True) -> str:
    """One table per experiment: paper, simulation (± CI), theory, relative errors, verdict.

    A verdict that needs explaining (a known slip, a point not run) is numbered and its
    reason printed under the table.
    """
    out: list[str] = []
    experiments: list[str] = []
    for r in rows:
        if r.experiment not in experiments:
            experiments.append(r.experiment)
    for exp in experiments:
        sel = [r for r in rows if r.experiment == exp]
        header = ["case", "metric", "paper", "simulation", "theory", "sim vs paper", "sim vs theory", "theory vs paper",
                  "verdict"]
        body = []
        notes: list[str] = []
        for r in sel:
            sim = format_value(r.sim) + (f" ± {r.ci95:.4f}" if isinstance(r.ci95, float) and math.isfinite(r.ci95) else "")
            verdict = r.verdict()
            word, sep, why = verdict.partition(": ")
            if sep and word in (Row.KNOWN, Row.NOT_RUN):
                if why not in notes:
                    notes.append(why)
                verdict = f"{word} [{notes.index(why) + 1}]"
            body.append([r.case, r.metric, format_value(r.paper), sim if r.sim is not None else "-", format_value(r.theory),
                         _pct(relative(r.sim, r.paper)), _pct(relative(r.sim, r.theory)), _pct(relative(r.theory, r.paper)),
                         verdict])
        out.append(exp)
        out += table(body, header)
        out += [f"  [{i}] {text}" for i, text in enumerate(notes, 1)]
        out.append("")
    if legend and rows:
        out += LEGEND
    return "\n".join(out)


#: What ``±`` and the verdict column mean (printed once under a reproduction's tables).
LEGEND = [CI_LEGEND + ".", *textwrap.wrap(
    "verdict: within = inside the paper's agreement (|difference| <= √2·CI + the paper's own |paper − theory| "
    "+ half a printed digit); known [n] = outside it for the documented reason n, whose predicted value the run "
    "agrees with; OUTSIDE = outside it with no reason that accounts for the gap (a failure); "
    "- = nothing to judge by (no reference value, or a simulation without an interval).",
    WIDTH)]


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.2%}"
