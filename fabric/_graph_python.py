"""Graph topologies built in Python: from an edge list, or from any graph object.

Either gives a :class:`~._graph.Graph` whose spec is the inline ``edges:u-v,...`` form, so
that a :class:`~slotnet.RunSpec` (which holds the spec string) and every shard rebuild
the same network; the graph is also kept, so this process does not parse it again.

Example:
    >>> g = graph_topology([(0, 1), (1, 2), (2, 3), (3, 0)])
    >>> g.spec, g.degree(0)
    ('edges:0-1,1-2,2-3,3-0', 2)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from ._errors import TopologyError
from ._graph import Graph
from ._graph_files import remember

__all__ = ["graph_topology", "topology_from"]


def graph_topology(edges: Iterable[Sequence[int]], n: int | None = None) -> Graph:
    """A topology from its links as node pairs ``(u, v)``, nodes ``0 .. n-1``, ports in the order given.

    Args:
        edges: the undirected links (a pair given twice, either way round, is one link).
        n: the number of nodes; None: one more than the largest id named.

    Raises:
        TopologyError: bad ids, a self-loop, a node of too high degree, or a disconnected graph.
    """
    return remember(Graph(edges, n=n))


def topology_from(graph: Any) -> Graph:
    """A topology from any object with ``nodes()`` and ``edges()``, such as a networkx graph.

    Its nodes, in the order ``nodes()`` lists them, become ``0 .. n-1`` (``labels`` on the
    result maps an id back to the object's node); ports follow the order of ``edges()``.
    An edge may carry more than its two ends (networkx's ``edges(data=True)`` form); the
    rest is ignored.

    Raises:
        TopologyError: the object lacks ``nodes()``/``edges()``, an edge names an unknown
            node, or the graph is refused as by :func:`graph_topology`.
    """
    if not callable(getattr(graph, "nodes", None)) or not callable(getattr(graph, "edges", None)):
        raise TopologyError(f"topology_from needs an object with nodes() and edges(), got {type(graph).__name__}")
    labels: list[Hashable] = list(graph.nodes())
    index = {label: i for i, label in enumerate(labels)}
    if len(index) != len(labels):
        raise TopologyError("topology_from: nodes() lists a node more than once")
    pairs = []
    for edge in graph.edges():
        ends = tuple(edge)[:2]
        if len(ends) != 2:
            raise TopologyError(f"topology_from: an edge must name two nodes, got {edge!r}")
        try:
            pairs.append((index[ends[0]], index[ends[1]]))
        except (KeyError, TypeError):
            raise TopologyError(f"topology_from: edge {edge!r} names a node that nodes() does not list") from None
    topo = remember(Graph(pairs, n=len(labels)))
    topo.labels = tuple(labels)
    return topo
