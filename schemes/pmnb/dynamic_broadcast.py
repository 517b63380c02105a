"""``dynamic-broadcast`` (§6): Poisson broadcast requests served by successive PMNB intervals.

Requests arrive by ``--rho`` (the load (12)) or ``--lam`` (per node), and are served by
successive PMNB intervals of Theorem 6's algorithm (packets split, §4.1, as §6 assumes),
on p^d tori and arrays of any d. Measured: ``mean_delay`` against Theorem 7's bound
(11) with X, V of (9), (10), the queue figures and ``stable``
(:func:`.theory.dynamic_broadcast_bounds`). Past (14) Theorem 7 gives no bound (theory:
``stable`` no, ``mean_delay`` inf); the run's own verdict is the orchestrator's monitor
(a steadily growing backlog, or more than :data:`MAX_BACKLOG` packets per node), which
reports unstable surely past ``saturation_load`` (where even back-to-back full
intervals fall behind, our derivation); between (14) and that load the scheme may
still be stable. The interval's decisions that need no network are
:mod:`._dynamic_interval` and :mod:`._dynamic_schedule`. Under faults see :mod:`._offschedule`.

Every node generates broadcast requests by a Poisson process of rate λ per time unit
(drawn per tick from its own stream: rate λ/q) and keeps them in a FIFO queue. Time is
cut into PMNB intervals that all nodes start together, with no synchronisation beyond
the common clock: an interval starting at tick t0 involves the head packet of every
node whose queue is not empty at t0 (born at or before t0), and lasts the timetable of
:class:`IntervalSchedule` for the M that the prefix tells every node; the next interval
starts when it ends. Within it, :class:`IntervalNode` is the node's whole rule.

Queue figure (``mean_queue_per_node``, the stability monitor's backlog): packets born
here whose interval has not ended yet (waiting, or in their interval). Delays: birth
to the tick the last node holds every piece, in time units (§6's T).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Node, NodeContext
from slotnet.schemes.kit import RESIDENCE_EVENTS, STEP_FIELDS, BirthProcess, BroadcastReporter, Residence, births_choice
from slotnet.schemes.kit.choices import Distribution

from .._base import Claim, Inputs, Load, Scheme, SchemeError, Setup
from . import theory as th
from ._dynamic_interval import IntervalNode
from ._dynamic_schedule import IntervalSchedule, saturation_load
from ._inputs import SOURCE, TP, DynamicInputs, Given, equal_side, quantum_for, tp_ticks
from ._offschedule import FAULT_EVENTS, FaultNotes, send_blocked, sleep

__all__ = ["MAX_BACKLOG", "SCHEME", "DynamicNode", "DynamicReporter", "prepare_dynamic", "theory_dynamic"]

#: Queued broadcast requests per node past which a dynamic run is stopped as unstable.
MAX_BACKLOG = 100.0


class DynamicNode(Node):
    """One processor of the dynamic broadcasting scheme of §6."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        geo = ctx.geometry
        prm: DynamicInputs = ctx.params
        self.wrap = bool(geo.wrap)
        self.sched = IntervalSchedule.build(geo.sides, self.wrap, prm.tp_ticks, ctx.quantum)
        self.births = BirthProcess(ctx.rng, prm.lam / ctx.quantum, start=float(ctx.slot))
        self.queue: deque[tuple[int, float]] = deque()
        #: the slot each queued packet was taken in, and their residence ledger (the kit's ``littles_law``)
        self.since: deque[int] = deque()
        self.ledger = Residence()
        self.seq = 0
        self.ports = {(k, dr): ctx.port(k, dr) for k in range(geo.d) for dr in (1, -1)}

    def held(self) -> int:
        return len(self.queue)

    def choice_counts(self, last_slot: int) -> dict[str, dict[int, int]]:
        """``births``: how many ticks up to ``last_slot`` saw each number of requests born here."""
        counts = self.births.counts(last_slot)
        return {"births": counts} if counts else {}

    def held_packets(self) -> Iterable[Any]:
        node = self.ctx.node
        return [(node, seq) for seq, _tau in self.queue]

    def _next_wake(self, now: int, t0: int, step: int, machine: IntervalNode) -> int | None:
        sched = self.sched
        cands = []
        birth = self.births.wake_slot()
        if birth is not None:
            cands.append(birth)
        nxt = machine.next_send_step(step)
        if nxt is not None:
            cands.append(t0 + sched.offset(nxt))
        if machine.m is not None:
            cands.append(t0 + sched.length_ticks(machine.m))
        later = [c for c in cands if c > now]
        return min(later) if later else None

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.incarnation:  # restarted: its queue, its interval and its place in the schedule are gone
            ctx.record("stopped", "interval", "restarted")
            await sleep(ctx, "interval")
        sched, queue, node = self.sched, self.queue, ctx.node
        q = ctx.quantum
        t0 = 0
        machine: IntervalNode | None = None
        inbox: Any = ()
        last_out = -1
        reported = 0
        while True:
            now = ctx.slot
            born = []
            for tau in self.births.take_until(now):
                self.seq += 1
                born.append((self.seq, tau))
                queue.append((self.seq, tau))
                self.since.append(now)
                self.ledger.entered(now)
            q_start = len(queue)
            received: list[tuple[int, int]] = []
            if machine is not None:
                if inbox:
                    step, starts = sched.step_containing(now - t0)
                    for in_port, msg in inbox:
                        if not starts:  # faults only: held back by a delay, or a dup fault's copy
                            ctx.record("off_schedule", "interval", "off grid")
                            continue
                        try:
                            machine.incoming(step - 1, in_port >> 1, -1 if in_port & 1 else 1, msg)
                        except (AssertionError, ValueError, KeyError, IndexError, TypeError):  # faults only
                            ctx.record("off_schedule", "interval", "unexpected")
                received, machine.completed = machine.completed, []
                for o, s, c in machine.duplicates:
                    ctx.record("duplicate", o, s, c)
                machine.duplicates.clear()
                if machine.m is not None and now - t0 >= sched.length_ticks(machine.m):
                    end = t0 + sched.length_ticks(machine.m)  # later than now only after a stall (faults)
                    if node == 0:
                        ctx.record("interval", machine.m, end - t0)
                    if machine.packet is not None:
                        queue.popleft()
                        self.ledger.left(now, self.since.popleft())
                    machine, t0, last_out = None, end, -1
            if machine is None:
                machine = IntervalNode(ctx.coords, sched, self.wrap, (node, queue[0][0]) if queue else None)
            step, starts = sched.step_containing(now - t0)
            if starts and step > last_out:
                size = sched.duration(step) / q
                ports, send = self.ports, ctx.send
                try:
                    sends = machine.outgoing(step)
                except (AssertionError, KeyError, TypeError, ValueError, IndexError):  # faults only: no M (or two)
                    ctx.record("stopped", "interval", "no M" if machine.m is None else "M disagrees")
                    await sleep(ctx, "interval")
                for dim, direction, msg in sends:
                    port = ports[dim, direction]
                    why = send_blocked(ctx, port, size)
                    if why is not None:  # faults only
                        ctx.record("off_schedule", "interval", why)
                        continue
                    assert port is not None  # send_blocked strands a send on a port the node lacks
                    send(port, msg, size)
                last_out = step
            for _ in range(machine.late):
                ctx.record("off_schedule", "interval", "late send")
            machine.late = 0
            if born or received or len(queue) != reported:
                ctx.record("step", born, received, q_start, len(queue))
                reported = len(queue)
                self.ledger.record(ctx)
            inbox = await ctx.idle(until=self._next_wake(now, t0, step, machine))


class DynamicReporter(BroadcastReporter):
    """The kit's broadcast reporter in time units, with the intervals and piece checks.

    Metrics: ``mean_delay`` (birth to the last node's reception, §6's T) with its 95%
    batch-means interval, ``mean_reception_delay``, the queue figures, and per interval
    (those starting after the warm-up) the mean M and length. Invariants: the kit's
    exactly-once reception, no piece received twice, every interval within ``V + M X``.
    """

    events: Mapping[str, tuple[str, ...]] = {"step": STEP_FIELDS, "interval": ("m", "ticks"),
                                             "duplicate": ("origin", "seq", "cls"), **FAULT_EVENTS,
                                             **RESIDENCE_EVENTS}

    #: sharded, the kit's books merge (:class:`~slotnet.schemes.kit.BroadcastReporter`); the
    #: intervals are node 0's alone (one shard's, in its order), the pieces and notes merge
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.q = setup.quantum
        prm: DynamicInputs = setup.params
        self.x, self.v = prm.x, prm.v
        self.intervals = 0
        self.measured_intervals = 0
        self.m_sum = 0
        self.len_sum = 0.0
        self.empty = 0
        self.too_long: list[tuple[int, int, float]] = []
        self.dup_pieces: list[tuple[int, int, int, int, int]] = []
        self.final_slot = -1
        self.notes = FaultNotes(bool(getattr(setup, "faults", False)))

    def handlers(self) -> Mapping[str, Any]:
        out = dict(super().handlers())
        out.update(interval=self.on_interval, duplicate=self.on_duplicate, **self.notes.handlers())
        return out

    def on_interval(self, node: int, slot: int, m: int, ticks: int) -> None:
        length = ticks / self.q
        self.intervals += 1
        if length > self.v + m * self.x + 1e-9:
            self.too_long.append((slot - ticks, m, length))
        if slot - ticks >= self.warmup:
            self.measured_intervals += 1
            self.m_sum += m
            self.len_sum += length
            self.empty += m == 0

    def on_duplicate(self, node: int, slot: int, origin: int, seq: int, cls: int) -> None:
        self.dup_pieces.append((slot, node, origin, seq, cls))

    def end_slot(self, slot: int) -> None:
        super().end_slot(slot)
        self.final_slot = slot

    def shard_state(self) -> dict[str, Any]:
        """The kit's books, the intervals (node 0 records them: one shard's), the pieces
        received twice and the fault notes."""
        return {**super().shard_state(), "intervals": [self.intervals, self.measured_intervals, self.m_sum, self.empty],
                "len_sum": self.len_sum, "too_long": self.too_long, "dup_pieces": self.dup_pieces,
                "notes": self.notes.shard_state()}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The shards' :meth:`shard_state`: one shard (node 0's) holds every interval, so its
        float sum and list come over as they are."""
        super().merge_shards(states)
        for st in states:
            intervals, measured, m_sum, empty = st["intervals"]
            self.intervals += intervals
            self.measured_intervals += measured
            self.m_sum += m_sum
            self.empty += empty
            if intervals:
                self.len_sum, self.too_long = st["len_sum"], [tuple(x) for x in st["too_long"]]
            self.dup_pieces.extend(tuple(x) for x in st["dup_pieces"])
        self.notes.merge_shards([st["notes"] for st in states])

    def metrics(self) -> dict[str, Any]:
        base = super().metrics()
        q = self.q

        def units(v: Any) -> Any:
            return None if v is None else v / q

        k = self.measured_intervals
        return {
            "mean_delay": units(base["mean_broadcast_delay"]),
            "mean_delay_ci95": units(base["mean_broadcast_delay_ci95"]),
            "mean_reception_delay": units(base["mean_reception_delay"]),
            "mean_queue_per_node": base["mean_queue_per_node"],
            "mean_queue_per_node_ci95": base["mean_queue_per_node_ci95"],
            "max_queue": base["max_queue"],
            "broadcasts_measured": base["broadcasts_measured"],
            "incomplete_at_end": base["incomplete_at_end"],
            "intervals": k,
            "mean_active_per_interval": self.m_sum / k if k else None,
            "mean_interval_length": self.len_sum / k if k else None,
            "empty_interval_fraction": self.empty / k if k else None,
            "time_units": (self.final_slot + 1) / q,
        }

    def _nodes_missed(self, in_flight: Sequence[tuple[int, int, Any]]) -> int:
        """Receptions the missed broadcasts never made (the kit's ``misses`` list is cut at 20)."""
        moving = {(m[0], m[1]) for _, _, m in in_flight if isinstance(m, tuple) and len(m) >= 2}
        for items in self._holdings:
            moving.update(items)
        return sum(self.n_nodes - rec[4].bit_count() for key, rec in self.live.items() if key not in moving)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        out = super().invariants(lost, in_flight, held)
        out["pieces_exactly_once"] = {"ok": not self.dup_pieces, "duplicates": len(self.dup_pieces),
                                      "first": [list(x) for x in sorted(self.dup_pieces)[:5]]}
        out["interval_within_V_plus_MX"] = {"ok": not self.too_long, "intervals": self.intervals,
                                            "too_long": [list(x) for x in self.too_long[:5]]}
        if self.notes.faulted(lost):  # the schedule's checks are what the faults did, reported beside the books
            schedule = {}
            for name in ("pieces_exactly_once", "interval_within_V_plus_MX"):
                check = dict(out.pop(name))
                schedule[name] = {"holds": check.pop("ok"), **check}
            ex = out["exactly_once"]
            # a broadcast the faults left incomplete is their damage (the kit judges misses by the
            # ledger's losses alone; here a node that sees a port dead sends nothing to lose)
            ex["ok"] = not ex["duplicate_receptions"] and not ex["unknown_packets"] and "reused_names" not in ex
            ex["lost_to_faults"] = ex["missed"]
            ex["nodes_missed"] = self._nodes_missed(in_flight)
            ex["correctness"] = {"result_correct": ex["missed"] == 0 and ex["completed"] == ex["broadcasts"],
                                 "schedule": schedule} | self.notes.report()
            self.notes.finished_not_excused(ex, lost)
        elif self.notes.scheme_error(lost):
            out["exactly_once"] |= {"ok": False, **self.notes.report()}
        return out


def prepare_dynamic(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[DynamicInputs]:
    """Node parameters: t_p, the quantum (t_p and the pieces 1/(gamma d) whole), lam and rho, X, V, (14).

    Raises:
        SchemeError: on unequal sides, not exactly one of rho and lam, or a bad t_p.
    """
    sides = tuple(topology.sides)
    equal_side(sides, "dynamic-broadcast (§6, X and V of (9), (10))")
    wrap = bool(topology.wrap)
    if ("rho" in load) == ("lam" in load):
        raise SchemeError("dynamic-broadcast takes exactly one of --rho (the load (12)) and --lam (requests per node per time unit)")
    if "lam" in load:
        lam = load["lam"]
        rho = th.rho_from_lam(lam, sides, wrap)
    else:
        rho = load["rho"]
        lam = th.lam_from_rho(rho, sides, wrap)
    tp = Given.of(params).tp
    g, d = th.gamma(wrap), len(sides)
    q = quantum_for(tp, g * d)
    return Inputs(DynamicInputs(tp, tp_ticks(tp, q), lam, rho, x=th.unit_broadcast_length(sides, wrap),
                                v=th.reservation_length(sides, wrap, tp),
                                stability_limit=th.stability_limit(sides, wrap, tp)), quantum=q)


def theory_dynamic(setup: Setup) -> dict[str, Any]:
    """Theorem 7's bound (11) with X, V of (9), (10); the limit (14)."""
    geo = setup.topology
    prm: DynamicInputs = setup.params
    sides, wrap = tuple(geo.sides), bool(geo.wrap)
    b = th.dynamic_broadcast_bounds(sides, wrap, prm.tp, rho=prm.rho)
    return {
        "mean_delay": b["upper_bound"],
        "mean_delay_lower_bound": b["lower_bound"],
        "stable": b["stable"],
        "which": b["which"] + " (an upper bound; infinite past (14))",
        "rho": b["rho"],
        "lam": b["lam"],
        "X": b["X"],
        "V": b["V"],
        "stability_limit": b["stability_limit"],
        "universal_limit": b["universal_limit"],
        "saturation_load": saturation_load(sides, wrap, prm.tp),
        "light_load_bound": b["light_load_bound"],
    }


def dynamic_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`theory_dynamic` is to the run: Theorem 7's (11) an upper bound on the mean
    delay in steady state (its own value the horizon), and the one-interval bound below it
    a lower bound. The loads, X, V and the limits stand beside no metric."""
    horizon = float(th["mean_delay"]) if math.isfinite(float(th.get("mean_delay", math.inf))) else 0.0
    return [Claim("mean_delay", "mean_delay", "upper-bound", why="Theorem 7, (11) with X, V of (9), (10)",
                  horizon=horizon),
            Claim("mean_delay_lower_bound", "mean_delay", "lower-bound",
                  why="any scheme: a broadcast reaches the node farthest from its source")]


def _backlog(topology: Any, params: DynamicInputs) -> float:
    return MAX_BACKLOG


def dynamic_choices(setup: Setup) -> Mapping[str, Distribution]:
    """§6: every node generates broadcast requests by a Poisson process of rate λ per time
    unit, so the requests born in one tick (1/q of a unit) are Poisson(λ/q), independent
    from tick to tick and node to node (``births``; none declared at λ = 0)."""
    prm: DynamicInputs = setup.params
    return births_choice(prm.lam / setup.quantum)


SCHEME = Scheme(
    name="dynamic-broadcast",
    summary="§6: Poisson broadcasts served by successive PMNB intervals (Theorem 6 with mini-packets)",
    source=SOURCE + ", §6",
    node=DynamicNode,
    reporter=DynamicReporter,
    prepare=prepare_dynamic,
    theory=theory_dynamic,
    params=(TP,),
    loads=(Load("rho", "mesh utilisation factor (12): lam (N-1)/(gamma d)", "RHO"),
           Load("lam", "broadcast requests per node per time unit (Poisson)", "LAM")),
    topologies=("mesh", "torus"),
    max_backlog=_backlog,
    faults=None,  # every kind: see ._offschedule
    claims=dynamic_claims,
    choices=dynamic_choices,
)
