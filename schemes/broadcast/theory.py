"""Analytic results for multiple random broadcasts on the d-cube, as pure functions.

Source: G. D. Stamoulis and J. N. Tsitsiklis, "Efficient routing schemes for multiple
broadcasts in hypercubes" (the seed paper). Every node generates broadcast packets as
an independent Poisson process of rate ``lam`` per slot; load is given as the load
factor ``rho = lam (2^d - 1) / d`` of eq. (8) (see :func:`lam_from_rho`).

Definitions used throughout (the paper's):

* D, the mean broadcast delay (§1, §3.2): steady-state mean time from the moment a
  packet is generated (a continuous instant) until its broadcast is completed, i.e. the
  last node has received it. It includes the mean synchronisation time 1/2 (§2.1.2).
* Q, the mean queue per node (§4.3.3): 1/2^d of the steady-state mean total number of
  packets stored in the network per slot; a packet is stored at node x while x has yet
  to forward it to at least one neighbour (a packet about to be transmitted counts; a
  packet to be forwarded to several neighbours counts once).

Unstable loads: the mean-value functions return ``math.inf`` when rho is at or above
the limit under which their formula holds (no steady state). Invalid input (d < 1,
negative or non-finite rho) raises ``ValueError``/``TypeError``.

Nothing here is a new formula: where the paper gives only a bound, a light-traffic
value or an approximation, the function (and the key of the scheme's ``*_metrics``
function) says so.

What the paper gives for each scheme, under the run's metric names, is one function per
scheme, which that scheme's theory adapter calls: :func:`simple_metrics` (§4.1),
:func:`periodic_metrics` (§4.2), :func:`dtree_metrics` (§4.3.2), :func:`balanced_metrics`
(§4.3.1) and :func:`indirect_metrics` (§5).
"""

from __future__ import annotations

from ._theory_dtree import (
    DTreeApproximation,
    dtree_approximation,
    dtree_arc_delay,
    dtree_arc_loads,
    dtree_delay,
    dtree_delay_light_traffic,
    dtree_delay_simplified,
    g_matrix,
    g_square_sum,
    g_sum,
)
from ._theory_indirect import (
    IndirectAnalysis,
    indirect_analysis,
    indirect_delay,
    indirect_delay_rule_d_prime,
    indirect_queue,
)
from ._theory_limits import (
    delay_lower_bound_static,
    delay_lower_bound_universal,
    stability_limit_dtree,
    stability_limit_indirect,
    stability_limit_mnb,
    stability_limit_rule_a,
    stability_limit_simple,
    stability_limit_universal,
    stability_limits,
)
from ._theory_load import check_d, check_rho, lam_from_rho, rho_from_lam
from ._theory_periodic import (
    md1_delay,
    md1_sync_delay,
    periodic_mnb_delay,
    periodic_random_delay,
)

__all__ = [
    "DTreeApproximation",
    "INDIRECT_RULES",
    "IndirectAnalysis",
    "PERIODIC_VARIANTS",
    "balanced_metrics",
    "delay_lower_bound_static",
    "delay_lower_bound_universal",
    "dtree_approximation",
    "dtree_arc_delay",
    "dtree_arc_loads",
    "dtree_delay",
    "dtree_delay_light_traffic",
    "dtree_delay_simplified",
    "dtree_metrics",
    "g_matrix",
    "g_square_sum",
    "g_sum",
    "indirect_analysis",
    "indirect_delay",
    "indirect_delay_rule_d_prime",
    "indirect_metrics",
    "indirect_queue",
    "lam_from_rho",
    "md1_delay",
    "md1_sync_delay",
    "periodic_metrics",
    "periodic_mnb_delay",
    "periodic_random_delay",
    "rho_from_lam",
    "simple_metrics",
    "stability_limit_dtree",
    "stability_limit_indirect",
    "stability_limit_mnb",
    "stability_limit_rule_a",
    "stability_limit_simple",
    "stability_limit_universal",
    "stability_limits",
]

# --------------------------------------------------------------------------------------
# What the paper gives for each scheme, under the run's metric names
#
# Keys, present only where the paper gives the quantity:
#
# * ``stability_limit``, ``stable`` (``rho < stability_limit``): always.
# * ``mean_broadcast_delay``: exact D (periodic "mnb"/"random", indirect) or the
#   approximation (25) (d-tree, the only approximate value).
# * ``mean_broadcast_delay_light_traffic``: the paper's value of D as rho -> 0 where it
#   gives no formula.
# * ``mean_arc_delay`` (24) and ``link_utilization`` (= rho, (21)): d-tree.
# * ``mean_queue_per_node``: Proposition 6, indirect with Rule D only.
# * ``delay_lower_bound``: Proposition 2 for the static schemes (§4.1, §4.3, §5),
#   Proposition 1 for the periodic ones; only for rho < 1.
#
# All delay and queue keys are omitted when ``stable`` is False (``delay_lower_bound``
# stays while rho < 1). The paper defines no per-node reception delay, so
# ``mean_reception_delay`` never appears.

PERIODIC_VARIANTS = ("random", "mnb", "simultaneous")
INDIRECT_RULES = ("D", "D'")
_RULE_ALIASES = {"D": "D", "D'": "D'", "D′": "D'", "DPRIME": "D'", "D-PRIME": "D'"}


def _with_lower_bound(out: dict[str, float | bool], d: int, rho: float, *, static: bool) -> dict[str, float | bool]:
    """``out`` with ``delay_lower_bound`` (Proposition 2 if ``static``, else 1) while rho < 1."""
    if rho < 1.0:
        bound = delay_lower_bound_static if static else delay_lower_bound_universal
        out["delay_lower_bound"] = bound(d, rho)
    return out


def simple_metrics(d: int, rho: float) -> dict[str, float | bool]:
    """The simple direct scheme (§4.1): its stability limit and Proposition 2's bound.

    Raises:
        ValueError: On invalid d or rho.
    """
    d, rho = check_d(d), check_rho(rho)
    limit = stability_limit_simple(d)
    return _with_lower_bound({"stability_limit": limit, "stable": rho < limit}, d, rho, static=True)


def periodic_metrics(d: int, rho: float, variant: str = "random") -> dict[str, float | bool]:
    """The periodic schemes (§4.2): ``variant`` "random" (§4.2.2 randomised, eq. (7)),
    "mnb" (§4.2.1, eq. (7) with the period P) or "simultaneous" (§4.2.2, M/D/d: only the
    light-traffic value (3/2)(2^d - 1) is given); with Proposition 1's bound.

    Raises:
        ValueError: On an unknown variant, or invalid d or rho.
    """
    d, rho = check_d(d), check_rho(rho)
    if variant not in PERIODIC_VARIANTS:
        raise ValueError(f"unknown periodic variant {variant!r}; expected one of {', '.join(PERIODIC_VARIANTS)}")
    out: dict[str, float | bool]
    if variant == "mnb":  # §4.2.1
        limit = stability_limit_mnb(d)
        out = {"stability_limit": limit, "stable": rho < limit}
        if rho < limit:
            out["mean_broadcast_delay"] = periodic_mnb_delay(d, rho)
    elif variant == "random":  # §4.2.2, random tree per packet
        out = {"stability_limit": 1.0, "stable": rho < 1.0}
        if rho < 1.0:
            out["mean_broadcast_delay"] = periodic_random_delay(d, rho)
    else:  # §4.2.2, d simultaneous multinode broadcasts: M/D/d, only rho -> 0 given
        out = {"stability_limit": 1.0, "stable": rho < 1.0}
        if rho < 1.0:
            out["mean_broadcast_delay_light_traffic"] = 1.5 * ((1 << d) - 1)
    return _with_lower_bound(out, d, rho, static=False)


def dtree_metrics(d: int, rho: float) -> dict[str, float | bool]:
    """The non-idling d-tree scheme (§4.3.2): the approximation (25), the arc delay (24),
    the link utilisation rho (21), stable for rho < 1; with Proposition 2's bound.

    Raises:
        ValueError: On invalid d or rho.
    """
    d, rho = check_d(d), check_rho(rho)
    out: dict[str, float | bool] = {"stability_limit": 1.0, "stable": rho < 1.0}
    if rho < 1.0:
        out["mean_broadcast_delay"] = dtree_delay(d, rho)
        out["mean_arc_delay"] = dtree_arc_delay(d, rho)
        out["link_utilization"] = rho
    return _with_lower_bound(out, d, rho, static=True)


def balanced_metrics(d: int, rho: float) -> dict[str, float | bool]:
    """The non-idling balanced-tree scheme (§4.3.1): the stability limit (12) and the
    light-traffic D = d + 1/2 (conjectured in §4.3.1, "certainly true" in §4.3.3; no
    formula for rho > 0); with Proposition 2's bound.

    Raises:
        ValueError: On invalid d or rho.
    """
    d, rho = check_d(d), check_rho(rho)
    limit = stability_limit_mnb(d)
    out: dict[str, float | bool] = {"stability_limit": limit, "stable": rho < limit}
    if rho < limit:
        out["mean_broadcast_delay_light_traffic"] = d + 0.5
    return _with_lower_bound(out, d, rho, static=True)


def indirect_metrics(d: int, rho: float, rule: str = "D") -> dict[str, float | bool]:
    """The indirect scheme (§5) with ``rule`` "D" (§5.2: D of Proposition 5 and Q of
    Proposition 6) or "D'" (§5.5.2: D of Corollary 8); with Proposition 2's bound.

    Raises:
        ValueError: On an unknown rule, or invalid d or rho.
    """
    d, rho = check_d(d), check_rho(rho)
    key = rule.strip().upper()
    if key not in _RULE_ALIASES:
        raise ValueError(f"unknown indirect rule {rule!r}; expected 'D' or \"D'\"")
    limit = stability_limit_indirect(d)
    out: dict[str, float | bool] = {"stability_limit": limit, "stable": rho < limit}
    if rho < limit:
        analysis = indirect_analysis(d, rho)
        if _RULE_ALIASES[key] == "D":
            out["mean_broadcast_delay"] = analysis.mean_broadcast_delay
            out["mean_queue_per_node"] = analysis.mean_queue_per_node
        else:
            out["mean_broadcast_delay"] = analysis.mean_broadcast_delay_rule_d_prime
    return _with_lower_bound(out, d, rho, static=True)
