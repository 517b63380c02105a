"""The paper's bounds as pure functions, and one function per scheme to frame a measured run.

Source: E. A. Varvarigos and D. P. Bertsekas, "Partial multinode broadcast and partial
exchange algorithms for d-dimensional meshes". Times are in the paper's unit, the time
a packet takes to cross a link; t_p (0 < t_p <= 1) is one parallel-prefix step. A shape
is ``(sides, wrap)``: ``wrap`` True for a torus, False for an array; results stated for
``N = p^d`` raise ``ValueError`` on unequal sides.

Where things are:

* :mod:`._theory_static` -- (3), (4); Theorems 1-4; the prefix times; Lemmas 1, 2;
  Theorem 6 = (5), (6); §4.2's (5'), (6') and the MNB of §4.2's end;
* :mod:`._theory_exchange` -- §5's partial-exchange bounds, and lower bounds for a
  given placement (per node, box cuts, distance), derived here and documented there;
* :mod:`._theory_dynamic` -- §6: (9), (10), (12), Theorem 7's (11), (13), (14).

Here: the bounds that frame a run, one named function per scheme, which that scheme's
theory adapter calls (:func:`prefix_scan_bounds`, :func:`packing_bounds`,
:func:`monotone_bounds`, :func:`array_broadcast_bounds`, :func:`pmnb_bounds`,
:func:`partial_exchange_bounds`, :func:`dynamic_broadcast_bounds`); :func:`diameter`,
:func:`radius`.

The readings of the paper's slips and gaps are in those modules' docstrings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ._packing import rank_destination, ranks
from ._prefix import coords_at
from ._theory_dynamic import (
    delay_bound,
    delay_bound_light,
    lam_from_rho,
    reservation_length,
    rho_from_lam,
    stability_limit,
    stability_margin,
    theorem7_delay_bound,
    unit_broadcast_length,
    unsplit_constants,
)
from ._theory_exchange import (
    _pe_shape,
    cut_bound,
    distance_bound,
    pe_lower_cluster,
    pe_lower_worst_case,
    pe_lower_worst_case_proved,
    pe_upper_bound,
    per_node_bound,
    placement_bound,
)
from ._theory_shape import check_m, check_shape, check_tp, gamma, n_nodes
from ._theory_static import (
    lemma1_phase3,
    lemma1_phase3_sum,
    lemma2_bound,
    line_prefix_time,
    line_prefix_time_exact,
    min_piece,
    mnb_by_torus_mnb,
    mnb_torus_optimal,
    mnb_unsplit_bound,
    monotone_time,
    packing_time,
    pmnb_lower_bound,
    pmnb_split_bound,
    pmnb_unsplit_bound,
    prefix_time,
    theorem1_mnb_array,
    theorem1_printed,
    theorem2_bound,
    theorem2_remark,
    torus_mnb_2d,
)

__all__ = [
    "array_broadcast_bounds",
    "cut_bound",
    "delay_bound",
    "delay_bound_light",
    "diameter",
    "distance_bound",
    "dynamic_broadcast_bounds",
    "gamma",
    "lam_from_rho",
    "lemma1_phase3",
    "lemma1_phase3_sum",
    "lemma2_bound",
    "line_prefix_time",
    "line_prefix_time_exact",
    "min_piece",
    "mnb_by_torus_mnb",
    "mnb_torus_optimal",
    "mnb_unsplit_bound",
    "monotone_bounds",
    "monotone_time",
    "packing_bounds",
    "packing_time",
    "partial_exchange_bounds",
    "pe_lower_cluster",
    "pe_lower_worst_case",
    "pe_lower_worst_case_proved",
    "pe_upper_bound",
    "per_node_bound",
    "placement_bound",
    "pmnb_bounds",
    "pmnb_lower_bound",
    "pmnb_split_bound",
    "pmnb_unsplit_bound",
    "prefix_scan_bounds",
    "prefix_time",
    "radius",
    "reservation_length",
    "rho_from_lam",
    "stability_limit",
    "stability_margin",
    "theorem1_mnb_array",
    "theorem1_printed",
    "theorem2_bound",
    "theorem2_remark",
    "theorem7_delay_bound",
    "torus_mnb_2d",
    "unit_broadcast_length",
    "unsplit_constants",
]

Active = int | Iterable[int] | None
"""M, or the active node ids (None: missing, refused with a message)."""


def diameter(sides: Sequence[int], wrap: bool) -> int:
    """Largest hop distance: ``sum (p_k - 1)`` on an array, ``sum floor(p_k/2)`` on a torus."""
    return sum((p // 2) if wrap else (p - 1) for p in check_shape(sides, wrap))


def radius(sides: Sequence[int], wrap: bool) -> int:
    """Smallest eccentricity, ``sum floor(p_k/2)``: the centre of an array (where
    ``floor(p/2) = ceil((p-1)/2)``), any node of a torus (where it is the diameter)."""
    return sum(p // 2 for p in check_shape(sides, wrap))


def _distance(a: int, b: int, sides: tuple[int, ...], wrap: bool) -> int:
    total = 0
    for x, y, p in zip(coords_at(a, sides), coords_at(b, sides), sides):
        delta = abs(x - y)
        total += min(delta, p - delta) if wrap else delta
    return total


def _need_tp(what: str, tp: float | None) -> float:
    if tp is None:
        raise ValueError(f"{what} needs t_p (the prefix step, 0 < t_p <= 1)")
    return check_tp(tp)


def _check_split(split: bool) -> bool:
    if not isinstance(split, bool):
        raise ValueError(f"split must be True or False, got {split!r}")
    return split


def _split_active(active: Active, n: int, what: str, *, distinct: bool = True) -> tuple[int, list[int] | None]:
    if active is None:
        raise ValueError(f"{what} needs the active nodes: a count M or a list of node ids")
    if isinstance(active, bool):
        raise ValueError(f"active must be a count or node ids, got {active!r}")
    if isinstance(active, int):
        return check_m(active, n, "M"), None
    ids = [int(v) for v in active]
    for v in ids:
        if not 0 <= v < n:
            raise ValueError(f"active node id {v} is outside 0..{n - 1}")
    if distinct and len(set(ids)) != len(ids):
        raise ValueError("active node ids must be distinct")
    return len(ids), ids


# --------------------------------------------------------------------------------------
# The bounds that frame a measured run, one function per scheme. Each returns the upper
# bound of the theorem that covers the run and the best lower bound we have:
# ``{"upper_bound", "lower_bound", "which", "lower_which", ...}`` plus the scheme's extras.
# ``active`` is M or the active node ids (a placement: then the lower bound also uses it).
# They raise ValueError on input the bound cannot use.


def prefix_scan_bounds(sides: Sequence[int], wrap: bool, tp: float) -> dict[str, Any]:
    """§4.1 Phase 1 (Fig. 2), ``2d(p-1) t_p``; and §5's row/column prefix (``row_column_*``)."""
    s = check_shape(sides, wrap)
    tp = _need_tp("prefix-scan", tp)
    return {
        "upper_bound": prefix_time(s, tp),
        "which": "§4.1 Phase 1 (Fig. 2): 2d(p-1) t_p",
        "lower_bound": diameter(s, wrap) * tp,
        "lower_which": "every node needs the total: diameter x t_p",
        "row_column_upper_bound": line_prefix_time(s, tp),
        "row_column_lower_bound": max(((p // 2) if wrap else (p - 1)) for p in s) * tp,
    }


def packing_bounds(sides: Sequence[int], wrap: bool, active: Active) -> dict[str, Any]:
    """Theorem 3, ``d(p-1)``; below it, with a placement, the farthest packet's hops to its rank's node."""
    s = check_shape(sides, wrap)
    _m, ids = _split_active(active, n_nodes(s), "packing")
    lower, why = 0.0, "none without a placement"
    if ids is not None:
        rk = ranks(ids, s)
        dests = {v: sum(c * math.prod(s[:k]) for k, c in enumerate(rank_destination(r, s))) for v, r in rk.items()}
        lower = float(max((_distance(v, dests[v], s, wrap) for v in ids), default=0))
        why = "farthest packet: hops to its rank's node"
    return {"upper_bound": float(packing_time(s)), "which": "Theorem 3: d(p-1)", "lower_bound": lower, "lower_which": why}


def monotone_bounds(sides: Sequence[int], wrap: bool, active: Active, targets: Sequence[int] | None = None) -> dict[str, Any]:
    """Theorem 4, ``2d(p-1)``; below it, given the sources and the targets ``v^(i)`` (sorted like
    the sources), the farthest packet's hops to its target."""
    s = check_shape(sides, wrap)
    _m, ids = _split_active(active, n_nodes(s), "monotone")
    lower, why = 0.0, "none without sources and targets"
    if ids is not None and targets is not None:
        tg = [int(v) for v in targets]
        if len(tg) != len(ids):
            raise ValueError(f"{len(ids)} sources but {len(tg)} targets")
        lower = float(max((_distance(a, b, s, wrap) for a, b in zip(ids, tg)), default=0))
        why = "farthest packet: hops to its target"
    return {"upper_bound": float(monotone_time(s)), "which": "Theorem 4: 2d(p-1)", "lower_bound": lower, "lower_which": why}


def array_broadcast_bounds(sides: Sequence[int], wrap: bool, active: Active, split: bool = True) -> dict[str, Any]:
    """Theorem 2 on a linear array or ring; ``active`` is K, or the source id of every packet
    (repeats: several packets at a node); ``split``: halves on a ring."""
    s = check_shape(sides, wrap)
    split = _check_split(split)
    if len(s) != 1:
        raise ValueError(f"array-broadcast runs on a linear array or ring (one side), got sides {s}")
    p = s[0]
    if isinstance(active, int) and not isinstance(active, bool):
        if active < 0:
            raise ValueError(f"K (packets) must be >= 0, got {active}")
        k, ids = active, None
    else:
        k, ids = _split_active(active, p, "array-broadcast", distinct=False)
    piece = 0.5 if split else 1.0
    rnd = (lambda x: x) if split else math.ceil
    deg = [2] * p if wrap else [1] + [2] * (p - 2) + [1]
    if ids is None:
        if k == 0:
            lower = 0.0
        elif wrap:
            lower = max(rnd((k - k // p) / 2), (p // 2) * piece)
        else:
            lower = max(math.ceil(k / 2), math.ceil((p - 1) / 2) * piece)
        why = "any placement: end nodes (array) or the least loaded node, and distance"
    else:
        count = [0] * p
        for v in ids:
            count[v] += 1
        lower = float(max(rnd((k - c) / g) for c, g in zip(count, deg)))
        ecc = max(((p // 2) if wrap else max(v, p - 1 - v)) for v in set(ids)) if ids else 0
        lower = max(lower, ecc * piece)
        why = "per node (packets to receive / links) and distance"
    which = "Theorem 2: (K + p - 1)/2 on a ring with halves" if (wrap and split) else "Theorem 2: K + p - 1"
    return {"upper_bound": theorem2_bound(s, wrap, k, split=split), "which": which, "lower_bound": float(lower), "lower_which": why}


def pmnb_bounds(sides: Sequence[int], wrap: bool, active: Active, tp: float, split: bool = True) -> dict[str, Any]:
    """Theorem 6's (5)/(6) with splitting, §4.2's (5')/(6') without; below, (3)/(4) or the bound
    for the placement at hand (``placement``); at M = N the full-MNB reference values."""
    s = check_shape(sides, wrap)
    split = _check_split(split)
    tp = _need_tp("pmnb", tp)
    n = n_nodes(s)
    m, ids = _split_active(active, n, "pmnb")
    eq = ("5" if wrap else "6") + ("" if split else "'")
    upper = pmnb_split_bound(s, wrap, m, tp) if split else pmnb_unsplit_bound(s, wrap, m, tp)
    any_lower = pmnb_lower_bound(s, wrap, m, integral=not split)
    out: dict[str, Any] = {
        "upper_bound": upper,
        "which": f"Theorem 6, eq. ({eq})" if split else f"§4.2, eq. ({eq})",
        "lower_bound": any_lower,
        "lower_which": f"eq. ({3 if wrap else 4})" + ("" if split else ", ceiling (whole packets)"),
        "lower_bound_any_placement": any_lower,
    }
    if ids is not None:
        pb = placement_bound(ids, s, wrap, "broadcast", split=split, piece=min_piece(len(s), wrap, split))
        if pb["bound"] > any_lower:
            out["lower_bound"] = pb["bound"]
            out["lower_which"] = "placement: " + max(("per_node", "cut", "distance"), key=lambda key: pb[key])
        out["placement"] = pb
    if m == n:
        out["mnb_by_torus_mnb"] = float(mnb_by_torus_mnb(s, wrap))
        if wrap:
            out["mnb_torus_optimal"] = float(mnb_torus_optimal(s))
        elif len(s) == 2:
            out["theorem1_exact"] = float(theorem1_mnb_array(s))
            out["theorem1_printed"] = float(theorem1_printed(s))
        if not split:
            out["mnb_unsplit_bound"] = mnb_unsplit_bound(s, wrap)
    return out


def partial_exchange_bounds(sides: Sequence[int], wrap: bool, active: Active, tp: float) -> dict[str, Any]:
    """§5's upper bound; below, any placement's bound or the bound for the placement at hand;
    and the paper's worst case over placements (``lower_bound_worst_case*``)."""
    s = check_shape(sides, wrap)
    tp = _need_tp("partial-exchange", tp)
    p, n, _m, _r = _pe_shape(s, wrap, 0)
    m, ids = _split_active(active, n, "partial-exchange")
    deg_min = 4 if wrap else 2
    if m == 0:
        lower, why = 0.0, "no active node"
    else:
        lower = float(max(math.ceil((m - 1) / deg_min), math.ceil((n - 1) / 4), radius(s, wrap)))
        why = "any placement: a corner receives M-1, an active sends N-1 over <= 4 links, radius"
    out: dict[str, Any] = {
        "upper_bound": pe_upper_bound(s, wrap, m, tp),
        "which": "§5: 2 floor(sqrt M)(N - p) + 2(p - 1) + p t_p",
        "lower_bound": lower,
        "lower_which": why,
        "lower_bound_worst_case": pe_lower_worst_case(s, wrap, m),
        "lower_bound_worst_case_proved": pe_lower_worst_case_proved(s, wrap, m),
    }
    if ids is not None:
        pb = placement_bound(ids, s, wrap, "personalised")
        if pb["bound"] > lower:
            out["lower_bound"] = pb["bound"]
            out["lower_which"] = "placement: " + max(("per_node", "cut", "distance"), key=lambda key: pb[key])
        out["placement"] = pb
    return out


def dynamic_broadcast_bounds(sides: Sequence[int], wrap: bool, tp: float, split: bool = True, *,
                             rho: float | None = None, lam: float | None = None) -> dict[str, Any]:
    """Theorem 7's (11) on the mean delay, with X, V of (9), (10) (or X', V' without splitting),
    the limit (14) and ``stable``; give exactly one of ``rho`` (the load (12)) and ``lam`` (per node)."""
    s = check_shape(sides, wrap)
    split = _check_split(split)
    tp = _need_tp("dynamic-broadcast", tp)
    if (rho is None) == (lam is None):
        raise ValueError("dynamic-broadcast needs exactly one of rho (load (12)) and lam (rate per node)")
    if lam is not None:
        rho = rho_from_lam(lam, s, wrap)
    elif rho is not None:
        lam = lam_from_rho(rho, s, wrap)
    assert rho is not None and lam is not None
    limit = stability_limit(s, wrap, tp, split=split)
    if split:
        x, v = unit_broadcast_length(s, wrap), reservation_length(s, wrap, tp)
    else:
        x, v = unsplit_constants(s, wrap, tp)
    return {
        "upper_bound": delay_bound(rho, s, wrap, tp, split=split),
        "which": "Theorem 7, eq. (11) with X, V of (9), (10)" if split else "Theorem 7, eq. (11) with X', V' from (5')/(6')",
        "lower_bound": radius(s, wrap) * min_piece(len(s), wrap, split),
        "lower_which": "any scheme: a broadcast reaches the node farthest from its source",
        "rho": rho,
        "lam": lam,
        "X": x,
        "V": v,
        "stability_limit": limit,
        "stable": rho < limit,
        "universal_limit": 1.0,
        "light_load_bound": 1.5 * v + x,
    }
