"""Analytic model of one-pass deflection routing on the d-cube.

Greenberg & Hajek, "Deflection Routing in Hypercube Networks", IEEE Trans.
Commun., 1992; section and equation numbers are the paper's. §II-B gives q(i)
(2.1); §III-A the one-slot probabilities a, p, p_o (3.1)-(3.4); §III-B the
transient update (3.5)-(3.6) (Table I); §III-C the fixed point (3.7)-(3.17)
(Table III, Fig. 1); §III-D Lemma 3.1 and Theorems 3.1-3.3 with C(mu) (3.28)
and the Appendix series (5.14)-(5.17), kept with the walk Θ in ``_theory_chain`` and
re-exported here; §IV input queueing (4.1).

Misprints corrected: the upper bound of (3.29) lacks a minus sign (see (5.14));
(3.22) reads ``a -> v/2 ∧ 1`` for ``a -> 1 ∧ 2/v``; (5.16) reads a_j for a_{j+1}.
Printed numbers not reproduced: Table I's predicted deflection fraction in slot 8
(see :func:`transient`) and Table V (see :func:`C`).

Example:
    >>> round(fixed_point(6, 1.0).m_bar, 7)  # Fig. 1
    0.5080596
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..kit import portable
from . import _theory_chain
from ._theory_chain import (  # §III-D and the Appendix
    C,
    C_bounds,
    C_partial,
    C_tail_bound,
    accept_limit,
    deflect_probability_limit,
    delay_bounds,
    m_bar_limit,
    m_bar_saturation,
    poisson_min_mean,
    t_infinity,
)

__all__ = [
    "C", "C_bounds", "C_partial", "C_tail_bound", "InputQueueModel", "SteadyState",
    "TransientSlot", "accept_limit", "accept_probability", "deflect_probability",
    "deflect_probability_limit", "deflect_probability_new", "delay_bounds", "expected_delay",
    "fixed_point", "fixed_point_map", "initial_distance", "input_queue",
    "input_queue_metrics", "m_bar_limit", "m_bar_saturation", "max_throughput",
    "poisson_min_mean", "steady_state_metrics", "t_infinity", "throughput", "transient",
]  # fmt: skip

_check = _theory_chain.check


# --- §II-B and §III-A: one node, one slot ---------------------------------------------


def initial_distance(d: int) -> np.ndarray:
    """q(i) = C(d, i) / (2^d - 1), the law of a new packet's distance, eq. (2.1).

    Args:
        d: hypercube dimension.

    Returns:
        Array indexed by i = 0..d, with q(0) = 0.
    """
    _check(d)
    return np.array([0.0] + [math.comb(d, i) / (2**d - 1) for i in range(1, d + 1)])


def accept_probability(m: float, d: int, v: float) -> float:
    """a(m, d, v) = E[(d - U) ∧ V] / v, eq. (3.1), with U ~ B(d, m), V ~ B(d, v/d).

    Exact average over the (d+1)^2 values of (U, V). At v = 0 the ratio is 0/0;
    we take its limit v -> 0+, ``1 - m**d`` (the chance that a lone new packet
    finds a free link, the Appendix's size-biased form of a at v = 0), which is
    1.0 on an empty network.

    Args:
        m: probability that an incoming link carries a continuing packet.
        d: hypercube dimension.
        v: mean number of new packets offered per node and slot, 0 <= v <= d.

    Returns:
        The probability that a typical new packet is accepted.
    """
    _check(d, v=v, m=m)
    return _theory_chain.accept(m, d, v)


def deflect_probability(i: int, m: float, d: int, v: float) -> float:
    """p(i, m, d, v) = E[H((U_o + V) ∧ (d-1), d, i)], eqs. (3.2)-(3.3); p(0, ...) = 0.

    Args:
        i: distance of the continuing packet to its destination, 0..d.
        m: link occupancy; U_o ~ B(d - 1, m).
        d: hypercube dimension.
        v: offered load; V ~ B(d, v/d).

    Returns:
        The probability that a continuing packet i hops away is deflected.
    """
    _check(d, v=v, m=m, i=i)
    return float(_theory_chain.deflect_vector(m, d, v)[i])


def deflect_probability_new(i: int, m: float, d: int, v: float) -> float:
    """p_o(i, m, d, v) of eq. (3.4), for an accepted new packet; p_o(0, ...) = 0.

    ``E[((1+V_o) ∧ (d-U)) / (1+V_o) · H((U+V_o) ∧ (d-1), d, i)] / a(m, d, v)``
    with V_o ~ B(d-1, v/d). At m = 1, where a = 0, the limit m -> 1,
    H(d-1, d, i), is returned.

    Args:
        i: distance of the new packet to its destination, 0..d.
        m: link occupancy; U ~ B(d, m).
        d: hypercube dimension.
        v: offered load.

    Returns:
        The probability that an accepted new packet i hops away is deflected.
    """
    _check(d, v=v, m=m, i=i)
    return float(_theory_chain.deflect_new_vector(m, d, v, _theory_chain.accept(m, d, v))[i])


# --- §III-B: transient analysis --------------------------------------------------------


@dataclass(frozen=True)
class TransientSlot:
    """Predicted statistics of slot t, the "prediction" columns of Table I.

    Attributes:
        slot: t >= 1.
        v: offered load in slot t.
        link_utilization: ``sum_{i=0..d} m_t(i)``.
        accept_fraction: ``a(m_{t-1}, d, v)``; None when v == 0.
        deflection_fraction: deflections in slot t per link transmission,
            ``sum_i [m_{t-1}(i) p(i) + a v q(i) p_o(i)/d] / sum_i m_t(i)``; None
            when no link is used.
        mean_distance: ``sum_{i>=1} i m_t(i) / sum_{i>=1} m_t(i)``, over packets
            continuing after slot t; None when there are none.
    """

    slot: int
    v: float
    link_utilization: float
    accept_fraction: float | None
    deflection_fraction: float | None
    mean_distance: float | None


def transient(d: int, offered: Sequence[float]) -> list[TransientSlot]:
    """Iterate the update equations (3.5)-(3.6) from the empty network, m_0 = 0.

    Slot t uses ``v = offered[t-1]`` and maps m_{t-1} to m_t, with a, p, p_o
    taken at ``m_{t-1} = sum_{i>=1} m_{t-1}(i)`` (3.5). For d = 6 and offered =
    [6.0] + [0.0] * 9 this gives Table I's predictions to the printed digits,
    except the deflection fraction of slot 8: 0.01461 here, 0.0149 printed.
    Slots 7 and 8 match in utilisation and mean distance, which fixes m_7 and
    m_8, and so this deflection fraction; the printed entry is a misprint.

    Args:
        d: hypercube dimension.
        offered: offered load of each slot, each in [0, d].

    Returns:
        One TransientSlot per entry of ``offered``.
    """
    _check(d)
    q = initial_distance(d)
    m_vec = np.zeros(d + 1)
    slots: list[TransientSlot] = []
    for t, v in enumerate(offered, start=1):
        _check(d, v=v)
        a, p, p_new = _theory_chain.one_slot(float(m_vec[1:].sum()), d, v)
        deflected = m_vec * p + a * v / d * q * p_new  # terms 1 and 3 of (3.6)
        forward = m_vec * (1.0 - p) + a * v / d * q * (1.0 - p_new)  # terms 2 and 4
        deflected[0] = forward[0] = 0.0  # packets at distance 0 have left
        m_vec = np.concatenate([[0.0], deflected[:-1]]) + np.append(forward[1:], 0.0)
        util, cont = float(m_vec.sum()), float(m_vec[1:].sum())
        deflection = float(deflected.sum()) / util if util > 0 else None
        distance = portable.dot(np.arange(d + 1), m_vec) / cont if cont > 0 else None
        slots.append(TransientSlot(t, float(v), util, a if v > 0 else None, deflection, distance))
    return slots


# --- §III-C: steady state ----------------------------------------------------------------


def expected_delay(m: float, d: int, v: float) -> float:
    """T(m, d, v) = E[min{t : Z_t = 0}] of (3.14), for the walk Z of (3.12)-(3.13).

    Computed as ``1 + sum_{i>=1} u(i)`` with the expected visits u of (3.15),
    found by solving the absorbing chain's linear system.

    Args:
        m: link occupancy.
        d: hypercube dimension.
        v: offered load.

    Returns:
        Mean number of slots from acceptance to delivery.
    """
    _check(d, v=v, m=m)
    _, p, p_new = _theory_chain.one_slot(m, d, v)
    return 1.0 + float(_theory_chain.visits(p, p_new, initial_distance(d))[1:].sum())


def fixed_point_map(m: float, d: int, v: float) -> float:
    """The right-hand side of the fixed point equation (3.17), ``(T - 1) a v / d`` (Fig. 1).

    Args:
        m: link occupancy.
        d: hypercube dimension.
        v: offered load.

    Returns:
        The occupancy that Little's law assigns to m.
    """
    return (expected_delay(m, d, v) - 1.0) * accept_probability(m, d, v) * v / d


@dataclass(frozen=True)
class SteadyState:
    """The fixed point of (3.17) and its statistics (§III-C, Tables III and IV).

    Attributes:
        d: hypercube dimension.
        v: offered load.
        m_bar: m̄, continuing packets per link.
        m_vec: m̄(i), i = 0..d, by (3.10)-(3.11); m̄(0) comes from the i = 0
            line of (3.8), so that (3.9), ``a v = m̄(0) d``, is a check.
        accept_fraction: a(m̄, d, v).
        mean_delay: T(m̄, d, v).
        link_utilization: ``sum_{i=0..d} m̄(i)``.
        deflection_fraction: deflections per link transmission,
            ``sum_i [m̄(i) p(i) + a v p_o(i) q(i)/d] / link_utilization``.
        deflection_distance_hist: Table IV's prediction, ``m̄(i) p(i) + a v
            p_o(i) q(i)/d`` normalised over i = 1..d (index 0 is distance 1);
            all zeros when nothing is deflected (v = 0).
        throughput_per_node: a v, accepted packets per node and slot.
    """

    d: int
    v: float
    m_bar: float
    m_vec: tuple[float, ...]
    accept_fraction: float
    mean_delay: float
    link_utilization: float
    deflection_fraction: float
    deflection_distance_hist: tuple[float, ...]
    throughput_per_node: float


def fixed_point(d: int, v: float) -> SteadyState:
    """Solve the fixed point equation (3.17) for m̄ and derive the steady state.

    ``(T(m) - 1) a(m) v / d - m`` is continuous, positive at m = 0 (for v > 0,
    d >= 2) and -1 at m = 1 (Theorem 3.1(a)); Brent's method finds its root.
    At v = 0, or d = 1 (where T = 1), m̄ = 0. For d = 6 this reproduces
    Table III to the printed digits, and m̄ = 0.5080596 at v = 1 (Fig. 1).

    Args:
        d: hypercube dimension.
        v: offered load, 0 <= v <= d.

    Returns:
        The SteadyState.
    """
    _check(d, v=v)
    return _fixed_point(int(d), float(v))


@lru_cache(maxsize=4096)
def _fixed_point(d: int, v: float) -> SteadyState:
    m_bar = _theory_chain.brent_root(lambda m: fixed_point_map(m, d, v) - m, 0.0, 1.0) if v > 0 else 0.0
    q = initial_distance(d)
    a, p, p_new = _theory_chain.one_slot(m_bar, d, v)
    u = _theory_chain.visits(p, p_new, q)
    m_vec = u * a * v / d  # (3.10)
    util = float(m_vec.sum())
    deflections = (m_vec * p + a * v * p_new * q / d)[1:]
    total = float(deflections.sum())
    hist = tuple(float(x) / total if total > 0 else 0.0 for x in deflections)
    fraction = total / util if util > 0 else 0.0
    return SteadyState(d, v, m_bar, tuple(map(float, m_vec)), a, 1.0 + float(u[1:].sum()), util, fraction, hist, a * v)


def steady_state_metrics(d: int, v: float) -> dict[str, float | list[float]]:
    """The fixed point as a metrics dict, with the simulator's metric names.

    Args:
        d: hypercube dimension.
        v: offered load, 0 <= v <= d.

    Returns:
        link_utilization, accept_fraction, mean_delay, deflection_fraction,
        deflection_distance_hist (list, index 0 = distance 1), throughput_per_node.
    """
    s = fixed_point(d, v)
    names = ("link_utilization", "accept_fraction", "mean_delay", "deflection_fraction", "throughput_per_node")
    return {**{k: getattr(s, k) for k in names}, "deflection_distance_hist": list(s.deflection_distance_hist)}


# --- §IV: input queueing -------------------------------------------------------------------


def throughput(d: int, v: float) -> float:
    """Steady-state accepted packets per node and slot, ``v a(m̄, d, v)`` (§III-C)."""
    return fixed_point(d, v).throughput_per_node


@lru_cache(maxsize=64)
def max_throughput(d: int) -> tuple[float, float]:
    """The largest steady-state throughput over 0 <= v <= d, and the v reaching it.

    Footnote 2 of §IV: throughput rises with v, then falls slightly (0.2% for
    d = 6; about 3% for d = 20). A scan with step 1/2 then golden-section search.

    Args:
        d: hypercube dimension.

    Returns:
        ``(v_max, throughput_max)``.
    """
    _check(d)
    grid = np.linspace(0.0, d, 2 * d + 1)
    best = int(np.argmax([throughput(d, float(v)) for v in grid]))
    lo, hi = float(grid[max(best - 1, 0)]), float(grid[min(best + 1, 2 * d)])
    return _theory_chain.golden_max(lambda v: throughput(d, v), lo, hi)


@dataclass(frozen=True)
class InputQueueModel:
    """§IV: Poisson(λ) arrivals wait in an input queue instead of being blocked.

    Attributes:
        d: hypercube dimension.
        lam: arrival rate λ per node and slot, equal to the throughput.
        v: the offered load of §III-C with v a(m̄, d, v) = λ.
        m_bar: m̄ at that v.
        mean_queue_length: X̄ of (4.1).
        mean_queueing_delay: X̄ / λ.
        queueing_delay_bounds: ``(X̄/λ - 1, X̄/λ)``, the paper's bounds.
        mean_transit_delay: T(m̄, d, v).
        mean_delay: queueing plus transit delay (Fig. 3).
        link_utilization: ``sum_i m̄(i)`` at that v.
    """

    d: int
    lam: float
    v: float
    m_bar: float
    mean_queue_length: float
    mean_queueing_delay: float
    queueing_delay_bounds: tuple[float, float]
    mean_transit_delay: float
    mean_delay: float
    link_utilization: float


def input_queue(d: int, lam: float) -> InputQueueModel:
    """Approximate the input-queued network of §IV at arrival rate λ.

    Finds v with ``v a(m̄(v), d, v) = λ`` on the rising branch of the throughput
    (footnote 2), then models the queue with d mini-slots per slot, Poisson(λ/d)
    arrivals and a service chance 1 - m̄ per mini-slot, of mean content (4.1)
    ``X̄ = ((λ/d)^2 + 2 m̄ λ/d) / (2 (1 - m̄ - λ/d))``.

    Args:
        d: hypercube dimension.
        lam: arrival rate λ > 0 per node and slot.

    Returns:
        The InputQueueModel.

    Raises:
        ValueError: if λ <= 0, or λ exceeds the model's maximum throughput.
    """
    _check(d)
    if not lam > 0.0:
        raise ValueError(f"arrival rate lam must be > 0, got {lam!r}")
    v_max, thr_max = max_throughput(int(d))
    if lam > thr_max:
        raise ValueError(
            f"arrival rate lam={lam!r} exceeds the maximum throughput {thr_max:.6f} packets per node per "
            f"slot of the d={d} model (reached at v={v_max:.4f}, §IV footnote 2): the input queues are unstable"
        )
    v = v_max if lam == thr_max else _theory_chain.brent_root(lambda x: throughput(d, x) - lam, 0.0, v_max, xtol=1e-13)
    s = fixed_point(d, v)
    rho = lam / d  # = m̄(0) by (3.9), so 1 - m̄ - rho = 1 - link utilisation > 0
    x_bar = (rho**2 + 2.0 * s.m_bar * rho) / (2.0 * (1.0 - s.m_bar - rho))
    wait = x_bar / lam
    delays = (wait, (wait - 1.0, wait), s.mean_delay, wait + s.mean_delay)
    return InputQueueModel(int(d), float(lam), v, s.m_bar, x_bar, *delays, s.link_utilization)


def input_queue_metrics(d: int, lam: float) -> dict[str, float]:
    """:func:`input_queue` as a metrics dict, with the simulator's metric names.

    Args:
        d: hypercube dimension.
        lam: arrival rate λ > 0.

    Returns:
        mean_queueing_delay, mean_transit_delay, mean_delay, link_utilization,
        throughput_per_node (= λ), m_bar, v.
    """
    model = input_queue(d, lam)
    names = ("mean_queueing_delay", "mean_transit_delay", "mean_delay", "link_utilization", "m_bar", "v")
    return {**{k: getattr(model, k) for k in names}, "throughput_per_node": model.lam}
