"""How the fixed-schedule schemes of Varvarigos & Bertsekas meet a fault: node side and observer side.

The paper's §2 model has reliable synchronous links: every step moves exactly the
messages the schedule names, and each node knows from its coordinates (and, after the
scan, M) when each message must arrive. A fault breaks that: a message is lost, copied,
held back, or a node is stalled or restarted. A node knows only its own inbox, so it
handles each surprise where it happens, counts it, goes on with what it has, and never
raises (:data:`OFF_SCHEDULE` lists the surprises, ``why``):

* a message its schedule expects and that did not come by its step is *missed*: a scan
  takes the operation's identity for the missing partial sum (its result may be wrong;
  the reporter says where), a routing or broadcast node simply never gets the packet;
* a message that comes at a tick or step its schedule has no place for (late, a ``dup``
  fault's copy, a scan message in the routing phase) is dropped;
* a send the node can no longer make on time (it was stalled), on a port it sees dead or
  still busy, is not made: a scan message is dropped, a packet is kept and tried at the
  next step of the schedule (held for good, *stranded*, once the schedule has ended).

Where the algorithm cannot go on at all the node *stops* (:data:`STOPS`): a restarted
node has lost every partial sum and its place in the schedule (a restarted
``partial-exchange`` node still routes the packets that reach it: §5's Phase 2 needs no
state but the queues), and a node whose scan gave it no M cannot compute the broadcast
windows that M fixes. A node that stops, or
that has finished its part, never returns from ``run()``: it keeps reading what comes
(counted ``after end``), so a late message is never a message to a finished node.

Every surprise is recorded as ``off_schedule(phase, why)`` and every stop as
``stopped(phase, why)``; without faults none of them happens and nothing is recorded.
:class:`FaultNotes` is the reporters' side: it counts them, keeps the first, and says
whether the run met a fault at all (only then are the scheme's results reported as
damage beside the books instead of being judged).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import NodeContext

__all__ = ["FAULT_EVENTS", "OFF_SCHEDULE", "STOPS", "FaultNotes", "send_blocked", "sleep"]

#: Why a node went off its schedule (``off_schedule`` events). Only faults cause any of them.
OFF_SCHEDULE: Mapping[str, str] = {
    "missed": "a message the schedule expects did not arrive by its step (a scan takes the identity instead)",
    "off grid": "a message arrived between the schedule's steps (held back by a delay, or a dup fault's copy)",
    "unexpected": "a message arrived at a step where the schedule has no receive for it",
    "wrong phase": "a message of another phase arrived (a late scan message in the routing phase, ...)",
    "late send": "a send fell at a step already past (the node was stalled): not made",
    "dead port": "the send's port is dead as the node sees it: a scan message is dropped, a packet kept",
    "port busy": "the send's port still carries an earlier message: a scan message is dropped, a packet kept",
    "bad rank": "the scan gave a rank outside the packets' range: the packet cannot be routed and stays",
    "not packed": "a piece was not at its rank's node when packing ended: it is not broadcast",
    "stranded": "a packet the schedule can no longer move (its phases are over): kept here for good",
    "window over": "a subphase window closed with pieces still to send here: they are not sent",
    "unsent": "an active node without its row or column sum cannot pick R or C: its packets are never sent",
    "after end": "a message arrived after the node finished or stopped",
}

#: Why a node stopped for good (``stopped`` events).
STOPS: Mapping[str, str] = {
    "restarted": "the node restarted after a crash: its partial sums and its place in the schedule are gone",
    "no M": "the scan gave the node no total M (a message of its reverse half never came): "
            "the windows M fixes are unknown",
    "M disagrees": "the d class scans gave different totals: the interval's windows are unknown",
}

#: The events of this module (kind -> field names), for a reporter's ``events``.
FAULT_EVENTS: Mapping[str, tuple[str, ...]] = {"off_schedule": ("phase", "why"), "stopped": ("phase", "why")}


def send_blocked(ctx: NodeContext, port: int | None, size: float) -> str | None:
    """Why a send on ``port`` of ``size`` cannot be made now (:data:`OFF_SCHEDULE`), or None.

    Without faults every scheduled send is on a live port that is free, so this is None.
    """
    if port is None:  # no such port: nothing can leave here that way
        return "stranded"
    if not ctx.port_alive(port):
        return "dead port"
    if ctx.capacity_left(port) < size - 1e-12:
        return "port busy"
    return None


async def sleep(ctx: NodeContext, phase: str) -> None:
    """A node's end: it never returns, and counts whatever still reaches it (only under faults)."""
    while True:
        inbox = await ctx.idle()
        for _ in inbox:
            ctx.record("off_schedule", phase, "after end")


class FaultNotes:
    """The observer's side: ``off_schedule`` and ``stopped`` events, counted and the first kept."""

    def __init__(self, faults: bool) -> None:
        self.faults = faults
        self.off: Counter[str] = Counter()
        self.first: tuple[int, int, str, str] | None = None  # (slot, node, phase, why)
        self.stops: dict[int, tuple[int, str, str]] = {}  # node -> (slot, phase, why)

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {"off_schedule": self._off, "stopped": self._stopped}

    def _off(self, node: int, slot: int, phase: str, why: str) -> None:
        self.off[why] += 1
        key = (slot, node, phase, why)
        if self.first is None or key < self.first:
            self.first = key

    def _stopped(self, node: int, slot: int, phase: str, why: str) -> None:
        prev = self.stops.get(node)
        if prev is None or (slot, phase, why) < prev:
            self.stops[node] = (slot, phase, why)

    def shard_state(self) -> list[Any]:
        """The counts, the first record and each node's stop, as plain data (a shard's)."""
        return [dict(self.off), self.first, [[v, *stop] for v, stop in self.stops.items()]]

    def merge_shards(self, states: Sequence[Sequence[Any]]) -> None:
        """Add the shards' :meth:`shard_state`: counts summed, the first the least of them all,
        each node's stop from its own shard."""
        for off, first, stops in states:
            self.off.update(off)
            if first is not None and (self.first is None or tuple(first) < self.first):
                self.first = tuple(first)
            for v, *stop in stops:
                self.stops[v] = tuple(stop)

    def faulted(self, lost: Mapping[str, int]) -> bool:
        """Whether the run met a fault: the schedule holds one, or the ledger shows one."""
        return self.faults or any(n and c != "node_finished" for c, n in lost.items())

    def scheme_error(self, lost: Mapping[str, int]) -> bool:
        """Off-schedule records or stops in a run without a fault: a scheme error."""
        return not self.faulted(lost) and bool(self.off or self.stops)

    def report(self) -> dict[str, Any]:
        """The nodes' own account of what the faults did to the schedule."""
        out: dict[str, Any] = {"off_schedule": dict(sorted(self.off.items()))}
        if self.first is not None:
            slot, node, phase, why = self.first
            out["first_off_schedule"] = {"slot": slot, "node": node, "phase": phase, "why": why}
        by_why = Counter(why for _, _, why in self.stops.values())
        out["stopped_nodes"] = len(self.stops)
        if self.stops:
            out["stopped_by"] = dict(sorted(by_why.items()))
            node = min(self.stops, key=lambda v: (self.stops[v][0], v))
            slot, phase, why = self.stops[node]
            out["first_stopped"] = {"slot": slot, "node": node, "phase": phase, "why": why}
            out["stopped"] = sorted(self.stops)[:32]
        return out

    def finished_not_excused(self, check: dict[str, Any], lost: Mapping[str, int]) -> None:
        """Under faults, fail ``check`` if a message reached a node that returned from ``run()``
        (``node_finished``): no fault causes that (a node of these schemes never returns), so
        it is the scheme's error, for the schemes whose books have no ``no_message_lost``."""
        finished = lost.get("node_finished", 0)
        if finished:
            check["ok"] = False
            check["messages_to_finished_nodes"] = finished

    def no_message_lost(self, lost_messages: int, lost: Mapping[str, int]) -> dict[str, Any]:
        """``no_message_lost``: without faults none; under faults none but the faults' own
        (a message to a node that returned, ``node_finished``, would be the scheme's)."""
        if not self.faulted(lost):
            return {"ok": lost_messages == 0, "lost": lost_messages}
        by_cause = {c: n for c, n in lost.items() if n > 0}
        return {"ok": not lost.get("node_finished", 0), "lost": lost_messages, "by_cause": dict(sorted(by_cause.items()))}
