"""The verdict's two fault rules, judged by the observer in every run (``_verdict``):

* **no avoidable loss**: a message lost to a dead link or node (``link_down``,
  ``node_down``, ``partition``, ``stalled``) is *avoidable* when its sender's context
  already showed that port dead -- the failure detector's view, ``detect`` slots late --
  when it was sent, and the sender had a choice (a bufferless node with more packets than
  live ports is *forced*; the run's ledger says which dead-port losses were unforced).
  Any other loss is the fault's own (*excused*): sent before the fault could be known,
  state a crash destroyed, messages a message fault destroyed. Losses to ``node_finished``
  (a node that returned on purpose) are not judged; with ``detect=never`` nothing is
  avoidable;
* **no broadcast missed beyond the faults' own**: a broadcast (schemes whose reporter
  reads the kit's ``step`` event) that is incomplete at the end with no copy in flight or
  held is a miss at each node that never received it; a missing node is excused only if
  the faults cut it off from the origin (every path through a dead port or node) in some
  slot between the broadcast's birth and the end of the run (a crashed origin excuses
  every node). A copy destroyed in flight does not excuse the nodes behind it.

A :class:`FaultWitness` sees what the rules need through the observer's seams only: every
lost message (``on_lost``) and, for broadcast schemes, every birth and first reception of
the ``step`` event (it wraps that handler). Whoever runs the nodes -- the one-process
driver or a sharded run's coordinator, which replays its shards' events and losses --
opens one (``_open``; a sharded run whose shards report keeps one on every shard, whose
losses, births and receivers join the coordinator's at the end: :meth:`FaultWitness.merge_shards`),
and ``_collect`` judges it with the end-of-run state
(:meth:`FaultWitness.judge`). ``explore``, random campaigns, ``--shrink`` and ``slotnet
check`` read the verdict and these books off the result; they judge nothing themselves.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from slotnet.fabric import NOTE_CAUSES, FaultLedger, FaultSchedule, PortTimeline, Topology

__all__ = ["DEAD_CAUSES", "FaultJudgement", "FaultWitness", "watches_broadcasts"]

#: Loss causes of a dead link or node: avoidable once the sender saw the port dead.
DEAD_CAUSES = ("link_down", "node_down", "partition", "stalled")
#: Loss causes that are no fault's doing (not judged).
_NOT_FAULTS = ("node_finished",)


@dataclass(frozen=True)
class FaultJudgement:
    """The fault rules' books and the verdict's reasons from them.

    ``lost``: every lost message by book (``excused``, ``avoidable``, ``forced``, ``other``,
    each by cause; ``first_avoidable``: ``(send slot, sender, port, receiver, cause)`` of
    the first avoidable loss where there is one: the earliest sent, then by sender, so the
    same whatever order the losses were reported in, in one process or over shards). ``missed``: the broadcasts that missed
    reachable nodes (None for a scheme without broadcasts). ``reasons``: one line per
    broken rule.
    """

    lost: dict[str, Any]
    missed: dict[str, Any] | None
    reasons: tuple[str, ...]


def watches_broadcasts(events: Mapping[str, Sequence[str]]) -> bool:
    """Whether a scheme recording ``events`` records the kit's broadcast ``step`` event, whose
    births and receptions the missed-broadcast rule reads."""
    return tuple(events.get("step", ()))[:2] == ("births", "received")


class FaultWitness:
    """What the fault rules need, seen as the run goes (see the module docstring)."""

    def __init__(self, topology: Topology, events: Mapping[str, Sequence[str]], shard: range | None = None) -> None:
        self.n = topology.n_nodes
        #: on a shard, the nodes it hosts: a broadcast's receivers are then noted until the end
        #: (the others are other shards'), and :meth:`shard_state` hands them over
        self.shard = shard
        #: (send slot, sender, port, receiver, cause) of every message lost
        self.losses: list[tuple[int, int, int, int, str]] = []
        #: the scheme records the kit's broadcast ``step`` event
        self.broadcasts = watches_broadcasts(events)
        #: (origin, seq) -> birth time, of every broadcast not yet complete
        self.born: dict[tuple[int, int], float] = {}
        #: (origin, seq) -> the nodes other than its origin that received it (incomplete ones)
        self.got: dict[tuple[int, int], set[int]] = {}

    def wrap(self, handlers: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]:
        """The handlers, the ``step`` one also noting births and receptions (broadcast schemes)."""
        out = dict(handlers)
        if not self.broadcasts or "step" not in out:
            return out
        out["step"] = self._watch(out["step"])
        return out

    def _watch(self, step: Callable[..., None]) -> Callable[..., None]:
        """The ``step`` handler, noting births and receivers until a broadcast is complete here:
        every node here but its origin received it (here: the shard's nodes, or all of them in
        one process). Its books then go in one process (nothing is left to judge); a shard
        keeps it as ``None`` (all of its nodes), for :meth:`shard_state` to hand over.

        A reception of a complete broadcast (a dup fault's late copy, which a scheme may take
        as a first reception again) is not noted: on a shard it finds ``None``; in one process
        it finds no birth, which every reception follows (a packet sent in slot ``t`` arrives in
        ``t + 1``, and its origin reports the birth in the slot it sends it). In one process
        the books then hold incomplete broadcasts only (a shard keeps every broadcast's until
        the end, to hand over).
        """
        born, got = self.born, self.got
        nodes = range(self.n) if self.shard is None else self.shard
        size, lo, hi = len(nodes), nodes.start, nodes.stop
        keep = self.shard is not None

        def watched(node: int, slot: int, births: Any, received: Any, *rest: Any) -> None:
            for seq, tau in births:
                born[(node, seq)] = tau
            for key in received:
                if key[0] != node:
                    k = (key[0], key[1])
                    seen = got.get(k)
                    if seen is None:
                        if (k in got) if keep else (k not in born):  # complete: a late copy
                            continue
                        seen = got[k] = set()
                    seen.add(node)
                    if len(seen) >= size - (lo <= k[0] < hi):
                        if keep:
                            got[k] = None  # type: ignore[assignment]
                        else:
                            del born[k], got[k]
            step(node, slot, births, received, *rest)
        return watched

    def shard_state(self) -> dict[str, Any]:
        """A shard's witness, as plain data: its losses, and the births and receivers of its nodes."""
        out: dict[str, Any] = {"losses": self.losses}
        if self.broadcasts:
            out["born"] = [[o, q, tau] for (o, q), tau in self.born.items()]
            out["got"] = [[o, q, None if seen is None else sorted(seen)] for (o, q), seen in self.got.items()]
        return out

    def merge_shards(self, states: Sequence[Mapping[str, Any]], nodes: Sequence[range]) -> None:
        """Add the shards' :meth:`shard_state` (``nodes``: each shard's hosts): their losses, and
        each broadcast's births and receivers as one process would have noted them -- complete
        (every node but its origin reached) ones dropped, as there.

        One case is not the one-process books: a node that bears a packet under a name it
        used before, after the first packet of that name completed (one process then starts
        the name's receivers afresh; the shards' receivers of both packets are merged). That is
        a broken scheme, which the broadcast reporter's ``exactly_once`` already fails
        (``reused_names``); the missed-broadcast rule may then differ from one process.
        """
        for st in states:
            self.losses.extend(tuple(x) for x in st["losses"])  # judged order-free
        if not self.broadcasts:
            return
        for st in states:
            for o, q, tau in st["born"]:
                self.born[(o, q)] = tau
        counts: dict[tuple[int, int], int] = {}
        parts: dict[tuple[int, int], list[tuple[range, Any]]] = {}
        for st, hosts in zip(states, nodes):
            for o, q, seen in st["got"]:
                k = (o, q)
                counts[k] = counts.get(k, 0) + (len(hosts) - (o in hosts) if seen is None else len(seen))
                parts.setdefault(k, []).append((hosts, seen))
        full = self.n - 1
        for k, count in counts.items():
            if count >= full and k in self.born:
                del self.born[k]
                continue
            got = self.got[k] = set()
            for hosts, seen in parts[k]:
                got.update((v for v in hosts if v != k[0]) if seen is None else seen)

    def on_lost_with(self, then: Callable[..., None]) -> Callable[..., None]:
        """An ``on_lost`` that notes the loss, then tells ``then``."""
        losses = self.losses

        def on_lost(slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
            if cause not in NOTE_CAUSES:  # a copy a dup fault added is no loss
                losses.append((slot, sender, port, receiver, cause))
            then(slot, sender, port, receiver, message, cause)
        return on_lost

    def judge(self, topology: Topology, faults: FaultSchedule, ledger: FaultLedger,
              in_flight: Sequence[tuple[int, int, Any]], held_packets: Sequence[Any], slots_run: int) -> FaultJudgement:
        """The books and reasons at the end of a run (``in_flight``: ``(receiver, port, message)``
        still moving; ``held_packets``: per node, what it holds)."""
        timeline = faults.port_timeline(topology)
        lost = _judge_losses(self.losses, ledger, timeline, faults.detect)
        missed = None
        if self.broadcasts:
            moving = {_key(m) for _, _, m in in_flight}
            for items in held_packets:
                moving.update(_key(x) for x in items or ())
            missed = _judge_misses(self, topology, faults, timeline, slots_run, moving)
        reasons = []
        first = lost.get("first_avoidable")
        if first is not None:
            reasons.append(f"{_count(sum(lost['avoidable'].values()), 'avoidable loss', 'avoidable losses')} "
                           f"(first sent in slot {first[0]}, {first[1]}->{first[3]})")
        if missed and missed["broadcasts"]:
            f = missed["first"]
            reasons.append(f"{_count(missed['broadcasts'], 'broadcast')} missed {_count(missed['nodes'], 'reachable node')} "
                           f"(first: {f['origin']},{f['seq']} at {','.join(map(str, f['missing_nodes']))})")
        return FaultJudgement(lost, missed, tuple(reasons))


def _key(x: Any) -> Any:
    if isinstance(x, (list, tuple)) and len(x) >= 2:
        try:
            return (x[0], x[1])
        except TypeError:  # pragma: no cover - an unhashable packet
            return None
    return None


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _judge_losses(losses: Sequence[tuple[int, int, int, int, str]], ledger: FaultLedger, timeline: PortTimeline,
                  detect: int | None) -> dict[str, Any]:
    """Every lost message by cause: the fault's own (``excused``), ``avoidable``, ``forced``, or ``other``.

    A loss on a port its sender saw dead is avoidable unless the send was forced: the
    sender had no port it saw alive left idle in that slot. The witness sees losses, not
    the sender's other ports, so it takes forcedness from the ledger's own count of
    unforced dead-port losses by cause (``ledger.avoidable``): a cause the run found none
    of is forced.
    """
    unforced = ledger.avoidable
    books: dict[str, dict[str, int]] = {"excused": {}, "avoidable": {}, "forced": {}, "other": {}}
    first = None
    seen: dict[str, int] = {}
    for sent, sender, port, receiver, cause in losses:
        seen[cause] = seen.get(cause, 0) + 1
        book = "other" if cause in _NOT_FAULTS else "excused"
        if (cause in DEAD_CAUSES and detect is not None and sender >= 0
                and timeline.dead_mask(sender, sent - detect) >> port & 1):
            book = "avoidable" if unforced.get(cause) else "forced"
            loss = (sent, sender, port, receiver, cause)
            if book == "avoidable" and (first is None or loss < first):  # the least: whatever order they came in
                first = loss
        books[book][cause] = books[book].get(cause, 0) + 1
    for cause, n in dict(ledger).items():  # lost without a message to judge (a crash's held state)
        extra = n - seen.get(cause, 0)
        if extra > 0:
            book = "other" if cause in _NOT_FAULTS else "excused"
            books[book][cause] = books[book].get(cause, 0) + extra
    out: dict[str, Any] = dict(books)
    if first is not None:
        out["first_avoidable"] = first
    return out


def _epochs(schedule: FaultSchedule, timeline: PortTimeline, end: int) -> list[tuple[int, int, frozenset[int]]]:
    """``(first, last + 1, crashed nodes)`` for each stretch of slots in which no port or node changes."""
    bounds = {0}
    for slots, _ in timeline.values():
        bounds.update(slots)
    crashes = sorted((ev.slot, ev.kind, ev.node) for ev in schedule.events if ev.kind in ("crash", "recover"))
    bounds.update(s for s, _, _ in crashes)
    cuts = sorted(b for b in bounds if b < end)
    out = []
    for i, a in enumerate(cuts):
        dead: set[int] = set()
        for s, kind, v in crashes:
            if s <= a:
                (dead.add if kind == "crash" else dead.discard)(v)
        out.append((a, cuts[i + 1] if i + 1 < len(cuts) else max(end, a + 1), frozenset(dead)))
    return out


def _reachable(topology: Topology, origin: int, slot: int, dead: frozenset[int],
               timeline: PortTimeline) -> set[int]:
    """The nodes ``origin`` reaches in ``slot`` through live ports (none if it is crashed)."""
    if origin in dead:
        return set()
    seen = {origin}
    stack = [origin]
    while stack:
        v = stack.pop()
        mask = timeline.dead_mask(v, slot)
        for p in topology.ports(v):
            if p.neighbour not in seen and p.neighbour not in dead and not mask >> p.index & 1:
                seen.add(p.neighbour)
                stack.append(p.neighbour)
    return seen


def _judge_misses(w: FaultWitness, topology: Topology, schedule: FaultSchedule, timeline: PortTimeline,
                  end: int, moving: set[Any]) -> dict[str, Any]:
    """Broadcasts that missed nodes no fault cut off from their origin (see the module doc)."""
    n = topology.n_nodes
    epochs = _epochs(schedule, timeline, end)
    cache: dict[tuple[int, int], set[int]] = {}
    count = nodes = excused = 0
    first: dict[str, Any] | None = None
    for key in sorted(w.born):
        got = w.got.get(key, set())
        origin = key[0]
        if len(got - {origin}) >= n - 1 or key in moving:
            continue
        born = int(math.floor(w.born[key]))
        missing = [v for v in range(n) if v != origin and v not in got]
        cut: set[int] = set()
        for i, (a, b, dead) in enumerate(epochs):
            if b <= born:
                continue
            if (i, origin) not in cache:
                cache[(i, origin)] = set(range(n)) - _reachable(topology, origin, a, dead, timeline)
            cut |= cache[(i, origin)]
        bad = [v for v in missing if v not in cut]
        excused += len(missing) - len(bad)
        if bad:
            count += 1
            nodes += len(bad)
            if first is None:
                first = {"origin": origin, "seq": key[1], "born": w.born[key], "missing_nodes": bad[:16]}
    return {"broadcasts": count, "nodes": nodes, "excused_receptions": excused, "first": first}
