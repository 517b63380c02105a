"""§5, Phase 2: the sets R and C, the routes, the priorities a)-b), and a reference run.

Varvarigos & Bertsekas, §5. Node (i, j) of the paper -- row i, column j -- is the node
with project coordinates ``(x_0, x_1) = (j, i)``: dimension 0 runs along a row (the
paper's horizontal links), dimension 1 along a column (vertical links). The row sum r_i
is the number of active nodes on the dimension-0 line through a node, the column sum
c_j on its dimension-1 line.

* ``R = {(i, j) active | r_i <= c_j}`` sends horizontal first, then vertical;
  ``C = {(i, j) active | r_i > c_j}`` vertical first, then horizontal: the unique
  shortest path with one turn (:func:`next_hop`).
* a) on horizontal links packets of R go before packets of C; on vertical links packets
  of C before packets of R (:func:`priority`); b) non-wasting: every out-port with a
  packet waiting sends one per time unit. Within a priority class the order is
  "arbitrary" in the paper; we serve FIFO, a node's own packets queued in increasing
  destination id at the start of Phase 2 and arriving packets in in-port order.

Only array links are used, so the rule runs unchanged on a p x p torus (the paper:
"and, therefore also in a p x p torus"); there the paths are shortest in the array,
not in the torus, and the bound of §5 still holds.

A packet is the tuple ``(origin, dest, cls, hops, leg_end)``: ``leg_end`` is the Phase-2
step at which it finished its first leg (-1 before), so that the run can report the
time of the proof's first half, ``m (N - p) + (p - 1)`` at most.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from slotnet.schemes.kit import ClassQueues

from ._prefix import line_scan_steps

__all__ = [
    "C_SET",
    "R_SET",
    "ExchangeOutcome",
    "ExchangeRouter",
    "array_ports",
    "exchange_class",
    "first_leg_dim",
    "next_hop",
    "port_index",
    "priority",
    "simulate_exchange",
]

#: Class of a packet from a node of R (horizontal first) or of C (vertical first).
R_SET, C_SET = 0, 1

Packet = tuple[int, int, int, int, int]


def exchange_class(row_sum: int, col_sum: int) -> int:
    """:data:`R_SET` if ``r_i <= c_j``, else :data:`C_SET` (§5, Phase 2)."""
    return R_SET if row_sum <= col_sum else C_SET


def first_leg_dim(cls: int) -> int:
    """Dimension of the first leg: 0 (horizontal) for R, 1 (vertical) for C."""
    return 0 if cls == R_SET else 1


def next_hop(here: tuple[int, int], dest: tuple[int, int], cls: int) -> tuple[int, int] | None:
    """``(dim, direction)`` of the next link on the one-turn shortest path, or None (arrived).

    Example:
        >>> next_hop((0, 0), (2, 3), R_SET), next_hop((0, 0), (2, 3), C_SET), next_hop((2, 3), (2, 3), R_SET)
        ((0, 1), (1, 1), None)
    """
    first = first_leg_dim(cls)
    for dim in (first, 1 - first):
        if here[dim] != dest[dim]:
            return dim, (1 if dest[dim] > here[dim] else -1)
    return None


def priority(dim: int, cls: int) -> int:
    """Priority class (0 first) of a packet of ``cls`` on a link of ``dim``: rule a)."""
    return 0 if (dim == 0) == (cls == R_SET) else 1


def port_index(dim: int, direction: int) -> int:
    """The project's port numbering on tori and meshes: 2k is +1 along k, 2k+1 is -1."""
    return 2 * dim + (0 if direction > 0 else 1)


def array_ports(coords: tuple[int, int], p: int) -> tuple[int, ...]:
    """The out-ports of a node that stay inside the p x p array (no wraparound link)."""
    out = []
    for dim in (0, 1):
        if coords[dim] < p - 1:
            out.append(port_index(dim, +1))
        if coords[dim] > 0:
            out.append(port_index(dim, -1))
    return tuple(sorted(out))


class ExchangeRouter:
    """One node's Phase-2 queues: route, prioritise, and send one packet per port per step."""

    __slots__ = ("coords", "p", "node", "queues")

    def __init__(self, coords: tuple[int, int], p: int, node: int) -> None:
        self.coords = coords
        self.p = p
        self.node = node
        self.queues = ClassQueues(array_ports(coords, p), classes=2)

    @property
    def held(self) -> int:
        """Packets waiting at this node."""
        return self.queues.held

    def _dest(self, v: int) -> tuple[int, int]:
        return v % self.p, v // self.p

    def _queue(self, packet: Packet) -> None:
        hop = next_hop(self.coords, self._dest(packet[1]), packet[2])
        assert hop is not None, f"node {self.node}: packet {packet} has arrived and cannot be queued"
        self.queues.add(packet, [(port_index(*hop), priority(hop[0], packet[2]))])

    def inject(self, cls: int, dests: Iterable[int]) -> None:
        """Queue this active node's personalised packets (one per destination, in order)."""
        dim = first_leg_dim(cls)
        for v in dests:
            leg_end = 0 if self._dest(v)[dim] == self.coords[dim] else -1
            self._queue((self.node, v, cls, 0, leg_end))

    def receive(self, packet: Packet, step: int) -> Packet | None:
        """Take a packet that arrived at the start of Phase-2 step ``step``.

        Returns:
            The packet (with its first-leg step filled in) if it is for this node,
            else None (it was queued towards its destination).
        """
        origin, dest, cls, hops, leg_end = packet
        if leg_end < 0 and self._dest(dest)[first_leg_dim(cls)] == self.coords[first_leg_dim(cls)]:
            packet = (origin, dest, cls, hops, step)
        if dest == self.node:
            return packet
        self._queue(packet)
        return None

    def transmit(self, ports: Iterable[int] | None = None) -> list[tuple[int, Packet]]:
        """Rule b): the head packet of every busy port (of ``ports``, the ones free to send;
        None: all), its hop count advanced."""
        out = []
        q = self.queues
        for port in list(q.busy() if ports is None else ports):
            o, v, c, h, leg = q.pop(port)
            out.append((port, (o, v, c, h + 1, leg)))
        return out

    def items(self) -> list[tuple[int, int]]:
        """(origin, dest) of every packet waiting here."""
        return sorted(self.queues.items())


@dataclass(frozen=True)
class ExchangeOutcome:
    """What the reference run of §5 measured (times in the paper's units).

    Attributes:
        phase1_time: the row and column prefix, ``2 floor(p/2) t_p``.
        completion_time: the last delivery (phase1_time when nothing is sent).
        first_leg_time: Phase-2 time until every packet finished its first leg.
        delivered: personalised packets delivered; duplicates: delivered twice.
        all_shortest: every packet took ``|di| + |dj|`` hops.
        r_size, c_size: |R| and |C|; max_r_per_row, max_c_per_column: Lemma 3's counts.
    """

    phase1_time: float
    completion_time: float
    first_leg_time: int
    delivered: int
    duplicates: int
    all_shortest: bool
    r_size: int
    c_size: int
    max_r_per_row: int
    max_c_per_column: int


def simulate_exchange(active: Iterable[int], p: int, tp: float) -> ExchangeOutcome:
    """Run the §5 algorithm step by step, without the network, on a p x p array.

    Phase 1 is taken as its schedule length (the line prefix is checked on its own in
    ``_prefix``); row and column sums are counted directly.

    Raises:
        ValueError: on a bad active set or p < 2.
    """
    if p < 2:
        raise ValueError(f"p must be >= 2, got {p}")
    n = p * p
    given = list(active)
    ids = sorted(set(given))
    if len(ids) != len(given):
        raise ValueError("active node ids must be distinct")
    for v in ids:
        if not 0 <= v < n:
            raise ValueError(f"active node id {v} outside 0..{n - 1}")
    rows = [0] * p
    cols = [0] * p
    for v in ids:
        rows[v // p] += 1
        cols[v % p] += 1
    routers = [ExchangeRouter((v % p, v // p), p, v) for v in range(n)]
    classes = {v: exchange_class(rows[v // p], cols[v % p]) for v in ids}
    for v in ids:
        routers[v].inject(classes[v], [u for u in range(n) if u != v])
    seen: set[tuple[int, int]] = set()
    duplicates = 0
    shortest = True
    leg = 0
    step = 0
    stride = {0: 1, 1: -1, 2: p, 3: -p}
    busy = [r for r in routers if r.held]
    while busy:
        moves = [(r.node + stride[port], pkt) for r in busy for port, pkt in r.transmit()]
        step += 1
        for u, pkt in moves:
            got = routers[u].receive(pkt, step)
            if got is None:
                continue
            key = (got[0], got[1])
            duplicates += key in seen
            seen.add(key)
            o = got[0]
            shortest &= got[3] == abs(o % p - u % p) + abs(o // p - u // p)
            leg = max(leg, got[4])
        busy = [r for r in routers if r.held]
    phase1 = line_scan_steps(p) * tp
    r_rows = [0] * p
    c_cols = [0] * p
    for v, c in classes.items():
        if c == R_SET:
            r_rows[v // p] += 1
        else:
            c_cols[v % p] += 1
    return ExchangeOutcome(
        phase1_time=phase1,
        completion_time=phase1 + step,
        first_leg_time=leg,
        delivered=len(seen),
        duplicates=duplicates,
        all_shortest=shortest,
        r_size=sum(r_rows),
        c_size=sum(c_cols),
        max_r_per_row=max(r_rows),
        max_c_per_column=max(c_cols),
    )
