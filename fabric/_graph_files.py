"""Graphs from files: edge lists (``graph:FILE``) and BookSim2's anynet format (``anynet:FILE``).

Edge list: one link ``u v`` per line, nodes ``0 .. n-1``, ``#`` starts a comment, blank
lines are skipped. An optional third column is the link's latency in slots; slotnet's
links take one slot each, so a latency other than 1 is refused.

Anynet (BookSim2's ``src/networks/anynet.cpp``): each line starts with ``router R`` (or
``node N``) and lists what it is connected to, ``router X`` or ``node X``, each optionally
followed by a channel latency in cycles. Routers are slotnet's nodes and router-router
channels its links (undirected: ``router 0 router 1`` links both ways, and listing the
pair again, either way round, is the same link). ``node`` entries are terminals, each on
one router. Routers and terminals are numbered from 0 with no gaps. A router-router
latency other than 1 is refused as above; terminal latencies are kept as read. ``#``
comments are a slotnet extension (BookSim's reader has none).

Parsed files are kept (a few, keyed by path, size and modification time), so a run that
parses its spec more than once reads the file once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable

from ._errors import TopologyError
from ._graph import AnyNet, Graph

__all__ = ["inline_graph", "load_graph_file", "parse_anynet", "parse_edge_list", "remember"]

#: Parsed files kept (most recently used last).
_KEPT = 8
_files: OrderedDict[tuple[str, str, int, int], Graph] = OrderedDict()
#: Inline graphs (``edges:...``) parsed or built from Python, by spec (most recently used last).
_inline: OrderedDict[str, Graph] = OrderedDict()


def _lines(text: str) -> list[tuple[int, list[str]]]:
    """``(line number, words)`` of every line with words once its ``#`` comment is cut."""
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if words:
            out.append((k, words))
    return out


def _id(word: str, what: str, where: str) -> int:
    if not word.isdigit():
        raise TopologyError(f"{where}: {what} must be an integer >= 0, got {word!r}")
    return int(word)


def _unit_latency(word: str, link: str, where: str) -> None:
    """Refuse a link latency other than one slot (the fabric delivers every message in the next slot)."""
    lat = _id(word, "a latency", where)
    if lat != 1:
        raise TopologyError(f"{where}: link {link} has latency {lat}: slotnet's links take one slot each "
                            "(per-link latency is not supported; give 1 or leave it out)")


def parse_edge_list(text: str, spec: str) -> Graph:
    """A :class:`Graph` from edge-list text (``spec`` names it in errors and is its spec).

    Raises:
        TopologyError: naming the line of a malformed link, or what is wrong with the graph.
    """
    pairs = []
    for k, words in _lines(text):
        where = f"{spec} line {k}"
        if len(words) not in (2, 3):
            raise TopologyError(f"{where}: expected 'u v' or 'u v latency', got {' '.join(words)!r}")
        u, v = (_id(w, "a node id", where) for w in words[:2])
        if u == v:
            raise TopologyError(f"{where}: link {u}-{v} goes from node {u} to itself (self-loops are not supported)")
        if len(words) == 3:
            _unit_latency(words[2], f"{u}-{v}", where)
        pairs.append((u, v))
    if not pairs:
        raise TopologyError(f"{spec}: no links (expected lines 'u v', nodes numbered from 0)")
    return Graph(pairs, spec=spec)


def parse_anynet(text: str, spec: str) -> AnyNet:
    """An :class:`AnyNet` from BookSim2 anynet text (``spec`` names it in errors and is its spec).

    Raises:
        TopologyError: naming the line of a malformed entry, a node-node connection, a
            terminal on two routers, a gap in the numbering, or what is wrong with the graph.
    """
    pairs: list[tuple[int, int]] = []
    routers: set[int] = set()
    home: dict[int, int] = {}  # terminal -> router
    order: list[int] = []  # terminals in file order
    latency: dict[int, int] = {}
    for k, words in _lines(text):
        where = f"{spec} line {k}"
        items = _entries(words, where)
        (head_kind, head, _), body = items[0], items[1:]
        if head_kind == "router":
            routers.add(head)
        for kind, x, lat in body:
            if head_kind == "node" and kind == "node":
                raise TopologyError(f"{where}: node {head} connected to node {x} (a terminal connects to a router)")
            if kind == "router" and head_kind == "router":
                routers.add(x)
                if x == head:
                    raise TopologyError(f"{where}: router {x} connected to itself (self-loops are not supported)")
                if lat is not None:
                    _unit_latency(lat, f"router {head} -> router {x}", where)
                pairs.append((head, x))
                continue
            router, terminal = (x, head) if kind == "router" else (head, x)
            routers.add(router)
            if home.get(terminal, router) != router:
                raise TopologyError(f"{where}: node {terminal} is on router {home[terminal]} and router {router} "
                                    "(a terminal connects to one router)")
            if terminal not in home:
                home[terminal] = router
                order.append(terminal)
            if lat is not None:
                latency[terminal] = _id(lat, "a latency", where)
    if not routers:
        raise TopologyError(f"{spec}: no routers (expected lines such as 'router 0 router 1 node 0')")
    _numbered(routers, "router", spec)
    _numbered(set(home), "node", spec)
    terminals: list[list[int]] = [[] for _ in range(max(routers) + 1)]
    for t in order:
        terminals[home[t]].append(t)
    return AnyNet(pairs, terminals, spec=spec, latency={t: c for t, c in latency.items() if c != 1})


def _entries(words: list[str], where: str) -> list[tuple[str, int, str | None]]:
    """A line's ``(kind, id, latency word or None)`` entries, the head first."""
    out: list[tuple[str, int, str | None]] = []
    i = 0
    while i < len(words):
        kind = words[i].lower()
        if kind not in ("router", "node"):
            what = "a line starts with 'router' or 'node'" if not out else "expected 'router' or 'node'"
            raise TopologyError(f"{where}: {what}, got {words[i]!r}")
        if i + 1 == len(words):
            raise TopologyError(f"{where}: {words[i]!r} without an id")
        ident = _id(words[i + 1], f"a {kind} id", where)
        i += 2
        lat = None
        if out and i < len(words) and words[i].lower() not in ("router", "node"):
            lat = words[i]
            i += 1
        out.append((kind, ident, lat))
    return out


def _numbered(ids: set[int], what: str, spec: str) -> None:
    """Refuse ids that are not ``0 .. k-1`` (BookSim numbers routers and terminals so)."""
    if ids and max(ids) + 1 != len(ids):
        missing = min(set(range(max(ids) + 1)) - ids)
        raise TopologyError(f"{spec}: {what}s must be numbered 0..{max(ids)} without gaps: {what} {missing} is missing")


def load_graph_file(kind: str, path: str, spec: str) -> Graph:
    """The graph of ``graph:FILE`` or ``anynet:FILE`` (``kind`` ``graph`` or ``anynet``), read once per version of the file.

    Raises:
        TopologyError: the file cannot be read, or its text is refused by the parser.
    """
    parse: Callable[[str, str], Graph] = parse_edge_list if kind == "graph" else parse_anynet
    try:
        st = os.stat(path)
        key = (kind, os.path.realpath(path), st.st_size, st.st_mtime_ns)
        kept = _files.get(key)
        if kept is not None and kept.spec == spec:
            _files.move_to_end(key)
            return kept
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise TopologyError(f"{spec}: cannot read {path!r}: {why}") from None
    graph = parse(text, spec)
    _files[key] = graph
    while len(_files) > _KEPT:
        _files.popitem(last=False)
    return graph


def remember(graph: Graph) -> Graph:
    """Keep ``graph`` so that parsing its spec again (a run spec holds the string) gives it back."""
    _inline[graph.spec] = graph
    _inline.move_to_end(graph.spec)
    while len(_inline) > _KEPT:
        _inline.popitem(last=False)
    return graph


def inline_graph(spec: str, arg: str) -> Graph:
    """The graph of ``edges:u-v,u-v,...`` (``arg`` is the part after the colon).

    Raises:
        TopologyError: naming a malformed link, or what is wrong with the graph.
    """
    kept = _inline.get(spec)
    if kept is not None:
        _inline.move_to_end(spec)
        return kept
    pairs = []
    for k, item in enumerate(arg.split(","), 1):
        u, dash, v = item.strip().partition("-")
        if not dash or not u.strip().isdigit() or not v.strip().isdigit():
            raise TopologyError(f"edges: link {k} must look like u-v (node ids >= 0), got {item.strip()!r}")
        pairs.append((int(u), int(v)))
    return remember(Graph(pairs, spec=spec))
