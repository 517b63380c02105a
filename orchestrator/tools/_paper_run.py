"""One paper's reproduction as a report shows it: its rows, runs and figures, the commands
that rerun them, and the verdict words the rows are counted by."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from slotnet.schemes import EXPERIMENTS, Row

__all__ = ["PAPER_OPTIONS", "VERDICTS", "PaperRun", "repro_command", "run_command", "verdict_counts", "verdict_word"]

#: The generic repro options a single paper may pass on (``repro all`` takes none of them).
PAPER_OPTIONS = ("sweep_d", "sweep_rho", "sweep_only", "dims")


@dataclass
class PaperRun:
    """One paper's reproduction as the report shows it."""

    paper: str
    seed: int
    quick: bool
    #: the experiment's extra options (``sweep_d`` ...), as given
    options: dict[str, Any] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    wall_s: float = 0.0
    #: why the reproduction failed ("" if it did not); its rows are those computed before
    error: str = ""
    #: (title, PNG bytes) of the figures the experiment drew itself
    figures: list[tuple[str, bytes]] = field(default_factory=list)
    #: (request, run wall seconds, taken from the cache) of every run, in finishing order
    runs: list[tuple[dict[str, Any], float, bool]] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The paper's name, with its options when it has some (a report may run one paper twice)."""
        if not self.options:
            return self.paper
        return self.paper + " " + repro_command(self.paper, self.seed, False, self.options).split(f" --seed {self.seed}", 1)[1].strip()

    @property
    def citation(self) -> str:
        """The paper for a reader (authors, year, title: its experiment's ``citation``), else its name."""
        exp = EXPERIMENTS.get(self.paper)
        return getattr(exp, "citation", "") or self.paper

    @property
    def title(self) -> str:
        """:attr:`citation`, with the options when it has some (the title of its section)."""
        options = self.label[len(self.paper):].strip()
        return self.citation + (f" ({options})" if options else "")

    @property
    def command(self) -> str:
        """The command that reruns this paper's rows."""
        return repro_command(self.paper, self.seed, self.quick, self.options)

    @property
    def cached(self) -> int:
        return sum(1 for _, _, hit in self.runs if hit)


def repro_command(paper: str, seed: int, quick: bool, options: Mapping[str, Any]) -> str:
    """``slotnet repro PAPER [--quick] --seed S [options]``.

    Example:
        >>> repro_command("stamoulis", 1, True, {"sweep_d": 6, "sweep_rho": [0.1, 0.2]})
        'slotnet repro stamoulis --quick --seed 1 --sweep-d 6 --sweep-rho 0.1,0.2'
        >>> repro_command("stamoulis", 0, False, {"sweep_d": 0})
        'slotnet repro stamoulis --seed 0 --sweep-d 0'
    """
    parts = ["slotnet", "repro", paper] + (["--quick"] if quick else []) + ["--seed", str(seed)]
    for key in PAPER_OPTIONS:
        value = options.get(key)
        if value is None or value is False:  # not `in (None, False)`: 0 == False, and an option of 0 is kept
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif isinstance(value, (list, tuple)):
            parts += [flag, ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)]
        else:
            parts += [flag, str(value)]
    return " ".join(shlex.quote(p) for p in parts)


def run_command(request: Mapping[str, Any]) -> str:
    """The ``slotnet run`` command of one run request (a mapping of RunSpec fields).

    Example:
        >>> run_command(dict(scheme="deflection", topology="hypercube:6", load={"offered": 0.2}, slots=1100,
        ...                  warmup=100, seed=1))
        'slotnet run deflection --topology hypercube:6 --offered 0.2 --slots 1100 --warmup 100 --seed 1'
    """
    parts = ["slotnet", "run", str(request["scheme"]), "--topology", str(request["topology"])]
    for k, v in dict(request.get("params") or {}).items():
        parts += ["--param", f"{k}={v}"]
    for k, v in dict(request.get("load") or {}).items():
        parts += [f"--{k}", repr(float(v)) if not float(v).is_integer() else f"{float(v):g}"]
    parts += ["--slots", str(request.get("slots", 1000)), "--warmup", str(request.get("warmup", 0)),
              "--seed", str(request.get("seed", 0))]
    faults = request.get("faults") or []
    for f in faults.to_list() if hasattr(faults, "to_list") else ([faults] if isinstance(faults, str) else faults):
        parts += ["--fault", str(f)]
    if request.get("max_backlog_per_node") is not None:
        parts += ["--max-backlog", f"{request['max_backlog_per_node']:g}"]
    if request.get("series"):
        parts.append("--series")
    if request.get("shards", 1) != 1:
        parts += ["--shards", str(request["shards"])]
    return " ".join(shlex.quote(p) for p in parts)



#: The verdict words, in the order the report counts them.
VERDICTS = (Row.WITHIN, Row.KNOWN, Row.OUTSIDE, Row.NOT_RUN, Row.UNJUDGED)


def verdict_word(row: Row) -> str:
    """The first word of :meth:`Row.verdict` (one of :data:`VERDICTS`)."""
    v = row.verdict()
    for word in VERDICTS:
        if v == word or v.startswith(word + ":"):
            return word
    return v


def verdict_counts(rows: Sequence[Row]) -> dict[str, int]:
    """Rows per verdict word, every word of :data:`VERDICTS` present."""
    counts = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        counts[verdict_word(row)] = counts.get(verdict_word(row), 0) + 1
    return counts
