"""The HTML report of ``slotnet repro all --html FILE``: one self-contained page.

Nothing on the page is fetched: the style sheet is inline, the fonts are the reader's
own, every figure is a PNG embedded as a ``data:`` URI, and there is no script. The page
holds, in order:

* a summary: rows per verdict for each paper (within, known, OUTSIDE, not run, not
  judged), every OUTSIDE row by name, and what produced the report (slotnet's version,
  the build of the hot path, the git commit, seeds, machine, wall time per paper);
* "Where the papers slip": every row whose verdict is ``known`` with its note, the
  evidence for the slip -- selected from the rows by their verdict, never by hand;
* per paper, each reproduced table as a table (case, metric, the paper's value, the
  simulation with its 95% half-width, the analytic model, the verdict, the command
  that reruns the row), drawn beside it as a figure (simulation with its interval,
  model, the paper's value; rows outside the paper's agreement ringed), then the
  figures the experiment draws itself (its ``--plot``), and the ``slotnet run``
  command of every run behind the rows.

Every verdict is :meth:`slotnet.schemes.Row.verdict` of its row; every number is the
row's. Figures need matplotlib (the ``report`` extra).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import io
import math
import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any, TypeGuard

from slotnet.schemes import EXPERIMENTS, Row

from ._paper_run import VERDICTS, PaperRun, run_command, verdict_word
from .results_cache import file_mode

__all__ = ["render", "row_figures", "write"]

#: The paper's symbols for the quantities cases are named by (``rho=0.2``): the x axis of a figure.
SYMBOLS = {"rho": "ρ", "lam": "λ", "lambda": "λ", "lam_unicast": "λ (unicast)", "v": "offered load v", "d": "d",
           "M": "M", "m": "M", "p": "p", "slot": "slot t", "n": "n", "D": "D"}

#: The CSS class of each verdict word.
_CLASS = {Row.WITHIN: "within", Row.KNOWN: "known", Row.OUTSIDE: "outside", Row.NOT_RUN: "notrun", Row.UNJUDGED: "unjudged"}

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:1.5em auto;max-width:1400px;
 padding:0 1em;color:#1a1a1a;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}
th,td{border:1px solid #d0d0d0;padding:.2em .45em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.92em}
td code{font-size:.8em;color:#444}
.within{color:#116611}.known{color:#9a5b00}.outside{color:#b00000;font-weight:bold}.notrun,.unjudged{color:#777}
tr.outside td{background:#fde8e8}tr.known td{background:#fff6e5}
.banner{padding:.6em 1em;border-radius:4px;font-weight:bold;margin:1em 0}
.banner.ok{background:#e7f5e7;border:1px solid #9c9}.banner.bad{background:#fde8e8;border:1px solid #d99}
.error{background:#fde8e8;border:1px solid #d99;padding:.5em 1em}
.figrow{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start;margin:.8em 0}
.figrow figure{margin:0;flex:1 1 480px;max-width:1000px}.figrow>div{flex:0 1 auto;max-width:100%;overflow-x:auto}
.figrow img{max-width:100%;border:1px solid #ddd}
.claim{flex:1 1 320px;max-width:560px;font-size:.9em;background:#f7f7f7;border-left:4px solid #bbb;padding:.5em 1em}
.claim p{margin:.3em 0}
figcaption{font-size:.85em;color:#444;max-width:900px}
details{margin:.8em 0}summary{cursor:pointer}
ol.notes{font-size:.88em}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(v: float | None, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}" if abs(v) < 1e5 else f"{v:.{digits}g}"
    return str(v)


def _sim(row: Row) -> str:
    if row.sim is None:
        return "-"
    ci = row.ci95
    return _num(row.sim) + (f" ± {ci:.4f}" if isinstance(ci, float) and math.isfinite(ci) else "")


def _anchor(*parts: str) -> str:
    """An id for the page: readable, and unique to ``parts`` (names differing only in punctuation differ)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()
    if len(parts) < 3:
        return slug
    return f"{slug}-{hashlib.sha1(chr(0).join(parts).encode()).hexdigest()[:6]}"


def _experiments(rows: Sequence[Row]) -> list[str]:
    seen: list[str] = []
    for r in rows:
        if r.experiment not in seen:
            seen.append(r.experiment)
    return seen


# --- figures drawn from the rows ------------------------------------------------------

#: ``name=number`` or ``slot N`` in a case: the candidate x variables of a table's figure.
_TOKEN = re.compile(r"(?:^|(?<=\s))([A-Za-z_][A-Za-z0-9_]*)(?:=|\s)(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)(?=[\s,;]|$)")


def _tokens(case: str) -> dict[str, tuple[float, tuple[int, int]]]:
    return {m.group(1): (float(m.group(2)), m.span()) for m in _TOKEN.finditer(case)}


def _x_variable(cases: Sequence[str]) -> str | None:
    """The variable of the cases to draw along x: named in every case, with the most
    distinct values (at least two); None: the cases are drawn side by side as categories."""
    toks = [_tokens(c) for c in cases]
    common = [name for name in toks[0] if all(name in t for t in toks)] if toks else []
    best, most = None, 1
    for name in common:
        n = len({t[name][0] for t in toks})
        if n >= most and n >= 2:
            best, most = name, n
    return best


def _series(case: str, var: str | None) -> tuple[str, float | None]:
    """(the rest of the case: the series it belongs to, its x value)."""
    if var is None:
        return "", None
    value, (a, b) = _tokens(case)[var]
    return " ".join((case[:a] + " " + case[b:]).split()), value


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def row_figures(rows: Sequence[Row], *, max_panels: int = 12, citation: str = "") -> list[tuple[str, bytes]]:
    """One PNG per table (experiment) of ``rows`` with at least two drawable rows: one
    panel per metric, the simulation (with its 95% half-width), the model and the paper's
    value against the case's varying quantity, labelled with the paper's symbol
    (:data:`SYMBOLS`; or the cases side by side); rows outside the paper's agreement are
    ringed red, known slips orange. The figure's title cites the paper (``citation``)
    above the table's name; a log axis is labelled with plain numbers.

    Returns:
        (experiment, PNG bytes) pairs.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    out: list[tuple[str, bytes]] = []
    for exp in _experiments(rows):
        sel = [r for r in rows if r.experiment == exp and any(_finite(v) for v in (r.sim, r.theory, r.paper))]
        if len(sel) < 2:
            continue
        cases = list(dict.fromkeys(r.case for r in sel))
        var = _x_variable(cases)
        metrics = list(dict.fromkeys(r.metric for r in sel))
        for start in range(0, len(metrics), max_panels):
            chunk = metrics[start:start + max_panels]
            ncols = min(3, len(chunk))
            nrows = math.ceil(len(chunk) / ncols)
            tall = 1.0 if var is None else 0.0  # room for the cases' names under each panel
            height = (3.3 + tall) * nrows + 1.2  # inches: the panels, the title and the legend
            width = max(4.6 * ncols, 8.0)  # inches; at least what the legend needs
            fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
            try:
                labels: list[str] = []
                for ax, metric in zip(axes.flat, chunk):
                    _panel(ax, [r for r in sel if r.metric == metric], metric, var, cases, labels)
                for ax in list(axes.flat)[len(chunk):]:
                    ax.set_visible(False)
                colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
                handles = [Line2D([], [], color="k", marker="o", label="simulation (bar: 95% half-width)"),
                           Line2D([], [], color="k", marker="x", linestyle="--", label="model"),
                           Line2D([], [], color="k", marker="s", markerfacecolor="none", linestyle="none", label="paper"),
                           Line2D([], [], color="#d00000", marker="o", markersize=11, markerfacecolor="none",
                                  linestyle="none", label="OUTSIDE"),
                           Line2D([], [], color="#e08000", marker="o", markersize=11, markerfacecolor="none",
                                  linestyle="none", label="known slip")]
                if len(labels) > 1 or (labels and labels[0]):
                    handles += [Line2D([], [], color=colours[i % len(colours)], label=lab or "(all)")
                                for i, lab in enumerate(labels)]
                fig.legend(handles=handles, loc="lower center", ncol=min(5, len(handles)), fontsize=7, frameon=False)
                fig.suptitle(f"{citation}\n{exp}" if citation else exp, fontsize=9, y=1 - 0.1 / height, va="top")
                legend_in = 0.3 * math.ceil(len(handles) / 5) + 0.1 + tall  # fixed margins: tight_layout doubles the time
                fig.subplots_adjust(left=0.6 / width, right=1 - 0.2 / width, top=1 - 0.75 / height,
                                    bottom=(legend_in + 0.35) / height, wspace=0.28, hspace=(0.8 + tall) / 3.3)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", dpi=80)
            finally:
                plt.close(fig)
            title = exp if len(metrics) <= max_panels else f"{exp} ({start // max_panels + 1})"
            out.append((title, buf.getvalue()))
    return out


def _panel(ax: Any, rows: list[Row], metric: str, var: str | None, cases: list[str], labels: list[str]) -> None:
    import matplotlib.pyplot as plt

    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    by_series: dict[str, list[tuple[float, Row]]] = {}
    for r in rows:
        label, x = _series(r.case, var)
        by_series.setdefault(label, []).append((x if x is not None else float(cases.index(r.case)), r))
    if var is not None and len(by_series) > 1 and all(len(pts) == 1 for pts in by_series.values()):
        # every point its own series: the rest of each case only describes the point (e.g. its run length)
        by_series = {"": [pt for pts in by_series.values() for pt in pts]}
    values: list[float] = []
    line = "-" if var is not None else "none"  # the cases side by side are no curve: points only
    for label, pts in by_series.items():
        if label not in labels:
            labels.append(label)
        colour = colours[labels.index(label) % len(colours)]
        pts.sort(key=lambda p: p[0])
        sim = [(x, r.sim, r.ci95 if _finite(r.ci95) else 0.0) for x, r in pts if _finite(r.sim)]
        if sim:
            ax.errorbar([p[0] for p in sim], [p[1] for p in sim], yerr=[p[2] for p in sim], color=colour, marker="o",
                        markersize=4, capsize=2, linewidth=1, linestyle=line)
        model = [(x, r.theory) for x, r in pts if _finite(r.theory)]
        if model:
            ax.plot([p[0] for p in model], [p[1] for p in model], color=colour, marker="x",
                    linestyle="--" if var is not None else "none", linewidth=1)
        paper = [(x, r.paper) for x, r in pts if _finite(r.paper)]
        if paper:
            ax.scatter([p[0] for p in paper], [p[1] for p in paper], marker="s", s=36, facecolors="none",
                       edgecolors=colour, zorder=4)
        for x, r in pts:
            word = verdict_word(r)
            y = r.sim if _finite(r.sim) else r.theory
            if word in (Row.OUTSIDE, Row.KNOWN) and _finite(y):
                ax.scatter([x], [y], s=150, facecolors="none", edgecolors="#d00000" if word == Row.OUTSIDE else "#e08000",
                           linewidths=1.5, zorder=5)
        values += [float(v) for _, r in pts for v in (r.sim, r.theory, r.paper) if _finite(v)]
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values) and max(positive) / min(positive) > 50:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    if var is None:
        shown = [c for c in cases if any(r.case == c for r in rows)]
        ax.set_xticks([cases.index(c) for c in shown])
        ax.set_xticklabels(shown, rotation=35, ha="right", fontsize=6)
    else:
        ax.set_xlabel(SYMBOLS.get(var, var), fontsize=8)
    title = metric.replace("_", " ")
    ax.set_title(title if len(title) <= 48 else title[:46] + "…", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)


def _plain_log_ticks(axis: Any) -> None:
    """Plain numbers on a log axis (2, 5, 10, 20, 50), not powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


# --- the page -------------------------------------------------------------------------


def render(runs: Sequence[PaperRun], meta: Sequence[tuple[str, str]], *, figures: bool = True) -> str:
    """The report as one HTML document (``figures``: draw the tables; needs matplotlib)."""
    all_rows = [(run, r) for run in runs for r in run.rows]
    outside = [(run, r) for run, r in all_rows if verdict_word(r) == Row.OUTSIDE]
    slips = [(run, r) for run, r in all_rows if verdict_word(r) == Row.KNOWN]
    failed = [run for run in runs if run.error]
    quick = any(run.quick for run in runs)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>slotnet: {len(set(r.paper for r in runs))} paper reproduction{'s' * (len(set(r.paper for r in runs)) != 1)}"
           f"{' (quick)' * quick}</title>",
           f"<style>{_STYLE}</style></head><body>",
           f"<h1>slotnet: papers reproduced{' (a quick subset)' * quick}</h1>",
           "<ul>" + "".join(f"<li>{_e(c)}</li>" for c in dict.fromkeys(run.citation for run in runs)) + "</ul>",
           "<p>Each row compares a quantity of a paper: the paper's printed value, the emulator's simulation with its "
           "95% confidence half-width (batch means), and the analytic model. Its verdict is computed from its numbers: "
           "<span class=within>within</span> = inside the paper's agreement (|difference| ≤ √2·CI + the paper's own "
           "|paper − model| + half a printed digit); <span class=known>known</span> = outside it for the documented "
           "reason in the row's note, and the value that reason predicts agrees with the row; "
           "<span class=outside>OUTSIDE</span> = outside it with no reason that accounts for the gap (a failure); "
           "<span class=notrun>not run</span> = a point left out, saying why; <span class=unjudged>-</span> = nothing "
           "to judge by (no reference value, or a simulation without an interval).</p>"]
    out += _summary(runs, outside, failed, meta)
    out += _slips(slips)
    for run in runs:
        out += _paper(run, figures)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _summary(runs: Sequence[PaperRun], outside: list[tuple[PaperRun, Row]], failed: list[PaperRun],
             meta: Sequence[tuple[str, str]]) -> list[str]:
    out = ['<section id="summary"><h2>Summary</h2>']
    if outside or failed:
        what = []
        if outside:
            what.append(f"{len(outside)} row{'s' * (len(outside) != 1)} OUTSIDE the paper's agreement")
        if failed:
            what.append(f"{len(failed)} paper{'s' * (len(failed) != 1)} failed: " + ", ".join(r.paper for r in failed))
        out.append(f'<div class="banner bad">{_e("; ".join(what))}</div>')
    else:
        out.append('<div class="banner ok">No row is OUTSIDE the paper\'s agreement and every paper ran to the end.</div>')
    head = "".join(f"<th>{_e(w)}</th>" for w in VERDICTS)
    out.append(f"<table class=summary><tr><th>paper</th><th>rows</th>{head}<th>runs (from cache)</th><th>wall s</th>"
               "<th>rerun</th></tr>")
    total = dict.fromkeys(VERDICTS, 0)
    for run in runs:
        counts = dict.fromkeys(VERDICTS, 0)
        for r in run.rows:
            counts[verdict_word(r)] += 1
        for w in VERDICTS:
            total[w] += counts[w]
        cells = "".join(f'<td class="num {_CLASS[w] if counts[w] and w in (Row.OUTSIDE, Row.KNOWN) else ""}">{counts[w]}</td>'
                        for w in VERDICTS)
        status = f' <span class=outside>FAILED: {_e(run.error)}</span>' if run.error else ""
        out.append(f'<tr><td><a href="#{_anchor("paper", run.label)}">{_e(run.title)}</a>{status}</td>'
                   f'<td class=num>{len(run.rows)}</td>{cells}<td class=num>{len(run.runs)} ({run.cached})</td>'
                   f"<td class=num>{run.wall_s:.1f}</td><td><code>{_e(run.command)}</code></td></tr>")
    if len(runs) > 1:
        cells = "".join(f"<td class=num>{total[w]}</td>" for w in VERDICTS)
        out.append(f"<tr><th>all</th><td class=num>{sum(total.values())}</td>{cells}"
                   f"<td class=num>{sum(len(r.runs) for r in runs)} ({sum(r.cached for r in runs)})</td>"
                   f"<td class=num>{sum(r.wall_s for r in runs):.1f}</td><td></td></tr>")
    out.append("</table>")
    out.append(f"<h3>Every OUTSIDE row ({len(outside)})</h3>")
    if outside:
        out.append("<table><tr><th>paper</th><th>table</th><th>case</th><th>metric</th><th>verdict</th></tr>")
        for run, r in outside:
            link = _anchor("paper", run.label, r.experiment)
            out.append(f'<tr class=outside><td>{_e(run.citation)}</td><td><a href="#{link}">{_e(r.experiment)}</a></td>'
                       f"<td>{_e(r.case)}</td><td>{_e(r.metric)}</td><td>{_e(r.verdict())}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>None.</p>")
    out.append("<h3>How this report was produced</h3><table class=meta>")
    out += [f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in meta]
    out.append("</table></section>")
    return out


def _slips(slips: list[tuple[PaperRun, Row]]) -> list[str]:
    out = ['<section id="slips"><h2>Where the papers slip</h2>',
           f"<p>Every row whose verdict is <span class=known>known</span> ({len(slips)} in all): the simulation or the "
           "model sits outside the paper's agreement, and the row's note says why (the evidence). The list is made "
           "from the verdicts of the rows, not chosen by hand.</p>"]
    if not slips:
        out.append("<p>None in these rows.</p></section>")
        return out
    out.append("<table><tr><th>paper</th><th>table</th><th>case</th><th>metric</th><th>paper value</th>"
               "<th>simulation ± 95%</th><th>model</th><th>note (the evidence)</th></tr>")
    for run, r in slips:
        link = _anchor("paper", run.label, r.experiment)
        out.append(f'<tr class=known><td>{_e(run.citation)}</td><td><a href="#{link}">{_e(r.experiment)}</a></td>'
                   f"<td>{_e(r.case)}</td><td>{_e(r.metric)}</td><td class=num>{_num(r.paper)}</td>"
                   f"<td class=num>{_sim(r)}</td><td class=num>{_num(r.theory)}</td><td>{_e(r.note)}</td></tr>")
    out.append("</table></section>")
    return out


def _paper(run: PaperRun, figures: bool) -> list[str]:
    exp = EXPERIMENTS.get(run.paper)
    doc = exp.doc if exp is not None else ""
    out = [f'<section id="{_anchor("paper", run.label)}"><h2>{_e(run.title)}</h2>']
    if run.options:  # a second reproduction of a paper, for figures its default one leaves out
        out.append(f"<p>The same paper again, with the options <code>{_e(run.label[len(run.paper):].strip())}</code>: "
                   "what its default reproduction leaves out (a sweep, a column of the paper drawn as a figure).</p>")
    else:
        out += [f"<p>{_e(' '.join(par.split()))}</p>" for par in doc.split("\n\n") if par.strip()]
        if not run.figures and exp is not None and exp.claims:  # else the box stands beside the figures
            out.append(f"<div class=figrow>{_claims(exp)}</div>")
    out.append(f"<p>Rerun: <code>{_e(run.command)}</code> ({len(run.runs)} runs, {run.cached} from the results cache, "
               f"{run.wall_s:.1f} s)</p>")
    if run.error:
        out.append(f'<p class="error">This reproduction FAILED: {_e(run.error)}'
                   + (" (the rows below were computed before the failure)" if run.rows else "") + "</p>")
    drawn = dict(row_figures(run.rows, citation=run.citation)) if figures and run.rows else {}
    for name in _experiments(run.rows):
        pictures = [(title, png) for title, png in drawn.items() if title == name or title.startswith(name + " (")]
        out.append(f'<h3 id="{_anchor("paper", run.label, name)}">{_e(name)}</h3><div class=figrow>')
        out += _table(run, [r for r in run.rows if r.experiment == name])
        out += [f'<figure>{_img(png, "figure of " + title)}<figcaption>{_e(title)}, drawn from the rows: simulation '
                "(dots, bars: 95% half-width), model (dashed), the paper's value (open squares); ringed red: OUTSIDE, "
                "orange: a known slip.</figcaption></figure>" for title, png in pictures]
        out.append("</div>")
    if run.figures:
        out.append(f"<h3>The reproduction's own figures: {_e(run.citation)}</h3><div class=figrow>{_claims(exp)}")
        out += [f"<figure>{_img(png, run.citation + ' ' + title)}<figcaption>{_e(title or run.citation)}</figcaption></figure>"
                for title, png in run.figures]
        out.append("</div>")
    if run.runs:
        out.append(f"<details><summary>The {len(run.runs)} runs behind these rows (each reruns alone)</summary>")
        out.append("<table><tr><th>command</th><th>wall s</th><th>from cache</th></tr>")
        for request, wall, hit in run.runs:
            out.append(f"<tr><td><code>{_e(run_command(request))}</code></td><td class=num>{wall:.2f}</td>"
                       f"<td>{'yes' if hit else 'no'}</td></tr>")
        out.append("</table></details>")
    out.append("</section>")
    return out


def _claims(exp: Any) -> str:
    """The box "What the paper claims": the experiment's declared claims, one item each."""
    claims = getattr(exp, "claims", ()) or ()
    items = ("<ul>" + "".join(f"<li>{_e(c)}</li>" for c in claims) + "</ul>") if claims else \
        "<p>(The reproduction declares no claims of the paper.)</p>"
    return f"<div class=claim><p><b>What the paper claims</b></p>{items}</div>"


def _table(run: PaperRun, rows: list[Row]) -> list[str]:
    out = ["<div>", "<table class=rows><tr><th>case</th><th>metric</th><th>paper</th><th>simulation ± 95%</th><th>model</th>"
           "<th>verdict</th><th>rerun</th></tr>"]
    notes: list[str] = []
    for r in rows:
        word = verdict_word(r)
        verdict = r.verdict()
        _, sep, why = verdict.partition(": ")
        if sep and word in (Row.KNOWN, Row.NOT_RUN):
            if why not in notes:
                notes.append(why)
            shown = f"{word} [{notes.index(why) + 1}]"
        else:
            shown = verdict
        out.append(f'<tr class="{_CLASS.get(word, "")}"><td>{_e(r.case)}</td><td>{_e(r.metric)}</td>'
                   f"<td class=num>{_num(r.paper)}</td><td class=num>{_sim(r)}</td><td class=num>{_num(r.theory)}</td>"
                   f'<td class="{_CLASS.get(word, "")}">{_e(shown)}</td><td><code>{_e(run.command)}</code></td></tr>')
    out.append("</table>")
    if notes:
        out.append("<ol class=notes>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ol>")
    out.append("</div>")
    return out


def write(path: str, runs: Sequence[PaperRun], meta: Sequence[tuple[str, str]]) -> None:
    """Render the report and write it to ``path`` atomically (a temporary file, then a rename).

    Raises:
        OSError: the file cannot be written.
    """
    text = render(runs, meta)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-report-", suffix=".html", dir=folder)
    try:
        os.chmod(tmp, file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
