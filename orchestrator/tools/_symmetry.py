"""The symmetries of a topology, and the classes of fault schedules they map onto each other.

A symmetry is an automorphism of the network: a permutation of the nodes that maps every
link onto a link, with the matching map of ports. ``slotnet check`` uses the group of these
that the topology's kind gives:

* hypercube ``d``: the translations (``v -> v xor t``) and the permutations of the ``d``
  dimensions: ``2^d * d!`` elements;
* torus: the translations along every dimension and the reflection of each dimension
  (``c -> -c mod n``): ``prod(n_i) * 2^k``;
* mesh: the reflection of each dimension (``c -> n - 1 - c``): ``2^k``;
* ring ``N``: the rotations and reflections: ``2N``;
* any other topology (a general graph): the identity alone.

A fault schedule is a set of faults, each a kind, a slot and a target (a node, or a link
named from one end); a symmetry maps it to the schedule with every target mapped and every
slot kept. Two schedules one symmetry maps onto each other are in one *class*.

What the reduction assumes: the scheme's rule is *symmetric* (``Scheme.symmetric``): a node
decides only from what an automorphism carries along -- its ports as the topology relates
them, the messages it receives, the slot -- never from its own id, its coordinates or a
port's number beyond that, and ``prepare`` gives every node the same inputs. Then the runs
of two schedules of a class are images of each other and fail or pass together: one run
per class decides it. Where the rule also draws random numbers, each node's stream is fixed
by its id: the two runs are then images of each other in distribution, not draw for draw,
and the class's one run is one sample of each member's. A scheme with a distinguished node
(a broadcast from node 0, a token that starts at node 0) is not symmetric under
translations and must not declare itself so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Symmetry", "automorphisms", "classes", "is_automorphism"]


@dataclass(frozen=True)
class Symmetry:
    """One automorphism: ``nodes[v]`` is the image of node ``v``; ``port(v, p)`` the image of
    ``v``'s port ``p`` (a port of ``nodes[v]``)."""

    nodes: tuple[int, ...]
    ports: Callable[[int, int], int]

    def node(self, v: int) -> int:
        return self.nodes[v]

    def port(self, v: int, p: int) -> int:
        return self.ports(v, p)


def _by_neighbour(topology: Any, perm: Sequence[int]) -> Callable[[int, int], int]:
    """The port map that follows the links: ``v``'s port to ``u`` goes to ``perm[v]``'s port to ``perm[u]``."""
    port_of: dict[tuple[int, int], int] = {}
    for v in range(topology.n_nodes):
        for p in topology.ports(v):
            port_of.setdefault((v, p.neighbour), p.index)

    def port(v: int, p: int) -> int:
        u = topology.neighbour(v, p)
        return port_of[(perm[v], perm[u])]
    return port


def _parallel_links(topology: Any) -> bool:
    """Whether two ports of one node lead to the same neighbour (a torus side of 2)."""
    for v in range(topology.n_nodes):
        seen = [p.neighbour for p in topology.ports(v)]
        if len(seen) != len(set(seen)):
            return True
    return False


def automorphisms(topology: Any) -> list[Symmetry]:
    """The symmetries of ``topology``'s kind (the module docstring), the identity first."""
    kind = getattr(topology, "kind", None)
    n = topology.n_nodes
    identity = Symmetry(tuple(range(n)), lambda v, p: p)
    out = [identity]
    if kind == "hypercube":
        d = topology.d
        for sigma in itertools.permutations(range(d)):
            for t in range(n):
                if t == 0 and sigma == tuple(range(d)):
                    continue
                perm = tuple(_permute_bits(v, sigma) ^ t for v in range(n))
                out.append(Symmetry(perm, _hyper_port(sigma)))
        return out
    if kind in ("torus", "mesh"):
        sides = tuple(topology.sides)
        k = len(sides)
        shifts: Iterable[tuple[int, ...]] = itertools.product(*(range(s) for s in sides)) if kind == "torus" else [(0,) * k]
        for shift in shifts:
            for flips in itertools.product((False, True), repeat=k):
                if not any(shift) and not any(flips):
                    continue
                perm = tuple(topology.node_at(_grid_map(topology.coords(v), sides, shift, flips, kind == "torus"))
                             for v in range(n))
                out.append(Symmetry(perm, _grid_port(topology, flips)))
        return _deduplicated(topology, out)
    if kind == "ring":
        if _parallel_links(topology):
            return out
        for turn in range(n):
            for flip in (False, True):
                if turn == 0 and not flip:
                    continue
                ring = tuple(((-v if flip else v) + turn) % n for v in range(n))
                out.append(Symmetry(ring, _by_neighbour(topology, ring)))
        return out
    return out


def _permute_bits(v: int, sigma: Sequence[int]) -> int:
    out = 0
    for i, j in enumerate(sigma):
        if v >> i & 1:
            out |= 1 << j
    return out


def _hyper_port(sigma: Sequence[int]) -> Callable[[int, int], int]:
    return lambda v, p: sigma[p]


def _grid_map(c: Sequence[int], sides: Sequence[int], shift: Sequence[int], flips: Sequence[bool],
              wrap: bool) -> tuple[int, ...]:
    out = []
    for x, n, t, f in zip(c, sides, shift, flips):
        if f:
            x = (-x) % n if wrap else n - 1 - x
        out.append((x + t) % n if wrap else x)
    return tuple(out)


def _grid_port(topology: Any, flips: Sequence[bool]) -> Callable[[int, int], int]:
    def port(v: int, p: int) -> int:
        dim, direction = topology.port_label(p)
        return int(topology.port_index(dim, -direction if flips[dim] else direction))
    return port


def _deduplicated(topology: Any, syms: list[Symmetry]) -> list[Symmetry]:
    """One symmetry per map of nodes and ports (a side of 1 or 2 makes some coincide)."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for s in syms:
        key = (s.nodes, tuple(s.port(v, p.index) for v in range(topology.n_nodes) for p in topology.ports(v)))
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def is_automorphism(topology: Any, s: Symmetry) -> bool:
    """Whether ``s`` maps every link onto a link, ports included: ``v``'s port ``p`` to ``u``
    goes to ``s(v)``'s port ``s.port(v, p)``, which leads to ``s(u)``."""
    if sorted(s.nodes) != list(range(topology.n_nodes)):
        return False
    for v in range(topology.n_nodes):
        for p in topology.ports(v):
            q = s.port(v, p.index)
            if topology.neighbour(s.node(v), q) != s.node(p.neighbour):
                return False
    return True


def classes(schedules: Iterable[Hashable], image: Callable[[Hashable, Symmetry], Hashable],
            group: Sequence[Symmetry]) -> list[tuple[Hashable, int]]:
    """The classes of ``schedules`` under ``group``: ``(representative, members)`` per class,
    the representative being the class's first schedule in ``schedules``' order.

    Each schedule's orbit is computed once, when its class is first met, so the work is
    about ``|group|`` per class. ``image(schedule, symmetry)`` maps a schedule (its result is
    compared by equality: use a frozenset). The members of a class are counted among
    ``schedules`` only.
    """
    cls_of: dict[Hashable, int] = {}
    reps: list[list[Any]] = []
    for sched in schedules:
        i = cls_of.get(sched)
        if i is not None:
            reps[i][1] += 1
            continue
        i = len(reps)
        reps.append([sched, 1])
        for s in group:
            cls_of.setdefault(image(sched, s), i)
    return [(r, m) for r, m in reps]
