"""The walks of Greenberg & Hajek and the numerics behind :mod:`.theory`.

* The walk Z of §III-C (3.12)-(3.15): its one-slot probabilities (3.1)-(3.4) as
  vectors over the distance i, and its expected visits by linear algebra.
* The walk Θ of the Appendix (Lemma 5.1) with the limiting deflection
  probabilities p∞ of (3.24): the series C(mu) of (3.28) that counts its
  deflections, with (5.14)-(5.17), and G_x(y) of (5.4). These public names are
  re-exported by :mod:`.theory`.
* Two hand-written scalar solvers (Brent's root finder, golden-section search),
  so that numpy is the only dependency. Products, exponentials and the linear solve go
  through the kit's :mod:`portable <slotnet.schemes.kit.portable>` functions, so the
  model has the same bits on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ..kit import portable

__all__ = [
    "C", "C_bounds", "C_partial", "C_tail_bound", "accept", "accept_limit", "brent_root", "check",
    "deflect_new_vector", "deflect_probability_limit", "deflect_vector", "delay_bounds", "golden_max",
    "h_table", "m_bar_limit", "m_bar_saturation", "one_slot", "poisson_min_mean", "t_infinity", "visits",
]  # fmt: skip


def check(d: int, v: float | None = None, m: float | None = None, i: int | None = None) -> None:
    """Raise ValueError unless d >= 1 is an integer, 0 <= v <= d, 0 <= m <= 1, i in 0..d."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"hypercube dimension d must be an integer >= 1, got {d!r}")
    if v is not None and not 0.0 <= v <= d:
        raise ValueError(f"offered load v must satisfy 0 <= v <= d = {d} (V ~ B(d, v/d)), got {v!r}")
    if m is not None and not 0.0 <= m <= 1.0:
        raise ValueError(f"link occupancy m must lie in [0, 1], got {m!r}")
    if i is not None and (isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i <= d):
        raise ValueError(f"distance i must be an integer in 0..d = 0..{d}, got {i!r}")


# --- The walk Z: one node, one slot (3.1)-(3.4), visits (3.11)-(3.15) -----------------


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """P[B(n, p) = k] for k = 0..n; exact at p = 0 and p = 1, stable for large n."""
    k = np.arange(n + 1)
    if p <= 0.0 or p >= 1.0:
        return np.asarray(k == (0 if p <= 0.0 else n), dtype=float)
    log_c = np.array([math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) for j in range(n + 1)])
    pmf = portable.exp(log_c + k * math.log(p) + (n - k) * math.log1p(-p))
    return np.asarray(pmf / pmf.sum())


@lru_cache(maxsize=64)
def h_table(d: int) -> np.ndarray:
    """``H[k, i] = H(k, d, i) = (1/(k+1)) sum_{j=1..k} j_i / d_i`` of (3.3), k < d, i <= d.

    ``n_i`` is the falling factorial. Column i = 0 is zero (the convention
    p(0, .) = p_o(0, .) = 0). Cached, read-only.
    """
    j = np.arange(d, dtype=float)[:, None]
    r = np.arange(d, dtype=float)[None, :]
    falling = np.cumprod(np.maximum(j - r, 0.0) / (d - r), axis=1)  # j_i/d_i, i = 1..d
    table = np.zeros((d, d + 1))
    table[:, 1:] = np.cumsum(falling, axis=0) / np.arange(1, d + 1)[:, None]  # row j = 0 is 0
    table.setflags(write=False)
    return table


def accept(m: float, d: int, v: float) -> float:
    """a(m, d, v) of (3.1): ``E[(d-U) ∧ V] / v`` for v > 0, ``1 - m**d`` at v = 0.

    The value at v = 0 is the limit v -> 0+, which is also the Appendix's
    size-biased form ``E[((1+V_o) ∧ (d-U)) / (1+V_o)]`` evaluated at v = 0.
    """
    pu = binomial_pmf(d, m)
    if v == 0.0:
        return float(1.0 - pu[d])
    n = np.arange(d + 1)
    mean = portable.dot(portable.vecmat(pu, np.minimum(d - n[:, None], n[None, :])), binomial_pmf(d, v / d))
    return min(1.0, mean / v)  # min: rounding only (large d)


def deflect_vector(m: float, d: int, v: float) -> np.ndarray:
    """p(i, m, d, v) of (3.2), i = 0..d: ``E[H((U_o + V) ∧ (d-1), d, i)]``."""
    law = portable.convolve(binomial_pmf(d - 1, m), binomial_pmf(d, v / d))  # U_o + V
    law_k = np.append(law[: d - 1], law[d - 1 :].sum())  # K = (U_o + V) ∧ (d-1)
    return portable.vecmat(law_k, h_table(d))


def deflect_new_vector(m: float, d: int, v: float, a: float) -> np.ndarray:
    """p_o(i, m, d, v) of (3.4), i = 0..d, given a = a(m, d, v).

    The expectation is grouped by ``K = (U + V_o) ∧ (d-1)``. When a == 0 (only
    at m = 1, where nothing is accepted) the limit m -> 1, ``H(d-1, d, i)``, is
    returned: acceptance then happens only next to U = d - 1 continuing packets.
    """
    table = h_table(d)
    if a <= 0.0:
        return np.array(table[d - 1])
    u = np.arange(d + 1)[:, None]
    vo = np.arange(d)[None, :]
    weight = np.outer(binomial_pmf(d, m), binomial_pmf(d - 1, v / d)) * np.minimum(1 + vo, d - u) / (1 + vo)
    law_k = np.bincount(np.minimum(u + vo, d - 1).ravel(), weights=weight.ravel(), minlength=d)
    return portable.vecmat(law_k, table) / a


def one_slot(m: float, d: int, v: float) -> tuple[float, np.ndarray, np.ndarray]:
    """(a, p, p_o) of (3.1)-(3.4), with p and p_o as vectors over i = 0..d."""
    a = accept(m, d, v)
    return a, deflect_vector(m, d, v), deflect_new_vector(m, d, v, a)


def visits(p: np.ndarray, p_new: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Expected visits u(i) of Z to state i at times t >= 1, i = 0..d, (3.15).

    Z starts from q, makes its first step with p_o (3.12), then steps with p
    (3.13). For i >= 1, u solves ``u = r + u Q`` with r the law of Z_1 and Q
    the sub-stochastic matrix of (3.13) on {1..d}, i.e. (3.11). u(0) is read off
    the i = 0 line of (3.11), the mean number of entries into state 0 (= 1).
    """
    d = q.size - 1
    first = np.zeros(d + 1)  # law of Z_1
    first[1:] += (q * p_new)[:-1]
    first[:-1] += (q * (1.0 - p_new))[1:]
    step = np.diag(p[1:d], 1) + np.diag(1.0 - p[2:], -1)  # on states 1..d
    u = np.empty(d + 1)
    u[1:] = portable.solve(np.eye(d) - step.T, first[1:])
    u[0] = u[1] * (1.0 - p[1]) + q[1] * (1.0 - p_new[1])
    return u


# --- The walk Θ of the Appendix: C(mu) (3.28), (5.14)-(5.17); G (5.4) -----------------

_HEAD, _DEPTH, _CHUNK = 256, 8, 1 << 20  # past _HEAD terms a_j < 1/256: unroll _DEPTH levels


def _series(mu: float, n: int | None, rtol: float, max_terms: int) -> float:
    """``sum_{j<=N} B_j`` with B_1 = a_1, B_{j+1} = (1 + B_j) a_{j+1}, a_j = mu^j/(1+j-mu^j).

    With n=None, sums until ``2 mu^(N+1) / ((N+1)(1-mu)) <= rtol C_N``, a bound on
    C - C_N from ``B_j <= 2 a_j`` and ``a_j <= mu^j / j`` (proof of (5.17)),
    sharper than (5.17), whose 2/N term is useless as a stopping rule. Past
    _HEAD terms B_j is unrolled _DEPTH levels and vectorised; the dropped part
    is below 256**-8 relative.
    """
    limit = max_terms if n is None else n
    total, b, j, recent = 0.0, 0.0, 0, np.zeros(0)
    while j < min(limit, _HEAD):
        j += 1
        a = mu**j / (1.0 + j - mu**j)
        b = (1.0 + b) * a
        total += b
        recent = np.append(recent, a)[-_DEPTH:]
        if n is None and 2.0 * mu ** (j + 1) / ((j + 1) * (1.0 - mu)) <= rtol * total:
            return total
    while j < limit:
        idx = np.arange(j + 1, min(limit, j + _CHUNK) + 1, dtype=float)
        x = portable.exp(idx * math.log(mu))
        a_all = np.concatenate([recent, x / (1.0 + idx - x)])
        b_vec = np.zeros(idx.size)
        for depth in range(_DEPTH, 0, -1):  # Horner: B_j = a_j (1 + a_{j-1} (1 + ...))
            b_vec = a_all[_DEPTH - depth + 1 : _DEPTH - depth + 1 + idx.size] * (1.0 + b_vec)
        if n is None:
            done = np.flatnonzero(2.0 * x * mu / ((idx + 1.0) * (1.0 - mu)) <= rtol * total)
            if done.size:
                return total + float(b_vec[: done[0] + 1].sum())
        total += float(b_vec.sum())
        j += idx.size
        recent = a_all[-_DEPTH:]
    if n is None:
        raise ValueError(f"C({mu!r}) needs more than max_terms={max_terms} terms (1 - mu too small); see C_bounds")
    return total


def C(mu: float, rtol: float = 1e-15, max_terms: int = 10**8) -> float:
    """C(mu) = sum_{1<=k<=j} prod_{i=k..j} mu^i / (1 + i - mu^i), eq. (3.28).

    The mean number of deflections of a packet as d -> infinity at load v = 2 mu
    (Theorem 3.3; (5.13) with Lemma 5.1). Summed by (5.16) to relative accuracy
    ``rtol``; the number of terms grows like ``log(1/rtol) / (1 - mu)``, hence
    the ``max_terms`` guard near mu = 1 (about 3e6 terms at mu = 0.99999).

    Table V is not reproduced: C(0.2) = 0.12855 where 0.117 is printed. This is
    not slow convergence, since partial sums increase and C_1(0.2) = 0.1111 <
    0.117 < C_2(0.2) = 0.1261. The printed values lie within about 0.001 of the
    same double sum with the odds ``mu^i / (1 + i - mu^i)`` replaced by p∞(i) =
    ``mu^i / (1 + i)``; Lemma 5.1 and (5.13) call for the odds, and T(m̄, d, v)
    approaches (3.27) with this C as d grows.

    Args:
        mu: the argument, 0 <= mu <= 1 (mu = v/2).
        rtol: relative accuracy of the sum.
        max_terms: most terms to add before giving up.

    Returns:
        C(mu); ``math.inf`` at mu = 1, where the series diverges.

    Raises:
        ValueError: if mu is outside [0, 1] or needs more than max_terms terms.
    """
    if not 0.0 <= mu <= 1.0:
        raise ValueError(f"C(mu) of (3.28) needs 0 <= mu <= 1, got {mu!r}")
    if mu == 1.0:
        return math.inf
    return _series(mu, None, rtol, max_terms) if mu > 0 else 0.0


def C_partial(mu: float, n: int) -> float:
    """C_N(mu) of (5.15) by the recursion (5.16), B_{j+1} = (1 + B_j) a_{j+1}.

    (5.16) is printed with a_j where a_{j+1} is meant: the Appendix proves
    ``B_j = sum_{k<=j} prod_{i=k..j} a_i`` with it, which needs a_{j+1}.

    Args:
        mu: the argument, 0 <= mu <= 1.
        n: the number N of terms, N >= 0.

    Returns:
        C_N(mu).
    """
    if not 0.0 <= mu <= 1.0 or n < 0:
        raise ValueError(f"C_N(mu) needs 0 <= mu <= 1 and N >= 0, got mu={mu!r}, N={n!r}")
    return _series(mu, n, 0.0, n) if n > 0 and mu > 0 else 0.0


def C_tail_bound(mu: float, n: int) -> float:
    """The bound (5.17): ``0 <= C(mu) - C_N(mu) <= (2/N)(mu^N/(1-mu) + 1)``, N >= 2, mu < 1."""
    if not 0.0 <= mu < 1.0 or n < 2:
        raise ValueError(f"(5.17) needs 0 <= mu < 1 and N >= 2, got mu={mu!r}, N={n!r}")
    return 2.0 / n * (mu**n / (1.0 - mu) + 1.0)


def C_bounds(mu: float) -> tuple[float, float]:
    """Eqs. (3.29)/(5.14): ``-ln(1-mu)/mu - 1 <= C(mu) <= -ln(1-mu)/mu + 1.7``, 0 <= mu < 1.

    (3.29) is printed without the minus sign in the upper bound; (5.14) and its
    proof (where 1.7 > pi^2/6) have it. At mu = 0 the limit (0, 2.7) is used.
    """
    if not 0.0 <= mu < 1.0:
        raise ValueError(f"C_bounds needs 0 <= mu < 1, got {mu!r}")
    lead = -math.log1p(-mu) / mu if mu > 0 else 1.0
    return lead - 1.0, lead + 1.7


def poisson_min_mean(x: float, y: float) -> float:
    """G_x(y) = E[X ∧ Y] for independent Poisson X, Y of means x, y >= 0, eq. (5.4)."""
    top = max(x, y)
    k = np.arange(int(top + 12.0 * math.sqrt(top) + 40))
    logf = np.array([math.lgamma(j + 1.0) for j in k])

    def survival(mean: float) -> np.ndarray:  # P[Poi(mean) >= k] for k = 1, 2, ...
        pmf = portable.exp(k * math.log(mean) - mean - logf) if mean > 0 else (k == 0).astype(float)
        return np.clip(1.0 - np.cumsum(pmf)[:-1], 0.0, 1.0)

    return portable.dot(survival(x), survival(y))


# --- §III-D: Lemma 3.1 and the limits of Theorems 3.1-3.3 --------------------------------


def delay_bounds(d: int) -> tuple[float, float]:
    """Lemma 3.1, eq. (3.20): ``d/2 <= T(m, d, v) <= d/2 + 6 + 2 ln d`` for all m and v."""
    check(d)
    return d / 2.0, d / 2.0 + 6.0 + 2.0 * math.log(d)


def m_bar_limit(v: float) -> float:
    """Theorem 3.1, eq. (3.21): m̄ -> v/2 ∧ 1 as d -> infinity, v fixed."""
    return min(v / 2.0, 1.0)


def accept_limit(v: float) -> float:
    """Theorem 3.1, eq. (3.22): a(m̄, d, v) -> 1 ∧ 2/v as d -> infinity.

    Printed ``v/2 ∧ 1``, a misprint: the text says the throughput a v -> 2 ∧ v,
    and the proof of Theorem 3.2 uses a v -> 2 for v >= 2.
    """
    return 1.0 if v <= 2.0 else 2.0 / v


def deflect_probability_limit(i: int, v: float) -> float:
    """Theorem 3.1, eqs. (3.23)-(3.24): p(i, m̄, d, v) -> p∞(i, v) = (v/2 ∧ 1)^i / (i+1)."""
    return m_bar_limit(v) ** i / (i + 1) if i > 0 else 0.0


def m_bar_saturation(d: int, v: float) -> float:
    """Theorem 3.2, eq. (3.25): m̄ ≈ 1 - G_v^{-1}(2) / d for v > 2 (G of (5.4)).

    Args:
        d: hypercube dimension.
        v: offered load, v > 2.

    Returns:
        The approximation of m̄ without its o(1/d) term.

    Raises:
        ValueError: if v <= 2, where G_v^{-1}(2) is infinite (G_v < v).
    """
    check(d)
    if not v > 2.0:
        raise ValueError(f"(3.25) needs v > 2 (G_v^-1(2) is infinite for v <= 2), got {v!r}")
    hi = 1.0
    while poisson_min_mean(v, hi) < 2.0:
        hi *= 2.0
    return 1.0 - brent_root(lambda y: poisson_min_mean(v, y) - 2.0, 0.0, hi, xtol=1e-12) / d


def t_infinity(d: int, v: float) -> float:
    """Theorem 3.3, eq. (3.27): ``T∞(d, v) = d / (2 (1 - 2^-d)) + 2 C(v/2)``.

    Args:
        d: hypercube dimension.
        v: offered load, 0 <= v <= 2 (``math.inf`` at v = 2).

    Returns:
        The asymptotic mean delay.
    """
    check(d)
    if not 0.0 <= v <= 2.0:
        raise ValueError(f"Theorem 3.3 holds for 0 <= v <= 2, got v={v!r}")
    return d / (2.0 * (1.0 - 2.0**-d)) + 2.0 * C(v / 2.0)


# --- Scalar solvers ----------------------------------------------------------------------


def brent_root(f: Callable[[float], float], lo: float, hi: float, xtol: float = 1e-14, maxiter: int = 200) -> float:
    """A root of f in [lo, hi] by Brent's method (the variant in SciPy's ``brentq``).

    Raises:
        ValueError: if f(lo) and f(hi) have the same strict sign.
    """
    x_pre, x_cur = lo, hi
    f_pre, f_cur = f(x_pre), f(x_cur)
    if f_pre == 0.0 or f_cur == 0.0:
        return x_pre if f_pre == 0.0 else x_cur
    if (f_pre > 0) == (f_cur > 0):
        raise ValueError(f"no sign change on [{lo}, {hi}]: f = {f_pre}, {f_cur}")
    x_blk = f_blk = s_pre = s_cur = 0.0
    for _ in range(maxiter):
        if f_pre != 0.0 and (f_pre > 0) != (f_cur > 0):
            x_blk, f_blk = x_pre, f_pre
            s_pre = s_cur = x_cur - x_pre
        if abs(f_blk) < abs(f_cur):
            x_pre, x_cur, x_blk = x_cur, x_blk, x_cur
            f_pre, f_cur, f_blk = f_cur, f_blk, f_cur
        delta = (xtol + 8.9e-16 * abs(x_cur)) / 2.0
        s_bis = (x_blk - x_cur) / 2.0
        if f_cur == 0.0 or abs(s_bis) < delta:
            return x_cur
        if abs(s_pre) > delta and abs(f_cur) < abs(f_pre):
            if x_pre == x_blk:  # secant
                s_try = -f_cur * (x_cur - x_pre) / (f_cur - f_pre)
            else:  # inverse quadratic interpolation
                d_pre = (f_pre - f_cur) / (x_pre - x_cur)
                d_blk = (f_blk - f_cur) / (x_blk - x_cur)
                s_try = -f_cur * (f_blk * d_blk - f_pre * d_pre) / (d_blk * d_pre * (f_blk - f_pre))
            if 2.0 * abs(s_try) < min(abs(s_pre), 3.0 * abs(s_bis) - delta):
                s_pre, s_cur = s_cur, s_try
            else:
                s_pre = s_cur = s_bis
        else:
            s_pre = s_cur = s_bis
        x_pre, f_pre = x_cur, f_cur
        x_cur += s_cur if abs(s_cur) > delta else math.copysign(delta, s_bis)
        f_cur = f(x_cur)
    return x_cur


def golden_max(f: Callable[[float], float], lo: float, hi: float, xtol: float = 1e-8) -> tuple[float, float]:
    """Maximiser and maximum of a unimodal f on [lo, hi] by golden-section search."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    while hi - lo > xtol:
        if f1 < f2:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
        else:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
    return (x1, f1) if f1 >= f2 else (x2, f2)
