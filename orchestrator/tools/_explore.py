"""``slotnet explore``: run a scheme once per fault of a family and judge every run.

Families (each fault lasts from slot 0, or from its crash slot, to the end of the run):

* ``single-link``: every undirected link taken down, one at a time;
* ``single-node``: every node crashed, one at a time;
* ``double-link``: pairs of links, ``--samples K`` of them (default 20) drawn with the seed;
* ``crash-points``: every node crashing at each of the ``--crash-slots``;
* ``random``: ``--samples K`` random schedules (default 20) of the fault kinds the scheme
  runs under: 1 to 8 entries of mixed kinds, random slots, windows and rates, faults in
  slot 0 and in the last slot, crash/recover cycles, overlapping outages, every detection
  delay (unless ``--detect`` fixes it). Sample ``#i`` is drawn from the seed and ``i``
  alone, valid by construction (see ``_fuzz``), and printed as the ``slotnet run`` command
  that replays it.

``--samples K`` caps every family (a deterministic sample under the seed). Scenarios
run in worker processes; results do not depend on how many.

The verdict ``ok`` of a scenario (the fault-free run is judged by the same rule):

1. the run's own verdict, the one ``slotnet run`` gives (``engine.verdict``): its
   invariants hold, its properties hold, and a one-shot task completed (a deadlock or a
   task cut short by its slots fails);
2. no *avoidable* loss: a message lost to a dead link or node (``link_down``,
   ``node_down``, ``partition``, ``stalled``) is avoidable when its sender's context
   already showed that port dead -- the failure detector's view, ``--detect`` slots
   late -- when it was sent (the ledger's ``avoidable`` count of ``slotnet run``). Any
   other loss is the fault's own: sent before the fault could be known, state a crash
   destroyed, messages a message fault (``loss`` ...) destroyed. Losses to
   ``node_finished`` (a node that returned on purpose) are not judged; with
   ``--detect never`` nothing is avoidable;
3. no broadcast missed beyond the fault's own: a broadcast (schemes that record the
   kit's ``step`` event) that is incomplete at the end with no copy in flight or held
   is a miss at each node that never received it; a missing node is excused only if
   the faults cut it off from the origin (every path through a dead port or node) in
   some slot between the broadcast's birth and the end of the run (a crashed origin
   excuses every node). A copy destroyed in flight does not excuse the nodes behind
   it: what is judged is exactly-once delivery to every node the faults left reachable.

So deflection, which routes around a dead link, is ``ok`` under ``single-link``, and a
broadcast on fixed spanning trees is not: the subtree behind the link misses packets
although it is still reachable.

A ``random`` sample is judged by the same rule and checked beyond it; its ``class`` is
the first that applies of:

* ``crash``: the run raised (anything but a refusal of bad input);
* ``refused``: the run was refused as bad input (counted apart, neither ok nor failed:
  the generator never draws such a schedule, so a refusal is its own bug);
* ``nondeterministic``: a second run of the sample (every 20th: ``#0``, ``#20``, ...) gave
  another result (its ``--json`` object without ``timing``);
* ``unaccounted``: an invariant fails (other than ``termination``, a deadlock's);
* ``incomplete``: a one-shot task did not complete (a deadlock, or cut short);
* ``books``: a packet book of ``fault_impact.packets`` does not close (unicast: packets +
  dup copies = delivered + second deliveries + lost to faults + in progress; broadcast:
  broadcasts = completed + lost to faults + in progress);
* ``verdict``: an avoidable loss or a missed broadcast (rules 2 and 3);
* ``ok``.

``classes`` lists every check that failed. ``--shrink`` takes the first sample of the
gravest class and keeps that class while it shrinks (a crash shrinks to a smaller crash).
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import replace
from itertools import combinations
from typing import Any

from slotnet.errors import FaultSpecError, SlotnetError, SpecError
from slotnet.fabric import NOTE_CAUSES, FaultSchedule, PortTimeline, Topology
from slotnet.schemes import SCHEMES

from .._run import run
from ..engine._progress import RunsProgress
from ..engine._spec import RunSpec, check_fault_support
from ..engine._verdict import verdict
from . import _fuzz
from ._report import format_value, table

__all__ = ["CLASSES", "FAMILIES", "explore", "faults_of", "format_explore", "judge", "judged_run", "scenarios"]

FAMILIES = ("single-link", "single-node", "double-link", "crash-points", "random")
#: The classes of a random sample, the first that applies (see the module doc).
CLASSES = ("crash", "refused", "nondeterministic", "unaccounted", "incomplete", "books", "verdict", "ok")
#: Every this many random samples (from #0) is run twice.
REPEAT_EVERY = 20

#: Metrics shown in the table, the first two a run reports.
_KEY_METRICS = ("mean_delay", "mean_broadcast_delay", "completion_time", "throughput_per_node", "link_utilization",
                "mean_queue_per_node")

#: Loss causes of a dead link or node: avoidable once the sender saw the port dead.
_DEAD = ("link_down", "node_down", "partition", "stalled")
#: Loss causes that are no fault's doing (not judged).
_NOT_FAULTS = ("node_finished",)


# -- scenarios -------------------------------------------------------------------------------
def links(topology: Topology) -> list[tuple[int, int, int]]:
    """Every undirected link once, as ``(node, port, neighbour)`` from its lower end."""
    out = []
    for v, p, w in topology.links():
        if (v, p) <= (w, topology.reverse_port(v, p)):
            out.append((v, p, w))
    return out


def _link_down(slot: int, link: tuple[int, int, int]) -> dict[str, Any]:
    return {"kind": "link-down", "slot": slot, "node": link[0], "port": link[1]}


def scenarios(topology: Topology, family: str, *, slots: int, seed: int, samples: int | None = None,
              crash_slots: Sequence[int] = (), kinds: Sequence[str] = (),
              draw_detect: bool = True) -> list[tuple[str, list[dict[str, Any]]]]:
    """The scenarios of ``family`` as ``(label, faults as --faults JSON objects)``.

    ``kinds`` and ``draw_detect`` are for ``random``: the fault kinds to draw (see
    :func:`~._fuzz.random_schedule`), and whether to draw the detection delay too.

    Raises:
        SpecError: for an unknown family or crash slots outside the run.
    """
    rng = random.Random(seed)
    if family == "random":
        return [(f"#{i}", _fuzz.random_schedule(topology, slots, kinds, _fuzz.sample_rng(seed, i),
                                                 draw_detect=draw_detect))
                for i in range(20 if samples is None else samples)]
    if family == "single-link":
        items: list[Any] = links(topology)
        make: Callable[[Any], tuple[str, list[dict[str, Any]]]] = lambda ln: (
            f"link {ln[0]}-{ln[2]} ({ln[0]}:{ln[1]})", [_link_down(0, ln)])
    elif family == "single-node":
        items = list(range(topology.n_nodes))
        make = lambda v: (f"node {v}", [{"kind": "crash", "slot": 0, "node": v}])
    elif family == "double-link":
        items = list(combinations(links(topology), 2))
        samples = 20 if samples is None else samples
        make = lambda pair: (" + ".join(f"link {a[0]}-{a[2]}" for a in pair), [_link_down(0, a) for a in pair])
    elif family == "crash-points":
        for s in crash_slots:
            if not 0 <= s < slots:
                raise SpecError(f"--crash-slots: slot {s} is not inside the run (0..{slots - 1})")
        items = [(v, s) for s in sorted(set(crash_slots)) for v in range(topology.n_nodes)]
        make = lambda vs: (f"node {vs[0]} at {vs[1]}", [{"kind": "crash", "slot": vs[1], "node": vs[0]}])
    else:
        raise SpecError(f"--faults must be one of {', '.join(FAMILIES)} or a faults file, got {family!r}")
    if samples is not None and samples < len(items):
        items = [items[i] for i in sorted(rng.sample(range(len(items)), samples))]
    return [make(x) for x in items]


def default_crash_slots(slots: int, warmup: int) -> list[int]:
    """A quarter, half and three quarters into the measured window."""
    span = slots - warmup
    return sorted({warmup + span * i // 4 for i in (1, 2, 3)})


# -- one scenario ----------------------------------------------------------------------------
class _Witness:
    """A reporter that passes everything to the scheme's and keeps what the verdict needs.

    It sees (through the public reporter protocol only) every message lost with its send
    slot and cause, the fault ledger, what is in flight and held at the end, and for
    broadcast schemes every birth and first reception of the kit's ``step`` event.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.events = inner.events
        self.losses: list[tuple[int, int, int, int, str]] = []  # (send slot, sender, port, receiver, cause)
        self.ledger: dict[str, int] = {}
        self.moving: set[Any] = set()
        fields = tuple(self.events.get("step", ()))
        self.broadcasts = fields[:2] == ("births", "received")
        self.born: dict[tuple[int, int], float] = {}
        self.got: dict[tuple[int, int], set[int]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        handlers = dict(self.inner.handlers())
        if self.broadcasts:
            step = handlers["step"]

            def watched(node: int, slot: int, births: Any, received: Any, *rest: Any) -> None:
                for seq, tau in births:
                    self.born[(node, seq)] = tau
                for key in received:
                    self.got.setdefault((key[0], key[1]), set()).add(node)
                step(node, slot, births, received, *rest)

            handlers["step"] = watched
        return handlers

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        if cause not in NOTE_CAUSES:  # a copy a dup fault added is no loss
            self.losses.append((slot, sender, port, receiver, cause))
        self.inner.on_lost(slot, sender, port, receiver, message, cause)

    def holdings(self, per_node: Sequence[Any]) -> None:
        for items in per_node:
            for item in items or ():
                self.moving.add(_key(item))
        self.inner.holdings(per_node)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        self.ledger = dict(lost)
        for _, _, m in in_flight:
            self.moving.add(_key(m))
        return dict(self.inner.invariants(lost, in_flight, held))


def _key(x: Any) -> Any:
    if isinstance(x, (list, tuple)) and len(x) >= 2:
        try:
            return (x[0], x[1])
        except TypeError:
            return None
    return None


@contextmanager
def _witnessed(name: str, box: list[_Witness]) -> Any:
    """Run ``name`` with its reporter wrapped in a :class:`_Witness` (the registry entry is restored)."""
    scheme = SCHEMES[name]

    def make(setup: Any) -> _Witness:
        w = _Witness(scheme.reporter(setup))
        box.append(w)
        return w

    SCHEMES[name] = replace(scheme, reporter=make)
    try:
        yield
    finally:
        SCHEMES[name] = scheme


def faults_of(objects: Sequence[Mapping[str, Any]]) -> FaultSchedule:
    """A schedule from ``--faults`` JSON objects (through a file, the one parser of that form).

    Raises:
        FaultSpecError: naming the bad entry.
    """
    fd, path = tempfile.mkstemp(prefix="slotnet-faults-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(list(objects), fh)
        return FaultSchedule.parse(file=path)
    except FaultSpecError as exc:  # name the schedule, not the temporary file
        raise FaultSpecError(str(exc).replace(f"fault file {path!r}", "schedule")) from None
    finally:
        os.unlink(path)


def judge(request: Mapping[str, Any]) -> dict[str, Any]:
    """Run one scenario (``request``: RunSpec fields, ``faults`` as JSON objects) and judge it.

    With ``checks`` true in ``request`` (random samples), the run is also checked beyond the
    verdict and classified (see the module doc), never raises, and ``repeat`` true runs it
    twice to compare the results.
    """
    fields = dict(request)
    label = fields.pop("label")
    objects = fields.pop("faults")
    checks = fields.pop("checks", False)
    repeat = fields.pop("repeat", False)
    if checks:
        return _checked(fields, label, objects, repeat)
    return _judged(fields, label, objects)[0]


def judged_run(spec: RunSpec, *, progress: Any = None) -> tuple[Any, dict[str, Any], dict[str, Any] | None]:
    """Run ``spec`` (in this process) and judge it by explore's verdict: the run's own
    (``engine.verdict``: invariants, properties, completion), then avoidable losses and
    missed broadcasts. The verdict replaces ``result.verdict``, so ``slotnet run`` (with
    faults), ``explore``, random campaigns and ``--shrink`` give the same one.

    Returns:
        ``(result, lost, missed)``: the :class:`Result`, every loss by book, and the missed
        broadcasts (None for a scheme without broadcasts).
    """
    prep = spec.prepare()
    box: list[_Witness] = []
    with _witnessed(spec.scheme, box):
        result = run(spec, progress=progress)
    w = box[-1]
    timeline = spec.faults.port_timeline(prep.topology)
    lost = _judge_losses(w, timeline, spec.faults.detect, (result.fault_impact or {}).get("avoidable", {}))
    missed = _judge_misses(w, prep.topology, spec.faults, timeline, result.slots_run) if w.broadcasts else None
    reasons = list(verdict(result).reasons)
    first = lost.get("first_avoidable")
    if first is not None:
        reasons.append(f"{_count(sum(lost['avoidable'].values()), 'avoidable loss', 'avoidable losses')} "
                       f"(first sent in slot {first[0]}, {first[1]}->{first[3]})")
    if missed and missed["broadcasts"]:
        f = missed["first"]
        reasons.append(f"{_count(missed['broadcasts'], 'broadcast')} missed {_count(missed['nodes'], 'reachable node')} "
                       f"(first: {f['origin']},{f['seq']} at {','.join(map(str, f['missing_nodes']))})")
    result.verdict = {"ok": not reasons, "reasons": reasons}
    return result, lost, missed


def _judged(fields: dict[str, Any], label: str, objects: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], Any]:
    """The verdict of one scenario, and the run's :class:`Result`."""
    result, lost, missed = judged_run(RunSpec(**fields, faults=faults_of(objects)))
    lost.pop("first_avoidable", None)
    reasons = result.verdict["reasons"]
    out = {"fault": label, "faults": list(objects), "ok": not reasons, "reasons": reasons,
           "metrics": {k: v for k, v in result.metrics.items() if _scalar(v)}, "lost": lost,
           "invariants_ok": bool(result.invariants.get("ok")), "slots_run": result.slots_run}
    if result.complete is not None:
        out["complete"] = result.complete
    # nothing unaccounted: every invariant but a one-shot task's termination (a deadlock is "incomplete")
    failing = [k for k, v in result.invariants.items() if isinstance(v, dict) and not v.get("ok", False)]
    out["accounted"] = bool(result.invariants.get("ok")) or failing == ["termination"]
    if missed is not None:
        out["missed"] = missed
    return out, result


def _checked(fields: dict[str, Any], label: str, objects: Sequence[Mapping[str, Any]], repeat: bool) -> dict[str, Any]:
    """A random sample: explore's verdict, then the checks beyond it, and its class."""
    out: dict[str, Any] = {"fault": label, "faults": list(objects), "command": None}
    try:
        out["command"] = _fuzz.run_command(fields, faults_of(objects).to_list())
        judged, result = _judged(fields, label, objects)
    except Exception as exc:  # a sample reports whatever went wrong, never raises
        cls = "refused" if isinstance(exc, SlotnetError) and isinstance(exc, ValueError) else "crash"
        return {**out, "ok": False, "class": cls, "classes": [cls], "reasons": [_describe(exc)],
                "metrics": {}, "lost": {"excused": {}, "avoidable": {}, "other": {}}, "invariants_ok": False,
                "slots_run": 0}
    out.update(judged)
    data = result.to_dict()
    out["sha256"] = _fuzz.fingerprint(data)
    classes: list[str] = []
    reasons: list[str] = []
    if repeat:
        try:
            again = _judged(fields, label, objects)[1].to_dict()
            where = _difference(json.loads(_fuzz.canonical(data)), json.loads(_fuzz.canonical(again)))
        except Exception as exc:  # as the first run's
            where = f"the second run raised {_describe(exc)}"
        if where is not None:
            classes.append("nondeterministic")
            reasons.append(f"a second run differs: {where}")
        out["repeated"] = True
    if not judged["invariants_ok"] and not judged.get("accounted", False):
        classes.append("unaccounted")
    if judged.get("complete") is False:
        classes.append("incomplete")
    books = _fuzz.book_failures((result.fault_impact or {}).get("packets"))
    if books:
        classes.append("books")
        reasons += books
    if sum(judged["lost"]["avoidable"].values()) or (judged.get("missed") or {}).get("broadcasts"):
        classes.append("verdict")
    out["reasons"] = reasons + judged["reasons"]
    out["classes"] = classes
    out["class"] = classes[0] if classes else "ok"
    out["ok"] = not classes
    return out


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, and where it was raised."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f" (at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})" if tb is not None else ""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:300]}{where}"


def _difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two JSON values first differ (a path such as ``metrics.mean_delay``), None if equal."""
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}{k} only in {'the first' if k in a else 'the second'} run"
            d = _difference(a[k], b[k], f"{path}{k}.")
            if d is not None:
                return d
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _difference(x, y, f"{path}{i}.")
            if d is not None:
                return d
    return f"{path.rstrip('.') or 'the result'}: {json.dumps(a)[:80]} vs {json.dumps(b)[:80]}"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _judge_losses(w: _Witness, timeline: PortTimeline, detect: int | None,
                  unforced: Mapping[str, int]) -> dict[str, Any]:
    """Every lost message by cause: the fault's own (``excused``), ``avoidable``, ``forced``, or ``other``.

    A loss on a port its sender saw dead is avoidable unless the send was forced: the
    sender had no port it saw alive left idle in that slot (a bufferless node with more
    packets than live ports). The witness sees losses, not the sender's other ports, so
    it takes forcedness from the run's own count of unforced dead-port losses by cause
    (``unforced``, the ledger's avoidable book): a cause the run found none of is forced.
    """
    books: dict[str, dict[str, int]] = {"excused": {}, "avoidable": {}, "forced": {}, "other": {}}
    first = None
    seen: dict[str, int] = {}
    for sent, sender, port, receiver, cause in w.losses:
        seen[cause] = seen.get(cause, 0) + 1
        book = "other" if cause in _NOT_FAULTS else "excused"
        if (cause in _DEAD and detect is not None and sender >= 0
                and timeline.dead_mask(sender, sent - detect) >> port & 1):
            book = "avoidable" if unforced.get(cause) else "forced"
            if first is None and book == "avoidable":
                first = (sent, sender, port, receiver, cause)
        books[book][cause] = books[book].get(cause, 0) + 1
    for cause, n in w.ledger.items():  # lost without a message to judge (a crash's held state)
        extra = n - seen.get(cause, 0)
        if extra > 0:
            book = "other" if cause in _NOT_FAULTS else "excused"
            books[book][cause] = books[book].get(cause, 0) + extra
    out: dict[str, Any] = dict(books)
    if first is not None:
        out["first_avoidable"] = first
    return out


def _epochs(schedule: FaultSchedule, timeline: PortTimeline, end: int) -> list[tuple[int, int, frozenset[int]]]:
    """``(first, last + 1, crashed nodes)`` for each stretch of slots in which no port or node changes."""
    bounds = {0}
    for slots, _ in timeline.values():
        bounds.update(slots)
    crashes = sorted((ev.slot, ev.kind, ev.node) for ev in schedule.events if ev.kind in ("crash", "recover"))
    bounds.update(s for s, _, _ in crashes)
    cuts = sorted(b for b in bounds if b < end)
    out = []
    for i, a in enumerate(cuts):
        dead: set[int] = set()
        for s, kind, v in crashes:
            if s <= a:
                (dead.add if kind == "crash" else dead.discard)(v)
        out.append((a, cuts[i + 1] if i + 1 < len(cuts) else max(end, a + 1), frozenset(dead)))
    return out


def _reachable(topology: Topology, origin: int, slot: int, dead: frozenset[int],
               timeline: PortTimeline) -> set[int]:
    """The nodes ``origin`` reaches in ``slot`` through live ports (none if it is crashed)."""
    if origin in dead:
        return set()
    seen = {origin}
    stack = [origin]
    while stack:
        v = stack.pop()
        mask = timeline.dead_mask(v, slot)
        for p in topology.ports(v):
            if p.neighbour not in seen and p.neighbour not in dead and not mask >> p.index & 1:
                seen.add(p.neighbour)
                stack.append(p.neighbour)
    return seen


def _judge_misses(w: _Witness, topology: Topology, schedule: FaultSchedule, timeline: PortTimeline,
                  end: int) -> dict[str, Any]:
    """Broadcasts that missed nodes no fault cut off from their origin (see the module doc)."""
    n = topology.n_nodes
    epochs = _epochs(schedule, timeline, end)
    cache: dict[tuple[int, int], set[int]] = {}
    count = nodes = excused = 0
    first: dict[str, Any] | None = None
    for key in sorted(w.born):
        got = w.got.get(key, set())
        origin = key[0]
        if len(got - {origin}) >= n - 1 or key in w.moving:
            continue
        born = int(math.floor(w.born[key]))
        missing = [v for v in range(n) if v != origin and v not in got]
        cut: set[int] = set()
        for i, (a, b, dead) in enumerate(epochs):
            if b <= born:
                continue
            if (i, origin) not in cache:
                cache[(i, origin)] = set(range(n)) - _reachable(topology, origin, a, dead, timeline)
            cut |= cache[(i, origin)]
        bad = [v for v in missing if v not in cut]
        excused += len(missing) - len(bad)
        if bad:
            count += 1
            nodes += len(bad)
            if first is None:
                first = {"origin": origin, "seq": key[1], "born": w.born[key], "missing_nodes": bad[:16]}
    return {"broadcasts": count, "nodes": nodes, "excused_receptions": excused, "first": first}


# -- many scenarios --------------------------------------------------------------------------
def _spread(fn: Callable[[Mapping[str, Any]], dict[str, Any]], requests: list[dict[str, Any]], jobs: int,
            progress: RunsProgress | None) -> list[dict[str, Any]]:
    """``fn`` over ``requests`` in ``jobs`` worker processes, results in request order."""
    if progress is not None:
        progress.add(len(requests))
    if jobs <= 1 or len(requests) <= 1:
        out = []
        for r in requests:
            out.append(fn(r))
            if progress is not None:
                progress.done()
        return out
    with ProcessPoolExecutor(max_workers=min(jobs, len(requests))) as pool:
        futures: list[Future[dict[str, Any]]] = [pool.submit(fn, r) for r in requests]
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
            for f in finished:
                exc = f.exception()
                if exc is not None:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise exc
                if progress is not None:
                    progress.done()
        return [f.result() for f in futures]


def base_request(spec: RunSpec) -> dict[str, Any]:
    """The RunSpec fields every scenario of ``spec`` shares (picklable)."""
    return {"scheme": spec.scheme, "topology": spec.topology, "params": dict(spec.params), "load": dict(spec.load),
            "slots": spec.slots, "warmup": spec.warmup, "seed": spec.seed,
            "max_backlog_per_node": spec.max_backlog_per_node}


def explore(spec: RunSpec, family: str | None = None, *, schedule: Sequence[Mapping[str, Any]] | None = None,
            samples: int | None = None, crash_slots: Iterable[int] | None = None, jobs: int | None = None,
            detect: int | str | None = "default", progress: RunsProgress | None = None) -> dict[str, Any]:
    """Judge ``spec`` under every scenario of ``family`` (or the one ``schedule``), beside the fault-free run.

    ``detect`` is the failure detector's delay in slots (``"never"``; ``"default"``: the
    fabric's, and ``random`` draws it), added to every scenario's schedule as its
    ``{"kind": "detect"}`` entry.

    Returns:
        ``{"scheme", "topology", "seed", "slots", "family", "baseline", "scenarios", "summary"}``;
        for ``random``, each scenario has its ``class``, ``classes``, the ``command`` that
        replays it and its result's ``sha256`` (see :func:`~._fuzz.fingerprint`), and the
        summary counts ``refused`` samples and each class (``classes``).

    Raises:
        SpecError: bad input, found before any run.
    """
    prep = spec.prepare()
    spec = prep.spec  # its slot count resolved (a one-shot task given none: its safety cap)
    if not spec.faults.empty:
        raise SpecError("explore adds its own faults: give the run without faults")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise SpecError(f"--samples must be an integer >= 1, got {samples!r}")
    if jobs is not None and jobs < 1:
        raise SpecError(f"--jobs must be >= 1, got {jobs}")
    if schedule is not None:
        if family is not None:
            raise SpecError("give a fault family or a faults file, not both")
        given = faults_of(schedule)
        given.validate(prep.topology, prep.slots)
        check_fault_support(prep.scheme, given)
        cases = [("schedule", [dict(x) for x in schedule])]
    else:
        if crash_slots is not None and family != "crash-points":
            raise SpecError("--crash-slots goes with --faults crash-points")
        slots = list(crash_slots) if crash_slots is not None else default_crash_slots(prep.slots, spec.warmup)
        kinds = _fuzz.drawable_kinds(prep.scheme.refuses_fault) if family == "random" else []
        if family == "random" and not kinds:
            raise SpecError(f"scheme {prep.scheme.name!r} runs under no fault kind: --faults random has nothing to draw")
        cases = scenarios(prep.topology, family or "", slots=prep.slots, seed=spec.seed, samples=samples,
                          crash_slots=slots, kinds=kinds, draw_detect=detect == "default")
        for kind in sorted({o["kind"] for _, objs in cases for o in objs} - {"detect"}):  # a setting, no fault
            why = prep.scheme.refuses_fault(kind)
            if why is not None:
                raise SpecError(f"scheme {prep.scheme.name!r} cannot run under {kind} faults "
                                f"(explore --faults {family}): {why}")
    if detect != "default":
        delay = FaultSchedule.parse(detect=detect).detect  # a bad delay is refused here, as --detect
        setting = {"kind": "detect", "slots": "never" if delay is None else delay}
        for _, objs in cases:
            given = [o for o in objs if o.get("kind") == "detect"]
            if given and any(o.get("slots") != setting["slots"] for o in given):
                raise SpecError(f"--detect {setting['slots']} contradicts the faults file's {given[0]}")
            if not given:
                objs.append(setting)
    base = base_request(spec)
    checked = family == "random" and schedule is None
    requests = [{**base, "label": "none", "faults": [], **({"checks": True} if checked else {})}]
    requests += [{**base, "label": label, "faults": faults,
                  **({"checks": True, "repeat": i % REPEAT_EVERY == 0} if checked else {})}
                 for i, (label, faults) in enumerate(cases)]
    try:
        results = _spread(judge, requests, jobs or os.cpu_count() or 1, progress)
    finally:
        if progress is not None:
            progress.close()
    baseline, rest = results[0], results[1:]
    for r in rest:
        r["delta"] = {k: v - baseline["metrics"][k] for k, v in r["metrics"].items()
                      if _number(v) and _number(baseline["metrics"].get(k))}
    refused = [r["fault"] for r in rest if r.get("class") == "refused"]
    failed = [r["fault"] for r in rest if not r["ok"] and r.get("class") != "refused"]
    summary = {"scenarios": len(rest), "ok": len(rest) - len(failed) - len(refused), "failed": len(failed),
               "baseline_ok": baseline["ok"], "first_failure": failed[0] if failed else None}
    if checked:
        summary["refused"] = len(refused)
        summary["classes"] = {c: sum(1 for r in rest if c in r["classes"]) for c in CLASSES if c != "ok"}
    return {
        "scheme": spec.scheme, "topology": prep.topology.describe(), "seed": spec.seed, "slots": spec.slots,
        "warmup": spec.warmup, "params": dict(spec.params), "load": dict(spec.load),
        "family": family if schedule is None else "schedule",
        "baseline": baseline, "scenarios": rest, "summary": summary,
    }


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def format_explore(report: Mapping[str, Any]) -> str:
    """The readable table: one row per scenario, beside the fault-free run."""
    base = report["baseline"]
    keys = [k for k in _KEY_METRICS if k in base["metrics"]][:2]
    s = report["summary"]
    head = [f"explore {report['scheme']} on {report['topology']['spec']}, seed {report['seed']}, "
            f"{report['slots']} slots: {_count(s['scenarios'], 'scenario')} ({report['family']}), {s['ok']} ok, "
            f"{s['failed']} failed" + (f", {s['refused']} refused" if s.get("refused") else ""),
            f"fault-free run: {'ok' if base['ok'] else 'NOT ok: ' + '; '.join(base['reasons'])}"
            + "".join(f", {k} {format_value(base['metrics'][k])}" for k in keys),
            "(metrics: value and change from the fault-free run; lost: messages destroyed by the fault itself, and "
            "avoidable ones sent on ports already seen dead)", ""]
    broadcast = any("missed" in r for r in [base, *report["scenarios"]])
    rows = []
    for r in report["scenarios"]:
        lost = r["lost"]
        verdict = "ok" if r["ok"] else ("FAIL" if r.get("class") in (None, "verdict") else r["class"].upper())
        cells = [r["fault"], verdict, str(sum(lost["excused"].values())),
                 str(sum(lost["avoidable"].values()))]
        if broadcast:
            cells.append(str((r.get("missed") or {}).get("broadcasts", 0)))
        for k in keys:
            v = r["metrics"].get(k)
            d = r.get("delta", {}).get(k)
            cells.append(format_value(v) + (f" ({d:+.3g})" if d else ""))
        cells.append("; ".join(r["reasons"]))
        rows.append(cells)
    header = ["fault", "verdict", "lost", "avoidable"] + (["bcasts missed"] if broadcast else [])
    header += [*keys, "why"]
    return "\n".join(head + table(rows, header) + _replays(report))


def _replays(report: Mapping[str, Any], most: int = 10) -> list[str]:
    """Random samples: the count of each class, and the command that replays each sample not ok."""
    classes = report["summary"].get("classes")
    if classes is None:
        return []
    out = ["", "checks: " + ", ".join(f"{c} {n}" for c, n in classes.items())]
    bad = [r for r in report["scenarios"] if not r["ok"]]
    for r in bad[:most]:
        out.append(f"{r['fault']} {r['class']}: {(r['reasons'] or [''])[0]}")
        out.append(f"  replay: {r['command'] or json.dumps(r['faults'])}")
    if len(bad) > most:
        out.append(f"... and {len(bad) - most} more (--json lists every sample's command)")
    return out


def shrink_failure(spec: RunSpec, failing: Sequence[Mapping[str, Any]], cls: str | None = None) -> dict[str, Any]:
    """A minimal failing schedule for ``spec`` from the failing ``failing`` (see ``_shrink``).

    ``cls``: a random sample's class (``crash``, ``books`` ...): every candidate is then
    checked as a random sample and fails only if it still falls in that class (a
    ``nondeterministic`` candidate is run twice).

    Returns:
        ``{"faults": the minimal schedule (JSON objects), "runs": runs it took, "verdict": its judged run}``.
    """
    from ._shrink import shrink

    prep = spec.prepare()
    topology, spec = prep.topology, prep.spec  # its slot count resolved
    base: dict[str, Any] = base_request(spec)
    if cls is not None:
        base |= {"checks": True, "repeat": cls == "nondeterministic"}

    def fails(objs: list[dict[str, Any]]) -> bool:
        verdict = judge({**base, "label": "shrink", "faults": objs})
        return cls in verdict["classes"] if cls is not None else not verdict["ok"]

    minimal, runs = shrink(failing, fails, slots=prep.slots,
                           link_key=topology.link_key)
    return {"faults": minimal, "runs": runs, "verdict": judge({**base, "label": "shrunk", "faults": minimal})}
