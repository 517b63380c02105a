"""The result of a run: metrics, theory, invariants, per-node statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Result", "WALL_CLOCK_FIELDS"]

#: Fields that depend on the machine, not on the spec and seed.
WALL_CLOCK_FIELDS = ("wall_seconds", "performance")


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
    #: one-shot collectives: whether the run went quiescent, at which slot and time
    completion: dict[str, Any] | None = None
    wall_seconds: float = 0.0
    performance: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.invariants.get("ok"))

    def to_dict(self, *, per_node: bool = False, series: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scheme": self.scheme,
            "topology": self.topology,
            "seed": self.seed,
            "slots": self.slots,
            "warmup": self.warmup,
            "slots_run": self.slots_run,
            "params": self.params,
            "load": self.load,
            "faults": self.faults,
            "metrics": self.metrics,
            "theory": self.theory,
            "invariants": self.invariants,
            "stability": self.stability,
            "transport": self.transport,
            "wall_seconds": self.wall_seconds,
            "performance": self.performance,
        }
        if self.completion is not None:
            out["completion"] = self.completion
        if per_node:
            out["per_node"] = self.per_node
        if series:
            out["series"] = self.series
        return out
