"""§4's hierarchical partition on a mesh of any sides: halves ⌈s/2⌉ and ⌊s/2⌋, pure.

§4.1 assumes "the size of the given grid G is D x ... x D, where D is a power of 2" and
says why: "to avoid trivial complications". The partition itself needs no such side.
A box of side s splits into a lower half of ⌈s/2⌉ and an upper half of ⌊s/2⌋ along
every dimension whose side is still > 1, down to single nodes; this takes
``⌈log2 s⌉`` levels, so the recursion depth is ``⌈log D⌉`` (Theorems 1.2 and 1.3 keep
their form with ``⌈log D⌉`` for ``log D``).

rec_route and bfs_route index a box's nodes by the bits of Definition 4.1 (the
linearised address, the bitonic sort, the reduces along local-index bits). To keep
those rules exactly as they are, the unequal halves are written in a *virtual* mesh
whose sides are the powers of two ``P = 2^⌈log2 s⌉``: the real coordinate c of a side s
has the virtual coordinate ``v(c)`` defined by the same recursion (the lower half
``[0, ⌈s/2⌉)`` in ``[0, P/2)``, the upper half in ``[P/2, P)``, each placed the same way
inside its half). Then

* every level-l virtual cube holds exactly the real nodes of one level-l box of the
  ⌈s/2⌉ / ⌊s/2⌋ partition (its real side is at least half its virtual side, since
  ``s > P/2`` at the top and each half keeps that);
* the virtual coordinates left free (*holes*) are odd, and the even coordinate next to
  a hole is real: the hole is *hosted* by that real node (the host of a virtual node
  replaces, in every dimension where it is a hole, the coordinate by its even
  neighbour). A real node hosts at most ``2^k`` virtual nodes, one per pattern of the
  lowest coordinate bits;
* a move of ``h`` virtual hops along a dimension is a move of at most ``h`` real hops
  between the hosts (``v`` is increasing), and of 0 hops only between a hole and its host.

A node runs one program per virtual node it hosts; the engine time-multiplexes the
``M = 2^m`` patterns of the lowest bits (m the number of sides that are not powers of
two; :mod:`._engine`), so that in every slot of pattern c each real node acts for at
most one virtual node, sends at most one message per link direction, and the virtual
schedule is followed step for step: virtual step tau is the slots ``M tau .. M tau + M - 1``.
Hence a run finishes by slot ``M T_v``, ``T_v`` the virtual schedule's length
(:func:`._rec_reference.reference_run` on :meth:`Embedding.virtual_instance`). On a
mesh whose sides are all powers of two ``v`` is the identity, M = 1, and nothing of
this is used: the runs there are the ones §4 and §5 describe, unchanged.

What changes in the constants, beside ``⌈log D⌉``: every time bound is multiplied by M
(at most 8, in three dimensions) and counted over the virtual sides (at most twice the
real ones), and a node's buffer holds the packets of up to ``2^k`` virtual nodes, so
the O(log D) of Theorem 1.2 and the O(W log D) of Theorem 1.3 gain a factor ``2^k``
at most (see :mod:`.theory`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .instances import Instance, mesh_coords, mesh_node

__all__ = ["Embedding", "embedding", "virtual_coords_1d", "virtual_side", "virtual_volume"]


def virtual_side(side: int) -> int:
    """``2^⌈log2 side⌉``: the virtual side of a real side.

    Example:
        >>> [virtual_side(s) for s in (1, 2, 3, 5, 8, 9)]
        [1, 2, 4, 8, 8, 16]
    """
    return 1 << max(0, side - 1).bit_length()


def virtual_coords_1d(side: int) -> tuple[int, ...]:
    """Per real coordinate of a side, its virtual coordinate (halves ⌈s/2⌉, ⌊s/2⌋).

    Example:
        >>> virtual_coords_1d(5), virtual_coords_1d(6), virtual_coords_1d(4)
        ((0, 1, 2, 4, 6), (0, 1, 2, 4, 5, 6), (0, 1, 2, 3))
    """
    def place(s: int, span: int) -> list[int]:
        if span == 1:
            return [0] * s
        lo = (s + 1) // 2
        half = span // 2
        return place(lo, half) + [half + v for v in place(s - lo, half)]

    return tuple(place(side, virtual_side(side)))


@dataclass(frozen=True)
class Embedding:
    """The real mesh in its virtual mesh of power-of-two sides (see the module docstring).

    Attributes:
        sides: Real sides.
        vsides: Virtual sides, ``2^⌈log2 s⌉`` each.
        vdims: The dimensions whose side is not a power of two (bit q of a pattern is
            the lowest bit of the virtual coordinate along ``vdims[q]``).
        multiplex: M, ``2 ** len(vdims)``.
    """

    sides: tuple[int, ...]
    vsides: tuple[int, ...] = ()
    vdims: tuple[int, ...] = ()
    multiplex: int = 1
    to_virtual: tuple[tuple[int, ...], ...] = ()
    host: tuple[tuple[int, ...], ...] = ()
    real: tuple[tuple[bool, ...], ...] = ()

    def __post_init__(self) -> None:
        sides = tuple(int(s) for s in self.sides)
        vsides = tuple(virtual_side(s) for s in sides)
        to_v = tuple(virtual_coords_1d(s) for s in sides)
        host, real = [], []
        for vs, tv in zip(vsides, to_v):
            back = {v: c for c, v in enumerate(tv)}
            real.append(tuple(v in back for v in range(vs)))
            host.append(tuple(back[v] if v in back else back[v ^ 1] for v in range(vs)))
        vdims = tuple(i for i, (s, vs) in enumerate(zip(sides, vsides)) if s != vs)
        object.__setattr__(self, "sides", sides)
        object.__setattr__(self, "vsides", vsides)
        object.__setattr__(self, "vdims", vdims)
        object.__setattr__(self, "multiplex", 1 << len(vdims))
        object.__setattr__(self, "to_virtual", to_v)
        object.__setattr__(self, "host", tuple(host))
        object.__setattr__(self, "real", tuple(real))

    @property
    def identity(self) -> bool:
        """Every side a power of two: the virtual mesh is the mesh."""
        return not self.vdims

    def vcoords(self, node: int) -> tuple[int, ...]:
        """Virtual coordinates of a real node id."""
        return tuple(tv[c] for tv, c in zip(self.to_virtual, mesh_coords(self.sides, node)))

    def vnode(self, node: int) -> int:
        """Virtual node id of a real node id."""
        return mesh_node(self.vsides, self.vcoords(node))

    def is_real(self, vcoords: Sequence[int]) -> bool:
        """Whether a virtual node is a real node (else a hole)."""
        return all(r[v] for r, v in zip(self.real, vcoords))

    def host_coords(self, vcoords: Sequence[int]) -> tuple[int, ...]:
        """Real coordinates of the node hosting a virtual node."""
        return tuple(h[v] for h, v in zip(self.host, vcoords))

    def real_node(self, vcoords: Sequence[int]) -> int:
        """Real id of a real virtual node, -1 for a hole."""
        return mesh_node(self.sides, self.host_coords(vcoords)) if self.is_real(vcoords) else -1

    def pattern(self, vcoords: Sequence[int]) -> int:
        """The multiplexing pattern of a virtual node (its lowest bits along :attr:`vdims`)."""
        return sum((vcoords[i] & 1) << q for q, i in enumerate(self.vdims))

    def hosted(self, node: int) -> list[tuple[int, ...] | None]:
        """Per pattern, the virtual coordinates of the virtual node a real node hosts (None: none)."""
        own = self.vcoords(node)
        out: list[tuple[int, ...] | None] = []
        for pat in range(self.multiplex):
            vc = list(own)
            ok = True
            for q, i in enumerate(self.vdims):
                v = (own[i] & ~1) | (pat >> q & 1)
                if v != own[i] and not (own[i] & 1 == 0 and v < self.vsides[i] and not self.real[i][v]):
                    ok = False
                vc[i] = v
            out.append(tuple(vc) if ok else None)
        return out

    def virtual_instance(self, instance: Instance) -> Instance:
        """The instance in the virtual mesh (holes have no packets)."""
        return Instance(self.vsides, tuple((self.vnode(s), self.vnode(d)) for s, d in instance.packets))

    def real_hops(self, vcoords: Sequence[int], dim: int, sign: int, hops: int) -> int:
        """Real hops between the hosts of a virtual node and the one ``hops`` away along ``dim``."""
        h = self.host[dim]
        v = vcoords[dim]
        return abs(h[v + sign * hops] - h[v])

    def host_volume_factor(self) -> int:
        """Virtual nodes a real node hosts, at most: ``2^m``."""
        return self.multiplex


@functools.lru_cache(maxsize=64)
def embedding(sides: tuple[int, ...]) -> Embedding:
    """The (cached) embedding of a mesh."""
    return Embedding(tuple(int(s) for s in sides))


def virtual_volume(sides: Sequence[int], level: int) -> int:
    """``V`` of a level-``level`` cube of the virtual mesh."""
    return math.prod(max(1, virtual_side(s) >> level) for s in sides)
