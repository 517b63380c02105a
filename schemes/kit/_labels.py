"""Label priorities (Stamoulis & Tsitsiklis §4.3.1): the label recursion and label streams.

A label names the period of a periodic multinode-broadcast schedule in which a packet
"would have been broadcast"; per-port queues then serve the smallest label first. The
recursion is generic: any scheme that ranks packets by virtual periods can use it.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = ["StreamLabels", "first_label", "next_label"]


def first_label(tau: float | Fraction, period: int) -> int:
    """Label of a packet that finds its node's queue empty: ``⌈τ/P⌉ + 1`` (§4.3.1).

    Label ``l`` names the ``l``-th period of the periodic scheme, which occupies slots
    ``(l-1)P .. lP - 1`` (the paper's "multinode broadcast starting at time
    ``(l-1)P + 1``" with 1-based slots).  ``⌈τ/P⌉ + 1`` is the first period starting at
    or after time ``τ``.

    Args:
        tau: Time from which the packet may be transmitted, with slot ``s`` spanning
            ``[s, s+1)``.  A packet generated during slot ``s`` (arriving just before its
            end, §2.1.1(b)) has ``tau = s + 1``; a continuous arrival instant in
            ``(s, s+1]`` gives the same label.
        period: ``P``: ``⌈(2**d - 1)/d⌉`` (= :func:`balanced_period`) for the scheme of
            §4.3.1, ``2**d - 1`` (= :func:`dtree_period`) for that of §4.3.2.

    Returns:
        The label, ``>= 1``.
    """
    if tau < 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    if isinstance(tau, int):
        return -(-tau // period) + 1
    return math.ceil(Fraction(tau) / period) + 1


def next_label(prev_label: int, tau: float | Fraction, period: int) -> int:
    """Label recursion of §4.3.1: ``l_{n+1} = max{l_n + 1, ⌈τ_{n+1}/P⌉ + 1}``.

    The paper prints ``τ_n`` inside the ceiling; with ``τ_n`` the label could name a
    period that starts before the packet exists, contradicting the definition right above
    the formula ("the ``n``-th packet would have been broadcast ... in the ``l``-th
    period"), so the arrival time of the *new* packet is used.

    Args:
        prev_label: ``l_n``, label of the previous packet of the same stream (same
            origin; for §4.3.2 same origin *and* tree).
        tau: ``τ_{n+1}`` (see :func:`first_label`).
        period: Period ``P``.

    Returns:
        ``l_{n+1}``.
    """
    return max(prev_label + 1, first_label(tau, period))


class StreamLabels:
    """The labels an origin stamps on its packets, one recursion per stream (§4.3.1).

    Example:
        >>> s = StreamLabels(1, period=3)
        >>> [s.next(0, t) for t in (1, 1, 1, 9)]
        [2, 3, 4, 5]
    """

    __slots__ = ("_last", "period")

    def __init__(self, streams: int, period: int) -> None:
        if streams < 1 or period < 1:
            raise ValueError(f"need streams >= 1 and period >= 1, got {streams}, {period}")
        self.period = period
        self._last: list[int | None] = [None] * streams

    def next(self, stream: int, tau: int) -> int:
        """Label of the stream's next packet, first sendable in slot ``tau``.

        ``tau`` is the paper's τ: a packet generated during slot ``t`` has ``τ = t + 1``,
        the slot from which it may be sent (see :func:`first_label`).
        """
        last = self._last[stream]
        label = first_label(tau, self.period) if last is None else next_label(last, tau, self.period)
        self._last[stream] = label
        return label
