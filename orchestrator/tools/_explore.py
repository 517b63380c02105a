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

The verdict ``ok`` of a scenario (the fault-free run is judged by the same rule) is the
run's own verdict, the one every runner gives (``engine.verdict``, see ``engine._verdict``
and ``engine._fault_rules``):

1. its invariants hold, its properties hold, and a one-shot task completed (a deadlock
   or a task cut short by its slots fails);
2. no *avoidable* loss: a message lost to a dead link or node sent on a port its sender's
   context already showed dead (the failure detector's view, ``--detect`` slots late);
3. no broadcast missed beyond the fault's own: a node that never received a broadcast is
   excused only if the faults cut it off from the origin in some slot between the
   broadcast's birth and the end of the run.

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
from itertools import combinations
from typing import Any

from slotnet.errors import FaultSpecError, SlotnetError, SpecError
from slotnet.fabric import FaultSchedule, Topology

from .._run import run
from ..engine._progress import RunsProgress
from ..engine._spec import RunSpec, check_fault_support
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
    """Run ``spec`` and return its result with the books behind its verdict's fault rules.

    The verdict is the run's own (``result.verdict``, ``engine.verdict``: invariants,
    properties, completion, avoidable losses, missed broadcasts), the one every runner gives.

    Returns:
        ``(result, lost, missed)``: the :class:`Result`, every loss by book, and the missed
        broadcasts (None for a scheme without broadcasts).
    """
    result = run(spec, progress=progress)
    books = result.fault_books
    assert books is not None  # every run judges its fault rules
    return result, dict(books.lost), None if books.missed is None else dict(books.missed)


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
            "slots": spec.slots, "warmup": spec.warmup, "seed": spec.seed, "rng": spec.rng,
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
            stated = [o for o in objs if o.get("kind") == "detect"]
            if stated and any(o.get("slots") != setting["slots"] for o in stated):
                raise SpecError(f"--detect {setting['slots']} contradicts the faults file's {stated[0]}")
            if not stated:
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
