"""Run specs: what to run, validated before anything reaches the slot loop."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, overload

from slotnet.errors import FabricError, SchemeError, SpecError
from slotnet.fabric import FaultSchedule, ShardMap, SlotClock, Topology, Transport, parse_topology
from slotnet.nodes.runtime import DEFAULT_RNG, RNG_KINDS
from slotnet.schemes import ANY_TOPOLOGY, Inputs, Scheme, Setup, get_scheme

from ._memory import check_fits

__all__ = ["Prepared", "RunSpec", "SpecError", "TraceSpec", "TransportFactory", "TRACE_DRIVER_EVENTS", "check_fault_support"]

#: Trace events every run can write besides its scheme's own: the node context's
#: ``sent``/``received`` and the driver's ``lost``/``fault``.
TRACE_DRIVER_EVENTS = ("sent", "received", "lost", "fault")

#: Queued packets per node past which a run is stopped as unstable, unless the scheme says more.
DEFAULT_MAX_BACKLOG = 1000.0

#: Slots of a run given no slot count; for a one-shot task, the least its safety cap allows
#: (and the cap of a scheme that declares none), so that no run that completed within the
#: former default is cut short now.
DEFAULT_SLOTS = 1000

#: Seconds a node may hold the run in one step before the watchdog ends it (``RunSpec.node_timeout``).
DEFAULT_NODE_TIMEOUT = 10.0

#: Builds the transport of a run: (prepared spec, clock, on_lost callback) -> Transport.
TransportFactory = Callable[["Prepared", SlotClock, Callable[..., None]], Transport]


@dataclass(frozen=True)
class TraceSpec:
    """Which events to write as JSON lines: chosen nodes, a slot window, event kinds."""

    path: str
    nodes: frozenset[int] | None = None
    slots: tuple[int, int] | None = None  # [first, last) slots
    kinds: frozenset[str] | None = None
    #: called with one line when writing the trace fails mid-run (the run goes on without
    #: its trace); None: a ``RuntimeWarning``. A path that cannot be written at all is
    #: refused before the first slot (SpecError).
    on_error: Callable[[str], None] | None = field(default=None, compare=False)


_In = TypeVar("_In")
_Kept = TypeVar("_Kept")


class _Taken(Generic[_In, _Kept]):
    """A :class:`RunSpec` field that takes more than it keeps: ``RunSpec(...)`` (and
    ``dataclasses.replace``) accept an ``_In``, which ``convert`` turns into the ``_Kept``
    the field then reads. A dataclass field whose type is a descriptor takes its
    ``__set__``'s type in ``__init__``, so a type checker accepts ``faults=["crash@3:1"]``
    and still reads ``spec.faults`` as a :class:`FaultSchedule`. ``default`` is what
    ``__init__`` gets when the field is not given (it is converted too)."""

    def __init__(self, default: _In, convert: Callable[[_In], _Kept]) -> None:
        self._default = default
        self._convert = convert
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _In: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _Kept: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _In | _Kept:
        if obj is None:  # the class's: dataclass reads the field's default here
            return self._default
        kept: _Kept = obj.__dict__[self._name]
        return kept

    def __set__(self, obj: object, value: _In) -> None:
        obj.__dict__[self._name] = self._convert(value)


def _topology_spec(topology: str | Topology) -> str:
    """A Topology built in Python is kept as its spec, which rebuilds it (on shards too)."""
    return topology.spec if isinstance(topology, Topology) else topology


def _schedule(faults: FaultSchedule | Sequence[str] | str | None) -> FaultSchedule:
    """The CLI syntax (a string, or a list or tuple of strings) parsed; None: no fault.
    Anything else is kept as given, and refused by :meth:`RunSpec.prepare`.

    Raises:
        FaultSpecError: naming a malformed entry.
    """
    if faults is None:
        return FaultSchedule()
    if isinstance(faults, str) or (isinstance(faults, (list, tuple)) and all(isinstance(x, str) for x in faults)):
        return FaultSchedule.parse(faults)
    kept: Any = faults
    return kept


@dataclass(frozen=True)
class RunSpec:
    """A complete, reproducible description of one run.

    Example:
        >>> spec = RunSpec("deflection", "hypercube:6", load={"offered": 1.0}, slots=200, warmup=20, seed=1)
        >>> spec.prepare().topology.n_nodes
        64
    """

    #: the scheme's registered name (``slotnet schemes`` lists them); required
    scheme: str = ""
    #: the topology spec, e.g. ``hypercube:6``, ``torus:8x8``, ``ring:8``, ``graph:net.txt``; required
    #: (a Topology is taken as its spec)
    topology: _Taken[str | Topology, str] = _Taken("", _topology_spec)
    params: Mapping[str, Any] = field(default_factory=dict)
    load: Mapping[str, float] = field(default_factory=dict)
    #: slots to run, warm-up included: exactly that many (a one-shot task stops earlier when
    #: it completes). None: 1000 for a scheme that runs for its slots; a one-shot task
    #: (``until="quiescent"``) runs until it completes, capped at its scheme's
    #: ``max_slots`` (never below 1000) -- a run the cap ends is reported incomplete
    slots: int | None = None
    warmup: int = 0
    seed: int = 0
    #: a FaultSchedule, or the CLI syntax as a list/tuple of strings (converted on creation)
    faults: _Taken[FaultSchedule | Sequence[str] | str | None, FaultSchedule] = _Taken(None, _schedule)
    trace: TraceSpec | None = None
    #: stop and report unstable past this many queued packets per node; None: the
    #: scheme's default (1000, or more where stable queues are long, e.g. periodic schemes)
    max_backlog_per_node: float | None = None
    #: builds the transport; None: the in-process fabric (refused with ``shards > 1``)
    transport: TransportFactory | None = field(default=None, compare=False)
    #: "direct": events reach the reporter as nodes record them; "buffered": batched per
    #: slot as msgpack frames and replayed in node order, as shards do (same results)
    observer: str = "direct"
    #: worker processes the nodes are spread over (1: this process); see ``--shards``
    shards: int = 1
    #: MQTT broker of a sharded run (``mqtt://[user:password@]host:port``); None: a private
    #: mosquitto started for the run
    broker: str | None = None

    #: keep the per-slot series (``Result.series``, ``--series``); off, reporters keep only
    #: what the metrics need
    series: bool = False
    #: seconds of wall-clock time a node may hold the run in one step (``--node-timeout``):
    #: a node that loops without awaiting its context, or awaits anything but
    #: ``ctx.next_slot()``/``ctx.idle()``, ends the run with :class:`~slotnet.errors.NodeTimeout`
    #: naming it; None: no limit
    node_timeout: float | None = field(default=DEFAULT_NODE_TIMEOUT, compare=False)
    #: the nodes' random generator (``--rng``): "philox", a compact Philox4x32-10 stream per
    #: node (the default: a few bytes of state a node), or "mt", the Mersenne Twister
    #: (``random.Random``, 2.5 KiB a node; the default of earlier versions, so ``rng="mt"``
    #: reruns their results). The two draw different numbers: one seed gives different runs
    rng: str = DEFAULT_RNG

    def __post_init__(self) -> None:
        """Check the fields' types; accept faults in the CLI syntax: ``faults=["crash@3:1", "loss=0.01"]``.

        Raises:
            SpecError: scheme or topology not a string, load or params not a mapping.
            FaultSpecError: naming a malformed entry.
        """
        for name in ("scheme", "topology"):
            if getattr(self, name) == "":
                raise SpecError(f"RunSpec needs a {name}: RunSpec(scheme, topology, ...), "
                                "e.g. RunSpec('deflection', 'hypercube:6', load={'offered': 1.0})")
            if not isinstance(getattr(self, name), str):
                raise SpecError(f"RunSpec's {name} must be a string (e.g. RunSpec('deflection', 'hypercube:6')), "
                                f"got {type(getattr(self, name)).__name__} {getattr(self, name)!r:.60}")
        for name, example in (("load", "{'offered': 1.0} or {'rho': 0.5}"), ("params", "{'order': 'random'}")):
            value = getattr(self, name)
            if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
                raise SpecError(f"{name} must be a mapping of name to value, got {type(value).__name__} "
                                f"{value!r:.60} (e.g. {name}={example})")

    def prepare(self, *, hosted: int | None = None, check_memory: bool = True) -> Prepared:
        """Validate everything and resolve the scheme, topology and node parameters.

        Args:
            hosted: in a shard process, the number of nodes it hosts (the memory check
                counts those, not the whole run).
            check_memory: refuse a run too big for the memory available (the default);
                False where no network is built (``slotnet theory`` evaluates the model only).

        Raises:
            SpecError, TopologyError, FaultSpecError: naming the bad input.
        """
        try:
            return self._prepare(hosted, check_memory)
        except SchemeError as exc:
            raise SpecError(str(exc)) from None

    def _prepare(self, hosted: int | None = None, check_memory: bool = True) -> Prepared:
        scheme = get_scheme(self.scheme)
        topology = parse_topology(self.topology)
        if ANY_TOPOLOGY not in scheme.topologies and topology.kind not in scheme.topologies:
            raise SpecError(f"scheme {scheme.name!r} runs on {', '.join(scheme.topologies)}, not {topology.spec}")
        counts = (("slots", self.slots, 1), ("warmup", self.warmup, 0), ("seed", self.seed, 0))
        for name, count, lo in counts if self.slots is not None else counts[1:]:
            if isinstance(count, bool) or not isinstance(count, int) or count < lo:
                raise SpecError(f"{name} must be an integer >= {lo}, got {count!r}")
        if not isinstance(self.series, bool):
            raise SpecError(f"series must be True or False, got {self.series!r}")
        if not isinstance(self.rng, str) or self.rng not in RNG_KINDS:
            raise SpecError(f"rng must be 'philox' (the default: the compact Philox4x32-10 stream) or 'mt' "
                            f"(the Mersenne Twister), got {self.rng!r}")
        shards = self.shards if isinstance(self.shards, int) and not isinstance(self.shards, bool) else 1
        if shards > 1:  # before the memory check, which counts a process per shard
            _check_split(topology, shards)
        planned = self.slots if self.slots is not None else DEFAULT_SLOTS
        faulted = isinstance(self.faults, FaultSchedule) and not self.faults.empty
        if check_memory:  # before anything per node
            check_fits(topology, planned, series=self.series, shards=shards, hosted=hosted, scheme=scheme.name,
                       rng=self.rng, faulted=faulted)
        if self.observer not in ("direct", "buffered"):
            raise SpecError(f"observer must be 'direct' or 'buffered', got {self.observer!r}")
        timeout = self.node_timeout
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0 or not math.isfinite(timeout)):
            raise SpecError(f"node_timeout must be a number of seconds > 0 (or None: no limit), got {timeout!r}")
        if isinstance(self.shards, bool) or not isinstance(self.shards, int) or self.shards < 1:
            raise SpecError(f"shards must be an integer >= 1, got {self.shards!r}")
        if self.transport is not None and self.shards > 1:
            raise SpecError("transport= and shards > 1 do not go together: a sharded run's transport is its shards' "
                            "(leave transport out, or run in one process)")
        if self.slots is not None and self.warmup >= self.slots:
            raise SpecError(f"warmup ({self.warmup}) must be less than slots ({self.slots})")
        load = _load(scheme, self.load)
        params: dict[str, Any] = {p.name: p.default for p in scheme.params}
        for key, value in self.params.items():
            params[key] = scheme.param(key).parse(value)
        inputs = _inputs(scheme, scheme.prepare(topology, params, load))
        node_params = inputs.params
        slots, cap = self.slots, None
        if slots is None:
            slots = DEFAULT_SLOTS
            if scheme.until == "quiescent":
                cap = slots = max(DEFAULT_SLOTS, _safety_cap(scheme, topology, inputs))
                if slots > planned:
                    check_fits(topology, slots, series=self.series, shards=shards, hosted=hosted,
                               scheme=scheme.name, rng=self.rng, faulted=faulted)
        if self.warmup >= slots:
            which = f"the safety cap of {scheme.name}" if cap is not None else "the default"
            raise SpecError(f"warmup ({self.warmup}) must be less than slots ({slots}, {which}: give slots)")
        quantum = inputs.quantum
        if not isinstance(self.faults, FaultSchedule):
            raise SpecError("faults must be a FaultSchedule or a list of strings such as ['crash@10:3', 'loss=0.01']")
        self.faults.validate(topology, slots)
        check_fault_support(scheme, self.faults)
        if self.trace is not None:
            _check_trace(self.trace, scheme, topology)
        backlog = self.max_backlog_per_node
        if backlog is None:
            backlog = scheme.max_backlog(topology, node_params) if scheme.max_backlog else DEFAULT_MAX_BACKLOG
        if not backlog > 0:
            raise SpecError(f"max backlog per node must be > 0, got {backlog!r}")
        setup = Setup(topology, node_params, load, slots, self.warmup, self.seed, quantum, self.series,
                      not self.faults.empty)
        spec = self if self.slots == slots else replace(self, slots=slots)
        return Prepared(spec, scheme, topology, params, node_params, setup, float(backlog), quantum, cap)


def _inputs(scheme: Scheme, prepared: Inputs[Any] | Mapping[str, Any]) -> Inputs[Any]:
    """What ``prepare`` returned, as :class:`Inputs` (a plain mapping: its params, quantum 1).

    Raises:
        SpecError: neither an Inputs nor a mapping, or a quantum that is no integer >= 1.
    """
    if isinstance(prepared, Mapping):
        return Inputs(prepared)
    if not isinstance(prepared, Inputs):
        raise SpecError(f"scheme {scheme.name!r}: prepare returned a {type(prepared).__name__}, "
                        "not an Inputs (or a mapping of node parameters)")
    quantum = prepared.quantum
    if isinstance(quantum, bool) or not isinstance(quantum, int) or quantum < 1:
        raise SpecError(f"scheme {scheme.name!r} asked for a time quantum of {quantum!r} (need an integer >= 1)")
    return prepared


def _check_split(topology: Topology, shards: int) -> None:
    """Refuse ``shards`` that cannot each host a block of ``topology``'s nodes (more shards
    than nodes, or a last shard left empty), before any shard process starts.

    Raises:
        SpecError: naming the shards, the topology and why.
    """
    try:
        ShardMap(topology.n_nodes, shards)
    except FabricError as exc:
        raise SpecError(f"shards={shards} does not fit {topology.spec}: {exc}") from None


def _safety_cap(scheme: Scheme, topology: Topology, inputs: Inputs[Any]) -> int:
    """The one-shot task's safety cap in slots: the scheme's ``max_slots``, or the default.

    Raises:
        SpecError: the scheme's cap is not an integer >= 1.
    """
    if scheme.max_slots is None:
        return DEFAULT_SLOTS
    cap = scheme.max_slots(topology, inputs)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise SpecError(f"scheme {scheme.name!r} asked for a safety cap of {cap!r} slots (need an integer >= 1)")
    return cap


def check_fault_support(scheme: Scheme, faults: FaultSchedule) -> None:
    """Refuse a schedule holding a fault kind the scheme declares it cannot run under.

    Raises:
        SpecError: one line naming the scheme, the fault kind (as written) and why.
    """
    for kind, text in faults.entries():
        why = scheme.refuses_fault(kind)
        if why is not None:
            raise SpecError(f"scheme {scheme.name!r} cannot run under {kind} faults ({text}): {why}")


def _check_trace(trace: TraceSpec, scheme: Scheme, topology: Topology) -> None:
    """The trace's nodes exist, its slot window is a window, its event kinds can occur."""
    if not isinstance(trace, TraceSpec):
        raise SpecError(f"trace must be a TraceSpec, got {type(trace).__name__}")
    for v in trace.nodes or ():
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < topology.n_nodes:
            raise SpecError(f"trace node {v!r} not in 0..{topology.n_nodes - 1}")
    if trace.slots is not None:
        ok = isinstance(trace.slots, tuple) and len(trace.slots) == 2 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in trace.slots)
        if not ok or trace.slots[0] >= trace.slots[1]:
            raise SpecError(f"trace slots must be (first, last) integers with 0 <= first < last, got {trace.slots!r}")
    if trace.kinds is not None:
        known = [*scheme.trace_events, *TRACE_DRIVER_EVENTS]
        unknown = sorted(str(k) for k in trace.kinds if k not in known)
        if unknown:
            raise SpecError(f"trace event kind {', '.join(map(repr, unknown))} never occurs in a {scheme.name} run "
                            f"(known: {', '.join(known)})")


#: Largest value a load flag may take (every scheme here is unstable far below it; a huge
#: birth rate would spend minutes creating the first slot's packets before the monitor stops it).
MAX_LOAD = 1000.0


def _load(scheme: Scheme, given: Mapping[str, Any]) -> dict[str, float]:
    load: dict[str, float] = {}
    for key, value in given.items():
        if key not in scheme.load_names:
            takes = " or ".join("--" + k for k in scheme.load_names) or "no load flag"
            raise SpecError(f"scheme {scheme.name!r} takes {takes}, not --{key}")
        if isinstance(value, bool):
            raise SpecError(f"--{key} must be a number, got {value!r}")
        try:
            fv = float(value)
        except (TypeError, ValueError):
            raise SpecError(f"--{key} must be a number, got {value!r}") from None
        if not math.isfinite(fv) or fv < 0:
            raise SpecError(f"--{key} must be a finite number >= 0, got {value!r}")
        if fv > MAX_LOAD:
            raise SpecError(f"--{key} {fv:g} is beyond any load a scheme here can carry (at most {MAX_LOAD:g}): "
                            "its first slot alone would create that many packets per node")
        load[key] = fv
    return load


@dataclass(frozen=True)
class Prepared:
    """A validated spec with its resolved parts."""

    spec: RunSpec
    scheme: Scheme
    topology: Topology
    params: dict[str, Any]
    #: what the scheme's ``prepare`` returned as the nodes' parameters (``Inputs.params``)
    node_params: Any
    setup: Setup
    max_backlog_per_node: float = DEFAULT_MAX_BACKLOG
    quantum: int = 1
    #: the safety cap that bounds the run (its slot count) when the spec gave none and the
    #: task is one-shot; None: the run has the slots the spec gave (or the default)
    cap: int | None = None

    @property
    def slots(self) -> int:
        """The slots the run may take: the spec's, or the default, or the one-shot task's cap."""
        return self.setup.slots
