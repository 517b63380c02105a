"""One node's part in one PMNB interval of §6 -- Theorem 6's algorithm with mini-packets
-- as a pure state machine, and a step-by-step reference run of a whole interval.

Varvarigos & Bertsekas §4.1 (Phases 1-3, Theorem 6, footnote 3) as used by §6. Every
node holds at most one packet ``(origin, seq)`` at the interval's start. The packet is
split into d mini-packets, class c routed by algorithm ``A_c``: its rank r^c is the
exclusive prefix of the activity bits in the order ``<_c`` (tree ``P^c``); it is packed
to node r^c of that order (Theorem 3 on the rotated digits); then broadcast in d
subphases, subphase l along digit ``d - l`` of the order, i.e. dimension
``(d - l + c) mod d``. The steps and their lengths are :class:`IntervalSchedule`'s.

Broadcast rounds (Lemma 1). At the start of subphase l a node holds the set
``W_l(s)`` of mini-packets of class c it received in earlier subphases (or was packed
with); in round j it sends its j-th one along its line. On an array the mini-packet
goes whole to both sides and every node passes on what reaches it from one side to the
other side; on a ring one half goes each way round, ``p - 1`` hops (the Remark after
Theorem 2). Either way a round is ``p - 1`` steps and every directed link carries at
most one piece per step. What a node receives in subphase l joins its set for l + 1.

A node *receives* a packet when it holds all d mini-packets (both halves of each on a
ring; a node a mini-packet was packed to holds it whole). Its own packet is never
counted. A piece arriving twice is recorded in :attr:`IntervalNode.duplicates`.

Messages: ``("p", c, scan payload)``, ``("k", c, origin, seq, rank)``,
``("b", c, origin, seq, half, hops)``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._dynamic_schedule import IntervalSchedule
from ._packing import packing_port
from ._prefix import ScanNode, coords_at, rotation, scan_events

__all__ = ["IntervalNode", "IntervalOutcome", "simulate_interval"]

Key = tuple[int, int]
Send = tuple[int, int, tuple[Any, ...]]


class IntervalNode:
    """One node in one interval: call :meth:`incoming` for what arrived, then :meth:`outgoing`.

    Args:
        coords: the node's coordinates (dimension 0 first).
        schedule: the interval's timetable.
        wrap: True on a torus.
        packet: ``(origin, seq)`` of the packet it broadcasts in this interval, or None.
    """

    def __init__(self, coords: Sequence[int], schedule: IntervalSchedule, wrap: bool, packet: Key | None) -> None:
        self.coords = tuple(coords)
        self.sched = schedule
        self.p, self.d = schedule.p, schedule.d
        self.sides = (self.p,) * self.d
        self.wrap = wrap
        self.packet = packet
        self.orders = [rotation(c, self.d) for c in range(self.d)]
        value = 0 if packet is None else 1
        self.scans = [ScanNode(self.coords, self.sides, value, order=o) for o in self.orders]
        self._scan_sends = sorted({e.step for o in self.orders for e in scan_events(self.coords, self.sides, o)
                                   if e.action == "send"})
        self.m: int | None = None
        self.held: list[list[tuple[int, int, int]]] = [[] for _ in range(self.d)]
        self.base: list[list[Key]] = [[] for _ in range(self.d)]
        self.new: list[list[Key]] = [[] for _ in range(self.d)]
        self._sub = 1
        self._halves: dict[tuple[int, int, int], int] = {}
        self._classes: dict[Key, int] = {}
        self._full = (1 << self.d) - 1
        self.completed: list[Key] = []
        self.duplicates: list[tuple[int, int, int]] = []
        self._fwd: list[Send] = []
        self._fwd_step = -1
        #: forwards dropped because their step had passed (faults only)
        self.late = 0

    # -- what the node knows ------------------------------------------------------------
    def _prefix_check(self) -> None:
        if self.m is not None or not all(sc.done for sc in self.scans):
            return
        totals = {sc.total for sc in self.scans}
        if len(totals) != 1:
            raise AssertionError(f"node {self.coords}: the class prefixes disagree on M: {sorted(totals)}")
        self.m = totals.pop()
        if self.packet is None:
            return
        o, s = self.packet
        for c, sc in enumerate(self.scans):
            rank = sc.exclusive
            if coords_at(rank, self.sides, self.orders[c]) == self.coords:
                self.base[c].append(self.packet)
            else:
                self.held[c].append((o, s, rank))

    def _advance(self, l: int) -> None:
        while self._sub < l:
            for c in range(self.d):
                self.base[c].extend(self.new[c])
                self.new[c] = []
            self._sub += 1

    def _note(self, key: Key, c: int) -> None:
        mask = self._classes.get(key, 0)
        bit = 1 << c
        if mask & bit:
            self.duplicates.append((key[0], key[1], c))
            return
        mask |= bit
        self._classes[key] = mask
        if mask == self._full and key != self.packet:
            self.completed.append(key)

    def _need_m(self) -> int:
        if self.m is None:
            raise AssertionError(f"node {self.coords}: past the prefix without knowing M")
        return self.m

    # -- the step rule ------------------------------------------------------------------
    def outgoing(self, step: int) -> list[Send]:
        """What this node sends at ``step``: ``(dim, direction, message)``."""
        out: list[Send] = []
        phase = self.sched.phase(step)
        if phase == "prefix":
            for c, sc in enumerate(self.scans):
                out += [(dim, dr, ("p", c, pl)) for dim, dr, pl in sc.outgoing(step)]
            self._prefix_check()
            return out
        m = self._need_m()
        if phase == "packing":
            k = step - self.sched.prefix_steps
            for c in range(self.d):
                keep, used = [], set()
                for o, s, r in self.held[c]:
                    hop = packing_port(self.coords, coords_at(r, self.sides, self.orders[c]), k, self.sides, self.orders[c])
                    if hop is None:
                        keep.append((o, s, r))
                        continue
                    if hop in used:
                        raise AssertionError(f"node {self.coords}: two class-{c} packets want link {hop} at step {step}")
                    used.add(hop)
                    out.append((hop[0], hop[1], ("k", c, o, s, r)))
                self.held[c] = keep
            return out
        l, j, t = self.sched.broadcast_position(step, m)
        self._advance(l)
        if t == 0:
            for c in range(self.d):
                if j < len(self.base[c]):
                    o, s = self.base[c][j]
                    dim = self.orders[c][self.d - l]
                    if self.wrap:
                        out += [(dim, +1, ("b", c, o, s, 0, 1)), (dim, -1, ("b", c, o, s, 1, 1))]
                    else:
                        out += [(dim, dr, ("b", c, o, s, 0, 1)) for dr in (+1, -1) if 0 <= self.coords[dim] + dr < self.p]
        if self._fwd:
            if self._fwd_step == step:
                out += self._fwd
                self._fwd = []
            elif self._fwd_step < step:  # faults only: the node was not awake at their step
                self.late += len(self._fwd)
                self._fwd = []
        return out

    def incoming(self, step: int, dim: int, direction: int, message: Sequence[Any]) -> None:
        """Take ``message`` sent at ``step`` by the neighbour at ``coords + direction e_dim``."""
        kind = message[0]
        if kind == "p":
            self.scans[message[1]].incoming(step, dim, direction, message[2])
            self._prefix_check()
            return
        if kind == "k":
            _, c, o, s, r = message
            if coords_at(r, self.sides, self.orders[c]) == self.coords:
                self.base[c].append((o, s))
                self._note((o, s), c)
            else:
                self.held[c].append((o, s, r))
            return
        _, c, o, s, half, hops = message
        l, _j, _t = self.sched.broadcast_position(step, self._need_m())
        self._advance(l)
        travel = -direction
        if self.wrap:
            key = (o, s, c)
            mask = self._halves.get(key, 0)
            if mask & (1 << half):
                self.duplicates.append(key)
            elif mask | (1 << half) == 3:
                del self._halves[key]
                self.new[c].append((o, s))
                self._note((o, s), c)
            else:
                self._halves[key] = mask | (1 << half)
            onward = hops < self.p - 1
        else:
            self.new[c].append((o, s))
            self._note((o, s), c)
            onward = 0 <= self.coords[dim] + travel < self.p
        if onward:
            self._fwd.append((dim, travel, ("b", c, o, s, half, hops + 1)))
            self._fwd_step = step + 1

    # -- when to wake -------------------------------------------------------------------
    def next_send_step(self, after: int) -> int | None:
        """The first step after ``after`` at which this node sends whatever it receives
        meanwhile (forwards triggered by a reception happen at the reception's step)."""
        cands: list[int] = []
        if self._fwd:
            cands.append(self._fwd_step)
        i = bisect_right(self._scan_sends, after)
        if i < len(self._scan_sends):
            cands.append(self._scan_sends[i])
        m = self.m
        if m:
            sched = self.sched
            pre, pack = sched.prefix_steps, sched.packing_steps
            if after + 1 < pre + pack:
                for c in range(self.d):
                    for _o, _s, r in self.held[c]:
                        target = coords_at(r, self.sides, self.orders[c])
                        for k in range(max(0, after + 1 - pre), pack):
                            if packing_port(self.coords, target, k, self.sides, self.orders[c]) is not None:
                                cands.append(pre + k)
                                break
            plan = sched.plan(m)
            p1 = self.p - 1
            for l in range(self._sub, self.d + 1):
                start, rounds = plan.starts[l - 1], plan.rounds[l - 1]
                j0 = max(0, -((start - after - 1) // p1))
                if j0 >= rounds:
                    continue
                for c in range(self.d):
                    count = len(self.base[c]) + (len(self.new[c]) if l > self._sub else 0)
                    if j0 < count:
                        cands.append(start + j0 * p1)
                        break
        return min(cands) if cands else None


@dataclass(frozen=True)
class IntervalOutcome:
    """What one reference interval did.

    Attributes:
        m: active nodes (every node's M agreed with it).
        steps: the timetable's steps; length: its length in time units.
        messages: messages sent; link_conflicts: (step, link) pairs used twice.
        receptions: node id -> packets (origin, seq) it received, in order.
        last_reception: the step after which the last packet was complete somewhere.
        duplicates: pieces received twice.
    """

    m: int
    steps: int
    length: float
    messages: int
    link_conflicts: int
    receptions: Mapping[int, list[Key]]
    last_reception: int
    duplicates: int


def simulate_interval(active: Iterable[int], sides: Sequence[int], wrap: bool, *, tp_ticks: int = 1,
                      quantum: int | None = None, lazy: bool = False) -> IntervalOutcome:
    """Run one interval with the packets ``(v, 0)`` of the active nodes v, step by step.

    Args:
        active: active node ids (dimension 0 fastest).
        sides, wrap: a p^d torus (wrap) or array.
        tp_ticks, quantum: durations (only the reported length depends on them).
        lazy: step a node only when a message reached it or at its
            :meth:`IntervalNode.next_send_step` (as the network runs it); otherwise every
            node at every step.
    """
    s = tuple(sides)
    g, d = (2 if wrap else 1), len(s)
    q = quantum if quantum is not None else g * d
    sched = IntervalSchedule.build(s, wrap, tp_ticks, q)
    n = math.prod(s)
    act = set(active)
    nodes = [IntervalNode(coords_at(v, s), sched, wrap, (v, 0) if v in act else None) for v in range(n)]
    strides = [math.prod(s[:k]) for k in range(d)]
    inbox: dict[int, list[tuple[int, int, Any]]] = {}
    due: dict[int, int | None] = {v: 0 for v in range(n)}
    messages = conflicts = 0
    last = 0
    step = 0
    total = sched.n_steps(len(act))
    while step < total:
        arrivals, inbox = inbox, {}
        for v, node in enumerate(nodes):
            got = arrivals.get(v, [])
            if lazy and not got and due[v] != step:
                continue
            before = len(node.completed)
            for dim, dr, msg in got:
                node.incoming(step - 1, dim, dr, msg)
            if len(node.completed) > before:
                last = step
            used = set()
            for dim, dr, msg in node.outgoing(step):
                if (dim, dr) in used:
                    conflicts += 1
                used.add((dim, dr))
                x = node.coords[dim] + dr
                if wrap:
                    x %= s[dim]
                elif not 0 <= x < s[dim]:
                    raise AssertionError(f"node {v} sent off the array at step {step}")
                u = v + (x - node.coords[dim]) * strides[dim]
                inbox.setdefault(u, []).append((dim, -dr, msg))
                messages += 1
            due[v] = node.next_send_step(step)
        step += 1
        total = sched.n_steps(nodes[0].m if nodes[0].m is not None else len(act))
    for v, node in enumerate(nodes):
        before = len(node.completed)
        for dim, dr, msg in inbox.get(v, []):
            node.incoming(step - 1, dim, dr, msg)
        if len(node.completed) > before:
            last = step
    ms = {node.m for node in nodes}
    if ms != {len(act)}:
        raise AssertionError(f"nodes disagree on M: {sorted(x for x in ms if x is not None)}, expected {len(act)}")
    return IntervalOutcome(
        m=len(act), steps=total, length=sched.length(len(act)), messages=messages, link_conflicts=conflicts,
        receptions={v: list(node.completed) for v, node in enumerate(nodes)}, last_reception=last,
        duplicates=sum(len(node.duplicates) for node in nodes),
    )
