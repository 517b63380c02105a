"""One verdict for every run, whoever runs it: ``slotnet.run()``, ``slotnet run`` (in one
process or sharded), ``explore``, random fault campaigns, ``--shrink`` and ``slotnet check``
all read the verdict :func:`verdict` gave the run when it ended (``result.verdict``).

A run is ok when

1. its invariants hold (``invariants.ok``: nothing unaccounted for, the claims agree, a
   one-shot task did not deadlock -- see ``_completion``); a failed one is named with its
   first problem where it states one;
2. its properties hold (``result.properties``, where the scheme states any: each entry a
   dict with ``ok``; a violation is named with its first slot where it gives one);
3. a one-shot task completed: a task cut short by its slots, its safety cap or the
   stability monitor is not done, and neither is a deadlock;
4. no message was lost avoidably, and no broadcast missed a node the faults left
   reachable (``_fault_rules``: judged in every run, with faults or without).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._fault_rules import FaultJudgement
from ._result import Result

__all__ = ["Verdict", "verdict"]


@dataclass(frozen=True)
class Verdict:
    """Whether a run is ok, and each reason it is not (one line each)."""

    ok: bool
    reasons: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.ok


def verdict(result: Result, faults: FaultJudgement | None = None) -> Verdict:
    """The verdict on ``result`` (see the module docstring); ``faults``: the fault rules'
    judgement of the run (``_fault_rules``; None: not judged, as for a hand-made result)."""
    reasons: list[str] = []
    bad = [(k, v) for k, v in result.invariants.items() if isinstance(v, dict) and not v.get("ok", False)
           and k != "termination"]  # a deadlock is told by the completion below
    for name, v in bad:
        problem = v.get("problem")
        reasons.append(f"invariant {name} failed" + (f": {str(problem).splitlines()[0]}" if problem else ""))
    if not bad and not result.invariants.get("ok") and "termination" not in result.invariants:
        reasons.append("invariants not ok")
    reasons += _properties(getattr(result, "properties", None))
    if result.complete is False:
        reasons.append(_incomplete(result.completion or {}, result))
    if faults is not None:
        reasons += faults.reasons
    return Verdict(not reasons, tuple(reasons))


def _properties(props: Any) -> list[str]:
    """A reason for each violated property of ``result.properties`` (a dict of name -> dict with ``ok``)."""
    if not isinstance(props, dict):
        return []
    out = []
    for name, p in props.items():
        if isinstance(p, dict) and p.get("ok") is False:
            first = p.get("first_slot", p.get("slot"))
            out.append(f"property {name} violated" + (f" (first in slot {first})" if first is not None else ""))
    return out


def _incomplete(c: dict[str, Any], result: Result) -> str:
    at = c.get("stopped_at_slot", result.slots_run - 1)
    if c.get("ended_by") == "deadlock":
        waiting = c.get("waiting", [])
        nodes = ",".join(str(w["node"]) for w in waiting[:8]) + ("..." if len(waiting) > 8 else "")
        return f"deadlock at slot {at}: {len(waiting)} live node(s) never finished (waiting: {nodes})"
    why = {"cap": "its safety cap", "unstable": "the stability monitor"}.get(c.get("ended_by", ""), "its slots")
    return f"task incomplete: {why} ended the run at slot {at} before the task completed"
