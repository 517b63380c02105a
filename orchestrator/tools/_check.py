"""``slotnet check``: every fault schedule of a small space, run and judged, violations shrunk.

The space: every schedule of 1 to ``K`` faults (``--max-faults``) of the given kinds, each at
a slot of the window ``[A, B]`` (``--window A:B``; by default the slots of the fault-free
run), no two on one target. The kinds -- ``crash``, ``recover``, ``link-down``, ``link-up``,
``stall``, ``partition``, ``loss``, ``dup``, ``delay``, ``corrupt`` -- and what each
enumerates are in :mod:`._check_space`.

Each schedule is a run of the spec (its seed, slots, parameters) judged by the one verdict
(:func:`verdict`, the run's own: the invariants, the scheme's properties and choices,
completion, avoidable losses and missed broadcasts -- the verdict ``slotnet run`` gives).
Where the scheme declares its rule symmetric (``Scheme.symmetric``), schedules that a
symmetry of the topology maps onto each other form a class and one run decides the class
(:mod:`._symmetry` says what that assumes). Each failing class is shrunk by
:func:`~._shrink.shrink` to a minimal failing schedule, with the command that replays it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from slotnet.errors import SpecError

from .._run import run
from ..engine._progress import RunsProgress
from ..engine._properties import replay_command
from ..engine._spec import RunSpec
from ..engine._verdict import verdict as run_verdict
from ._check_space import KINDS, Atom, atoms, check_kinds, schedules
from ._explore import _spread, base_request, faults_of
from ._symmetry import Symmetry, automorphisms, classes

__all__ = ["KINDS", "Atom", "atoms", "check", "format_check", "schedules", "verdict"]

#: How many violations (the first, in schedule order) are shrunk; the others keep their replay command.
SHRUNK = 10


def verdict(result: Any) -> tuple[bool, list[str]]:
    """The run's own verdict (``result.verdict``, :func:`slotnet.orchestrator.engine._verdict.verdict`:
    invariants, properties, completion, avoidable losses, missed broadcasts) and its reasons."""
    if result.verdict is not None:
        ok, reasons = bool(result.verdict["ok"]), list(result.verdict["reasons"])
    else:  # a result made by hand, never judged: the engine's rules without the fault rules' books
        judged = run_verdict(result)
        ok, reasons = judged.ok, list(judged.reasons)
    return ok, reasons


def _judge(request: Mapping[str, Any]) -> dict[str, Any]:
    """Run one schedule (``request``: RunSpec fields, ``faults`` as CLI entries) and judge it."""
    fields = dict(request)
    label = fields.pop("label")
    spec = RunSpec(**fields)
    try:
        result = run(spec)
    except Exception as exc:  # a run that raises (a node's rule failed) is a violation too
        return {"label": label, "faults": list(fields["faults"]), "ok": False,
                "reasons": [f"the run failed: {type(exc).__name__}: {exc}"]}
    ok, reasons = verdict(result)
    return {"label": label, "faults": list(fields["faults"]), "ok": ok, "reasons": reasons}


def parse_window(text: str) -> tuple[int, int]:
    """``A:B`` -> (A, B), both slots included.

    Raises:
        SpecError: naming what is wrong.
    """
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise SpecError(f"--window {text!r}: expected A:B, two slots (e.g. 0:10)") from None
    if a < 0 or b < a:
        raise SpecError(f"--window {text!r}: expected 0 <= A <= B")
    return a, b


def check(spec: RunSpec, kinds: Sequence[str], max_faults: int, *, window: tuple[int, int] | None = None,
          jobs: int = 1, shrink: bool = True, reduce: bool | None = None,
          progress: RunsProgress | None = None) -> dict[str, Any]:
    """Run every schedule of the space (see the module docstring) and report the violations.

    ``reduce``: run one schedule per symmetry class (None: where the scheme declares its rule
    symmetric). Returns ``schedules`` (how many in all), ``classes`` (how many were run),
    ``violations`` (one per failing class: its schedule, its reasons, its members, the
    shrunk schedule and the replay command), the ``baseline`` (the fault-free run's verdict)
    and the space (kinds, window, symmetries).

    Raises:
        SpecError: a kind not enumerable, or one the scheme refuses; a bad window or count.
    """
    prep = spec.prepare()
    topology = prep.topology
    kinds = list(dict.fromkeys(kinds))
    check_kinds(kinds, topology, prep.scheme.refuses_fault, prep.scheme.name)
    if max_faults < 1:
        raise SpecError(f"--max-faults {max_faults}: expected at least 1")
    base = base_request(spec)
    baseline = _judge({**base, "label": "fault-free", "faults": []})
    if window is None:
        fault_free = run(spec)
        window = (0, max(0, fault_free.slots_run - 1))
    lo, hi = window
    if hi >= prep.slots:
        raise SpecError(f"--window {lo}:{hi}: the run has slots 0..{prep.slots - 1}")
    singles = atoms(topology, kinds, range(lo, hi + 1))
    every = list(schedules(singles, max_faults))
    if reduce is None:
        reduce = prep.scheme.symmetric
    group = automorphisms(topology) if reduce else automorphisms_identity(topology)

    def image(sched: Any, s: Symmetry) -> frozenset[Atom]:
        return frozenset(a.image(s, topology) for a in sched)

    reps = classes(every, image, group)
    requests = [{**base, "label": str(i), "faults": [e for a in sorted(cast("frozenset[Atom]", rep)) for e in a.entries()]}
                for i, (rep, _) in enumerate(reps)]
    judged = _spread(_judge, requests, jobs, progress)
    violations = []
    shrinkable: list[list[dict[str, Any]]] = []
    for (rep, members), v in zip(reps, judged):
        if v["ok"]:
            continue
        shrinkable.append([o for a in sorted(cast("frozenset[Atom]", rep)) for o in a.objects()])
        entry: dict[str, Any] = {"faults": v["faults"], "reasons": v["reasons"], "members": members}
        entry["replay"] = replay_command(replace(spec, faults=faults_of_text(v["faults"])))
        violations.append(entry)
    if shrink:
        if progress is not None:
            progress.clear()
        for entry, objects in zip(violations[:SHRUNK], shrinkable):
            entry.update(_shrunk(spec, prep, objects))
    return {"scheme": spec.scheme, "topology": spec.topology, "seed": spec.seed, "kinds": kinds,
            "max_faults": max_faults, "window": [lo, hi], "symmetric": bool(reduce), "symmetries": len(group),
            "schedules": len(every), "classes": len(reps), "baseline": baseline,
            "violations": violations, "ok": baseline["ok"] and not violations}


def automorphisms_identity(topology: Any) -> list[Symmetry]:
    """The identity alone (no reduction)."""
    return automorphisms(topology)[:1]


def faults_of_text(entries: Sequence[str]) -> Any:
    from slotnet.fabric import FaultSchedule
    return FaultSchedule.parse(entries)


def _shrunk(spec: RunSpec, prep: Any, objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The failing schedule (``--faults`` JSON objects) shrunk (``_shrink``): its entries, the runs it
    took, its replay command."""
    from ._shrink import shrink

    base = base_request(spec)

    def fails(objs: list[dict[str, Any]]) -> bool:
        return not _judge({**base, "label": "shrink", "faults": faults_of(objs).to_list()})["ok"]

    minimal, runs = shrink(objects, fails, slots=prep.slots, link_key=prep.topology.link_key)
    text = faults_of(minimal).to_list()
    return {"shrunk": text, "shrink_runs": runs, "shrunk_replay": replay_command(replace(spec, faults=faults_of(minimal)))}


def format_check(report: Mapping[str, Any]) -> str:
    """The human report of :func:`check`."""
    lines = [f"slotnet check {report['scheme']} on {report['topology']} (seed {report['seed']}): "
             f"{', '.join(report['kinds'])}, up to {report['max_faults']} fault(s) in slots "
             f"{report['window'][0]}..{report['window'][1]}",
             f"schedules: {report['schedules']}; run: {report['classes']} "
             + (f"(one per class under {report['symmetries']} symmetries)" if report["symmetric"] else "(no reduction)")]
    if not report["baseline"]["ok"]:
        lines.append("the fault-free run already fails: " + "; ".join(report["baseline"]["reasons"]))
    if not report["violations"]:
        lines.append("violations: none")
        return "\n".join(lines)
    lines.append(f"violations: {len(report['violations'])} class(es)")
    for v in report["violations"]:
        lines.append(f"- {' '.join(v['faults'])}" + (f" ({v['members']} schedules)" if v["members"] > 1 else ""))
        for r in v["reasons"][:3]:
            lines.append(f"    {r}")
        if "shrunk" in v:
            lines.append(f"    shrunk to: {' '.join(v['shrunk']) or '(no fault)'} ({v['shrink_runs']} runs)")
            lines.append(f"    replay: {v['shrunk_replay']}")
        else:
            lines.append(f"    replay: {v['replay']}")
    return "\n".join(lines)
