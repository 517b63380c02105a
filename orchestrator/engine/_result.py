"""The result of a run: metrics, theory, invariants, per-node statistics.

JSON has no infinity and no NaN. Where a value is not finite (a model's delay above
saturation is ``math.inf``), the JSON object holds ``null`` and its top level holds
``non_finite``: the JSON Pointer (RFC 6901) of every such value, e.g.
``"/theory/mean_wait"``, mapped to ``"inf"``, ``"-inf"`` or ``"nan"``. :func:`json_ready`
makes that object; ``Result.to_dict()`` returns it, so ``json.loads`` of what
``slotnet run --json`` prints equals ``result.to_dict()``. The attributes of a
:class:`Result` keep Python's floats (``result.theory["mean_wait"]`` is ``math.inf``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slotnet.nodes.runtime import DEFAULT_RNG

if TYPE_CHECKING:
    from ._fault_rules import FaultJudgement

__all__ = ["NON_FINITE", "Result", "WALL_CLOCK_FIELDS", "json_ready"]

#: The top-level key of a JSON object that lists its non-finite values (see the module docstring).
NON_FINITE = "non_finite"


def json_ready(value: Any) -> Any:
    """``value`` as plain JSON data: what ``json.dumps`` writes and ``json.loads`` reads back equal.

    Dicts get string keys; tuples become lists, sets sorted lists, numpy scalars and
    arrays Python numbers and lists. A float that is not finite becomes None, and a dict
    at the top gets :data:`NON_FINITE`: each such value's JSON Pointer mapped to ``"inf"``,
    ``"-inf"`` or ``"nan"`` (the key is left out when every number is finite).

    Example:
        >>> json_ready({"theory": {"mean_wait": float("inf"), "rho": 1.2}, "hist": (0.5, float("nan"))})
        {'theory': {'mean_wait': None, 'rho': 1.2}, 'hist': [0.5, None], 'non_finite': {'/theory/mean_wait': 'inf', '/hist/1': 'nan'}}
    """
    found: dict[str, str] = {}
    out = _plain(value, "", found)
    if found and isinstance(out, dict):
        out[NON_FINITE] = found
    return out


def _plain(x: Any, path: str, found: dict[str, str]) -> Any:
    if x is None or type(x) in (bool, int, str):
        return x
    if isinstance(x, float):
        if math.isfinite(x):
            return float(x)
        found[path] = "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        return None
    if isinstance(x, dict):
        return {str(k): _plain(v, f"{path}/{_pointer(str(k))}", found) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        x = sorted(x)
    if isinstance(x, (list, tuple)):
        return [_plain(v, f"{path}/{i}", found) for i, v in enumerate(x)]
    if isinstance(x, (int, str)):  # subclasses (an IntEnum, a str enum): their plain value
        return int(x) if isinstance(x, int) else str.__str__(x)  # str() of a str enum is its name
    if hasattr(x, "tolist"):  # numpy scalars and arrays
        return _plain(x.tolist(), path, found)
    return x


def _pointer(key: str) -> str:
    """One reference token of a JSON Pointer (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")

#: Keys of ``to_dict()`` that depend on the machine, not on the spec and seed: everything
#: timed is under ``"timing"`` (``wall_seconds`` and ``performance``), and where the result
#: came from under ``"provenance"`` (slotnet's version, the build, the git commit, the
#: command that reruns it); drop them and the rest is byte-identical for one spec and seed.
WALL_CLOCK_FIELDS = ("timing", "provenance")


@dataclass
class Result:
    """What ``slotnet run`` reports (``to_dict`` is the ``--json`` object)."""

    scheme: str
    topology: dict[str, Any]
    seed: int
    slots: int
    warmup: int
    params: dict[str, Any]
    load: dict[str, float]
    metrics: dict[str, Any]
    invariants: dict[str, Any]
    theory: dict[str, Any] | None = None
    stability: dict[str, Any] = field(default_factory=dict)
    per_node: dict[str, list[Any]] = field(default_factory=dict)
    series: list[dict[str, Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    slots_run: int = 0
    #: the transport that carried the run (``{"kind": "inprocess"}`` or a sharded one)
    transport: dict[str, Any] = field(default_factory=lambda: {"kind": "inprocess"})
    #: one-shot collectives: whether the task completed (every live node returned, or the
    #: scheme's completion predicate held when the run went quiet), at which slot and time;
    #: a deadlock names the nodes still waiting (``waiting``)
    completion: dict[str, Any] | None = None
    #: runs with faults: what each fault cost, and whether the scheme delivered what they left
    #: deliverable (see ``collect``); None without faults
    fault_impact: dict[str, Any] | None = None
    #: SHA-256 of the trace file the run wrote (``sha256sum FILE``), None without a complete trace
    trace_fingerprint: str | None = None
    wall_seconds: float = 0.0
    performance: dict[str, Any] = field(default_factory=dict)
    #: the run's one verdict ``{"ok", "reasons"}`` (``engine.verdict``, the same whoever ran
    #: it); None: not judged
    verdict: dict[str, Any] | None = None
    #: where the result came from: ``slotnet`` (version), ``build`` (compiled, pure or mixed),
    #: ``commit`` (the git commit, in a checkout only) and ``command`` (the ``slotnet run``
    #: command that reruns it); machine-dependent, like ``timing``
    provenance: dict[str, Any] = field(default_factory=dict)
    #: the nodes' random generator (``RunSpec.rng``; ``"rng"`` after ``"seed"`` in ``to_dict``):
    #: the seed and the generator together fix the run's draws
    rng: str = DEFAULT_RNG
    #: the books behind the verdict's fault rules (``_fault_rules.FaultJudgement``: every loss
    #: by book, the missed broadcasts), for ``explore``'s table; not part of ``to_dict``
    fault_books: FaultJudgement | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return bool(self.invariants.get("ok"))

    @property
    def measured_slots(self) -> int:
        """Slots the metrics cover: those run after the warm-up (fewer than planned if stopped early)."""
        return max(0, self.slots_run - self.warmup)

    @property
    def complete(self) -> bool | None:
        """Whether a one-shot task completed (None for a run of a fixed number of slots)."""
        return None if self.completion is None else bool(self.completion.get("complete"))

    @property
    def note(self) -> str | None:
        """Why the metrics are empty or cover less than planned, or why a one-shot task is
        incomplete; None when there is nothing to say."""
        if self.completion is not None:
            return None if self.complete else self._incomplete()
        if self.slots_run >= self.slots:
            return None
        if self.measured_slots == 0:
            return (f"nothing was measured: the run stopped after slot {self.slots_run - 1}, "
                    f"before its warm-up of {self.warmup} slots ended")
        return (f"the run stopped after slot {self.slots_run - 1}: metrics cover the {self.measured_slots} "
                f"slots run after the warm-up, not the {self.slots - self.warmup} planned")

    def _incomplete(self) -> str:
        c = self.completion or {}
        at = c.get("stopped_at_slot", self.slots_run - 1)
        if c.get("ended_by") == "deadlock":
            waiting = c.get("waiting", [])
            shown = ", ".join(f"node {w['node']} waits for {w['waits_for']} since slot {w['since']}" for w in waiting[:4])
            more = f" and {len(waiting) - 4} more" if len(waiting) > 4 else ""
            down = f"; down (crashed): {', '.join(map(str, c['down']))}" if c.get("down") else ""
            return (f"deadlock at slot {at}: the run went quiet with {len(waiting)} live node(s) that never returned "
                    f"from run() and nothing left to wake them ({shown}{more}{down}); see completion.waiting")
        why = {"cap": f"the safety cap of {self.slots} slots ended the run before its task completed; "
                      "give --slots to run longer",
               "unstable": "the stability monitor stopped the run before its task completed",
               }.get(c.get("ended_by", ""), f"the {self.slots} slots given ended the run before its task completed")
        return (f"incomplete at slot {at}: {why}. The invariants judge what was due by then "
                "(packets in flight, queued or waiting are accounted for)")

    def to_dict(self, *, per_node: bool = False, series: bool = False) -> dict[str, Any]:
        """The ``--json`` object: plain JSON data, non-finite values as None listed under
        ``non_finite`` (see :func:`json_ready`).

        Args:
            per_node: add ``per_node`` (``--per-node``).
            series: add ``series`` (``--series``).
        """
        out: dict[str, Any] = {
            "scheme": self.scheme,
            "topology": self.topology,
            "seed": self.seed,
            "rng": self.rng,
            "slots": self.slots,
            "warmup": self.warmup,
            "slots_run": self.slots_run,
            "measured_slots": self.measured_slots,
            "params": self.params,
            "load": self.load,
            "faults": self.faults,
            "metrics": self.metrics,
            "theory": self.theory,
            "invariants": self.invariants,
            "stability": self.stability,
            "transport": self.transport,
        }
        if self.trace_fingerprint is not None:
            out["trace_fingerprint"] = self.trace_fingerprint
        out |= {
            "timing": {"wall_seconds": self.wall_seconds, "performance": self.performance},
        }
        if self.provenance:
            out["provenance"] = self.provenance
        if self.note is not None:
            out["note"] = self.note
        if self.completion is not None:
            out["completion"] = self.completion
        if self.fault_impact is not None:
            out["fault_impact"] = self.fault_impact
        if self.verdict is not None:
            out["verdict"] = self.verdict
        if per_node:
            out["per_node"] = self.per_node
        if series:
            out["series"] = self.series
        return json_ready(out)
