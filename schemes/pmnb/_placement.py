"""Sets of active nodes for the static tasks: random, corner (clustered) and spread.

The paper assumes nothing about where the M active nodes are (§4: "M arbitrary nodes");
its partial-exchange lower bound (§5, Fig. 3) uses clustered placements. These give
the three placements the runs sweep. Node ids are the project's (dimension 0 fastest);
every function returns the ids sorted increasingly and is deterministic given its
arguments (``random`` draws only from the ``random.Random`` it is given).

* ``random``: M of the N nodes, uniformly (``rng.sample``).
* ``corner``: the M nodes nearest node 0 in the max-norm, ties by node id: nested boxes
  ``[0, a)^d`` at the corner, so M = m^d gives exactly the m x ... x m sub-box of
  Fig. 3(a) (``M_{0,0}``); otherwise the box is filled shell by shell.
* ``spread``: a lattice as even as possible: ``a_k`` points along dimension k at
  coordinates ``floor((2j + 1) p_k / (2 a_k))`` (cell centres), with the ``a_k`` grown
  from ``p_k (M/N)^(1/d)`` (largest spacing first) until ``prod a_k >= M``; when the
  lattice has L > M points, the M taken are those of lattice index ``floor((i + 1/2) L/M)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from ._prefix import check_sides

__all__ = ["PLACEMENTS", "corner_placement", "place", "random_placement", "spread_placement"]

PLACEMENTS = ("random", "corner", "spread")


def _check(sides: Sequence[int], m: int) -> tuple[tuple[int, ...], int]:
    sides_t = check_sides(sides)
    n = math.prod(sides_t)
    if isinstance(m, bool) or not isinstance(m, int):
        raise ValueError(f"number of active nodes must be an integer, got {m!r}")
    if not 0 <= m <= n:
        raise ValueError(f"number of active nodes must be in 0..{n}, got {m}")
    return sides_t, n


def random_placement(sides: Sequence[int], m: int, rng: random.Random) -> tuple[int, ...]:
    """M distinct node ids drawn uniformly with ``rng.sample``, sorted."""
    _sides, n = _check(sides, m)
    return tuple(sorted(rng.sample(range(n), m)))


def corner_placement(sides: Sequence[int], m: int) -> tuple[int, ...]:
    """The M nodes nearest the corner node 0 in the max-norm (ties by id), sorted."""
    sides_t, n = _check(sides, m)
    strides = [math.prod(sides_t[:k]) for k in range(len(sides_t))]

    def key(v: int) -> tuple[int, int]:
        return max((v // st) % s for st, s in zip(strides, sides_t)), v

    return tuple(sorted(sorted(range(n), key=key)[:m]))


def _lattice_counts(sides: tuple[int, ...], m: int) -> list[int]:
    n, d = math.prod(sides), len(sides)
    f = (m / n) ** (1.0 / d)
    a = [max(1, min(p, math.floor(p * f))) for p in sides]
    while math.prod(a) < m:
        k = max((k for k in range(d) if a[k] < sides[k]), key=lambda k: (sides[k] / a[k], -k))
        a[k] += 1
    return a


def spread_placement(sides: Sequence[int], m: int) -> tuple[int, ...]:
    """M node ids on a lattice spread as evenly as possible over the mesh, sorted."""
    sides_t, _n = _check(sides, m)
    if m == 0:
        return ()
    a = _lattice_counts(sides_t, m)
    axes = [[(2 * j + 1) * p // (2 * ak) for j in range(ak)] for p, ak in zip(sides_t, a)]
    total = math.prod(a)
    strides = [math.prod(sides_t[:k]) for k in range(len(sides_t))]
    out = []
    for i in range(m):
        idx = (2 * i + 1) * total // (2 * m)
        node = 0
        for k, ak in enumerate(a):
            idx, j = divmod(idx, ak)
            node += axes[k][j] * strides[k]
        out.append(node)
    return tuple(sorted(out))


def place(kind: str, sides: Sequence[int], m: int, rng: random.Random | None = None) -> tuple[int, ...]:
    """Active node ids for placement ``kind`` (one of :data:`PLACEMENTS`).

    Raises:
        ValueError: on an unknown kind, a bad M, or ``random`` without an rng.
    """
    if kind == "random":
        if rng is None:
            raise ValueError("placement 'random' needs a random.Random")
        return random_placement(sides, m, rng)
    if kind == "corner":
        return corner_placement(sides, m)
    if kind == "spread":
        return spread_placement(sides, m)
    raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {kind!r}")
