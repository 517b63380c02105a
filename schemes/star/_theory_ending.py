"""Ending-dimension probabilities x_l: eq. (2), eq. (4) and the infeasible case.

Yeh, Varvarigos & Eshoul. With ``Q[i][l] = a[i][l] + r h_i`` (``r = lam_R / lam_B``,
``a`` of eq. (1), ``h_i`` the mean dimension-``i`` unicast hops, see ``_theory_loads``), the
expected per-link load of dimension ``i`` is ``lam_B / 2 * sum_l Q[i][l] x_l`` whenever
``sum_l x_l = 1``. Eq. (4) asks every dimension to carry the mean load:

    sum_l a[i][l] x_l + r h_i = (N - 1)/d + r H/d,   H = sum_i h_i,   i = 1..d   (4)

and eq. (2) is its ``r = 0`` case. Summing the rows with eq. (3) gives ``sum x = 1``.
Solved here exactly (fractions, Gauss-Jordan).

Infeasible solutions (§4, after eq. (4)): "If we obtain an infeasible solution, for
example, x_1 > 1 and x_2 < 0 for a 2-D mesh [the torus is meant], we should use
probability vector (1, 0)". Since the mean link load is the same for every x on the
simplex (each broadcast makes N-1 transmissions whatever its ending dimension), a
solution of (4) is exactly a point where the maximum dimension load reaches its least
possible value; when none is feasible, the paper's vertex is the point of the simplex
that minimises the maximum dimension load (in 2-D the two loads are linear in x_1 and
cross outside [0, 1], so the minimum of their maximum is at the vertex on that side,
which relieves the overloaded dimension). For every d -- so also d >= 3, which the
paper leaves open -- we therefore use the minimiser of the maximum per-link load over
the simplex, the linear programme

    minimise t  subject to  sum_l Q[i][l] x_l <= t (all i),  sum_l x_l = 1,  x >= 0,

solved exactly by the simplex method with Bland's rule (ties between optimal points
are broken by that rule, deterministically). In 2-D it returns the paper's vertex; for
d >= 3 it may be a vertex or a point on a face (some x_l = 0, the rest rebalanced).
Broadcast-only traffic (eq. (2)) was feasible on every torus we tried (all 2-, 3- and
4-D tori with sides 2..8); infeasibility comes from heavy unicast on unequal sides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from ._theory_loads import transmissions_matrix, unicast_hops

__all__ = ["balance_solution", "load_matrix", "minimax_probs", "solve_ending_probs"]


def load_matrix(sides: Sequence[int], ratio: Fraction, hops: str = "exact") -> list[list[Fraction]]:
    """``Q[i][l] = a[i][l] + ratio * h_i``: 2/lam_B times the dimension-i link load of ending l."""
    a = transmissions_matrix(sides)
    h = unicast_hops(sides, hops)
    d = len(sides)
    return [[Fraction(a[i][l]) + ratio * h[i] for l in range(d)] for i in range(d)]


def _solve(m: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """Gauss-Jordan on a square system in fractions; None if singular."""
    n = len(b)
    rows = [list(m[i]) + [b[i]] for i in range(n)]
    for col in range(n):
        piv = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if piv is None:
            return None
        rows[col], rows[piv] = rows[piv], rows[col]
        p = rows[col][col]
        rows[col] = [v / p for v in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [v - f * w for v, w in zip(rows[r], rows[col])]
    return [rows[i][n] for i in range(n)]


def balance_solution(sides: Sequence[int], ratio: Fraction, hops: str = "exact") -> list[Fraction] | None:
    """The solution of eq. (4) (eq. (2) when ``ratio == 0``), feasible or not; None if singular."""
    d = len(sides)
    big_n = math.prod(sides)
    a = transmissions_matrix(sides)
    h = unicast_hops(sides, hops)
    mean_h = sum(h, Fraction(0)) / d
    b = [Fraction(big_n - 1, d) + ratio * (mean_h - h[i]) for i in range(d)]
    return _solve([[Fraction(v) for v in row] for row in a], b)


def _pivot(tab: list[list[Fraction]], row: int, col: int) -> None:
    p = tab[row][col]
    tab[row] = [v / p for v in tab[row]]
    for r in range(len(tab)):
        if r != row and tab[r][col] != 0:
            f = tab[r][col]
            tab[r] = [v - f * w for v, w in zip(tab[r], tab[row])]


def minimax_probs(q: list[list[Fraction]]) -> list[Fraction]:
    """Minimise ``max_i sum_l q[i][l] x_l`` over the simplex (exact simplex, Bland's rule).

    Variables ``x_0..x_{d-1}``, ``t`` (index d), slacks ``s_i`` (index d+1+i); rows
    ``sum_l q[i][l] x_l - t + s_i = 0`` and ``sum_l x_l = 1``. The starting basis is the
    vertex ``x = e_0`` with ``t`` its maximum load (feasible, so no phase 1).
    """
    d = len(q)
    width = 2 * d + 2  # variables + right-hand side
    tab = []
    for i in range(d):
        row = [Fraction(0)] * width
        row[:d] = q[i]
        row[d] = Fraction(-1)
        row[d + 1 + i] = Fraction(1)
        tab.append(row)
    tab.append([Fraction(1)] * d + [Fraction(0)] * (d + 1) + [Fraction(1)])
    basis = [d + 1 + i for i in range(d)] + [0]
    _pivot(tab, d, 0)
    top = max(range(d), key=lambda i: (q[i][0], -i))
    _pivot(tab, top, d)
    basis[top] = d
    while True:
        t_rows = [r for r, var in enumerate(basis) if var == d]
        cost = [(1 if j == d else 0) - sum((tab[r][j] for r in t_rows), Fraction(0)) for j in range(width - 1)]
        enter = next((j for j in range(width - 1) if cost[j] < 0 and j not in basis), None)
        if enter is None:
            break
        cands = [r for r in range(d + 1) if tab[r][enter] > 0]
        if not cands:  # cannot happen: t >= every load >= 0 bounds the objective
            raise ArithmeticError("minimax programme unbounded")
        best = min(tab[r][-1] / tab[r][enter] for r in cands)
        leave = min((r for r in cands if tab[r][-1] / tab[r][enter] == best), key=lambda r: basis[r])
        _pivot(tab, leave, enter)
        basis[leave] = enter
    x = [Fraction(0)] * d
    for r, var in enumerate(basis):
        if var < d:
            x[var] = tab[r][-1]
    return x


def solve_ending_probs(
    sides: Sequence[int], ratio: Fraction, hops: str = "exact"
) -> tuple[list[Fraction], bool]:
    """x_1..x_d (0-based list) and whether eq. (4) had a feasible solution.

    Feasible: the exact solution of eq. (4). Otherwise (or if the system is singular):
    the minimiser of the maximum dimension load (see the module docstring).
    """
    x = balance_solution(sides, ratio, hops)
    if x is not None and all(0 <= v <= 1 for v in x):
        return x, True
    return minimax_probs(load_matrix(sides, ratio, hops)), False
