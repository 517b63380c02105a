"""The reporter every many-to-one scheme shares (observer side; never seen by nodes).

Events (every scheme): ``delivered(src, first, last)`` -- recorded by the destination
when the packet of source ``src`` is consumed there; ``first`` is §2's delivery time
(the first step at which the packet is at its destination) and ``last`` the step of its
final arrival (they differ only under ``m2o-rec``, where a packet may pass through or
be sorted away from its destination before it comes to rest); ``peak(load,
occupancy)`` -- the node's largest §2 load ``L_v(t)`` (packets stored at v bound
elsewhere) and occupancy (packets stored at v, its own deliveries still waiting
included) so far. ``m2o-rec`` adds ``inv(level, cube, index, n_here, start)`` and
``returned(step)``; ``m2o-bfs`` adds ``phase(version, level, start, end, overrun)`` and
``overrun(version, level, packets)``.

Metrics (steps; one step is one slot):

* ``completion_time``: T_loc of §2, the largest delivery time (0 without packets);
  ``final_arrival_time``: the largest ``last``;
* ``mean_delay``: the mean delivery time (every packet is born at 0);
* ``class_mean_delay[k]`` / ``class_packets[k]``: the same over the distance class
  ``P_I(2^k)`` of Theorem 1.3 (distance in ``[2^k, 2^(k+1))``; packets born at their
  destination are in no class);
* ``max_queue``: the space complexity of §2, ``max_{v,t} L_v(t)``; ``max_occupancy``;
  ``max_queue_distribution``: how many nodes reached each largest load;
* ``dilation``, ``congestion`` (D_I, W_I of the instance) and the ratios
  ``ratio_dw`` = T/(D + W), ``ratio_dw_log`` = T/(D + W log D), ``ratio_lower_bound``
  = T / (Theorem 2.1's exact bound), with T = ``completion_time``;
* ``m2o-rec``: ``invocations``, ``lemma_4_3_max`` (the largest n(H)/V(H) of an
  invocation; Lemma 4.3 says at most 2) and ``return_time``.

Invariants: every packet delivered exactly once, at its destination; nothing lost;
every packet accounted for (delivered or still held); for ``m2o-rec`` Lemma 4.3 on
every invocation (from the nodes' ``inv`` events) and one common return step; for
``m2o-bfs`` every phase within its window (these three are fault-free invariants; under
faults they are reported, not checked: see below). One message per link direction per step is
the fabric's (a second send is refused).

Under faults (every scheme runs under every kind) the same three checks
account for what the faults did instead of calling every missing packet a violation.
Every message a fault destroyed reaches :meth:`M2OReporter.on_lost` with its cause, and
a packet is named by its source (§2: at most one packet per source), so each packet
ends in exactly one book: delivered; in progress (a copy still on a wire or in a
node's queue, from the in-flight list and the nodes' :meth:`held_packets`); lost to a
fault, by the cause that destroyed it; or -- the losses the fabric books by count
only -- lost to a ``crash``: destroyed in the queue of a node that crashed (the
packets no other book names, at most the ledger's ``crash`` count). A source crashed
before its first step is no exception: every node is built, its own packet queued,
before slot 0's faults, so that crash books the packet too. ``every_packet_delivered_once``
then holds when no packet is left unexplained, none reached a wrong node, and every
second delivery is of a packet a ``dup`` fault copied (``duplicates_from_dup_faults``,
no scheme bug); ``no_message_lost`` holds when every lost message has a fault's cause;
``conservation`` is the closure over packet messages, ``created + dup copies ==
delivered + second deliveries + in flight + held + lost`` (``created``: every packet of
the instance, each queued at its source at time 0; ``lost`` and ``dup copies`` count
packet messages only, by cause -- the ledger also holds the control messages of the
schedule-driven schemes -- and ``crash`` the ledger's count of packets crashed nodes
held). Without faults the checks are exactly the fault-free ones above. A run cut short
(by ``--slots`` or its safety cap) owes only what it has done: every packet delivered once,
on a wire or in a queue (``in_progress``), none unexplained; the nodes returned so far
agree on one return step.

The schedule-driven schemes (``m2o-rec``, ``m2o-bfs``, ``m2o-offline``) also record
``off_schedule(version, why, src)`` wherever a fault took a node off its schedule
(:data:`._engine.OFF_SCHEDULE`). A packet a node keeps for good because its schedule
has no place for it any more is *stranded*: held at the end, it is its own book
(``stranded``, by why), apart from packets still in progress. A run is under faults
when the ledger shows any, or a node saw one itself (it was woken late, or restarted);
``off_schedule`` records without either are a scheme error and fail the delivery check.
Under faults, correctness is reported beside the accounting, in
``every_packet_delivered_once.correctness``: whether every packet was delivered and the
last delivery step, the stranded count, the ``off_schedule`` records by why and the
first of them (slot, node, version, why: where the schedule first broke), and the
scheme's own checks (Lemma 4.3, the common return, the phase windows) under
``schedule``, each with ``holds``: faults may break them, and that is damage to report,
not something unaccounted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._base import PacketBook, Setup
from ..kit import BaseReporter
from ._embed import virtual_volume
from ._engine import FAULT_EVIDENCE, SRC, STRANDING
from ._inputs import M2OInputs, instance_of
from .instances import Instance
from .theory import congestion, dilation, distance_class, log_d, lower_bound

__all__ = ["EVENTS", "M2OReporter"]

EVENTS: Mapping[str, tuple[str, ...]] = {
    "delivered": ("src", "first", "last"),
    "peak": ("load", "occupancy"),
    "inv": ("level", "cube", "index", "n_here", "start"),
    "returned": ("step",),
    "phase": ("version", "level", "start", "end", "overrun"),
    "overrun": ("version", "level", "packets"),
    "off_schedule": ("version", "why", "src"),
}


def _class_lists(instance: Instance, values: Mapping[int, float]) -> tuple[list[Any], list[int]]:
    """Per distance class k = 0 .. floor(log2 D), the mean of ``values`` (by source) and the count."""
    d_max = dilation(instance)
    top = d_max.bit_length() - 1  # floor(log2 D_I); -1 without a packet to move
    sums = [0.0] * (top + 1)
    counts = [0] * (top + 1)
    for s, d in instance.packets:
        k = distance_class(instance.distance(s, d))
        if k is not None and s in values:
            sums[k] += values[s]
            counts[k] += 1
    return [x / c if c else None for x, c in zip(sums, counts)], counts


class M2OReporter(BaseReporter):
    """Exactly-once delivery, delivery times, buffers, and the scheme's own checks."""

    events = EVENTS

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        prm: M2OInputs = setup.params
        self.instance = instance_of(setup.topology, prm)
        self.dest = list(prm.dest)
        n = setup.topology.n_nodes
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.dups = 0
        self.dup_srcs: list[int] = []
        self.wrong = 0
        self.lost_src: dict[int, str] = {}  # packet (source) -> the cause that first destroyed a copy of it
        self.packet_losses: Counter[str] = Counter()  # packet messages (not control messages) lost, by cause
        self.packet_copies = 0  # packet messages a dup fault added
        self.copied: set[int] = set()  # packets a dup fault copied
        self.held_srcs: list[int] = []
        self.node_load = [0] * n
        self.node_occ = [0] * n
        self.inv: dict[tuple[int, int, int], list[int]] = {}
        self.inv_bad_start = 0
        self.returned: dict[int, int] = {}
        self.phases = 0
        self.overruns = 0
        self.off: Counter[str] = Counter()  # off_schedule records by why
        self.first_off: tuple[int, int, int, str] | None = None  # (slot, node, version, why)
        self.saw_fault = False  # a node's own evidence of a fault (woken late, restarted)
        #: packet (source) -> (slot, node, why) of the first stranding of a copy of it (the order of shards' events aside)
        self.stranded: dict[int, tuple[int, int, str]] = {}
        self._metrics: dict[str, Any] | None = None

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"delivered": self._delivered, "peak": self._peak, "inv": self._inv, "returned": self._returned,
                "phase": self._phase, "overrun": self._overrun, "off_schedule": self._off_schedule}

    def _delivered(self, node: int, slot: int, src: int, first: int, last: int) -> None:
        if not 0 <= src < len(self.dest) or self.dest[src] != node:
            self.wrong += 1
            return
        if src in self.first:
            self.dups += 1
            self.dup_srcs.append(src)
            return
        self.first[src] = first
        self.last[src] = last

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A packet message a fault destroyed (by cause), or copied (cause ``dup``)."""
        super().on_lost(slot, sender, port, receiver, message, cause)
        src = _packet_src(message)
        if src is None:
            return
        if cause == "dup":
            self.copied.add(src)
            self.packet_copies += 1
        else:
            self.lost_src.setdefault(src, cause)
            self.packet_losses[cause] += 1

    def holdings(self, per_node: Sequence[Any]) -> None:
        self.held_srcs = [int(s) for items in per_node for s in items]

    def _peak(self, node: int, slot: int, load: int, occupancy: int) -> None:
        self.node_load[node] = max(self.node_load[node], load)
        self.node_occ[node] = max(self.node_occ[node], occupancy)

    def _inv(self, node: int, slot: int, level: int, cube: int, index: int, n_here: int, start: int) -> None:
        rec = self.inv.setdefault((level, cube, index), [0, start])
        rec[0] += n_here
        if rec[1] != start:
            self.inv_bad_start += 1

    def _returned(self, node: int, slot: int, step: int) -> None:
        self.returned[node] = step

    def _phase(self, node: int, slot: int, version: int, level: int, start: int, end: int, overrun: int) -> None:
        self.phases += 1

    def _overrun(self, node: int, slot: int, version: int, level: int, packets: int) -> None:
        self.overruns += packets

    def _off_schedule(self, node: int, slot: int, version: int, why: str, src: int) -> None:
        self.off[why] += 1
        first = (slot, node, version, why)
        if self.first_off is None or first < self.first_off:
            self.first_off = first
        if why in FAULT_EVIDENCE:
            self.saw_fault = True
        if why in STRANDING and src >= 0:
            prev = self.stranded.get(src)
            if prev is None or first[:2] + (why,) < prev:
                self.stranded[src] = (slot, node, why)

    # -- results ------------------------------------------------------------------------
    def invocations(self) -> list[tuple[int, int, int, int, int]]:
        """Every invocation seen: ``(level, cube, index, start, n_packets)``, sorted by start."""
        return sorted(((lv, cube, i, rec[1], rec[0]) for (lv, cube, i), rec in self.inv.items()),
                      key=lambda r: (r[3], r[0], r[1], r[2]))

    def _volume(self, level: int) -> int:
        return virtual_volume(self.setup.topology.sides, level)  # §4's cubes (:mod:`._embed`)

    def metrics(self) -> dict[str, Any]:
        if self._metrics is not None:
            return dict(self._metrics)
        inst = self.instance
        firsts = list(self.first.values())
        t = max(firsts, default=0)
        class_delay, class_count = _class_lists(inst, {s: float(v) for s, v in self.first.items()})
        d, w = dilation(inst), float(congestion(inst))
        lb = lower_bound(inst)
        dw, dwl = d + w, d + w * log_d(d)
        out: dict[str, Any] = {
            "packets": len(inst),
            "delivered": len(self.first),
            "completion_time": t,
            "final_arrival_time": max(self.last.values(), default=0),
            "mean_delay": sum(firsts) / len(firsts) if firsts else None,
            "class_mean_delay": class_delay,
            "class_packets": class_count,
            "max_queue": max(self.node_load, default=0),
            "max_occupancy": max(self.node_occ, default=0),
            "max_queue_distribution": {k: v for k, v in sorted(Counter(self.node_load).items())},
            "dilation": d,
            "congestion": w,
            "ratio_dw": t / dw if dw else None,
            "ratio_dw_log": t / dwl if dwl else None,
            "ratio_lower_bound": t / lb if lb else None,
        }
        if self.inv:
            out["invocations"] = len(self.inv)
            out["lemma_4_3_max"] = max((rec[0] / self._volume(lv) for (lv, _, _), rec in self.inv.items()), default=0.0)
        if self.returned:
            out["return_time"] = max(self.returned.values())
        if self.phases:
            out["phases"] = self.phases
        self._metrics = out
        return dict(out)

    def per_node(self) -> dict[str, list[Any]]:
        """Per node: its largest load and occupancy; as a source, its packet's delivery
        time and final arrival (-1: no packet, or not delivered)."""
        n = len(self.dest)
        return {"max_load": list(self.node_load), "max_occupancy": list(self.node_occ),
                "delivery_time": [self.first.get(v, -1) for v in range(n)],
                "final_arrival": [self.last.get(v, -1) for v in range(n)]}

    def packet_books(self) -> Sequence[PacketBook]:
        """The packets' book: ``conservation``."""
        return (PacketBook("conservation", "unicast"),)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        out = self._delivery_checks(lost, in_flight, held)
        checks: dict[str, dict[str, Any]] = {}
        if self.inv:
            worst = [(lv, cube, i, rec[0]) for (lv, cube, i), rec in self.inv.items() if rec[0] > 2 * self._volume(lv)]
            checks["lemma_4_3"] = {"ok": not worst and self.inv_bad_start == 0, "invocations": len(self.inv),
                                   "over_2V": len(worst), "inconsistent_starts": self.inv_bad_start}
        if self.returned:
            n = self.setup.topology.n_nodes
            ends = set(self.returned.values())
            checks["common_return"] = {"ok": len(self.returned) == n and len(ends) == 1, "nodes": len(self.returned),
                                       "return_steps": len(ends)}
            if not self.run_complete and len(self.returned) < n:  # cut short as the nodes return: those so far agree
                checks["common_return"] |= {"ok": len(ends) == 1, "pending_nodes": n - len(self.returned)}
        if self.phases:
            checks["phases_within_windows"] = {"ok": self.overruns == 0, "phases": self.phases, "overruns": self.overruns}
        correctness = out["every_packet_delivered_once"].get("correctness")
        if correctness is None:  # fault-free: the scheme's checks are invariants
            out.update(checks)
        else:  # under faults they are what the faults did to the schedule (see the module docstring)
            if checks:
                correctness["schedule"] = {name: {"holds": c.pop("ok"), **c} for name, c in checks.items()}
        return out

    def _faulted(self, lost: Mapping[str, int]) -> bool:
        """Whether the run met a fault: the ledger shows one, a node saw one itself, or the
        schedule holds one (a stall in slot 0 delays a node's first step and loses nothing)."""
        return (any(c != "node_finished" for c in lost) or bool(getattr(lost, "delayed", None))
                or self.saw_fault or bool(getattr(self.setup, "faults", False)))

    def _stranded_held(self, in_flight: Sequence[tuple[int, int, Any]]) -> list[int]:
        """The undelivered packets held at the end only by nodes that keep them for good."""
        flying = {s for _, _, m in in_flight if (s := _packet_src(m)) is not None}
        held = set(self.held_srcs)
        return sorted(s for s in self.stranded if s not in self.first and s in held and s not in flying)

    def _correctness(self, stranded: int) -> dict[str, Any]:
        """What the faults did to the result (reported beside the accounting, under faults)."""
        out: dict[str, Any] = {"all_delivered": len(self.first) == len(self.instance), "delivered": len(self.first),
                               "last_delivery": max(self.first.values(), default=None), "stranded": stranded}
        if self.first_off is not None:
            slot, node, version, why = self.first_off
            out["first_off_schedule"] = {"slot": slot, "node": node, "version": version, "why": why}
            out["off_schedule"] = dict(sorted(self.off.items()))
        return out

    def fault_books(self, in_flight: Sequence[tuple[int, int, Any]], held: list[int],
                    crash: int) -> tuple[dict[str, int], int, int, list[list[Any]]]:
        """Every undelivered packet in one book: lost by cause, in progress, or unexplained.

        Returns ``(lost_by_cause, in_progress, unexplained, first_lost)``; a packet with a
        copy still on its way is in progress whatever happened to its other copies; the
        packets no book names are charged to ``crash`` up to the ledger's count ``crash``
        (together with held packets a node counts but does not name).
        """
        moving = {s for _, _, m in in_flight if (s := _packet_src(m)) is not None}
        moving.update(self.held_srcs)
        unnamed_held = max(0, sum(held) - len(self.held_srcs))
        by_cause: Counter[str] = Counter()
        first_lost: list[list[Any]] = []
        progress = residual = 0
        for src, _ in self.instance.packets:
            if src in self.first:
                continue
            if src in moving:
                progress += 1
            elif src in self.lost_src:
                by_cause[self.lost_src[src]] += 1
                first_lost.append([src, self.lost_src[src]])
            else:
                residual += 1
                first_lost.append([src, "crash"])
        crashed = min(residual, crash)
        if crashed:
            by_cause["crash"] += crashed
        in_held = min(residual - crashed, unnamed_held)
        return dict(sorted(by_cause.items())), progress + in_held, residual - crashed - in_held, first_lost

    def _delivery_checks(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]],
                         held: list[int]) -> dict[str, Any]:
        """Exactly-once, nothing lost, conservation: the fault-free checks, or under faults
        the fault-aware ones (see the module docstring); the books are reported either way."""
        destroyed = {c: n for c, n in lost.items() if n > 0}
        faulted = self._faulted(lost)
        by_cause, progress, unexplained, first_lost = self.fault_books(in_flight, held, destroyed.get("crash", 0))
        created = len(self.instance)
        scheme_dups = [s for s in self.dup_srcs if s not in self.copied]
        missing = len(self.instance) - len(self.first)
        packets_moving = sum(1 for _, _, m in in_flight if _packet_src(m) is not None)
        # packets only: control messages (keys, counts, floods) are in the ledger too, never in a book of packets
        packets_lost = dict(sorted(self.packet_losses.items()))
        if destroyed.get("crash"):  # what crashed nodes held: packets, booked by count
            packets_lost["crash"] = destroyed["crash"]
        copies = self.packet_copies
        n_lost = sum(packets_lost.values())
        accounted = len(self.first) + self.dups + self.wrong + packets_moving + sum(held) + n_lost
        if faulted:
            once_ok = unexplained == 0 and not scheme_dups and self.wrong == 0
            lost_ok = not lost.get("node_finished", 0)
            conserved = accounted == created + copies
            n_lost_shown = sum(destroyed.values())
        else:  # §2's checks: a packet still on a wire or in a queue is not delivered
            once_ok = missing == 0 and self.dups == 0 and self.wrong == 0
            lost_ok = self.lost_messages == 0 and sum(lost.values()) == 0 and not in_flight
            conserved = len(self.first) + sum(held) == len(self.instance)
            accounted = len(self.first) + sum(held)  # the §2 closure: in-flight packets are unaccounted
            n_lost_shown = self.lost_messages + sum(lost.values())
            if not self.run_complete:  # cut short: a packet on a wire or in a queue is on its way, not lost
                once_ok = unexplained == 0 and self.dups == 0 and self.wrong == 0
                lost_ok = self.lost_messages == 0 and sum(lost.values()) == 0
                accounted = len(self.first) + self.dups + self.wrong + packets_moving + sum(held) + n_lost
                conserved = accounted == created
        once: dict[str, Any] = {"ok": once_ok, "missing": missing, "duplicates": len(scheme_dups), "wrong_node": self.wrong}
        if not faulted and not self.run_complete:
            once |= {"in_progress": progress, "unexplained": unexplained}
        if faulted:
            once.update({"lost_to_faults": sum(by_cause.values()), "lost_by_cause": by_cause, "in_progress": progress,
                         "unexplained": unexplained, "duplicates_from_dup_faults": self.dups - len(scheme_dups),
                         "first_lost": first_lost[:20]})
            kept = self._stranded_held(in_flight)
            if self.off:  # stranded packets are held, but for good: their own book beside in_progress
                once["in_progress"] = progress - len(kept)
                once["stranded"] = len(kept)
                once["stranded_by"] = dict(sorted(Counter(self.stranded[s][2] for s in kept).items()))
            once["correctness"] = self._correctness(len(kept))
        elif self.off:  # a node went off its schedule with no fault behind it: a scheme error
            once["ok"] = False
            once["off_schedule"] = dict(sorted(self.off.items()))
        return {
            "every_packet_delivered_once": once,
            "no_message_lost": {"ok": lost_ok, "lost": n_lost_shown, "in_flight": len(in_flight), "by_cause": destroyed},
            "conservation": {"ok": conserved, "delivered": len(self.first), "held": sum(held), "packets": len(self.instance),
                             "created": created, "second_deliveries": self.dups + self.wrong,
                             "in_flight": packets_moving, "lost": packets_lost if faulted else destroyed,
                             "dup_copies": copies,
                             "unaccounted": created + copies - accounted},
        }


def _packet_src(message: Any) -> int | None:
    """The source of a packet message (``["p", version, hops, src, ...]``), or None for another message."""
    if isinstance(message, (list, tuple)) and len(message) > SRC and message[0] == "p" and isinstance(message[SRC], int):
        return int(message[SRC])
    return None

