"""Theorem 2's greedy broadcast on a linear array or ring, and the §4.1 Phase 3 windows.

Varvarigos & Bertsekas, §2, proof of Theorem 2: "each node passes in the same direction
the packets that come to it, and inserts a packet of its own whenever it sees an empty
slot". Per direction of a line, at every step a node sends on its out-link the piece
that arrived from behind at the end of the previous step, if that piece still has hops
to go; otherwise its next own piece (if any). A piece is never delayed once it started.

How far a piece travels in one direction (:func:`hop_limits`):

* array: to the end of the array (each node receives every piece from the side it
  lies on, exactly once);
* ring with two-way splitting (Theorem 2's ring, Lemma 1 on tori): each half goes
  ``p - 1`` hops, all the way round, one half per direction;
* ring without splitting (§4.2 on tori): one whole copy goes ``ceil((p-1)/2)`` hops in
  the +1 direction and another ``floor((p-1)/2)`` in the -1 direction (the Remark after
  Theorem 2: an MNB on a ring takes ``floor(p/2)`` unsplit). Both copies together reach
  the ``p - 1`` other nodes once each.

:func:`greedy_line_time` runs the rule on given per-node counts (a pure reference used by
the nodes to time their windows and by the tests). :func:`broadcast_windows` gives the
length of each of the d broadcast subphases of §4.1 Phase 3 from M alone: after packing,
the packets of a class sit on the nodes of class-order index ``0..M-1``, so before
subphase l a node whose ``d - l`` least significant class digits read ``s'`` holds the
packets ``w < M`` with ``w = s' + k p^(d-l)`` and digit ``d - l`` of ``w`` equal to its own
(Theorem 5, Lemma 1's ``W_l(s)``); along the line of subphase l the counts are
``n_x = #{k < R: k mod p = x}`` with ``R = ceil((M - s') / p^(d-l))``, which takes only
the two values ``ceil(M/p^(d-l))`` and ``floor(M/p^(d-l))``. Every node can therefore
compute the same window lengths, and all d classes stay in lockstep on distinct
dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "broadcast_windows",
    "class_sizes",
    "greedy_line_time",
    "hop_limits",
    "line_counts",
    "subphase_patterns",
]


def hop_limits(p: int, wrap: bool, split: bool) -> tuple[int | None, int | None]:
    """Hops a piece may travel in the +1 and the -1 direction (None: to the array's end).

    Example:
        >>> hop_limits(5, True, True), hop_limits(6, True, False), hop_limits(6, False, True)
        ((4, 4), (3, 2), (None, None))
    """
    if p < 2:
        raise ValueError(f"a line needs p >= 2 nodes, got {p}")
    if not wrap:
        return None, None
    if split:
        return p - 1, p - 1
    return (p - 1 + 1) // 2, (p - 1) // 2


def greedy_line_time(counts: Sequence[int], wrap: bool, split: bool) -> int:
    """Steps until the last reception of Theorem 2's greedy broadcast (0 if nothing moves).

    Args:
        counts: pieces each node of the line starts with (per direction: every node
            sends each of its pieces once in each direction that has hops).
        wrap: a ring (True) or a linear array.
        split: on a ring, halves go all the way round (True) or whole copies take the
            two shorter arcs (False); ignored on an array.

    Example:
        >>> greedy_line_time([3, 0, 0, 0], False, False)  # K + p - 2: the last leaves at step 2
        5
    """
    p = len(counts)
    limits = hop_limits(p, wrap, split)
    last = 0
    for direction, limit in zip((+1, -1), limits):
        if limit == 0:
            continue
        own = list(counts)
        coming: list[int | None] = [None] * p  # hops made by the piece arriving at each node
        step = 0
        while any(own) or any(h is not None for h in coming):
            nxt: list[int | None] = [None] * p
            for x in range(p):
                y = x + direction
                if not wrap and not 0 <= y < p:
                    coming[x] = None
                    own[x] = 0
                    continue
                y %= p
                h = coming[x]
                if h is not None and (limit is None or h < limit):
                    nxt[y] = h + 1
                elif own[x]:
                    own[x] -= 1
                    nxt[y] = 1
            coming = nxt
            step += 1
            if any(h is not None for h in nxt):
                last = max(last, step)
    return last


def line_counts(r: int, p: int) -> list[int]:
    """Counts along a subphase line holding R packets: ``n_x = #{k < R: k mod p = x}``."""
    return [r // p + (1 if x < r % p else 0) for x in range(p)]


def subphase_patterns(m: int, p: int, d: int, l: int) -> list[list[int]]:
    """The distinct count vectors on the lines of broadcast subphase l (1..d) for M packets."""
    if not 1 <= l <= d:
        raise ValueError(f"subphase must be in 1..{d}, got {l}")
    b = p ** (d - l)
    rs = {max(0, -(-(m - s) // b)) for s in (0, b - 1)}
    return [line_counts(r, p) for r in sorted(rs)]


def class_sizes(m: int, d: int, split: bool) -> list[int]:
    """Packets per class: all M in each of the d classes with splitting (§4.1); the
    ranks ``r = c mod d`` without (§4.2): ``ceil`` or ``floor(M/d)``."""
    if split:
        return [m] * d
    return [len(range(c, m, d)) for c in range(d)]


def broadcast_windows(m: int, p: int, d: int, wrap: bool, split: bool) -> list[int]:
    """Steps of broadcast subphases l = 1..d (pieces of 1/(gamma d) with splitting, whole
    packets without), the most any line of any class needs under the greedy rule."""
    sizes = set(class_sizes(m, d, split))
    out = []
    for l in range(1, d + 1):
        out.append(max(greedy_line_time(c, wrap, split) for mc in sizes for c in subphase_patterns(mc, p, d, l)))
    return out

