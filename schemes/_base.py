"""What a scheme declares to the orchestrator: node rule, parameters, load, metrics, theory.

A scheme package exposes ``SCHEMES``, a tuple of :class:`Scheme` records, and is found
by :mod:`slotnet.schemes` without any central edit (see ``_registry``). A scheme module
imports only :mod:`slotnet.nodes`, :mod:`slotnet.errors`, the kit
(:mod:`slotnet.schemes.kit`) and numerical libraries; the orchestrator reads the record
and does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

from slotnet.errors import SchemeError
from slotnet.nodes import Geometry, Node, NodeContext

#: A scheme whose ``topologies`` hold this runs on every kind, built-in or not.
ANY_TOPOLOGY = "any"

__all__ = [
    "ANY_TOPOLOGY",
    "CLAIM_KINDS",
    "HOP_EVENT",
    "Claim",
    "Column",
    "Inputs",
    "Load",
    "PacketBook",
    "Param",
    "Reporter",
    "Scheme",
    "SchemeError",
    "Setup",
    "ShardMerging",
    "parse_bool",
]

#: The event the orchestrator reports, for a scheme that declares :attr:`Scheme.follow`,
#: at every send of a followed packet: ``hop(port, source, seq)`` (the kit's
#: :data:`~slotnet.schemes.kit.HOP_EVENTS` gives its fields).
HOP_EVENT = "hop"
#: the values of a :data:`HOP_EVENT`
HOP_FIELDS = ("port", "source", "seq")

#: a family's typed node parameters (a frozen, slotted dataclass; a mapping for a scheme
#: that keeps them by name)
P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Inputs(Generic[P]):
    """What a scheme's ``prepare`` returns: every node's parameters and the run's time quantum.

    ``params`` is what each node reads as ``ctx.params`` and reporters and theory as
    ``setup.params``: the family's own frozen dataclass (its ``_inputs.py``), so that every
    read is an attribute mypy checks, or a mapping for a scheme of the user's own.
    ``quantum``: fabric ticks per paper time unit (durations of t_p or 1/d), 1 for a
    slot-based scheme; the nodes see it as ``ctx.quantum``, reporters and theory as
    ``setup.quantum``.

    Example:
        >>> Inputs({"k": 1}).quantum, Inputs({"k": 1}, quantum=8).quantum
        (1, 8)
    """

    params: P
    quantum: int = 1


@dataclass(frozen=True, slots=True)
class PacketBook:
    """An invariant of a reporter that keeps the books of the scheme's packets.

    A fault run's ``fault_impact.packets`` reads these books (and only these), one entry
    each: ``kind`` ``"broadcast"``: the invariant holds ``broadcasts`` and ``completed``
    (``missed``: lost to faults, ``in_progress``); ``"unicast"``: it holds ``delivered`` and
    ``created`` (or ``born``), with ``dropped`` (or ``lost``) by cause, ``in_flight``,
    ``held``, and where it counts them ``dup_copies`` and ``second_deliveries``.
    """

    invariant: str
    kind: Literal["broadcast", "unicast"]


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
    #: the ``params`` of the scheme's :class:`Inputs` (its family's typed record)
    params: Any
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
    :meth:`per_node`, :meth:`series` finalise.

    How to extend: subclass :class:`slotnet.schemes.kit.BaseReporter`, which gives
    defaults for every member but :meth:`handlers` and :meth:`metrics`, set ``events``
    and override what means something for the scheme. At the end of a run the
    orchestrator always calls, in this order, :meth:`run_ended`, :meth:`holdings`,
    :meth:`crash_losses`, :meth:`invariants`, :meth:`metrics`; a fault run's
    ``fault_impact`` then reads the invariants :meth:`packet_books` names.

    In a sharded run the coordinator's reporter takes every event, replayed in node order
    after each slot: a serial step on the path of every event. A reporter whose state
    merges across shards says so (``merges_shards = True``, with the methods of
    :class:`ShardMerging`); each shard then runs one of its own on the shard's nodes.
    """

    @property
    def events(self) -> Mapping[str, tuple[str, ...]]:
        """Event kind -> names of the values the node records with it (the trace schema).
        Read only: a class attribute ``events = {...}`` (a dict) is one."""

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        """kind -> fn(node, slot, *values), called for every recorded event."""

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A fault destroyed ``message``."""

    def end_slot(self, slot: int) -> None:
        """Every node has finished ``slot`` (time averages, completions)."""

    def backlog(self) -> int:
        """Packets waiting in node queues now (drives the instability monitor)."""

    def run_ended(self, slot: int, complete: bool) -> None:
        """The run's last slot, and whether its task completed -- False only for a one-shot
        task cut short by its slot count, its safety cap or the stability monitor. Such a
        run is judged on what it owed by then: packets in flight, queued or waiting are
        accounted states, and a deadline (a theorem's window, a bound) counts only once it
        has passed (:meth:`slotnet.schemes.kit.BaseReporter.due`)."""

    def holdings(self, per_node: Sequence[Any]) -> None:
        """Each node's :meth:`Node.held_packets` at the end, before :meth:`invariants`."""

    def crash_losses(self, losses: Sequence[tuple[int, int, Sequence[Any]]]) -> None:
        """``(slot, node, packets)`` for each crash that destroyed packets a node held
        (``packets``: the node's :meth:`Node.held_packets` then), in slot and node order, the
        same in one process and over shards: the fault ledger books those packets by count
        only (``crash``), so a reporter that keeps books by kind of packet counts them here."""

    def packet_books(self) -> Sequence[PacketBook]:
        """The invariants that keep the books of the scheme's packets (:class:`PacketBook`)."""

    def metrics(self) -> dict[str, Any]:
        """Measured metrics over the warm-up-excluded window."""

    def per_node(self) -> dict[str, list[Any]]:
        """Per-node statistics, one list entry per node."""

    def series(self) -> list[dict[str, Any]]:
        """Per-slot values (may be empty)."""

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Scheme-specific invariants; each value a dict with at least ``ok``."""


class ShardMerging(Protocol):
    """What a :class:`Reporter` adds whose state merges across shards (optional).

    A reporter class that sets ``merges_shards = True`` (in its own class body: a subclass
    does not inherit the declaration, since state it adds would not be merged) and has the
    four methods below is run, in a sharded run, as one process runs it, once per shard:
    each shard builds one from the same :class:`Setup`, and its :meth:`Reporter.handlers`
    and :meth:`Reporter.on_lost` take the events of the shard's own nodes as they happen.
    No event crosses to the coordinator (a trace still gets the events it asks for). Per
    slot, each shard's reporter hands over a small summary (:meth:`shard_slot`); the
    coordinator's instance, which sees no event, adds the shards' summaries up
    (:meth:`merge_slot`) and then closes the slot with its ordinary :meth:`Reporter.end_slot`
    and :meth:`Reporter.backlog` (the stability monitor and the progress line read it).
    After the last slot each shard hands over its whole state (:meth:`shard_state`), which
    the coordinator merges (:meth:`merge_shards`) before the end of the run
    (:meth:`Reporter.run_ended` onwards) is asked of it.

    The result must be the one-process result, bit for bit, however the nodes are split:
    keep integer counts (or exact sums) where a shard's part is summed, and where a
    floating-point figure accumulates over events, ship what it needs so that the
    coordinator adds it in the one-process order. A violation book keeps its first by a
    fixed order (:class:`slotnet.schemes.kit.Book`), so books merge exactly. What crosses
    is msgpack data: tuples and lists arrive as tuples, integers beyond 64 bits do not
    travel as such (:func:`slotnet.schemes.kit.int_to_wire`).

    A reporter whose shard must keep its books otherwise than one process does (the kit's
    broadcast reporter keeps every packet's books open on a shard: its other receivers are
    other shards') may also have ``shard_start(nodes)``, optional: a shard calls it with
    the ``range`` of nodes it hosts, before :meth:`Reporter.handlers` and any event.

    The coordinator replays every event instead (the default, which every reporter keeps
    working with) when the reporter does not declare it, when the scheme states
    properties (a property judges a slot's events together), or when a one-shot run may
    end in a deadlock (whose report names each node's last event).
    """

    merges_shards: bool

    def shard_slot(self, slot: int) -> Any:
        """At a shard, every event of its nodes in ``slot`` in: close the shard's side of the
        slot (what :meth:`Reporter.end_slot` does per node) and return the slot's summary,
        msgpack-able and small (no per-event data it can avoid)."""

    def merge_slot(self, slot: int, summaries: Sequence[Any]) -> None:
        """At the coordinator, before its :meth:`Reporter.end_slot`: every shard's
        :meth:`shard_slot` of ``slot``, in shard order."""

    def shard_state(self) -> Any:
        """At a shard after its last slot: everything the run's end reads, as msgpack-able data."""

    def merge_shards(self, states: Sequence[Any]) -> None:
        """At the coordinator after its last slot: every shard's :meth:`shard_state`, in shard
        order, added to what the summaries gave."""


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


@dataclass(frozen=True)
class Scheme:
    """A scheme: its node rule and everything the orchestrator needs to run and report it.

    How to extend: a scheme package's ``SCHEMES`` holds these records. ``prepare`` turns
    the parsed ``--param`` values into an :class:`Inputs` (the family's typed node
    parameters and the time quantum); ``node`` builds each node's rule from its
    :class:`~slotnet.nodes.NodeContext`; ``reporter`` builds the run's
    :class:`Reporter`. The rest is optional and read by the orchestrator only.
    """

    name: str
    summary: str
    source: str
    node: Callable[[NodeContext], Node]
    reporter: Callable[[Setup], Reporter]
    #: (topology, params, load) -> :class:`Inputs`: the node parameters every node's
    #: ``ctx.params`` holds, and the time quantum. A plain mapping is taken as
    #: ``Inputs(mapping)`` (quantum 1), for a scheme of the user's own
    prepare: Callable[[Any, dict[str, Any], dict[str, float]], Inputs[Any] | Mapping[str, Any]]
    theory: Callable[[Setup], dict[str, Any]] | None = None
    params: tuple[Param, ...] = ()
    loads: tuple[Load, ...] = ()
    #: the topology kinds it runs on (``hypercube``, ``torus``, ``mesh``, ``ring``, ``graph``,
    #: ``anynet``), or ``("any",)`` (:data:`ANY_TOPOLOGY`): every kind
    topologies: tuple[str, ...] = ("hypercube",)
    #: (topology, node params) -> queued packets per node past which a run is surely
    #: unstable; None: the orchestrator's default (1000)
    max_backlog: Callable[[Any, Any], float] | None = None
    #: per-slot series columns for the human report (simulation beside theory's "series")
    columns: tuple[Column, ...] = ()
    #: the heading of the run report's column of values beside the simulation: "theory"
    #: (the paper's formulas and bounds), or e.g. "reference run" where those values come
    #: from executing the paper's algorithm centrally, not from a formula
    theory_label: str = "theory"
    #: "slots": run the given slots; "quiescent": a one-shot task, run until nothing is left
    #: to do (a run cut short before that is incomplete, not violated; see :class:`Reporter`)
    until: str = "slots"
    #: a one-shot task's safety cap: (topology, :class:`Inputs`) -> the most slots (fabric ticks)
    #: a run given no slot count may take, derived from the scheme's own bound (e.g. a few
    #: times its theorem's completion time); the run stops there, reported incomplete, only
    #: if the task has not completed. None: the orchestrator's default cap
    max_slots: Callable[[Any, Inputs[Any]], int] | None = None
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
    #: of such a packet to the reporter as a :data:`HOP_EVENT` ``(port, source, seq)``
    #: (:data:`slotnet.schemes.kit.HOP_EVENTS`), which the reporter must handle; the
    #: kit's :class:`~slotnet.schemes.kit.HopWitness` counts them and checks them against
    #: the hops the node reports at delivery. None: nothing is followed.
    follow: Callable[[Any], tuple[int, int] | None] | None = None
    #: (setup, theory dict) -> what each theory value is (:class:`Claim`): exact, a bound or
    #: an approximation with its known error. The run's ``theory_agreement`` judges the
    #: exact values and the bounds against the measured metrics; theory values no claim
    #: names are listed as ``undeclared``. None: nothing declared.
    claims: Callable[[Setup, Mapping[str, Any]], Sequence[Claim]] | None = None
    #: setup -> what *correct* means for the scheme, judged by the observer from what it sees
    #: (:mod:`slotnet.schemes.kit.properties`: safety properties at every slot close, properties
    #: at the end, message properties over its own record of every send). Each is an invariant
    #: of the run (``invariants.properties``). None: nothing stated.
    properties: Callable[[Setup], Sequence[Any]] | None = None
    #: setup -> the distribution of each random choice the nodes record with
    #: ``ctx.record_choice(name, value)`` (:mod:`slotnet.schemes.kit.choices`); a fault-free run
    #: with enough outcomes tests each with a chi-square test (``invariants.choices``).
    choices: Callable[[Setup], Mapping[str, Any]] | None = None
    #: the node rule is symmetric: it treats every node and port alike up to the topology's
    #: automorphisms (no rule keyed to a node id, a coordinate or a port number beyond what an
    #: automorphism maps), and so does everything the scheme's ``prepare`` gives the nodes.
    #: ``slotnet check`` then runs one fault schedule of each class of schedules the
    #: topology's symmetries map onto each other (see :mod:`slotnet.orchestrator.tools._symmetry`).
    symmetric: bool = False
    #: a one-shot task's completion predicate, asked with the run's reporter when the run
    #: goes quiet (no node awake or due, nothing in flight) with live nodes still waiting:
    #: True, the task is complete although those nodes wait (a rule whose nodes park idle
    #: once their part is done, e.g. :func:`slotnet.schemes.kit.parked_when_done`; the
    #: reporter's invariants then judge whether the work was done); False, a deadlock.
    #: None: a one-shot task is complete only when every live node has returned from
    #: ``run()``, and a run that goes quiet with nodes still waiting is a deadlock.
    done: Callable[[Any], bool] | None = None
    #: event kind -> the names of the values a node records with it: the trace schema the
    #: run's events are checked and written by. None: the ``events`` of :attr:`reporter`
    #: (a reporter class's attribute), with :data:`HOP_EVENT` added where :attr:`follow`
    #: is set -- filled in when the record is made, so the field is never None after.
    events: Mapping[str, tuple[str, ...]] | None = None

    def __post_init__(self) -> None:
        if self.events is None:
            declared = getattr(self.reporter, "events", None)
            events = dict(declared) if isinstance(declared, Mapping) else {}
            if self.follow is not None and HOP_EVENT not in events:
                events[HOP_EVENT] = HOP_FIELDS
            object.__setattr__(self, "events", events)

    @property
    def trace_events(self) -> Mapping[str, tuple[str, ...]]:
        """:attr:`events`, never None."""
        return self.events or {}

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
