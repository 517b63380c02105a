"""What a scheme declares to the orchestrator: node rule, parameters, load, metrics, theory.

A scheme package exposes ``SCHEMES``, a tuple of :class:`Scheme` records, and is found
by :mod:`slotnet.schemes` without any central edit (see ``_registry``). A scheme module
imports only :mod:`slotnet.nodes`, :mod:`slotnet.errors`, the kit
(:mod:`slotnet.schemes.kit`) and numerical libraries; the orchestrator reads the record
and does the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from slotnet.errors import SchemeError
from slotnet.nodes import Geometry, Node, NodeContext

from ._verdict import judge_gap

__all__ = [
    "CLAIM_KINDS",
    "Claim",
    "Column",
    "Experiment",
    "Load",
    "Param",
    "Reporter",
    "Row",
    "Runner",
    "Scheme",
    "SchemeError",
    "Setup",
    "parse_bool",
]


def parse_bool(text: str) -> bool:
    """``true``/``false`` (also yes/no, 1/0, on/off), case-insensitive.

    Example:
        >>> parse_bool("False"), parse_bool("yes")
        (False, True)
    """
    key = str(text).strip().lower()
    if key in ("true", "yes", "1", "on"):
        return True
    if key in ("false", "no", "0", "off"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


@dataclass(frozen=True)
class Param:
    """One ``--param name=value`` a scheme accepts.

    ``kind`` converts the CLI text; a value given through the Python API that is not a
    string is checked against ``choices`` (and converted from its string form when the
    parameter has no choices), so a wrongly typed value is refused before the run.
    """

    name: str
    kind: Callable[[str], Any]
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None

    def parse(self, value: Any) -> Any:
        """Convert and check a value given on the CLI (a string) or through the API.

        Whatever the converter raises for a value it cannot take (a ``TypeError``, an
        ``AttributeError`` for a tuple where text was expected, ...) becomes one
        :class:`SchemeError` naming the parameter, never an exception from inside it.

        Raises:
            SchemeError: naming the parameter and the bad value.
        """
        if isinstance(value, str) or (self.choices is None and self.kind is not str):
            parsed = self._convert(value)
        elif self.choices is None:
            raise SchemeError(f"{self._label(value)}: expected a string")
        else:
            parsed = value
        if self.choices is not None and not any(parsed == c and type(parsed) is type(c) for c in self.choices):
            raise SchemeError(f"{self._label(value)}: expected one of {', '.join(map(str, self.choices))}")
        return parsed

    def _label(self, value: Any) -> str:
        return f"--param {self.name}={value!r}"

    def _convert(self, value: Any) -> Any:
        try:
            return self.kind(value)
        except Exception as exc:  # any failure of the converter is a bad value
            why = str(exc) or type(exc).__name__
            if not isinstance(value, str) and isinstance(exc, (AttributeError, TypeError)):
                why = f"expected the text form (as on the command line), not a {type(value).__name__}: {why}"
            label = self._label(value)
            # a converter that names the parameter itself is not prefixed twice
            raise SchemeError(why if why.startswith(f"--param {self.name}=") else f"{label}: {why}") from None


@dataclass(frozen=True)
class Load:
    """One load flag a scheme accepts (``--NAME value``), with its meaning for this scheme."""

    name: str
    help: str
    metavar: str = "X"


@dataclass(frozen=True)
class Setup:
    """Everything static about a run that reporters and theory may read."""

    topology: Geometry
    params: Mapping[str, Any]
    load: Mapping[str, float]
    slots: int
    warmup: int
    seed: int
    #: fabric ticks per paper time unit (slots are ticks; 1 for slot-based schemes)
    quantum: int = 1
    #: keep per-slot values for ``Result.series`` (reporters keep only running sums otherwise)
    series: bool = False
    #: the run's fault schedule holds at least one fault (the kit's checks judge some
    #: things only in a fault-free run: a node that stops while messages come for it)
    faults: bool = False


class Reporter(Protocol):
    """Streaming metrics of one run (observer side; never seen by nodes).

    Reporters are built per run from the :class:`Setup`. The split that lets a run be
    spread over processes: nodes' events reach the reporter through :meth:`handlers`
    (accumulation, on the side that hosts the node); :meth:`end_slot` closes a slot
    after every shard's events of that slot are in; :meth:`metrics`, :meth:`invariants`,
    :meth:`per_node`, :meth:`series` finalise. :class:`slotnet.schemes.kit.BaseReporter`
    gives defaults for everything but :meth:`handlers` and :meth:`metrics`.

    Before :meth:`invariants` the orchestrator calls ``run_ended(slot, complete)`` on a
    reporter that has it (the kit's do): the run's last slot, and whether its task
    completed -- False only for a one-shot task cut short by its slot count, its safety
    cap or the stability monitor. Such a run is judged on what it owed by then: packets
    in flight, queued or waiting are accounted states, and a deadline (a theorem's
    window, a bound) counts only once it has passed
    (:meth:`slotnet.schemes.kit.BaseReporter.due`).

    A reporter may also have ``crash_losses(losses)``, called before :meth:`invariants`
    with ``(slot, node, packets)`` for each crash that destroyed packets a node held
    (``packets``: the node's :meth:`Node.held_packets` then), in slot and node order, the
    same in one process and over shards: the fault ledger books those packets by count
    only (``crash``), so a reporter that keeps books by kind of packet counts them here.
    """

    #: event kind -> names of the values the node records with it (the trace schema)
    events: Mapping[str, tuple[str, ...]]

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        """kind -> fn(node, slot, *values), called for every recorded event."""

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A fault destroyed ``message``."""

    def end_slot(self, slot: int) -> None:
        """Every node has finished ``slot`` (time averages, completions)."""

    def backlog(self) -> int:
        """Packets waiting in node queues now (drives the instability monitor)."""

    def holdings(self, per_node: Sequence[Any]) -> None:
        """Each node's :meth:`Node.held_packets` at the end, before :meth:`invariants`."""

    def metrics(self) -> dict[str, Any]:
        """Measured metrics over the warm-up-excluded window."""

    def per_node(self) -> dict[str, list[Any]]:
        """Per-node statistics, one list entry per node."""

    def series(self) -> list[dict[str, Any]]:
        """Per-slot values (may be empty)."""

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Scheme-specific invariants; each value a dict with at least ``ok``."""


#: What a theory value is to the run beside it (:class:`Claim`).
CLAIM_KINDS = ("exact", "approximation", "upper-bound", "lower-bound")


@dataclass(frozen=True)
class Claim:
    """What one value of a scheme's theory is, for the run's ``theory_agreement`` check.

    ``key`` names the value in the theory dict, ``metric`` the measured metric it stands
    beside. ``kind`` (:data:`CLAIM_KINDS`): ``exact`` -- the model is exact for the run
    (in steady state, the run's own noise aside): a measured value more than a few of
    the run's 95% half-widths from it fails the check; ``upper-bound``/``lower-bound`` --
    a theorem's bound: a measured value beyond it by more than that fails; and
    ``approximation`` -- a model with a known ``error`` (absolute, at the run's size):
    reported, with whether the gap lies within that error, never failed on. ``why``: one
    line naming the section, equation or derivation.

    ``horizon``: for a steady-state model, its time scale in slots (e.g. the mean delay
    it predicts). A run measures the steady state only once its start is forgotten and
    few of its packets are cut off by its end: an ``exact`` value (or a bound on a
    steady-state mean) is judged only when the run's warm-up is at least
    ``2 * horizon`` and its measured window at least ``50 * horizon`` slots. 0: the
    value holds for any run (a one-shot task's bound).
    """

    key: str
    metric: str
    kind: str
    error: float = 0.0
    why: str = ""
    horizon: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in CLAIM_KINDS:
            raise SchemeError(f"theory claim {self.key!r}: kind must be one of {', '.join(CLAIM_KINDS)}, "
                              f"not {self.kind!r}")


@dataclass(frozen=True)
class Column:
    """A per-slot series column shown in the human report: metric key and short header."""

    key: str
    header: str


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


@dataclass(frozen=True)
class Scheme:
    """A scheme: its node rule and everything the orchestrator needs to run and report it."""

    name: str
    summary: str
    source: str
    node: Callable[[NodeContext], Node]
    reporter: Callable[[Setup], Reporter]
    #: (topology, params, load) -> the node parameters every node's ``ctx.params`` holds
    prepare: Callable[[Any, dict[str, Any], dict[str, float]], dict[str, Any]]
    theory: Callable[[Setup], dict[str, Any]] | None = None
    params: tuple[Param, ...] = ()
    loads: tuple[Load, ...] = ()
    topologies: tuple[str, ...] = ("hypercube",)
    #: (topology, node params) -> queued packets per node past which a run is surely
    #: unstable; None: the orchestrator's default (1000)
    max_backlog: Callable[[Any, Mapping[str, Any]], float] | None = None
    #: per-slot series columns for the human report (simulation beside theory's "series")
    columns: tuple[Column, ...] = ()
    #: the heading of the run report's column of values beside the simulation: "theory"
    #: (the paper's formulas and bounds), or e.g. "reference run" where those values come
    #: from executing the paper's algorithm centrally, not from a formula
    theory_label: str = "theory"
    #: node params -> fabric ticks per paper time unit (durations of t_p or 1/d); None: 1
    quantum: Callable[[Mapping[str, Any]], int] | None = None
    #: "slots": run the given slots; "quiescent": a one-shot task, run until nothing is left
    #: to do (a run cut short before that is incomplete, not violated; see :class:`Reporter`)
    until: str = "slots"
    #: a one-shot task's safety cap: (topology, node params) -> the most slots (fabric ticks)
    #: a run given no slot count may take, derived from the scheme's own bound (e.g. a few
    #: times its theorem's completion time); the run stops there, reported incomplete, only
    #: if the task has not completed. None: the orchestrator's default cap
    max_slots: Callable[[Any, Mapping[str, Any]], int] | None = None
    #: the fault kinds (names of ``slotnet.fabric.FAULT_KINDS``: ``loss``, ``dup``,
    #: ``delay``, ``corrupt``, ``partition``, ``stall``, ``link-down``/``link-up``,
    #: ``crash``/``recover``) the scheme can run under and still report what they cost;
    #: None: every kind. A run whose schedule holds another kind is refused before its
    #: first slot (SpecError naming the scheme, the kind and :attr:`faults_why`), never
    #: left to fail inside a node rule.
    faults: frozenset[str] | None = None
    #: why the kinds left out of :attr:`faults` are refused (one line, citing the paper
    #: section whose schedule assumption they break)
    faults_why: str = ""
    #: nodes are bufferless for packets in transit (hot-potato, e.g. deflection routing):
    #: every such packet leaves its node each slot. A send on a port the node sees dead is
    #: then forced, not avoidable, when every port it sees alive is busy that slot. Other
    #: schemes could always hold a packet back, so every loss on a port seen dead counts
    #: as avoidable.
    must_forward: bool = False
    #: the packets the validator follows from send to send: ``follow(message)`` gives the
    #: identity ``(source, seq)`` of a packet the scheme routes hop by hop (the names its
    #: delivery event uses), or None for a message that is not one (a control message, a
    #: broadcast copy). When set, the orchestrator -- not the node -- reports every send
    #: of such a packet to the reporter as a ``hop(port, source, seq)`` event
    #: (:data:`slotnet.schemes.kit.HOP_EVENTS`), which the reporter must handle; the
    #: kit's :class:`~slotnet.schemes.kit.HopWitness` counts them and checks them against
    #: the hops the node reports at delivery. None: nothing is followed.
    follow: Callable[[Any], tuple[int, int] | None] | None = None
    #: (setup, theory dict) -> what each theory value is (:class:`Claim`): exact, a bound or
    #: an approximation with its known error. The run's ``theory_agreement`` judges the
    #: exact values and the bounds against the measured metrics; theory values no claim
    #: names are listed as ``undeclared``. None: nothing declared.
    claims: Callable[[Setup, Mapping[str, Any]], Sequence[Claim]] | None = None

    def param(self, name: str) -> Param:
        """The parameter called ``name``.

        Raises:
            SchemeError: listing the known parameters.
        """
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise SchemeError(f"scheme {self.name!r} has no parameter {name!r} (known: {known})")

    @property
    def load_names(self) -> tuple[str, ...]:
        return tuple(ld.name for ld in self.loads)

    def refuses_fault(self, kind: str) -> str | None:
        """Why the scheme cannot run under fault kind ``kind``; None if it can.

        Example:
            >>> s = Scheme("x", "", "", print, print, print, faults=frozenset({"crash", "recover"}), faults_why="fixed steps")
            >>> s.refuses_fault("crash"), s.refuses_fault("loss")
            (None, 'fixed steps')
        """
        if self.faults is None or kind in self.faults:
            return None
        return self.faults_why or "the scheme does not declare this fault kind supported"
