"""``littles_law``: the queue a reporter measures is the residence its queue's stamps give.

Little's law on the sample path (L = λW with no expectation taken): over the slots
``0 .. T`` of a run, the queue lengths a node reports, summed over the slots, equal the
slots each packet spent in that queue, summed over the packets -- a packet queued in slot
``a`` (its entry stamp) and released in slot ``e`` (the slot of its last transmission from
the node) is in the queue in each of the slots ``a .. e``, so it adds ``e + 1 - a``; one
still queued after ``T`` adds ``T + 1 - a``. The equality holds at the end of every slot,
at every node, exactly: no correct run can trip it, so there is no statistical slack (the
run's confidence interval plays no part). Dividing both sides by the slots and the nodes
gives the law's usual form, mean queue = throughput x mean residence, which the result
prints beside the check (``mean_queue_per_node``, ``throughput_per_node``,
``mean_residence``).

Two witnesses, kept apart:

* the **count**: the queue length the node reports in its ``step`` event (the ``Q`` of
  Stamoulis & Tsitsiklis §4.3.3: every packet the node still has to forward on at least
  one port, one unit however many ports, a packet about to be sent included), summed by
  the observer (:meth:`LittlesLaw.queue`; a node that does not step keeps its last count);
* the **stamps**: the node's :class:`Residence` ledger, kept by the queue from each
  record's entry stamp and the slot the record is released, and recorded as a
  ``residence(served, released, held, stamps)`` event (:data:`RESIDENCE_EVENTS`) whenever
  it changed: ``served`` the slots spent by the ``released`` packets that left so far,
  ``held`` the packets still queued, ``stamps`` the sum of their entry stamps. At the end of slot ``s`` the
  stamps give ``served + held * (s + 1) - stamps`` packet-slots.

The kit's queues (:mod:`._queues`) keep the ledger for every node that ends its steps
with :meth:`~._broadcast_node.BroadcastNode.forward_heads`: their records are stamped with
the slot they are queued in. A queue of a scheme's own keeps a :class:`Residence` beside
its stamps: STAR's queueing slot (from which its per-hop wait W is measured), the slot a
packet joined Q under Rules A-F (bcast-indirect), was scheduled (bcast-periodic) or was
born (dynamic-broadcast). A stamp
that does not tell when a packet was queued (a later slot), a queue that under- or
over-counts, or a node that reports a queue other than the one it serves breaks the
equality; :class:`LittlesLaw` names the first node and slot where the two differ, with
both totals.

Under faults the check stands down (it reports the totals, ``ok`` true, ``judged``
false): a crash destroys a queue whose packets' residences are then unknown, and a
restarted node starts a new ledger. A run whose nodes record no ledger is not judged
either (``judged`` false, with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from slotnet.nodes import NodeContext

from ._checks import Book

__all__ = ["RESIDENCE_EVENTS", "LittlesLaw", "Residence"]

#: The event a node's :class:`Residence` records (the trace schema).
RESIDENCE_EVENTS: Mapping[str, tuple[str, ...]] = {"residence": ("served", "released", "held", "stamps")}


class Residence:
    """Node side: the ledger of a queue's entry stamps (see the module docstring).

    Example:
        >>> r = Residence()
        >>> r.entered(3); r.entered(4); r.left(5, 3)
        >>> r.served, r.released, r.held, r.stamps   # slots 3, 4, 5 served; one packet queued since 4
        (3, 1, 1, 4)
    """

    __slots__ = ("served", "released", "held", "stamps", "_said")

    def __init__(self) -> None:
        self.served = 0
        self.released = 0
        self.held = 0
        self.stamps = 0
        self._said = (0, 0, 0, 0)

    def entered(self, slot: int) -> None:
        """A packet was queued, stamped ``slot``."""
        self.held += 1
        self.stamps += slot

    def left(self, slot: int, entry: int) -> None:
        """The packet stamped ``entry`` left the queue in ``slot`` (its last transmission)."""
        self.held -= 1
        self.stamps -= entry
        self.served += slot + 1 - entry
        self.released += 1

    def record(self, ctx: NodeContext) -> None:
        """Record the ``residence`` event if the ledger changed since it last did."""
        state = (self.served, self.released, self.held, self.stamps)
        if state != self._said:
            self._said = state
            ctx.record("residence", *state)


class LittlesLaw:
    """Observer side: the reported queue lengths against the nodes' :class:`Residence` ledgers.

    Args:
        n: the number of nodes.
        faults: the run has faults (the check then reports, but does not judge).
        queue: what the queue holds, for the messages (e.g. "packets still to forward").
    """

    def __init__(self, n: int, faults: bool = False, queue: str = "packets still to forward") -> None:
        self.judged = not faults
        self.what = queue
        self.area = [0] * n  # per node: reported queue lengths summed over its slots up to ``last``
        self.last = [-1] * n  # per node: the last slot it reported a queue length
        self.after = [0] * n  # per node: its queue after that slot (kept while it does not step)
        self.ledgers: list[tuple[int, int, int, int] | None] = [None] * n  # per node: the residence event
        self.broken = [False] * n  # per node: its books already broke (named once)
        self.touched: list[int] = []
        self.book = Book()
        self.last_slot = -1

    def queue(self, node: int, slot: int, q_start: int, q_after: int) -> None:
        """``node`` reported ``q_start`` packets queued in ``slot`` (``q_after`` after its sends)."""
        gap = slot - self.last[node] - 1
        if gap > 0:
            self.area[node] += gap * self.after[node]
        self.area[node] += q_start
        self.last[node] = slot
        self.after[node] = q_after

    def residence(self, node: int, slot: int, served: int, released: int, held: int, stamps: int) -> None:
        """The ``residence`` event: ``node``'s ledger after ``slot``."""
        self.touched.append(node)
        self.ledgers[node] = (served, released, held, stamps)

    def _area(self, node: int, slot: int) -> int:
        """``node``'s reported queue lengths summed over the slots up to ``slot``."""
        return self.area[node] + max(0, slot - self.last[node]) * self.after[node]

    @staticmethod
    def _waits(ledger: tuple[int, int, int, int] | None, slot: int) -> int:
        """The packet-slots a ledger's stamps give up to the end of ``slot``."""
        if ledger is None:
            return 0
        served, _released, held, stamps = ledger
        return served + held * (slot + 1) - stamps

    def _judge(self, node: int, slot: int) -> None:
        if self.broken[node]:
            return
        area, waits = self._area(node, slot), self._waits(self.ledgers[node], slot)
        if area != waits:
            self.broken[node] = True
            self.book.add(slot, node, (), f"node {node} reported its queue ({self.what}) at {area} packet-slots over "
                                          f"slots 0..{slot}, but its queue's entry stamps add up to {waits} slots "
                                          f"of residence (Little's law on the sample path: the two are equal)")

    def end_slot(self, slot: int) -> None:
        """Judge the nodes whose ledger changed in ``slot``."""
        self.last_slot = slot
        if self.touched:
            if self.judged:
                for node in self.touched:
                    self._judge(node, slot)
            self.touched.clear()

    def shard_state(self) -> dict[str, Any]:
        """What a shard's nodes reported, as plain data (:meth:`merge_shards`); the shard judged
        its nodes each slot (:meth:`end_slot`), as one process does."""
        return {"area": self.area, "last": self.last, "after": self.after, "ledgers": self.ledgers,
                "broken": self.broken, "book": self.book.shard_state()}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """Take each node's books from the shard that hosts it (another shard's are untouched:
        zero, -1, None, False), and add the shards' violations up."""
        for st in states:
            for v, led in enumerate(st["ledgers"]):
                if led is not None:
                    self.ledgers[v] = tuple(led)
            for v, last in enumerate(st["last"]):
                if last > self.last[v]:
                    self.last[v] = last
            for v, (area, after, broken) in enumerate(zip(st["area"], st["after"], st["broken"])):
                self.area[v] += area
                self.after[v] += after
                self.broken[v] = self.broken[v] or broken
        self.book.merge_shards([st["book"] for st in states])

    def invariants(self) -> dict[str, Any]:
        """``littles_law``: the check's result (judged at the end for every node too)."""
        end = self.last_slot
        n = len(self.area)
        recorded = [v for v in range(n) if self.ledgers[v] is not None]
        area = sum(self._area(v, end) for v in range(n))
        waits = sum(self._waits(self.ledgers[v], end) for v in range(n))
        if self.judged and recorded:
            for v in range(n):
                self._judge(v, end)
        self.book.checked = len(recorded)
        out = self.book.result(ok=self.book.count == 0 or not self.judged or not recorded,
                               queue_area=area, waits=waits)
        if end >= 0 and n:
            served = sum(led[0] for led in self.ledgers if led is not None)
            released = sum(led[1] for led in self.ledgers if led is not None)
            out["mean_queue_per_node"] = area / (n * (end + 1))
            out["throughput_per_node"] = released / (n * (end + 1))
            out["mean_residence"] = served / released if released else None
        out["judged"] = self.judged and bool(recorded)
        if not self.judged:
            out["why"] = "faults: a crash destroys queued packets and a restart starts a new ledger"
        elif not recorded:
            out["why"] = "no node recorded a residence ledger (its queue keeps no entry stamps)"
        if not out["ok"]:
            out["problem"] = (f"the queues held {area} packet-slots over the {end + 1} slots run, but the entry "
                              f"stamps add up to {waits} slots of residence (Little's law: the two are equal); "
                              f"first: {out['first']['problem']}")
        return out
