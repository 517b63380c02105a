"""General graphs: any connected, undirected network, its links numbered per node.

A :class:`Graph` is built from its links, listed as node pairs ``(u, v)``. Nodes are
``0 .. n-1``; each link is undirected (one port at either end); a pair listed again, in
either order, is the same link (parallel links are not supported). Ports are numbered per
node in the order its links are listed: the first link that names ``u`` is port 0 of
``u``. A graph must be connected; one that is not is refused with the nodes node 0 does
not reach.

The adjacency is kept as flat arrays (a few bytes per link). Distances are hop counts by
breadth-first search, computed on first use, one source row at a time; at most
:data:`DISTANCE_BUDGET` entries are kept, least recently used first out, so asking for
distances on a large graph never builds an ``n x n`` matrix.

A graph has no dimensions: port ``p`` is labelled ``(p, 0)`` (its own "dimension", no
direction, as on a hypercube), ``coords(v)`` is ``(v,)`` and ``sides`` is ``(n,)``.

Example:
    >>> g = Graph([(0, 1), (1, 2), (2, 0), (2, 3)])
    >>> g.n_nodes, g.spec, [p.neighbour for p in g.ports(2)], g.distance(0, 3)
    (4, 'edges:0-1,1-2,2-0,2-3', [1, 0, 3], 2)
"""

from __future__ import annotations

import operator
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from functools import cached_property
from typing import Any

from ._errors import TopologyError
from ._topology import Port, Topology

__all__ = ["DISTANCE_BUDGET", "MAX_DEGREE", "MAX_GRAPH_NODES", "AnyNet", "Graph", "short_spec"]

#: The most ports a node may have: the outlets keep the ports used in a slot as a 64-bit mask.
MAX_DEGREE = 64
#: The most nodes a graph may have (as for the other topologies).
MAX_GRAPH_NODES = 1 << 24
#: Distance entries the BFS cache keeps over all its rows (4 bytes each: 16 MiB).
DISTANCE_BUDGET = 1 << 22
#: Unreachable nodes an error message names before it says how many more there are.
_NAMED = 8


def short_spec(spec: str, width: int = 60) -> str:
    """``spec`` cut to ``width`` characters for an error message (an inline edge list can be long)."""
    return spec if len(spec) <= width else spec[: width - 3] + "..."


def _int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _ids(link: Any) -> tuple[int, int]:
    """A link's two node ids, where they are not plain ints: any integer type but bool (numpy's too).

    Raises:
        TopologyError: not two integers >= 0.
    """
    try:
        u, v = link
        if isinstance(u, bool) or isinstance(v, bool):
            raise TypeError
        ids = (operator.index(u), operator.index(v))
    except (TypeError, ValueError):
        ids = (-1, -1)
    if min(ids) < 0:
        try:
            shown: Any = tuple(link)
        except TypeError:
            shown = link
        raise TopologyError(f"a link must be two node ids (integers >= 0), got {shown!r}")
    return ids


class Graph(Topology):
    """A connected undirected graph given by its links, ports in the order the links are listed.

    Args:
        links: the links as node pairs ``(u, v)``, in order (ports follow it).
        n: the number of nodes; None: one more than the largest node named. Nodes that no
            link names make the graph disconnected (refused).
        spec: the spec string it parses from; None: the inline ``edges:u-v,...`` form.

    Raises:
        TopologyError: a node id that is not an integer ``>= 0``, a link from a node to
            itself, a node with more than :data:`MAX_DEGREE` links, too many nodes, fewer
            than two, or a disconnected graph (naming nodes node 0 does not reach).
    """

    kind = "graph"
    wrap = False

    def __init__(self, links: Iterable[Sequence[int]], *, n: int | None = None, spec: str | None = None) -> None:
        pairs: list[tuple[int, int]] = []
        seen: set[int] = set()  # (min << 32) | max of each link kept
        top = -1
        for link in links:
            try:
                u, v = link
            except (TypeError, ValueError):
                u = v = -1
            if type(u) is not int or type(v) is not int or u < 0 or v < 0:  # bool is no node id: the slow path refuses it
                u, v = _ids(link)
            if u == v:
                raise TopologyError(f"link {u}-{v} goes from node {u} to itself (self-loops are not supported)")
            key = (u << 32) | v if u < v else (v << 32) | u
            if key in seen:
                continue
            seen.add(key)
            pairs.append((u, v))
            if u > top or v > top:
                top = u if u > v else v
        del seen
        if n is None:
            n = top + 1
        elif not _int(n) or n <= top:
            raise TopologyError(f"n={n!r} leaves out node {top}, which a link names (n must be > every node id)")
        self._spec = spec if spec is not None else "edges:" + ",".join(f"{u}-{v}" for u, v in pairs)
        name = short_spec(self._spec)
        if n < 2:
            raise TopologyError(f"{name}: a network needs at least two nodes and one link, got {n} node(s)")
        if n > MAX_GRAPH_NODES:
            raise TopologyError(f"{name}: {n} nodes is too large (at most 2**24)")
        self.n_nodes = n
        self.sides = (n,)
        adj: list[list[int]] = [[] for _ in range(n)]
        back: list[list[int]] = [[] for _ in range(n)]  # back[v][p]: the port of v's neighbour toward v
        for u, v in pairs:
            back[u].append(len(adj[v]))
            back[v].append(len(adj[u]))
            adj[u].append(v)
            adj[v].append(u)
        degrees = [len(row) for row in adj]
        widest = degrees.index(max(degrees))
        if degrees[widest] > MAX_DEGREE:
            raise TopologyError(f"{name}: node {widest} has {degrees[widest]} links, more than the "
                                f"{MAX_DEGREE} ports a node can have")
        start = array("q", [0]) * (n + 1)
        for v in range(n):
            start[v + 1] = start[v] + len(adj[v])
        nbr = array("i", [w for row in adj for w in row])
        rev = array("B", [p for row in back for p in row])
        del adj, back
        self._start, self._nbr, self._rev = start, nbr, rev
        self._ends = array("i", [x for pair in pairs for x in pair])  # u0, v0, u1, v1, ...: 8 bytes a link
        del pairs
        #: the node of the graph object each id stands for (:func:`~._graph_python.topology_from`); None: the ids
        self.labels: tuple[Hashable, ...] | None = None
        self._rows: OrderedDict[int, array[int]] = OrderedDict()
        self._keep = max(1, DISTANCE_BUDGET // n)
        unreached = [v for v, dist in enumerate(self._bfs(0)) if dist < 0]
        if unreached:
            named = ", ".join(map(str, unreached[:_NAMED])) + (
                f" and {len(unreached) - _NAMED} more" if len(unreached) > _NAMED else "")
            raise TopologyError(f"{name} is not connected: node 0 does not reach {len(unreached)} node(s): {named}")

    # -- the Topology interface -----------------------------------------------------------
    @property
    def spec(self) -> str:
        return self._spec

    @cached_property
    def n_ports(self) -> int:
        """The largest degree: port indices run over ``range(n_ports)``, a node of lower degree lacks the rest."""
        return max(self.degree(v) for v in range(self.n_nodes))

    @property
    def n_links(self) -> int:
        return len(self._ends)

    def degree(self, node: int) -> int:
        return self._start[node + 1] - self._start[node]

    def neighbour(self, node: int, port: int) -> int | None:
        if not 0 <= node < self.n_nodes or port < 0:
            return None
        i = self._start[node] + port
        return self._nbr[i] if i < self._start[node + 1] else None

    def reverse_port(self, node: int, port: int) -> int:
        return self._rev[self._start[node] + port]

    def ports(self, node: int) -> tuple[Port, ...]:
        s = self._start[node]
        return tuple(Port(p, p, 0, self._nbr[s + p]) for p in range(self._start[node + 1] - s))

    def neighbours(self, node: int) -> tuple[int, ...]:
        """The nodes ``node`` links to, in port order."""
        return tuple(self._nbr[self._start[node]:self._start[node + 1]])

    def links(self) -> list[tuple[int, int, int]]:
        nbr, start = self._nbr, self._start
        return [(v, i - start[v], nbr[i]) for v in range(self.n_nodes) for i in range(start[v], start[v + 1])]

    def edges(self) -> list[tuple[int, int]]:
        """Every undirected link once, as listed (a pair listed twice appears once)."""
        ends = self._ends
        return list(zip(ends[0::2], ends[1::2]))

    def port_label(self, port: int) -> tuple[int, int]:
        return (port, 0)

    def port_index(self, dim: int, direction: int = 0) -> int:
        if direction != 0 or not 0 <= dim < self.n_ports:
            raise TopologyError(f"{short_spec(self.spec)} names ports by index 0..{self.n_ports - 1} "
                                f"(direction 0), not dimension {dim}, direction {direction}")
        return dim

    def coords(self, node: int) -> tuple[int, ...]:
        return (node,)

    def node_at(self, coords: tuple[int, ...]) -> int:
        return coords[0]

    # -- distances ------------------------------------------------------------------------
    def distance(self, a: int, b: int) -> int:
        """Hops on a shortest path from ``a`` to ``b`` (BFS from ``a``, or ``b`` if its row is kept)."""
        if a == b:
            return 0
        rows = self._rows
        if a not in rows and b in rows:
            a, b = b, a
        return self.distances(a)[b]

    def distances(self, source: int) -> array[int]:
        """Hops from ``source`` to every node, by BFS on first use (the row is shared: do not change it).

        Rows are kept while their entries fit :data:`DISTANCE_BUDGET` (at least one row),
        least recently used first out.
        """
        rows = self._rows
        row = rows.get(source)
        if row is not None:
            rows.move_to_end(source)
            return row
        if not 0 <= source < self.n_nodes:
            raise TopologyError(f"{short_spec(self.spec)} has no node {source}")
        row = self._bfs(source)
        rows[source] = row
        while len(rows) > self._keep:
            rows.popitem(last=False)
        return row

    def _bfs(self, source: int) -> array[int]:
        # lists, not the arrays: indexing an array makes an int object per read (about twice as slow)
        dist = [-1] * self.n_nodes
        dist[source] = 0
        nbr, start = self._nbr.tolist(), self._start.tolist()
        frontier = [source]
        hop = 0
        while frontier:
            hop += 1
            nxt = []
            for v in frontier:
                for w in nbr[start[v]:start[v + 1]]:
                    if dist[w] < 0:
                        dist[w] = hop
                        nxt.append(w)
            frontier = nxt
        return array("i", dist)


class AnyNet(Graph):
    """A BookSim2 ``anynet`` network: its routers are the nodes, router-router channels the links.

    Terminals (BookSim's ``node`` entries) are not nodes of the fabric: they are listed per
    router, in file order, for schemes that inject at them (:meth:`terminals`).

    Args:
        links: router-router links in file order.
        terminals: for each router, its terminals in file order.
        spec: the spec string (``anynet:FILE``).
        latency: terminal -> its injection/ejection latency in cycles, where not 1 (kept
            as read; the fabric does not model terminals).
    """

    kind = "anynet"

    def __init__(self, links: Iterable[Sequence[int]], terminals: Sequence[Sequence[int]], *, spec: str,
                 latency: dict[int, int] | None = None) -> None:
        super().__init__(links, n=len(terminals), spec=spec)
        self._terminals = tuple(tuple(ts) for ts in terminals)
        self._router_of = {t: r for r, ts in enumerate(self._terminals) for t in ts}
        self._latency = dict(latency or {})

    @property
    def n_terminals(self) -> int:
        """Terminals over all routers (numbered ``0 .. n_terminals-1``)."""
        return len(self._router_of)

    def terminals(self, router: int) -> tuple[int, ...]:
        """The terminals attached to ``router``, in file order."""
        return self._terminals[router]

    def terminal_router(self, terminal: int) -> int:
        """The router ``terminal`` is attached to.

        Raises:
            TopologyError: no such terminal.
        """
        try:
            return self._router_of[terminal]
        except KeyError:
            raise TopologyError(f"{short_spec(self.spec)} has no terminal {terminal!r}") from None

    def terminal_latency(self, terminal: int) -> int:
        """The terminal's injection/ejection latency in cycles as the file gave it (1 unless said)."""
        self.terminal_router(terminal)
        return self._latency.get(terminal, 1)
