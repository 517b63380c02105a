"""The analysis of priority STAR (Yeh, Varvarigos & Eshoul) as pure functions of (sides, rates).

Every node of an ``n_1 x ... x n_d`` torus generates broadcast packets at rate ``lam_b``
and unicast packets at rate ``lam_r`` (Poisson, per slot; unicast destinations uniform
over the other N-1 nodes). Dimensions are numbered 1..d in user-facing arguments
(``ending``) as in the paper; returned lists are indexed 0..d-1 (entry ``k`` is the
paper's dimension ``k+1``).

Throughput factor (§2): ``rho = lam_B (N-1)/d_ave + lam_R D_ave/d_ave`` with ``d_ave``
out-links per node and ``D_ave`` the mean unicast distance. In slotnet's torus every
node has ``d_ave = 2d`` out-links -- a side of 2 keeps both ports, two parallel links to
the one neighbour -- so ``rho = lam_B (N-1)/(2d)`` (§2, §4) holds for every side >= 2,
n_i = 2 included, and is the mean utilisation of slotnet's links. On a side of 2 the
ring "split" sends the one transmission on the + or the - parallel link with
probability 1/2 each (see ``_rule``), so both links carry half, and eq. (2) needs no
change. The paper's graphs instead have a single link pair on a side of 2 (its
hypercube has ``d`` links per node and ``rho = lam_B (2^d-1)/d``, §2);
``merge_parallel=True`` counts links that way, for comparison with the paper's
figures only (it halves the capacity, not the traffic, of those dimensions).

``D_ave = sum_i h_i`` with ``h_i`` the exact mean dimension-i hops (see ``_theory_loads`` for
why §4's ``floor(n_i/4)`` is a slip; ``hops="paper"`` keeps it literally).

What the paper gives only up to constants is returned as an explicit expression and
labelled so: :func:`delay_lower_bound` (``d + 1/(1-rho)``, §2, from [12]) and
:func:`reception_delay_order` (``n d + n/(1-rho)``, §3.2). The paper gives no formula for
the mean reception or broadcast delay themselves, so none is returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from ._theory_checks import check_classes, check_ending, check_rate, check_sides
from ._theory_ending import solve_ending_probs
from ._theory_loads import class_loads_per_dim, transmissions_matrix, unicast_hops
from ._theory_rates import (
    check_hops,
    delay_lower_bound,
    lam_from_rho,
    rates_from_rho,
    reception_delay_order,
    rho_from_lam,
    throughput_factor,
)
from ._theory_waits import class_waits, gd1_wait, load_weighted_mean, split_classes

__all__ = [
    "class_waits",
    "delay_lower_bound",
    "ending_dimension_probs",
    "gd1_wait",
    "high_priority_share",
    "lam_from_rho",
    "link_loads",
    "max_stable_rho",
    "rates_from_rho",
    "reception_delay_order",
    "rho_from_lam",
    "theory_metrics",
    "throughput_factor",
    "transmissions_matrix",
    "unicast_hops",
]


def _probs(
    sides: tuple[int, ...], lam_b: float, lam_r: float, ending: int | None, hops: str
) -> tuple[list[Fraction], str]:
    """Exact x and where it came from: ``forced``, ``eq2``, ``eq4`` or ``minimax``."""
    d = len(sides)
    if ending is not None:
        e = check_ending(ending, d)
        return [Fraction(int(k == e)) for k in range(d)], "forced"
    ratio = Fraction(lam_r) / Fraction(lam_b) if lam_b > 0 else Fraction(0)
    x, feasible = solve_ending_probs(sides, ratio, hops)
    if not feasible:
        return x, "minimax"
    return x, "eq4" if ratio else "eq2"


def ending_dimension_probs(
    sides: Sequence[int], lam_b: float = 1.0, lam_r: float = 0.0, *, hops: str = "exact", exact: bool = False
) -> list[float] | list[Fraction]:
    """x_1..x_d: eq. (2) (``lam_r = 0``) or eq. (4); the minimax point when infeasible.

    x depends on the rates only through ``lam_r / lam_b``. With ``lam_b = 0`` no
    broadcast is born and x has no effect; eq. (2)'s solution is returned then. See
    ``_theory_ending`` for the infeasible rule (the paper's vertex in 2-D, minimax for any d).

    Args:
        sides: torus sides.
        lam_b: broadcast rate per node.
        lam_r: unicast rate per node.
        hops: unicast hop counts, ``"exact"`` or ``"paper"``.
        exact: return ``Fraction``s instead of floats.

    Example:
        >>> ending_dimension_probs((4, 4, 4), exact=True)
        [Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)]
        >>> ending_dimension_probs((3, 5), exact=True)
        [Fraction(5, 8), Fraction(3, 8)]
    """
    sides = check_sides(sides)
    x, _ = _probs(sides, check_rate(lam_b, "lam_b"), check_rate(lam_r, "lam_r"), None, check_hops(hops))
    return x if exact else [float(v) for v in x]


def _check_x(
    x: Sequence[float | Fraction] | None, sides: tuple[int, ...], lam_b: float, lam_r: float, hops: str
) -> list[Fraction]:
    if x is None:
        return _probs(sides, lam_b, lam_r, None, hops)[0]
    if len(x) != len(sides):
        raise ValueError(f"x must have one probability per dimension ({len(sides)}), got {len(x)}")
    vals = [v if isinstance(v, Fraction) and v >= 0 else Fraction(check_rate(v, "x")) for v in x]
    total = sum(vals, Fraction(0))
    if abs(total - 1) > Fraction(1, 10**9):
        raise ValueError(f"x must sum to 1, got {float(total)!r}")
    return vals


def link_loads(
    sides: Sequence[int],
    lam_b: float,
    lam_r: float = 0.0,
    x: Sequence[float | Fraction] | None = None,
    *,
    hops: str = "exact",
    exact: bool = False,
) -> list[float] | list[Fraction]:
    """Expected load (packets per slot) of each directed link, per dimension (§3.1, §4).

    Every link of dimension ``i`` (both directions, every node) has the same expected
    load ``lam_b/2 sum_l a_{i,l} x_l + lam_r h_i / 2``; their mean over dimensions is rho,
    and they are all equal exactly when x solves eq. (2)/(4).

    Args:
        x: ending probabilities (default: :func:`ending_dimension_probs`).

    Example:
        >>> link_loads((3, 5), 0.25, exact=True)
        [Fraction(7, 8), Fraction(7, 8)]
    """
    sides = check_sides(sides)
    lam_b, lam_r, hops = check_rate(lam_b, "lam_b"), check_rate(lam_r, "lam_r"), check_hops(hops)
    xs = _check_x(x, sides, lam_b, lam_r, hops)
    per = class_loads_per_dim(sides, xs, Fraction(lam_b), Fraction(lam_r), hops)
    out = [sum(c, Fraction(0)) for c in per]
    return out if exact else [float(v) for v in out]


def high_priority_share(sides: Sequence[int], x: Sequence[float | Fraction] | None = None) -> float:
    """Share of broadcast transmissions that are high priority (not on the ending dimension).

    ``(sum_l x_l N/n_l - 1)/(N - 1)``, which is §3.2's ``(N/n - 1)/(N - 1)`` on an
    n-ary d-cube (a broadcast makes ``(n_l - 1) N/n_l`` transmissions on its ending
    dimension ``l``, eq. (1)). Default x: eq. (2).

    Example:
        >>> high_priority_share((8, 8)) == 7 / 63
        True
    """
    sides = check_sides(sides)
    xs = _check_x(x, sides, 1.0, 0.0, "exact")
    big_n = math.prod(sides)
    return float((sum(v * Fraction(big_n, n) for v, n in zip(xs, sides)) - 1) / (big_n - 1))


def max_stable_rho(
    sides: Sequence[int], lam_b: float = 1.0, lam_r: float = 0.0, x: Sequence[float | Fraction] | None = None, *, hops: str = "exact"
) -> float:
    """Largest rho (same traffic mix, same x) with every link load below 1: ``rho / max load``.

    1 when x balances the links (eq. (2)/(4) feasible, §4: "stable as long as rho < 1");
    below 1 for a fixed ending dimension or an infeasible mix. Zero rates: broadcast only.

    Example:
        >>> max_stable_rho((3, 5)), round(max_stable_rho((3, 5), x=[1, 0]), 4)
        (1.0, 0.7)
    """
    sides = check_sides(sides)
    lam_b, lam_r = check_rate(lam_b, "lam_b"), check_rate(lam_r, "lam_r")
    if lam_b == 0 and lam_r == 0:
        lam_b = 1.0
    loads = link_loads(sides, lam_b, lam_r, x, hops=hops, exact=True)
    return float(sum(loads) / len(loads) / max(loads))


def theory_metrics(
    sides: Sequence[int],
    lam_b: float,
    lam_r: float = 0.0,
    ending: int | None = None,
    classes: int = 2,
    *,
    hops: str = "exact",
) -> dict[str, object]:
    """Everything the paper predicts for one torus and load, as one flat dict.

    Args:
        sides: torus sides ``(n_1, ..., n_d)``.
        lam_b: broadcast packets per node and slot.
        lam_r: unicast packets per node and slot.
        ending: a fixed ending dimension ``1..d`` (paper numbering); None: eq. (2)/(4).
        classes: 1 (one FIFO per port, "FCFS"), 2 (§3.2; unicast high priority, §4) or
            3 (end of §4: broadcast off the ending dimension high, unicast medium,
            broadcast on the ending dimension low).
        hops: unicast hop counts, ``"exact"`` or ``"paper"`` (see :mod:`._theory_loads`).

    Returns:
        ``throughput_factor`` (rho, §2/§4) and its parts ``rho_broadcast`` /
        ``rho_unicast``; ``ending_dimension_probs`` (x_1..x_d) and
        ``ending_probs_source`` (``eq2``, ``eq4``, ``minimax`` for an infeasible
        solution, or ``forced``); ``link_load_per_dim`` (expected load of every link of
        each dimension), ``link_load_mean`` (= rho), ``link_load_max``, ``balanced``;
        ``high_priority_share`` (§3.2); ``rho_high``/``rho_medium``/``rho_low`` (mean
        class load per link; ``rho_medium`` only with 3 classes); the §3.2 estimates
        ``mean_wait_high``, ``mean_wait``, ``mean_wait_low`` (and ``mean_wait_medium``
        with 3 classes) (per-hop queueing wait,
        G/D/1 with V = rho and the conservation law, see :mod:`._theory_waits`; with one
        class all three are W) and ``mean_wait_unicast`` when ``lam_r > 0``;
        ``max_stable_rho``, ``stable``; ``delay_lower_bound`` (``d + 1/(1-rho)``, a
        bound up to constants, §2) and ``reception_delay_order`` (``n d + n/(1-rho)``,
        an order of growth, §3.2). No mean reception/broadcast delay: the paper gives
        no formula for them.

    Example:
        >>> m = theory_metrics((8, 8), 0.5 * 4 / 63)
        >>> m["throughput_factor"], m["ending_dimension_probs"], m["balanced"]
        (0.5, [0.5, 0.5], True)
    """
    sides = check_sides(sides)
    lam_b, lam_r = check_rate(lam_b, "lam_b"), check_rate(lam_r, "lam_r")
    classes, hops = check_classes(classes), check_hops(hops)
    d = len(sides)
    x, source = _probs(sides, lam_b, lam_r, ending, hops)
    per_dim = class_loads_per_dim(sides, x, Fraction(lam_b), Fraction(lam_r), hops)
    loads = [sum(c, Fraction(0)) for c in per_dim]
    rho = float(sum(loads) / d)
    rho_b = rho_from_lam(sides, lam_b, 0.0)
    split = [split_classes(c, classes) for c in per_dim]
    waits = [class_waits(s) for s in split]
    n_cls = len(split[0])
    cls_wait = [load_weighted_mean([w[c] for w in waits], [s[c] for s in split]) for c in range(n_cls)]
    totals = [sum(s) for s in split]
    out: dict[str, object] = {
        "throughput_factor": rho,
        "rho_broadcast": rho_b,
        "rho_unicast": rho_from_lam(sides, 0.0, lam_r, hops=hops),
        "ending_dimension_probs": [float(v) for v in x],
        "ending_probs_source": source,
        "link_load_per_dim": [float(v) for v in loads],
        "link_load_mean": rho,
        "link_load_max": float(max(loads)),
        "balanced": len(set(loads)) == 1,
        "high_priority_share": high_priority_share(sides, x),
        "rho_high": sum(s[0] for s in split) / d,
        "rho_low": sum(s[-1] for s in split) / d,
        "mean_wait_high": cls_wait[0],
        "mean_wait": load_weighted_mean([gd1_wait(t) for t in totals], totals),
        "mean_wait_low": cls_wait[-1],
    }
    if classes == 3:
        out["rho_medium"] = sum(s[1] for s in split) / d
        out["mean_wait_medium"] = cls_wait[1]
    if lam_r > 0:
        uni = [float(c[1]) for c in per_dim]
        col = {1: 0, 2: 0, 3: 1}[classes]
        out["mean_wait_unicast"] = load_weighted_mean([w[col] for w in waits], uni)
    msr = max_stable_rho(sides, lam_b, lam_r, x, hops=hops)
    out["max_stable_rho"] = msr
    out["stable"] = max(loads) < 1
    out["delay_lower_bound"] = delay_lower_bound(d, rho)
    out["reception_delay_order"] = reception_delay_order(sides, rho)
    return out
