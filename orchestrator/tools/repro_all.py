"""``slotnet repro all`` and ``slotnet repro ... --html FILE``: several papers in one go, one report.

Each paper is reproduced as by ``slotnet repro PAPER`` (its tables printed as they
complete, or one JSON object for all with ``--json``); a paper that fails is reported
and the others still run. With ``--html FILE`` the rows, the experiments' own figures
and the metadata of the run go to one self-contained page (:mod:`.report_html`). The
results cache (:mod:`.results_cache`) makes an interrupted reproduction resume and a
second one of the same code nearly instant; ``--no-cache`` runs everything afresh and
keeps nothing.

Progress (on a terminal) names the paper, its runs done of those submitted and an
estimate of what is left: for the paper at hand, the mean time per finished run times
its runs left; for the papers after it, the wall time each took the last time it was
computed with nothing from the cache (kept as ``walls.json`` in the cache directory), else
the experiment's own estimate (:attr:`Experiment.estimate`: a measurement or a cost model
for two workers), scaled by how the papers already computed in this report compared with
their estimates. With ``--html`` each paper whose experiment names a ``report_pass`` is run
once more with those options (its sweep, its column), for the figures its default leaves out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from slotnet._version import version as slotnet_version
from slotnet.errors import SlotnetError, SpecError
from slotnet.schemes import Row

from ..engine._progress import RunsProgress, _clock
from ..engine._result import json_ready
from ._paper_run import VERDICTS, PaperRun, repro_command, run_command, verdict_counts, verdict_word
from .results_cache import ResultsCache, file_mode

__all__ = ["ALL", "VERDICTS", "PaperRun", "ReportError", "ReportProgress", "check_html", "git_commit", "metadata",
           "nominal_wall", "open_cache", "report_parts", "repro_command", "repro_many", "run_command", "run_papers",
           "verdict_counts", "verdict_word"]

#: The name that stands for every paper.
ALL = "all"


def report_parts(papers: Sequence[str], quick: bool, options: Mapping[str, Any] | None = None
                 ) -> list[tuple[str, dict[str, Any]]]:
    """(paper, options) of every pass of a report: each paper as asked, then the pass its
    experiment adds for the report (:attr:`Experiment.report_pass`: a sweep, a column the
    default leaves out, drawn as figures) when the paper was asked for without options."""
    from slotnet.schemes import EXPERIMENTS

    parts: list[tuple[str, dict[str, Any]]] = []
    for paper in papers:
        parts.append((paper, dict(options or {})))
        extra = getattr(EXPERIMENTS.get(paper), "report_pass", None)
        if not options and extra:
            parts.append((paper, dict(extra[0 if quick else 1])))
    return parts


def nominal_wall(paper: str, quick: bool, options: Mapping[str, Any]) -> float | None:
    """The wall seconds the experiment expects for this pass (:attr:`Experiment.estimate`), or None."""
    from slotnet.schemes import EXPERIMENTS

    estimate = getattr(EXPERIMENTS.get(paper), "estimate", None)
    if estimate is None:
        return None
    try:
        value = estimate(quick, dict(options))
    except Exception:  # an estimate is a guide: one that fails is no estimate
        return None
    return float(value) if value is not None and math.isfinite(value) and value >= 0 else None


class ReportError(SlotnetError):
    """The report could not be written after the rows were computed, or a paper failed (exit status 1)."""


# --- progress -------------------------------------------------------------------------


class ReportProgress(RunsProgress):
    """:class:`RunsProgress` for one paper of several: ``paper i/N NAME`` before the runs,
    and after them the estimate for the papers still to come: the wall time each took the
    last time it was computed here (:func:`_walls`), else its experiment's own estimate
    (``nominal``, already scaled by how this report's finished papers compared with theirs)."""

    def __init__(self, index: int, total: int, paper: str, later: Sequence[str], walls: Mapping[str, float],
                 stream: TextIO | None = None, enabled: bool | None = None,
                 nominal: Mapping[str, float] | None = None) -> None:
        super().__init__(stream, enabled)
        self.head = f"paper {index}/{total} {paper}: " if total > 1 else f"{paper}: "
        nominal = nominal or {}
        #: this paper's own estimate, shown until its first run finishes (then the runs' pace rules)
        self.own = walls.get(paper, nominal.get(paper))
        timed = [walls[p] for p in later if p in walls]
        guessed = [nominal[p] for p in later if p not in walls and p in nominal]
        known = timed + guessed
        unknown = len(later) - len(known)
        tail = []
        if known:
            tail.append(f"then about {_clock(sum(known))} for {len(known)} more paper{'s' * (len(known) > 1)}"
                        + (f" ({len(guessed)} from {'its' if len(guessed) == 1 else 'their'} experiment's estimate)"
                           if guessed else ""))
        if unknown:
            tail.append(f"{unknown} more paper{'s' * (unknown > 1)} not yet timed")
        self.tail = "; " + ", ".join(tail) if tail else ""

    def line(self) -> str:
        own = ""
        if self.finished == 0 and self.own is not None:
            own = f", about {_clock(max(0.0, self.own - (time.monotonic() - self.start)))} left (estimate)"
        return self.head + super().line() + own + self.tail


def _walls_path(cache: ResultsCache | None) -> Path | None:
    return cache.root / "walls.json" if cache is not None else None


def _walls(cache: ResultsCache | None, quick: bool) -> dict[str, float]:
    """Each paper's wall seconds the last time it was computed with nothing from the cache."""
    path = _walls_path(cache)
    try:
        data = json.loads(path.read_text()) if path is not None else {}
        got = data.get("quick" if quick else "full", {})
        return {str(k): float(v) for k, v in got.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _remember_wall(cache: ResultsCache | None, quick: bool, paper: str, wall: float) -> None:
    path = _walls_path(cache)
    if path is None:
        return
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    mode = "quick" if quick else "full"
    if not isinstance(data.get(mode), dict):
        data[mode] = {}
    data[mode][paper] = round(wall, 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-walls-", dir=path.parent)
    except OSError:
        return  # only an estimate is lost
    try:
        os.chmod(tmp, file_mode())
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


# --- running --------------------------------------------------------------------------


def _figures(folder: str) -> list[tuple[str, bytes]]:
    """The PNGs an experiment wrote for ``--plot FOLDER/fig.png``: its separate panels
    (``fig_*.png``) when it wrote some, else the one file."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".png"))
    parts = [n for n in names if n.startswith("fig_")]
    out = []
    for name in parts or [n for n in names if n == "fig.png"]:
        with open(os.path.join(folder, name), "rb") as fh:
            out.append((name[len("fig_"):-4] if name.startswith("fig_") else "", fh.read()))
    return out


def run_papers(papers: Sequence[str], *, seed: int, quick: bool, jobs: int | None, cache: ResultsCache | None,
               figures: bool, options: Mapping[str, Any] | None = None, keep_going: bool = True,
               progress: bool | None = None, on_paper: Callable[[str], None] | None = None,
               on_rows: Callable[[list[Row]], None] | None = None, extras: bool = False) -> list[PaperRun]:
    """Reproduce each paper in turn.

    Args:
        figures: ask each experiment for its own figures (its ``plot`` option); one that
            draws none on request (it refuses ``plot`` before its first run) runs without.
        options: the experiment options of a single paper (``sweep_d`` ...).
        extras: add the pass each paper's experiment names for a report (:func:`report_parts`,
            papers asked without options); it is a :class:`PaperRun` of its own, after the
            paper's default one.
        keep_going: a paper that fails is kept with its error (and the rows it computed)
            and the next one runs; otherwise a failure before any row is raised.
        progress: draw the progress line (None: when stderr is a terminal).
        on_paper: called with each paper's name before it starts.
        on_rows: called with each batch of rows as an experiment publishes it.

    Raises:
        SpecError: (``keep_going`` off) the paper refused its options; nothing was run.
        KeyboardInterrupt: passed on; the runs finished so far are in the cache.
    """
    from ._repro import PartialRepro, repro

    walls = _walls(cache, quick)
    parts = report_parts(papers, quick, options) if extras else [(p, dict(options or {})) for p in papers]
    labels = [PaperRun(p, seed, quick, o).label for p, o in parts]
    priors = {label: v for label, (p, o) in zip(labels, parts) if (v := nominal_wall(p, quick, o)) is not None}
    # how this machine compares with the experiments' estimates: (wall, estimate) of every pass
    # timed here before (walls.json) and of those computed so far in this report
    spent = {label: (walls[label], priors[label]) for label in labels if label in walls and priors.get(label, 0.0) > 0}
    out: list[PaperRun] = []
    for i, (paper, opts) in enumerate(parts):
        run = PaperRun(paper, seed, quick, opts)
        if on_paper is not None:
            on_paper(run.label)
        out.append(run)
        scale = sum(a for a, _ in spent.values()) / sum(b for _, b in spent.values()) if spent else 1.0
        nominal = {label: v * scale for label, v in priors.items()}

        def on_run(request: Mapping[str, Any], result: Mapping[str, Any], hit: bool, run: PaperRun = run) -> None:
            run.runs.append((dict(request), float(result.get("_wall_s") or 0.0), hit))

        def attempt(plot: str | None, index: int = i, paper: str = paper, run: PaperRun = run,
                    nominal: dict[str, float] = nominal) -> list[Row]:
            bar = ReportProgress(index + 1, len(parts), labels[index], labels[index + 1:], walls, enabled=progress,
                                 nominal=nominal)
            rows, _ = repro(paper, seed=seed, jobs=jobs, quick=quick, progress=bar, on_rows=on_rows, cache=cache,
                            on_run=on_run, plot=plot, **run.options)
            return rows

        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="slotnet-report-") as tmp:
            try:
                try:
                    run.rows = attempt(os.path.join(tmp, "fig.png") if figures else None)
                except SpecError:
                    if not figures or run.runs:
                        raise
                    run.rows = attempt(None)  # draws no figures of its own: the report draws its rows
            except PartialRepro as exc:
                run.rows, run.error = exc.rows, str(exc)
            except SlotnetError as exc:
                if not keep_going and isinstance(exc, SpecError):
                    raise
                run.error = str(exc)
            run.figures = _figures(tmp)
        run.wall_s = time.perf_counter() - t0
        if not run.error and run.runs and not run.cached:
            _remember_wall(cache, quick, run.label, run.wall_s)
            if priors.get(run.label, 0.0) > 0:
                spent[run.label] = (run.wall_s, priors[run.label])
    return out


# --- metadata -------------------------------------------------------------------------


def git_commit() -> str:
    """The commit of the checkout slotnet runs from, ``+ local changes`` if edited; else why unknown."""
    import slotnet

    where = str(Path(slotnet.__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown (not run from a git checkout)"
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown (git is not available)"
    return head.stdout.strip() + (" + local changes" if dirty.stdout.strip() else "")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def metadata(runs: Sequence[PaperRun], *, jobs: int, cache: ResultsCache | None, wall_s: float) -> list[tuple[str, str]]:
    """(label, value) pairs: what produced the report, where, how long it took."""
    from slotnet._build import build

    from .results_cache import code_version

    seeds = sorted({r.seed for r in runs})
    n_runs = sum(len(r.runs) for r in runs)
    cached = sum(r.cached for r in runs)
    return [
        ("slotnet", slotnet_version()),
        ("hot path", build()),
        ("git commit", git_commit()),
        ("code version (cache key)", cache.version if cache is not None else code_version()),
        ("seeds", ", ".join(map(str, seeds)) + " (every run's seed is fixed by it; the rerun commands name it)"),
        ("mode", "--quick (a subset of rows, shorter runs)" if any(r.quick for r in runs) else "full"),
        ("machine", f"{_cpu_model()}, {os.cpu_count()} cores; {platform.platform()}"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("worker processes", str(jobs)),
        ("runs", f"{n_runs}, of which {cached} from the results cache" + (f" ({cache.dir})" if cache is not None else "")
         if cache is not None else f"{n_runs} (results cache off)"),
        ("wall time", f"{_clock(wall_s)} in all; " + ", ".join(f"{r.label} {r.wall_s:.1f} s" for r in runs)),
        ("generated", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())),
    ]


# --- the command line -----------------------------------------------------------------


def open_cache(args: argparse.Namespace) -> ResultsCache | None:
    """The results cache ``slotnet repro`` uses: ``--cache DIR`` or the default; None with ``--no-cache``."""
    if getattr(args, "no_cache", False):
        if getattr(args, "cache", None):
            raise SpecError("--cache and --no-cache contradict each other: give one")
        return None
    return ResultsCache(getattr(args, "cache", None))


def check_figure_output(flag: str, path: str, missing: str) -> None:
    """An output that needs matplotlib (``--html``, ``--plot``): a writable ``path`` and
    matplotlib installed, both checked before any run (``missing``: what to tell a user
    who lacks it).

    Raises:
        SpecError: naming what is missing.
    """
    import importlib.util

    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise SpecError(f"{flag}: cannot write {path!r}: {exc.strerror or exc}") from None
    if not existed:
        os.unlink(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise SpecError(f"{flag} needs matplotlib, which is not installed: {missing}")


def check_html(path: str) -> None:
    """--html needs matplotlib and a writable path: both checked before any run."""
    check_figure_output("--html", path, "pip install 'slotnet[report]'")


def repro_many(args: argparse.Namespace, sweep_rho: list[float] | None) -> int:
    """``slotnet repro all`` and ``slotnet repro PAPER --html FILE`` (the options already checked by the CLI)."""
    from ._repro import LEGEND, format_rows, papers

    many = args.paper == ALL
    options: dict[str, Any] = {"sweep_d": args.sweep_d, "sweep_rho": sweep_rho, "sweep_only": args.sweep_only}
    if args.dims is not None:
        options["dims"] = args.dims
    given = [k for k, v in options.items() if v not in (None, False)] + (["plot"] if args.plot else [])
    if many and given:
        raise SpecError(f"repro all takes no {', '.join('--' + k.replace('_', '-') for k in given)} "
                        "(give one paper for those)")
    if args.html and args.plot:
        raise SpecError("--html draws the figures into the report: leave out --plot")
    if args.html:
        check_html(args.html)
    cache = open_cache(args)
    jobs = args.jobs or min(2, os.cpu_count() or 1)
    names = papers() if many else [args.paper]
    printed: list[Row] = []

    def heading(paper: str) -> None:
        if not args.json:
            print(f"=== {paper} ===", flush=True)

    def show(batch: list[Row]) -> None:
        print(format_rows(batch, legend=False), flush=True)
        printed.extend(batch)

    t0 = time.perf_counter()
    runs = run_papers(names, seed=args.seed, quick=args.quick, jobs=jobs, cache=cache, figures=bool(args.html),
                      options={k: v for k, v in options.items() if v not in (None, False)}, keep_going=many,
                      on_paper=heading if many else None, on_rows=None if args.json else show,
                      progress=None, extras=bool(args.html))
    wall = time.perf_counter() - t0
    if args.json:
        print(json.dumps(json_ready({"seed": args.seed, "quick": args.quick, "html": args.html, "papers": [
            {"paper": r.paper, **({"options": r.options} if r.options else {}), "timing": {"wall_seconds": r.wall_s},
             "runs": len(r.runs), "from_cache": r.cached,
             "rows": [row.as_dict() for row in r.rows], **({"error": r.error} if r.error else {})} for r in runs]}), allow_nan=False))
    else:
        for r in runs:
            rest = [row for row in r.rows if not any(row is p for p in printed)]
            if rest:
                if many or r.options:
                    print(f"=== {r.label} (continued) ===")
                print(format_rows(rest, legend=False))
        print("\n".join(LEGEND))
        for r in runs:
            counts = verdict_counts(r.rows)
            print(f"{r.label}: {len(r.rows)} rows ({', '.join(f'{n} {w}' for w, n in counts.items() if n)}) in "
                  f"{r.wall_s:.1f} s, {len(r.runs)} runs ({r.cached} from the cache)" + (f"; FAILED: {r.error}" if r.error else ""))
    if cache is not None and cache.write_error:
        print(f"slotnet repro: note: results not kept: {cache.write_error}", file=sys.stderr)
    if args.html:
        from . import report_html

        try:
            report_html.write(args.html, runs, metadata(runs, jobs=jobs, cache=cache, wall_s=wall))
        except OSError as exc:
            raise ReportError(f"--html: cannot write {args.html!r}: {exc.strerror or exc}") from None
        if not args.json:
            print(f"report written to {args.html}")
    failed = [r for r in runs if r.error]
    if failed:
        raise ReportError("; ".join(f"{r.label}: {r.error}" for r in failed))
    return 0


