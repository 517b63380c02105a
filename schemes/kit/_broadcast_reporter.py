"""The broadcast reporter: streaming metrics of a broadcast run (Stamoulis & Tsitsiklis definitions).

Topology-agnostic (it uses only the node count): any scheme whose nodes record the
``step`` event of :data:`STEP_FIELDS` gets D, the reception delay, Q, M and exactly-once.

* ``mean_broadcast_delay`` D (§1, §3.2): birth time τ to the end of the slot in which the
  last node received the packet. A message read from the inbox in slot s arrived at the
  end of slot s−1, i.e. at time s, so D = (last reception slot) − τ.
* ``mean_reception_delay``: per packet, the mean over the 2^d − 1 receiving nodes of
  (reception time − τ), averaged over packets.
* ``mean_queue_per_node`` Q (§4.3.3): time average over slots and nodes of the number of
  packets a node still has to forward on at least one port (one unit however many
  ports; a packet about to be transmitted in the slot counts).
* ``max_queue`` M: the largest such count at any node in any measured slot.

Packets born in the measured window (slots ``warmup`` .. the last slot run) that complete
before the run ends are measured; those still incomplete at the end are counted
(``incomplete_at_end``). A run stopped before its warm-up ended measured nothing: every
metric is then None. Per-slot values are kept only when the run asks for its series
(``RunSpec(series=True)``, ``--series``); the metrics need only running sums. Every reception is
checked against the packet's receiver set: a second reception of one packet at one node
is a violation of the exactly-once invariant -- unless a ``dup`` fault copied that packet
(the transport reports each copy through ``on_lost`` with cause ``dup``): duplicates of
copied packets are reported apart (``duplicates_from_dup_faults``) and are no scheme bug.

The kit's checks (:mod:`._checks`) come with it: ``birth_stamps`` (every birth time in
``(t-1, t]`` for the slot ``t`` that records it, under faults only ``<= t``; no broadcast
completes sooner than its origin's eccentricity after its first slot), ``birth_epochs``
(the stamps spread uniformly over their slots, as Poisson epochs do), ``liveness`` (no
message reaches a stopped node in a fault-free run; such losses, ``node_finished``, are
never taken for a fault's) and ``service_order`` (the ``disorder`` events of a node whose
queue broke the service order its scheme declares, :class:`~._checks.ServiceOrder`) and
``littles_law`` (:mod:`._little`: Q summed over the slots run equals the residence the
nodes' queue stamps give, exactly, at every node; kept by the kit's queues for every node
that ends its steps with ``forward_heads``).

In a sharded run the reporter merges (:class:`slotnet.schemes.ShardMerging`): each shard keeps
the books of every packet its nodes bore or received until the end of the run (it cannot
tell when a packet's other receivers, on other shards, have it), and the coordinator finds
which broadcasts completed, and when, as it merges them (:meth:`BroadcastReporter.merge_shards`).

Under faults the check also reports how much the faults cost: broadcasts completed, lost to
a fault (incomplete, with no copy left on its way: ``missed``, each with the nodes it never
reached -- the subtree a tree broadcast lost) and still in progress at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .._base import PacketBook, Setup
from ._checks import CHECK_EVENTS, BirthCheck, OrderCheck
from ._little import RESIDENCE_EVENTS, LittlesLaw
from ._reporter import BaseReporter, sum_columns
from ._stats import BatchMeans, WindowBatches
from ._wire import int_from_wire, int_to_wire

__all__ = ["STEP_FIELDS", "BroadcastReporter", "StepEvent"]


class StepEvent(NamedTuple):
    """The ``step`` event a broadcast node records once per slot it is awake."""

    births: Any     # ((seq, tau), ...) packets born here that became sendable this slot
    received: Any   # ((origin, seq), ...) first receptions of other nodes' packets
    q_start: int    # packets still to forward at the start of the slot (Q's unit)
    q_after: int    # ... and after this slot's transmissions


#: The ``step`` event's field names, in order (the trace schema).
STEP_FIELDS = StepEvent._fields


class BroadcastReporter(BaseReporter):
    """Consumes ``step`` events; keeps only packets that are still incomplete."""

    events: Mapping[str, tuple[str, ...]] = {"step": STEP_FIELDS, **CHECK_EVENTS, **RESIDENCE_EVENTS}
    #: sharded, each shard keeps the books of its own nodes' births and receptions; per slot
    #: only the queue sums cross (:meth:`shard_slot`), the packets' books at the end, where
    #: the coordinator finds which broadcasts completed, and when (:meth:`merge_shards`)
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        n = setup.topology.n_nodes
        self.n_nodes = n
        self.receivers = n - 1
        self.warmup, self.slots = setup.warmup, setup.slots
        self.live: dict[tuple[int, int], list[Any]] = {}  # key -> [tau, count, last, sum, mask]
        self.born_total = 0
        self.completed_total = 0
        self.duplicates: list[tuple[int, int, int, int]] = []  # (slot, node, origin, seq)
        self.unknown: list[tuple[int, int, int, int]] = []
        #: second receptions of a packet a dup fault had already copied when they came:
        #: counted, not listed (a run under dup faults would keep a tuple for each)
        self.excused = 0
        self.d_batches = BatchMeans(self.warmup, self.slots)
        self.r_sum = 0.0
        self.measured = 0
        self.d_sum = 0.0
        self.q_node = [0] * n
        self.q_cur = 0
        self.q_cur_start = 0
        self.q_adj = 0
        self.q_sum = 0
        self.q_slots = 0
        self.q_batches = WindowBatches(self.warmup, self.slots)
        self.keep_series = setup.series
        self.q_series: list[int] = []  # per measured slot, only when the series is asked for
        self.last_slot = -1
        self.max_q = 0
        self.max_q_node = -1
        self.max_q_slot = -1
        self.node_births = [0] * n
        self.node_received = [0] * n
        self.node_max_q = [0] * n
        self._holdings: Sequence[Any] = []
        self._done: list[tuple[tuple[int, int], float, int, int]] = []  # this slot's completions
        self.lost_copies = 0
        self.copied: set[tuple[Any, Any]] = set()  # packets a dup fault copied
        #: per origin, the last sequence number born there: names must grow, across restarts too
        self.last_seq: list[int] = [-1] * n
        self.reused: list[tuple[int, int, int]] = []  # (slot, origin, seq) born under a name already used
        self.stamps = BirthCheck(setup.topology, bool(getattr(setup, "faults", False)))
        self.order = OrderCheck()
        #: Q against the residence the queues' stamps give (Little's law on the sample path)
        self.little = LittlesLaw(n, bool(getattr(setup, "faults", False)))
        #: on a shard (:meth:`shard_start`): the nodes it hosts, else None
        self.shard_nodes: range | None = None

    def handlers(self) -> Mapping[str, Any]:
        return {"step": self.step, "residence": self.little.residence, **self.order.handlers()}

    def step(self, node: int, slot: int, births: Any, received: Any, q_start: int, q_after: int) -> None:
        live = self.live
        self._born(node, slot, births, ())
        bit = 1 << node
        for key in received:
            rec = live.get(key)
            if rec is None:
                self._again(self.unknown, slot, node, key)
                continue
            if rec[4] & bit:
                self._again(self.duplicates, slot, node, key)
                continue
            rec[4] |= bit
            rec[1] += 1
            rec[2] = slot
            rec[3] += slot
            if rec[1] == self.receivers:
                self._complete(key, rec)
        self._queues(node, slot, len(received), q_start, q_after)

    def _shard_step(self, node: int, slot: int, births: Any, received: Any, q_start: int, q_after: int) -> None:
        """:meth:`step` on a shard: a packet's books stay open (its other receivers are other
        shards'), and a reception of a packet born elsewhere opens them here. A record is
        ``[tau or None (born elsewhere), receptions, last reception slot, sum of their slots,
        receivers' bits, the highest node that received it in that last slot]``."""
        live = self.live
        self._born(node, slot, births, (-1,))  # and the highest node that received it in its last slot
        bit = 1 << node
        for key in received:
            rec = live.get(key)
            if rec is None:
                rec = live[key] = [None, 0, 0, 0, 0, -1]
            if rec[4] & bit:
                self._again(self.duplicates, slot, node, key)
                continue
            rec[4] |= bit
            if rec[1] == 0 or rec[2] != slot or node > rec[5]:
                rec[5] = node
            rec[1] += 1
            rec[2] = slot
            rec[3] += slot
        self._queues(node, slot, len(received), q_start, q_after)

    def _again(self, seen: list[tuple[int, int, int, int]], slot: int, node: int, key: tuple[int, int]) -> None:
        """A reception that is not a packet's first at ``node`` (``seen``: the duplicates or the
        unknown packets): counted where a dup fault had already copied the packet, else kept."""
        if key in self.copied:
            self.excused += 1
        else:
            seen.append((slot, node, key[0], key[1]))

    def _born(self, node: int, slot: int, births: Any, more: tuple[int, ...]) -> None:
        """Open the books of ``node``'s ``births`` in ``slot``: each a record ``[tau, receptions,
        last reception slot, sum of their slots, receivers' bits, *more]``."""
        live = self.live
        if births:
            stamps = self.stamps
            stamps.offsets += len(births)
            base = slot - 1  # offsets in 2**-32 units: an integer sum, the same in any event order
            stamps.offset_sum += sum(int((tau - base) * 4294967296.0) for _, tau in births)
        for seq, tau in births:
            if not slot - 1 < tau <= slot:  # the check's fast path; the rest is BirthCheck's
                self.stamps.born(node, slot, (node, seq), tau)
            if seq <= self.last_seq[node]:
                self.reused.append((slot, node, seq))
                continue  # the packet that holds the name keeps its books
            self.last_seq[node] = seq
            live[(node, seq)] = [tau, 0, 0, 0, 1 << node, *more]
        self.born_total += len(births)  # reused names included: they cannot close
        self.node_births[node] += len(births)

    def _queues(self, node: int, slot: int, received: int, q_start: int, q_after: int) -> None:
        """The books of ``node``'s step in ``slot`` past its packets: receptions, queue sums and maxima."""
        self.node_received[node] += received
        self.little.queue(node, slot, q_start, q_after)
        prev = self.q_node[node]
        self.q_adj += q_start - prev
        self.q_cur += q_after - prev
        self.q_node[node] = q_after
        if slot >= self.warmup and q_start > self.max_q:
            self.max_q, self.max_q_node, self.max_q_slot = q_start, node, slot
        if q_start > self.node_max_q[node]:
            self.node_max_q[node] = q_start

    def _complete(self, key: tuple[int, int], rec: list[Any]) -> None:
        del self.live[key]
        self.completed_total += 1
        self.stamps.completed(key[0], key, rec[0], rec[2])
        if rec[0] >= self.warmup:
            self._done.append((key, rec[0], rec[2], rec[3]))

    def _account_completions(self) -> None:
        for _, tau, last, total in sorted(self._done):
            self._measure(tau, last, total)
        self._done.clear()

    def _measure(self, tau: float, last: int, total: int) -> None:
        """A broadcast born at ``tau`` and measured: its last copy read in slot ``last``, the
        slots of its receptions summing to ``total``."""
        delay = last - tau
        self.measured += 1
        self.d_sum += delay
        self.r_sum += total / self.receivers - tau
        self.d_batches.add(min(int(tau), self.slots - 1), delay)

    def end_slot(self, slot: int) -> None:
        self._account_completions()
        self.little.end_slot(slot)
        self.last_slot = slot
        q_total = self.q_cur_start + self.q_adj
        if slot >= self.warmup:
            self.q_sum += q_total
            self.q_slots += 1
            self.q_batches.add(slot, q_total, self.n_nodes)
            if self.keep_series:
                self.q_series.append(q_total)
        self.q_cur_start = self.q_cur
        self.q_adj = 0

    # -- sharded runs (:class:`slotnet.schemes.ShardMerging`) ------------------------------------
    def shard_start(self, nodes: range) -> None:
        """On a shard hosting ``nodes``, before any event: keep the packets' books open."""
        self.shard_nodes = nodes
        self.step = self._shard_step  # type: ignore[method-assign]

    def shard_slot(self, slot: int) -> Any:
        """The shard's side of :meth:`end_slot`: its nodes' Little's-law ledgers judged, and the
        queue sums the coordinator's :meth:`end_slot` and :meth:`backlog` read."""
        self.little.end_slot(slot)
        self.last_slot = slot
        out = (self.q_adj, self.q_cur)
        self.q_adj = 0
        return out

    def merge_slot(self, slot: int, summaries: Sequence[Any]) -> None:
        """The shards' :meth:`shard_slot`, summed into the queue sums :meth:`end_slot` reads."""
        self.q_adj, self.q_cur = sum_columns(summaries)

    def shard_state(self) -> dict[str, Any]:
        """The shard's books, as plain data: every packet its nodes bore or received (a
        receivers' mask only where not every node of the shard received it), the per-node
        figures, the duplicates and reused names in the order seen, and the kit's checks."""
        nodes = self.shard_nodes
        lo, hi = (nodes.start, nodes.stop) if nodes is not None else (0, self.n_nodes)
        own = (1 << hi) - (1 << lo)
        records = [[o, q, rec[0], rec[1], rec[2], rec[3], rec[5], None if rec[4] == own else int_to_wire(rec[4])]
                   for (o, q), rec in self.live.items()]
        return {**super().shard_state(), "nodes": [lo, hi], "records": records, "born_total": self.born_total,
                "per_node": [self.node_births, self.node_received, self.node_max_q, self.q_node],
                "max_q": [self.max_q, self.max_q_slot, self.max_q_node], "duplicates": self.duplicates,
                "reused": self.reused, "lost_copies": self.lost_copies, "copied": list(self.copied),
                "excused": self.excused,
                "stamps": self.stamps.shard_state(), "order": self.order.shard_state(),
                "little": self.little.shard_state()}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The shards' :meth:`shard_state`, merged as one process would have kept them.

        A broadcast completes when its receptions over every shard reach ``n - 1``, in the slot
        of its last one: completions are then measured in the order one process measures them
        (by slot, then by packet). A shard cannot tell a late copy of a packet from a second
        reception (it keeps every packet's books open): one process calls it a duplicate while
        the packet is incomplete and an unknown packet once it completed (before it in the same
        slot: at a lower node, as one process takes a slot's events in node order), and every
        reception of a packet no node bore is an unknown one.
        """
        super().merge_shards(states)
        self.born_total += sum(st["born_total"] for st in states)
        self.node_births, self.node_received, self.node_max_q, self.q_node = (
            sum_columns(cols) for cols in zip(*(st["per_node"] for st in states)))
        for q, qslot, qnode in (st["max_q"] for st in states):  # the first to reach the largest, in (slot, node) order
            if q > self.max_q or (q == self.max_q and q > 0 and (qslot, qnode) < (self.max_q_slot, self.max_q_node)):
                self.max_q, self.max_q_slot, self.max_q_node = q, qslot, qnode
        self.lost_copies += sum(st["lost_copies"] for st in states)
        self.excused += sum(st["excused"] for st in states)
        self.copied.update((c[0], c[1]) for st in states for c in st["copied"])
        self.stamps.merge_shards([st["stamps"] for st in states])
        self.order.merge_shards([st["order"] for st in states])
        self.little.merge_shards([st["little"] for st in states])
        self.reused = sorted((tuple(r) for st in states for r in st["reused"]), key=lambda r: (r[0], r[1]))
        books: dict[tuple[int, int], list[Any]] = {}  # key -> [tau, receptions, last, sum, last node, mask]
        for st in states:
            lo, hi = st["nodes"]
            own = (1 << hi) - (1 << lo)
            for o, q, tau, count, last, total, last_node, mask in st["records"]:
                bits = own if mask is None else int_from_wire(mask)
                rec = books.get((o, q))
                if rec is None:
                    books[(o, q)] = [tau, count, last if count else -1, total, last_node, bits]
                    continue
                if tau is not None:
                    rec[0] = tau
                if count and (last > rec[2] or (last == rec[2] and last_node > rec[4])):
                    rec[2], rec[4] = last, last_node
                rec[1] += count
                rec[3] += total
                rec[5] |= bits
        done: list[tuple[int, tuple[int, int], float, int, int]] = []
        ends: dict[tuple[int, int], tuple[int, int]] = {}  # completed key -> (slot, node) of its last reception
        for key, rec in books.items():
            if rec[0] is None:
                continue
            if rec[1] == self.receivers:
                done.append((rec[2], key, rec[0], rec[2], rec[3]))
                ends[key] = (rec[2], rec[4])
            else:
                self.live[key] = [rec[0], rec[1], max(rec[2], 0), rec[3], rec[5]]
        done.sort()  # by slot, then packet: the order one process measures them in
        for _, key, tau, last, total in done:
            self._merged_completion(key, tau, last, total)
        dups = sorted((tuple(x) for st in states for x in st["duplicates"]), key=lambda x: (x[0], x[1]))
        for x in dups:
            key = (x[2], x[3])
            rec = books[key]
            end = ends.get(key)
            if rec[0] is None or (end is not None and (x[0], x[1]) >= end):
                self.unknown.append(x)
            else:
                self.duplicates.append(x)
        for key, rec in books.items():
            if rec[0] is None:  # received, never born: every reception an unknown packet's
                self.unknown.extend((rec[2], -1, key[0], key[1]) for _ in range(rec[1]))

    def _merged_completion(self, key: tuple[int, int], tau: float, last: int, total: int) -> None:
        """A broadcast the shards' merged books show complete (:meth:`merge_shards`, in slot and
        packet order): what :meth:`_complete` and :meth:`end_slot` do with it in one process. A
        subclass that keeps books of its own at completions extends it."""
        self.completed_total += 1
        self.stamps.completed(key[0], key, tau, last)
        if tau >= self.warmup:
            self._measure(tau, last, total)

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        self.liveness.lost(slot, receiver, message, cause)
        if cause != "dup":
            self.lost_copies += 1
        elif isinstance(message, tuple) and len(message) >= 2:
            self.copied.add((message[0], message[1]))

    def backlog(self) -> int:
        return self.q_cur

    def holdings(self, per_node: Sequence[Any]) -> None:
        self._holdings = per_node

    def metrics(self) -> dict[str, Any]:
        n = self.n_nodes
        qs = self.q_slots
        return {
            "mean_broadcast_delay": self.d_sum / self.measured if self.measured else None,
            "mean_broadcast_delay_ci95": self.d_batches.half_width(),
            "mean_reception_delay": self.r_sum / self.measured if self.measured else None,
            "mean_queue_per_node": self.q_sum / (qs * n) if qs else None,
            "mean_queue_per_node_ci95": self.q_batches.half_width(),
            "max_queue": self.max_q if qs else None,
            "broadcasts_measured": self.measured,
            "incomplete_at_end": len(self.live),
        }

    def per_node(self) -> dict[str, list[Any]]:
        return {"born": self.node_births, "received": self.node_received, "max_queue": self.node_max_q,
                "queue_at_end": self.q_node}

    def series(self) -> list[dict[str, Any]]:
        return [{"slot": self.warmup + i, "queue_per_node": q / self.n_nodes} for i, q in enumerate(self.q_series)]

    def packet_books(self) -> Sequence[PacketBook]:
        """The broadcasts' book: ``exactly_once``."""
        return (PacketBook("exactly_once", "broadcast"),)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Exactly-once reception; every incomplete packet still has a copy on its way."""
        moving = {(m[0], m[1]) for _, _, m in in_flight if isinstance(m, tuple) and len(m) >= 2}
        for items in self._holdings:
            moving.update(items)
        misses = []
        for key, rec in sorted(self.live.items()):
            if key not in moving:
                missing = [v for v in range(self.n_nodes) if not rec[4] >> v & 1]
                misses.append({"origin": key[0], "seq": key[1], "born": rec[0], "missing_nodes": missing[:16],
                               "n_missing": len(missing)})
        destroyed = {cause: n for cause, n in lost.items() if n > 0}
        faults = any(cause != "node_finished" for cause in destroyed)  # a node that stopped is no fault
        copied = self.copied
        dups = [x for x in self.duplicates if (x[2], x[3]) not in copied]
        unknown = [x for x in self.unknown if (x[2], x[3]) not in copied]
        out: dict[str, Any] = {
            "ok": not dups and not unknown and not self.reused and (faults or not misses),
            "broadcasts": self.born_total,
            "completed": self.completed_total,
            "in_progress": len(self.live) - len(misses),
            "duplicate_receptions": len(dups),
            "first_duplicates": [list(x) for x in dups[:5]],
            "unknown_packets": len(unknown),
            "missed": len(misses),
            "misses": misses[:20],
            "copies_lost_to_faults": destroyed,
        }
        if self.reused:  # a packet born under a name its origin had used: the books cannot tell them apart
            out["reused_names"] = len(self.reused)
            out["first_reused"] = [{"slot": s, "origin": o, "seq": q} for s, o, q in self.reused[:5]]
        if faults or copied:
            out["lost_to_faults"] = len(misses) if faults else 0
            out["nodes_missed"] = sum(m["n_missing"] for m in misses)
            out["duplicates_from_dup_faults"] = (self.excused + len(self.duplicates) - len(dups)
                                                 + len(self.unknown) - len(unknown))
        return {"exactly_once": out, **self.checks()}

    def checks(self) -> dict[str, Any]:
        """The kit's checks of a broadcast run: ``birth_stamps``, ``birth_epochs``, ``liveness``,
        ``service_order``, ``littles_law``."""
        self.stamps.book.checked = self.born_total
        return {**self.stamps.invariants(), **self.liveness.invariants(), **self.order.invariants(),
                "littles_law": self.little.invariants()}
