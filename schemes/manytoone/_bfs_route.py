"""§5's bfs_route: distance classes, line balancing (Theorem 5.1) and phase windows, pure.

Mansour & Patt-Shamir, §5. bfs_route at a level-l cube H: (1) route the input packets
to the level-(l+1) subcubes of their destinations; (2) in parallel in every level-(l+1)
subcube: (2.1) balance the load over its nodes, (2.2) call bfs_route with all its
packets. Theorem 1.3 runs ``log D`` independent versions, one per distance class, each
using the links one step in ``log D``. The paper sketches the pieces; what the node rule
(:mod:`.bfs`) does, exactly:

* Classes and multiplexing. A packet at distance d >= 1 from its destination is in
  class ``k = floor(log2 d)`` (the ``P_I(2^k)`` of Theorem 1.3). There are
  ``K = floor(log2 Dmax) + 1`` versions, Dmax the mesh's diameter ``sum (n_i - 1)``
  (known to every node; the instance's D_I is not). Version k owns the slots
  ``t = k mod K`` (:mod:`._engine`); a packet born at its destination is delivered at 0.
* Hierarchy. The partition of §4 (:class:`._rec_route.Hierarchy`) on power-of-two
  sides; any other side is split into ⌈s/2⌉ and ⌊s/2⌋ through the virtual mesh of
  :mod:`._embed`, where these rules run unchanged (the sides below are then the virtual ones).
* The preliminary simplification of §2, per version. §2 reduces an instance to cubes of
  side D_I "such that all packets destined at a cube are stored in that cube", by a
  local transformation costing a constant factor; Lemma 5.5's proof uses it per class
  ("routing ... into the subgrids with side length smaller than d is completed in O(d)
  time units"). Version k starts its recursion at level :func:`start_level` ``l_k``,
  the deepest level whose cubes have side at least ``min(n_i, 2^(k+1))`` in every
  dimension, so that a packet of the class is at most one level-l_k cube away from its
  destination's along each dimension (:func:`block_offsets`). The transformation
  (``pre-step``): dimension by dimension (stage q), every node sends the packets whose
  destination's cube is the next one up (down) along that dimension to the node at the
  same offset in that cube, B = the cube side away, one up and one down per round of B
  steps, ``3^q`` rounds (a node holds at most ``3^q`` packets of the version at stage
  q). Then bfs_route runs in every level-l_k cube at once. Time O(2^k) = O(d).
* A phase of H (level l) in one version starts at a step every node of H knows and
  has three parts, each of a duration every node of H computes the same:

  1. ``reduce``: an all-reduce of L, the largest number of this version's packets at a
     node of H (partner exchanges along the local-index bits, lowest first, ``diam(H)``
     steps; a node with nothing sends nothing). L = 0 ends the version in H.
  2. Step 1 (approximate routing), as rec_route's: per split dimension (stage q) every
     node sends the packets whose destination lies in the other half to its mirror node
     ``d = side/2`` away, one per round of d steps, ``L 2^q`` rounds (a node holds at
     most ``L 2^q`` packets at stage q).
  3. Step 2.1 in every child H' at once: a max-reduce gives M (its largest load,
     ``diam(H')`` steps; M = 0 ends the version in H'); then Theorem 5.1's balancing,
     one dimension of H' after the other. On each line along that dimension a prefix
     exchange (``m - 1`` steps, m the line length) gives each node the load P before it
     and the line total T; the line's packets are numbered P, P+1, ... (node by node,
     in key order at a node) and rank r goes to position ``t(r)`` of the balanced
     layout (position j holds ``floor(T/m)`` or one more, the extra ones first:
     :func:`target_of`). Packets then move one hop per step, each node sending per
     direction the packet with the farthest target; the window is
     :func:`flow_window` ``= M floor(m/2) + m - 1`` steps (no edge carries more than
     ``M floor(m/2)`` packets; tested against :func:`line_flow` on every load vector of
     small lines and random larger ones). After every dimension the loads on each line
     differ by at most one, so after the last one H' is within ``k`` of balanced
     (Theorem 5.1's "k-load balancing"; :func:`balance_rounds` measures it).

  The child's phase starts when its balancing ends, so children run at their own pace
  (§5: "each packet undergoes phases 0..log D one immediately after the other").

* A packet is delivered on its first arrival at its destination (§2), even in the
  middle of a move; it then leaves the version.

Where this departs from the letter of §5: Theorem 5.1 is stated with the initial
imbalance beta; the window uses M >= beta (a max-reduce is cheaper than a max-and-min
reduce, and it is the same O(A(H) D_l) of Lemma 5.4 since M <= 2^k L). The load may
exceed the initial maximum by one while a packet passes a node (Theorem 5.1 says
"never above"), which :func:`line_flow` reports.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "balance_rounds",
    "block_offsets",
    "prestep_time",
    "start_level",
    "class_count",
    "time_bound",
    "distance_class_of",
    "flow_window",
    "line_flow",
    "line_prefix",
    "slot_of",
    "target_of",
]


def class_count(sides: Sequence[int]) -> int:
    """K, the number of versions: ``floor(log2 Dmax) + 1`` for the mesh diameter Dmax (at least 1).

    Example:
        >>> class_count((64, 64)), class_count((16, 16, 16)), class_count((2,))
        (7, 6, 1)
    """
    dmax = sum(s - 1 for s in sides)
    return max(1, dmax.bit_length())


def start_level(exponents: Sequence[int], k: int) -> int:
    """``l_k``: the deepest level whose cubes have side ``>= min(n_i, 2^(k+1))`` in every dimension.

    ``exponents`` are ``log2 n_i``; a level-l cube has side ``max(1, n_i >> l)``.

    Example:
        >>> [start_level((6, 6), k) for k in range(7)], start_level((6, 4), 0)
        ([5, 4, 3, 2, 1, 0, 0], 3)
    """
    sized = [e for e in exponents if e > 0]
    if not sized:
        return 0
    return max(0, min(e - min(e, k + 1) for e in sized))


def time_bound(sides: Sequence[int], class_packets: Sequence[int], versions: int) -> int:
    """A slot by which every version has ended: the windows the nodes compute, with every
    load the reduces can give (L, M) replaced by the version's packet count, which bounds
    them (every window grows with L and M).

    Args:
        sides: The (virtual) mesh sides, powers of two.
        class_packets: Packets per version (distance class).
        versions: The engine's versions K (slot ``K tau + c``).

    Example:
        >>> time_bound((4, 4), [0, 2], 2) > 0
        True
    """
    exps = [max(0, s - 1).bit_length() for s in sides]
    levels = max(exps, default=0)

    def diam(level: int) -> int:
        return sum(max(1, s >> level) - 1 for s in sides)

    worst = 0
    for k, n in enumerate(class_packets):  # a version with no packets still runs its windows
        first = start_level(exps, k)
        t = prestep_time(sides, first) if first > 0 else 0
        for level in range(first, levels):
            half = [max(1, s >> level) // 2 for s in sides]
            split = [i for i, s in enumerate(sides) if (s >> level) > 1]
            t += diam(level) + sum((n << q) * half[dim] for q, dim in enumerate(split)) + diam(level + 1)
            t += sum(m - 1 + flow_window(n, m) for m in (max(1, s >> (level + 1)) for s in sides) if m > 1)
        worst = max(worst, t)
    return versions * (worst + 1)


def block_offsets(sides: Sequence[int], level: int, a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """Per dimension, how many level-``level`` cubes ``b``'s cube lies above ``a``'s (negative: below)."""
    return tuple(y // max(1, s >> level) - x // max(1, s >> level) for s, x, y in zip(sides, a, b))


def prestep_time(sides: Sequence[int], level: int) -> int:
    """Steps of version k's pre-step into the level-``level`` cubes: ``sum_q 3^q B_q``."""
    total, q = 0, 0
    for s in sides:
        b = max(1, s >> level)
        if b < s:
            total += 3**q * b
            q += 1
    return total


def distance_class_of(distance: int) -> int:
    """The version of a packet at ``distance >= 1``: ``floor(log2 distance)``."""
    if distance < 1:
        raise ValueError(f"a packet at distance {distance} is in no class")
    return distance.bit_length() - 1


def slot_of(version: int, tau: int, k: int) -> int:
    """The global slot of version step ``tau`` of ``version`` among ``k`` versions."""
    return k * tau + version


def target_of(rank: int, total: int, m: int) -> int:
    """Position (0 .. m-1) of ``rank`` in the balanced layout of ``total`` packets on m nodes.

    Position j holds ``floor(T/m) + (1 if j < T mod m else 0)`` packets, consecutive ranks.

    Example:
        >>> [target_of(r, 7, 3) for r in range(7)]
        [0, 0, 0, 1, 1, 2, 2]
    """
    q, e = divmod(total, m)
    edge = e * (q + 1)
    if rank < edge:
        return rank // (q + 1)
    return e + (rank - edge) // q


def line_prefix(loads: Sequence[int]) -> list[tuple[int, int]]:
    """Per position, ``(P, T)``: the load before it on the line and the line total.

    The node rule gets them by partner exchanges along the position's bits (lowest
    first): at bit b the partner 2^b away sends its block's sum, added to P when the
    partner is below. This is the sequential result it must equal.
    """
    total = sum(loads)
    out, run = [], 0
    for x in loads:
        out.append((run, total))
        run += x
    return out


def flow_window(max_load: int, m: int) -> int:
    """Steps given to one line balancing: ``M floor(m/2) + m - 1`` (see the module docstring)."""
    return max_load * (m // 2) + m - 1 if m > 1 else 0


def line_flow(loads: Sequence[int]) -> tuple[int, int, list[int]]:
    """Run the line balancing's movement rule on one line, step by step.

    Ranks are given node by node (node 0 first); each step every node sends, per
    direction, the packet with the farthest target (ties: the larger rank to the right,
    the smaller to the left); a packet stays once at its target.

    Returns:
        ``(steps, peak, final)``: the steps until every packet is at its target, the
        largest load any node had at an integer time, and the final loads.
    """
    m = len(loads)
    total = sum(loads)
    held: list[list[int]] = []
    rank = 0
    for x in loads:
        held.append([target_of(rank + i, total, m) if m else 0 for i in range(x)])
        rank += x
    peak = max(loads, default=0)
    steps = 0
    while any(t != j for j, ts in enumerate(held) for t in ts):
        moves: list[tuple[int, int]] = []
        for j, ts in enumerate(held):
            right = [t for t in ts if t > j]
            left = [t for t in ts if t < j]
            if right:
                t = max(right)
                ts.remove(t)
                moves.append((j + 1, t))
            if left:
                t = min(left)
                ts.remove(t)
                moves.append((j - 1, t))
        for j, t in moves:
            held[j].append(t)
        steps += 1
        peak = max(peak, max(len(ts) for ts in held))
    return steps, peak, [len(ts) for ts in held]


def balance_rounds(loads: dict[tuple[int, ...], int], sides: Sequence[int]) -> tuple[dict[tuple[int, ...], int], list[int]]:
    """Balance a box's loads one dimension after the other (counts only, as the node rule does).

    Returns:
        The final loads and, after each dimension, the imbalance (max - min) of the box.
    """
    cur = dict(loads)
    imbalance = []
    for dim, m in enumerate(sides):
        if m > 1:
            lines: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
            for c in cur:
                lines.setdefault(c[:dim] + c[dim + 1:], []).append(c)
            for members in lines.values():
                members.sort(key=lambda c: c[dim])
                total = sum(cur[c] for c in members)
                q, e = divmod(total, m)
                for j, c in enumerate(members):
                    cur[c] = q + (1 if j < e else 0)
        vals = list(cur.values())
        imbalance.append(max(vals) - min(vals) if vals else 0)
    return cur, imbalance

