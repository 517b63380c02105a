"""A generic unicast reporter: delay, hops, throughput, queues and conservation.

Nodes record three events:

* ``born(count)`` — packets created at this node in this slot;
* ``delivered(birth, hops, source, seq, dest)`` — a packet reached its destination (read
  from the inbox in this slot, i.e. it arrived at time ``slot``); its delay is
  ``slot - birth``; ``(source, seq)`` names it and ``dest`` is the destination it carries;
* ``queue(q)`` — packets this node holds after its step (for Q and the backlog).

From the packet's identity the kit's :class:`~._checks.PathCheck` checks every delivery:
``delivered_at_destination``, ``hops_within_bounds`` (distance <= hops <= slots lived, with
the distance's parity on a bipartite topology) and, where the scheme declares shortest
paths (``shortest_paths=True``), ``shortest_paths``. A node that records only ``(birth,
hops)`` gets conservation and the metrics, not these checks.

A scheme that declares :attr:`~slotnet.schemes.Scheme.follow` builds the reporter with
``follow=True``: the orchestrator then reports every send of a unicast (``hop`` events,
:data:`~._checks.HOP_EVENTS`) and the kit's :class:`~._checks.HopWitness` counts them,
checking the hops each delivery reports (``hops_witnessed``) and, with ``route=``, the
route shape the scheme declares (``declared_route``).

Conservation (every packet delivered, in flight, held or lost by a recorded cause) is
checked at the end against the transport's in-flight list, the nodes' holdings and the
fault ledger. Packets born in the measured window (slots ``warmup`` .. the last slot run)
are measured, and time averages are taken over the slots actually run after the warm-up;
a run stopped before its warm-up ended measured nothing and reports None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._base import HOP_EVENT, PacketBook, Setup
from ._checks import HOP_EVENTS, HopWitness, PathCheck, ShardHops
from ._reporter import BaseReporter, split_dup, sum_columns
from ._stats import BatchMeans

__all__ = ["UNICAST_EVENTS", "UnicastReporter"]

UNICAST_EVENTS: Mapping[str, tuple[str, ...]] = {"born": ("count",), "delivered": ("birth", "hops", "source", "seq", "dest"),
                                                 "queue": ("q",)}


class UnicastReporter(BaseReporter):
    """Streaming unicast metrics; every sum but the delay is an integer.

    ``shortest_paths``: the scheme declares that every packet takes a shortest path (STAR's
    unicasts, dimension-order routing), which :attr:`paths` then checks at every delivery.
    """

    events = UNICAST_EVENTS

    def __init__(self, setup: Setup, *, shortest_paths: bool = False, follow: bool = False,
                 route: str | None = None) -> None:
        super().__init__(setup)
        faults = bool(getattr(setup, "faults", False))
        #: the kit's checks of every delivery (destination, hop bounds, shortest paths)
        self.paths = PathCheck(setup.topology, shortest=shortest_paths, faults=faults)
        #: the observer's own hop count of every unicast (the scheme declares ``follow``), or None
        self.witness = HopWitness(setup.topology, route, faults) if follow else None
        if follow:
            self.events = {**UNICAST_EVENTS, **HOP_EVENTS}
        n = setup.topology.n_nodes
        self.n_nodes = n
        self.warmup, self.slots = setup.warmup, setup.slots
        self.born_total = self.delivered_total = 0
        self.measured = 0
        self.delay_sum = 0.0
        self.hops_sum = 0
        self.delays = BatchMeans(self.warmup, self.slots)
        self.node_queue = [0] * n
        self.node_delivered = [0] * n
        self.q_total = 0
        self.q_area = 0
        self.q_slots = 0
        self.max_q = 0
        self.last_slot = -1
        self._done: list[tuple[float, float, int]] = []

    def handlers(self) -> Mapping[str, Any]:
        out = {"born": self.born, "delivered": self.delivered, "queue": self.queue}
        if self.witness is not None:
            out[HOP_EVENT] = self.witness.hop
        return out

    def born(self, node: int, slot: int, count: int) -> None:
        self.born_total += count

    def delivered(self, node: int, slot: int, birth: float, hops: int, source: int | None = None,
                  seq: int | None = None, dest: int | None = None) -> None:
        if source is not None and dest is not None:
            self.paths.delivered(node, slot, birth, hops, (source, seq), source, dest)
            if self.witness is not None and seq is not None:
                self.witness.delivered(node, slot, source, seq, hops)
        self.delivered_total += 1
        self.node_delivered[node] += 1
        if birth >= self.warmup:
            self._done.append((birth, slot - birth, hops))

    def queue(self, node: int, slot: int, q: int) -> None:
        self.q_total += q - self.node_queue[node]
        self.node_queue[node] = q
        if slot >= self.warmup and q > self.max_q:
            self.max_q = q

    def end_slot(self, slot: int) -> None:
        self.last_slot = slot
        if self._done:  # summed in a fixed order: float sums never depend on task order
            self._done.sort()
            for birth, delay, hops in self._done:
                self.measured += 1
                self.delay_sum += delay
                self.hops_sum += hops
                self.delays.add(min(int(birth), self.slots - 1), delay)
            self._done.clear()
        if slot >= self.warmup:
            self.q_area += self.q_total
            self.q_slots += 1

    def backlog(self) -> int:
        return self.q_total

    # -- sharded runs: the methods of :class:`slotnet.schemes.ShardMerging`, for a reporter that
    # keeps one inside (STAR's); this class does not declare the merge itself ----------------
    def shard_start(self) -> None:
        """On a shard, before any event: the hop witness only counts the shard's sends
        (:class:`~._checks.ShardHops`).

        Raises:
            ValueError: the witness checks a declared route or FIFO order, which follows a
                packet send by send across shards and does not merge.
        """
        w = self.witness
        if w is not None:
            if w.route is not None or w.fifo is not None:
                raise ValueError("a declared route or FIFO order is checked send by send: it does not merge "
                                 "across shards")
            self.witness = ShardHops(self.setup.topology, w.faults)

    def shard_slot(self, slot: int) -> list[Any]:
        """The shard's queue sum and the slot's measured deliveries (each ``(birth, delay, hops)``:
        their delay sum is a float, added at the coordinator in the one-process order)."""
        out = [self.q_total, self._done]
        self._done = []
        return out

    def merge_slot(self, slot: int, summaries: Sequence[Any]) -> None:
        """The shards' :meth:`shard_slot`, before :meth:`end_slot` measures the deliveries."""
        self.q_total = sum(q for q, _ in summaries)
        self._done = [tuple(x) for _, done in summaries for x in done]

    def shard_state(self) -> dict[str, Any]:
        """The shard's counts, per-node figures and checks, as plain data."""
        return {**super().shard_state(), "counts": [self.born_total, self.delivered_total], "max_q": self.max_q,
                "per_node": [self.node_delivered, self.node_queue], "paths": self.paths.shard_state(),
                "witness": self.witness.shard_state() if isinstance(self.witness, ShardHops) else None}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The shards' :meth:`shard_state`, added up."""
        super().merge_shards(states)
        self.born_total, self.delivered_total = sum_columns([st["counts"] for st in states])
        self.max_q = max(self.max_q, *(st["max_q"] for st in states))
        self.node_delivered, self.node_queue = (sum_columns(cols) for cols in zip(*(st["per_node"] for st in states)))
        self.paths.merge_shards([st["paths"] for st in states])
        if self.witness is not None:
            self.witness.merge_shards([st["witness"] for st in states])

    def metrics(self) -> dict[str, Any]:
        m = self.measured
        return {
            "mean_delay": self.delay_sum / m if m else None,
            "mean_delay_ci95": self.delays.half_width(),
            "mean_hops": self.hops_sum / m if m else None,
            "mean_queue_per_node": self.q_area / (self.q_slots * self.n_nodes) if self.q_slots else None,
            "max_queue": self.max_q if self.q_slots else None,
            "packets_measured": m,
        }

    def per_node(self) -> dict[str, list[Any]]:
        return {"delivered": self.node_delivered, "queue_at_end": self.node_queue}

    def packet_books(self) -> Sequence[PacketBook]:
        """The unicasts' book: ``conservation``."""
        return (PacketBook("conservation", "unicast"),)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Every packet born is delivered, in flight, held, or lost by a recorded cause."""
        dropped, copies = split_dup(lost)  # copies a dup fault made: delivered or in flight too
        accounted = self.delivered_total + len(in_flight) + sum(held) + sum(dropped.values()) - copies
        out: dict[str, Any] = {"ok": accounted == self.born_total, "born": self.born_total,
                               "delivered": self.delivered_total, "in_flight": len(in_flight), "held": sum(held),
                               "lost": dropped}
        if accounted != self.born_total:  # > 0: missing, < 0: more than were born
            out["unaccounted"] = self.born_total - accounted
        if copies:
            out["dup_copies"] = copies
        if any(cause != "node_finished" for cause in lost):  # under faults: lost to a fault / in progress
            out["lost_to_faults"] = sum(n for cause, n in dropped.items() if cause != "node_finished")
            out["in_progress"] = len(in_flight) + sum(held)
        witnessed = self.witness.invariants() if self.witness is not None else {}
        return {"conservation": out, **self.paths.invariants(), **witnessed, **self.liveness.invariants()}
