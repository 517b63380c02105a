"""What the five hypercube broadcast schemes share on the prepare side: the paper, the load
(ρ of eq. (8) or λ), ``prepare`` and the record's common fields (:func:`make_scheme`).

The node base class is :mod:`._cube_node`; the topology-agnostic parts (births, queues, the
broadcast reporter) are in the kit, :mod:`slotnet.schemes.kit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Claim, Inputs, Load, Param, Reporter, Scheme, SchemeError, Setup
from ..kit import BroadcastReporter, births_choice
from . import theory as _theory

__all__ = ["LOADS", "SOURCE", "BroadcastInputs", "delay_bound_claims", "loads", "make_scheme", "prepare", "resolve_load"]

SOURCE = ("Stamoulis & Tsitsiklis, Efficient routing schemes for multiple broadcasts in hypercubes, "
          "IEEE Trans. Parallel Distrib. Syst. 4(7), 1993")

#: The load of every broadcast scheme: ρ of eq. (8) or the birth rate λ per node.
LOADS = (
    Load("rho", "load factor ρ = λ(2^d−1)/d (eq. 8)", "ρ"),
    Load("lam", "Poisson birth rate λ per node per slot", "λ"),
)


def loads(stability: str) -> tuple[Load, ...]:
    """:data:`LOADS` with ``--rho``'s help saying where this scheme is stable (its own limit, not one sentence for all)."""
    rho, lam = LOADS
    return (Load(rho.name, f"{rho.help}; {stability}", rho.metavar), lam)


def resolve_load(topology: Any, load: dict[str, float]) -> tuple[float, float]:
    """(λ, ρ) from exactly one of --rho / --lam on a d-cube (eq. 8).

    Raises:
        SchemeError: on a non-hypercube, on zero or two loads, or on a negative load.
    """
    if topology.kind != "hypercube":
        raise SchemeError(f"the broadcast schemes of Stamoulis & Tsitsiklis run on hypercubes, not {topology.spec}")
    d = topology.d
    if ("rho" in load) == ("lam" in load):
        raise SchemeError("broadcast schemes need exactly one load: --rho ρ (eq. 8: ρ = λ(2^d−1)/d) or --lam λ")
    if "rho" in load:
        rho = load["rho"]
        lam = _theory.lam_from_rho(d, rho)
    else:
        lam = load["lam"]
        rho = _theory.rho_from_lam(d, lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise SchemeError(f"load must be a finite number >= 0, got λ={lam!r}")
    return lam, rho


@dataclass(frozen=True, slots=True)
class BroadcastInputs:
    """What a node of a broadcast scheme knows (and its reporter and theory read): the load,
    the cube's dimension and the scheme's own ``--param`` values, parsed. A field a scheme
    does not declare keeps its default here and is read by no part of that scheme.

    Example:
        >>> BroadcastInputs(lam=0.1, rho=0.3, d=3).variant
        'random'
    """

    #: Poisson birth rate per node per slot, and the load factor ρ of eq. (8)
    lam: float
    rho: float
    #: the cube's dimension
    d: int
    #: bcast-balanced, bcast-dtree: per-port queue discipline (``label`` or ``fifo``) and ties
    discipline: str = "fifo"
    ties: str = "hops"
    #: bcast-indirect: virtual arcs (``D`` or ``Dprime``) and Rules A-F (``idling``) or §5.6
    rule: str = "D"
    idling: bool = True
    #: bcast-periodic: the schedule (``mnb``, ``random``, ``simultaneous``) and null packets
    variant: str = "random"
    nulls: str = "account"


def prepare(topology: Any, p: Mapping[str, Any], load: dict[str, float]) -> Inputs[BroadcastInputs]:
    """Every broadcast scheme's node parameters: λ, ρ, the cube's ``d`` and the scheme's own params."""
    lam, rho = resolve_load(topology, load)
    return Inputs(BroadcastInputs(lam, rho, topology.d, **p))


def _with_defaults(params: tuple[Param, ...]) -> Callable[[Any, Mapping[str, Any], dict[str, float]], Inputs[BroadcastInputs]]:
    """:func:`prepare` with the scheme's declared defaults for the parameters not given
    (the orchestrator gives them all; a direct call may give fewer)."""
    defaults = {q.name: q.default for q in params}

    def prepare_scheme(topology: Any, p: Mapping[str, Any], load: dict[str, float]) -> Inputs[BroadcastInputs]:
        return prepare(topology, {**defaults, **p}, load)
    return prepare_scheme


def make_scheme(
    name: str,
    summary: str,
    node: Callable[[NodeContext], Any],
    *,
    theory: Callable[[Setup], dict[str, Any]],
    params: tuple[Param, ...] = (),
    reporter: Callable[[Setup], Reporter] = BroadcastReporter,
    max_backlog: Callable[[Any, BroadcastInputs], float] | None = None,
    claims: Callable[[Setup, Mapping[str, Any]], Sequence[Claim]] | None = None,
    stability: str,
    choices: Callable[[Setup], Mapping[str, Any]] | None = None,
) -> Scheme:
    """A broadcast :class:`Scheme` record: the paper, the loads, :func:`prepare` and the
    hypercube shared by the five schemes, with the scheme's own node, theory adapter
    (the scheme module's, calling the named functions of :mod:`.theory`), parameters,
    reporter, backlog limit and ``stability``: where ρ keeps it stable, for ``--rho``'s help."""
    return Scheme(
        name=name,
        summary=summary,
        source=SOURCE,
        node=node,
        reporter=reporter,
        prepare=_with_defaults(params),
        theory=theory,
        params=params,
        loads=loads(stability),
        topologies=("hypercube",),
        max_backlog=max_backlog,
        claims=claims,
        choices=_with_births(choices),
    )


def _with_births(own: Callable[[Setup], Mapping[str, Any]] | None) -> Callable[[Setup], dict[str, Any]]:
    """The family's random choices: every node's births, Poisson(λ) per slot (§1: "each node
    independently generates packets according to a Poisson process with rate λ"; slots as in
    §2.1.1(b)), and the scheme's own (``own``: a tree per packet, ...)."""
    def choices(setup: Setup) -> dict[str, Any]:
        prm: BroadcastInputs = setup.params
        return {**births_choice(prm.lam), **(own(setup) if own is not None else {})}
    return choices


def delay_bound_claims(th: Mapping[str, Any]) -> list[Claim]:
    """The claim every broadcast scheme's theory shares: ``delay_lower_bound`` (Proposition 2
    for static schemes, Proposition 1 for any: ``max{d, rho / (4 (1 - rho))}``) is a lower
    bound on the mean broadcast delay. Its ``d`` part holds packet by packet (the farthest
    node is d hops away); its queueing part is a steady-state mean, so the claim carries the
    bound itself as its horizon."""
    if "delay_lower_bound" not in th:
        return []
    return [Claim("delay_lower_bound", "mean_broadcast_delay", "lower-bound",
                  why="Prop. 1 / Prop. 2: max{d, rho / (4 (1 - rho))}",
                  horizon=float(th["delay_lower_bound"]))]
