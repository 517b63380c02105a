"""The local decisions of priority STAR (Yeh, Varvarigos & Eshoul), as pure functions.

A node calls these with what a packet carries and its own coordinates; nothing here
needs the network. Dimensions are **0-based** (the paper's dimension ``k+1`` is ``k``
here); directions are ``+1``/``-1`` as in slotnet's torus ports (port ``2k`` is ``+1``
along dimension ``k``, port ``2k+1`` is ``-1``).

Broadcast header (small ints, msgpack-friendly): ``(source, ending, split)`` -- the
source node (its coordinates are what the rule needs), the 0-based ending dimension,
and ``split``, a bit mask with bit ``k`` saying which side of the dimension-``k`` rings
is the longer one when ``n_k`` is even (§3.1: "where n is even the longer side is
chosen at random per packet"); bits of odd sides are ignored (:func:`pick_split`
leaves them 0).

The tree (§3.1, non-idling all-port form of the SDC broadcast). Dimensions are spread
in the SDC order ``l+1, ..., d, 1, ..., l`` (paper numbering). Every ring a copy
enters is covered with ``n - 1`` transmissions from its entry node, ``plus`` of them
going ``+1`` and ``minus`` going ``-1`` (:func:`ring_split`). A node that is not the
source received its copy on the last dimension of the order in which its coordinate
differs from the source's, so from coordinates alone it knows (a) whether to pass the
copy on along that ring, in the direction it came, and (b) that it is the entry node of
the rings of every later dimension of the order. Every node receives exactly one copy,
over a shortest path, and a broadcast makes ``N - 1`` transmissions.

Priority classes, numbered from 0 (served first) to ``classes - 1``:

* ``classes=1``: everything class 0 (one FIFO per port: the FCFS comparison of §3.2);
* ``classes=2`` (§3.2, and §4 for unicasts): a broadcast transmission on the packet's
  ending dimension is class 1 (low), every other transmission class 0 (high); unicast
  packets are class 0 (§4: "high priority to all the unicast packets and all the
  broadcast packets except for those transmitted along the ending dimension");
* ``classes=3`` (end of §4): "medium priority to all the unicast packets, low priority
  to broadcast packets transmitted along the ending dimension, and high priority to the
  rest of the broadcast packets" -- broadcast off the ending dimension 0, unicast 1,
  broadcast on the ending dimension 2.

Unicast (§4 asks only for a shortest path; the order is ours): dimension order
``0, 1, ..., d-1``, in each ring the shorter direction; when the offset is exactly
``n/2`` both are shortest and the packet's ``tie`` mask decides (bit ``k`` set: ``+1``),
drawn once at the source by :func:`pick_tie` so that both directions carry the same
expected load. Unicast header: ``(dest, tie)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slotnet.nodes import NodeStream

__all__ = [
    "broadcast_class",
    "pick_ending",
    "pick_split",
    "pick_tie",
    "ring_split",
    "sdc_order",
    "star_forward",
    "tied_dims",
    "unicast_class",
    "unicast_next_hop",
]


def sdc_order(d: int, ending: int) -> tuple[int, ...]:
    """The SDC dimension order for 0-based ending dimension ``ending`` (§3.1).

    Paper: ``l+1, ..., d, 1, ..., l`` (1-based); 0-based: ``ending+1, ..., d-1, 0, ..., ending``.

    Example:
        >>> sdc_order(3, 0), sdc_order(3, 2)
        ((1, 2, 0), (0, 1, 2))
    """
    if not 0 <= ending < d:
        raise ValueError(f"ending dimension must be in 0..{d - 1}, got {ending}")
    return tuple((ending + 1 + t) % d for t in range(d))


def pick_ending(rng: NodeStream, x: Sequence[float]) -> int:
    """Draw the 0-based ending dimension ``l`` with probability ``x[l]`` (§3.1).

    Uses one ``rng.random()``; never returns a dimension whose probability is 0.

    Example:
        >>> import random
        >>> pick_ending(random.Random(1), [0.0, 1.0, 0.0])
        1
    """
    u = rng.random() * sum(x)
    acc = 0.0
    last = -1
    for k, p in enumerate(x):
        if p > 0:
            acc += p
            last = k
            if u < acc:
                return k
    if last < 0:
        raise ValueError(f"ending probabilities must have a positive entry, got {list(x)}")
    return last


def ring_split(n: int, bit: int) -> tuple[int, int]:
    """``(plus, minus)``: transmissions going +1 and -1 to cover an ``n``-ring from one node.

    ``plus + minus == n - 1``; odd ``n``: ``(n-1)/2`` each; even ``n``: the longer side
    (``n/2``) is ``+1`` if ``bit`` else ``-1``. On ``n = 2`` this picks which of the two
    parallel links carries the one transmission.

    Example:
        >>> ring_split(5, 0), ring_split(6, 1), ring_split(6, 0), ring_split(2, 0)
        ((2, 2), (3, 2), (2, 3), (0, 1))
    """
    if n % 2:
        return (n - 1) // 2, (n - 1) // 2
    return (n // 2, n // 2 - 1) if bit else (n // 2 - 1, n // 2)


def pick_split(rng: NodeStream, sides: Sequence[int]) -> int:
    """The ``split`` mask of a new broadcast: one random bit per even side, 0 for odd ones.

    Draws ``rng.getrandbits(1)`` once per even side, in dimension order.
    """
    mask = 0
    for k, n in enumerate(sides):
        if n % 2 == 0 and rng.getrandbits(1):
            mask |= 1 << k
    return mask


def broadcast_class(dim: int, ending: int, classes: int = 2) -> int:
    """Priority class of a broadcast transmission on ``dim`` (§3.2; 3 classes: end of §4)."""
    if classes == 1 or dim != ending:
        return 0
    return classes - 1


def unicast_class(classes: int = 2) -> int:
    """Priority class of a unicast transmission: 0 (one or two classes, §4) or 1 (medium, three)."""
    return 1 if classes == 3 else 0


def star_forward(
    sides: Sequence[int],
    source: Sequence[int],
    ending: int,
    split: int,
    coords: Sequence[int],
    classes: int = 2,
) -> list[tuple[int, int, int]]:
    """The transmissions a node makes for one broadcast copy it holds (§3.1, §3.2).

    Args:
        sides: torus sides ``(n_0, ..., n_{d-1})``.
        source: the source's coordinates (from the header's source node).
        ending: the packet's 0-based ending dimension.
        split: the packet's split mask (see :func:`ring_split`).
        coords: this node's coordinates (the source itself, or a node that has just
            received the copy).
        classes: 1, 2 or 3 priority classes (module docstring).

    Returns:
        ``[(dim, direction, cls), ...]`` in SDC order (the source: all its rings; a
        leaf: nothing).

    Example:
        >>> star_forward((5, 5), (0, 0), 1, 0, (0, 0))
        [(0, 1, 0), (0, -1, 0), (1, 1, 1), (1, -1, 1)]
        >>> star_forward((5, 5), (0, 0), 1, 0, (1, 0)), star_forward((5, 5), (0, 0), 1, 0, (2, 4))
        ([(0, 1, 0), (1, 1, 1), (1, -1, 1)], [(1, -1, 1)])
        >>> star_forward((5, 5), (0, 0), 1, 0, (2, 3))  # a leaf
        []
    """
    d = len(sides)
    if len(source) != d or len(coords) != d:
        raise ValueError(f"source {tuple(source)} and coords {tuple(coords)} need {d} coordinates")
    last = -1  # position in the SDC order of the dimension the copy arrived on
    for k in range(d):
        if coords[k] != source[k]:
            last = max(last, (k - ending - 1) % d)
    out = []
    if last >= 0:
        k = (ending + 1 + last) % d
        n = sides[k]
        plus, _ = ring_split(n, split >> k & 1)
        r = (coords[k] - source[k]) % n
        cls = broadcast_class(k, ending, classes)
        if r < plus:
            out.append((k, 1, cls))
        elif r > plus + 1:
            out.append((k, -1, cls))
    for pos in range(last + 1, d):
        k = (ending + 1 + pos) % d
        plus, minus = ring_split(sides[k], split >> k & 1)
        cls = broadcast_class(k, ending, classes)
        if plus:
            out.append((k, 1, cls))
        if minus:
            out.append((k, -1, cls))
    return out


def tied_dims(sides: Sequence[int], source: Sequence[int], dest: Sequence[int]) -> list[int]:
    """The dimensions in which ``dest`` is ``n/2`` from ``source`` on an even ring of ``n``
    nodes (both ways round are shortest): those a unicast's ``tie`` mask decides.

    Example:
        >>> tied_dims((4, 5, 4), (0, 0, 1), (2, 2, 0))
        [0]
    """
    return [k for k, n in enumerate(sides) if n % 2 == 0 and (dest[k] - source[k]) % n == n // 2]


def pick_tie(rng: NodeStream, sides: Sequence[int], source: Sequence[int], dest: Sequence[int]) -> int:
    """The ``tie`` mask of a new unicast: a random bit for each dimension at offset ``n/2``.

    Draws ``rng.getrandbits(1)`` once per tied dimension (:func:`tied_dims`), in dimension order.
    """
    mask = 0
    for k in tied_dims(sides, source, dest):
        if rng.getrandbits(1):
            mask |= 1 << k
    return mask


def unicast_next_hop(
    sides: Sequence[int], coords: Sequence[int], dest: Sequence[int], tie: int = 0
) -> tuple[int, int] | None:
    """``(dim, direction)`` of the next hop of a unicast, or None at its destination (§4).

    Dimension order 0..d-1, shorter ring direction, offset ``n/2`` decided by ``tie``.

    Example:
        >>> unicast_next_hop((8, 8), (0, 0), (7, 4)), unicast_next_hop((8, 8), (0, 0), (0, 4), tie=0b10)
        ((0, -1), (1, 1))
    """
    for k, n in enumerate(sides):
        off = (dest[k] - coords[k]) % n
        if off:
            if 2 * off < n:
                return k, 1
            if 2 * off > n:
                return k, -1
            return k, 1 if tie >> k & 1 else -1
    return None
