"""Port-keyed packet queues a node keeps for its out-ports.

Three disciplines share one record model: a packet record is ``[message, ports_left,
entry]``, queued on every port it still has to cross, ``entry`` the slot it was queued in
(the queue's :attr:`~_Base.now`); the node's backlog (``held``, the Q of the
broadcast papers) counts records with ``ports_left > 0`` once, however many ports each
still needs. Queues exist only for the ports a node has (a mesh boundary node has
fewer), and are visited in increasing port index. A FIFO is a list (an empty one takes 56
bytes, a deque 760, and a node keeps one per port and class; the few packets a port holds
make ``pop(0)`` cheap).

* :class:`PortQueues` — one FIFO per port.
* :class:`ClassQueues` — priority classes per port: class 0 first, FIFO within a class.
* :class:`LabelQueues` — per-port heaps ordered by a key (e.g. a label and a slot); given
  the scheme's declared order (:class:`~._checks.ServiceOrder`), every packet it serves is
  checked against the one it would serve next.

Once a node starts its queue's ledger (:meth:`_Base.start_ledger`; the kit's
:meth:`~._broadcast_node.BroadcastNode.forward_heads` does, and keeps :attr:`~_Base.now`
at the current slot), every packet queued and every packet released is entered in a
:class:`~._little.Residence`: the stamps the ``littles_law`` check holds against the
queue the node reports (:mod:`._little`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ._little import Residence

if TYPE_CHECKING:
    from ._checks import ServiceOrder

__all__ = ["ClassQueues", "LabelQueues", "PortQueues", "port_indices"]


def port_indices(ports: int | Iterable[Any]) -> tuple[int, ...]:
    """Port indices from a count (``0..n-1``), ints, or port records with ``.index``."""
    if isinstance(ports, int):
        return tuple(range(ports))
    return tuple(sorted(p if isinstance(p, int) else p.index for p in ports))


class _Base:
    __slots__ = ("ports", "queues", "held", "now", "ledger")

    def __init__(self, ports: int | Iterable[Any]) -> None:
        self.ports = port_indices(ports)
        self.queues: list[Any] = [None] * (max(self.ports) + 1 if self.ports else 0)
        self.held = 0
        #: the slot new records are stamped with (kept current by the node once its ledger runs)
        self.now = 0
        #: the residence ledger of the queue's stamps (None until :meth:`start_ledger`)
        self.ledger: Residence | None = None

    def _records(self) -> Iterator[list[Any]]:
        """Every queued record, once per port it waits on."""
        raise NotImplementedError

    def items(self) -> list[tuple[int, int]]:
        """(origin, seq) — the first two fields — of every packet still to forward, once per
        record: a packet queued on several ports is one packet, while two copies of one
        packet (a dup fault's) are two."""
        seen: set[int] = set()
        out: list[tuple[int, int]] = []
        for r in self._records():
            if id(r) not in seen:
                seen.add(id(r))
                out.append((r[0][0], r[0][1]))
        return out

    def start_ledger(self, slot: int) -> Residence:
        """Start the queue's :class:`~._little.Residence` in ``slot``: the packets already
        queued (in this, the node's first step) are stamped ``slot``."""
        ledger = self.ledger = Residence()
        self.now = slot
        seen: set[int] = set()
        for rec in self._records():
            if id(rec) not in seen:
                seen.add(id(rec))
                rec[2] = slot
                ledger.entered(slot)
        return ledger

    def _entered(self, rec: list[Any]) -> None:
        self.held += 1
        if self.ledger is not None:
            self.ledger.entered(rec[2])

    def busy(self) -> Iterator[int]:
        """Ports with a packet waiting, in increasing index."""
        queues = self.queues
        return (p for p in self.ports if queues[p])

    def _release(self, rec: list[Any]) -> Any:
        rec[1] -= 1
        if rec[1] == 0:
            self.held -= 1
            if self.ledger is not None:
                self.ledger.left(self.now, rec[2])
        return rec[0]


class PortQueues(_Base):
    """Per-port FIFO queues.

    Example:
        >>> q = PortQueues([0, 2])
        >>> q.add(("a", 1), [0, 2]); q.add(("b", 2), [2])
        >>> q.held, q.pop(2), q.pop(2), q.held
        (2, ('a', 1), ('b', 2), 1)
    """

    __slots__ = ()

    def __init__(self, ports: int | Iterable[Any]) -> None:
        super().__init__(ports)
        for p in self.ports:
            self.queues[p] = []

    def add(self, message: Any, ports: Iterable[int]) -> None:
        """Queue ``message`` on each of ``ports``."""
        rec = [message, 0, self.now]
        for p in ports:
            self.queues[p].append(rec)
            rec[1] += 1
        if rec[1]:
            self._entered(rec)

    def pop(self, port: int) -> Any:
        """The head packet of ``port``'s queue (its record is released when done)."""
        return self._release(self.queues[port].pop(0))

    def _records(self) -> Iterator[list[Any]]:
        return (r for p in self.ports for r in self.queues[p])


class ClassQueues(_Base):
    """Per-port priority classes: class 0 is served first, FIFO within a class.

    ``order``: the service order the scheme declares (from the message and the port, e.g.
    §3.2's classes of STAR), checked at every :meth:`pop` against the head of every class
    still waiting on the port (:meth:`check_served`).

    Example:
        >>> q = ClassQueues(2, classes=2)
        >>> q.add(("low", 1), [(0, 1)]); q.add(("high", 2), [(0, 0)])
        >>> q.pop(0), q.pop(0)
        (('high', 2), ('low', 1))
    """

    __slots__ = ("classes", "waiting", "order")

    def __init__(self, ports: int | Iterable[Any], classes: int = 2, order: ServiceOrder | None = None) -> None:
        super().__init__(ports)
        if classes < 1:
            raise ValueError(f"need at least one class, got {classes}")
        self.classes = classes
        self.waiting = [0] * len(self.queues)  # packets queued per port, all classes
        for p in self.ports:
            self.queues[p] = [[] for _ in range(classes)]
        self.order = order

    def check_served(self, port: int, message: Any) -> None:
        """Check ``message``, just served on ``port``, against the head of each class left there."""
        order = self.order
        assert order is not None
        for q in self.queues[port]:
            if q and not order.served(port, message, q[0][0]):
                return

    def add(self, message: Any, plan: Iterable[tuple[int, int]]) -> None:
        """Queue ``message`` on each ``(port, class)`` of ``plan``."""
        rec = [message, 0, self.now]
        for p, c in plan:
            self.queues[p][c].append(rec)
            self.waiting[p] += 1
            rec[1] += 1
        if rec[1]:
            self._entered(rec)

    def busy(self) -> Iterator[int]:
        waiting = self.waiting
        return (p for p in self.ports if waiting[p])

    def pop(self, port: int) -> Any:
        """The oldest packet of the highest-priority non-empty class on ``port``."""
        for q in self.queues[port]:
            if q:
                self.waiting[port] -= 1
                message = self._release(q.pop(0))
                if self.order is not None:
                    self.check_served(port, message)
                return message
        raise IndexError(f"port {port} has nothing queued")

    def _records(self) -> Iterator[list[Any]]:
        return (r for p in self.ports for q in self.queues[p] for r in q)


class LabelQueues(_Base):
    """Per-port heaps of packets ordered by a key, e.g. ``(label, slot_in_period)``.

    Keys of distinct packets wanting one port should be distinct; an insertion counter
    still closes the order so that it never falls back on comparing messages.

    ``order``: the service order the scheme declares (e.g. smallest label first, from the
    message itself), checked at every :meth:`pop` against the packet the heap serves next.
    """

    __slots__ = ("_count", "order")

    def __init__(self, ports: int | Iterable[Any], order: ServiceOrder | None = None) -> None:
        super().__init__(ports)
        for p in self.ports:
            self.queues[p] = []
        self._count = 0
        self.order = order

    def add(self, message: Any, label: int, plan: Iterable[tuple[int, int]]) -> None:
        """Queue ``message`` of ``label`` on each ``(port, slot_in_period)`` of ``plan``."""
        rec = [message, 0, self.now]
        queues = self.queues
        for port, slot in plan:
            self._count += 1
            heapq.heappush(queues[port], (label, slot, self._count, rec))
            rec[1] += 1
        if rec[1]:
            self._entered(rec)

    def pop(self, port: int) -> Any:
        """The waiting packet of smallest key on ``port`` (its record is released when done)."""
        heap = self.queues[port]
        rec = heapq.heappop(heap)[3]
        if self.order is not None:
            self.order.served(port, rec[0], heap[0][3][0] if heap else None)
        return self._release(rec)

    def _records(self) -> Iterator[list[Any]]:
        return (e[3] for p in self.ports for e in self.queues[p])
