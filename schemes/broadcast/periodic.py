"""``bcast-periodic``: the periodic schemes of Stamoulis & Tsitsiklis §4.2.

A fixed multinode-broadcast schedule is run over and over, one *period* after another;
a packet waits at its origin for a period it may use and is then broadcast entirely
inside that period, every copy crossing its arc in the slot the schedule prescribes.
Variants (``--param variant=...``, names of ``theory.PERIODIC_VARIANTS``):

* ``random`` (default, §4.2.2 second scheme): d simultaneous multinode broadcasts
  [SaS85] every ``Δ = 2^d − 1`` slots on the schedule of ``trees.dtree_sends``; each
  packet draws its tree ``j`` uniformly at birth, and the j-packets of one origin form a
  discrete-time M/D/1 queue with synchronisation (§2.1.2): FIFO, one per period. A packet
  born at ``τ`` gets period label ``l = max(l_prev + 1, ⌈τ/Δ⌉ + 1)`` (``trees.next_label``;
  period ``l`` is slots ``(l−1)Δ .. lΔ−1``), so D = Δ(3/2 + ρ/(2(1 − ρ))), eq. (7) with
  λ/d and Δ (display after (7) in §4.2.2; ``theory.periodic_random_delay``).
* ``simultaneous`` (§4.2.2 first scheme): the same schedule, but a node's packets share
  one FIFO served d per period (M/D/d with synchronisation); the k-th packet of a period
  takes tree ``k``. The paper gives only D ≈ (3/2)(2^d − 1) as ρ → 0 and ρ < 1.
* ``mnb`` (§4.2.1): the optimal multinode broadcast [BOSTT89] on the balanced tree of
  ``trees.balanced_*``, period ``P = ⌈(2^d − 1)/d⌉``, one packet per origin per period;
  D is eq. (7) with λ and P (``theory.periodic_mnb_delay``), stable for ρ below (12).

Local rule. A node ``x`` holding a packet of origin ``o`` on tree ``j`` in the period that
starts at slot ``S`` sends it on dimension ``k`` in slot ``S + dtree_crossing_slot(x ^ o,
j, k, d)`` for each ``k`` of ``dtree_children(x ^ o, j, d)`` (``balanced_*`` for ``mnb``).
A copy read in slot ``s`` was sent in slot ``s − 1``, so the receiver knows ``S = ⌊(s −
1)/P⌋·P`` from the clock; messages are ``(origin, seq, tree)`` (tree 0 for ``mnb``). The
schedule is causal (a child's slot is after its parent's), so every send lies in the
future and each node just sleeps until its next scheduled send or birth. What the rule
sends in each slot is exactly the packet ``dtree_sends(x, s, d)`` / ``balanced_sends`` name.

Null packets (§4.2.1, §4.2.2 "introduce null packets"). With ``nulls=account`` (default)
they are not transmitted: both ends know the schedule, so an empty reserved slot carries
no information, and sending ``d·2^d`` messages every slot whatever the load would cost a
d = 10 run ≈ 1/ρ times its real traffic. They are accounted instead:
``link_utilization`` is the measured real load per arc-slot and ``null_fraction`` the
share of reserved arc-slots that would carry a null. With ``nulls=send`` every reserved
arc-slot carries a full unit (size 1, as a null occupies its slot in the paper), a null
being ``(origin, 0, tree)`` (births are numbered from 1); each node walks
``dtree_sends``/``balanced_sends`` every slot, checks that its real sends are exactly the
scheduled ones, and fills the rest with nulls. The fabric's capacity check on every send
then proves the whole schedule conflict-free (for the d-tree variants every arc carries
exactly one unit in every slot), at the price of every node waking every slot.

Delay conventions. The shared reporter measures D to the last actual reception
(``mean_broadcast_delay``). §4.2 counts a broadcast as ended with its period; the origin
knows that instant when it assigns the period and records it (event ``period_end``), and
:class:`PeriodicReporter` reports ``mean_broadcast_delay_period_end`` (with ``_ci95``) over
the same packets. In both schedules the last arc of every broadcast is crossed in the
period's last slot, so the two coincide packet by packet.

Faults (issue #11): every kind tolerated, the cost reported. The rule's one timing
assumption is §4.2's: a copy crosses each arc in the slot the schedule reserves for its
``(origin, tree)`` in its period, so the receiver reads the period from the clock. A
copy that is *not* on its slot -- a ``dup`` fault's copy, a ``delay``ed message, or
one that lands on the offset of a later period whose arcs are already planned -- is
ignored and counted (event ``late``; ``late_copies_ignored`` in the exactly-once
invariant): forwarding it would put it on arc-slots reserved for other packets (the
capacity error and the past-period sends such copies caused before). A stalled node's
sends planned for the stalled slots are dropped when it resumes (event ``overdue``;
``sends_missed_while_stalled``), and births it takes late go to the first period from
the slot it resumes (:meth:`PeriodicNode.catch_up`). Lost copies (``loss``,
``corrupt``, a down link, a partition, a crash) need nothing: the subtree behind them
misses the packet, as in the other tree broadcasts. Broadcasts left incomplete by any
of these are reported as lost to the faults (``missed``, with the nodes each one
never reached), not as violations. Without faults none of these paths is taken: the
schedule is conflict-free (§4.2.2), so results are unchanged.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Claim, Param, Setup
from ..kit import BatchMeans, BroadcastReporter, Residence
from ..kit.choices import Distribution, Uniform
from . import theory
from ._cube_node import CubeNode
from ._inputs import BroadcastInputs, delay_bound_claims, make_scheme
from .theory import PERIODIC_VARIANTS
from .trees import (
    balanced_children,
    balanced_crossing_slot,
    balanced_period,
    balanced_sends,
    dtree_children,
    dtree_crossing_slot,
    dtree_period,
    dtree_sends,
    first_label,
    next_label,
    period_start_slot,
)

__all__ = ["NULL_MODES", "SCHEME", "PeriodicNode", "PeriodicReporter", "period_of", "plan"]

#: How null packets are handled (see the module docstring).
NULL_MODES = ("account", "send")


def period_of(variant: str, d: int) -> int:
    """Period of a variant: ``2^d − 1`` (§4.2.2) or ``⌈(2^d − 1)/d⌉`` (§4.2.1, ``mnb``)."""
    return balanced_period(d) if variant == "mnb" else dtree_period(d)


@cache
def plan(variant: str, rel: int, j: int, d: int) -> tuple[tuple[int, int], ...]:
    """Sends of a node at relative address ``rel`` holding a tree-``j`` packet.

    Args:
        variant: One of :data:`theory.PERIODIC_VARIANTS` (``j`` is ignored for ``mnb``).
        rel: ``node ^ origin``.
        j: Tree index (§4.2.2 j-packet, 0-based).
        d: Cube dimension.

    Returns:
        ``(slot_in_period, dimension)`` pairs in increasing slot order (empty at a leaf).

    Example:
        >>> plan("random", 0, 0, 3)  # the origin of a 1-packet on the 3-cube
        ((0, 0), (1, 1), (3, 2))
    """
    if variant == "mnb":
        out = [(balanced_crossing_slot(rel, k, d), k) for k in balanced_children(rel, d)]
    else:
        out = [(dtree_crossing_slot(rel, j, k, d), k) for k in dtree_children(rel, j, d)]
    return tuple(sorted(out))  # type: ignore[arg-type]


class PeriodicNode(CubeNode):
    """One node of a periodic scheme (§4.2): the schedule's sends, nothing else."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        prm: BroadcastInputs = ctx.params
        self.variant: str = prm.variant
        self.send_nulls = prm.nulls == "send"
        self.period = period_of(self.variant, self.d)
        self.labels = [0] * self.d  # random/mnb: last label per stream (0: none yet)
        self.cur_label = 0  # simultaneous: label of the latest period in use ...
        self.cur_count = 0  # ... and how many of its d trees are taken
        self.due: dict[int, list[tuple[int, list[Any]]]] = {}  # slot -> [(port, [msg, left])]
        self.due_slots: list[int] = []  # heap of the keys of ``due``
        self.n_held = 0
        #: the residence ledger of the records' queueing slots (the kit's ``littles_law``)
        self.ledger = Residence()

    # -- origin side: which period and tree a new packet gets ---------------------------
    def assign(self, tau: float) -> tuple[int, int]:
        """(tree, label) of a packet born at ``tau`` (FIFO, §2.1.2 synchronisation).

        ``random``: tree uniform, one packet per period per (origin, tree) (§4.2.2);
        ``simultaneous``: up to d per period, the k-th taking tree k (§4.2.2);
        ``mnb``: one packet per period (§4.2.1).
        """
        p = self.period
        if self.variant == "random":
            j = self.ctx.rng.randrange(self.d)
            self.ctx.record_choice("tree", j)  # uniform over the d trees (§4.2.2)
        elif self.variant == "mnb":
            j = 0
        else:
            earliest = first_label(tau, p)  # first period starting at or after tau
            if earliest <= self.cur_label and self.cur_count < self.d:
                self.cur_count += 1  # joins the latest period, which still has a free tree
            else:
                self.cur_label = max(earliest, self.cur_label + 1)
                self.cur_count = 1
            return self.cur_count - 1, self.cur_label
        label = next_label(self.labels[j], tau, p)
        self.labels[j] = label
        return j, label

    # -- timers ---------------------------------------------------------------------------
    def schedule(self, msg: Any, sends: tuple[tuple[int, int], ...], start: int) -> None:
        """Queue ``msg`` for each ``(slot_in_period, port)`` of ``sends`` from ``start``."""
        if not sends:
            return
        rec = [msg, len(sends), self.ctx.slot]
        self.n_held += 1
        self.ledger.entered(rec[2])
        due = self.due
        for off, port in sends:
            s = start + off
            lst = due.get(s)
            if lst is None:
                due[s] = lst = []
                heapq.heappush(self.due_slots, s)
            lst.append((port, rec))

    def catch_up(self, j: int, label: int, slot: int) -> tuple[int, int]:
        """(tree, label) of a packet whose assigned period began before ``slot``.

        Only a stalled node meets one: it takes the births of the stall at once when it
        resumes, later than their period. The packet moves to the first period from
        ``slot`` on (its stream's labels moving with it), as if born at ``slot``.
        """
        label = max(label, first_label(slot, self.period))
        if self.variant == "simultaneous":
            self.cur_label, self.cur_count = label, 1
            return 0, label
        self.labels[j] = label
        return j, label

    def free(self, sends: tuple[tuple[int, int], ...], start: int) -> bool:
        """Whether every ``(slot_in_period, port)`` of ``sends`` from ``start`` is still unplanned.

        Always true without faults (one ``(origin, tree)`` per arc and slot of a period);
        false for a late copy that lands on the offset of another period.
        """
        due = self.due
        for off, port in sends:
            lst = due.get(start + off)
            if lst is not None and any(q == port for q, _ in lst):
                return False
        return True

    def drop_overdue(self, slot: int) -> None:
        """Forget sends planned for slots before ``slot`` (slots a stall took), recording how many."""
        missed = 0
        while self.due_slots and self.due_slots[0] < slot:
            for _, rec in self.due.pop(heapq.heappop(self.due_slots)):
                missed += 1
                rec[1] -= 1
                if rec[1] == 0:
                    self.n_held -= 1
                    self.ledger.left(slot, rec[2])
        self.ctx.record("overdue", missed)

    def take_due(self, slot: int) -> list[tuple[int, list[Any]]]:
        """The sends due in ``slot`` (their records released when their last send goes)."""
        lst = self.due.pop(slot, None)
        if lst is None:
            return []
        heapq.heappop(self.due_slots)
        for _, rec in lst:
            rec[1] -= 1
            if rec[1] == 0:
                self.n_held -= 1
                self.ledger.left(slot, rec[2])
        return lst

    def held(self) -> int:
        return self.n_held

    def held_packets(self) -> set[tuple[int, int]]:
        return {(rec[0][0], rec[0][1]) for lst in self.due.values() for _, rec in lst}

    # -- the rule -------------------------------------------------------------------------
    async def run(self) -> None:
        ctx, d, me, p, variant = self.ctx, self.d, self.ctx.node, self.period, self.variant
        send, record = ctx.send, ctx.record
        inbox: Any = ()
        while True:
            slot = ctx.slot
            if inbox:
                start = (slot - 1) // p * p  # the copies were sent in slot - 1
                offset = slot - 1 - start
                first = self.received
                for in_port, msg in inbox:
                    origin, seq, j = msg
                    if seq == 0:  # a null packet (nulls=send)
                        continue
                    rel = me ^ origin
                    # on time: the parent across in_port sends on it at this offset of the period
                    if (offset, in_port) not in plan(variant, rel ^ (1 << in_port), j, d):
                        record("late", origin, seq)  # a dup's copy or a delayed message: ignored
                        continue
                    sends = plan(variant, rel, j, d)
                    if sends and not self.free(sends, start):
                        record("late", origin, seq)  # a late copy realigned on a period already planned
                        continue
                    first(origin, seq)
                    if sends:  # not a leaf of this tree
                        self.schedule(msg, sends, start)
            for seq, tau in self.births(slot):
                j, label = self.assign(tau)
                start = period_start_slot(label, p)
                if start < slot:  # only after a stall: births are taken at ceil(tau) <= start
                    j, label = self.catch_up(j, label, slot)
                    start = period_start_slot(label, p)
                record("period_end", seq, start + p)
                self.schedule((me, seq, j), plan(variant, 0, j, d), start)
            if self.due_slots and self.due_slots[0] < slot:
                self.drop_overdue(slot)
            q_start = self.n_held
            due = self.take_due(slot)
            if self.send_nulls:
                self._send_with_nulls(slot, due)
            else:
                for port, rec in due:
                    send(port, rec[0])
            self.report(q_start, self.n_held)
            self.ledger.record(ctx)
            wake = self.due_slots[0] if self.due_slots else None
            births = self.next_wake()
            if births is not None and (wake is None or births < wake):
                wake = births
            if self.send_nulls or wake == slot + 1:
                inbox = await ctx.next_slot()
            else:
                inbox = await ctx.idle(until=wake)

    def _send_with_nulls(self, slot: int, due: list[tuple[int, list[Any]]]) -> None:
        """Walk the whole schedule of ``slot``: real packets where due, nulls elsewhere."""
        d, me = self.d, self.ctx.node
        real = {port: rec[0] for port, rec in due}
        if len(real) != len(due):
            raise RuntimeError(f"node {me}: two packets due on one port in slot {slot}")
        if self.variant == "mnb":
            scheduled = [(k, o, 0) for o, k in balanced_sends(me, slot, d)]
        else:
            scheduled = [(k, o, j) for k, (o, j) in enumerate(dtree_sends(me, slot, d))]
        for k, origin, j in scheduled:
            msg = real.pop(k, None)
            if msg is None:
                msg = (origin, 0, j)
            elif msg[0] != origin or msg[2] != j:
                raise RuntimeError(f"node {me}: sends {msg} on port {k} in slot {slot}, "
                                   f"schedule says origin {origin} tree {j}")
            self.ctx.send(k, msg)
        if real:
            raise RuntimeError(f"node {me}: unscheduled sends in slot {slot}: {real}")


# -------------------------------------------------------------------------- observer


class PeriodicReporter(BroadcastReporter):
    """The shared broadcast metrics plus the §4.2 delay convention and null accounting.

    Extra metrics: ``mean_broadcast_delay_period_end`` (birth to the end of the packet's
    period, over the same packets as ``mean_broadcast_delay``) with ``_ci95``;
    ``link_utilization`` (real packets per arc-slot, measured) and ``null_fraction``
    (share of the schedule's reserved arc-slots left to null packets).
    """

    events: Mapping[str, tuple[str, ...]] = {**BroadcastReporter.events, "period_end": ("seq", "end"),
                                             "late": ("origin", "seq"), "overdue": ("sends",)}

    #: sharded, the kit's books merge (:class:`~slotnet.schemes.kit.BroadcastReporter`); the
    #: period ends are the origins' own, the counts sums, and the period-end delays are added
    #: where the merge finds each broadcast complete, in the one-process order
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        d = setup.topology.d
        variant = setup.params.variant
        n = setup.topology.n_nodes
        self.arc_slots = n * d  # directed arcs
        # reserved arc-slots per slot: every arc (§4.2.2) or n trees of n-1 arcs per P slots (§4.2.1)
        self.reserved = n * (n - 1) / period_of(variant, d) if variant == "mnb" else float(n * d)
        self.ends: dict[tuple[int, int], int] = {}
        self.pe_batches = BatchMeans(self.warmup, self.slots)
        self.pe_sum = 0.0
        self.done: list[tuple[tuple[int, int], float, float]] = []  # completed this slot
        self.units = 0  # real copies sent in measured slots (read one slot later)
        self.last_slot = -1
        self.late_copies = 0  # copies off their scheduled slot (dup, delay), ignored
        self.missed_sends = 0  # scheduled sends a stall took

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {**super().handlers(), "period_end": self.period_end, "late": self.late, "overdue": self.overdue}

    def late(self, node: int, slot: int, origin: int, seq: int) -> None:
        self.late_copies += 1

    def overdue(self, node: int, slot: int, sends: int) -> None:
        self.missed_sends += sends

    def period_end(self, node: int, slot: int, seq: int, end: int) -> None:
        self.ends[(node, seq)] = end

    def step(self, node: int, slot: int, births: Any, received: Any, q_start: int, q_after: int) -> None:
        super().step(node, slot, births, received, q_start, q_after)
        if slot > self.warmup:
            self.units += len(received)

    def _shard_step(self, node: int, slot: int, births: Any, received: Any, q_start: int, q_after: int) -> None:
        super()._shard_step(node, slot, births, received, q_start, q_after)
        if slot > self.warmup:
            self.units += len(received)

    def shard_state(self) -> dict[str, Any]:
        """The kit's books, the period ends of the shard's origins and its counts."""
        return {**super().shard_state(), "ends": [[o, q, end] for (o, q), end in self.ends.items()],
                "counts": [self.units, self.late_copies, self.missed_sends]}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The period ends gathered before the kit's merge measures the completions."""
        for st in states:
            for o, q, end in st["ends"]:
                self.ends[(o, q)] = end
            units, late, missed = st["counts"]
            self.units += units
            self.late_copies += late
            self.missed_sends += missed
        super().merge_shards(states)

    def _merged_completion(self, key: tuple[int, int], tau: float, last: int, total: int) -> None:
        end = self.ends.pop(key)
        super()._merged_completion(key, tau, last, total)
        if tau >= self.warmup:
            self.pe_sum += end - tau
            self.pe_batches.add(min(int(tau), self.slots - 1), end - tau)

    def _complete(self, key: tuple[int, int], rec: list[Any]) -> None:
        end = self.ends.pop(key)
        super()._complete(key, rec)
        tau = rec[0]
        if tau >= self.warmup:
            self.done.append((key, end - tau, tau))

    def end_slot(self, slot: int) -> None:
        super().end_slot(slot)
        self.last_slot = slot
        if self.done:  # summed in key order: the float sums do not depend on task order
            self.done.sort()
            for _, delay, tau in self.done:
                self.pe_sum += delay
                self.pe_batches.add(min(int(tau), self.slots - 1), delay)
            self.done = []

    def metrics(self) -> dict[str, Any]:
        out = super().metrics()
        out["mean_broadcast_delay_period_end"] = self.pe_sum / self.measured if self.measured else None
        out["mean_broadcast_delay_period_end_ci95"] = self.pe_batches.half_width()
        # sends in slots warmup .. last_slot - 1 (read one slot later): the slots run, not planned
        span = self.last_slot - self.warmup
        out["link_utilization"] = self.units / (self.arc_slots * span) if span > 0 else None
        out["null_fraction"] = 1.0 - self.units / (self.reserved * span) if span > 0 else None
        return out

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """The shared exactly-once check, with the copies and sends the faults took off the schedule.

        A broadcast a late copy or a stall left incomplete is the fault's, like one a
        lost copy left incomplete: counted (``late_copies_ignored``,
        ``sends_missed_while_stalled``), not a violation.
        """
        out = super().invariants(lost, in_flight, held)
        if self.late_copies or self.missed_sends:
            ex = out["exactly_once"]
            ex["late_copies_ignored"] = self.late_copies
            ex["sends_missed_while_stalled"] = self.missed_sends
            ex["ok"] = ex["duplicate_receptions"] == 0 and ex["unknown_packets"] == 0
            ex["lost_to_faults"] = ex["missed"]
        return out


def _max_backlog(topology: Any, p: BroadcastInputs) -> float:
    """Queued packets per node past which a run is surely unstable.

    Under a periodic schedule every copy waits at each forwarding node for its reserved
    slot, so a stable node holds of the order of λ·2^d·P/(1-ρ) packets (P the period,
    1023 slots at d = 10): the orchestrator's default of 1000 would stop stable runs.
    """
    rho = min(p.rho, 0.9)
    return 1000.0 + 2.0 * p.lam * topology.n_nodes * period_of(p.variant, topology.d) / (1.0 - rho)


def periodic_theory(setup: Setup) -> dict[str, Any]:
    """§4.2 beside the run, for the run's variant: eq. (7), the stability limit and
    Proposition 1's bound (:func:`.theory.periodic_metrics`)."""
    return theory.periodic_metrics(setup.topology.d, setup.params.rho, setup.params.variant)


#: Eq. (7)'s error as claimed: a share of the model. Eq. (7) is the M/D/1 queue with a
#: synchronisation delay that §4.2 derives for the periodic schedule (Poisson arrivals per
#: origin and tree); this emulator measures it within its noise (d = 4, rho = 0.5, 7,000
#: slots: 29.98 +- 0.45 and 30.23 +- 0.38 against 30.0; ``slotnet repro stamoulis``'s
#: eq. (7) rows at d = 5), but judges it only as the model of the schedule, not as a theorem.
PERIODIC_MODEL_ERROR = 0.02


def periodic_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`periodic_theory` is to the run: eq. (7) (§4.2.1 with the balanced tree,
    §4.2.2 with a random tree per packet) an approximation within
    :data:`PERIODIC_MODEL_ERROR` of itself; Proposition 1's bound a lower bound. The
    simultaneous variant's light-traffic value (M/D/d at rho -> 0) has no metric of its own
    beside it."""
    out = delay_bound_claims(th)
    if "mean_broadcast_delay" in th:
        model = float(th["mean_broadcast_delay"])
        for metric in ("mean_broadcast_delay", "mean_broadcast_delay_period_end"):
            out.append(Claim("mean_broadcast_delay", metric, "approximation", PERIODIC_MODEL_ERROR * model,
                             why="eq. (7): M/D/1 per tree with synchronisation, "
                                 + ("§4.2.1" if setup.params.variant == "mnb" else "§4.2.2")))
    return out


def periodic_choices(setup: Setup) -> dict[str, Distribution]:
    """``variant=random`` (§4.2.2): each packet takes one of the d trees, each with
    probability 1/d (the other variants assign trees in turn, or use one)."""
    return {"tree": Uniform(range(setup.topology.d))} if setup.params.variant == "random" else {}


SCHEME = make_scheme(
        "bcast-periodic",
        "periodic multinode broadcasts with null packets (§4.2.1, §4.2.2)",
        PeriodicNode,
        params=(
            Param("variant", str, "random",
                  "random: tree per packet, M/D/1 per tree, eq. (7) (§4.2.2); simultaneous: d per period, "
                  "M/D/d (§4.2.2); mnb: balanced tree, period ⌈(2^d-1)/d⌉ (§4.2.1)",
                  choices=PERIODIC_VARIANTS),
            Param("nulls", str, "account",
                  "account: nulls not transmitted, only counted; send: nulls sent as full units "
                  "(every reserved arc-slot busy, schedule checked every slot)",
                  choices=NULL_MODES),
        ),
        theory=periodic_theory,
        reporter=PeriodicReporter,
        max_backlog=_max_backlog,
        claims=periodic_claims,
        choices=periodic_choices,
        stability="variant=mnb is stable for ρ below (12), ((2^d−1)/d)/⌈(2^d−1)/d⌉; random and simultaneous for every ρ < 1 (§4.2)",
)
