"""``packing``: greedy packing of the M active packets to nodes 0..M-1 (Theorem 3, §3).

A packet of rank r goes to node r of the linear order (:func:`._packing.rank_destination`),
correcting one dimension per phase, ``d (p - 1)`` steps in all, one whole packet per link
and step (:func:`._packing.packing_port`). With ``rank=prefix`` (the default) the ranks
come from the §4.1 scan first; ``rank=given`` starts from them, which is what Theorem 3
times. The node base, the scan and the bounds around it are shared with ``monotone``
(:mod:`._routing_node`), and so is the reporter (:mod:`.reporter`). Under faults see :mod:`._offschedule`.
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
from ._packing import packing_steps
from ._routing_node import routing_theory
from .node import RoutingNode
from .reporter import RoutingReporter

__all__ = ["SCHEME", "prepare_packing", "theory_packing"]


def prepare_packing(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[RoutingInputs]:
    """Node parameters of ``packing``: the active set and the quantum (:func:`._inputs.prepare_routing`)."""
    return prepare_routing(topology, params, load, "packing")


def theory_packing(setup: Setup) -> dict[str, Any]:
    """Theorem 3 for ``routing_time``; plus the scan for ``completion_time`` with rank=prefix."""
    prm: RoutingInputs = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    b = th.packing_bounds(sides, wrap, prm.active)
    return routing_theory(setup, b, packing_steps(sides))


#: What the run's schedule fixes exactly (:func:`._routing_node.routing_theory`): the rank
#: scan's time, and no link conflict or boundary collision (Theorems 3 and 4: the greedy
#: rule never queues). ``routing_time`` is the schedule's step count, an upper bound: the
#: last packet may arrive a step early (it does on some placements).
ROUTING_EXACT = ("prefix_time", "link_conflicts", "boundary_collisions")


SCHEME = Scheme(
    name="packing",
    summary="greedy packing of the active packets to nodes 0..M-1, dimension by dimension (Theorem 3)",
    source=SOURCE,
    node=RoutingNode,
    reporter=RoutingReporter,
    prepare=prepare_packing,
    theory=theory_packing,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
        Param("rank", str, "prefix", "prefix: ranks by the §4.1 scan first; given: ranks known at time 0 (what Theorem 3 times)",
              ("prefix", "given")),
        TP,
    ),
    topologies=("torus", "mesh"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_packing, "upper_bound"),
    faults=None,  # every kind: see ._offschedule
    claims=lambda setup, th: completion_claims(th, exact=ROUTING_EXACT, upper=("routing_time",)),
)
