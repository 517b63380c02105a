"""``monotone``: monotone routing ``s^(i) -> v^(i)`` (Theorem 4, §3).

The packet of rank i goes to the i-th target ``v^(i)`` (targets sorted like the
sources, drawn by ``targets=random|corner|spread`` from ``placement_seed``): packed to
node i as in Theorem 3, then unpacked to its target in reverse dimension order,
``2 d (p - 1)`` steps in all (:func:`._packing.monotone_port`). With ``rank=prefix``
(the default) the ranks come from the §4.1 scan first; ``rank=given`` starts from them,
which is what Theorem 4 times. The node base, the scan and the bounds around it are
shared with ``packing`` (:mod:`._routing_node`), and so is the reporter
(:mod:`.reporter`). Under faults see :mod:`._offschedule`.
"""

from __future__ import annotations

from typing import Any

from .._base import Inputs, Param, Scheme, Setup
from ..kit._completion import parked_when_done
from . import theory as th
from ._inputs import (
    ACTIVE,
    PLACEMENT,
    PLACEMENT_SEED,
    SOURCE,
    TP,
    RoutingInputs,
    completion_claims,
    prepare_routing,
    safety_cap,
)
from ._packing import monotone_steps
from ._routing_node import routing_theory
from .node import RoutingNode
from .reporter import RoutingReporter

__all__ = ["SCHEME", "prepare_monotone", "theory_monotone"]


def prepare_monotone(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[RoutingInputs]:
    """Node parameters of ``monotone``: the active set, the targets, the quantum (:func:`._inputs.prepare_routing`)."""
    return prepare_routing(topology, params, load, "monotone")


def theory_monotone(setup: Setup) -> dict[str, Any]:
    """Theorem 4 for ``routing_time``; plus the scan for ``completion_time`` with rank=prefix."""
    prm: RoutingInputs = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    b = th.monotone_bounds(sides, wrap, prm.active, prm.targets or None)
    return routing_theory(setup, b, monotone_steps(sides))


#: What the run's schedule fixes exactly (:func:`._routing_node.routing_theory`): the rank
#: scan's time, and no link conflict or boundary collision (Theorems 3 and 4: the greedy
#: rule never queues). ``routing_time`` is the schedule's step count, an upper bound: the
#: last packet may arrive a step early (it does on some placements).
ROUTING_EXACT = ("prefix_time", "link_conflicts", "boundary_collisions")


SCHEME = Scheme(
    name="monotone",
    summary="monotone routing s^(i) -> v^(i): pack to node i, then unpack in reverse dimension order (Theorem 4)",
    source=SOURCE,
    node=RoutingNode,
    reporter=RoutingReporter,
    prepare=prepare_monotone,
    theory=theory_monotone,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
        Param("targets", str, "random", "where the targets v^(0) < ... < v^(M-1) are: random, corner or spread",
              ("random", "corner", "spread")),
        Param("rank", str, "prefix", "prefix: ranks by the §4.1 scan first; given: ranks known at time 0 (what Theorem 4 times)",
              ("prefix", "given")),
        TP,
    ),
    topologies=("torus", "mesh"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_monotone, "upper_bound"),
    faults=None,  # every kind: see ._offschedule
    claims=lambda setup, th: completion_claims(th, exact=ROUTING_EXACT, upper=("routing_time",)),
)
