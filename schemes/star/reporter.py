"""The STAR observer: the kit's broadcast metrics plus unicast delay, class waits and link use.

* From :class:`~slotnet.schemes.kit.BroadcastReporter` (§2's definitions):
  ``mean_reception_delay``, ``mean_broadcast_delay`` (with its 95% batch-means CI),
  ``mean_queue_per_node`` (every packet a node still has to forward, broadcast or
  unicast), ``max_queue``, and the exactly-once invariant; ``littles_law`` holds Q to the
  queueing slots the node stamps its packets with (the ones W is measured from).
* Unicast (§4, runs with ``lam_unicast > 0``), from an inner
  :class:`~slotnet.schemes.kit.UnicastReporter`: ``mean_unicast_delay`` (birth to
  arrival at the destination, CI), ``mean_unicast_hops``, ``unicasts_measured``,
  ``mean_wait_unicast``; invariant ``unicast_conservation`` (every unicast delivered, in
  flight, held or lost), counted on unicast packets only. Under faults ``lost`` is by
  cause: the messages a fault destroyed on a link or at a down or stalled node (named,
  from ``on_lost``), and ``crash``: the unicasts destroyed in the queues of crashed nodes,
  counted from the packets each crashed node held (``crash_losses``; the fabric's ledger
  books the same queues by count, broadcasts and unicasts together: ``crashed_queues``);
  the kit's path checks of every delivery (``delivered_at_destination``, ``hops_within_bounds``,
  and ``shortest_paths``: §4 routes unicasts on shortest paths, which the scheme declares).
* Waiting time per hop (``send slot - queueing slot``, §3.2's W, service excluded), over
  transmissions made in the measured window: ``mean_wait`` (all), ``mean_wait_high``
  (class 0), ``mean_wait_low`` (the last class), ``mean_wait_medium`` (three classes),
  and by broadcast traffic type whatever the discipline,
  ``mean_wait_ending_dim`` / ``mean_wait_other_dims``. With one class (FCFS) the class
  waits are all ``mean_wait``, as in the theory.
* ``link_utilization``: transmissions per directed link and measured slot, averaged over
  every directed link; ``link_utilization_max``: the busiest link's; ``link_imbalance``:
  their ratio (1 when the load is balanced); ``link_utilization_per_dim``: the mean over
  the directed links of each dimension (eq. (2)/(4) make them equal).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .._base import HOP_EVENT, PacketBook, Setup
from ..kit import HOP_EVENTS, UNICAST_EVENTS, BroadcastReporter, UnicastReporter
from ._inputs import StarInputs
from .node import LINK_FIELDS

__all__ = ["StarReporter"]

#: class of each traffic type (bcast off ending, unicast, bcast on ending) per class count
_CLASS_OF = {1: (0, 0, 0), 2: (0, 0, 1), 3: (0, 1, 2)}


class StarReporter(BroadcastReporter):
    """Streaming metrics of a STAR run (broadcast, unicast, waits, links)."""

    events: Mapping[str, tuple[str, ...]] = {
        **BroadcastReporter.events,
        "links": LINK_FIELDS,
        "born": UNICAST_EVENTS["born"],
        "delivered": UNICAST_EVENTS["delivered"],
        **HOP_EVENTS,
    }

    #: sharded, each shard keeps its nodes' books (the kit's broadcast and unicast reporters
    #: merge theirs; the link counters are each node's own); per slot the queue sums and the
    #: slot's measured unicasts cross, the rest at the end
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        prm: StarInputs = setup.params
        self.classes = int(prm.n_classes)
        # §4: "a shortest path"; every unicast followed from send to send (``follow`` in the scheme)
        self.unicast = UnicastReporter(setup, shortest_paths=True, follow=True)
        self.with_unicast = float(prm.lam_unicast) > 0
        n = setup.topology.n_nodes
        self.latest: list[tuple[int, ...] | None] = [None] * n
        self.base: list[tuple[int, ...] | None] = [None] * n
        self.last_slot = -1
        self.unicast_lost: Counter[str] = Counter()  # unicast messages a fault destroyed, by cause
        self.unicast_copies = 0  # extra copies made by dup faults
        self.unicast_crashed = 0  # unicasts a crash destroyed in a node's queues

    def handlers(self) -> Mapping[str, Any]:
        inner = self.unicast.handlers()
        return {**super().handlers(), "links": self.links, "born": inner["born"], "delivered": inner["delivered"],
                HOP_EVENT: inner[HOP_EVENT]}

    def links(self, node: int, slot: int, counters: tuple[int, ...]) -> None:
        """Keep the node's latest cumulative counters, and the last ones before the warm-up ends."""
        if slot < self.warmup:
            self.base[node] = counters
        self.latest[node] = counters

    def end_slot(self, slot: int) -> None:
        super().end_slot(slot)
        self.unicast.end_slot(slot)
        self.last_slot = slot

    # -- sharded runs (:class:`slotnet.schemes.ShardMerging`) ------------------------------------
    def shard_start(self, nodes: range) -> None:
        """On a shard hosting ``nodes``, before any event."""
        super().shard_start(nodes)
        self.unicast.shard_start()

    def shard_slot(self, slot: int) -> list[Any]:
        """The broadcasts' and the unicasts' summaries of the slot."""
        return [super().shard_slot(slot), self.unicast.shard_slot(slot)]

    def merge_slot(self, slot: int, summaries: Sequence[Any]) -> None:
        """The shards' :meth:`shard_slot`, each part to its reporter."""
        super().merge_slot(slot, [s[0] for s in summaries])
        self.unicast.merge_slot(slot, [s[1] for s in summaries])

    def shard_state(self) -> dict[str, Any]:
        """The shard's books: the broadcasts', the unicasts', the link counters of its nodes and
        the unicasts its nodes' faults destroyed or copied."""
        return {**super().shard_state(), "unicast": self.unicast.shard_state(), "latest": self.latest,
                "base": self.base, "unicast_lost": dict(self.unicast_lost), "unicast_copies": self.unicast_copies}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The shards' :meth:`shard_state`, merged (each node's counters from its own shard)."""
        super().merge_shards(states)
        self.unicast.merge_shards([st["unicast"] for st in states])
        for st in states:
            for mine, theirs in ((self.latest, st["latest"]), (self.base, st["base"])):
                for v, counters in enumerate(theirs):
                    if counters is not None:
                        mine[v] = tuple(counters)
            self.unicast_lost.update(st["unicast_lost"])
            self.unicast_copies += st["unicast_copies"]

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        super().on_lost(slot, sender, port, receiver, message, cause)
        if _is_unicast(message):
            if cause == "dup":  # not a loss: a dup fault made one more copy (the ledger's convention)
                self.unicast_copies += 1
            else:
                self.unicast_lost[cause] += 1

    def _measured(self) -> list[list[int]]:
        """Per node, its counters over the measured window (latest minus warm-up baseline)."""
        out: list[list[int]] = []
        for cur, base in zip(self.latest, self.base):
            if cur is None:
                out.append([])
            elif base is None:
                out.append(list(cur))
            else:
                out.append([a - b for a, b in zip(cur, base)])
        return out

    def metrics(self) -> dict[str, Any]:
        out = super().metrics()
        if self.with_unicast:
            u = self.unicast.metrics()
            out["mean_unicast_delay"] = u["mean_delay"]
            out["mean_unicast_delay_ci95"] = u["mean_delay_ci95"]
            out["mean_unicast_hops"] = u["mean_hops"]
            out["unicasts_measured"] = u["packets_measured"]
        out.update(self._link_metrics())
        return out

    def _link_metrics(self) -> dict[str, Any]:
        top = self.setup.topology
        n_ports = top.n_links // top.n_nodes
        slots = self.last_slot - self.warmup + 1
        waits = [0] * 3
        counts = [0] * 3
        busiest = 0
        total = 0
        port_dim = [p.dim for p in top.ports(0)]  # the same on every node of a torus or cube
        dim_links = [port_dim.count(k) for k in range(top.d)]
        per_dim = [0] * top.d
        for row in self._measured():
            if not row:
                continue
            sent = row[:n_ports]
            total += sum(sent)
            for port, k in enumerate(port_dim):
                per_dim[k] += sent[port]
            busiest = max(busiest, max(sent))
            for t in range(3):
                waits[t] += row[n_ports + t]
                counts[t] += row[n_ports + 3 + t]
        out: dict[str, Any] = {}
        if slots > 0:
            mean = total / (top.n_links * slots)
            out["link_utilization"] = mean
            out["link_utilization_max"] = busiest / slots
            out["link_imbalance"] = busiest / slots / mean if mean else None
            out["link_utilization_per_dim"] = [v / (slots * top.n_nodes * c) for v, c in zip(per_dim, dim_links)]
        cls = _CLASS_OF[self.classes]

        def ratio(types: Sequence[int]) -> float | None:
            c = sum(counts[t] for t in types)
            return sum(waits[t] for t in types) / c if c else None

        out["mean_wait"] = ratio((0, 1, 2))
        out["mean_wait_high"] = ratio([t for t in range(3) if cls[t] == 0])
        if self.classes == 3:
            out["mean_wait_medium"] = ratio([t for t in range(3) if cls[t] == 1])
        out["mean_wait_low"] = ratio([t for t in range(3) if cls[t] == self.classes - 1])
        if self.with_unicast:
            out["mean_wait_unicast"] = ratio((1,))
        out["mean_wait_other_dims"] = ratio((0,))
        out["mean_wait_ending_dim"] = ratio((2,))
        return out

    def per_node(self) -> dict[str, list[Any]]:
        out = super().per_node()
        top = self.setup.topology
        n_ports = top.n_links // top.n_nodes
        out["sent_per_port"] = [row[:n_ports] for row in self._measured()]
        out["unicasts_delivered"] = self.unicast.node_delivered
        return out

    def crash_losses(self, losses: Sequence[tuple[int, int, Sequence[Any]]]) -> None:
        """What each crash destroyed in a node's queues (``(slot, node, held packets)``): the unicasts among them."""
        self.unicast_crashed = sum(1 for _, _, items in losses for key in items if key[0] < 0)

    def packet_books(self) -> Sequence[PacketBook]:
        """The broadcasts' book (``exactly_once``) and the unicasts' (``unicast_conservation``)."""
        return (*super().packet_books(), PacketBook("unicast_conservation", "unicast"))

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Exactly-once broadcast reception (kit) and conservation of unicast packets."""
        out = super().invariants(lost, in_flight, held)
        u_flight = [e for e in in_flight if _is_unicast(e[2])]
        u_held = [sum(1 for key in items if key[0] < 0) for items in self._holdings]
        u_lost = dict(sorted(self.unicast_lost.items()))
        crashed_queues = max(0, lost.get("crash", 0))
        if self.unicast_crashed:
            u_lost["crash"] = self.unicast_crashed
        if self.unicast_copies:
            u_lost["dup"] = -self.unicast_copies  # every extra copy is delivered, in flight, held or lost
        cons = self.unicast.invariants(u_lost, u_flight, u_held)["conservation"]
        if crashed_queues:
            cons["crashed_queues"] = crashed_queues
        out["unicast_conservation"] = cons
        if self.with_unicast:
            out.update(self.unicast.paths.invariants())
            assert self.unicast.witness is not None
            out.update(self.unicast.witness.invariants())
        return out


def _is_unicast(message: Any) -> bool:
    """A unicast header starts with ``-(source + 1) < 0`` (see :mod:`.node`)."""
    return isinstance(message, tuple) and len(message) == 6 and message[0] < 0
