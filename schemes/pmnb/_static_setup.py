"""Shared parameters and input checks of the static schemes (prepare side, no network).

Every static task starts at time 0 with each node knowing only its own part of the
task: whether it is active (``--param active=M placement=...``), for monotone routing
the target list ``v^(0) < ... < v^(K-1)`` indexed by rank (the task's definition, read by
a packet once it knows its rank), for array-broadcast how many packets it holds. The
placement is drawn here, once per run: ``prepare`` does not see the run's ``--seed``, so
``placement=random`` draws from its own seed ``placement_seed`` (node RNGs, e.g.
``values=random``, follow ``--seed``).
"""

from __future__ import annotations

import math
import random
from typing import Any

from .._base import Param, SchemeError
from ._placement import PLACEMENTS, place
from ._static_time import parse_tp

__all__ = [
    "ACTIVE",
    "PLACEMENT",
    "PLACEMENT_SEED",
    "TP",
    "active_ids",
    "check_grid",
    "equal_side",
    "placement_rng",
]

TP = Param("tp", parse_tp, 0.125, "t_p, one prefix step in packet times, 0 < t_p <= 1 (0.125 or 1/8; exact via the quantum)")
ACTIVE = Param("active", int, None, "M, the number of active nodes (default ceil(N/4); N gives the full MNB)")
PLACEMENT = Param("placement", str, "random", "where the active nodes are: random, corner (Fig. 3) or spread", PLACEMENTS)
PLACEMENT_SEED = Param("placement_seed", int, 0, "seed of placement=random (the run's --seed drives the node RNGs)")


def check_grid(topology: Any, scheme: str) -> tuple[tuple[int, ...], bool]:
    """``(sides, wrap)`` of a mesh or torus.

    Raises:
        SchemeError: on any other topology.
    """
    if topology.kind not in ("mesh", "torus"):
        raise SchemeError(f"{scheme} runs on mesh: (arrays) and torus: topologies, not {topology.spec}")
    return tuple(topology.sides), topology.kind == "torus"


def equal_side(sides: tuple[int, ...], scheme: str, why: str) -> int:
    """The common side p of a p^d mesh.

    Raises:
        SchemeError: on unequal sides, saying why they must be equal.
    """
    if len(set(sides)) != 1:
        raise SchemeError(f"{scheme} needs equal sides (a p^d mesh: {why}), got {'x'.join(map(str, sides))}")
    return sides[0]


def placement_rng(params: dict[str, Any], stream: str) -> random.Random:
    """The RNG of ``placement=random`` (and of monotone targets), from ``placement_seed``."""
    seed = params["placement_seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SchemeError(f"--param placement_seed={seed!r}: expected an integer >= 0")
    return random.Random(f"varvarigos-{stream}:{seed}")


def active_ids(sides: tuple[int, ...], params: dict[str, Any], kind_key: str = "placement", stream: str = "active") -> list[int]:
    """The active node ids (sorted) for ``active=M`` and the placement named by ``kind_key``.

    Raises:
        SchemeError: if M is outside 0..N.
    """
    n = math.prod(sides)
    m = params["active"]
    if m is None:
        m = math.ceil(n / 4)
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= n:
        raise SchemeError(f"--param active={m!r}: expected an integer in 0..{n} (the number of active nodes)")
    return list(place(params[kind_key], sides, m, placement_rng(params, stream)))
