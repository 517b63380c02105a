"""Offered traffic of §II-B and §IV, drawn by the node from its own RNG stream.

Per slot the number of new packets is B(d, v/d) (§II-B, blocking model) or Poisson(λ)
(§IV, input queueing), independent from slot to slot. A node that has nothing else to
do sleeps until its next slot with arrivals, so the slots without arrivals are skipped
with one geometric draw rather than visited: the per-slot counts keep exactly the same
distribution (the process is memoryless), and idle nodes cost nothing per slot.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from math import log
from typing import Any

#: ``-math.inf``, bound once: the log-probability of "no arrival" when an arrival is certain
_NEVER = -math.inf

__all__ = ["ArrivalProcess", "binomial_pmf", "poisson_pmf"]


def binomial_pmf(n: int, p: float) -> list[float]:
    """P[B(n, p) = k] for k = 0..n."""
    return [math.comb(n, k) * p**k * (1.0 - p) ** (n - k) for k in range(n + 1)]


def poisson_pmf(lam: float, tail: float = 1e-15) -> list[float]:
    """P[Poisson(lam) = k] for k = 0..K, with K the first k whose tail mass < ``tail``."""
    out = [math.exp(-lam)]
    total = out[0]
    k = 0
    while 1.0 - total > tail and k < 10_000:
        k += 1
        out.append(out[-1] * lam / k)
        total += out[-1]
    return out


class _Segment:
    """Arrivals at a constant rate from ``start`` to ``end`` (exclusive; None = forever)."""

    __slots__ = ("start", "end", "log_p0", "cdf_pos")

    def __init__(self, start: int, end: int | None, pmf: Sequence[float]) -> None:
        self.start, self.end = start, end
        p0 = pmf[0]
        positive = 1.0 - p0
        if positive <= 0.0:
            self.log_p0 = 0.0  # never any arrival
            self.cdf_pos: list[float] = []
            return
        self.log_p0 = math.log(p0) if p0 > 0.0 else -math.inf
        acc, cdf = 0.0, []
        for q in pmf[1:]:
            acc += q / positive
            cdf.append(acc)
        cdf[-1] = 1.0
        self.cdf_pos = cdf


@lru_cache(maxsize=64)
def _segments(segments: tuple[tuple[int, tuple[float, ...]], ...]) -> tuple[_Segment, ...]:
    """The segments of ``(start, pmf)`` pairs, made once for every node with the same
    (segments are never changed once made)."""
    return tuple(_Segment(start, segments[i + 1][0] if i + 1 < len(segments) else None, pmf)
                 for i, (start, pmf) in enumerate(segments))


class ArrivalProcess:
    """Next slot with arrivals, and how many, for one node.

    Args:
        rng: the node's own stream.
        segments: ``(start_slot, pmf)`` pairs in increasing start order; each pmf holds
            from its start to the next segment's start (the last one forever).
        rand: ``rng.random`` where the caller already holds it (one bound method less a node).
    """

    __slots__ = ("_rand", "_segs", "_only")

    def __init__(self, rng: random.Random, segments: Sequence[tuple[int, Sequence[float]]],
                 rand: Callable[[], float] | None = None) -> None:
        self._rand = rand if rand is not None else rng.random
        key: Any = segments  # the cache's key: tuples all through (a node's cached segments already are)
        if type(key) is not tuple or not all(type(pmf) is tuple for _, pmf in key):
            key = tuple((start, tuple(pmf)) for start, pmf in segments)
        segs = _segments(key)
        self._segs = segs
        self._only = segs[0] if len(segs) == 1 and segs[0].end is None else None

    def next_after(self, slot: int) -> tuple[int, int] | None:
        """The first slot ``> slot`` with at least one arrival, and the arrival count.

        Returns None when no arrival will ever come.
        """
        only = self._only
        if only is not None:  # one rate forever (every steady-state run): the loop below, unrolled
            t = max(slot + 1, only.start)
            if not only.cdf_pos:
                return None
            gap = 0 if only.log_p0 == _NEVER else int(log(1.0 - self._rand()) / only.log_p0)
            count = 1 + bisect_right(only.cdf_pos, self._rand())
            return t + gap, min(count, len(only.cdf_pos))
        t = slot + 1
        for seg in self._segs:
            if seg.end is not None and t >= seg.end:
                continue
            t = max(t, seg.start)
            if seg.cdf_pos:
                if seg.log_p0 == _NEVER:
                    gap = 0
                else:
                    u = 1.0 - self._rand()  # in (0, 1]
                    gap = int(log(u) / seg.log_p0)  # slots without arrivals first
                at = t + gap
                if seg.end is None or at < seg.end:
                    count = 1 + bisect_right(seg.cdf_pos, self._rand())
                    return at, min(count, len(seg.cdf_pos))
            if seg.end is None:
                return None
            t = seg.end
        return None
