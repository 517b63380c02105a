"""Per-shape caches a STAR node consults once per packet: forwarding plans and next hops.

The rule functions of :mod:`._rule` depend on a packet's source (or destination) only
through its offset from the node, ``(coords - source) mod sides`` (a torus is
vertex-transitive), so one :class:`PlanBook` per (sides, port table, classes) serves
every node of a run: a plan is computed by :func:`._rule.star_forward` the first time an
offset, ending dimension and split are seen, and shared afterwards. Nothing here is
network state; a node still decides from its own coordinates and the packet's header.
"""

from __future__ import annotations

from functools import lru_cache

from ._rule import star_forward, unicast_class, unicast_next_hop

__all__ = ["PlanBook", "TYPE_BCAST_ENDING", "TYPE_BCAST_OTHER", "TYPE_UNICAST", "plan_book"]

#: Traffic types of one transmission (for per-class waiting times): a broadcast copy off
#: its ending dimension, a unicast packet, a broadcast copy on its ending dimension.
TYPE_BCAST_OTHER, TYPE_UNICAST, TYPE_BCAST_ENDING = 0, 1, 2

#: (dim, direction) -> port, as ``ports[dim][0 if direction > 0 else 1]``
PortTable = tuple[tuple[int, int], ...]
#: ((port, class), ...) -- what :meth:`ClassQueues.add` takes
Plan = tuple[tuple[int, int], ...]


class PlanBook:
    """Forwarding plans and unicast next hops of one torus shape, filled lazily.

    Args:
        sides: torus sides (``(2,) * d`` on a hypercube).
        ports: for each dimension the out-port of direction +1 and of direction -1 (the
            same port twice on a hypercube, whose rings of 2 have a single link).
        classes: priority classes (1: FCFS, 2: §3.2, 3: end of §4).
    """

    __slots__ = ("sides", "ports", "classes", "ucls", "zero", "_bcast", "_uni")

    def __init__(self, sides: tuple[int, ...], ports: PortTable, classes: int) -> None:
        self.sides = sides
        self.ports = ports
        self.classes = classes
        self.ucls = unicast_class(classes)
        self._bcast: dict[tuple[tuple[int, ...], int, int], tuple[int, Plan]] = {}
        self._uni: dict[tuple[tuple[int, ...], int], int] = {}
        self.zero = (0,) * len(sides)

    def broadcast(self, rel: tuple[int, ...], ending: int, split: int) -> tuple[int, Plan]:
        """``(hops, plan)`` of a copy at offset ``rel`` from its source (§3.1, §3.2).

        ``hops`` is the number of transmissions the copy took to get here (its distance
        from the source: STAR paths are shortest paths); ``plan`` the ``(port, class)``
        transmissions this node makes for it.

        Example:
            >>> book = PlanBook((5, 5), ((0, 1), (2, 3)), 2)
            >>> book.broadcast((0, 0), 1, 0)
            (0, ((0, 0), (1, 0), (2, 1), (3, 1)))
            >>> book.broadcast((1, 0), 1, 0)
            (1, ((0, 0), (2, 1), (3, 1)))
        """
        key = (rel, ending, split)
        hit = self._bcast.get(key)
        if hit is None:
            sides, ports = self.sides, self.ports
            steps = star_forward(sides, self.zero, ending, split, rel, self.classes)
            plan = tuple((ports[k][0 if s > 0 else 1], c) for k, s, c in steps)
            hops = sum(min(r, n - r) for r, n in zip(rel, sides))
            hit = self._bcast[key] = (hops, plan)
        return hit

    def unicast_port(self, rel: tuple[int, ...], tie: int) -> int:
        """Out-port of a unicast whose destination is at offset ``rel`` (§4); -1 if ``rel`` is 0.

        Example:
            >>> PlanBook((8, 8), ((0, 1), (2, 3)), 2).unicast_port((7, 4), 0)
            1
        """
        key = (rel, tie)
        port = self._uni.get(key)
        if port is None:
            hop = unicast_next_hop(self.sides, self.zero, rel, tie)
            port = -1 if hop is None else self.ports[hop[0]][0 if hop[1] > 0 else 1]
            self._uni[key] = port
        return port


@lru_cache(maxsize=32)
def plan_book(sides: tuple[int, ...], ports: PortTable, classes: int) -> PlanBook:
    """The shared :class:`PlanBook` of one shape (one per process and run shape)."""
    return PlanBook(sides, ports, classes)
