"""``bcast-indirect``: the indirect scheme of Stamoulis & Tsitsiklis §5 on the d ESBT.

Every packet picks one of the ``d`` edge-disjoint spanning binomial trees of Johnsson &
Ho (§5.1, :mod:`.trees` ``esbt_*``), travels to that tree's root ``e_j`` against the
tree's arcs and is broadcast by the root along the tree (Rules A-F, §5.2), exactly as
stated in the :mod:`.trees` module docstring, "Rules A-F in local terms":

* Rule A: the tree ``j`` is drawn uniformly from the node's own RNG;
* Rule D (``--param rule=D``, default) or Rule D′ (``rule=Dprime``, §5.5.2): the packet
  first crosses ``virtual_arcs(origin, j, d, rule)`` virtual arcs at its origin, one per
  ``C0`` slot (a FIFO per tree in front of the tandem, one packet entering per ``C0``
  slot);
* Rules B, C: root-bound hops in ``C0`` slots only, FIFO per tree, on ``up_port``;
* Rule E: at the root, ``L1``/``L2`` (fed by ``T_1^(j)`` / the rest, ``root_buffer``) cross
  ``l1``/``l2`` into the unit buffers ``B1``/``B2`` in a ``C0`` slot ``t``;
* Rule F: a fair coin (node RNG) orders the starts in ``t + 1``, ``t + 2``
  (``rule_f_start_slots``); starting = sending on all ``d`` ports;
* Rule C: broadcasts move in ``C1 ∪ C2`` only, each node forwarding in the first such slot
  after reception on ``down_ports`` (never queueing, §5.4).

A node on the root-bound path sees the packet twice; the first sighting (on the way up)
is the reception, the broadcast copy is forwarded but not received again.  Whether a
node was on the path is a pure function of its id, the origin and the tree
(:func:`._indirect_rules.on_root_path`), so the node keeps no "seen" memory at all.

``--param idling=false`` runs the non-idling version without redundant transmissions
that §5.6 simulated (:mod:`._indirect_nonidling`).

Q (§4.3.3) counts, once however many ports, every packet the node still has to forward:
its own packets before and on their virtual arcs, root-bound packets, ``L1``/``L2``/``B1``/
``B2`` at a root, and broadcast packets waiting for their hop (the paper's footnote
under Table 1: nodes are asymmetric here, Q is the average over nodes).

Faults: every kind runs. Lost copies (``loss``, ``corrupt``, a down link, a partition, a
crash) cost the subtree behind them, as in the other tree broadcasts; a copy a ``dup`` or
``delay`` fault adds to a slot waits one ``C1``/``C2`` slot behind the first. A stalled
node resumes from the slot it wakes in: the Rule C forwards and Rule F starts planned
for the slots the stall took are dropped (event ``overdue``, counted in
``sends_missed_while_stalled``), as ``bcast-periodic`` drops its missed sends; sending
them late could put two starts of one root on its ports in one slot. Root-bound packets
and virtual arcs only wait for the next ``C0`` slot. The broadcasts these leave
incomplete are reported lost to the faults (:class:`IndirectReporter`), not as
violations. Without faults none of this happens and results are unchanged.

Measured against the paper (see :mod:`._theory_indirect_slots`): D is Proposition 5 /
Corollary 8 minus ``3/2 + (3/2) 2^-d`` (the analysis counts the ``l1``/``l2`` crossing as a
3-slot service, and the observer's D stops at the last first reception), and Q is
``λ (3d + 2 + X) + λ (3/4) 2^d`` rather than Proposition 6's printed value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from slotnet.nodes import NodeContext

from .._base import Claim, Param, Setup, parse_bool
from ..kit import BroadcastReporter, Residence
from ..kit.choices import Distribution, Uniform
from . import _theory_indirect_slots, theory
from ._cube_node import CubeNode
from ._indirect_nonidling import IndirectNonIdlingNode
from ._indirect_rules import RULES, node_plan, path_test
from ._inputs import BroadcastInputs, make_scheme
from .trees import root_buffer, rule_f_start_slots

__all__ = ["SCHEME", "IndirectNode", "IndirectNonIdlingNode", "IndirectReporter", "make_node"]

UP, BCAST = 1, 0  # last field of a message: (origin, seq, tree, UP | BCAST)


class IndirectNode(CubeNode):
    """One node of the indirect scheme with Rules A-F (§5.2; Rule D′ of §5.5.2 by parameter)."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        d, z = self.d, ctx.node
        self.plan = node_plan(z, d, RULES[ctx.params.rule])
        self.root = self.plan.root_tree
        # The FIFOs per tree are lists (a few packets each; an empty list is 56 bytes, a deque 760:
        # 4d + 2 deques were most of a node's memory)
        self.v_wait: list[list[Any]] = [[] for _ in range(d)]  # own packets before the tandem (Rule D)
        self.v_arcs: list[list[tuple[int, Any]]] = [[] for _ in range(d)]  # (C0 slot it leaves, msg)
        self.up_q: list[list[Any]] = [[] for _ in range(d)]  # root-bound FIFO per tree (Rule B)
        # broadcasts to forward per tree, (due slot, msg): at most one without faults (Rule C, §5.4)
        self.hold: list[list[tuple[int, Any]]] = [[] for _ in range(d)]
        self.lq: tuple[list[Any], list[Any]] = ([], [])  # L1, L2 before l1, l2 (Rule E)
        self.buf: list[tuple[int, Any] | None] = [None, None]  # B1, B2: (start slot, msg) (Rules E, F)
        self.n_up = 0  # packets heading to the root: v_wait, v_arcs, up_q, L1, L2
        self.n_arcs = 0  # ... of which on virtual arcs (v_arcs)
        self.n_bc = 0  # packets under broadcast: B1, B2, hold
        self.wake_at: int | None = None  # the slot this node last asked to be woken in (None: a message)
        #: the slot each packet here (by ``(origin, seq)``) joined Q, and their residence ledger (``littles_law``)
        self.since: dict[tuple[int, int], int] = {}
        self.ledger = Residence()
        self._randrange = ctx.rng.randrange
        self._getrandbits = ctx.rng.getrandbits

    # -- observer side --------------------------------------------------------------
    def held(self) -> int:
        return self.n_up + self.n_bc

    def held_packets(self) -> set[tuple[int, int]]:
        out: set[tuple[int, int]] = set()
        for q in (*self.v_wait, *self.up_q, *self.lq):
            out.update((m[0], m[1]) for m in q)
        for q2 in self.v_arcs:
            out.update((m[0], m[1]) for _, m in q2)
        for q3 in self.hold:
            out.update((m[0], m[1]) for _, m in q3)
        for b in self.buf:
            if b is not None:
                out.add((b[1][0], b[1][1]))
        return out

    def report_pieces(self, start: tuple[int, int], after: tuple[int, int]) -> None:
        """Report Q for this step; ``start``/``after`` are ``(n_up, n_bc)`` (a hook for tests)."""
        self.report(start[0] + start[1], after[0] + after[1])

    def enter(self, msg: Any, slot: int) -> None:
        """``msg`` joins Q in ``slot`` (its entry stamp)."""
        self.since[(msg[0], msg[1])] = slot
        self.ledger.entered(slot)

    def leave(self, msg: Any, slot: int) -> None:
        """``msg`` leaves Q in ``slot`` (it was sent on its last port here, or dropped).

        Only a fault makes two copies of one packet meet here (a ``dup``, a late copy);
        the ledger then stands down with the check, and the second copy is stamped ``slot``.
        """
        self.ledger.left(slot, self.since.pop((msg[0], msg[1]), slot))

    # -- the rule ---------------------------------------------------------------------
    def arrive(self, slot: int, msg: Any) -> None:
        """A message read from the inbox in ``slot`` (sent in ``slot - 1``)."""
        origin, seq, j, phase = msg
        if phase == UP:  # Rule B: first sighting, the reception
            self.received(origin, seq)
            if j == self.root:
                self.lq[root_buffer(origin, j, self.d) - 1].append(msg)
            else:
                self.up_q[j].append(msg)
            self.n_up += 1
            self.enter(msg, slot)
            return
        plan = self.plan
        if origin != self.ctx.node and not path_test(plan.path_key[j], origin, self.d):
            self.received(origin, seq)
        if plan.down[j]:  # Rule C: forward in the first C1 ∪ C2 slot from now
            self.hold[j].append((slot + 1 if slot % 3 == 0 else slot, msg))
            self.n_bc += 1
            self.enter(msg, slot)

    def originate(self, seq: int) -> None:
        """Rule A, then Rule D/D′: a new packet joins its tandem's FIFO (or goes straight up)."""
        j = self._randrange(self.d)
        self.ctx.record_choice("tree", j)  # Rule A: uniform over the d trees (§5.2)
        msg = (self.ctx.node, seq, j, UP)
        (self.v_wait if self.plan.virtual[j] else self.up_q)[j].append(msg)
        self.n_up += 1
        self.enter(msg, self.ctx.slot)

    def c0_step(self, slot: int) -> None:
        """A ``C0`` slot: virtual arcs, root-bound hops, ``l1``/``l2`` and Rule F's coin."""
        plan, send = self.plan, self.ctx.send
        root = self.root
        for j in range(self.d):
            arcs = self.v_arcs[j]
            while arcs and arcs[0][0] <= slot:  # left the tandem at the end of slot - 3
                msg = arcs.pop(0)[1]
                (self.lq[1] if j == root else self.up_q[j]).append(msg)
                self.n_arcs -= 1
            wait = self.v_wait[j]
            if wait:  # one packet enters the tandem per C0 slot, crossing v arcs in v C0 slots
                arcs.append((slot + 3 * plan.virtual[j], wait.pop(0)))
                self.n_arcs += 1
            q = self.up_q[j]
            if q:
                msg = q.pop(0)
                # None only on the tree this node roots, whose packets go to lq[1], never up_q
                send(cast(int, plan.up[j]), msg)
                self.n_up -= 1
                self.leave(msg, slot)
        if root is not None:
            l1, l2 = self.lq
            if l1 or l2:
                coin = self._getrandbits(1)
                self.ctx.record_choice("rule_f", coin)  # Rule F: a fair coin (§5.2)
                s1, s2 = rule_f_start_slots(slot, bool(l1), bool(l2), coin)
                if l1:
                    self.buf[0] = (s1, l1.pop(0))  # type: ignore[assignment]
                if l2:
                    self.buf[1] = (s2, l2.pop(0))  # type: ignore[assignment]
                moved = (s1 is not None) + (s2 is not None)
                self.n_up -= moved
                self.n_bc += moved

    def broadcast_step(self, slot: int) -> None:
        """A ``C1``/``C2`` slot: Rule F starts at the root, Rule C hops everywhere."""
        send = self.ctx.send
        down = self.plan.down
        if self.root is not None:
            for b, entry in enumerate(self.buf):
                if entry is not None and entry[0] == slot:
                    o, seq, j, _ = entry[1]
                    out = (o, seq, j, BCAST)
                    for port in down[j]:
                        send(port, out)
                    self.buf[b] = None
                    self.n_bc -= 1
                    self.leave(out, slot)
        for j, q in enumerate(self.hold):
            if q and q[0][0] <= slot:  # a second one exists only if faults delayed a copy: it waits a slot
                msg = q.pop(0)[1]
                for port in down[j]:
                    send(port, msg)
                self.n_bc -= 1
                self.leave(msg, slot)
                if q and q[0][0] <= slot:
                    q[0] = (slot + 1 if slot % 3 == 1 else slot + 2, q[0][1])

    def drop_overdue(self, slot: int) -> None:
        """Forget the broadcast sends planned for slots before ``slot`` (the slots a stall took).

        Rule C forwards and Rule F starts are bound to their slots; each dropped one is
        recorded (event ``overdue``, the number of sends it would have made). Root-bound
        packets and packets on virtual arcs keep their places: they leave in the next
        ``C0`` slot.
        """
        down = self.plan.down
        missed = 0
        for j, q in enumerate(self.hold):
            if any(due < slot for due, _ in q):
                kept = [entry for entry in q if entry[0] >= slot]
                for due, msg in q:
                    if due < slot:
                        self.leave(msg, slot)
                dropped = len(q) - len(kept)
                missed += dropped * len(down[j])
                self.n_bc -= dropped
                q.clear()
                q.extend(kept)
        for b, entry in enumerate(self.buf):
            if entry is not None and entry[0] < slot:
                missed += len(down[entry[1][2]])
                self.buf[b] = None
                self.n_bc -= 1
                self.leave(entry[1], slot)
        if missed:
            self.ctx.record("overdue", missed)

    def next_event(self, slot: int) -> int | None:
        """The next slot this node has work in (births aside); ``None`` if none."""
        nxt = None
        if self.n_up > self.n_arcs:  # something waits for a C0 slot
            nxt = slot + 3 - slot % 3
        elif self.n_arcs:  # only packets on virtual arcs: sleep until the first leaves
            nxt = min(arcs[0][0] for arcs in self.v_arcs if arcs)
            if nxt <= slot:  # due in slots a stall took: it leaves in the next C0 slot
                nxt = slot + 3 - slot % 3
        if self.n_bc:
            for q in self.hold:
                if q and (nxt is None or q[0][0] < nxt):
                    nxt = q[0][0]
            for entry in self.buf:
                if entry is not None and (nxt is None or entry[0] < nxt):
                    nxt = entry[0]
        return nxt

    async def run(self) -> None:
        ctx = self.ctx
        inbox: Any = ()
        while True:
            slot = ctx.slot
            if self.wake_at is not None and slot > self.wake_at:  # woken late: a stall took slots
                self.drop_overdue(slot)
            for _, msg in inbox:
                self.arrive(slot, msg)
            for seq, _tau in self.births(slot):
                self.originate(seq)
            start = (self.n_up, self.n_bc)
            if slot % 3 == 0:
                self.c0_step(slot)
            elif self.n_bc:
                self.broadcast_step(slot)
            self.report_pieces(start, (self.n_up, self.n_bc))
            self.ledger.record(ctx)
            wake = self.next_event(slot)
            birth = self.next_wake()
            if birth is not None and (wake is None or birth < wake):
                wake = birth
            self.wake_at = wake
            if wake == slot + 1:
                inbox = await ctx.next_slot()
            else:
                inbox = await ctx.idle(until=wake)


class IndirectReporter(BroadcastReporter):
    """The shared broadcast metrics, with the sends a stall took off the schedule booked.

    A broadcast a stalled node's dropped forward or start left incomplete is the fault's,
    like one a lost copy left incomplete: counted (``sends_missed_while_stalled``), not a
    violation.
    """

    events: Mapping[str, tuple[str, ...]] = {**BroadcastReporter.events, "overdue": ("sends",)}
    #: sharded, the kit's books merge (:class:`~slotnet.schemes.kit.BroadcastReporter`) and
    #: the missed sends are a sum
    merges_shards = True

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.missed_sends = 0  # scheduled sends a stall took

    def shard_state(self) -> dict[str, Any]:
        """The kit's books and the sends a stall took at the shard's nodes."""
        return {**super().shard_state(), "missed_sends": self.missed_sends}

    def merge_shards(self, states: Sequence[Any]) -> None:
        """The kit's merge, and the missed sends added up."""
        super().merge_shards(states)
        self.missed_sends += sum(st["missed_sends"] for st in states)

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {**super().handlers(), "overdue": self.overdue}

    def overdue(self, node: int, slot: int, sends: int) -> None:
        self.missed_sends += sends

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        out = super().invariants(lost, in_flight, held)
        if self.missed_sends:
            ex = out["exactly_once"]
            ex["sends_missed_while_stalled"] = self.missed_sends
            ex["ok"] = ex["duplicate_receptions"] == 0 and ex["unknown_packets"] == 0 and "reused_names" not in ex
            ex["lost_to_faults"] = ex["missed"]
        return out


def make_node(ctx: NodeContext) -> CubeNode:
    """The node for ``ctx.params``: Rules A-F, or the non-idling version (``idling=false``)."""
    prm: BroadcastInputs = ctx.params
    return IndirectNode(ctx) if prm.idling else IndirectNonIdlingNode(ctx)


def indirect_theory(setup: Setup) -> dict[str, Any]:
    """Proposition 4-6 / Corollary 8 for Rules A-F (:func:`.theory.indirect_metrics`), with
    what Rules E-F give slot by slot beside them; for the non-idling version (§5.6) the
    paper has simulations only, so just Proposition 7's necessary condition (35) and the
    static lower bound (Proposition 2)."""
    out: dict[str, Any]
    prm: BroadcastInputs = setup.params
    if prm.idling:
        out = theory.indirect_metrics(setup.topology.d, prm.rho, rule=RULES[prm.rule])
        if out.get("stable"):  # Rules E-F as written, slot by slot (see _theory_indirect_slots)
            d, rho, rule = setup.topology.d, prm.rho, RULES[prm.rule]
            out["mean_broadcast_delay_slot_model"] = _theory_indirect_slots.slot_delay(d, rho, rule)
            if rule == "D":
                out["mean_queue_per_node_slot_model"] = _theory_indirect_slots.slot_queue(d, rho)
        return out
    d, rho = setup.topology.d, prm.rho
    out = {"stability_limit_upper_bound": theory.stability_limit_rule_a(d)}
    if rho < 1.0:
        out["delay_lower_bound"] = theory.delay_lower_bound_static(d, rho)
    return out


def indirect_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What each value of :func:`indirect_theory` is to the run (the run's ``theory_agreement``).

    Rules A-F: the slot model (:mod:`._theory_indirect_slots`) is exact for D and, under
    Rule D, for Q; Proposition 5 / Corollary 8 and Proposition 6 are the paper's
    approximations, off by what that module derives (their gap to the slot model);
    Proposition 2's static delay bound is a lower bound. The non-idling version (§5.6)
    has only the lower bound.
    """
    horizon = float(th.get("mean_broadcast_delay_slot_model", th.get("delay_lower_bound", 0.0)))
    out = [Claim("delay_lower_bound", "mean_broadcast_delay", "lower-bound", why="Proposition 2 (static)",
                 horizon=horizon)]
    if "mean_broadcast_delay_slot_model" in th:
        out += [
            Claim("mean_broadcast_delay_slot_model", "mean_broadcast_delay", "exact",
                  why="Rules E-F slot by slot: Prop. 5 / Cor. 8 - 3/2 - (3/2) 2^-d (_theory_indirect_slots)",
                  horizon=horizon),
            Claim("mean_broadcast_delay", "mean_broadcast_delay", "approximation",
                  abs(th["mean_broadcast_delay"] - th["mean_broadcast_delay_slot_model"]),
                  why="Prop. 5 / Cor. 8: the l1/l2 crossing counted as a 3-slot service"),
        ]
    if "mean_queue_per_node_slot_model" in th:
        out += [
            Claim("mean_queue_per_node_slot_model", "mean_queue_per_node", "exact",
                  why="Rule D slot by slot: lambda (3d + 2 + X) + lambda (3/4) 2^d (_theory_indirect_slots)",
                  horizon=horizon),
            Claim("mean_queue_per_node", "mean_queue_per_node", "approximation",
                  abs(th["mean_queue_per_node"] - th["mean_queue_per_node_slot_model"]),
                  why="Prop. 6: a per-3-slot arrival probability used as a per-slot rate"),
        ]
    return out


def indirect_choices(setup: Setup) -> dict[str, Distribution]:
    """The random choices of the indirect scheme, judged by the observer.

    * ``tree``: Rule A (§5.2): each packet selects its tree, each of the d with probability
      1/d, independently of the others (both the idling rules and the non-idling version, §5.6).
    * ``rule_f``: Rule F (§5.2): in a ``C0`` slot ``t`` after which a root holds a packet in
      ``B1`` or ``B2``, "which of the two packets will be broadcast first is determined by
      tossing a fair coin" (one packet: the coin sets its start slot): 0 or 1, each with
      probability 1/2 -- 0 starts ``B1``'s packet (or the lone one) in ``t + 1``, 1 in
      ``t + 2`` (:func:`~.trees.rule_f_start_slots`). The idling rules only: the non-idling
      version (§5.6) tosses no coin.
    """
    p: BroadcastInputs = setup.params
    out: dict[str, Distribution] = {"tree": Uniform(range(setup.topology.d))}
    if p.idling:
        out["rule_f"] = Uniform((0, 1))
    return out


SCHEME = make_scheme(
    "bcast-indirect",
    "indirect broadcast via the roots of the d edge-disjoint spanning binomial trees (§5)",
    make_node,
    params=(
        Param("rule", str, "D", "virtual arcs: D (§5.2, d - k per packet) or Dprime (§5.5.2, one)",
                    tuple(RULES)),
        Param("idling", parse_bool, True,
                    "true: Rules A-F (§5.2); false: the non-idling version without redundant transmissions (§5.6)",
                    (True, False)),
    ),
    theory=indirect_theory,
    reporter=IndirectReporter,
    claims=indirect_claims,
    choices=indirect_choices,
    stability="stable for ρ < (2/3)(1 − 2^−d), (28) of Proposition 4 (§5.4)",
)
