"""Topologies: hypercubes, tori (k-ary d-cubes), meshes (d-dimensional arrays) and rings.

General graphs (edge lists, BookSim2's anynet files, graphs built in Python) are in
:mod:`._graph`; :func:`parse_topology` reads every kind's spec.

A topology is a static description of nodes, directed links and port labels. Node ids
are ints ``0 .. n_nodes-1``. Ports have fixed indices so that a node can compute the
port of a dimension and direction locally:

* ring ``N``: the one-dimensional torus of ``N >= 3`` nodes, port 0 to ``v + 1``, port 1 to ``v - 1``.
* hypercube ``d``: port ``k`` flips bit ``k`` (dimension ``k``, direction 0).
* torus / mesh with sides ``(n_0, ..., n_{D-1})``: port ``2k`` goes ``+1`` along
  dimension ``k`` and port ``2k+1`` goes ``-1``. On a mesh a boundary node simply lacks
  the port that would leave the array. A torus side of 2 keeps both ports (two parallel
  links to the same neighbour), so every torus node has degree ``2D``.

Coordinates of a torus/mesh node are mixed-radix digits with dimension 0 varying
fastest: ``node = sum(c_k * prod(n_0..n_{k-1}))``.

Example:
    >>> t = parse_topology("torus:4x4")
    >>> t.n_nodes, t.degree(0), t.neighbour(0, 1)
    (16, 4, 3)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

from ._errors import TopologyError

__all__ = ["KINDS", "Hypercube", "Mesh", "Port", "Ring", "Topology", "Torus", "parse_topology"]

#: Every topology kind a spec can name, with its syntax.
KINDS = {
    "hypercube": "hypercube:D",
    "torus": "torus:N1xN2[x...]",
    "mesh": "mesh:N1xN2[x...]",
    "ring": "ring:N",
    "graph": "graph:FILE",
    "anynet": "anynet:FILE",
    "edges": "edges:U-V,U-V,...",
}


@dataclass(frozen=True, slots=True)
class Port:
    """One out-port of a node: its index, its label and the node it leads to."""

    index: int
    dim: int
    direction: int  # +1 or -1 for tori/meshes, 0 for hypercube dimensions
    neighbour: int


class Topology:
    """Common interface of every topology (subclasses fill in the geometry)."""

    kind: str
    n_nodes: int
    #: the side along each dimension: ``(2,) * d`` on a d-cube, ``(n,)`` on a graph of n nodes
    sides: tuple[int, ...]
    #: whether each dimension's ends are linked (a torus, a hypercube), not a mesh or a graph
    wrap: bool

    @property
    def spec(self) -> str:
        """The spec string this topology parses from."""
        raise NotImplementedError

    @cached_property  # an attribute after the first read: a d-cube's neighbour reads it per call
    def d(self) -> int:
        """Number of dimensions (1 for a graph: its node ids)."""
        return len(self.sides)

    @property
    def n_ports(self) -> int:
        """Port indices run over ``range(n_ports)`` (some may be absent on a mesh)."""
        raise NotImplementedError

    @property
    def xor_ports(self) -> int:
        """``k`` where every node has ports ``0..k-1`` and port ``p`` of node ``x`` leads to
        ``x ^ (1 << p)``, arriving on port ``p`` (a d-cube: ``d``); else 0. The transport
        then computes a node's neighbours instead of keeping a table of them."""
        return 0

    def neighbour(self, node: int, port: int) -> int | None:
        """The node reached from ``node`` through ``port``, or None if no such port."""
        raise NotImplementedError

    def reverse_port(self, node: int, port: int) -> int:
        """The port at the neighbour through which it sends back to ``node``."""
        raise NotImplementedError

    def link_key(self, node: int, port: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """The link at ``(node, port)`` named by both its ends, the smaller first: either end names it.

        Raises:
            TopologyError: if ``node`` has no port ``port``.
        """
        nb = self.neighbour(node, port)
        if nb is None:
            raise TopologyError(f"node {node} has no port {port} on {self.spec}")
        a, b = (node, port), (nb, self.reverse_port(node, port))
        return (a, b) if a <= b else (b, a)

    def distance(self, a: int, b: int) -> int:
        """Shortest-path distance in hops."""
        raise NotImplementedError

    def port_label(self, port: int) -> tuple[int, int]:
        """``(dimension, direction)`` of a port index."""
        raise NotImplementedError

    def port_index(self, dim: int, direction: int) -> int:
        """Inverse of :meth:`port_label` (direction 0 or +1 on a hypercube)."""
        raise NotImplementedError

    def coords(self, node: int) -> tuple[int, ...]:
        """Coordinates of ``node`` (dimension 0 varying fastest)."""
        raise NotImplementedError

    def node_at(self, coords: tuple[int, ...]) -> int:
        """Inverse of :meth:`coords`."""
        raise NotImplementedError

    def ports(self, node: int) -> tuple[Port, ...]:
        """The node's out-ports, in increasing index order."""
        out = []
        for p in range(self.n_ports):
            nb = self.neighbour(node, p)
            if nb is not None:
                dim, direction = self.port_label(p)
                out.append(Port(p, dim, direction, nb))
        return tuple(out)

    def port_ids(self, node: int) -> tuple[int, ...]:
        """The indices of the node's out-ports, in increasing order (its ``ports`` without
        building them)."""
        return tuple(p for p in range(self.n_ports) if self.neighbour(node, p) is not None)

    def out_links(self, node: int) -> tuple[list[int], list[int]]:
        """For each port index in ``range(n_ports)``: the neighbour it leads to and the port
        at which it arrives there, -1 and -1 where the node lacks the port."""
        nbrs = [-1] * self.n_ports
        revs = [-1] * self.n_ports
        for p in range(self.n_ports):
            nb = self.neighbour(node, p)
            if nb is not None:
                nbrs[p] = nb
                revs[p] = self.reverse_port(node, p)
        return nbrs, revs

    def degree(self, node: int) -> int:
        """Number of out-ports of ``node``."""
        return len(self.ports(node))

    def links(self) -> list[tuple[int, int, int]]:
        """Every directed link as ``(node, port, neighbour)``."""
        return [(v, p.index, p.neighbour) for v in range(self.n_nodes) for p in self.ports(v)]

    @cached_property
    def n_links(self) -> int:
        """Number of directed links."""
        return sum(self.degree(v) for v in range(self.n_nodes))

    def describe(self) -> dict[str, object]:
        """A JSON-able description (kind, spec, sizes)."""
        return {"kind": self.kind, "spec": self.spec, "n_nodes": self.n_nodes, "n_links": self.n_links}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


class Hypercube(Topology):
    """The binary d-cube: ``2**d`` nodes, node ``x`` linked to ``x ^ (1 << k)``."""

    kind = "hypercube"

    def __init__(self, d: int) -> None:
        if not isinstance(d, int) or d < 1:
            raise TopologyError(f"hypercube dimension must be an integer >= 1, got {d!r}")
        if d > 24:
            raise TopologyError(f"hypercube dimension {d} is too large (at most 24)")
        self.n_nodes = 1 << d
        self.sides = (2,) * d
        self.wrap = True

    @property
    def spec(self) -> str:
        return f"hypercube:{self.d}"

    @property
    def n_ports(self) -> int:
        return self.d

    @property
    def xor_ports(self) -> int:
        return self.d

    def neighbour(self, node: int, port: int) -> int | None:
        if 0 <= port < self.d:
            return node ^ (1 << port)
        return None

    def reverse_port(self, node: int, port: int) -> int:
        return port

    def port_ids(self, node: int) -> tuple[int, ...]:
        return self._port_ids  # every node has every port: one tuple for all

    @cached_property
    def _port_ids(self) -> tuple[int, ...]:
        return tuple(range(self.d))

    def ports(self, node: int) -> tuple[Port, ...]:
        return tuple(Port(k, k, 0, node ^ (1 << k)) for k in range(self.d))

    def out_links(self, node: int) -> tuple[list[int], list[int]]:
        return [node ^ (1 << k) for k in range(self.d)], list(self._port_ids)

    def degree(self, node: int) -> int:
        return self.d

    def distance(self, a: int, b: int) -> int:
        return (a ^ b).bit_count()

    def port_label(self, port: int) -> tuple[int, int]:
        return (port, 0)

    def port_index(self, dim: int, direction: int = 0) -> int:
        if not 0 <= dim < self.d:
            raise TopologyError(f"{self.spec} has no dimension {dim}")
        return dim

    def coords(self, node: int) -> tuple[int, ...]:
        return tuple((node >> k) & 1 for k in range(self.d))

    def node_at(self, coords: tuple[int, ...]) -> int:
        return sum(c << k for k, c in enumerate(coords))

    @property
    def n_links(self) -> int:  # a closed form of the cached one
        return self.d << self.d


class _Grid(Topology):
    """Shared geometry of tori and meshes."""

    wrap: bool

    def __init__(self, sides: tuple[int, ...]) -> None:
        if not sides:
            raise TopologyError(f"{self.kind} needs at least one side")
        for s in sides:
            if s < 2:
                raise TopologyError(f"{self.kind} side must be >= 2, got {s}")
        n = math.prod(sides)
        if n > (1 << 24):
            raise TopologyError(f"{self.kind} with {n} nodes is too large (at most 2**24)")
        self.sides = sides
        self.n_nodes = n
        self._strides = tuple(math.prod(sides[:k]) for k in range(len(sides)))

    @property
    def n_links(self) -> int:  # a closed form of the cached one: per dimension, every node has both ports on a
        # torus; on a mesh the n_nodes / side nodes at either end lack one
        return sum(2 * (self.n_nodes if self.wrap else self.n_nodes - self.n_nodes // s) for s in self.sides)

    @property
    def spec(self) -> str:
        return f"{self.kind}:" + "x".join(map(str, self.sides))

    @property
    def n_ports(self) -> int:
        return 2 * len(self.sides)

    def coords(self, node: int) -> tuple[int, ...]:
        """Mixed-radix coordinates of ``node`` (dimension 0 fastest)."""
        return tuple((node // st) % s for st, s in zip(self._strides, self.sides))

    def node_at(self, coords: tuple[int, ...]) -> int:
        """Inverse of :meth:`coords`."""
        return sum(c * st for c, st in zip(coords, self._strides))

    def port_label(self, port: int) -> tuple[int, int]:
        return (port >> 1, -1 if port & 1 else 1)

    def port_index(self, dim: int, direction: int) -> int:
        if not 0 <= dim < len(self.sides) or direction not in (1, -1):
            raise TopologyError(f"{self.spec} has no port for dimension {dim}, direction {direction}")
        return 2 * dim + (direction < 0)

    def neighbour(self, node: int, port: int) -> int | None:
        if not 0 <= port < self.n_ports:
            return None
        k, step = port >> 1, (-1 if port & 1 else 1)
        side, st = self.sides[k], self._strides[k]
        c = (node // st) % side
        nc = c + step
        if not 0 <= nc < side:
            if not self.wrap:
                return None
            nc %= side
        return node + (nc - c) * st

    def reverse_port(self, node: int, port: int) -> int:
        return port ^ 1

    def distance(self, a: int, b: int) -> int:
        total = 0
        for st, s in zip(self._strides, self.sides):
            delta = abs((a // st) % s - (b // st) % s)
            total += min(delta, s - delta) if self.wrap else delta
        return total


class Torus(_Grid):
    """``n_0 x n_1 x ...`` array with wraparound; equal sides give the k-ary d-cube."""

    kind = "torus"
    wrap = True


class Mesh(_Grid):
    """``n_0 x n_1 x ...`` array without wraparound (a d-dimensional mesh)."""

    kind = "mesh"
    wrap = False


class Ring(Torus):
    """``N`` nodes in a cycle (``N >= 3``): the torus ``torus:N`` under its own kind, ``ring``.

    Port 0 leads to ``v + 1`` and port 1 to ``v - 1`` (mod ``N``). Its automorphisms are
    the ``2N`` rotations and reflections (the dihedral group): every node looks alike.
    """

    kind = "ring"

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 3:
            raise TopologyError(f"ring needs at least 3 nodes, got {n!r} (torus:2 is two nodes with two links)")
        super().__init__((n,))

    @property
    def spec(self) -> str:
        return f"ring:{self.n_nodes}"


_SIDES = re.compile(r"^\d+(x\d+)*$")


def parse_topology(spec: str | Topology) -> Topology:
    """Parse a topology spec (a :class:`Topology` is returned as it is).

    Kinds: ``hypercube:D``, ``torus:N1xN2[x...]``, ``mesh:N1xN2[x...]``, ``ring:N``,
    ``graph:FILE`` (an edge list), ``anynet:FILE`` (BookSim2's format) and
    ``edges:U-V,U-V,...`` (an edge list inline: the spec of a graph built in Python).

    Raises:
        TopologyError: with a message naming what is wrong with ``spec``.
    """
    if isinstance(spec, Topology):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise TopologyError(f"topology spec {spec!r} must look like {', '.join(KINDS.values())}")
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind == "hypercube":
        if not arg.isdigit():
            raise TopologyError(f"hypercube dimension must be a positive integer, got {arg!r} in {spec!r}")
        return Hypercube(int(arg))
    if kind in ("torus", "mesh"):
        if not _SIDES.match(arg):
            raise TopologyError(f"{kind} sides must be positive integers joined by 'x', got {arg!r} in {spec!r}")
        sides = tuple(int(s) for s in arg.split("x"))
        return Torus(sides) if kind == "torus" else Mesh(sides)
    if kind == "ring":
        if not arg.isdigit():
            raise TopologyError(f"ring size must be a positive integer, got {arg!r} in {spec!r}")
        return Ring(int(arg))
    if kind in ("graph", "anynet", "edges"):
        from ._graph_files import inline_graph, load_graph_file  # they build on this module

        if not arg:
            raise TopologyError(f"{kind}: needs {'a file' if kind != 'edges' else 'links'} after the colon, "
                                f"as in {KINDS[kind]}")
        canonical = f"{kind}:{arg}"
        return inline_graph(canonical, arg) if kind == "edges" else load_graph_file(kind, arg, canonical)
    raise TopologyError(f"unknown topology kind {kind!r} in {spec!r} (known: {', '.join(KINDS)})")
