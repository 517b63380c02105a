"""Streaming metrics of a deflection-routing run (the observer side).

Metric definitions follow Greenberg & Hajek: link utilization is the fraction of
directed links carrying a packet per slot; accept fraction is accepted/offered new
packets (§II-A); delay is slots from acceptance to arrival, i.e. the number of hops
(Table II); deflection fraction is deflections per packet transition (Table II);
the deflection-distance histogram is the normalised distribution of the distance to
destination at each deflection (Table IV). Everything is measured over the slots actually run after
the warm-up (``warmup`` .. the last slot run: a run the stability monitor stops early is
divided by the slots it ran, not the slots planned); a run stopped before its warm-up
ended measured nothing and reports None. Conservation is accounted over the whole run.
Per-slot rows are kept only for a transient schedule (Table I) or when the run asks for
its series; the confidence intervals stream (:class:`~slotnet.schemes.kit.WindowBatches`).

Every absorption is checked against the packet's origin and destination (the ``step``
event's ``absorbed_ends``), with the kit's :class:`~slotnet.schemes.kit.PathCheck`: the
absorbing node is the destination (``delivered_at_destination``), and the hops -- counted
here, not by the node: a bufferless packet crosses one link per slot from the slot it
entered -- are at least the cube distance from origin to destination and, in a fault-free
run (a ``delay`` fault lengthens a packet's life, not its path), of its parity
(``hops_within_bounds``); a packet is named there by ``(origin, entered slot)``.
Deflection declares no shortest paths. The kit's ``liveness`` comes with it.

§II-A's rule -- a packet takes a preferred link (one on a shortest path) whenever one is
free -- is checked from the sends themselves: the scheme declares ``follow``, so the
orchestrator reports every send with the packet's destination (``hop`` events), and the
reporter's :class:`ForcedDeflections` finds, in a fault-free run, every
packet sent away from its destination while one of its preferred links stayed idle that
slot (``forced_deflections``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._base import HOP_EVENT, PacketBook, Setup
from ..kit import (
    HOP_EVENTS,
    BaseReporter,
    BatchMeans,
    Book,
    PathCheck,
    WindowBatches,
    int_from_wire,
    int_to_wire,
    split_dup,
    sum_columns,
)
from ._inputs import DeflectionInputs
from .node import StepEvent

__all__ = ["DeflectionReporter", "ForcedDeflections"]


class StepSums:
    """What the ``step`` events of a run add up to: the observer's per-event work.

    Every figure is an integer sum, so the order of a slot's events never matters. The
    reporter reads these sums at the end of each slot and at the end of the run. Kept
    apart from :class:`DeflectionReporter` so that, compiled, the counts are C integers
    (``reporter.pxd``): each grows by at most a few units per event a node records, and
    no run records 2**63 events. The delay sums stay Python ints: a delay can be as
    long as the run, and its square longer than 64 bits.
    """

    def __init__(self, n: int, d: int, warmup: int, queueing: bool, series_slots: int,
                 paths: PathCheck | None = None) -> None:
        self.warmup = warmup
        self.queueing = queueing
        #: where absorptions that break a path rule are filed (None: not checked)
        self.paths = paths
        self.parity = paths is not None and paths.parity
        # whole-run accounting
        self.created = self.offered_total = self.absorbed_total = 0
        self.backlog = 0
        # measured window
        self.offered = self.accepted = self.sent = self.deflected = 0
        self.absorbed = 0
        self.delay_sum = self.delay_sq = 0
        self.qdelay_sum = self.qdelay_sq = 0
        #: sum of ``entered - arrived`` of the packets absorbed before the warm-up ended
        #: (with :attr:`qdelay_sum`: every absorbed packet's wait in the input queue)
        self.qwait_early = 0
        self.hist = [0] * (d + 1)
        # this slot's delay sums, reset by the reporter at the end of each slot
        self.slot_delay = self.slot_absorbed = 0
        # per slot, only for the transient experiment of Table I or when asked for
        self.series: list[list[int]] | None = [[0] * 6 for _ in range(series_slots)] if series_slots else None
        # per node
        self.node_accepted = [0] * n
        self.node_absorbed = [0] * n
        self.node_sent = [0] * n
        self.node_deflected = [0] * n
        self.queue = [0] * n

    def step(self, node: int, slot: int, offered: int, accepted: int, sent: int, deflected: int,
             dist_after: int, n_after: int, ddists: Any, absorbed_e: Any, absorbed_a: Any, queue: int,
             absorbed_ends: Any = ()) -> None:
        """One ``step`` event (see :class:`~.node.StepEvent`)."""
        self.created += offered if self.queueing else accepted
        self.offered_total += offered
        n_abs = len(absorbed_e)
        self.absorbed_total += n_abs
        if absorbed_ends and self.paths is not None:  # the path rules, fast; a breach is filed by the kit's PathCheck
            i = 0
            for e in absorbed_e:
                origin, dest = absorbed_ends[i], absorbed_ends[i + 1]
                i += 2
                hops = slot - e
                diff = origin ^ dest  # the cube distance: diff.bit_count(), as a loop on a C integer when compiled
                dist = 0
                while diff:
                    diff &= diff - 1
                    dist += 1
                if dest != node or hops < dist or (self.parity and (hops - dist) & 1):
                    self.paths.delivered(node, slot, e, hops, (origin, e), origin, dest)
        self.backlog += queue - self.queue[node]
        self.queue[node] = queue
        if self.series is not None:
            row = self.series[slot]
            row[0] += offered
            row[1] += accepted
            row[2] += sent
            row[3] += deflected
            row[4] += dist_after
            row[5] += n_after
        if slot < self.warmup:
            if self.queueing and n_abs:
                for e, a in zip(absorbed_e, absorbed_a):
                    self.qwait_early += e - a
            return
        self.offered += offered
        self.accepted += accepted
        self.sent += sent
        self.deflected += deflected
        self.node_accepted[node] += accepted
        self.node_sent[node] += sent
        self.node_deflected[node] += deflected
        for i in ddists:
            self.hist[i] += 1
        if n_abs:
            self.absorbed += n_abs
            self.node_absorbed[node] += n_abs
            total = 0
            for e in absorbed_e:
                t = slot - e
                total += t
                self.delay_sq += t * t
            if self.queueing:
                q_total = 0
                for e, a in zip(absorbed_e, absorbed_a):
                    q = e - a
                    q_total += q
                    self.qdelay_sq += q * q
                self.qdelay_sum += q_total
                total_q = total + q_total
            else:
                total_q = total
            self.slot_delay += total_q
            self.slot_absorbed += n_abs
            self.delay_sum += total


class ForcedDeflections:
    """``forced_deflections``: one-pass deflection deflects a packet only when it must.

    Greenberg & Hajek §II-A: "If at least one preferred link is free, the packet is
    assigned to a preferred, free link". So, at the end of a node's slot, a packet sent on
    a link that is not on a shortest path to its destination (a deflection) must find
    every preferred link -- the bits of ``node ^ dest`` -- busy with another packet that
    slot. Fed with the sends the orchestrator reports (:meth:`hop`: the ``hop`` event,
    with the destination as ``source``; the scheme's ``follow``), it
    keeps each node's ports used in the current slot and the preferred links of each
    deflected packet, and judges them when the next slot's sends begin or the slot closes
    (:meth:`end_slot`). Under faults a node routes around links it believes dead, so
    only a fault-free run is judged. Compiled with the reporter (``reporter.pxd``): it
    runs once per hop.
    """

    def __init__(self, n: int, faults: bool = False) -> None:
        self.book = Book()
        self.judged = not faults
        self.sends = 0
        self.slot = -1
        self.used = [0] * n  # per node: bit p, port p carried a packet in ``slot``
        self.touched: list[int] = []  # nodes with a port used in ``slot``
        self.wanted: list[int] = []  # (node, preferred links) of each deflection in ``slot``, flat

    def hop(self, node: int, slot: int, port: int, dest: int, _seq: Any = None) -> None:
        """``node`` sent a packet bound for ``dest`` on ``port`` (dimension ``port``) in ``slot``."""
        if slot != self.slot:  # a slot's sends all come before the next slot's
            self.end_slot()
            self.slot = slot
        used = self.used[node]
        if not used:
            self.touched.append(node)
        self.used[node] = used | 1 << port
        preferred = node ^ dest
        if not preferred >> port & 1:
            self.wanted.append(node)
            self.wanted.append(preferred)
        self.sends += 1

    def end_slot(self) -> None:
        """Judge the slot's deflections: each must have found its preferred links busy."""
        wanted = self.wanted
        if self.judged:
            for i in range(0, len(wanted), 2):
                node = wanted[i]
                idle = wanted[i + 1] & ~self.used[node]
                if idle:
                    free = [b for b in range(idle.bit_length()) if idle >> b & 1]
                    self.book.add(self.slot, node, (node, self.slot),
                                  f"node {node} deflected a packet in slot {self.slot} while its preferred "
                                  f"link(s) {free} were free; one-pass deflection takes a preferred link "
                                  f"whenever one is free (Greenberg & Hajek, §II-A)")
        for node in self.touched:
            self.used[node] = 0
        self.touched.clear()
        wanted.clear()

    def shard_state(self) -> list[Any]:
        """The sends seen and the book, as plain data (a shard's: :meth:`merge_shards`)."""
        self.end_slot()
        return [self.sends, self.book.shard_state()]

    def merge_shards(self, states: Sequence[Any]) -> None:
        """Add the shards' :meth:`shard_state`: each judged its own nodes' sends (a node's
        ports and the packets it deflected are its own)."""
        self.sends += sum(st[0] for st in states)
        self.book.merge_shards([st[1] for st in states])

    def invariants(self) -> dict[str, Any]:
        self.end_slot()
        self.book.checked = self.sends
        return {"forced_deflections": self.book.result(ok=self.book.count == 0 or not self.judged)}


class DeflectionReporter(BaseReporter):
    """Consumes ``step`` events (summed by :class:`StepSums`) and derives the paper's metrics."""

    events: Mapping[str, tuple[str, ...]] = {"step": StepEvent._fields, **HOP_EVENTS}
    #: sharded, each shard sums its own nodes' events; per slot only the slot's integer
    #: sums cross (:meth:`shard_slot`), the rest at the end (:meth:`shard_state`)
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        topo = setup.topology
        self.d = topo.d
        self.n_nodes = topo.n_nodes
        self.n_links = topo.n_links
        self.warmup, self.slots = setup.warmup, setup.slots
        prm: DeflectionInputs = setup.params
        self.queueing = prm.mode == "queue"
        keep = setup.series or len(prm.schedule) > 1
        #: the kit's checks of every absorption (hops counted from the stamps: exact only without faults)
        self.paths = PathCheck(topo, exact_hops=False, faults=setup.faults)
        self.sums = StepSums(self.n_nodes, self.d, self.warmup, self.queueing, setup.slots if keep else 0, self.paths)
        #: the ``step`` handler: ``step(node, slot, *StepEvent)``
        self.step = self.sums.step
        #: every send, seen by the orchestrator: deflections only when forced (§II-A)
        self.deflections = ForcedDeflections(self.n_nodes, setup.faults)
        self.delay_batches = BatchMeans(self.warmup, self.slots)
        self.util_batches = WindowBatches(self.warmup, self.slots)  # sent / links
        self.defl_batches = WindowBatches(self.warmup, self.slots)  # deflected / sent
        self.accept_batches = WindowBatches(self.warmup, self.slots)  # accepted / offered
        self.last_slot = -1
        #: sum over the slots run of the packets waiting in input queues after the slot (Little's law)
        self.queue_area = 0
        self._queued: list[list[int]] = []
        # the measured sums at the end of the previous slot
        self._sent_before = self._deflected_before = self._offered_before = self._accepted_before = 0

    def handlers(self) -> Mapping[str, Any]:
        return {"step": self.sums.step, HOP_EVENT: self.deflections.hop}

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """Losses are counted by the fabric; only the kit's liveness check looks at them."""
        self.liveness.lost(slot, receiver, message, cause)

    def end_slot(self, slot: int) -> None:
        self.last_slot = slot
        self.deflections.end_slot()
        s = self.sums
        self.queue_area += s.backlog
        if slot >= self.warmup:
            # the slot's integer sums go to the batches once (exactly what adding each
            # node's figures would give: batch sums of integers are exact)
            sent = s.sent - self._sent_before
            offered, accepted = s.offered - self._offered_before, s.accepted - self._accepted_before
            self.defl_batches.add(slot, s.deflected - self._deflected_before, sent)
            self.accept_batches.add(slot, accepted, offered)
            self.util_batches.add(slot, sent, self.n_links)
            if s.slot_absorbed:
                self.delay_batches.add(slot, s.slot_delay, s.slot_absorbed)
        self._sent_before, self._deflected_before = s.sent, s.deflected
        self._offered_before, self._accepted_before = s.offered, s.accepted
        s.slot_delay = s.slot_absorbed = 0

    def backlog(self) -> int:
        return self.sums.backlog

    # -- sharded runs: every figure an integer sum, so the merge is exact --------------------
    def shard_slot(self, slot: int) -> tuple[int, ...]:
        """The shard's side of :meth:`end_slot`: its deflections judged, and what the
        coordinator's :meth:`end_slot` reads -- the measured sums so far, the slot's delay
        sums, the backlog."""
        self.deflections.end_slot()
        s = self.sums
        out = (s.sent, s.deflected, s.offered, s.accepted, s.slot_delay, s.slot_absorbed, s.backlog)
        s.slot_delay = s.slot_absorbed = 0
        return out

    def merge_slot(self, slot: int, summaries: Sequence[Sequence[int]]) -> None:
        """The shards' :meth:`shard_slot` summed into the sums :meth:`end_slot` reads."""
        s = self.sums
        (s.sent, s.deflected, s.offered, s.accepted, s.slot_delay, s.slot_absorbed,
         s.backlog) = sum_columns(summaries)

    def shard_state(self) -> dict[str, Any]:
        """Everything the shard's ``step`` and ``hop`` events added up to, as plain data."""
        s = self.sums
        return {**super().shard_state(),
                "counts": [s.created, s.offered_total, s.absorbed_total, s.offered, s.accepted, s.sent,
                           s.deflected, s.absorbed, s.backlog],
                "wide": [int_to_wire(x) for x in (s.delay_sum, s.delay_sq, s.qdelay_sum, s.qdelay_sq, s.qwait_early)],
                "hist": s.hist, "series": s.series,
                "per_node": [s.node_accepted, s.node_absorbed, s.node_sent, s.node_deflected, s.queue],
                "paths": self.paths.shard_state(), "deflections": self.deflections.shard_state()}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The shards' :meth:`shard_state`, added up (this instance saw no event: it holds
        only what the slots' summaries gave, which the totals replace)."""
        super().merge_shards(states)
        s = self.sums
        (s.created, s.offered_total, s.absorbed_total, s.offered, s.accepted, s.sent, s.deflected, s.absorbed,
         s.backlog) = sum_columns([st["counts"] for st in states])
        (s.delay_sum, s.delay_sq, s.qdelay_sum, s.qdelay_sq, s.qwait_early) = (
            sum(int_from_wire(v) for v in col) for col in zip(*(st["wide"] for st in states)))
        s.hist = sum_columns([st["hist"] for st in states])
        if s.series is not None:
            s.series = [sum_columns(rows) for rows in zip(*(st["series"] for st in states))]
        (s.node_accepted, s.node_absorbed, s.node_sent, s.node_deflected, s.queue) = (
            sum_columns(lists) for lists in zip(*(st["per_node"] for st in states)))
        self.paths.merge_shards([st["paths"] for st in states])
        self.deflections.merge_shards([st["deflections"] for st in states])

    def holdings(self, per_node: Any) -> None:
        """The arrival slots of the packets still in each node's input queue."""
        self._queued = [list(h) for h in per_node]

    def littles_law(self, in_flight: Sequence[tuple[int, int, Any]], faults: bool) -> dict[str, Any]:
        """``littles_law`` (input queueing): the queue the run measures is the waits its stamps give.

        Little's law on the sample path: a packet that arrived in slot ``a`` and entered the
        network in slot ``e`` is in its node's queue after each of the slots ``a .. e-1``,
        so the queue lengths summed over the slots run equal the waits ``e - a`` summed
        over the packets absorbed and in flight, plus ``T + 1 - a`` for those still queued
        after the last slot ``T`` -- exactly, with no statistical slack. A stamp that does
        not tell when a packet arrived or entered (the arrival stamped with the entry
        slot: no wait, while packets queue) breaks it. Judged without faults only: under
        faults both totals are reported with ``judged`` false and the reason (a fault
        destroys packets whose waits are then unknown), as the kit's check does.
        """
        s = self.sums
        end = self.last_slot + 1
        waits = s.qwait_early + s.qdelay_sum
        waits += sum(m[1] - m[3] for _r, _p, m in in_flight if isinstance(m, (list, tuple)) and len(m) == 4)
        waits += sum(end - a for q in self._queued for a in q)
        out: dict[str, Any] = {"ok": faults or waits == self.queue_area, "queue_area": self.queue_area,
                               "waits": waits}
        if end > 0:
            out["mean_queue_per_node"] = self.queue_area / (self.n_nodes * end)
        out["judged"] = not faults
        if faults:
            out["why"] = "faults: a fault destroys queued packets, whose waits are then unknown"
        if not out["ok"]:
            out["problem"] = (f"the input queues held {self.queue_area} packet-slots over the {end} slots run, but the "
                              f"packets' arrival and entry stamps add up to {waits} slots of waiting "
                              f"(Little's law: the two are equal)")
        return out

    def metrics(self) -> dict[str, Any]:
        measured = self.last_slot + 1 - self.warmup  # the slots run after the warm-up
        if measured <= 0:
            return self._nothing_measured()
        s = self.sums
        m: dict[str, Any] = {
            "link_utilization": s.sent / (self.n_links * measured),
            "mean_delay": s.delay_sum / s.absorbed if s.absorbed else None,
            "mean_delay_ci95": self.delay_batches.half_width(),
            "deflection_fraction": s.deflected / s.sent if s.sent else 0.0,
            "deflection_distance_hist": [h / s.deflected for h in s.hist[1:]] if s.deflected else [0.0] * self.d,
            "throughput_per_node": s.absorbed / (self.n_nodes * measured),
            "delivered": s.absorbed,
        }
        m["link_utilization_ci95"] = self.util_batches.half_width()
        m["deflection_fraction_ci95"] = self.defl_batches.half_width()
        if self.queueing:
            transit = s.delay_sum / s.absorbed if s.absorbed else None
            queued = s.qdelay_sum / s.absorbed if s.absorbed else None
            m["mean_transit_delay"] = transit
            m["mean_queueing_delay"] = queued
            m["mean_delay"] = None if transit is None or queued is None else transit + queued
            m["mean_queue_per_node"] = s.backlog / self.n_nodes
        else:
            m["accept_fraction"] = s.accepted / s.offered if s.offered else None
            m["accept_fraction_ci95"] = self.accept_batches.half_width()
        return m

    def _nothing_measured(self) -> dict[str, Any]:
        """Every metric None: the run ended before its warm-up did."""
        names = ["link_utilization", "mean_delay", "mean_delay_ci95", "deflection_fraction", "deflection_distance_hist",
                 "throughput_per_node", "link_utilization_ci95", "deflection_fraction_ci95"]
        names += (["mean_transit_delay", "mean_queueing_delay", "mean_queue_per_node"] if self.queueing
                  else ["accept_fraction", "accept_fraction_ci95"])
        return {**dict.fromkeys(names), "delivered": 0}

    def per_node(self) -> dict[str, list[Any]]:
        s = self.sums
        return {
            "accepted": s.node_accepted,
            "delivered": s.node_absorbed,
            "sent": s.node_sent,
            "deflected": s.node_deflected,
            "queue": s.queue,
        }

    def series(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.sums.series is None:
            return out
        for slot, (off, acc, sent, defl, dist, n_after) in enumerate(self.sums.series[:self.last_slot + 1]):
            out.append({
                "slot": slot,
                "link_utilization": sent / self.n_links,
                "accept_fraction": acc / off if off else None,
                "deflection_fraction": defl / sent if sent else None,
                "mean_distance": dist / n_after if n_after else None,
            })
        return out

    def packet_books(self) -> Sequence[PacketBook]:
        """The packets' book: ``conservation``."""
        return (PacketBook("conservation", "unicast"),)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """created = delivered + dropped + in flight + held - dup copies (copies a dup fault
        made are delivered, or in flight, beside their originals)."""
        dropped, copies = split_dup(lost)
        held_total = sum(held)
        s = self.sums
        balance = s.created - (s.absorbed_total + sum(dropped.values()) + len(in_flight) + held_total - copies)
        out = {
            "ok": balance == 0,
            "created": s.created,
            "blocked": 0 if self.queueing else s.offered_total - s.created,
            "delivered": s.absorbed_total,
            "dropped": dropped,
            "in_flight": len(in_flight),
            "held": held_total,
            "unaccounted": balance,
        }
        if copies:
            out["dup_copies"] = copies
        paths = self.paths.invariants()
        for name in paths:  # every absorption was checked; only breaches reached the books
            paths[name]["checked"] = s.absorbed_total
        law = {"littles_law": self.littles_law(in_flight, self.setup.faults)} if self.queueing else {}
        return {"conservation": out, **paths, **self.deflections.invariants(), **law, **self.liveness.invariants()}
