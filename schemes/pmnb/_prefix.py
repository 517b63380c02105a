"""The embedded parallel prefix tree P of §4 (Fig. 2) and the row/column prefix of §5.

Varvarigos & Bertsekas, "Partial multinode broadcast and partial exchange algorithms
for d-dimensional meshes". Everything here is a pure function of a node's coordinates
and the mesh's sides (plus, for a node's state machine, the values it has received), so
that every node computes its own schedule; nothing needs the network.

Coordinates and orders. A node is a coordinate tuple ``(x_0, ..., x_{d-1})`` with
``0 <= x_k < p_k``; the project's node id is ``sum x_k * p_0 ... p_{k-1}`` (dimension 0
fastest), which is the paper's base-p number ``x_{d-1} ... x_0`` with digit 0 least
significant (§2). An *order* is a permutation of the dimensions, least significant first;
the default ``(0, 1, ..., d-1)`` is the paper's order and tree P. The rotation
``rotation(c, d) = (c, c+1, ..., c-1)`` gives the order ``<_c`` and tree ``P^c`` of
footnote 3 (Theorem 6): "s <_c t iff the right shift of s by c positions is less" --
we read "shift" as a cyclic rotation of the digit string (a plain shift would not be
an order), i.e. digit l of the rotated number is digit (l + c) mod d of the node.

The tree P (§4, Phase 1, Fig. 2). The leaves of P are all nodes in linear order; a level-l
tree node is the root of the sub-mesh in which the l least significant dimensions vary,
and it is embedded at the node of that sub-mesh whose l least significant coordinates
are maximal (information moves "from the left to the right", so sums gather at the
right end of each line). The forward (up) phase is d subphases, subphase k a forward
prefix along the lines of dimension ``order[k]`` among the nodes that embed level-k
tree nodes; subphase k lasts ``p_{order[k]} - 1`` steps. The reverse (down) phase runs
the subphases in the opposite order, right to left. Hence:

* each way takes ``sum_k (p_k - 1)`` steps, ``d (p - 1)`` on a p^d mesh, and the whole
  scan ``2 d (p - 1)`` steps (Fig. 2 caption; "Phase 1 takes 2(p-1)d t_p");
* every step carries one small message per used link and lasts t_p time units
  (0 < t_p <= 1); a down-phase message carries two values (offset, total), still one
  prefix message;
* every non-root node sends exactly once up, to its parent ``x + e_{order[h]}`` where h
  is the number of its least significant coordinates (in ``order``) at their maximum,
  and receives exactly once down from that parent; the root is the node with all
  coordinates maximal (node N - 1 for the default order). These links form the
  physical spanning tree that embeds P (a P-parent's children are chained along a line).

Only array links are used, so the scan runs unchanged on tori.

The row/column prefix of §5. "A row or column is a linear array, and can be viewed as a
tree rooted at a median node of that linear array of depth floor(p/2)". We root it at
``m = (p - 1) // 2`` (depth ``max(m, p-1-m) = floor(p/2)``); up: both halves chain
towards m in ``floor(p/2)`` steps; down: m sends the total (and, rightwards, the prefix)
back in ``floor(p/2)`` steps: ``2 floor(p/2)`` steps in all, which is exactly p for even
p and p - 1 for odd p, so the paper's "Phase 1 requires p t_p" is exact for even p and
an upper bound for odd p.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LineScanNode",
    "ScanEvent",
    "ScanNode",
    "ancestor",
    "check_order",
    "check_sides",
    "children",
    "coords_at",
    "level",
    "line_scan_events",
    "line_scan_steps",
    "linear_index",
    "linear_order",
    "median",
    "parent",
    "reference_line_scan",
    "reference_scan",
    "root",
    "rotation",
    "scan_events",
    "scan_steps",
    "subphase_start",
]

Coords = tuple[int, ...]
Op = Callable[[Any, Any], Any]


# --------------------------------------------------------------------------------------
# Shapes, orders and linear indices


def check_sides(sides: Sequence[int]) -> tuple[int, ...]:
    """Validate mesh sides ``(p_0, ..., p_{d-1})``: at least one, each an int >= 2.

    Raises:
        ValueError: naming the offending side.
    """
    out = tuple(sides)
    if not out:
        raise ValueError("a mesh needs at least one side, got ()")
    for k, s in enumerate(out):
        if isinstance(s, bool) or not isinstance(s, int):
            raise ValueError(f"side {k} must be an integer, got {s!r}")
        if s < 2:
            raise ValueError(f"side {k} must be >= 2, got {s}")
    return out


def check_order(order: Sequence[int] | None, d: int) -> tuple[int, ...]:
    """Validate a dimension order (least significant first); None gives ``(0..d-1)``.

    Raises:
        ValueError: if ``order`` is not a permutation of ``range(d)``.
    """
    if order is None:
        return tuple(range(d))
    out = tuple(order)
    if sorted(out) != list(range(d)):
        raise ValueError(f"order must be a permutation of 0..{d - 1}, got {out!r}")
    return out


def rotation(c: int, d: int) -> tuple[int, ...]:
    """The order of class c (footnote 3): dimension ``(l + c) mod d`` is digit l.

    Example:
        >>> rotation(1, 3)
        (1, 2, 0)
    """
    if d < 1:
        raise ValueError(f"dimension d must be >= 1, got {d}")
    if not 0 <= c < d:
        raise ValueError(f"class c must be in 0..{d - 1}, got {c}")
    return tuple((l + c) % d for l in range(d))


def _check_coords(coords: Sequence[int], sides: tuple[int, ...]) -> Coords:
    out = tuple(coords)
    if len(out) != len(sides):
        raise ValueError(f"coords {out!r} have {len(out)} entries for {len(sides)} sides")
    for k, (x, p) in enumerate(zip(out, sides)):
        if not 0 <= x < p:
            raise ValueError(f"coordinate {k} of {out!r} is outside 0..{p - 1}")
    return out


def linear_index(coords: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None) -> int:
    """Position of a node in the linear order of ``order`` (the node id for the default).

    Example:
        >>> linear_index((1, 2), (3, 4)), linear_index((1, 2), (3, 4), (1, 0))
        (7, 6)
    """
    sides_t = check_sides(sides)
    x = _check_coords(coords, sides_t)
    ordr = check_order(order, len(sides_t))
    index = 0
    for k in reversed(ordr):
        index = index * sides_t[k] + x[k]
    return index


def coords_at(index: int, sides: Sequence[int], order: Sequence[int] | None = None) -> Coords:
    """Inverse of :func:`linear_index`.

    Raises:
        ValueError: if ``index`` is outside ``0..N-1``.
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    n = math.prod(sides_t)
    if not 0 <= index < n:
        raise ValueError(f"index must be in 0..{n - 1}, got {index}")
    out = [0] * len(sides_t)
    for k in ordr:
        index, out[k] = divmod(index, sides_t[k])
    return tuple(out)


def linear_order(sides: Sequence[int], order: Sequence[int] | None = None) -> list[int]:
    """Node ids (dimension 0 fastest) listed as the leaves of P (or P^c) from the left."""
    sides_t = check_sides(sides)
    strides = [math.prod(sides_t[:k]) for k in range(len(sides_t))]
    out = []
    for i in range(math.prod(sides_t)):
        x = coords_at(i, sides_t, order)
        out.append(sum(c * s for c, s in zip(x, strides)))
    return out


# --------------------------------------------------------------------------------------
# The tree P


def root(sides: Sequence[int]) -> Coords:
    """The root of P: every coordinate maximal (node N - 1), for every order."""
    return tuple(p - 1 for p in check_sides(sides))


def level(coords: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None) -> int:
    """h(x): how many least significant coordinates (in ``order``) are maximal, 0..d.

    A node embeds the tree nodes of levels 0..h of P; it takes part in up-subphases and
    down-subphases 0..min(h, d-1); h = d only at the root.
    """
    sides_t = check_sides(sides)
    x = _check_coords(coords, sides_t)
    h = 0
    for k in check_order(order, len(sides_t)):
        if x[k] != sides_t[k] - 1:
            break
        h += 1
    return h


def ancestor(coords: Sequence[int], lvl: int, sides: Sequence[int], order: Sequence[int] | None = None) -> Coords:
    """The node embedding the level-``lvl`` tree node of P above leaf ``coords`` (Fig. 2b)."""
    sides_t = check_sides(sides)
    x = list(_check_coords(coords, sides_t))
    ordr = check_order(order, len(sides_t))
    if not 0 <= lvl <= len(sides_t):
        raise ValueError(f"level must be in 0..{len(sides_t)}, got {lvl}")
    for k in ordr[:lvl]:
        x[k] = sides_t[k] - 1
    return tuple(x)


def parent(coords: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None) -> Coords | None:
    """The node a node sends its up-phase message to (None at the root)."""
    sides_t = check_sides(sides)
    h = level(coords, sides_t, order)
    if h == len(sides_t):
        return None
    k = check_order(order, len(sides_t))[h]
    x = list(coords)
    x[k] += 1
    return tuple(x)


def children(coords: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None) -> tuple[Coords, ...]:
    """The nodes whose parent is ``coords``: ``x - e_{order[k]}`` for k <= h(x), x_k >= 1."""
    sides_t = check_sides(sides)
    x = _check_coords(coords, sides_t)
    ordr = check_order(order, len(sides_t))
    h = level(x, sides_t, ordr)
    out = []
    for k in ordr[: min(h + 1, len(sides_t))]:
        if x[k] >= 1:
            y = list(x)
            y[k] -= 1
            out.append(tuple(y))
    return tuple(out)


# --------------------------------------------------------------------------------------
# The schedule


def scan_steps(sides: Sequence[int]) -> int:
    """Steps of one phase (up or down): ``sum (p_k - 1)``, ``d (p - 1)`` on a p^d mesh."""
    return sum(p - 1 for p in check_sides(sides))


def subphase_start(phase: str, k: int, sides: Sequence[int], order: Sequence[int] | None = None) -> int:
    """Global step at which subphase k (along ``order[k]``) of ``phase`` begins.

    Up-subphases run k = 0, 1, ..., d-1 from step 0; down-subphases run k = d-1, ..., 0
    from step ``scan_steps(sides)``.
    """
    sides_t = check_sides(sides)
    ordr = check_order(order, len(sides_t))
    if not 0 <= k < len(sides_t):
        raise ValueError(f"subphase must be in 0..{len(sides_t) - 1}, got {k}")
    if phase == "up":
        return sum(sides_t[j] - 1 for j in ordr[:k])
    if phase == "down":
        return scan_steps(sides_t) + sum(sides_t[j] - 1 for j in ordr[k + 1 :])
    raise ValueError(f"phase must be 'up' or 'down', got {phase!r}")


@dataclass(frozen=True)
class ScanEvent:
    """One send or receive of a node in the scan.

    Attributes:
        step: global step (0-based; step s occupies [s t_p, (s + 1) t_p)). A message
            sent at step s is received at the end of step s, so a "recv" at step s can
            be used from step s + 1 on, and the sender's "send" has the same step.
        action: ``"send"`` or ``"recv"``.
        phase: ``"up"`` (forward) or ``"down"`` (reverse).
        subphase: k, the subphase along dimension ``order[k]``.
        dim: the dimension of the link.
        direction: +1 or -1; the neighbour is ``coords + direction * e_dim``.
    """

    step: int
    action: str
    phase: str
    subphase: int
    dim: int
    direction: int


def scan_events(coords: Sequence[int], sides: Sequence[int], order: Sequence[int] | None = None) -> tuple[ScanEvent, ...]:
    """A node's whole scan schedule, computed from its coordinates alone, by step.

    Up-subphase k: a participating node at position c of its line receives from c - 1 at
    local step c - 1 and, unless it is the right end, sends to c + 1 at local step c.
    Down-subphase k: it receives from c + 1 at local step p - 2 - c (unless right end)
    and sends to c - 1 at local step p - 1 - c (if c >= 1).
    """
    sides_t = check_sides(sides)
    x = _check_coords(coords, sides_t)
    ordr = check_order(order, len(sides_t))
    h = level(x, sides_t, ordr)
    events: list[ScanEvent] = []
    for k in range(min(h + 1, len(sides_t))):
        dim, p, c = ordr[k], sides_t[ordr[k]], x[ordr[k]]
        up, down = subphase_start("up", k, sides_t, ordr), subphase_start("down", k, sides_t, ordr)
        if c >= 1:
            events.append(ScanEvent(up + c - 1, "recv", "up", k, dim, -1))
        if c <= p - 2:
            events.append(ScanEvent(up + c, "send", "up", k, dim, +1))
            events.append(ScanEvent(down + p - 2 - c, "recv", "down", k, dim, +1))
        if c >= 1:
            events.append(ScanEvent(down + p - 1 - c, "send", "down", k, dim, -1))
    return tuple(sorted(events, key=lambda e: (e.step, e.action != "send", e.dim)))


class ScanNode:
    """One node's side of the forward and reverse prefix on P, as a pure state machine.

    A node rule calls :meth:`outgoing` at every step of its schedule and sends each
    ``(dim, direction, payload)`` on that port; it hands every scan message it receives
    to :meth:`incoming`. After the last step, :attr:`inclusive`, :attr:`exclusive` and
    :attr:`total` hold the prefix in the order's linear order. ``op`` must be associative
    with ``identity`` as neutral element; it need not be commutative.

    For ranks (§4.1 Phase 1) use value 1 on active nodes, 0 elsewhere: an active node's
    rank is ``inclusive - 1`` (= ``exclusive``) and ``total`` is M. The paper prints
    ``r_s = sum_{t < s} x_t - 1``, which would run from -1 to M-2; with its stated range
    ``0 <= r_s <= M-1`` it must mean ``sum_{t <= s} x_t - 1`` (same slip in footnote 3).
    """

    def __init__(
        self,
        coords: Sequence[int],
        sides: Sequence[int],
        value: Any,
        *,
        order: Sequence[int] | None = None,
        op: Op = operator.add,
        identity: Any = 0,
    ) -> None:
        self.sides = check_sides(sides)
        self.coords = _check_coords(coords, self.sides)
        self.order = check_order(order, len(self.sides))
        self.value = value
        self._op, self._id = op, identity
        self._h = level(self.coords, self.sides, self.order)
        self._events: dict[int, list[ScanEvent]] = {}
        for e in scan_events(self.coords, self.sides, self.order):
            self._events.setdefault(e.step, []).append(e)
        self._pending = sum(len(v) for v in self._events.values())
        self._acc = value
        self._excl: dict[int, Any] = {}
        self._line: dict[int, Any] = {}
        self._offset: Any = identity if self._h == len(self.sides) else None
        self._total: Any = None
        self._got: set[tuple[int, int, int]] = set()  # (step, dim, direction) of the receives done
        #: receives given up for missed (:meth:`miss`; faults only)
        self.missed = 0

    @property
    def done(self) -> bool:
        """True once every scheduled send and receive has happened."""
        return self._pending == 0

    @property
    def total(self) -> Any:
        """The total over all nodes (known once the down-phase reached this node)."""
        self._require_done()
        return self._total

    @property
    def exclusive(self) -> Any:
        """The op-sum of the values of all nodes before this one in the linear order."""
        self._require_done()
        return self._offset

    @property
    def inclusive(self) -> Any:
        """The op-sum up to and including this node."""
        self._require_done()
        return self._op(self._offset, self.value)

    def _require_done(self) -> None:
        if not self.done:
            raise RuntimeError(f"node {self.coords}: scan not finished ({self._pending} events left)")

    def outgoing(self, step: int) -> list[tuple[int, int, Any]]:
        """The messages this node sends at ``step``: ``(dim, direction, payload)``."""
        out = []
        for e in self._events.get(step, ()):
            if e.action != "send":
                continue
            k = e.subphase
            if e.phase == "up":
                payload: Any = self._op(self._excl.get(k, self._id), self._acc)
            else:
                if k < self._h:  # right end: pass down this line's offset, then descend
                    if k == len(self.sides) - 1:
                        self._total = self._acc
                    self._line[k] = self._offset
                    self._offset = self._op(self._offset, self._excl.get(k, self._id))
                payload = (self._line[k], self._total)
            self._pending -= 1
            out.append((e.dim, e.direction, payload))
        return out

    def incoming(self, step: int, dim: int, direction: int, payload: Any) -> None:
        """Take a scan message that arrived at the end of ``step`` from ``direction``.

        Raises:
            ValueError: if the schedule has no such receive (a schedule or wiring bug).
        """
        match = [e for e in self._events.get(step, ()) if e.action == "recv" and e.dim == dim and e.direction == direction]
        if not match or (step, dim, direction) in self._got:
            raise ValueError(f"node {self.coords}: no scan receive scheduled at step {step} on dim {dim} dir {direction}")
        self._got.add((step, dim, direction))
        k = match[0].subphase
        if match[0].phase == "up":
            self._excl[k] = payload
            if k < self._h:  # right end of this line: now holds the next level's block sum
                self._acc = self._op(payload, self._acc)
        else:
            line, self._total = payload
            self._line[k] = line
            self._offset = self._op(line, self._excl.get(k, self._id))
        self._pending -= 1

    def miss(self, step: int) -> int:
        """Give up the receives of ``step`` that did not come (a fault took them): the
        forward half takes the identity for the partial sum, the reverse half the identity
        for the offset and no total (None). Returns how many were missing (0 without faults)."""
        n = 0
        for e in self._events.get(step, ()):
            if e.action == "recv" and (step, e.dim, e.direction) not in self._got:
                self.incoming(step, e.dim, e.direction, self._id if e.phase == "up" else (self._id, None))
                n += 1
        self.missed += n
        return n


def _run_nodes(nodes: dict[Coords, Any], n_steps: int, wrap_check: tuple[int, ...]) -> None:
    """Deliver the messages of ``nodes`` step by step; check one message per directed link."""
    for step in range(n_steps):
        sent: dict[tuple[Coords, int, int], Any] = {}
        for x, node in nodes.items():
            for dim, direction, payload in node.outgoing(step):
                key = (x, dim, direction)
                if key in sent:
                    raise AssertionError(f"node {x} sent twice on dim {dim} dir {direction} at step {step}")
                y = list(x)
                y[dim] += direction
                if not 0 <= y[dim] < wrap_check[dim]:
                    raise AssertionError(f"node {x} sent off the array on dim {dim} at step {step}")
                sent[key] = (tuple(y), payload)
        for (_x, dim, direction), (y, payload) in sent.items():
            nodes[y].incoming(step, dim, -direction, payload)
    for x, node in nodes.items():
        if not node.done:
            raise AssertionError(f"node {x} did not finish its scan in {n_steps} steps")


def reference_scan(
    values: Sequence[Any],
    sides: Sequence[int],
    order: Sequence[int] | None = None,
    *,
    op: Op = operator.add,
    identity: Any = 0,
) -> tuple[list[Any], Any]:
    """Run the scan sequentially, step by step, with one :class:`ScanNode` per node.

    Args:
        values: one value per node id (dimension 0 fastest).
        sides: the mesh's sides.
        order: the dimension order of P (default the paper's).
        op, identity: an associative operation and its neutral element.

    Returns:
        ``(inclusive, total)``: the inclusive prefix per node id, in the linear order of
        ``order``, and the total (checked equal at every node).

    Raises:
        ValueError: on a wrong number of values, or a message its receiver does not
            expect at that step (see :meth:`ScanNode.incoming`).
        AssertionError: if a link is used twice in a step, a message leaves the array,
            a node does not finish in ``2 * scan_steps`` steps, or totals disagree.
    """
    sides_t = check_sides(sides)
    n = math.prod(sides_t)
    if len(values) != n:
        raise ValueError(f"need {n} values, got {len(values)}")
    nodes = {}
    for v in range(n):
        x = coords_at(v, sides_t)
        nodes[x] = ScanNode(x, sides_t, values[v], order=order, op=op, identity=identity)
    _run_nodes(nodes, 2 * scan_steps(sides_t), sides_t)
    totals = {repr(node.total) for node in nodes.values()}
    if len(totals) != 1:
        raise AssertionError(f"nodes disagree on the total: {sorted(totals)[:3]}")
    ordered = [nodes[coords_at(v, sides_t)] for v in range(n)]
    return [node.inclusive for node in ordered], ordered[0].total


# --------------------------------------------------------------------------------------
# §5: prefix along one row or column, on a tree rooted at a median node


def median(p: int) -> int:
    """The root of a line's prefix tree in §5: ``(p - 1) // 2`` (depth ``floor(p/2)``)."""
    check_sides((p,))
    return (p - 1) // 2


def line_scan_steps(p: int) -> int:
    """Steps of the §5 line prefix: ``2 floor(p/2)`` (= p for even p, p - 1 for odd p)."""
    check_sides((p,))
    return 2 * (p // 2)


def line_scan_events(c: int, p: int) -> tuple[tuple[int, str, int], ...]:
    """The §5 schedule of position c on a line of p nodes: ``(step, action, direction)``.

    Up (steps 0..floor(p/2)-1): nodes left of the median m chain rightwards (c sends at
    step c), nodes right of it chain leftwards (c sends at step p-1-c). Down (from step
    U = floor(p/2)): m sends at step U, a node at distance k from m receives at step
    U + k - 1 and passes on at step U + k.
    """
    check_sides((p,))
    if not 0 <= c < p:
        raise ValueError(f"position must be in 0..{p - 1}, got {c}")
    m, u = median(p), p // 2
    ev: list[tuple[int, str, int]] = []
    if c < m:
        if c >= 1:
            ev.append((c - 1, "recv", -1))
        ev.append((c, "send", +1))
        ev.append((u + (m - c) - 1, "recv", +1))
        if c >= 1:
            ev.append((u + (m - c), "send", -1))
    elif c > m:
        if c < p - 1:
            ev.append((p - 2 - c, "recv", +1))
        ev.append((p - 1 - c, "send", -1))
        ev.append((u + (c - m) - 1, "recv", -1))
        if c < p - 1:
            ev.append((u + (c - m), "send", +1))
    else:
        if m >= 1:
            ev += [(m - 1, "recv", -1), (u, "send", -1)]
        if m < p - 1:
            ev += [(p - 2 - m, "recv", +1), (u, "send", +1)]
    return tuple(sorted(ev, key=lambda e: (e[0], e[1] != "send", e[2])))


class LineScanNode:
    """One node's side of the §5 row (or column) prefix on the median-rooted tree.

    Left of the median, up-messages carry the prefix ``x_0 .. x_c``; right of it the
    suffix ``x_c .. x_{p-1}``. The median forms the total; down-messages carry the total
    leftwards and ``(prefix through the sender, total)`` rightwards. With value 1 on
    active nodes, :attr:`total` is the row sum r_i (or column sum c_j) of §5.
    """

    def __init__(self, c: int, p: int, value: Any, *, op: Op = operator.add, identity: Any = 0) -> None:
        self.c, self.p, self.value = c, p, value
        self._op, self._id = op, identity
        self._m = median(p)
        self._events: dict[int, list[tuple[str, int]]] = {}
        for step, action, direction in line_scan_events(c, p):
            self._events.setdefault(step, []).append((action, direction))
        self._pending = sum(len(v) for v in self._events.values())
        self._left: Any = identity  # x_0 .. x_{c-1} (known on the median and left of it)
        self._right: Any = identity  # x_{c+1} .. x_{p-1} (known on the median and right of it)
        self._prefix: Any = op(identity, value) if c <= self._m else None
        self._total: Any = None
        self._got: set[tuple[int, int]] = set()  # (step, direction) of the receives done
        #: receives given up for missed (:meth:`miss`; faults only)
        self.missed = 0

    @property
    def done(self) -> bool:
        """True once every scheduled send and receive has happened."""
        return self._pending == 0

    @property
    def inclusive(self) -> Any:
        """``x_0 op ... op x_c``."""
        if not self.done:
            raise RuntimeError(f"line position {self.c}: scan not finished")
        return self._prefix

    @property
    def total(self) -> Any:
        """``x_0 op ... op x_{p-1}``."""
        if not self.done:
            raise RuntimeError(f"line position {self.c}: scan not finished")
        return self._total

    def outgoing(self, step: int) -> list[tuple[int, Any]]:
        """The messages sent at ``step``: ``(direction, payload)``."""
        out = []
        for action, direction in self._events.get(step, ()):
            if action != "send":
                continue
            c, op = self.c, self._op
            if c < self._m:
                payload: Any = self._prefix if direction > 0 else self._total
            elif c > self._m:
                payload = op(self.value, self._right) if direction < 0 else (self._prefix, self._total)
            else:
                self._total = op(self._prefix, self._right)
                payload = self._total if direction < 0 else (self._prefix, self._total)
            self._pending -= 1
            out.append((direction, payload))
        return out

    def incoming(self, step: int, direction: int, payload: Any) -> None:
        """Take a message that arrived at the end of ``step`` from ``direction``."""
        if ("recv", direction) not in self._events.get(step, ()) or (step, direction) in self._got:
            raise ValueError(f"line position {self.c}: no receive scheduled at step {step} from {direction}")
        self._got.add((step, direction))
        c, op = self.c, self._op
        up = step < self.p // 2
        if up and direction < 0:
            self._left = payload
            self._prefix = op(payload, self.value)
        elif up:
            self._right = payload
        elif c < self._m:
            self._total = payload
        else:
            left, self._total = payload
            self._prefix = op(left, self.value)
        self._pending -= 1

    def miss(self, step: int) -> int:
        """Give up the receives of ``step`` that did not come (a fault took them): the
        identity for a partial sum, no total (None) where the total was to come. Returns how
        many were missing (0 without faults)."""
        n = 0
        up = step < self.p // 2
        for action, direction in self._events.get(step, ()):
            if action == "recv" and (step, direction) not in self._got:
                default: Any = self._id
                if not up:
                    default = None if self.c < self._m else (self._id, None)
                self.incoming(step, direction, default)
                n += 1
        self.missed += n
        return n


def reference_line_scan(values: Sequence[Any], *, op: Op = operator.add, identity: Any = 0) -> tuple[list[Any], list[Any]]:
    """Run the §5 line prefix step by step; return ``(inclusive, total)`` per position.

    Raises:
        AssertionError: if a message is unexpected or a node does not finish.
    """
    p = len(values)
    nodes = [LineScanNode(c, p, values[c], op=op, identity=identity) for c in range(p)]
    for step in range(line_scan_steps(p)):
        sent = []
        for c, node in enumerate(nodes):
            for direction, payload in node.outgoing(step):
                if not 0 <= c + direction < p:
                    raise AssertionError(f"position {c} sent off the line at step {step}")
                sent.append((c + direction, -direction, payload))
        for c, direction, payload in sent:
            nodes[c].incoming(step, direction, payload)
    for node in nodes:
        if not node.done:
            raise AssertionError(f"position {node.c} did not finish in {line_scan_steps(p)} steps")
    return [n.inclusive for n in nodes], [n.total for n in nodes]
