"""Offered traffic of §II-B and §IV, drawn by the node from its own RNG stream.

Per slot the number of new packets is B(d, v/d) (§II-B, blocking model) or Poisson(λ)
(§IV, input queueing), independent from slot to slot. A node that has nothing else to
do sleeps until its next slot with arrivals, so the slots without arrivals are skipped
with one geometric draw rather than visited: the per-slot counts keep exactly the same
distribution (the process is memoryless), and idle nodes cost nothing per slot.

At one rate forever (every steady-state run) the process also counts how many slots drew
each arrival count, in plain ints: one per slot with arrivals as it is reached, the slots
without (those a gap skips) at the end, from the span counted. The node hands the counts
to the observer at the end (:meth:`ArrivalProcess.counts`), which tests them against the
declared distribution (``Scheme.choices``). Counting draws nothing.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from math import log
from typing import TYPE_CHECKING, Any

from slotnet.nodes._philox import stream_of

if TYPE_CHECKING:
    from slotnet.nodes import NodeStream

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
        if positive <= 0.0 or len(pmf) < 2:  # (a Poisson pmf whose tail below 1e-15 is cut ends at k = 0)
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

    __slots__ = ("_rand", "_ps", "_segs", "_only", "hist", "_first", "_at", "_count", "_skipped")

    def __init__(self, rng: NodeStream, segments: Sequence[tuple[int, Sequence[float]]],
                 rand: Callable[[], float] | None = None) -> None:
        self._rand = rand if rand is not None else rng.random
        #: the philox stream ``_rand`` draws from, or None: compiled, a draw is then a C call
        self._ps = stream_of(self._rand)
        key: Any = segments  # the cache's key: tuples all through (a node's cached segments already are)
        if type(key) is not tuple or not all(type(pmf) is tuple for _, pmf in key):
            key = tuple((start, tuple(pmf)) for start, pmf in segments)
        segs = _segments(key)
        self._segs = segs
        self._only = segs[0] if len(segs) == 1 and segs[0].end is None else None
        #: one rate forever: ``hist[k]`` (k >= 1) -- the slots reached so far that drew ``k``
        #: arrivals, from slot ``_first`` on (-1: none asked for yet); ``_at``, ``_count``: the
        #: next slot with arrivals drawn, and its count (``_at`` -1: none); ``_skipped``: slots
        #: never drawn (a late wake-up, after a stall, starts drawing anew)
        self.hist = [0] * (len(self._only.cdf_pos) + 1) if self._only is not None else []
        self._first = -1
        self._at = -1
        self._count = 0
        self._skipped = 0

    def next_after(self, slot: int) -> tuple[int, int] | None:
        """The first slot ``> slot`` with at least one arrival, and the arrival count.

        Returns None when no arrival will ever come.
        """
        only = self._only
        if only is not None:  # one rate forever (every steady-state run): the loop below, unrolled
            t = max(slot + 1, only.start)
            pend = self._at
            if pend >= 0:  # the last draw's arrival slot is reached: count it
                hist = self.hist
                hist[self._count] += 1
                late = slot
                if late > pend:  # a late wake-up (a stall): the slots up to slot were never drawn
                    self._skipped += late - pend
            elif self._first < 0:
                self._first = t
            if not only.cdf_pos:
                self._at = -1
                return None
            ps = self._ps
            if ps is None:
                gap = 0 if only.log_p0 == _NEVER else int(log(1.0 - self._rand()) / only.log_p0)
                count = 1 + bisect_right(only.cdf_pos, self._rand())
            else:  # the same two draws, as C calls
                gap = 0 if only.log_p0 == _NEVER else int(log(1.0 - ps.random()) / only.log_p0)
                count = 1 + bisect_right(only.cdf_pos, ps.random())
            if count > len(only.cdf_pos):
                count = len(only.cdf_pos)
            at = t + gap
            self._at = at
            self._count = count
            return at, count
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

    def counts(self, last: int) -> dict[int, int]:
        """Arrival count -> the slots up to ``last`` that drew it (one rate forever; else empty).

        Covers every slot from the first asked for (``next_after(slot)``: from ``slot + 1``)
        to ``last`` whose count is drawn: the slots up to the next arrival slot drawn, and
        that slot's own count where it is not past ``last``.
        """
        if self._only is None or self._first < 0:
            return {}
        hist = list(self.hist)
        at, end = self._at, last
        if 0 <= at <= last:  # drawn, not reached (the node stopped): known up to it
            hist[self._count] += 1
            end = at
        hist[0] = max(0, end + 1 - self._first - self._skipped - sum(hist))
        return {k: n for k, n in enumerate(hist) if n}
