"""The partial-exchange (§5) and dynamic-broadcast (§6) schemes of Varvarigos & Bertsekas.

* ``partial-exchange`` -- M active nodes of a p x p array each send a personalised
  packet to every other node: row and column sums by the median-rooted prefix (Phase 1,
  ``2 floor(p/2)`` steps of t_p), the sets R and C, one-turn shortest paths with the
  priorities a)-b) (Phase 2). Measured: ``completion_time`` and the per-phase times,
  beside §5's upper bound ``2 floor(sqrt M)(N - p) + 2(p - 1) + p t_p``, the bound that
  holds for the placement at hand (per node, cuts, distance) and, labelled as such, the
  paper's worst case over placements ``mN/4``. On a p x p torus the rule runs on the
  array links only (§5: "and, therefore also in a p x p torus"); other shapes (d != 2,
  unequal sides) are refused: §5 is stated for p x p arrays only.
* ``dynamic-broadcast`` -- Poisson broadcast requests (``--rho``, the load (12), or
  ``--lam`` per node), served by successive PMNB intervals of Theorem 6's algorithm
  (packets split, §4.1, as §6 assumes), on p^d tori and arrays of any d. Measured:
  ``mean_delay`` against Theorem 7's bound (11) with X, V of (9), (10), the queue
  figures and ``stable``. Past (14) Theorem 7 gives no bound (theory: ``stable`` no,
  ``mean_delay`` inf); the run's own verdict is the orchestrator's monitor (a steadily
  growing backlog, or more than :data:`MAX_BACKLOG` packets per node), which reports
  unstable surely past ``saturation_load`` (where even back-to-back full intervals fall
  behind, our derivation); between (14) and that load the scheme may still be stable.

Node rules: :mod:`._exchange_node` and :mod:`._dynamic_node`; decisions that need no
network: :mod:`._exchange_rule`, :mod:`._dynamic_schedule`, :mod:`._dynamic_interval`.

Faults (issue #11): refused, every kind. §5 Phase 1's row and column sums and §6's
PMNB intervals (the rank scan, subphase windows every node computes from M) are fixed
steps on the reliable links of §2 with no retransmission: a lost, copied or late
message leaves a node without a sum or a rank (formerly a ``KeyError`` inside the node
rule). A faulted run is refused before its first slot (:mod:`._fault_support`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._base import Load, Param, Scheme, SchemeError, Setup
from . import theory as th
from ._dynamic_node import DynamicNode, DynamicReporter
from ._dynamic_schedule import saturation_load
from ._exchange_node import ExchangeNode, ExchangeReporter
from ._exchange_params import active_ids, equal_sides, parse_tp, quantum
from ._fault_support import NO_FAULTS, WHY_DYNAMIC, WHY_EXCHANGE
from ._placement import PLACEMENTS
from ._prefix import line_scan_steps

__all__ = ["DYNAMIC", "EXCHANGE", "MAX_BACKLOG", "SCHEMES"]

SOURCE = "Varvarigos & Bertsekas, Partial multinode broadcast and partial exchange algorithms for d-dimensional meshes"

#: Queued broadcast requests per node past which a dynamic run is stopped as unstable.
MAX_BACKLOG = 100.0

_TP = Param("tp", parse_tp, 0.125, "t_p, one prefix step in packet times, 0 < t_p <= 1 (0.125 or 1/8; exact via the quantum)")


def _ticks(tp: float, q: int) -> int:
    a = round(tp * q)
    if abs(a - tp * q) > 1e-9 or a < 1:
        raise SchemeError(f"t_p={tp!r} is not a whole number of ticks at quantum {q}")
    return a


# --------------------------------------------------------------------------------------
# partial-exchange


def _prepare_exchange(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    sides = tuple(topology.sides)
    if len(sides) != 2 or sides[0] != sides[1]:
        raise SchemeError(f"partial-exchange (§5) runs on p x p arrays (and tori, on their array links), not {topology.spec}")
    ids = active_ids(sides, params["active"], params["placement"], params["placement_seed"])
    tp = params["tp"]
    q = quantum(tp)
    return {"tp": tp, "quantum": q, "tp_ticks": _ticks(tp, q), "active_ids": ids, "active": len(ids),
            "placement": params["placement"], "placement_seed": params["placement_seed"]}


def _exchange_theory(setup: Setup) -> dict[str, Any]:
    """§5's bounds beside the run: upper bound, the placement's lower bound, mN/4."""
    geo, prm = setup.topology, setup.params
    sides, wrap = tuple(geo.sides), bool(geo.wrap)
    p, n, tp = sides[0], geo.n_nodes, prm["tp"]
    b = th.bounds_for("partial-exchange", sides, wrap, active=list(prm["active_ids"]), tp=tp)
    m = math.isqrt(prm["active"])
    return {
        "completion_time": b["upper_bound"],
        "completion_time_lower_bound": b["lower_bound"],
        "completion_time_lower_bound_worst_case": b["lower_bound_worst_case"],
        "phase1_time": line_scan_steps(p) * tp,
        "first_leg_time": m * (n - p) + (p - 1),
        "max_r_per_row": m,
        "max_c_per_column": m,
        "which": b["which"] + "; lower: " + b["lower_which"]
        + "; worst case: mN/4 over placements (Fig. 3), not a bound for this placement",
        "reading": "completion_time, first_leg_time (the proof's first half), max_r/c (Lemma 3): upper bounds; "
                   "phase1_time: exact (2 floor(p/2) t_p <= p t_p)",
        "phase1_bound": p * tp,
        "m": m,
    }


EXCHANGE = Scheme(
    name="partial-exchange",
    summary="§5: M active nodes send a personalised packet to every node (p x p arrays; tori on array links)",
    source=SOURCE + ", §5",
    node=ExchangeNode,
    reporter=ExchangeReporter,
    prepare=_prepare_exchange,
    theory=_exchange_theory,
    params=(
        Param("active", int, None, "M, the number of active nodes (default ceil(N/4))"),
        Param("placement", str, "random", "where the active nodes are: random, corner (Fig. 3) or spread", PLACEMENTS),
        Param("placement_seed", int, 0, "seed of placement=random (the run's --seed drives the node RNGs)"),
        _TP,
    ),
    topologies=("mesh", "torus"),
    quantum=lambda prm: prm["quantum"],
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=WHY_EXCHANGE,
)


# --------------------------------------------------------------------------------------
# dynamic-broadcast


def _prepare_dynamic(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    sides = equal_sides(topology, "dynamic-broadcast (§6, X and V of (9), (10))")
    wrap = bool(topology.wrap)
    if ("rho" in load) == ("lam" in load):
        raise SchemeError("dynamic-broadcast takes exactly one of --rho (the load (12)) and --lam (requests per node per time unit)")
    if "lam" in load:
        lam = load["lam"]
        rho = th.rho_from_lam(lam, sides, wrap)
    else:
        rho = load["rho"]
        lam = th.lam_from_rho(rho, sides, wrap)
    tp = params["tp"]
    g, d = th.gamma(wrap), len(sides)
    q = quantum(tp, (g * d,))
    return {"tp": tp, "quantum": q, "tp_ticks": _ticks(tp, q), "lam": lam, "rho": rho,
            "X": th.unit_broadcast_length(sides, wrap), "V": th.reservation_length(sides, wrap, tp),
            "stability_limit": th.stability_limit(sides, wrap, tp)}


def _dynamic_theory(setup: Setup) -> dict[str, Any]:
    """Theorem 7's bound (11) with X, V of (9), (10); the limit (14)."""
    geo, prm = setup.topology, setup.params
    sides, wrap = tuple(geo.sides), bool(geo.wrap)
    b = th.bounds_for("dynamic-broadcast", sides, wrap, tp=prm["tp"], rho=prm["rho"])
    return {
        "mean_delay": b["upper_bound"],
        "mean_delay_lower_bound": b["lower_bound"],
        "stable": b["stable"],
        "which": b["which"] + " (an upper bound; infinite past (14))",
        "rho": b["rho"],
        "lam": b["lam"],
        "X": b["X"],
        "V": b["V"],
        "stability_limit": b["stability_limit"],
        "universal_limit": b["universal_limit"],
        "saturation_load": saturation_load(sides, wrap, prm["tp"]),
        "light_load_bound": b["light_load_bound"],
    }


def _backlog(topology: Any, params: Mapping[str, Any]) -> float:
    return MAX_BACKLOG


DYNAMIC = Scheme(
    name="dynamic-broadcast",
    summary="§6: Poisson broadcasts served by successive PMNB intervals (Theorem 6 with mini-packets)",
    source=SOURCE + ", §6",
    node=DynamicNode,
    reporter=DynamicReporter,
    prepare=_prepare_dynamic,
    theory=_dynamic_theory,
    params=(_TP,),
    loads=(Load("rho", "mesh utilisation factor (12): lam (N-1)/(gamma d)", "RHO"),
           Load("lam", "broadcast requests per node per time unit (Poisson)", "LAM")),
    topologies=("mesh", "torus"),
    max_backlog=_backlog,
    quantum=lambda prm: prm["quantum"],
    faults=NO_FAULTS,
    faults_why=WHY_DYNAMIC,
)

SCHEMES = (EXCHANGE, DYNAMIC)
