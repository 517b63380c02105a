"""The topologies against plain models: every neighbour, reverse port, distance, label and
count recomputed here from coordinates and a breadth-first search, the descriptions and the
refusals word for word. (A topology that is wrong in one of these is wrong for every scheme,
and most scheme-level tests would only see it as a slightly different number.)"""

from __future__ import annotations

import dataclasses
import math
from collections import deque

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from slotnet.fabric import Hypercube, Mesh, Port, Topology, TopologyError, Torus, parse_topology


def _model_neighbours(kind: str, sides: tuple[int, ...]) -> dict[int, dict[int, int]]:
    """node -> {port: neighbour}, from coordinates: hypercube port k flips bit k; grid port 2k
    steps +1 in dimension k, port 2k+1 steps -1, wrapping on a torus, absent at a mesh's edge."""
    n = math.prod(sides)
    out: dict[int, dict[int, int]] = {}
    for v in range(n):
        c, rest = [], v
        for s in sides:
            c.append(rest % s)
            rest //= s
        ports: dict[int, int] = {}
        for k, s in enumerate(sides):
            if kind == "hypercube":
                ports[k] = v ^ (1 << k)
                continue
            for j, step in ((2 * k, 1), (2 * k + 1, -1)):
                x = c[k] + step
                if not 0 <= x < s:
                    if kind == "mesh":
                        continue
                    x %= s
                cc = list(c)
                cc[k] = x
                ports[j] = sum(ci * math.prod(sides[:i]) for i, ci in enumerate(cc))
        out[v] = ports
    return out


def _bfs(adj: dict[int, dict[int, int]], src: int) -> dict[int, int]:
    dist = {src: 0}
    todo = deque([src])
    while todo:
        v = todo.popleft()
        for w in adj[v].values():
            if w not in dist:
                dist[w] = dist[v] + 1
                todo.append(w)
    return dist


shapes = st.one_of(
    st.tuples(st.just("hypercube"), st.integers(1, 5).map(lambda d: (2,) * d)),
    st.tuples(st.sampled_from(["torus", "mesh"]), st.lists(st.integers(2, 5), min_size=1, max_size=3).map(tuple)),
)


def _build(kind: str, sides: tuple[int, ...]) -> Topology:
    if kind == "hypercube":
        return Hypercube(len(sides))
    return Torus(sides) if kind == "torus" else Mesh(sides)


@settings(max_examples=60, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate))  # no shrinking:
@given(shapes)  # a broken geometry fails at once (shrinking it through the BFS model takes minutes)
def test_every_topology_agrees_with_its_coordinate_model(shape):
    kind, sides = shape
    topo = _build(kind, sides)
    adj = _model_neighbours(kind, sides)
    n = math.prod(sides)
    assert topo.n_nodes == n and topo.kind == kind and tuple(topo.sides) == sides and topo.d == len(sides)
    assert topo.wrap is (kind != "mesh")
    n_ports = len(sides) if kind == "hypercube" else 2 * len(sides)
    assert topo.n_ports == n_ports
    spec = f"hypercube:{len(sides)}" if kind == "hypercube" else f"{kind}:" + "x".join(map(str, sides))
    assert topo.spec == spec and parse_topology(spec).spec == spec and repr(topo) == f"<{type(topo).__name__} {spec}>"
    links = []
    for v in range(n):
        for p in range(-1, n_ports + 1):
            assert topo.neighbour(v, p) == adj[v].get(p)
        ports = topo.ports(v)
        assert [q.index for q in ports] == sorted(adj[v]) and topo.degree(v) == len(adj[v])
        for q in ports:
            assert q.neighbour == adj[v][q.index] and (q.dim, q.direction) == topo.port_label(q.index)
            assert topo.port_index(q.dim, q.direction) == q.index
            if kind == "hypercube":
                assert (q.dim, q.direction) == (q.index, 0)
            else:
                assert (q.dim, q.direction) == (q.index // 2, 1 if q.index % 2 == 0 else -1)
            back = topo.reverse_port(v, q.index)
            assert topo.neighbour(q.neighbour, back) == v
            key = topo.link_key(v, q.index)
            assert key == topo.link_key(q.neighbour, back) and key == tuple(sorted([(v, q.index), (q.neighbour, back)]))
            links.append((v, q.index, q.neighbour))
        assert topo.node_at(topo.coords(v)) == v
        assert topo.coords(v) == tuple((v // math.prod(sides[:k])) % s for k, s in enumerate(sides))
    assert topo.links() == links and topo.n_links == len(links) and type(topo.n_links) is int
    assert Topology.n_links.func(topo) == len(links)  # type: ignore[attr-defined]  # the generic count agrees
    assert topo.describe() == {"kind": kind, "spec": spec, "n_nodes": n, "n_links": len(links)}
    for a in range(n):
        dist = _bfs(adj, a)
        assert [topo.distance(a, b) for b in range(n)] == [dist[b] for b in range(n)]


def test_the_ports_and_their_labels_of_a_small_torus_and_mesh():
    t, m = Torus((3, 4)), Mesh((3, 4))
    assert t.ports(0) == (Port(0, 0, 1, 1), Port(1, 0, -1, 2), Port(2, 1, 1, 3), Port(3, 1, -1, 9))
    assert m.ports(0) == (Port(0, 0, 1, 1), Port(2, 1, 1, 3))
    assert m.ports(11) == (Port(1, 0, -1, 10), Port(3, 1, -1, 8))
    assert Hypercube(3).ports(5) == (Port(0, 0, 0, 4), Port(1, 1, 0, 7), Port(2, 2, 0, 1))
    assert m.link_key(4, 0) == ((4, 0), (5, 1)) and m.link_key(5, 1) == ((4, 0), (5, 1))
    assert m.link_key(4, 1) == ((3, 0), (4, 1)) and Hypercube(2).link_key(3, 1) == ((1, 1), (3, 1))


def test_a_port_is_a_frozen_slotted_value():
    p = Port(1, 0, -1, 7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.index = 2  # type: ignore[misc]
    assert not hasattr(p, "__dict__") and Port.__slots__ == ("index", "dim", "direction", "neighbour")
    assert p == Port(1, 0, -1, 7) and hash(p) == hash(Port(1, 0, -1, 7))


def test_the_base_class_leaves_the_geometry_to_its_subclasses():
    base = Topology()
    for name in ("spec", "n_ports"):
        with pytest.raises(NotImplementedError):
            getattr(base, name)
    for call in (lambda: base.neighbour(0, 0), lambda: base.reverse_port(0, 0), lambda: base.distance(0, 1),
                 lambda: base.port_label(0), lambda: base.port_index(0, 1), lambda: base.coords(0),
                 lambda: base.node_at((0,))):
        with pytest.raises(NotImplementedError):
            call()


def test_sizes_at_and_past_the_limit():
    assert Hypercube(24).n_nodes == 1 << 24 and Hypercube(24).n_links == 24 << 24
    assert Torus((1 << 12, 1 << 12)).n_nodes == 1 << 24
    for make, message in [
        (lambda: Hypercube(25), "hypercube dimension 25 is too large (at most 24)"),
        (lambda: Hypercube(0), "hypercube dimension must be an integer >= 1, got 0"),
        (lambda: Hypercube(2.0), "hypercube dimension must be an integer >= 1, got 2.0"),  # type: ignore[arg-type]
        (lambda: Torus(((1 << 12) + 1, 1 << 12)), "torus with 16781312 nodes is too large (at most 2**24)"),
        (lambda: Mesh(()), "mesh needs at least one side"),
        (lambda: Mesh((4, 1)), "mesh side must be >= 2, got 1"),
        (lambda: Hypercube(3).port_index(3), "hypercube:3 has no dimension 3"),
        (lambda: Hypercube(3).port_index(-1), "hypercube:3 has no dimension -1"),
        (lambda: Torus((3, 3)).port_index(2, 1), "torus:3x3 has no port for dimension 2, direction 1"),
        (lambda: Torus((3, 3)).port_index(0, 0), "torus:3x3 has no port for dimension 0, direction 0"),
        (lambda: Mesh((3, 3)).link_key(0, 1), "node 0 has no port 1 on mesh:3x3"),
        (lambda: Hypercube(2).link_key(0, 2), "node 0 has no port 2 on hypercube:2"),
    ]:
        with pytest.raises(TopologyError) as info:
            make()
        assert str(info.value) == message


LOOKS = "hypercube:D, torus:N1xN2[x...], mesh:N1xN2[x...], ring:N, graph:FILE, anynet:FILE, edges:U-V,U-V,..."


@pytest.mark.parametrize("spec, message", [
    ("hypercube", "topology spec 'hypercube' must look like " + LOOKS),
    (7, "topology spec 7 must look like " + LOOKS),
    ("hypercube:x", "hypercube dimension must be a positive integer, got 'x' in 'hypercube:x'"),
    ("hypercube:-2", "hypercube dimension must be a positive integer, got '-2' in 'hypercube:-2'"),
    ("torus:4x", "torus sides must be positive integers joined by 'x', got '4x' in 'torus:4x'"),
    ("mesh:4*4", "mesh sides must be positive integers joined by 'x', got '4*4' in 'mesh:4*4'"),
    ("ring8:8", "unknown topology kind 'ring8' in 'ring8:8' (known: hypercube, torus, mesh, ring, graph, anynet, edges)"),
])
def test_bad_specs_are_refused_word_for_word(spec, message):
    with pytest.raises(TopologyError) as info:
        parse_topology(spec)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_specs_are_read_with_spaces_and_any_case():
    assert parse_topology(" Torus : 4x6 ").spec == "torus:4x6"
    assert parse_topology("HYPERCUBE:3").spec == "hypercube:3"
    assert isinstance(parse_topology("mesh:5"), Mesh) and isinstance(parse_topology("torus:5"), Torus)
    assert [t.n_links for t in (Mesh((5,)), Torus((5,)), Torus((2,)))] == [8, 10, 4]


@pytest.mark.parametrize("spec", ["hypercube:1", "hypercube:5", "torus:4x3", "mesh:3x4x2", "mesh:5", "ring:5"])
def test_fast_port_tables_agree_with_the_generic_ones(spec):
    """A topology's own port ids, out-links, ports and degree (the hypercube's closed forms) are
    the generic walk over its ports' neighbours, node by node."""
    t = parse_topology(spec)
    for v in range(t.n_nodes):
        assert t.out_links(v) == Topology.out_links(t, v)
        assert t.port_ids(v) == Topology.port_ids(t, v) == tuple(p.index for p in t.ports(v))
        assert t.ports(v) == Topology.ports(t, v)
        assert t.degree(v) == Topology.degree(t, v)
