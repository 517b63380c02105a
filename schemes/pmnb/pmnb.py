"""``pmnb``: partial multinode broadcast -- rank by prefix, packing, d broadcast subphases (§4.1, §4.2).

With splitting (``split=true``, §4.1, Theorem 6): every packet is cut into d mini-packets
of 1/d; class c runs algorithm ``A_c``, i.e. ``A_0`` on the dimensions renamed by
``rotation(c, d)`` (footnote 3):

1. rank: d prefix scans at once, class c's on its tree ``P^c`` (value 1 on active
   nodes), ``2 d (p - 1)`` steps of t_p; each node learns M (the total) and, if active,
   its rank ``r^c`` in the order ``<_c``;
2. packing: class c's mini-packet goes to the node of class-order index ``r^c``
   (Theorem 3 with the renamed dimensions), ``d (p - 1)`` steps of 1/d;
3. broadcast: subphases l = 1..d, class c on dimension ``order_c[d - l]``; in each, every
   node broadcasts along that line what it held at the subphase's start, by Theorem 2's
   greedy rule (:mod:`._line`). On a torus each mini-packet is halved, one half
   per direction, all the way round (pieces of 1/(2d), quantum 2d).

At every step the d classes use d distinct dimensions (equal sides keep their phases
aligned), so no link ever carries two classes at once. The subphase windows are the
same at every node: each node computes them from M alone (:func:`._line.broadcast_windows`).

Without splitting (``split=false``, §4.2): a first scan gives every active node its rank
r and class ``r mod d``; then class c runs ``A_c`` with whole packets, its own rank scan
(value 1 on class-c nodes) in the second ``2 d (p - 1) t_p``; packing in ``d (p - 1)``
whole steps; subphase windows from the largest class's counts (see
``_theory_static``: classes must share their windows or they drift onto one dimension).
On a torus whole copies take the two shorter arcs of each ring.

A node stops once it has every active packet (all its pieces) and has nothing left to
send in the last subphase. Messages: ``["s", key, payload]`` (scans; key d is §4.2's
class-computation scan), ``["k", c, origin, rank]`` (packing), ``["b", c, l, origin,
hops]`` (broadcast, hops made so far).

Readings where the paper leaves room (see also ``_prefix``, ``_packing``, ``_theory_static``):

* Phase 3 (§4.1): "Phase 3 is easy to implement since the current subphase l is easily
  known" -- each subphase gets a fixed window that every node computes from M alone,
  the longest time Theorem 2's greedy rule needs on any line of that subphase; it is
  never longer than Lemma 1's ``(p - 1)/gamma max |W_l(s)|`` (tested for every M).
* Lemma 1 on tori halves the mini-packets (pieces of 1/(2d)); §4.2 on tori sends whole
  copies along the two shorter arcs (the Remark's ``floor(p/2)``).
* §4.2: "only packets of class c take part in the rank computation phase" of ``A_c`` --
  a second scan per class after the class scan, hence (5')/(6')'s ``4(p-1)d t_p``; the
  windows follow the largest class, ``ceil(M/d)``.
* ``completion_time`` is the last reception (quiescence), not the end of the last window.
* pmnb needs equal sides (the classes' phases must align); the scans and the routing
  schemes run on any sides.

The reporter's metrics (paper units): ``prefix_time`` (the scans, exactly
``2 d (p-1) t_p``, twice that without splitting), ``packing_time`` (last packing arrival
after the scans), ``broadcast_time`` (last reception after packing), ``completion_time``
(the driver's quiescence time, their sum). Invariants: every node receives every active packet
(all its pieces) exactly once, ranks and M match a sequential count, no broadcast piece
outlived its subphase window, nothing lost.

Theory: the covering bound is (5)/(6) (Theorem 6) with splitting, (5')/(6') without; the
lower bound is (3)/(4) (with a ceiling for whole packets) or, where larger, the bound for
the placement at hand (:func:`.theory.pmnb_bounds`). Per phase: the exact scan time, the
packing bound (``p - 1`` with 1/d mini-packets, ``d (p - 1)`` whole), and the broadcast
bound of Lemma 1 (scaled by 1/d with splitting) or of §4.2's ``A_c``. Under faults see :mod:`._offschedule`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Inbox, Node

from .._base import Claim, Inputs, Param, Scheme, Setup, parse_bool
from ..kit import BaseReporter
from ..kit._completion import parked_when_done
from . import theory as th
from ._inputs import (
    ACTIVE,
    PLACEMENT,
    PLACEMENT_SEED,
    SOURCE,
    TP,
    Given,
    PmnbInputs,
    active_ids,
    check_grid,
    completion_claims,
    equal_side,
    is_active,
    quantum_for,
    safety_cap,
)
from ._line import broadcast_windows, hop_limits
from ._offschedule import FAULT_EVENTS, FaultNotes, send_blocked, sleep
from ._packing import packing_port, packing_steps, rank_destination, ranks
from ._prefix import ScanNode, rotation, scan_steps
from ._scan import ScanPhase, port_label

__all__ = ["SCHEME", "PmnbNode", "PmnbReporter", "Timeline", "expected_ranks", "prepare_pmnb", "theory_pmnb", "timeline"]


class Timeline:
    """Ticks of the phase boundaries of one run (every node computes the same)."""

    def __init__(self, sides: tuple[int, ...], wrap: bool, split: bool, tp: float, q: int, m: int) -> None:
        d, p = len(sides), sides[0]
        self.d, self.p, self.split = d, p, split
        self.gamma = 2 if wrap else 1
        self.halves = split and wrap
        self.u_scan = round(tp * q)
        scans = 1 if split else 2
        self.scan_end = scans * 2 * scan_steps(sides) * self.u_scan
        self.u_pack = q // d if split else q
        self.pack_end = self.scan_end + packing_steps(sides) * self.u_pack
        self.u_bcast = q // (self.gamma * d) if split else q
        self.windows = broadcast_windows(m, p, d, wrap, split)
        starts = [self.pack_end]
        for w in self.windows:
            starts.append(starts[-1] + w * self.u_bcast)
        #: start tick of subphase l at index l - 1; the end of the last at index d
        self.starts = starts
        self.pack_size = 1.0 / d if split else 1.0
        self.bcast_size = 1.0 / (self.gamma * d) if split else 1.0


@functools.lru_cache(maxsize=256)
def timeline(sides: tuple[int, ...], wrap: bool, split: bool, tp: float, q: int, m: int) -> Timeline:
    """:class:`Timeline` (a pure function of its arguments, cached across the nodes of a run)."""
    return Timeline(sides, wrap, split, tp, q, m)


class PmnbNode(Node):
    """One node of the PMNB: its scans, the packets it holds, its line broadcasts."""

    async def run(self) -> None:
        ctx = self.ctx
        prm: PmnbInputs = ctx.params
        self.sides = tuple(ctx.geometry.sides)
        self.d = len(self.sides)
        self.wrap = ctx.geometry.kind == "torus"
        self.split = prm.split
        self.orders = [rotation(c, self.d) for c in range(self.d)]
        if ctx.incarnation:  # restarted: its partial sums, its pieces and its place in the schedule are gone
            ctx.record("stopped", "scan", "restarted")
            await sleep(ctx, "pmnb")
        active = is_active(ctx.node, prm.active)
        self.early: list[tuple[int, Any]] = []
        got_m, mine, last_scan = await self._ranks(active)
        ctx.record("ranked", -1 if got_m is None else got_m, sorted(mine.items()))
        if got_m is None:  # faults only: without M the windows are unknown
            ctx.record("stopped", "scan", "no M")
            await sleep(ctx, "pmnb")
        m = int(got_m or 0)
        if m == 0:
            ctx.record("summary", last_scan, -1, -1, 0)
            await sleep(ctx, "pmnb")
        self.tl = timeline(self.sides, self.wrap, self.split, prm.tp, ctx.quantum, m)
        await self._route(m, mine)
        ctx.record("summary", last_scan, self.last_pack, self.last_bcast, self.overruns)
        await sleep(ctx, "pmnb")

    # -- phase 1 --------------------------------------------------------------------------
    async def _scan(self, phase: ScanPhase) -> None:
        ctx = self.ctx
        inbox: Inbox = ()
        while True:
            for port, msg in inbox:
                if isinstance(msg, (list, tuple)) and len(msg) == 3 and msg[0] == "s":
                    phase.receive(ctx.slot, port, msg[1], msg[2])
                else:  # a piece for a node still in its scan (it was stalled): handled when routing starts
                    self.early.append((port, msg))
            phase.send_due(ctx.slot)
            if phase.done:
                return
            nxt = phase.next_tick(ctx.slot)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())

    async def _ranks(self, active: bool) -> tuple[int | None, dict[int, int], int]:
        """(M, class -> this node's rank in that class, tick of the last scan message); M is
        None if a fault kept the total from this node (see :mod:`._offschedule`)."""
        ctx, sides, d = self.ctx, self.sides, self.d
        tp = ctx.params.tp
        u = round(tp * ctx.quantum)
        steps = scan_steps(sides)
        start, m = 0, -1
        member = {c: active for c in range(d)}
        if not self.split:
            first = ScanNode(ctx.coords, sides, int(active))
            phase = ScanPhase(ctx, {d: first}, 0, u, 2 * steps, tp, {d: steps})
            await self._scan(phase)
            m = first.total
            if m is None:
                return None, {}, phase.last_down
            cls = (first.inclusive - 1) % d if active else -1
            member = {c: c == cls for c in range(d)}
            start = phase.end
        scans = {c: ScanNode(ctx.coords, sides, int(member[c]), order=self.orders[c]) for c in range(d)}
        phase = ScanPhase(ctx, scans, start, u, 2 * steps, tp, dict.fromkeys(scans, steps))
        await self._scan(phase)
        if self.split:
            m = scans[0].total
        mine = {c: int(scans[c].inclusive) - 1 for c in range(d) if member[c]}
        return (None if m is None else int(m)), mine, phase.last_down

    # -- phases 2 and 3 -------------------------------------------------------------------
    async def _route(self, m: int, mine: dict[int, int]) -> None:
        ctx, tl = self.ctx, self.tl
        self.last_pack = self.last_bcast = -1
        self.overruns = 0
        self.need = self.d * (2 if tl.halves else 1) if self.split else 1
        self.parts: dict[int, int] = {}
        self.complete = 0
        self.m = m
        self.carried = [[c, ctx.node, r] for c, r in sorted(mine.items())]  # packing: [class, origin, rank]
        self.holdings: list[list[int]] = [[] for _ in range(self.d)]
        self.sub = 0  # current broadcast subphase (0: before the broadcast)
        self.queues: dict[tuple[int, int], list[int]] = {}
        self.out: dict[tuple[int, int], int] = {}
        self.packed = False
        inbox: Inbox = list(self.early)
        if ctx.slot < tl.scan_end:
            inbox = [*inbox, *await ctx.idle(until=tl.scan_end)]
        while True:
            tick = ctx.slot
            coming = self._receive(tick, inbox)
            if tl.scan_end <= tick < tl.pack_end:
                self._pack_step(tick)
            if tick >= tl.pack_end and not self.packed:
                self._packed(tick)
            while self.sub < self.d and tick >= tl.starts[self.sub]:
                self._start_subphase()
            for key in [k for k, v in coming.items() if v[2] != self.sub]:
                c, direction = key
                _, hops, sub = coming.pop(key)
                if self._forwards(direction, hops) and ctx.port(self.orders[c][self.d - sub], direction) is not None:
                    self.overruns += 1  # a piece of an earlier subphase still had hops to go
            if self.sub:
                self._bcast_step(tick, coming)
            if self.sub == self.d and self.complete == m and not any(self.queues.values()):
                return
            if tick >= tl.starts[self.d]:  # the last window is over (faults only): what is left is not sent
                for _ in range(sum(len(v) for v in self.queues.values())):
                    ctx.record("off_schedule", "broadcast", "window over")
                return
            nxt = self._next_wake(tick)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())

    def _receive(self, tick: int, inbox: Inbox) -> dict[tuple[int, int], list[int]]:
        coming: dict[tuple[int, int], list[int]] = {}
        for in_port, msg in inbox:
            kind = msg[0] if isinstance(msg, (list, tuple)) and msg else None
            if kind == "k" and len(msg) == 4 and not self.packed:
                self.carried.append(list(msg[1:]))
                self.last_pack = tick
                continue
            if kind != "b" or len(msg) != 5 or not 0 <= msg[1] < self.d:
                self.ctx.record("off_schedule", "broadcast" if self.packed else "packing", "wrong phase")
                continue
            _, towards = port_label(in_port)
            c, sub, origin, hops = msg[1], msg[2], msg[3], msg[4]
            self.last_bcast = tick
            bit = 1 << (2 * c + (1 if towards > 0 else 0)) if self.tl.halves else 1 << c
            self._take(origin, bit, c)
            coming[(c, -towards)] = [origin, hops, sub]
        return coming

    def _take(self, origin: int, bit: int, c: int) -> None:
        have = self.parts.get(origin, 0)
        if have & bit:
            self.ctx.record("dup", origin, bit)
            return
        have |= bit
        self.parts[origin] = have
        per_class = (3 << (2 * c)) if self.tl.halves else (1 << c)
        if have & per_class == per_class:
            self.holdings[c].append(origin)
        if have.bit_count() == self.need:
            self.complete += 1
            self.ctx.record("got", origin)

    def _pack_step(self, tick: int) -> None:
        tl, ctx = self.tl, self.ctx
        if (tick - tl.scan_end) % tl.u_pack:
            return
        step = (tick - tl.scan_end) // tl.u_pack
        keep = []
        n = self.tl.p ** self.d
        for pkt in self.carried:
            c, origin, rank = pkt
            if not 0 <= rank < n:  # faults only: the scan found no node for it
                ctx.record("off_schedule", "packing", "bad rank")
                continue
            via = rank_destination(rank, self.sides, self.orders[c])
            hop = packing_port(ctx.coords, via, step, self.sides, self.orders[c])
            if hop is None:
                keep.append(pkt)
                continue
            port = ctx.port(*hop)
            why = send_blocked(ctx, port, tl.pack_size)
            if why is not None:  # faults only: it waits for the next step
                ctx.record("off_schedule", "packing", why)
                keep.append(pkt)
                continue
            assert port is not None  # send_blocked strands a send on a port the node lacks
            ctx.send(port, ["k", c, origin, rank], tl.pack_size)
        self.carried = keep

    def _packed(self, tick: int) -> None:
        """End of packing: the pieces here are at their class-order rank node (one that is not,
        after a fault, is not broadcast)."""
        self.packed = True
        n = self.tl.p ** self.d
        for c, origin, rank in self.carried:
            if not 0 <= rank < n or rank_destination(rank, self.sides, self.orders[c]) != self.ctx.coords:
                self.ctx.record("off_schedule", "packing", "not packed")
                continue
            whole = (3 << (2 * c)) if self.tl.halves else (1 << c)
            for bit in (whole & -whole, whole & (whole - 1)) if self.tl.halves else (whole,):
                self._take(origin, bit, c)
        self.carried = []

    def _forwards(self, direction: int, hops: int) -> bool:
        limit = dict(zip((1, -1), hop_limits(self.tl.p, self.wrap, self.tl.halves)))[direction]
        return limit is None or hops < limit

    def _start_subphase(self) -> None:
        ctx, tl = self.ctx, self.tl
        if any(self.queues.values()):
            self.overruns += 1  # a piece of the last subphase was never sent
        self.sub += 1
        limits = dict(zip((1, -1), hop_limits(tl.p, self.wrap, tl.halves)))
        self.queues, self.out = {}, {}
        for c in range(self.d):
            dim = self.orders[c][self.d - self.sub]
            for direction in (1, -1):
                port = ctx.port(dim, direction)
                if port is not None and limits[direction] != 0:
                    self.out[(c, direction)] = port
                    self.queues[(c, direction)] = sorted(self.holdings[c])

    def _bcast_step(self, tick: int, coming: dict[tuple[int, int], list[int]]) -> None:
        tl, ctx = self.tl, self.ctx
        start = tl.starts[self.sub - 1]
        if (tick - start) % tl.u_bcast or tick >= tl.starts[self.sub]:
            return
        for key, port in self.out.items():
            came = coming.get(key)
            forward = came is not None and self._forwards(key[1], came[1])
            if not forward and not self.queues[key]:
                continue
            why = send_blocked(ctx, port, tl.bcast_size)
            if why is not None:  # faults only: a piece to forward is dropped, one of the node's own waits
                ctx.record("off_schedule", "broadcast", why)
            elif came is not None and forward:
                ctx.send(port, ["b", key[0], self.sub, came[0], came[1] + 1], tl.bcast_size)
            else:
                ctx.send(port, ["b", key[0], self.sub, self.queues[key].pop(0), 1], tl.bcast_size)

    def _next_wake(self, tick: int) -> int | None:
        tl = self.tl
        if tick < tl.pack_end:
            if tick < tl.scan_end:
                return tl.scan_end
            if self.carried and any(not 0 <= r < tl.p ** self.d or rank_destination(r, self.sides, self.orders[c])
                                    != self.ctx.coords for c, _, r in self.carried):
                return tl.scan_end + ((tick - tl.scan_end) // tl.u_pack + 1) * tl.u_pack  # the next step
            return tl.pack_end
        if any(self.queues.values()) and self.sub:
            start = tl.starts[self.sub - 1]
            return start + ((tick - start) // tl.u_bcast + 1) * tl.u_bcast  # the next step
        if self.sub < self.d:
            return tl.starts[self.sub]
        if tick < tl.starts[self.d]:  # the end of the last window (without faults every node has finished by then)
            return tl.starts[self.d]
        return None


def prepare_pmnb(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[PmnbInputs]:
    """Node parameters of ``pmnb``: the active set and the quantum (t_p, 1/d, 1/(2d) exact).

    Raises:
        SchemeError: on unequal sides (the d classes share one schedule), a bad M or t_p.
    """
    sides, wrap = check_grid(topology, "pmnb")
    equal_side(sides, "pmnb (the d classes of Theorem 6 step through their phases together on rotated dimensions)")
    given = Given.of(params)
    active = active_ids(sides, given)
    d = len(sides)
    q = quantum_for(given.tp, (2 if wrap else 1) * d) if given.split else quantum_for(given.tp)
    return Inputs(PmnbInputs(given.tp, given.split, active), quantum=q)


def expected_ranks(active: Sequence[int], sides: tuple[int, ...], split: bool) -> dict[int, list[tuple[int, int]]]:
    """Per active node, its ``(class, rank)`` pairs as the scans must find them."""
    d = len(sides)
    if split:
        per = [ranks(active, sides, rotation(c, d)) for c in range(d)]
        return {v: [(c, per[c][v]) for c in range(d)] for v in active}
    cls = {v: r % d for v, r in ranks(active, sides).items()}
    out: dict[int, list[tuple[int, int]]] = {}
    for c in range(d):
        members = [v for v in active if cls[v] == c]
        for v, r in ranks(members, sides, rotation(c, d)).items():
            out[v] = [(c, r)]
    return out


class PmnbReporter(BaseReporter):
    """Exactly-once delivery of every active packet everywhere, and the phase times."""

    events: Mapping[str, tuple[str, ...]] = {
        "ranked": ("total", "ranks"),
        "got": ("origin",),
        "dup": ("origin", "piece"),
        "summary": ("scan_tick", "pack_tick", "bcast_tick", "overruns"),
        **FAULT_EVENTS,
    }

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.active = list(setup.params.active)
        self.got: dict[int, set[int]] = {}
        self.dups = 0
        self.totals: dict[int, int] = {}
        self.rank_of: dict[int, list[tuple[int, int]]] = {}
        self.summaries: dict[int, tuple[int, int, int, int]] = {}
        self.last_got = -1
        self.notes = FaultNotes(bool(getattr(setup, "faults", False)))

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"ranked": self._ranked, "got": self._got, "dup": self._dup, "summary": self._summary,
                **self.notes.handlers()}

    def _ranked(self, node: int, slot: int, total: int, ranks_: list[Any]) -> None:
        self.totals[node] = total
        if ranks_:
            self.rank_of[node] = [(int(c), int(r)) for c, r in ranks_]

    def _got(self, node: int, slot: int, origin: int) -> None:
        s = self.got.setdefault(node, set())
        if origin in s:
            self.dups += 1
        s.add(origin)
        self.last_got = max(self.last_got, slot)

    def _dup(self, node: int, slot: int, origin: int, piece: int) -> None:
        self.dups += 1

    def _summary(self, node: int, slot: int, scan_tick: int, pack_tick: int, bcast_tick: int, overruns: int) -> None:
        self.summaries[node] = (scan_tick, pack_tick, bcast_tick, overruns)

    def _delivery(self) -> tuple[int, int]:
        want = set(self.active)
        missing = wrong = 0
        for v in range(self.setup.topology.n_nodes):
            have = self.got.get(v, set())
            missing += len(want - have)
            wrong += len(have - want)
        return missing, wrong

    def _timeline(self) -> Any:
        prm: PmnbInputs = self.setup.params
        topo = self.setup.topology
        return timeline(tuple(topo.sides), topo.kind == "torus", prm.split, prm.tp, self.setup.quantum,
                        len(self.active))

    def metrics(self) -> dict[str, Any]:
        q = self.setup.quantum
        scan = max((s[0] for s in self.summaries.values()), default=-1)
        out: dict[str, Any] = {"active": len(self.active), "prefix_time": scan / q if scan >= 0 else None}
        if self.active:
            tl = self._timeline()
            pack = max((s[1] for s in self.summaries.values()), default=-1)
            out["packing_time"] = (pack - tl.scan_end) / q if pack >= 0 else 0.0
            out["broadcast_time"] = (self.last_got - tl.pack_end) / q if self.last_got >= 0 else None
        out["receptions"] = sum(len(s) for s in self.got.values())
        return out

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Exactly-once everywhere, the ranks and M, the subphase windows, nothing lost.

        Their deadlines are the schedule's: every node has M and its ranks when the scans
        end, every packet is everywhere when the last subphase's window closes. A run cut
        short before a deadline reports what is still to come as ``pending`` (with
        ``due_at_slot``) and judges only what happened: wrong or repeated receptions,
        wrong ranks, overruns. Under faults all of this is the faults' damage: it is
        reported in ``every_packet_everywhere_once.correctness`` (:meth:`correctness`; the
        ranks and the windows under its ``schedule``), and only the books are judged.
        """
        n = self.setup.topology.n_nodes
        missing, wrong = self._delivery()
        sides = tuple(self.setup.topology.sides)
        want = expected_ranks(self.active, sides, self.setup.params.split)
        tl = self._timeline()
        ranked_by, done_by = tl.scan_end, tl.starts[-1] if self.active else tl.scan_end
        ranks_due, done_due = self.due(ranked_by), self.due(done_by)
        judged = range(n) if ranks_due else sorted(self.totals)  # before the scans end: the nodes that reported
        bad_ranks = sum(1 for v in (set(want) | set(self.rank_of) if ranks_due else judged)
                        if sorted(want.get(v, [])) != sorted(self.rank_of.get(v, [])))
        bad_totals = sum(1 for v in judged if self.totals.get(v) != len(self.active))
        overruns = sum(s[3] for s in self.summaries.values())
        once: dict[str, Any] = {"ok": missing == 0 and wrong == 0 and self.dups == 0,
                                "missing": missing, "wrong": wrong, "duplicates": self.dups}
        ranked: dict[str, Any] = {"ok": bad_ranks == 0 and bad_totals == 0, "wrong_ranks": bad_ranks,
                                  "wrong_totals": bad_totals}
        windows: dict[str, Any] = {"ok": overruns == 0 and len(self.summaries) == n, "overruns": overruns,
                                   "unfinished_nodes": n - len(self.summaries)}
        if not done_due:  # cut short: receptions and nodes still to finish are pending, not missing
            once = {"ok": wrong == 0 and self.dups == 0, "pending": missing, "wrong": wrong, "duplicates": self.dups,
                    "due_at_slot": done_by}
            windows = {"ok": overruns == 0, "overruns": overruns, "pending_nodes": n - len(self.summaries),
                       "due_at_slot": done_by}
        if not ranks_due:
            ranked |= {"pending_nodes": n - len(self.totals), "due_at_slot": ranked_by}
        if self.notes.faulted(lost):  # what the faults did, reported beside the books
            schedule = {name: {"holds": c.pop("ok"), **c} for name, c in
                        (("ranks_and_m_by_prefix", dict(ranked)), ("within_subphase_windows", dict(windows)))}
            return {"every_packet_everywhere_once": {"ok": True, "correctness": self.correctness(want, done_by)
                                                     | {"schedule": schedule}},
                    "no_message_lost": self.notes.no_message_lost(self.lost_messages, lost)}
        if self.notes.scheme_error(lost):
            once |= {"ok": False, **self.notes.report()}
        return {
            "every_packet_everywhere_once": once,
            "ranks_and_m_by_prefix": ranked,
            "within_subphase_windows": windows,
            "no_message_lost": self.notes.no_message_lost(self.lost_messages, lost),
        }

    def correctness(self, want: Mapping[int, list[tuple[int, int]]], done_by: int) -> dict[str, Any]:
        """Under faults: the nodes that never received some active packet (the first of them and
        what it lacks), wrong ranks and totals (the first node of each), which nodes finished."""
        n = self.setup.topology.n_nodes
        active = set(self.active)
        lacking = {v: sorted(active - self.got.get(v, set()) - {v}) for v in range(n)}
        lacking = {v: miss for v, miss in lacking.items() if miss}
        bad_ranks = sorted(v for v in set(want) | set(self.rank_of) if sorted(want.get(v, [])) != sorted(self.rank_of.get(v, [])))
        bad_totals = sorted(v for v in range(n) if self.totals.get(v) != len(self.active))
        out: dict[str, Any] = {
            "result_correct": not lacking and not bad_ranks and not bad_totals,
            "nodes_missing_packets": len(lacking),
            "missing_receptions": sum(len(m) for m in lacking.values()),
            "duplicates": self.dups,
            "wrong_ranks": len(bad_ranks),
            "wrong_totals": len(bad_totals),
            "finished_nodes": len(self.summaries),
            "schedule_end": done_by,
            "last_reception": self.last_got if self.last_got >= 0 else None,
        }
        if lacking:
            v = min(lacking)
            out["first_missing"] = {"node": v, "never_received": lacking[v][:16], "count": len(lacking[v])}
        if bad_ranks:
            v = bad_ranks[0]
            out["first_wrong_rank"] = {"node": v, "ranks": self.rank_of.get(v, []), "expected": want.get(v, [])}
        if bad_totals:
            v = bad_totals[0]
            out["first_wrong_total"] = {"node": v, "total": self.totals.get(v), "expected": len(self.active)}
        return out | self.notes.report()


def theory_pmnb(setup: Setup) -> dict[str, Any]:
    """(5)/(6) or (5')/(6') above, (3)/(4) or the placement's bound below, and per phase."""
    prm: PmnbInputs = setup.params
    topo = setup.topology
    sides, wrap = tuple(topo.sides), topo.kind == "torus"
    p, d, n = sides[0], len(sides), topo.n_nodes
    m, split, tp = len(prm.active), prm.split, prm.tp
    g = 2 if wrap else 1
    b = th.pmnb_bounds(sides, wrap, prm.active, tp, split)
    out = {k: v for k, v in b.items() if not isinstance(v, dict)}
    scans = 1 if split else 2
    out["prefix_time"] = scans * 2 * d * (p - 1) * tp
    if split:
        out["packing_time"] = float(p - 1)
        out["broadcast_time"] = (m / g * (n - 1) / n + (p - 1) * d / g) / d
        out["broadcast_which"] = "Lemma 1 with 1/d mini-packets"
    else:
        step = math.ceil((p - 1) / g)
        out["packing_time"] = float(d * (p - 1))
        out["broadcast_time"] = math.ceil(m / d) / (p - 1) * step * (n - 1) / n + d * step
        out["broadcast_which"] = "§4.2: A_c with ceil(M/d) whole packets"
    tl = timeline(sides, wrap, split, tp, setup.quantum, m)
    out["schedule_end"] = tl.starts[-1] / setup.quantum if m else tl.scan_end / setup.quantum
    return out


def pmnb_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`theory_pmnb` is to the run: Theorem 6's (5)/(6) (or (5')/(6')) an upper
    bound and (3)/(4) or the placement's bound a lower bound on the completion time (as is
    the bound over any placement); the scans' time exact; the packing bound and Lemma 1's
    / §4.2's broadcast bound upper bounds on their phases. ``schedule_end`` (the last
    subphase's start) stands beside no metric."""
    out = completion_claims(th, exact=("prefix_time",), upper=("packing_time", "broadcast_time"))
    if "lower_bound_any_placement" in th:
        out.append(Claim("lower_bound_any_placement", "completion_time", "lower-bound",
                         why="(3)/(4): any placement of M active nodes"))
    return out


SCHEME = Scheme(
    name="pmnb",
    summary="partial multinode broadcast: rank by prefix, packing, d broadcast subphases (§4.1 / §4.2)",
    source=SOURCE,
    node=PmnbNode,
    reporter=PmnbReporter,
    prepare=prepare_pmnb,
    theory=theory_pmnb,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED, TP,
        Param("split", parse_bool, True, "true: §4.1 mini-packets of 1/d on d rotated classes (Theorem 6); "
                                         "false: §4.2 whole packets, class r mod d", (True, False)),
    ),
    topologies=("torus", "mesh"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_pmnb, "upper_bound", "schedule_end"),
    faults=None,  # every kind: see ._offschedule
    claims=pmnb_claims,
)
