"""Johnsson & Ho's d edge-disjoint spanning binomial trees and the local parts of Rules A-F (§5).

§5.1: tree ``T^(j)`` (paper, 1-based) is the completely unbalanced tree rooted at ``e_j``
whose paths cross the dimensions in the order ``(j mod d)+1, ((j+1) mod d)+1, ...,
((j+d-1) mod d)+1``, i.e. ``j+1, ..., d, 1, ..., j``.  In code (0-based) tree ``j`` is
rooted at ``1 << j`` and crosses ``j+1, ..., d-1, 0, ..., j``; it is the §4.2.2 tree
``(j+1) mod d`` translated to the root ``1 << j``.  Node 0 is the child of ``1 << j``
across dimension ``j`` and a leaf; the ``d`` arcs ``(0, e_i)`` belong to no tree and every
other directed arc to exactly one (the tests check this for d = 2..8).

The rule helpers below are pure functions of a node id, tree index, slot number and
static ``d``; the precise per-node procedure is in the ``trees`` module docstring
("Rules A-F in local terms").
"""

from __future__ import annotations

from enum import IntEnum
from functools import lru_cache
from typing import Literal

from ._unbalanced import _check, _rotr, dtree_children, dtree_order, dtree_parent_dim

__all__ = [
    "esbt_root",
    "esbt_order",
    "esbt_children",
    "esbt_parent_dim",
    "esbt_subtree",
    "esbt_arc_tree",
    "upward_tree",
    "up_port",
    "down_ports",
    "port_plan",
    "SlotClass",
    "slot_class",
    "next_c0_slot",
    "next_broadcast_slot",
    "broadcast_hop_slots",
    "root_buffer",
    "virtual_arcs",
    "rule_f_start_slots",
    "reoriented_ports",
]


def _tree(j: int, d: int) -> int:
    if not 0 <= j < d:
        raise ValueError(f"tree index {j} out of range for d={d}")
    return (j + 1) % d  # index of the §4.2.2 tree with the same dimension order


# ---------------------------------------------------------------- §5.1 trees


def esbt_root(j: int, d: int) -> int:
    """Root ``e_{j+1} = 1 << j`` of tree ``j`` (§5.1)."""
    _tree(j, d)
    return 1 << j


def esbt_order(j: int, d: int) -> tuple[int, ...]:
    """Dimension order of tree ``j``: ``j+1, ..., d-1, 0, ..., j`` (§5.1, 0-based)."""
    return dtree_order(_tree(j, d), d)


def esbt_children(rel: int, j: int, d: int) -> tuple[int, ...]:
    """Child dimensions in tree ``j`` of the node with ``rel = node ^ (1 << j)`` (§5.1)."""
    return dtree_children(rel, _tree(j, d), d)


def esbt_parent_dim(rel: int, j: int, d: int) -> int | None:
    """Dimension of the arc into ``rel = node ^ (1 << j)`` in tree ``j``; ``None`` at root."""
    return dtree_parent_dim(rel, _tree(j, d), d)


def esbt_subtree(rel: int, j: int, d: int) -> int:
    """Index ``i`` (1-based, as the paper's ``T_i^(j)``) of the root subtree holding ``rel``.

    ``T_i^(j)`` hangs from the root's neighbour across the ``i``-th dimension of the
    order (§2.2.2) and has ``2**(d-i)`` nodes; ``T_1^(j)`` hangs from ``e_j ^ e_{j+1}``
    (proof of Proposition 7).  Returns 0 for the root itself.
    """
    _check(rel, d)
    r = _rotr(rel, _tree(j, d), d)
    return (r & -r).bit_length()


@lru_cache(maxsize=1 << 14)
def _out_trees(z: int, d: int) -> tuple[int | None, ...]:
    out: list[int | None] = []
    for i in range(d):
        owner = None
        for j in range(d):
            if i in esbt_children(z ^ (1 << j), j, d):
                owner = j
                break
        out.append(owner)
    return tuple(out)


def esbt_arc_tree(z: int, i: int, d: int) -> int | None:
    """Tree containing the directed arc ``(z, z ^ (1 << i))``; ``None`` iff ``z == 0``.

    This is the tree whose broadcasts node ``z`` sends on port ``i`` in slots of
    ``C1 ∪ C2`` (Rule C).
    """
    _check(z, d)
    return _out_trees(z, d)[i]


def upward_tree(z: int, i: int, d: int) -> int | None:
    """Tree whose root-bound packets node ``z`` sends on port ``i`` in ``C0`` slots (Rules B, C).

    It is the tree containing the reverse arc ``(z ^ e_i, z)``, i.e. the tree ``m`` in
    which ``z ^ e_i`` is the parent of ``z``.  ``None`` iff ``z == 1 << i`` (the reverse
    arc ``(0, e_i)`` is in no tree, so port ``i`` of ``e_i`` idles in ``C0``).
    """
    _check(z, d)
    return _out_trees(z ^ (1 << i), d)[i]


def up_port(z: int, j: int, d: int) -> int | None:
    """Port on which ``z`` forwards root-bound packets of tree ``j`` (Rule B); ``None`` at root."""
    return esbt_parent_dim(z ^ (1 << j), j, d)


def down_ports(z: int, j: int, d: int) -> tuple[int, ...]:
    """Ports on which ``z`` forwards broadcasts of tree ``j`` (Rules C, F); all ``d`` at the root."""
    return esbt_children(z ^ (1 << j), j, d)


def port_plan(z: int, d: int) -> tuple[tuple[int | None, int | None], ...]:
    """Static per-node table: for each port ``i``, ``(esbt_arc_tree, upward_tree)`` (Rule C)."""
    return tuple((esbt_arc_tree(z, i, d), upward_tree(z, i, d)) for i in range(d))


# ------------------------------------------------------------- Rule C classes


class SlotClass(IntEnum):
    """Slot classes of Rule C: ``C_c = {t >= 0 : t mod 3 = c}``."""

    C0 = 0  # root-bound traffic (reversed tree arcs), virtual arcs, l1 / l2
    C1 = 1  # broadcasts
    C2 = 2  # broadcasts


def slot_class(t: int) -> SlotClass:
    """Class ``C0``, ``C1`` or ``C2`` of slot ``t >= 0`` (Rule C)."""
    if t < 0:
        raise ValueError(f"slot must be >= 0, got {t}")
    return SlotClass(t % 3)


def next_c0_slot(t: int) -> int:
    """Smallest slot ``>= t`` in ``C0``."""
    return t + (-t) % 3


def next_broadcast_slot(t: int) -> int:
    """Smallest slot ``>= t`` in ``C1 ∪ C2``."""
    return t + 1 if t % 3 == 0 else t


def broadcast_hop_slots(start: int, d: int) -> tuple[int, ...]:
    """Slots in which the depth-``h`` nodes (``h = 0 .. d-1``) send a broadcast (Rules C, F).

    A broadcast started by the root in slot ``start`` (in ``C1 ∪ C2``) is forwarded by every
    node in the first ``C1 ∪ C2`` slot after it received it, with no queueing (§5.4).  The
    broadcast completes at the end of the last returned slot; e.g. it takes
    ``⌈d/2⌉ + d - 1`` slots from a ``C1`` start and ``⌊d/2⌋ + d`` from a ``C2`` start
    (proof of Proposition 5).
    """
    if start % 3 == 0:
        raise ValueError(f"broadcasts start in C1 or C2, slot {start} is in C0")
    hops = [start]
    for _ in range(d - 1):
        hops.append(next_broadcast_slot(hops[-1] + 1))
    return tuple(hops)


# ------------------------------------------------------------- Rules D, E, F


def root_buffer(origin: int, j: int, d: int) -> int:
    """Buffer of root ``1 << j`` that a tree-``j`` packet from ``origin`` enters (Rule E).

    Returns:
        1 if ``origin`` lies in ``T_1^(j)`` (its relative address has the first dimension
        of the order, ``(j+1) mod d``, set; ``2**(d-1)`` origins), else 2 (the other
        subtrees and the root itself; also ``2**(d-1)`` origins).
    """
    return 1 if esbt_subtree(origin ^ (1 << j), j, d) == 1 else 2


def virtual_arcs(origin: int, j: int, d: int, rule: Literal["D", "D'"] = "D") -> int:
    """Number of virtual arcs a tree-``j`` packet crosses at its origin (Rules D, D′).

    Rule D (§5.2): ``d - k`` where ``k`` is the Hamming distance from ``origin`` to the
    root, so that every root-bound path has exactly ``d`` arcs.  Rule D′ (§5.5.2): one
    virtual arc unless ``k == d``, then none.  The arcs ``l1`` / ``l2`` of Rule E at the
    root are not included (they are kept under both rules).
    """
    k = (origin ^ esbt_root(j, d)).bit_count()
    if rule == "D":
        return d - k
    if rule == "D'":
        return 0 if k == d else 1
    raise ValueError(f"rule must be 'D' or \"D'\", got {rule!r}")


def rule_f_start_slots(t: int, has_b1: bool, has_b2: bool, coin: int) -> tuple[int | None, int | None]:
    """Broadcast start slots of the packets in ``B1`` and ``B2`` at the end of ``C0`` slot ``t`` (Rule F).

    Args:
        t: A slot of ``C0``.
        has_b1: Whether ``B1`` holds a packet at the end of slot ``t``.
        has_b2: Whether ``B2`` holds a packet.
        coin: Outcome ``0`` or ``1`` of the root's fair coin for this ``C0`` slot.

    Returns:
        ``(start of B1's packet, start of B2's packet)``, ``None`` for an empty buffer.
        Both full: ``B1`` at ``t + 1 + coin`` and ``B2`` at ``t + 2 - coin``; one full: it
        starts at ``t + 1 + coin``.
    """
    if t % 3:
        raise ValueError(f"slot {t} is not in C0")
    if coin not in (0, 1):
        raise ValueError(f"coin must be 0 or 1, got {coin}")
    if has_b1 and has_b2:
        return t + 1 + coin, t + 2 - coin
    return (t + 1 + coin if has_b1 else None), (t + 1 + coin if has_b2 else None)


# ------------------------------------------------------ §5.6 non-idling version


def reoriented_ports(z: int, origin: int, j: int, d: int) -> tuple[int, ...]:
    """Ports on which ``z`` forwards a packet broadcast along ``T^(j)`` re-rooted at its origin.

    Non-idling version without redundant transmissions (§§5.5.1, 5.6): the packet from
    ``origin`` uses the arcs of ``T^(j)`` and the reverses of the ``k`` arcs on the path
    from the root to ``origin`` (``2**d - 1`` transmissions in all).  A node on that path
    (``origin`` included) sends up to its parent (unless it is the root) and down to all
    its children except the one leading back towards ``origin``; any other node sends to
    all its children.

    Returns:
        The up port first (if any), then the down ports in tree order.
    """
    _check(z, d)
    _check(origin, d)
    s = _tree(j, d)
    ra = _rotr(z ^ (1 << j), s, d)
    rb = _rotr(origin ^ (1 << j), s, d)
    kids = esbt_children(z ^ (1 << j), j, d)
    if rb & ((1 << ra.bit_length()) - 1) != ra:  # z is not an ancestor-or-self of origin
        return kids
    parent = up_port(z, j, d)
    up = () if parent is None else (parent,)
    rest = rb >> ra.bit_length() << ra.bit_length()
    if rest == 0:  # z is the origin
        return up + kids
    back = (s + (rest & -rest).bit_length() - 1) % d
    return up + tuple(k for k in kids if k != back)
