"""Greedy packing (Theorem 3) and monotone routing (Theorem 4) on d-dimensional arrays.

Varvarigos & Bertsekas, §3. Theorem 3: active nodes ``s^(0) < ... < s^(K-1)`` (in the
linear order) send a packet each, ``s^(i)`` to node i. The greedy scheme has d phases;
in phase k the packet corrects its digit ``order[k]`` to the digit of i, crossing links of
that dimension only, one hop per step from the first step of the phase. Theorem 4:
``s^(i)`` sends to ``v^(i)`` (both increasing): pack to node i, then unpack, crossing the
dimensions in the opposite order.

Schedule (0-based steps of one time unit each). Phase k of packing occupies the steps
``sum_{j<k} (p_{order[j]} - 1)`` .. ``+ p_{order[k]} - 2``: exactly ``p - 1`` steps on a
p^d mesh, ``d (p - 1)`` in all. The theorem's text says dimension j is used in steps
``jp, ..., jp + p - 1`` -- p steps per phase, against its own proof ("each of which has
duration exactly p - 1 steps"); we take the proof. Likewise Theorem 4 says "links of
dimension 2d - j during steps jp..jp+p-1, d <= j <= 2d-1"; dimension 2d - j does not
exist for j = d, so we read ``2d - 1 - j``: the unpacking phases cross dimensions
``order[d-1], ..., order[0]``, each in ``p - 1`` steps, ``2 d (p - 1)`` in all.

What the theorems guarantee, and what the reference checks (:func:`simulate_packing`,
:func:`simulate_monotone`):

* no directed link is asked to carry two packets in one step ("without conflicts");
* at every phase boundary, no two packets are at one node (the proof's induction);
* every packet reaches its destination by step ``d (p - 1)`` (packing) or ``2 d (p - 1)``
  (monotone): the phases have fixed length, so the schedule lasts *exactly* that long,
  and the last arrival is *at most* that; equality is attained (e.g. a single active
  node N - 1 packs to node 0 over ``d (p - 1)`` hops).

The proof also says "no two packets are at any time at the same node". That holds at
phase boundaries but not inside a phase: in one line, the packets whose target digits
wrapped around (ranks ..., p-1 | 0, ...) move towards each other, so they cross, and a
moving packet may also pass one that has already reached its digit. E.g. on a 5 x 5
array with nodes 0, 1, 2, 3, 5, 9 active, the packets of nodes 5 = (0, 1) and 9 = (4, 1)
-- ranks 4 and 5, bound for (4, 0) and (0, 1) -- both sit at (2, 1) after two steps. No
schedule of p - 1 steps avoids it (two packets crossing a whole line must move at every
step). It is harmless: such packets leave on opposite ports or one of them stays, so no
link is asked twice. The reference counts these meetings and the largest number of
packets ever at one node (2: within a line, the right-movers keep their order, and so
do the left-movers).

Only array links are used, so the same holds on tori.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ._prefix import check_order, check_sides, coords_at, linear_index

__all__ = [
    "RoutingTrace",
    "monotone_port",
    "monotone_steps",
    "packing_phase",
    "packing_port",
    "packing_steps",
    "rank_destination",
    "ranks",
    "simulate_monotone",
    "simulate_packing",
]

Coords = tuple[int, ...]


def packing_steps(sides: Sequence[int]) -> int:
    """Length of the packing schedule, Theorem 3: ``sum (p_k - 1)`` = ``d (p - 1)``."""
    return sum(p - 1 for p in check_sides(sides))


def monotone_steps(sides: Sequence[int]) -> int:
    """Length of the monotone-routing schedule, Theorem 4: ``2 d (p - 1)``."""
    return 2 * packing_steps(sides)


def packing_phase(step: int, sides: Sequence[int], order: Sequence[int] | None = None) -> tuple[int, int] | None:
    """``(phase k, dimension order[k])`` of a packing step, or None past the schedule.

    Raises:
        ValueError: on a negative step.
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    for k, dim in enumerate(ordr):
        if step < sides_t[dim] - 1:
            return k, dim
        step -= sides_t[dim] - 1
    return None


def rank_destination(rank: int, sides: Sequence[int], order: Sequence[int] | None = None) -> Coords:
    """The node a packet of rank r is packed to: linear index r in ``order`` (§4.1 Phase 2)."""
    return coords_at(rank, sides, order)


def ranks(active: Iterable[int], sides: Sequence[int], order: Sequence[int] | None = None) -> dict[int, int]:
    """Rank of every active node id (dimension 0 fastest) in the linear order of ``order``.

    This is what the prefix of §4.1 Phase 1 computes distributedly (``inclusive - 1``).
    """
    sides_t = check_sides(sides)
    act = _check_active(active, math.prod(sides_t))
    keyed = sorted(act, key=lambda v: linear_index(coords_at(v, sides_t), sides_t, order))
    return {v: r for r, v in enumerate(keyed)}


def _step(here: Coords, dim: int, goal: int) -> tuple[int, int] | None:
    if here[dim] < goal:
        return dim, +1
    if here[dim] > goal:
        return dim, -1
    return None


def packing_port(
    coords: Sequence[int], target: Sequence[int], step: int, sides: Sequence[int], order: Sequence[int] | None = None
) -> tuple[int, int] | None:
    """Where a packet at ``coords`` bound for ``target`` goes at ``step`` (Theorem 3).

    Returns:
        ``(dim, direction)`` of the link to cross, or None to stay this step (its current
        digit is already right, or the schedule is over).
    """
    sides_t = check_sides(sides)
    ph = packing_phase(step, sides_t, order)
    if ph is None:
        return None
    return _step(tuple(coords), ph[1], target[ph[1]])


def monotone_port(
    coords: Sequence[int],
    via: Sequence[int],
    target: Sequence[int],
    step: int,
    sides: Sequence[int],
    order: Sequence[int] | None = None,
) -> tuple[int, int] | None:
    """Where a packet goes at ``step`` of monotone routing (Theorem 4).

    Args:
        coords: where the packet is.
        via: the node of its rank i (the packing target).
        target: its final destination ``v^(i)``.
        step: the global step (0-based).
        sides: the mesh's sides.
        order: the dimension order (least significant first).

    Returns:
        ``(dim, direction)`` or None (stay).
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    first = packing_steps(sides_t)
    if step < first:
        return packing_port(coords, via, step, sides_t, ordr)
    ph = packing_phase(step - first, sides_t, tuple(reversed(ordr)))
    if ph is None:
        return None
    return _step(tuple(coords), ph[1], target[ph[1]])


@dataclass(frozen=True)
class RoutingTrace:
    """What the step-by-step reference saw.

    Attributes:
        steps: length of the schedule (exactly d(p-1) or 2d(p-1) on a p^d mesh).
        completion: steps until the last packet arrived (last move + 1; 0 if none moved).
        delivered: every packet ended at its destination.
        link_conflicts: (step, directed link) pairs asked to carry two or more packets.
        boundary_collisions: (phase boundary, node) pairs holding two or more packets,
            counting time 0 and the end.
        meetings: (time, node) pairs inside a phase holding two or more packets.
        max_at_node: the most packets ever at one node at a step boundary.
        first_meeting: the first meeting inside a phase, ``(time, node, packets)`` with
            each packet as ``(source, destination)`` coordinates; None if there is none.
    """

    steps: int
    completion: int
    delivered: bool
    link_conflicts: int
    boundary_collisions: int
    meetings: int
    max_at_node: int
    first_meeting: tuple[int, Coords, tuple[tuple[Coords, Coords], ...]] | None = None


def _check_active(active: Iterable[int], n: int) -> list[int]:
    out = list(active)
    if len(set(out)) != len(out):
        raise ValueError("active node ids must be distinct")
    for v in out:
        if not 0 <= v < n:
            raise ValueError(f"active node id {v} is outside 0..{n - 1}")
    return out


def _simulate(
    sides: tuple[int, ...],
    packets: list[tuple[Coords, Coords, Coords]],
    n_steps: int,
    boundaries: set[int],
    port: Callable[[Coords, Coords, Coords, int], tuple[int, int] | None],
) -> RoutingTrace:
    pos = [p[0] for p in packets]
    conflicts = collisions = meetings = completion = 0
    max_at = 1 if packets else 0
    first: tuple[int, Coords, tuple[tuple[Coords, Coords], ...]] | None = None

    def census(t: int) -> None:
        nonlocal collisions, meetings, max_at, first
        count: dict[Coords, int] = {}
        for x in pos:
            count[x] = count.get(x, 0) + 1
        crowded = sum(1 for c in count.values() if c > 1)
        max_at = max([max_at, *count.values()])
        if t in boundaries:
            collisions += crowded
        else:
            meetings += crowded
            if crowded and first is None:
                here = min(x for x, c in count.items() if c > 1)
                first = (t, here, tuple((p[0], p[2]) for x, p in zip(pos, packets) if x == here))

    census(0)
    for step in range(n_steps):
        used: dict[tuple[Coords, int, int], int] = {}
        moves = []
        for j, (x, (_src, via, dst)) in enumerate(zip(pos, packets)):
            hop = port(x, via, dst, step)
            if hop is None:
                continue
            dim, direction = hop
            key = (x, dim, direction)
            used[key] = used.get(key, 0) + 1
            nxt = list(x)
            nxt[dim] += direction
            if not 0 <= nxt[dim] < sides[dim]:
                raise AssertionError(f"packet {j} routed off the array at step {step}")
            moves.append((j, tuple(nxt)))
        conflicts += sum(1 for c in used.values() if c > 1)
        for j, here in moves:
            pos[j] = here
        if moves:
            completion = step + 1
        census(step + 1)
    delivered = all(x == p[2] for x, p in zip(pos, packets))
    return RoutingTrace(n_steps, completion, delivered, conflicts, collisions, meetings, max_at, first)


def simulate_packing(active: Iterable[int], sides: Sequence[int], order: Sequence[int] | None = None) -> RoutingTrace:
    """Run Theorem 3's greedy packing step by step (no network) and report what happened.

    Args:
        active: distinct active node ids (dimension 0 fastest), any order.
        sides: the array's sides.
        order: the dimension order (least significant first); a rotation gives class c.
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    rk = ranks(active, sides_t, ordr)
    packets = []
    for v, r in rk.items():
        dest = rank_destination(r, sides_t, ordr)
        packets.append((coords_at(v, sides_t), dest, dest))
    n = packing_steps(sides_t)
    bounds = {0, n}
    t = 0
    for k in ordr:
        t += sides_t[k] - 1
        bounds.add(t)
    return _simulate(sides_t, packets, n, bounds, lambda x, via, dst, s: packing_port(x, dst, s, sides_t, ordr))


def simulate_monotone(
    sources: Sequence[int], targets: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None
) -> RoutingTrace:
    """Run Theorem 4's pack-then-unpack routing step by step and report what happened.

    Args:
        sources: distinct node ids ``s^(0), ..., s^(K-1)``, increasing in ``order``.
        targets: distinct node ids ``v^(0), ..., v^(K-1)``, increasing in ``order``.
        sides: the array's sides.
        order: the dimension order (least significant first).

    Raises:
        ValueError: if the lists differ in length or are not increasing in ``order``.
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    n_nodes = math.prod(sides_t)
    src, dst = _check_active(sources, n_nodes), _check_active(targets, n_nodes)
    if len(src) != len(dst):
        raise ValueError(f"{len(src)} sources but {len(dst)} targets")
    for name, seq in (("sources", src), ("targets", dst)):
        keys = [linear_index(coords_at(v, sides_t), sides_t, ordr) for v in seq]
        if keys != sorted(keys):
            raise ValueError(f"{name} must be increasing in the order {ordr}")
    packets = [
        (coords_at(s, sides_t), rank_destination(i, sides_t, ordr), coords_at(v, sides_t)) for i, (s, v) in enumerate(zip(src, dst))
    ]
    half = packing_steps(sides_t)
    bounds = {0, half, 2 * half}
    t = 0
    for k in list(ordr) + list(reversed(ordr)):
        t += sides_t[k] - 1
        bounds.add(t)
    return _simulate(sides_t, packets, 2 * half, bounds, lambda x, via, d, s: monotone_port(x, via, d, s, sides_t, ordr))
