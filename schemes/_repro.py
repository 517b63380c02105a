"""What a scheme package brings to ``slotnet repro``: its experiments and their rows.

An :class:`Experiment` (a package's ``EXPERIMENTS``) runs a paper's reproduction through a
:data:`Runner` the orchestrator supplies and returns :class:`Row` records, each a compared
quantity (the paper's value, the simulation, the theory) that :meth:`Row.verdict` judges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ._verdict import judge_gap

__all__ = ["Experiment", "Row", "Runner", "relative"]


@dataclass
class Row:
    """One compared quantity of a reproduction: the paper's value, the simulation, the theory.

    :meth:`verdict` judges the row. The simulation agrees with a reference (the paper's
    value, the theory) when they differ by at most ``√2·ci95`` (the reference may itself
    be a simulation with its own noise; ``ci95`` is the 95% half-width), plus the row's
    ``tolerance`` — by default the paper's own agreement, |paper − theory|, when the row
    has both — plus half a printed digit (5e-5). A model row (no simulation) agrees when
    theory and paper differ by at most the tolerance plus half a printed digit. A
    simulation without an interval (one transient run) and no stated tolerance is not
    judged (``-``).
    """

    experiment: str
    case: str
    metric: str
    paper: float | None
    sim: float | None
    ci95: float | None
    theory: float | None
    #: why a known disagreement is expected (a documented paper slip or model difference),
    #: or why the row was not run
    note: str = ""
    #: the agreement the paper itself shows for this quantity; None: |paper − theory|
    tolerance: float | None = None

    #: :meth:`verdict`'s first word for each outcome
    WITHIN: ClassVar[str] = "within"
    KNOWN: ClassVar[str] = "known"
    OUTSIDE: ClassVar[str] = "OUTSIDE"
    NOT_RUN: ClassVar[str] = "not run"
    UNJUDGED: ClassVar[str] = "-"

    def allowed(self) -> float:
        """The largest difference from a reference still within the paper's agreement."""
        tol = self.tolerance
        if tol is None:
            tol = abs(self.paper - self.theory) if self.paper is not None and self.theory is not None else 0.0
        ci = self.ci95 if isinstance(self.ci95, float) and math.isfinite(self.ci95) else 0.0
        return tol + math.sqrt(2.0) * ci + 5e-5

    def verdict(self) -> str:
        """``within``, ``known: <note>``, ``OUTSIDE: <by how much>``, ``not run: <why>`` or ``-``.

        Example:
            >>> Row("T", "v=1", "mean_delay", 4.0, 4.02, 0.05, 4.01).verdict()
            'within'
            >>> from slotnet.schemes._verdict import Explanation
            >>> Row("T", "d=6", "D", None, 26.0, 0.1, 27.5, note=Explanation("Prop. 5 counts 3 slots for one", corrected=26.0)).verdict()
            'known: Prop. 5 counts 3 slots for one'
        """
        if self.sim is None and self.theory is None:
            return f"{self.NOT_RUN}: {self.note}" if self.note else self.UNJUDGED
        if self.sim is None:  # a model row: theory against the paper's printed value
            pairs = [("paper", self.theory, self.paper)]
        else:
            pairs = [("paper", self.sim, self.paper), ("theory", self.sim, self.theory)]
        pairs = [(name, a, b) for name, a, b in pairs if a is not None and b is not None and math.isfinite(b)]
        if not pairs or (self.sim is not None and self.ci95 is None and self.tolerance is None):
            return self.UNJUDGED  # nothing to compare with, or no interval to judge a simulation by
        allowed = self.allowed() if self.sim is not None else (self.tolerance or 0.0) + 5e-5
        worst = max(pairs, key=lambda p: abs(p[1] - p[2]))  # type: ignore[operator]
        off = abs(worst[1] - worst[2])  # type: ignore[operator]
        if off <= allowed:
            return self.WITHIN
        return judge_gap(self, worst[0], off, allowed)  # known only where the note's explanation accounts for the gap

    def as_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment, "case": self.case, "metric": self.metric, "paper": self.paper,
            "simulation": self.sim, "ci95": self.ci95, "theory": self.theory,
            "sim_vs_paper": relative(self.sim, self.paper), "sim_vs_theory": relative(self.sim, self.theory),
            "theory_vs_paper": relative(self.theory, self.paper), "note": self.note, "verdict": self.verdict(),
        }


def relative(a: float | None, b: float | None) -> float | None:
    """(a − b)/|b|, or None when either is missing or b is 0."""
    if a is None or b is None or b == 0 or isinstance(a, bool):
        return None
    return (a - b) / abs(b)


#: Runs a batch of run requests (dicts of RunSpec fields) and returns, per request, its
#: metrics plus ``_theory``, ``_series`` and ``_ok``. Supplied by the orchestrator.
Runner = Callable[[Sequence[Mapping[str, Any]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Experiment:
    """A ``slotnet repro PAPER`` reproduction a scheme package brings (its ``EXPERIMENTS``).

    ``run(runner, seed=..., quick=..., **options)`` returns the rows; ``options`` are the
    generic repro flags (``sweep_d``, ``sweep_rho``, ``sweep_only``, ``plot``) that the
    experiment may use or refuse with a :class:`SchemeError`.
    """

    paper: str
    doc: str
    run: Callable[..., list[Row]]
    #: what ``repro all --html`` adds to the default reproduction: the options of one more
    #: pass, (``--quick``, full), for figures the default leaves out (a sweep, a column)
    report_pass: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None
    #: ``(quick, options) -> seconds``: the wall time a pass is expected to take with two
    #: workers (a measurement or a cost model, see each experiment), None where unknown;
    #: the report's progress uses it for a pass it has never timed
    estimate: Callable[[bool, Mapping[str, Any]], float | None] | None = None
    #: the paper, for a reader: authors, year (where known), title
    citation: str = ""
    #: what the paper claims that the reproduction checks, one sentence each, in the reader's words
    claims: tuple[str, ...] = ()
