"""Pure, network-free parts of the indirect scheme's node rule (Stamoulis & Tsitsiklis §5).

Everything here is a function of a node id, a tree index, a packet's origin and the static
``d``; the node rule in :mod:`.indirect` calls it from its per-slot loop, and the tests
check it without Trio.  The trees and the rule helpers themselves (``up_port``,
``down_ports``, ``port_plan``, ``virtual_arcs``, ``root_buffer``, ...) come from
:mod:`.trees`; this module only tabulates them per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .trees import down_ports, esbt_order, esbt_root, up_port, virtual_arcs

__all__ = ["RULES", "NodePlan", "node_plan", "on_root_path", "path_test"]

#: ``--param rule=`` value -> the rule name of :func:`.trees.virtual_arcs` and
#: :func:`.theory.indirect_metrics` (Rule D of §5.2, Rule D′ of §5.5.2).
RULES: dict[str, str] = {"D": "D", "Dprime": "D'"}

def on_root_path(z: int, origin: int, j: int, d: int) -> bool:
    """Whether node ``z`` lies on the root-bound path of a tree-``j`` packet from ``origin`` (Rule B).

    The path is the reverse of the ``T^(j)`` path from the root ``1 << j`` to ``origin``,
    so ``z`` is on it iff ``z`` is an ancestor-or-self of ``origin`` in ``T^(j)``: the
    relative address ``z ^ root`` must be the first ``popcount`` dimensions of
    ``origin ^ root`` in the tree's order (§5.1, §2.2.2).  Such a node has already
    received the packet on its way up, so the broadcast copy is no reception there.

    Example:
        >>> on_root_path(0b011, 0b111, 0, 3)   # T^(1): root 001, order 1, 2, 0
        True
        >>> on_root_path(0b101, 0b111, 0, 3)
        False
    """
    order = esbt_order(j, d)
    root = esbt_root(j, d)
    rel_z, rel_o = z ^ root, origin ^ root
    h = rel_z.bit_count()
    prefix = 0
    n = 0
    for k in order:
        if n == h:
            break
        if rel_o >> k & 1:
            prefix |= 1 << k
            n += 1
    return n == h and prefix == rel_z


@dataclass(frozen=True)
class NodePlan:
    """Static tables of one node ``z`` for all ``d`` trees (trees docstring, "Rules A-F").

    Attributes:
        up: ``up_port(z, j, d)`` per tree (``None`` at the tree's root).
        down: ``down_ports(z, j, d)`` per tree (all ``d`` ports at the root, ``()`` at a leaf).
        virtual: virtual arcs of ``z``'s own tree-``j`` packets (Rule D or D′).
        root_tree: ``j`` if ``z == 1 << j`` (``z`` is the root of ``T^(j)``), else ``None``.
        path_key: per tree ``(root, rotation, mask, rel)`` for the O(1) form of
            :func:`on_root_path`: ``z`` is on the path of ``origin`` iff
            ``rotr(origin ^ root, rotation) & mask == rel``.
    """

    up: tuple[int | None, ...]
    down: tuple[tuple[int, ...], ...]
    virtual: tuple[int, ...]
    root_tree: int | None
    path_key: tuple[tuple[int, int, int, int], ...]


def _rot(x: int, s: int, d: int) -> int:
    return ((x >> s) | (x << (d - s))) & ((1 << d) - 1)


@lru_cache(maxsize=1 << 14)
def node_plan(z: int, d: int, rule: str) -> NodePlan:
    """The :class:`NodePlan` of node ``z`` on the ``d``-cube under ``rule`` ("D" or "D'")."""
    up = tuple(up_port(z, j, d) for j in range(d))
    down = tuple(down_ports(z, j, d) for j in range(d))
    virtual = tuple(virtual_arcs(z, j, d, rule) for j in range(d))  # type: ignore[arg-type]
    root_tree = z.bit_length() - 1 if z and z & (z - 1) == 0 else None
    keys = []
    for j in range(d):
        root = esbt_root(j, d)
        s = esbt_order(j, d)[0]  # rotating by the first dimension puts the order on bits 0..d-1
        rel = _rot(z ^ root, s, d)
        keys.append((root, s, (1 << rel.bit_length()) - 1, rel))
    return NodePlan(up, down, virtual, root_tree, tuple(keys))


def path_test(key: tuple[int, int, int, int], origin: int, d: int) -> bool:
    """:func:`on_root_path` from a precomputed ``NodePlan.path_key[j]`` (a few bit operations)."""
    root, s, mask, rel = key
    x = origin ^ root
    return ((x >> s) | (x << (d - s))) & mask == rel
