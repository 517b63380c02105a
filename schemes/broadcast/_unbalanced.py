"""Completely unbalanced spanning trees, the d-tree periodic schedule, and labels.

Implements, for Stamoulis & Tsitsiklis, "Efficient routing schemes for multiple
broadcasts in hypercubes":

* §2.2.2 -- the completely unbalanced spanning tree ("spanning binomial tree") for an
  arbitrary order of crossing the dimensions;
* §4.2.2 / §4.3.2 -- the d trees of the d simultaneous multinode broadcasts (tree ``j``
  crosses the dimensions in the order ``j, j+1, ..., d-1, 0, ..., j-1``) together with a
  conflict-free periodic schedule of period ``Δ = 2**d - 1``;
* §4.3.1 -- the label recursion ``l_n`` and the label priority used by the non-idling
  versions of the periodic schemes (§§4.3.1, 4.3.2).

Conventions (shared by the whole ``trees`` package): node ids are ints ``0 .. 2**d - 1``;
code dimension ``k`` (0-based) is the paper's dimension ``k + 1`` and flips bit ``k``;
code tree index ``j`` (0-based) is the paper's ``j + 1``.  Every lookup takes a *relative
address* ``rel = node ^ origin`` (``rel == 0`` is the root), so a node evaluates it from
its own id and the packet's origin only.  Slots are numbered ``0, 1, 2, ...``; slot ``s``
is the time interval ``[s, s + 1)``; a packet sent in slot ``s`` is received at the end
of ``s`` and may be forwarded from slot ``s + 1`` on.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..kit import first_label, next_label

__all__ = [
    "unbalanced_children",
    "unbalanced_parent_dim",
    "dtree_order",
    "dtree_children",
    "dtree_parent_dim",
    "dtree_period",
    "dtree_crossing_slot",
    "dtree_sends",
    "periodic_schedule",
    "first_label",
    "next_label",
    "label_sequence",
    "period_start_slot",
    "dtree_priority",
]


# --------------------------------------------------------------------------- bits


def _check(rel: int, d: int) -> None:
    if d < 1:
        raise ValueError(f"dimension d must be >= 1, got {d}")
    if rel < 0 or rel >> d:
        raise ValueError(f"relative address {rel} out of range for d={d}")


def _rotr(x: int, s: int, d: int) -> int:
    """Rotate the ``d``-bit word ``x`` right by ``s`` (bit ``s`` moves to bit 0)."""
    s %= d
    return ((x >> s) | (x << (d - s))) & ((1 << d) - 1)


def _rotl(x: int, s: int, d: int) -> int:
    """Rotate the ``d``-bit word ``x`` left by ``s`` (bit 0 moves to bit ``s``)."""
    return _rotr(x, -s % d, d)


# ------------------------------------------------------ §2.2.2, arbitrary order


@lru_cache(maxsize=1024)
def _positions(order: tuple[int, ...], d: int) -> tuple[int, ...]:
    if sorted(order) != list(range(d)):
        raise ValueError(f"order {order!r} is not a permutation of range({d})")
    pos = [0] * d
    for p, k in enumerate(order):
        pos[k] = p
    return tuple(pos)


def _last_position(rel: int, pos: tuple[int, ...]) -> int:
    last = -1
    while rel:
        low = rel & -rel
        p = pos[low.bit_length() - 1]
        last = max(last, p)
        rel ^= low
    return last


def unbalanced_children(rel: int, d: int, order: tuple[int, ...]) -> tuple[int, ...]:
    """Dimensions on which a node forwards in a completely unbalanced tree (§2.2.2).

    The tree reaches every node ``y`` through the unique shortest path that crosses the
    dimensions in which ``y`` differs from the root in the given ``order``.  Hence a node
    forwards on exactly the dimensions that come *after* the last dimension crossed on
    its own path (all ``d`` dimensions for the root).

    Args:
        rel: Relative address ``node ^ root``.
        d: Cube dimension.
        order: Permutation of ``range(d)``: the order in which paths cross dimensions
            (``tuple(range(d))`` is the paper's increasing-order tree of Fig. 1).

    Returns:
        The child dimensions in ``order`` order (empty for a leaf).
    """
    _check(rel, d)
    pos = _positions(tuple(order), d)
    return tuple(order[_last_position(rel, pos) + 1 :])


def unbalanced_parent_dim(rel: int, d: int, order: tuple[int, ...]) -> int | None:
    """Dimension of the arc into ``rel`` in a completely unbalanced tree (§2.2.2).

    Args:
        rel: Relative address ``node ^ root``.
        d: Cube dimension.
        order: Permutation of ``range(d)`` (see :func:`unbalanced_children`).

    Returns:
        The last dimension (in ``order``) in which ``rel`` has a 1, i.e. the parent is
        ``rel ^ (1 << dim)``; ``None`` for the root.
    """
    _check(rel, d)
    pos = _positions(tuple(order), d)
    last = _last_position(rel, pos)
    return None if last < 0 else order[last]


# ------------------------------------------------------------- §4.2.2 d-trees


def dtree_order(j: int, d: int) -> tuple[int, ...]:
    """Dimension order of the ``j``-th tree of §4.2.2: ``j, j+1, ..., d-1, 0, ..., j-1``.

    (Paper: the ``(j+1)``-packet crosses ``j+1, ..., d, 1, ..., j`` in 1-based terms.)
    """
    if not 0 <= j < d:
        raise ValueError(f"tree index {j} out of range for d={d}")
    return tuple((j + i) % d for i in range(d))


@lru_cache(maxsize=1 << 16)
def dtree_children(rel: int, j: int, d: int) -> tuple[int, ...]:
    """Child dimensions of ``rel`` in the ``j``-th completely unbalanced tree (§4.2.2).

    Equal to ``unbalanced_children(rel, d, dtree_order(j, d))`` but computed with one
    rotation: with ``r = rotr(rel, j)`` the order becomes increasing, and the children are
    the rotated positions above the most significant 1 of ``r``.

    Args:
        rel: Relative address ``node ^ origin``.
        j: Tree index ``0 .. d-1`` (paper's ``j + 1``).
        d: Cube dimension.

    Returns:
        Child dimensions, in the tree's crossing order.
    """
    _check(rel, d)
    if not 0 <= j < d:
        raise ValueError(f"tree index {j} out of range for d={d}")
    start = _rotr(rel, j, d).bit_length()  # first rotated position after the msb
    return tuple((j + h) % d for h in range(start, d))


def dtree_parent_dim(rel: int, j: int, d: int) -> int | None:
    """Dimension of the arc into ``rel`` in the ``j``-th tree (§4.2.2); ``None`` at root."""
    _check(rel, d)
    if not 0 <= j < d:
        raise ValueError(f"tree index {j} out of range for d={d}")
    r = _rotr(rel, j, d)
    return None if r == 0 else (j + r.bit_length() - 1) % d


def dtree_period(d: int) -> int:
    """Period ``Δ = 2**d - 1`` of the d simultaneous multinode broadcasts (§4.2.2)."""
    return (1 << d) - 1


def dtree_crossing_slot(rel: int, j: int, dim: int, d: int) -> int | None:
    """Slot of the period in which the ``j``-packet at ``rel`` crosses dimension ``dim``.

    Schedule (our construction of the [SaS85] algorithm quoted in §4.2.2): in tree ``j``
    the arc into the node whose *rotated* relative address is ``r = rotr(rel, j)``
    (``1 <= r < 2**d``) is crossed in slot ``r - 1`` of the period.  It is causal (a
    parent's rotated address is ``r`` minus its top bit, hence smaller) and conflict-free:
    for a fixed dimension ``k`` tree ``j`` owns the arcs whose top rotated bit is
    ``h = (k - j) mod d``, i.e. ``r`` in ``[2**h, 2**(h+1))``; over the ``d`` trees these
    ranges tile ``1 .. 2**d - 1`` exactly once.  Since translations preserve dimensions
    (§2.2.1), every directed arc carries exactly one packet in every slot: the period
    ``Δ = 2**d - 1`` is met exactly and cannot be shortened.

    Args:
        rel: Relative address ``node ^ origin`` of the sender.
        j: Tree index.
        dim: Dimension of the arc.
        d: Cube dimension.

    Returns:
        Slot in ``0 .. 2**d - 2``, or ``None`` if ``dim`` is not a child dimension of
        ``rel`` in tree ``j``.
    """
    if dim not in dtree_children(rel, j, d):
        return None
    return _rotr(rel | (1 << dim), j, d) - 1


def dtree_sends(x: int, s: int, d: int) -> tuple[tuple[int, int], ...]:
    """What node ``x`` transmits in slot ``s`` of the §4.2.2 period.

    Every node sends on every dimension in every slot of the period (100% utilisation).
    With ``r = (s mod Δ) + 1`` and ``h`` the top bit of ``r``, the packet on dimension
    ``k`` belongs to tree ``j = (k - h) mod d`` and its origin is
    ``x ^ rotl(r ^ (1 << h), j)`` (the sender's relative address is the rotated parent of
    ``r``).

    Args:
        x: Node id.
        s: Slot number (taken modulo :func:`dtree_period`).
        d: Cube dimension.

    Returns:
        A tuple indexed by dimension ``k`` of ``(origin, tree)`` pairs.
    """
    _check(x, d)
    return _dtree_sends(x, s % dtree_period(d), d)


@lru_cache(maxsize=1 << 16)
def _dtree_sends(x: int, s: int, d: int) -> tuple[tuple[int, int], ...]:
    r = s + 1
    h = r.bit_length() - 1
    parent = r ^ (1 << h)
    out = []
    for k in range(d):
        j = (k - h) % d
        out.append((x ^ _rotl(parent, j, d), j))
    return tuple(out)


def periodic_schedule(d: int) -> np.ndarray:
    """Whole §4.2.2 period as an array (for inspection and tests).

    Args:
        d: Cube dimension.

    Returns:
        ``int64`` array of shape ``(2**d - 1, 2**d, d, 2)``; entry ``[s, x, k]`` is the
        ``(origin, tree)`` of the packet node ``x`` sends on dimension ``k`` in slot ``s``
        (see :func:`dtree_sends`).
    """
    n, period = 1 << d, dtree_period(d)
    out = np.empty((period, n, d, 2), dtype=np.int64)
    for s in range(period):
        r = s + 1
        h = r.bit_length() - 1
        parent = r ^ (1 << h)
        for k in range(d):
            j = (k - h) % d
            out[s, :, k, 0] = np.arange(n) ^ _rotl(parent, j, d)
            out[s, :, k, 1] = j
    return out


# ------------------------------------------------------------------ §4.3.1 labels


def label_sequence(taus: list[int] | tuple[int, ...], period: int) -> list[int]:
    """Labels ``l_1, l_2, ...`` of one stream with nondecreasing times ``taus`` (§4.3.1)."""
    labels: list[int] = []
    for tau in taus:
        labels.append(first_label(tau, period) if not labels else next_label(labels[-1], tau, period))
    return labels


def period_start_slot(label: int, period: int) -> int:
    """First slot ``(label - 1) * period`` of the period named by ``label``."""
    return (label - 1) * period


def dtree_priority(label: int, rel: int, j: int, dim: int, d: int) -> tuple[int, int]:
    """Contention key for the non-idling d-tree scheme (§4.3.2 with §4.3.1's priority).

    Smaller key wins the arc: smallest label first, then the packet that would have
    crossed this arc first in the periodic schedule (:func:`dtree_crossing_slot`).  Keys
    of distinct packets wanting the same arc are distinct (one packet per label per
    ``(origin, tree)`` stream; one ``(origin, tree)`` per arc and slot of the period), so
    the order is total and the non-idling scheme delivers every packet no later than the
    periodic one (§4.3.1).

    Args:
        label: The packet's label (stream: its origin and tree, period ``2**d - 1``).
        rel: Sender's relative address ``node ^ origin``.
        j: The packet's tree.
        dim: Dimension of the contested arc.
        d: Cube dimension.

    Returns:
        ``(label, slot_in_period)``.

    Raises:
        ValueError: If ``dim`` is not a child dimension of ``rel`` in tree ``j``.
    """
    slot = dtree_crossing_slot(rel, j, dim, d)
    if slot is None:
        raise ValueError(f"dimension {dim} is not a child of {rel} in tree {j}")
    return (label, slot)
