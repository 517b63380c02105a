"""Many-to-one routing instances on meshes: the record, JSON files and generators.

Mansour & Patt-Shamir, "Many-to-one packet routing on grids", §2: a routing instance is
a set of packets with a source and a destination each; ``source`` is injective (every
node is the source of at most one packet), ``dest`` is arbitrary.

Nodes. A node is a coordinate tuple ``(c_0, ..., c_{k-1})`` with ``0 <= c_i < n_i`` on
a mesh of sides ``(n_0, ..., n_{k-1})``, k = 1, 2 or 3; its id is mixed-radix with
dimension 0 fastest, ``c_0 + n_0 c_1 + n_0 n_1 c_2`` (as ``slotnet.fabric`` numbers
``mesh:`` nodes). An :class:`Instance` stores ids; files and workload strings use
coordinates in the topology's dimension order (``mesh:AxB``: first coordinate in
``[0, A)``).

Files. ``{"packets": [[source, destination], ...]}`` with every node a coordinate list,
e.g. ``{"packets": [[[0, 0], [3, 3]], [[1, 0], [3, 3]]]}``; other top-level keys are
ignored. :func:`load_instance` names the file, the entry and what is wrong.

Generators (all deterministic given the ``random.Random`` passed in). Every source
carries a packet, or, with ``fraction=f`` in (0, 1], a uniformly random set of
``floor(f * n + 1/2)`` sources does (chosen first, with ``rng.sample``); destinations
are then drawn source by source in increasing id order:

* :func:`all_to_one` -- every packet to one node (default: the centre ``n_i // 2``);
* :func:`hotspots` -- k distinct hot nodes drawn uniformly, each packet to one of them
  uniformly;
* :func:`uniform` -- each destination uniform over all nodes (its own source included);
* :func:`region` -- each destination uniform over the box ``lo <= c <= hi``;
* :func:`bounded` -- each destination uniform over the nodes at distance 1..r of the
  source (rejection sampling from the bounding box).

Workload strings (``--param workload=...``), parsed by :func:`parse_workload`:
``NAME[:KEY=VALUE;KEY=VALUE...]`` where a value that is a node or a corner is a
comma-separated coordinate list; a comma may also separate parameters, since a token
without ``=`` continues the previous value: ``all-to-one``, ``all-to-one:node=3,4``,
``hotspots:k=4``, ``uniform:fraction=0.5``, ``region:lo=0,0;hi=3,3``,
``bounded:r=5,fraction=0.25``.
"""

from __future__ import annotations

import json
import math
import operator
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "WORKLOADS",
    "Instance",
    "Workload",
    "all_to_one",
    "bounded",
    "centre",
    "hotspots",
    "instance_to_json",
    "load_instance",
    "make_instance",
    "mesh_coords",
    "mesh_distance",
    "mesh_node",
    "parse_workload",
    "region",
    "uniform",
]

Coords = tuple[int, ...]


def _check_sides(sides: Sequence[int]) -> tuple[int, ...]:
    """Validate mesh sides: 1 to 3 integers, each >= 1."""
    if isinstance(sides, (str, bytes)):
        raise TypeError(f"sides must be a sequence of integers, got {sides!r}")
    out = []
    for s in sides:
        if isinstance(s, bool):
            raise TypeError(f"mesh sides must be integers, got {sides!r}")
        try:
            value = operator.index(s)
        except TypeError:
            raise TypeError(f"mesh sides must be integers, got {sides!r}") from None
        if value < 1:
            raise ValueError(f"mesh sides must be >= 1, got {tuple(sides)!r}")
        out.append(value)
    if not 1 <= len(out) <= 3:
        raise ValueError(f"many-to-one routing is for meshes of dimension 1 to 3, got {len(out)} sides")
    return tuple(out)


def mesh_coords(sides: Sequence[int], node: int) -> Coords:
    """Coordinates of ``node`` (dimension 0 fastest).

    Example:
        >>> mesh_coords((4, 3), 9)
        (1, 2)
    """
    out = []
    for s in sides:
        node, c = divmod(node, s)
        out.append(c)
    return tuple(out)


def mesh_node(sides: Sequence[int], coords: Sequence[int]) -> int:
    """Node id of ``coords`` (inverse of :func:`mesh_coords`).

    Example:
        >>> mesh_node((4, 3), (1, 2))
        9
    """
    node, stride = 0, 1
    for c, s in zip(coords, sides):
        node += c * stride
        stride *= s
    return node


def mesh_distance(sides: Sequence[int], a: int, b: int) -> int:
    """Manhattan distance between nodes ``a`` and ``b`` of a mesh (no wraparound)."""
    total = 0
    for s in sides:
        a, ca = divmod(a, s)
        b, cb = divmod(b, s)
        total += abs(ca - cb)
    return total


def centre(sides: Sequence[int]) -> Coords:
    """The centre node ``(n_0 // 2, ..., n_{k-1} // 2)`` used by default by :func:`all_to_one`."""
    return tuple(s // 2 for s in sides)


@dataclass(frozen=True)
class Instance:
    """A many-to-one routing instance on a mesh (§2).

    Attributes:
        sides: Mesh sides ``(n_0, ..., n_{k-1})``, k in 1..3.
        packets: ``(source id, destination id)`` pairs; sources pairwise distinct.
    """

    sides: tuple[int, ...]
    packets: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        sides = _check_sides(self.sides)
        object.__setattr__(self, "sides", sides)
        n = math.prod(sides)
        packets = tuple((int(s), int(d)) for s, d in self.packets)
        seen: dict[int, int] = {}
        for i, (s, d) in enumerate(packets):
            if not (0 <= s < n and 0 <= d < n):
                raise ValueError(f"packet {i}: node ids ({s}, {d}) outside [0, {n})")
            if s in seen:
                raise ValueError(f"packet {i}: source {s} already used by packet {seen[s]} (at most one packet per source, §2)")
            seen[s] = i
        object.__setattr__(self, "packets", packets)

    @property
    def n_nodes(self) -> int:
        """Number of mesh nodes."""
        return math.prod(self.sides)

    @property
    def dim(self) -> int:
        """Mesh dimension k."""
        return len(self.sides)

    def coords(self, node: int) -> Coords:
        """Coordinates of a node id."""
        return mesh_coords(self.sides, node)

    def node_at(self, coords: Sequence[int]) -> int:
        """Node id of a coordinate tuple."""
        return mesh_node(self.sides, coords)

    def distance(self, a: int, b: int) -> int:
        """Manhattan distance between two node ids."""
        return mesh_distance(self.sides, a, b)

    def __len__(self) -> int:
        return len(self.packets)


def instance_to_json(instance: Instance) -> dict[str, Any]:
    """The file form of an instance, ``{"packets": [[source, destination], ...]}`` in coordinates."""
    return {
        "packets": [[list(instance.coords(s)), list(instance.coords(d))] for s, d in instance.packets],
    }


# ---------------------------------------------------------------- files


def _coords_from_json(value: Any, sides: tuple[int, ...], where: str, role: str) -> Coords:
    if not isinstance(value, list):
        raise ValueError(f"{where}: {role} must be a list of {len(sides)} coordinates, got {value!r}")
    return _check_node(sides, value, f"{where}: {role}")


def load_instance(path: str | Path, sides: Sequence[int]) -> Instance:
    """Read an instance file ``{"packets": [[source, destination], ...]}``.

    Args:
        path: The JSON file.
        sides: Mesh sides in the topology's dimension order.

    Returns:
        The instance, packets in file order.

    Raises:
        ValueError: naming the file (and the entry index where there is one) when the
            file cannot be read, is not JSON, is not an object, has no ``packets`` list,
            or an entry is not a pair of coordinate lists of the right length, holds a
            non-integer or out-of-range coordinate, or reuses a source (§2).
    """
    sides = _check_sides(sides)
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{name}: cannot read instance file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{name}: top level must be a JSON object with key 'packets', got {type(data).__name__}")
    if "packets" not in data:
        raise ValueError(f"{name}: missing key 'packets'")
    entries = data["packets"]
    if not isinstance(entries, list):
        raise ValueError(f"{name}: 'packets' must be a list, got {type(entries).__name__}")
    packets: list[tuple[int, int]] = []
    first_use: dict[int, int] = {}
    for i, entry in enumerate(entries):
        where = f"{name}: packets[{i}]"
        if not isinstance(entry, list) or len(entry) != 2:
            raise ValueError(f"{where}: must be a pair [source, destination], got {entry!r}")
        src = mesh_node(sides, _coords_from_json(entry[0], sides, where, "source"))
        dst = mesh_node(sides, _coords_from_json(entry[1], sides, where, "destination"))
        if src in first_use:
            raise ValueError(f"{where}: source {entry[0]!r} already used by packets[{first_use[src]}] (at most one packet per source, §2)")
        first_use[src] = i
        packets.append((src, dst))
    return Instance(sides, tuple(packets))


# ---------------------------------------------------------------- generators


def _check_fraction(fraction: float) -> float:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"fraction must be a number in (0, 1], got {fraction!r}")
    value = float(fraction)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    return value


def _sources(n: int, rng: random.Random, fraction: float) -> list[int]:
    """All sources, or ``floor(f n + 1/2)`` of them drawn uniformly (sorted)."""
    fraction = _check_fraction(fraction)
    if fraction == 1.0:
        return list(range(n))
    m = math.floor(fraction * n + 0.5)
    return sorted(rng.sample(range(n), m))


def _check_node(sides: tuple[int, ...], coords: Sequence[int], what: str) -> Coords:
    coords = tuple(coords)
    if len(coords) != len(sides):
        raise ValueError(f"{what} {list(coords)} has {len(coords)} coordinate(s), the mesh has {len(sides)} dimension(s)")
    for axis, (c, s) in enumerate(zip(coords, sides)):
        if isinstance(c, bool) or not isinstance(c, int):
            raise ValueError(f"{what} coordinate {axis} must be an integer, got {c!r}")
        if not 0 <= c < s:
            raise ValueError(f"{what} coordinate {axis} is {c}, outside [0, {s})")
    return coords


def all_to_one(sides: Sequence[int], rng: random.Random, node: Sequence[int] | None = None, fraction: float = 1.0) -> Instance:
    """Every packet to one node: ``node`` (coordinates) or the centre.

    Example:
        >>> inst = all_to_one((4, 4), random.Random(1))
        >>> len(inst), {d for _, d in inst.packets} == {inst.node_at((2, 2))}
        (16, True)
    """
    sides = _check_sides(sides)
    target = mesh_node(sides, _check_node(sides, centre(sides) if node is None else node, "node"))
    return Instance(sides, tuple((s, target) for s in _sources(math.prod(sides), rng, fraction)))


def hotspots(sides: Sequence[int], rng: random.Random, k: int, fraction: float = 1.0) -> Instance:
    """``k`` distinct hot nodes drawn uniformly; each packet to one of them uniformly."""
    sides = _check_sides(sides)
    n = math.prod(sides)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"hotspots: k must be an integer in [1, {n}], got {k!r}")
    srcs = _sources(n, rng, fraction)
    spots = rng.sample(range(n), k)
    return Instance(sides, tuple((s, spots[rng.randrange(k)]) for s in srcs))


def uniform(sides: Sequence[int], rng: random.Random, fraction: float = 1.0) -> Instance:
    """Each destination uniform over all nodes (the source itself included)."""
    sides = _check_sides(sides)
    n = math.prod(sides)
    srcs = _sources(n, rng, fraction)
    return Instance(sides, tuple((s, rng.randrange(n)) for s in srcs))


def region(sides: Sequence[int], rng: random.Random, lo: Sequence[int], hi: Sequence[int], fraction: float = 1.0) -> Instance:
    """Each destination uniform over the box ``lo <= c <= hi`` (inclusive corners)."""
    sides = _check_sides(sides)
    lo_c = _check_node(sides, lo, "region lo")
    hi_c = _check_node(sides, hi, "region hi")
    for axis, (a, b) in enumerate(zip(lo_c, hi_c)):
        if a > b:
            raise ValueError(f"region: lo coordinate {axis} ({a}) exceeds hi coordinate {axis} ({b})")
    srcs = _sources(math.prod(sides), rng, fraction)
    packets = []
    for s in srcs:
        dest = tuple(rng.randint(a, b) for a, b in zip(lo_c, hi_c))
        packets.append((s, mesh_node(sides, dest)))
    return Instance(sides, tuple(packets))


def bounded(sides: Sequence[int], rng: random.Random, r: int, fraction: float = 1.0) -> Instance:
    """Each destination uniform over the nodes at distance 1..r of its source."""
    sides = _check_sides(sides)
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(f"bounded: r must be an integer >= 1, got {r!r}")
    n = math.prod(sides)
    if n < 2:
        raise ValueError("bounded: the mesh needs at least 2 nodes")
    srcs = _sources(n, rng, fraction)
    packets = []
    for s in srcs:
        c = mesh_coords(sides, s)
        boxes = [(max(0, ci - r), min(si - 1, ci + r)) for ci, si in zip(c, sides)]
        while True:
            d = tuple(rng.randint(a, b) for a, b in boxes)
            dist = sum(abs(x - y) for x, y in zip(c, d))
            if 1 <= dist <= r:
                break
        packets.append((s, mesh_node(sides, d)))
    return Instance(sides, tuple(packets))


# ---------------------------------------------------------------- workload strings

#: Workload name -> (required keys, optional keys).
WORKLOADS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "all-to-one": (frozenset(), frozenset({"node", "fraction"})),
    "hotspots": (frozenset({"k"}), frozenset({"fraction"})),
    "uniform": (frozenset(), frozenset({"fraction"})),
    "region": (frozenset({"lo", "hi"}), frozenset({"fraction"})),
    "bounded": (frozenset({"r"}), frozenset({"fraction"})),
}

_NODE_KEYS = frozenset({"node", "lo", "hi"})


@dataclass(frozen=True)
class Workload:
    """A parsed workload string: a generator name and its parameters.

    Attributes:
        name: One of :data:`WORKLOADS`.
        params: ``(key, value)`` pairs, sorted by key; coordinates are int tuples,
            ``k`` and ``r`` ints, ``fraction`` a float.
    """

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        if not self.params:
            return self.name
        parts = []
        for key, value in self.params:
            text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
            parts.append(f"{key}={text}")
        return f"{self.name}:" + ";".join(parts)

    def make(self, sides: Sequence[int], rng: random.Random) -> Instance:
        """Generate the instance on a mesh (errors name the workload and the key)."""
        return make_instance(self, sides, rng)


def _int_value(name: str, key: str, text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"workload {name!r}: {key!r} must be an integer >= {low}, got {text!r}") from None
    if value < low:
        raise ValueError(f"workload {name!r}: {key!r} must be an integer >= {low}, got {text!r}")
    return value


def _coords_value(name: str, key: str, tokens: list[str]) -> tuple[int, ...]:
    try:
        out = tuple(int(t) for t in tokens)
    except ValueError:
        raise ValueError(f"workload {name!r}: {key!r} must be integer coordinates separated by ',', got {','.join(tokens)!r}") from None
    if any(c < 0 for c in out):
        raise ValueError(f"workload {name!r}: {key!r} coordinates must be >= 0, got {','.join(tokens)!r}")
    return out


def parse_workload(text: str) -> Workload:
    """Parse a workload string such as ``hotspots:k=4;fraction=0.5``.

    Args:
        text: ``NAME[:KEY=VALUE;...]`` (see the module docstring).

    Returns:
        The :class:`Workload` (not yet checked against a mesh; :meth:`Workload.make` does).

    Raises:
        ValueError: on an unknown name or key, a key given twice or missing, or a value
            of the wrong form; the message names the workload and the key.

    Example:
        >>> str(parse_workload("region:lo=0,0,hi=3,3"))
        'region:hi=3,3;lo=0,0'
    """
    if not isinstance(text, str):
        raise TypeError(f"workload must be a string, got {text!r}")
    head, sep, rest = text.strip().partition(":")
    name = head.strip().lower()
    if name not in WORKLOADS:
        known = ", ".join(sorted(WORKLOADS))
        raise ValueError(f"unknown workload {head.strip()!r} (known: {known})")
    required, optional = WORKLOADS[name]
    raw: dict[str, list[str]] = {}
    current: str | None = None
    if sep and not rest.strip():
        raise ValueError(f"workload {name!r}: nothing after ':'")
    for piece in rest.split(";") if sep else []:
        for token in piece.split(","):
            token = token.strip()
            if "=" in token:
                key, _, value = token.partition("=")
                key = key.strip().lower()
                if key not in required | optional:
                    known = ", ".join(sorted(required | optional)) or "none"
                    raise ValueError(f"workload {name!r}: unknown key {key!r} (known: {known})")
                if key in raw:
                    raise ValueError(f"workload {name!r}: key {key!r} given twice")
                raw[key] = [value.strip()]
                current = key
            elif not token:
                raise ValueError(f"workload {name!r}: empty item in {text.strip()!r}")
            elif current is None or current not in _NODE_KEYS:
                raise ValueError(f"workload {name!r}: {token!r} is not KEY=VALUE")
            else:
                raw[current].append(token)
        current = None  # ';' always ends a value
    missing = sorted(required - raw.keys())
    if missing:
        raise ValueError(f"workload {name!r}: missing {', '.join(repr(m) for m in missing)}")
    params: dict[str, Any] = {}
    for key, tokens in raw.items():
        if key in _NODE_KEYS:
            params[key] = _coords_value(name, key, tokens)
        elif key in ("k", "r"):
            params[key] = _int_value(name, key, tokens[0], 1)
        else:  # fraction
            try:
                number = float(tokens[0])
            except ValueError:
                number = math.nan
            if not 0.0 < number <= 1.0:
                raise ValueError(f"workload {name!r}: 'fraction' must be a number in (0, 1], got {tokens[0]!r}")
            params[key] = number
    return Workload(name, tuple(sorted(params.items())))


def make_instance(workload: Workload | str, sides: Sequence[int], rng: random.Random) -> Instance:
    """Generate an instance from a workload (or a workload string) on a mesh.

    Raises:
        ValueError: if a parameter does not fit the mesh (a node outside it, a
            coordinate count that differs from the dimension, k above the node count).
    """
    if isinstance(workload, str):
        workload = parse_workload(workload)
    sides = _check_sides(sides)
    p = dict(workload.params)
    fraction = p.get("fraction", 1.0)
    try:
        if workload.name == "all-to-one":
            return all_to_one(sides, rng, p.get("node"), fraction)
        if workload.name == "hotspots":
            return hotspots(sides, rng, p["k"], fraction)
        if workload.name == "uniform":
            return uniform(sides, rng, fraction)
        if workload.name == "region":
            return region(sides, rng, p["lo"], p["hi"], fraction)
        if workload.name == "bounded":
            return bounded(sides, rng, p["r"], fraction)
    except ValueError as exc:
        raise ValueError(f"workload {str(workload)!r} on mesh {'x'.join(map(str, sides))}: {exc}") from None
    raise ValueError(f"unknown workload {workload.name!r}")
