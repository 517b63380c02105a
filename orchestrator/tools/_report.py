"""Human output: the simulation beside the theory, as readable tables."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from slotnet.schemes import Column

from ..engine._result import Result

__all__ = ["CI_LEGEND", "format_per_node", "format_result", "format_series", "format_theory", "format_value", "table"]

#: Columns human output aims to fit in.
WIDTH = 100

#: What ``±`` means wherever slotnet prints it.
CI_LEGEND = "± is the 95% confidence half-width (batch means)"


def format_value(v: Any) -> str:
    """A value as a reader wants it: no Python reprs (``{}``, tuples, quotes)."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) < 1e5 else f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return ", ".join(f"{k} {format_value(x)}" for k, x in v.items()) if v else "none"
    return str(v)


def _rel(sim: Any, th: Any) -> str:
    if isinstance(sim, (int, float)) and isinstance(th, (int, float)) and not isinstance(sim, bool) and th:
        return f"{(sim - th) / abs(th):+.2%}"
    return ""


def table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return out


def format_result(r: Result, columns: Sequence[Column] = (), theory_label: str = "theory") -> str:
    """The whole human report of a run (``columns``: the scheme's per-slot series columns;
    ``theory_label``: what the scheme's theory values are, see ``Scheme.theory_label``)."""
    load = " ".join(f"{k}={v:g}" for k, v in r.load.items())
    params = " ".join(f"{k}={v}" for k, v in r.params.items())
    lines = [
        f"scheme {r.scheme} on {r.topology['spec']} ({r.topology['n_nodes']} nodes, {r.topology['n_links']} links)",
        f"load {load or '-'}  params {params or '-'}  seed {r.seed}",
        f"slots {r.slots_run}/{r.slots} (warm-up {r.warmup})  wall {r.wall_seconds:.2f} s",
    ]
    if r.faults:
        lines.append("faults " + " ".join(r.faults))
    impact = r.fault_impact
    if impact is not None:
        lines += _impact_lines(impact)
    if r.note:
        lines.append("NOTE: " + r.note)
    theory = r.theory or {}
    biased = set(impact["survivor_biased"]) if impact is not None else set()
    rows = []
    has_ci = False
    for name, sim in r.metrics.items():
        if name.endswith("_ci95"):
            continue
        ci = r.metrics.get(f"{name}_ci95")
        has_ci = has_ci or isinstance(ci, float)
        th = theory.get(name)
        if isinstance(sim, list) or isinstance(th, list):  # one row per entry: the table stays narrow
            sims, ths = sim if isinstance(sim, list) else [], th if isinstance(th, list) else []
            for i in range(max(len(sims), len(ths))):
                s_i, t_i = (sims[i] if i < len(sims) else None), (ths[i] if i < len(ths) else None)
                rows.append([f"{name}[{i}]", format_value(s_i), format_value(t_i) if name in theory else "", _rel(s_i, t_i)])
            continue
        sim_s = format_value(sim) + (f" ± {ci:.4f}" if isinstance(ci, float) else "")
        label = name + (" *" if name in biased else "")
        rows.append([label, sim_s, format_value(th) if name in theory else "", _rel(sim, th)])
    header = f"{theory_label} (fault-free)" if impact is not None else theory_label
    lines += [""] + table(rows, ["metric", "simulation", header, f"sim vs {theory_label}"])
    if has_ci:
        lines.append(CI_LEGEND)
    if biased:
        lines.append("* completed packets only: under faults these delays are survivor-biased")
    extra = [k for k in theory if k not in r.metrics and k != "series" and not isinstance(theory[k], (list, dict))]
    if extra:
        lines += ["", "theory only: " + "  ".join(f"{k}={format_value(theory[k])}" for k in extra)]
    if "series" in theory and r.series and columns:
        lines += ["", "per slot: simulation | prediction"]
        lines += _series_table(r.series, theory["series"], columns)
    inv = r.invariants
    verdict = "ok" if inv.get("ok") else "VIOLATED"
    if r.complete is False:  # a one-shot task cut short: judged on what was due so far
        at = (r.completion or {}).get("stopped_at_slot", r.slots_run - 1)
        verdict = f"{'ok so far' if inv.get('ok') else 'VIOLATED'}, incomplete at slot {at}"
    lines += ["", "invariants: " + verdict]
    for name, v in inv.items():
        if isinstance(v, dict) and name in _NESTED and isinstance(v.get(name), dict):
            lines += _NESTED[name](v)
        elif isinstance(v, dict):
            detail = "  ".join(f"{k}: {_brief(x)}" for k, x in v.items() if k != "ok")
            head = f"  {name}: {'ok' if v.get('ok') else 'VIOLATED'}  "
            lines += textwrap.wrap(detail, WIDTH, initial_indent=head, subsequent_indent=" " * 6,
                                   break_long_words=False, break_on_hyphens=False) or [head.rstrip()]
    st = r.stability
    lines.append(f"stable: {format_value(st.get('stable'))} ({st.get('reason', '')})")
    if r.verdict is not None:
        lines.append("verdict: " + ("ok" if r.verdict["ok"] else "FAIL: " + "; ".join(r.verdict["reasons"])))
    return "\n".join(lines)


def _property_lines(inv: dict[str, Any]) -> list[str]:
    """``invariants.properties``: a line per stated property, its first violation, the replay command."""
    lines = [f"  properties: {'ok' if inv.get('ok') else 'VIOLATED'}"]
    replay = None
    for name, row in inv["properties"].items():
        text = (f"    {name}: {'ok' if row.get('ok') else 'VIOLATED'} ({row.get('violations', 0)} violation(s) "
                f"in {row.get('checked', 0)} check(s))")
        first = row.get("first")
        if first:
            nodes = ",".join(map(str, first.get("nodes", []))) or "-"
            text += f"; first in slot {first['slot']} at node(s) {nodes}: {first['problem']}"
            replay = replay or first.get("replay")
        lines += textwrap.wrap(text, WIDTH, subsequent_indent=" " * 8, break_long_words=False, break_on_hyphens=False)
    if replay:
        lines.append(f"    replay: {replay}")
    return lines


def _choice_lines(inv: dict[str, Any]) -> list[str]:
    """``invariants.choices``: a line per declared random choice and its goodness-of-fit test."""
    lines = [f"  choices: {'ok' if inv.get('ok') else 'VIOLATED'}"]
    for name, row in inv["choices"].items():
        if row.get("problem"):
            how = row["problem"]
        elif row.get("judged"):
            how = f"chi-square {row['chi_square']:.4g} on {row['cells'] - 1} dof, p = {row['p_value']:.3g}"
        else:
            how = row.get("why", "not judged (a fault in the schedule)")
        text = f"    {name}: {'ok' if row.get('ok') else 'VIOLATED'}, {row['outcomes']} outcomes, {row['distribution']}: {how}"
        lines += textwrap.wrap(text, WIDTH, subsequent_indent=" " * 8, break_long_words=False, break_on_hyphens=False)
    return lines


#: invariants whose rows are shown one per line (a row per stated property or declared choice)
_NESTED = {"properties": _property_lines, "choices": _choice_lines}


def _impact_lines(impact: dict[str, Any]) -> list[str]:
    """What the faults cost, in a few lines (``fault_impact`` of the JSON has it all)."""
    books = impact.get("messages", {})
    parts = [f"{book} " + ", ".join(f"{c} {n}" for c, n in counts.items()) for book, counts in books.items()]
    detect = impact.get("detection", {}).get("delay_slots")
    lines = [f"fault impact (messages): {'; '.join(parts) or 'none touched'}"]
    avoidable = impact.get("avoidable") or {}
    if avoidable:
        lines.append("  lost on ports the sender already saw dead: " + ", ".join(f"{c} {n}" for c, n in avoidable.items()))
    for name, p in impact.get("packets", {}).items():
        lines.append(f"  {name}: " + ", ".join(f"{k.replace('_', ' ')} {format_value(v)}" for k, v in p.items()))
    verdict = impact.get("delivered_all_deliverable", {})
    lines.append(f"  delivered all the faults left deliverable: {format_value(verdict.get('ok'))} ({verdict.get('why', '')}); "
                 f"failure detection: {'never' if detect is None else f'{detect} slot(s)'}")
    return [w for line in lines for w in textwrap.wrap(line, WIDTH, subsequent_indent="    ", break_long_words=False,
                                                         break_on_hyphens=False)]


def _brief(v: Any) -> str:
    """An invariant's detail in a few words: lists of records are counted, not dumped."""
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (dict, list, tuple)):
        return f"{len(v)} (see --json)"
    if isinstance(v, (list, tuple, dict)) and not v:
        return "none"
    return format_value(v)


def format_series(r: Result) -> str:
    """Every per-slot value of a run (``--series``), one row per slot."""
    if not r.series:
        return "per slot: none kept (this scheme records no per-slot series)"
    keys = [k for k in r.series[0] if k != "slot"]
    rows = [[str(s.get("slot", i))] + [format_value(s.get(k)) for k in keys] for i, s in enumerate(r.series)]
    return "\n".join(["per slot:", *table(rows, ["slot", *keys])])


def format_per_node(r: Result) -> str:
    """Per-node statistics of a run (``--per-node``), one row per node."""
    if not r.per_node:
        return "per node: none (this scheme keeps no per-node statistics)"
    keys = list(r.per_node)
    n = max(len(v) for v in r.per_node.values())
    rows = [[str(v)] + [format_value(r.per_node[k][v]) if v < len(r.per_node[k]) else "-" for k in keys] for v in range(n)]
    return "\n".join(["per node:", *table(rows, ["node", *keys])])


def _series_table(sim: list[dict[str, Any]], pred: list[dict[str, Any]], columns: Sequence[Column]) -> list[str]:
    keys = [c.key for c in columns]
    short = [c.header for c in columns]
    rows = []
    for s in sim:
        t = s["slot"]
        p = pred[t] if t < len(pred) else {}
        rows.append([str(t + 1)] + [format_value(s.get(k)) for k in keys] + [format_value(p.get(k)) for k in keys])
    return table(rows, ["slot", *short, *(f"pred {k}" for k in short)])


def format_theory(scheme: str, topology: str, theory: dict[str, Any], columns: Sequence[Column] = ()) -> str:
    """``slotnet theory`` human output."""
    lines = [f"theory of {scheme} on {topology}"]
    rows = [[k, format_value(v)] for k, v in theory.items() if k != "series"]
    lines += [""] + table(rows, ["metric", "model"])
    if "series" in theory and columns:
        keys = [c.key for c in columns]
        rows = [[str(s.get("slot", i + 1)), format_value(s.get("v"))] + [format_value(s.get(k)) for k in keys]
                for i, s in enumerate(theory["series"])]
        lines += [""] + table(rows, ["slot", "v", *(c.header for c in columns)])
    return "\n".join(lines)
