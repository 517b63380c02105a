"""``partial-exchange`` (§5): M active nodes of a p x p array each send a personalised
packet to every other node.

Row and column sums by the median-rooted prefix (Phase 1, ``2 floor(p/2)`` steps of
t_p), the sets R and C, one-turn shortest paths with the priorities a)-b) (Phase 2;
the rule is :mod:`._exchange_rule`). Measured: ``completion_time`` and the per-phase
times, beside §5's upper bound ``2 floor(sqrt M)(N - p) + 2(p - 1) + p t_p``, the bound
that holds for the placement at hand (per node, cuts, distance) and, labelled as such,
the paper's worst case over placements ``mN/4`` (:func:`.theory.partial_exchange_bounds`).
On a p x p torus the rule runs on the array links only (§5: "and, therefore also in a
p x p torus"); other shapes (d != 2, unequal sides) are refused: §5 is stated for p x p
arrays only. Under faults see :mod:`._offschedule`.

A node starts knowing its coordinates, p, t_p and whether it is active (a membership
test on the run's active set; nothing else of it). Phase 1: the row and the column
prefix of §5 on median-rooted trees (:class:`LineScanNode`), both at once (rows use
dimension-0 links, columns dimension-1 links), ``2 floor(p/2)`` steps of t_p each,
messages of size t_p. Phase 2 starts at that tick, the same at every node: an active
node learns r_i and c_j from its scans, picks R or C and queues its N - 1 packets;
every node then routes (:class:`ExchangeRouter`), one whole packet per port per time
unit. Every Phase-2 packet is followed from send to send by the validator (``follow``):
the kit's :class:`~slotnet.schemes.kit.HopWitness` checks the hops each delivery reports
against the sends seen (``hops_witnessed``) and §5's "one-turn shortest paths" hop by
hop (``declared_route``: a path changes dimension at most once; ``shortest_paths``: its
length is the array distance). Nodes never return: a node cannot know when the last packet for it has arrived
(it does not learn M), and the run ends at quiescence.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Node, NodeContext
from slotnet.schemes.kit import HOP_EVENTS, BaseReporter, HopWitness

from .._base import Claim, Inputs, Scheme, SchemeError, Setup
from ..kit._completion import parked_when_done
from . import theory as th
from ._exchange_rule import C_SET, R_SET, ExchangeRouter, exchange_class
from ._inputs import (
    ACTIVE,
    PLACEMENT,
    PLACEMENT_SEED,
    SOURCE,
    TP,
    ExchangeInputs,
    Given,
    active_ids,
    is_active,
    quantum_for,
    safety_cap,
    tp_ticks,
)
from ._offschedule import FAULT_EVENTS, FaultNotes, send_blocked
from ._prefix import LineScanNode, line_scan_steps
from ._scan import LineAdapter, ScanPhase

__all__ = ["SCHEME", "ExchangeNode", "ExchangeReporter", "packet_identity", "prepare_exchange", "theory_exchange"]


class ExchangeNode(Node):
    """One processor of the §5 partial exchange."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.router: ExchangeRouter | None = None
        self.early: list[tuple[int, Any]] = []  # packets that came while the scan was still on (faults only)

    def held(self) -> int:
        return (self.router.held if self.router is not None else 0) + len(self.early)

    def held_packets(self) -> Iterable[Any]:
        return (self.router.items() if self.router is not None else []) + sorted((m[0], m[1]) for _, m in self.early)

    async def run(self) -> None:
        ctx = self.ctx
        prm: ExchangeInputs = ctx.params
        p = ctx.geometry.sides[0]
        tp, a, q = prm.tp, prm.tp_ticks, ctx.quantum
        active = is_active(ctx.node, prm.active)
        x = ctx.coords
        steps = line_scan_steps(p)
        start = steps * a
        cls = -1
        if ctx.incarnation:  # restarted: its sums and its packets are gone; it still routes what comes
            ctx.record("stopped", "scan" if ctx.slot < start else "routing", "restarted")
            if ctx.slot < start:
                await ctx.idle(until=start)
        else:
            row_sum, col_sum = await self._sums(p, tp, a, x, active)
            if active and (row_sum is None or col_sum is None):  # faults only: no class, no packets sent
                ctx.record("off_schedule", "scan", "unsent")
            elif active:
                cls = exchange_class(row_sum, col_sum)
            ctx.record("sums", -1 if row_sum is None else row_sum, -1 if col_sum is None else col_sum, cls)
        self.router = router = ExchangeRouter((x[0], x[1]), p, ctx.node)
        if cls >= 0:
            router.inject(cls, (v for v in range(ctx.n_nodes) if v != ctx.node))
        k, rest = divmod(ctx.slot - start, q)
        inbox: Any = tuple(self.early)
        self.early = []
        while True:
            for _in_port, msg in inbox:
                if not (isinstance(msg, (list, tuple)) and len(msg) == 5):  # a late scan message (faults only)
                    ctx.record("off_schedule", "routing", "wrong phase")
                    continue
                got = router.receive(tuple(msg), k)
                if got is not None:
                    ctx.record("delivered", got[0], got[3], got[4])
            if not rest:  # a packet that arrived between two steps (faults only) waits for the next
                free = [port for port in router.queues.busy() if send_blocked(ctx, port, 1.0) is None]
                for port, packet in router.transmit(free):
                    ctx.send(port, packet, 1.0)
            if router.held:
                inbox = await ctx.idle(until=start + (k + 1) * q)
            else:
                inbox = await ctx.idle()
            k, rest = divmod(ctx.slot - start, q)

    async def _sums(self, p: int, tp: float, a: int, x: tuple[int, ...], active: bool) -> tuple[Any, Any]:
        """Phase 1: the row and column sums (None where a fault kept the total from this node)."""
        ctx = self.ctx
        lines = (LineScanNode(x[0], p, int(active)), LineScanNode(x[1], p, int(active)))
        scans = {dim: LineAdapter(dim, line) for dim, line in enumerate(lines)}
        steps = line_scan_steps(p)
        phase = ScanPhase(ctx, scans, 0, a, steps, tp, dict.fromkeys(scans, p // 2), raw=True)
        inbox: Any = ()
        while True:
            for in_port, msg in inbox:
                if isinstance(msg, (list, tuple)) and len(msg) == 5:  # a packet for a node still in its scan
                    self.early.append((in_port, msg))  # (it was stalled): routed when Phase 2 starts here
                    continue
                phase.receive(ctx.slot, in_port, in_port >> 1, msg)
            phase.send_due(ctx.slot)
            if phase.done:
                break
            nxt = phase.next_tick(ctx.slot)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())
        if ctx.slot < steps * a:
            for in_port, msg in await ctx.idle(until=steps * a):  # faults only: nothing is due by then
                if isinstance(msg, (list, tuple)) and len(msg) == 5:
                    self.early.append((in_port, msg))
                else:
                    ctx.record("off_schedule", "scan", "unexpected")
        return lines[0].total, lines[1].total


class ExchangeReporter(BaseReporter):
    """Completion and per-phase times; exactly-once delivery, shortest paths, Lemma 3, the sums."""

    events: Mapping[str, tuple[str, ...]] = {"sums": ("row_sum", "col_sum", "cls"),
                                             "delivered": ("origin", "hops", "leg_end"), **FAULT_EVENTS, **HOP_EVENTS}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.p = setup.topology.sides[0]
        self.n = setup.topology.n_nodes
        self.q = setup.quantum
        prm: ExchangeInputs = setup.params
        self.active = tuple(prm.active)
        self.tp = prm.tp
        self.expected = len(self.active) * (self.n - 1)
        self.sums: dict[int, tuple[int, int, int]] = {}
        self.sums_slot = -1
        self.seen: set[tuple[int, int]] = set()
        self.duplicates: list[tuple[int, int, int]] = []
        self.unknown: list[tuple[int, int, int]] = []
        self.not_shortest: list[tuple[int, int, int]] = []
        self.last_slot = -1
        self.leg_max = -1
        self.hops_total = 0
        self._holdings: Sequence[Any] = []
        self.notes = FaultNotes(bool(getattr(setup, "faults", False)))
        self.copied: set[tuple[int, int]] = set()  # (origin, destination) of the packets a dup fault copied
        #: every Phase-2 send, seen by the orchestrator: hops, and §5's one-turn paths
        self.witness = HopWitness(setup.topology, "one-turn", setup.faults)

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """Also note which packets a ``dup`` fault copied: their second deliveries are the fault's."""
        super().on_lost(slot, sender, port, receiver, message, cause)
        if cause == "dup" and isinstance(message, (list, tuple)) and len(message) == 5:
            self.copied.add((message[0], message[1]))

    def handlers(self) -> Mapping[str, Any]:
        return {"sums": self.on_sums, "delivered": self.on_delivered, **self.notes.handlers(),
                **self.witness.handlers()}

    def on_sums(self, node: int, slot: int, row_sum: int, col_sum: int, cls: int) -> None:
        self.sums[node] = (row_sum, col_sum, cls)
        self.sums_slot = max(self.sums_slot, slot)

    def on_delivered(self, node: int, slot: int, origin: int, hops: int, leg_end: int) -> None:
        key = (origin, node)
        if origin == node or not is_active(origin, self.active):
            self.unknown.append((slot, origin, node))
            return
        if key in self.seen:
            self.duplicates.append((slot, origin, node))
            return
        self.seen.add(key)
        self.witness.delivered(node, slot, origin, node, hops)
        p = self.p
        if hops != abs(origin % p - node % p) + abs(origin // p - node // p):
            self.not_shortest.append((origin, node, hops))
        self.hops_total += hops
        self.last_slot = max(self.last_slot, slot)
        self.leg_max = max(self.leg_max, leg_end)

    def holdings(self, per_node: Sequence[Any]) -> None:
        self._holdings = per_node

    def _lemma3(self) -> tuple[int, int, int, int]:
        p = self.p
        r_rows, c_cols = [0] * p, [0] * p
        for v, (_r, _c, cls) in self.sums.items():
            if cls == R_SET:
                r_rows[v // p] += 1
            elif cls == C_SET:
                c_cols[v % p] += 1
        return sum(r_rows), sum(c_cols), max(r_rows), max(c_cols)

    def metrics(self) -> dict[str, Any]:
        q = self.q
        phase1 = (self.sums_slot / q) if len(self.sums) == self.n else None
        complete = phase1 is not None and len(self.seen) == self.expected
        completion: float | None = None
        if complete:
            completion = self.last_slot / q if self.expected else phase1
        r_size, c_size, max_r, max_c = self._lemma3()
        delivered = len(self.seen)
        return {
            "completion_time": completion,
            "phase1_time": phase1,
            "phase2_time": (completion - phase1) if completion is not None and phase1 is not None else None,
            "first_leg_time": (self.leg_max if self.expected else 0) if complete else None,
            "active": len(self.active),
            "m": math.isqrt(len(self.active)),
            "r_size": r_size,
            "c_size": c_size,
            "max_r_per_row": max_r,
            "max_c_per_column": max_c,
            "packets_delivered": delivered,
            "mean_hops": self.hops_total / delivered if delivered else None,
        }

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Every personalised packet delivered exactly once; paths, Lemma 3 and the sums.

        Phase 2 starts at the same tick at every node, with each node's row and column sums
        known and every packet queued at its origin: a run cut short before that tick owes
        neither (``due_at_slot``); after it, a packet not yet delivered is in flight or waiting.
        """
        moving = sum(1 for _r, _p, m in in_flight if isinstance(m, tuple) and len(m) == 5)
        waiting = sum(held)
        faults = sum(lost.values()) > 0
        start = line_scan_steps(self.p) * tp_ticks(self.tp, self.q)
        started = self.due(start)
        p = self.p
        rows, cols = [0] * p, [0] * p
        for v in self.active:
            rows[v // p] += 1
            cols[v % p] += 1
        wrong_sums = [v for v, (r, c, _k) in sorted(self.sums.items()) if (r, c) != (rows[v // p], cols[v % p])]
        wrong_class = [v for v in self.active if v in self.sums and self.sums[v][2] != exchange_class(rows[v // p], cols[v % p])]
        _r, _c, max_r, max_c = self._lemma3()
        m = math.isqrt(len(self.active))
        out: dict[str, Any] = {
            "exactly_once": {
                "ok": not self.duplicates and not self.unknown
                and (faults or not started or len(self.seen) + moving + waiting == self.expected),
                "expected": self.expected, "delivered": len(self.seen), "in_flight": moving, "waiting": waiting,
                "duplicates": len(self.duplicates), "first_duplicates": [list(x) for x in sorted(self.duplicates)[:5]],
                "misdelivered": len(self.unknown), "lost_to_faults": dict(lost),
            },
            "shortest_paths": {"ok": not self.not_shortest, "violations": len(self.not_shortest),
                               "first": [list(x) for x in sorted(self.not_shortest)[:5]]},
            "row_column_sums": {"ok": (len(self.sums) == self.n or not started) and not wrong_sums and not wrong_class,
                                "nodes_reporting": len(self.sums), "wrong_sums": wrong_sums[:10],
                                "wrong_class": wrong_class[:10]},
            "lemma3": {"ok": max_r <= m and max_c <= m, "m": m, "max_r_per_row": max_r, "max_c_per_column": max_c},
            **self.witness.invariants(),
        }
        if not started:  # cut short in Phase 1: the sums and the packets are still to come
            out["exactly_once"]["due_at_slot"] = out["row_column_sums"]["due_at_slot"] = start
        if self.notes.faulted(lost):  # what the faults did, reported beside the books
            once = out["exactly_once"]
            once["ok"] = not self.unknown and all((o, v) in self.copied for _, o, v in self.duplicates)
            once["duplicates_from_dup_faults"] = once.pop("duplicates")
            schedule = {}
            for name in ("row_column_sums", "lemma3"):
                check = dict(out.pop(name))
                schedule[name] = {"holds": check.pop("ok"), **check}
            once["correctness"] = self.correctness(wrong_sums, start) | {"schedule": schedule}
            self.notes.finished_not_excused(once, lost)
        elif self.notes.scheme_error(lost):
            out["exactly_once"] |= {"ok": False, **self.notes.report()}
        return out

    def correctness(self, wrong_sums: list[int], start: int) -> dict[str, Any]:
        """Under faults: every personalised packet delivered once or not, the first missing
        (origin, destination), wrong sums (the first node), which active nodes sent nothing."""
        missing = [(o, v) for o in self.active for v in range(self.n) if v != o and (o, v) not in self.seen]
        out: dict[str, Any] = {"result_correct": not missing and not wrong_sums and not self.duplicates,
                               "delivered": len(self.seen), "not_delivered": len(missing),
                               "duplicates": len(self.duplicates), "wrong_sums": len(wrong_sums),
                               "phase2_start": start,
                               "last_delivery": self.last_slot if self.last_slot >= 0 else None}
        if missing:
            out["first_missing"] = {"origin": missing[0][0], "destination": missing[0][1]}
        if wrong_sums:
            out["first_wrong_sums"] = {"node": wrong_sums[0], "sums": list(self.sums[wrong_sums[0]][:2])}
        return out | self.notes.report()


def packet_identity(message: Any) -> tuple[int, int] | None:
    """A Phase-2 packet ``(origin, dest, cls, hops, leg_end)`` is named ``(origin, dest)``; a
    Phase-1 prefix payload (an int or a pair) is not followed."""
    if type(message) is tuple and len(message) == 5:
        return message[0], message[1]
    return None


def prepare_exchange(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[ExchangeInputs]:
    """Node parameters: the active set, t_p and the quantum (t_p whole ticks).

    Raises:
        SchemeError: on a shape other than p x p, or a bad M, placement or t_p.
    """
    sides = tuple(topology.sides)
    if len(sides) != 2 or sides[0] != sides[1]:
        raise SchemeError(f"partial-exchange (§5) runs on p x p arrays (and tori, on their array links), not {topology.spec}")
    given = Given.of(params)
    ids = active_ids(sides, given)
    tp = given.tp
    q = quantum_for(tp)
    return Inputs(ExchangeInputs(tp, tp_ticks(tp, q), ids, len(ids)), quantum=q)


def theory_exchange(setup: Setup) -> dict[str, Any]:
    """§5's bounds beside the run: upper bound, the placement's lower bound, mN/4."""
    geo = setup.topology
    prm: ExchangeInputs = setup.params
    sides, wrap = tuple(geo.sides), bool(geo.wrap)
    p, n, tp = sides[0], geo.n_nodes, prm.tp
    b = th.partial_exchange_bounds(sides, wrap, list(prm.active), tp)
    m = math.isqrt(prm.n_active)
    return {
        "completion_time": b["upper_bound"],
        "completion_time_lower_bound": b["lower_bound"],
        "completion_time_lower_bound_worst_case": b["lower_bound_worst_case"],
        "phase1_time": line_scan_steps(p) * tp,
        "first_leg_time": m * (n - p) + (p - 1),
        "max_r_per_row": m,
        "max_c_per_column": m,
        "which": b["which"] + "; lower: " + b["lower_which"]
        + "; worst case: mN/4 over placements (Fig. 3), not a bound for this placement",
        "reading": "completion_time, first_leg_time (the proof's first half), max_r/c (Lemma 3): upper bounds; "
                   "phase1_time: exact (2 floor(p/2) t_p <= p t_p)",
        "phase1_bound": p * tp,
        "m": m,
    }


def exchange_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What each value of :func:`theory_exchange` is to the run (``theory_agreement``): §5's
    completion bound and the proof's first-leg bound are upper bounds, the placement's cut
    and distance bound a lower bound, Phase 1's ``2 floor(p/2) t_p`` exact; the worst case
    over placements is no bound for this placement (an approximation, not judged)."""
    return [
        Claim("completion_time", "completion_time", "upper-bound", why="§5: 2 floor(sqrt M)(N - p) + 2(p - 1) + p t_p"),
        Claim("completion_time_lower_bound", "completion_time", "lower-bound", why="the placement's cuts and distance"),
        Claim("first_leg_time", "first_leg_time", "upper-bound", why="§5's proof: m (N - p) + (p - 1)"),
        Claim("phase1_time", "phase1_time", "exact", why="the median-rooted prefix: 2 floor(p/2) steps of t_p"),
        Claim("max_r_per_row", "max_r_per_row", "upper-bound", why="Lemma 3"),
        Claim("max_c_per_column", "max_c_per_column", "upper-bound", why="Lemma 3"),
        Claim("phase1_bound", "phase1_time", "upper-bound", why="§5: p t_p"),
        Claim("m", "m", "exact", why="§5: m = floor(sqrt M), the parameter of the schedule"),
    ]


SCHEME = Scheme(
    name="partial-exchange",
    summary="§5: M active nodes send a personalised packet to every node (p x p arrays; tori on array links)",
    source=SOURCE + ", §5",
    node=ExchangeNode,
    reporter=ExchangeReporter,
    prepare=prepare_exchange,
    theory=theory_exchange,
    params=(ACTIVE, PLACEMENT, PLACEMENT_SEED, TP),
    topologies=("mesh", "torus"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_exchange, "completion_time"),
    faults=None,  # every kind: see ._offschedule
    follow=packet_identity,
    claims=exchange_claims,
)
