"""A one-shot task's completion: termination, not quiescence.

A scheme that declares ``until="quiescent"`` runs one task. Both runners stop it at the
first slot after which nothing can happen any more (no node awake or due, nothing in
flight: *quiet*), or when its slots end. Quiet is not done: the task is **complete** when
every live node has returned from ``run()``, or, for a rule whose nodes park idle once
their part is done, when the scheme's completion predicate (``Scheme.done``, asked with
the reporter) holds. A run that goes quiet with live nodes still waiting, and no
predicate that says the task is done, is a **deadlock**: nothing can ever wake them. Its
completion names each waiting node, what it waits for, since which slot and the last
event it recorded; ``complete`` is false, and the ``termination`` invariant fails (so the
run's ``invariants.ok`` and its verdict fail). Crashed nodes are not waited for: the
completion lists them apart (``down``).

:func:`completion` is what :func:`~._collect.collect` asks, once, before the claims are
judged: the completion time is then a metric the claims see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._spec import Prepared

__all__ = ["Completion", "LastEvents", "Waiting", "completion"]


@dataclass(frozen=True)
class Waiting:
    """A live node parked when its run went quiet: in ``idle()`` since slot ``since``."""

    node: int
    since: int
    #: ``idle(until)``'s slot, None: only a message wakes it
    until: int | None = None


@dataclass
class Completion:
    """What :func:`completion` decides: the result's ``completion`` object (None for a
    run of a fixed number of slots), whether the reporter judges a complete task, and the
    ``termination`` invariant a deadlock adds (None otherwise)."""

    record: dict[str, Any] | None
    complete: bool
    invariant: dict[str, Any] | None = None
    #: the metrics' ``completion_time`` (a one-shot task's; unset for a run of slots)
    time: float | None = None
    deadlock: bool = False
    waiting: list[dict[str, Any]] = field(default_factory=list)


class LastEvents:
    """The last event each node recorded, kept by wrapping the reporter's handlers (for a
    deadlock's report; only runs that may deadlock pay for it)."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[int, str, tuple[Any, ...]]] = {}

    def wrap(self, handlers: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]:
        """``handlers``, each also noting its event as the node's last."""
        return {kind: self._wrapped(kind, h) for kind, h in handlers.items()}

    def _wrapped(self, kind: str, handler: Callable[..., None]) -> Callable[..., None]:
        last = self.last

        def noted(node: int, slot: int, *values: Any) -> None:
            last[node] = (slot, kind, values)
            handler(node, slot, *values)

        return noted

    def of(self, node: int) -> dict[str, Any] | None:
        """``{"slot", "kind", "values"}`` of ``node``'s last event (values not plain JSON as text), or None."""
        got = self.last.get(node)
        if got is None:
            return None
        slot, kind, values = got
        return {"slot": slot, "kind": kind, "values": [_plain(v) for v in values]}


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
        return list(v)
    return repr(v)


def may_deadlock(prep: Prepared) -> bool:
    """Whether a run of ``prep`` can end as a deadlock (a one-shot task with no completion predicate)."""
    return prep.scheme.until == "quiescent" and prep.scheme.done is None


def completion(prep: Prepared, reporter: Any, *, quiet: bool, last_active: int, slots_run: int,
               stability: Mapping[str, Any], waiting: list[Waiting] | None = None, down: list[int] | None = None,
               last_events: LastEvents | None = None) -> Completion:
    """A one-shot task's completion (see the module docstring); for a run of slots, nothing.

    Args:
        quiet: the run stopped because nothing could happen any more.
        last_active: the last slot in which a node was awake.
        waiting: the live nodes parked when the run went quiet.
        down: the nodes crashed at the end.

    A run that ended before completion also says at which slot it stopped
    (``stopped_at_slot``) and what ended it (``ended_by``): ``"deadlock"`` (quiet, nodes
    waiting), ``"slots"`` (the slot count the spec gave), ``"cap"`` (the task's safety
    cap, ``cap``, in force when the spec gave none) or ``"unstable"`` (the stability monitor).
    """
    if prep.scheme.until != "quiescent":
        return Completion(None, True)
    waiting = waiting or []
    done = quiet and (not waiting or (prep.scheme.done is not None and bool(prep.scheme.done(reporter))))
    if done:
        time = last_active / prep.quantum
        return Completion({"complete": True, "slot": last_active, "time": time}, True, time=time)
    record: dict[str, Any] = {"complete": False, "slot": None, "time": None}
    if quiet:
        ended_by = "deadlock"
    elif stability.get("stopped_at_slot") is not None:
        ended_by = "unstable"
    else:
        ended_by = "slots" if prep.cap is None else "cap"
    record |= {"stopped_at_slot": slots_run - 1, "ended_by": ended_by}
    if prep.cap is not None:
        record["cap"] = prep.cap
    if not quiet:
        return Completion(record, False)
    rows = []
    for w in sorted(waiting, key=lambda w: w.node):
        rows.append({"node": w.node, "waits_for": "a message" if w.until is None else f"a message or slot {w.until}",
                     "since": w.since, "last_event": last_events.of(w.node) if last_events is not None else None})
    record["waiting"] = rows
    if down:
        record["down"] = sorted(down)
    first = rows[0]
    invariant = {"ok": False, "deadlock_at_slot": slots_run - 1, "waiting": [r["node"] for r in rows],
                 "why": f"the run went quiet at slot {slots_run - 1} with {len(rows)} live node(s) still waiting and "
                        f"nothing left to wake them (first: node {first['node']}, waiting for {first['waits_for']} "
                        f"since slot {first['since']})"}
    return Completion(record, False, invariant, deadlock=True, waiting=rows)
