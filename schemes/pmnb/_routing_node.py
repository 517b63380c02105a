"""What ``packing`` (Theorem 3) and ``monotone`` (Theorem 4) share: the phase boundaries
and the bounds around the rank scan (their one node class is :class:`.node.RoutingNode`).

Phase 1 (``rank=prefix``, the default): the active nodes learn their rank by the §4.1
scan (value 1 on active nodes; rank = inclusive prefix - 1), ``2 sum (p_k - 1)`` steps of
t_p. ``rank=given`` skips it: Theorems 3 and 4 time the routing alone ("Theorems 3 and 4
assume that packets know their rank i", §3), so the theorem's bound is compared with
``routing_time``; ``completion_time`` adds the scan when there is one, and both phase
times are reported (``prefix_time``, ``routing_time``; :func:`routing_theory`).

Phase 2: every packet moves by its scheme's port rule (:meth:`.node.RoutingNode._hop`:
:func:`._packing.packing_port` for ``packing``, ``monotone_port`` for ``monotone``),
one whole packet per link and step, the node deciding from the packet's rank, its own
coordinates and the step number. A message carries ``["p", origin, rank]``; the packet's
next hop is recomputed by each node it visits. The reporter both schemes use is
:class:`.reporter.RoutingReporter`.
"""

from __future__ import annotations

import math
from typing import Any

from .._base import Setup
from ._inputs import RoutingInputs
from ._prefix import check_order, scan_steps

__all__ = ["phase_boundaries", "routing_theory", "start_tick"]


def phase_boundaries(sides: tuple[int, ...], task: str) -> set[int]:
    """Steps at which a routing phase begins or ends (0 and the end included)."""
    order = list(check_order(None, len(sides)))
    dims = order + (order[::-1] if task == "monotone" else [])
    out, t = {0}, 0
    for k in dims:
        t += sides[k] - 1
        out.add(t)
    return out


def start_tick(params: RoutingInputs, sides: tuple[int, ...], q: int) -> int:
    """The tick routing starts: after the rank scan with ``rank=prefix``, else 0."""
    if params.rank != "prefix":
        return 0
    return 2 * scan_steps(sides) * round(params.tp * q)


def routing_theory(setup: Setup, bounds: dict[str, Any], steps: int) -> dict[str, Any]:
    """Theorem 3 / 4 (``bounds``, from :mod:`.theory`) for ``routing_time``, which takes ``steps``;
    plus the scan for ``completion_time`` with rank=prefix."""
    prm: RoutingInputs = setup.params
    sides = tuple(setup.topology.sides)
    prefix = 2 * scan_steps(sides) * prm.tp if prm.rank == "prefix" else 0.0
    b = bounds
    return {
        "upper_bound": prefix + b["upper_bound"],
        "which": b["which"] + (" after the rank scan 2 sum(p_k - 1) t_p" if prefix else ""),
        "lower_bound": prefix + b["lower_bound"] if math.isfinite(b["lower_bound"]) else prefix,
        "lower_which": b["lower_which"] + (" (after the scan this algorithm needs)" if prefix else ""),
        "prefix_time": prefix,
        "routing_time": float(steps),
        "link_conflicts": 0,
        "boundary_collisions": 0,
    }
