"""What a node may know of the network's shape: the read-only geometry protocol.

The fabric's topologies satisfy it; a scheme reads it through ``ctx.geometry`` (and
``Setup.topology`` on the observer side) without importing the fabric.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Geometry", "Port"]


class Port(Protocol):
    """What a node knows of one of its out-ports."""

    @property
    def index(self) -> int: ...
    @property
    def dim(self) -> int: ...
    @property
    def direction(self) -> int: ...
    @property
    def neighbour(self) -> int: ...


@runtime_checkable
class Geometry(Protocol):
    """The static shape of the network (hypercube, torus or mesh).

    ``sides`` is ``(2,) * d`` on a d-cube; ``d`` is the number of dimensions; ``wrap``
    tells a torus (and a hypercube) from a mesh. Node ids are mixed-radix coordinates with
    dimension 0 varying fastest. Port ``2k`` of a torus or mesh goes +1 along dimension
    ``k`` and port ``2k+1`` goes −1; port ``k`` of a hypercube flips bit ``k``.
    """

    kind: str
    n_nodes: int

    @property
    def spec(self) -> str: ...
    @property
    def d(self) -> int: ...
    @property
    def sides(self) -> tuple[int, ...]: ...
    @property
    def wrap(self) -> bool: ...
    @property
    def n_ports(self) -> int: ...
    @property
    def n_links(self) -> int: ...
    def coords(self, node: int) -> tuple[int, ...]: ...
    def node_at(self, coords: tuple[int, ...]) -> int: ...
    def neighbour(self, node: int, port: int) -> int | None: ...
    def port_index(self, dim: int, direction: int) -> int: ...
    def distance(self, a: int, b: int) -> int: ...
    def ports(self, node: int) -> tuple[Port, ...]: ...
    def describe(self) -> dict[str, object]: ...
