"""The core of :mod:`slotnet.schemes.kit.choices` (where a scheme imports it from; the orchestrator
imports this module, never the kit). See that module for the whole story."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MIN_EXPECTED", "SIGNIFICANCE", "Binomial", "Categorical", "Distribution", "Poisson", "Uniform",
           "chi_square_sf", "goodness_of_fit"]

#: The p-value below which a declared choice fails the run (the false-alarm rate per choice and run).
SIGNIFICANCE = 1e-6
#: The least expected count of a cell of the test (smaller cells are pooled).
MIN_EXPECTED = 5.0


class Distribution:
    """A declared distribution of a choice's outcomes: its cells for ``n`` outcomes."""

    def probability(self, value: Any) -> float:
        raise NotImplementedError

    def cells(self, n: int) -> list[tuple[Any, float]]:
        """``(value, expected count)`` of every outcome of positive probability, for ``n``
        outcomes (a discrete distribution with an infinite tail gives its tail as one cell
        ``(">=k", count)``)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Categorical(Distribution):
    """Finitely many outcomes with given probabilities (they must sum to 1)."""

    probs: Mapping[Hashable, float]

    def __post_init__(self) -> None:
        total = sum(self.probs.values())
        if not self.probs or abs(total - 1.0) > 1e-9 or any(p < 0 for p in self.probs.values()):
            raise ValueError(f"a categorical distribution needs probabilities >= 0 summing to 1, not {total}")

    def probability(self, value: Any) -> float:
        return float(self.probs.get(value, 0.0))

    def cells(self, n: int) -> list[tuple[Any, float]]:
        return [(v, p * n) for v, p in self.probs.items() if p > 0]

    def describe(self) -> str:
        if len(self.probs) <= 4:
            return "categorical (" + ", ".join(f"{v}: {p:.4g}" for v, p in self.probs.items()) + ")"
        return f"categorical over {len(self.probs)} values"


class Uniform(Categorical):
    """Each of ``values`` equally likely (e.g. ``Uniform(range(d))``: one of the d trees)."""

    def __init__(self, values: Iterable[Hashable]) -> None:
        vals = list(dict.fromkeys(values))
        if not vals:
            raise ValueError("a uniform distribution needs at least one value")
        super().__init__({v: 1.0 / len(vals) for v in vals})

    def describe(self) -> str:
        vals = list(self.probs)
        if len(vals) > 3:
            return f"uniform over {len(vals)} values ({vals[0]}..{vals[-1]})"
        return f"uniform over {len(vals)} values {{{', '.join(map(str, vals))}}}"  # a set, not a tuple's repr


class Binomial(Categorical):
    """The number of successes in ``n`` independent trials of probability ``p``: B(n, p)
    (e.g. ``Binomial(d, v / d)``: packets offered to a node of the d-cube in a slot).

    Example:
        >>> Binomial(2, 0.5).probs
        {0: 0.25, 1: 0.5, 2: 0.25}
    """

    def __init__(self, n: int, p: float) -> None:
        if n < 1 or not 0.0 <= p <= 1.0:
            raise ValueError(f"a binomial distribution needs n >= 1 and 0 <= p <= 1, not n={n}, p={p}")
        super().__init__({k: math.comb(n, k) * p**k * (1.0 - p) ** (n - k) for k in range(n + 1)})
        object.__setattr__(self, "_label", f"binomial B({n}, {p:.6g})")

    def describe(self) -> str:
        return str(self.__dict__["_label"])


@dataclass(frozen=True)
class Poisson(Distribution):
    """A count with the Poisson distribution of mean ``mean`` (arrivals in one slot)."""

    mean: float

    def __post_init__(self) -> None:
        if not self.mean > 0:
            raise ValueError(f"a Poisson mean must be positive, not {self.mean}")

    def probability(self, value: Any) -> float:
        if not isinstance(value, int) or value < 0:
            return 0.0
        return math.exp(value * math.log(self.mean) - self.mean - math.lgamma(value + 1))

    def cells(self, n: int) -> list[tuple[Any, float]]:
        out: list[tuple[Any, float]] = []
        k, left = 0, 1.0
        while True:
            p = self.probability(k)
            if left - p < 1e-12 or (n * (left - p) < MIN_EXPECTED and k >= self.mean):
                out.append((f">={k}", left * n))
                return out
            out.append((k, p * n))
            left -= p
            k += 1

    def describe(self) -> str:
        return f"Poisson of mean {self.mean:g}"


def chi_square_sf(x: float, dof: int) -> float:
    """P(X >= x) for X chi-square with ``dof`` degrees of freedom: Q(dof/2, x/2), the
    regularised upper incomplete gamma function (series below a+1, continued fraction above;
    Numerical Recipes §6.2), to about 1e-12."""
    if dof <= 0:
        raise ValueError("degrees of freedom must be positive")
    a, z = dof / 2.0, x / 2.0
    if z <= 0:  # x <= 0, or so small that x / 2 underflows
        return 1.0
    lead = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:  # series for P, then Q = 1 - P
        term = total = 1.0 / a
        ap = a
        for _ in range(10000):
            ap += 1
            term *= z / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(lead))
    tiny = 1e-300  # Lentz's continued fraction for Q
    b = z + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(lead) * h


def _pooled(cells: list[tuple[Any, float]], counts: Mapping[Any, int]) -> tuple[list[float], list[float]]:
    """Observed and expected per cell, small cells merged into their neighbours in order."""
    obs_all: list[float] = []
    exp_all: list[float] = []
    tail_label = cells[-1][0] if cells and isinstance(cells[-1][0], str) and cells[-1][0].startswith(">=") else None
    tail_from = int(tail_label[2:]) if tail_label else None
    for value, e in cells:
        o: float
        if value == tail_label and tail_from is not None:
            o = sum(c for v, c in counts.items() if isinstance(v, int) and v >= tail_from)
        else:
            o = counts.get(value, 0)
        obs_all.append(float(o))
        exp_all.append(e)
    obs: list[float] = []
    exp: list[float] = []
    acc_o = acc_e = 0.0
    for o, e in zip(obs_all, exp_all):
        acc_o += o
        acc_e += e
        if acc_e >= MIN_EXPECTED:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e and exp:  # a small remainder joins the last cell
        obs[-1] += acc_o
        exp[-1] += acc_e
    return obs, exp


def goodness_of_fit(dist: Distribution, counts: Mapping[Any, int], *, judged: bool = True) -> dict[str, Any]:
    """The chi-square test of ``counts`` (value -> how many times it was chosen) against
    ``dist``: a result row with ``ok``. An outcome of probability 0 fails at once; too few
    outcomes (fewer than two cells of :data:`MIN_EXPECTED`), or ``judged`` false, leave it
    not judged (``ok`` true, ``judged`` false).

    Example:
        >>> goodness_of_fit(Uniform(range(2)), {0: 50, 1: 50})["ok"]
        True
        >>> goodness_of_fit(Uniform(range(2)), {0: 100, 1: 0})["ok"]
        False
    """
    n = sum(counts.values())
    out: dict[str, Any] = {"ok": True, "distribution": dist.describe(), "outcomes": n,
                           "significance": SIGNIFICANCE}
    impossible = sorted((repr(v) for v, c in counts.items() if c and dist.probability(v) == 0.0))
    if impossible:
        out["ok"] = False
        out["problem"] = (f"{len(impossible)} value(s) of probability 0 were chosen (e.g. {impossible[0]}), "
                          f"against {dist.describe()}")
        return out
    obs, exp = _pooled(dist.cells(n), counts) if n else ([], [])
    if not judged or len(exp) < 2:
        out["judged"] = False
        if judged:
            out["why"] = f"too few outcomes to judge ({n}; each cell needs {MIN_EXPECTED:g} expected)"
        return out
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
    p = chi_square_sf(stat, len(exp) - 1)
    out.update({"judged": True, "cells": len(exp), "chi_square": stat, "p_value": p})
    if p < SIGNIFICANCE:
        out["ok"] = False
        worst = max(range(len(exp)), key=lambda i: (obs[i] - exp[i]) ** 2 / exp[i])
        out["problem"] = (f"{n} outcomes do not fit {dist.describe()}: chi-square {stat:.4g} on {len(exp) - 1} "
                          f"degrees of freedom, p = {p:.3g} < {SIGNIFICANCE:g} (a cell holds {obs[worst]:g} "
                          f"where {exp[worst]:.4g} are expected)")
    return out
