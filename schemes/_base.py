"""What a scheme hands the orchestrator: its node rule, its metrics, its theory.

A scheme module imports only :mod:`slotnet.nodes` (its public API) and numerical
libraries; the orchestrator reads a :class:`Scheme` record and does the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Param", "Reporter", "Scheme", "SchemeError", "Setup"]


class SchemeError(ValueError):
    """A scheme parameter or load is invalid for this scheme/topology."""


@dataclass(frozen=True)
class Param:
    """One ``--param name=value`` a scheme accepts."""

    name: str
    kind: Callable[[str], Any]
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None

    def parse(self, text: str) -> Any:
        """Convert and check a CLI value.

        Raises:
            SchemeError: naming the parameter and the bad value.
        """
        try:
            value = self.kind(text)
        except (TypeError, ValueError) as exc:
            raise SchemeError(f"--param {self.name}={text!r}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            raise SchemeError(f"--param {self.name}={text!r}: expected one of {', '.join(map(str, self.choices))}")
        return value


@dataclass(frozen=True)
class Setup:
    """Everything static about a run that reporters and theory may read."""

    topology: Any  # slotnet.fabric.Topology (duck-typed: kind, spec, n_nodes, d/sides)
    params: Mapping[str, Any]
    load: Mapping[str, float]
    slots: int
    warmup: int
    seed: int


class Reporter(Protocol):
    """Streaming metrics of one run (observer side; never seen by nodes)."""

    @property
    def events(self) -> Mapping[str, tuple[str, ...]]:
        """event kind -> names of the values the node records with it (used by traces)."""

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        """kind -> fn(node, slot, *values), called for every recorded event."""

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A fault destroyed ``message``."""

    def backlog(self) -> int:
        """Packets waiting in node queues now (drives the instability monitor)."""

    def metrics(self) -> dict[str, Any]:
        """Measured metrics over the warm-up-excluded window."""

    def per_node(self) -> dict[str, list[Any]]:
        """Per-node statistics, one list entry per node."""

    def series(self) -> list[dict[str, Any]]:
        """Per-slot values (may be empty)."""

    def invariants(self, lost: Mapping[str, int], in_flight: list[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Scheme-specific invariants; each value a dict with at least ``ok``."""

    # Optional hooks, called only when a reporter defines them:
    #   end_slot(slot)            after every slot's barrier (time averages)
    #   holdings(per_node_items)  before invariants(): each node's held_packets()


@dataclass(frozen=True)
class Scheme:
    """A registered scheme."""

    name: str
    summary: str
    source: str
    node: Callable[[Any], Any]
    reporter: Callable[[Setup], Reporter]
    prepare: Callable[[Any, dict[str, Any], dict[str, float]], dict[str, Any]]
    theory: Callable[[Setup], dict[str, Any]] | None = None
    params: tuple[Param, ...] = ()
    loads: tuple[str, ...] = ()
    topologies: tuple[str, ...] = ("hypercube",)
    #: (topology, node params) -> queued packets per node past which a run is surely
    #: unstable; None: the orchestrator's default (1000)
    max_backlog: Callable[[Any, Mapping[str, Any]], float] | None = None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.params) or "none"
        raise SchemeError(f"scheme {self.name!r} has no parameter {name!r} (known: {known})")
