"""``m2o-rec``: rec_route of §4 carried out by the nodes themselves.

Every node runs the same recursion as :func:`._rec_reference.reference_run`, but only
its own part of it, from its coordinates, the clock, its own packets and the messages
it receives; no node reads another's state. The schedule is :mod:`._rec_route`'s: the
fixed segments of :func:`._rec_route.level_plan`, the rules
:func:`._rec_route.approx_direction`, :func:`._rec_route.keeps_low`,
:func:`._rec_route.merge_split`, :func:`._rec_route.spread_target`,
:func:`._rec_route.h_value`, :func:`._rec_route.batch_index`. Per invocation of the
node's level-l cube H (all of H's nodes start it at the same step t0):

1. Step 1, stage by stage: the node's movers (packets whose destination is in the
   other half, by key ``(R(dest), source)``), one per round, each a move of ``d`` hops
   to the mirror node (intermediate nodes forward it in the following steps).
2. Step 2.1 in the node's level-(l+1) cube H': the bitonic network -- the key block
   travels to the partner in the ``keys`` segment (a control message of O(1) words,
   C keys), both sides run :func:`merge_split`, the packets that change sides move one
   per ``data`` round; the count is an all-reduce over the local-index bits (partial
   sums, lowest bit first); the spread moves every packet to its balanced node,
   the packet carrying its rank (header) so that the receiver knows its slot.
   A node that receives no key block or partial sum in a segment knows the partner
   had none (the schedule is fixed). h(l+1) is set at the first sort, from the count.
3. Step 2.3: the h(l+1) invocations of H', batch j the packets of rank ``j mod h``.
4. Step 3: at the first invocation of H its nodes learn the return time by a flood:
   a node whose own child cube has returned (at f, known to all its nodes) sends
   ``(children heard of, latest f)`` to its neighbours in H, and again whenever that
   grows; nodes of unfinished children keep what they hear until theirs returns. Every
   node returns at ``max_b f_b + diam(H)``, by which time every node has heard of every
   child. The flood runs only between nodes whose packets are at rest (a finished
   child, or a link between two children, which carries no packets while the children
   run), so it never meets a packet on a link. The duration E(H) it measures is fixed
   (§4.2: all invocations of a cube have the same timing behaviour), so later
   invocations return at ``t0 + E(H)`` without a flood. With single-node children the
   return time is known in advance (no flood).

A node sleeps through the segments where it holds nothing: it wakes when a message
arrives, when it has something to send, and once at the end of each invocation's
fixed part. Events: ``inv(level, cube, index, n_here, start)`` at every invocation
the node takes part in with packets, and always at the cube's corner node (the
reporter sums them per invocation: Lemma 4.3); the engine's ``delivered`` and ``peak``.

The scheme runs on meshes of any sides, until quiescence, with the instance of
:mod:`._inputs`. On sides that are powers of two (§4's setting) beside the run it reports
the pure reference execution of the same instance (:func:`theory`); a fault-free run
equals it step for step. On other sides the partition is §4's with halves ⌈s/2⌉ and
⌊s/2⌋, written in a virtual mesh of power-of-two sides (:mod:`._embed`): every node runs
one :class:`RecProgram` per virtual node it hosts (its own, and the holes beside it),
time-multiplexed over M patterns, and the theory beside the run is the reference
execution of the virtual instance with the bounds it gives (:func:`virtual_theory`).

Faults: every kind runs, and what it breaks is handled where it happens
(:mod:`._engine`). §4's invocations run in windows every node computes from the
instance, so a packet a fault destroys, copies or holds back shows up as a node with
more or fewer packets than its window expects: more movers than a stage has rounds or
more packets than the sort's capacity (the excess stays where it is, stranded), a
layout the count does not match, a spread slot already taken, a packet that is not at
its destination when the recursion bottoms out (stranded), a late send after a stall
(stranded; a late key block or count is dropped, and the partner takes it as none).
Each node goes on with what it has; it never raises. A restarted node starts the
recursion again with nothing (its own packet is gone with the crash), and a barrier
whose flood a fault cut never returns: its nodes wait, and their packets are reported
held. The reporter books every packet and reports the damage beside the books
(:mod:`.reporter`); Lemma 4.3 and the common return are then part of that report.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._base import Claim, Inputs, Scheme, Setup
from ._embed import embedding
from ._engine import (
    ABSORB,
    DST,
    R_ADDR,
    TAG,
    EngineNode,
    Gen,
    Idle,
    Program,
    Sub,
    cross_to_mirror,
    hier_coords,
    packet,
    packet_key,
)
from ._inputs import M2OInputs, instance_of, prepare_instance, record_fields
from ._rec_reference import RecResult, reference_run
from ._rec_route import (
    Hierarchy,
    LevelPlan,
    batch_index,
    h_value,
    keeps_low,
    level_plan,
    merge_split,
    occupancy_bound,
    spread_target,
)
from .instances import Instance
from .reporter import M2OReporter
from .theory import instance_bounds, instance_claims, partition_levels

__all__ = ["SCHEME", "RecNode", "RecProgram", "Schedule", "prepare", "schedule", "theory"]

RANK, CUR = 10, 11  # after R_ADDR (field 9): the packet's rank in its sorted cube, its current virtual slot


@dataclass(frozen=True)
class SortStep:
    """One step of the bitonic network, offsets from the invocation start."""

    stage: int
    bit: int
    dim: int
    distance: int
    keys_at: int
    data_at: int


@dataclass(frozen=True)
class Schedule:
    """Per level, the plan and the offsets a node needs (identical at every node)."""

    hier: Hierarchy
    plans: tuple[LevelPlan, ...]
    sort_steps: tuple[tuple[SortStep, ...], ...]
    count_at: tuple[int, ...]
    spread_at: tuple[dict[int, int], ...]


@functools.lru_cache(maxsize=32)
def schedule(sides: tuple[int, ...]) -> Schedule:
    """The fixed schedule of every level on a mesh (cached: a pure function of the sides)."""
    hier = Hierarchy(sides)
    plans = tuple(level_plan(hier, lev) for lev in range(hier.levels))
    steps, counts, spreads = [], [], []
    for plan in plans:
        st: list[SortStep] = []
        count = -1
        spread: dict[int, int] = {}
        keys_at: dict[int, int] = {}
        for seg in plan.segments:
            if seg.phase == "keys":
                keys_at[seg.step] = seg.start
            elif seg.phase == "data" and seg.round == 0:
                st.append(SortStep(seg.stage, seg.bit, seg.dim, seg.distance, keys_at[seg.step], seg.start))
            elif seg.phase == "count":
                count = seg.start
            elif seg.phase == "spread" and seg.round == 0:
                spread[seg.bit] = seg.start
        steps.append(tuple(st))
        counts.append(count)
        spreads.append(spread)
    return Schedule(hier, plans, tuple(steps), tuple(counts), tuple(spreads))


class RecProgram(Program):
    """rec_route at one node (see the module docstring)."""

    def __init__(self, node: RecNode, version: int = 0, vcoords: tuple[int, ...] | None = None,
                 slot_version: int | None = None) -> None:
        super().__init__(node, version, vcoords, slot_version)
        self.sched = schedule(self.sides)
        self.hier = self.sched.hier
        self.levels = self.hier.levels
        self.absorb_level = self.levels - 1
        self.incoming: list[list[Any]] = []
        self.keys: dict[int, list[int]] = {}
        self.counts: dict[int, int] = {}
        self.flood: dict[int, list[int]] = {}
        self.h: dict[int, int] = {}
        self.duration: dict[int, int] = {}
        self.n_inv: dict[int, int] = {}

    # -- messages -----------------------------------------------------------------------
    def dispatch(self, msg: list[Any]) -> None:
        kind = msg[0]
        if kind == "p":
            self.incoming.append(msg)
        elif kind == "k":
            self.keys[msg[3]] = msg[4]
        elif kind == "c":
            self.counts[msg[3]] = msg[4]
        elif kind == "f":
            st = self.flood.setdefault(msg[3], [0, -1])
            st[0] |= msg[4]
            st[1] = max(st[1], msg[5])
        else:  # pragma: no cover - a bug in this module
            raise RuntimeError(f"node {self.me}: unknown message {msg!r}")

    def holding(self, items: list[Any], incoming: bool = True) -> Callable[[], bool]:
        """``need`` for :meth:`reach`: this node holds some of ``items`` (or, with ``incoming``, new arrivals)."""
        if incoming:
            return lambda: bool(items or self.incoming)
        return lambda: bool(items)

    def take_incoming(self) -> list[list[Any]]:
        out, self.incoming = self.incoming, []
        return out

    # -- the recursion ------------------------------------------------------------------
    def body(self) -> Gen:
        node = self.node
        assert isinstance(node, RecNode)
        mine = [node.own] if node.own is not None and self.me == node.me else []
        end = yield from self.invoke(0, 0, mine)
        node.return_time = end

    def invoke(self, level: int, t0: int, mine: list[list[Any]]) -> Sub:
        """One invocation of rec_route at this node's level-``level`` cube, started at ``t0``."""
        hier, me = self.hier, self.me
        index = self.n_inv.get(level, 0)
        self.n_inv[level] = index + 1
        cube = hier.cube_id(self.coords, level)
        if mine or cube == self.vid:
            self.ctx.record("inv", level, cube, index, len(mine), t0)
        if level == self.levels:
            for pkt in mine:
                if pkt[DST] != me:  # only a fault leaves one elsewhere
                    self.strand(pkt, "not at destination")
                elif pkt[ABSORB] != 2:  # a one-node mesh: nothing ever moved
                    self.node.absorb(pkt)
                    pkt[ABSORB] = 2
            return t0
        plan = self.sched.plans[level]
        t_calls = t0 + plan.fixed_time
        yield from self.reach(t0, lambda: bool(mine), t_calls)
        if level == self.absorb_level:
            for pkt in mine:
                if pkt[DST] == me and pkt[ABSORB] != 2:
                    self.node.absorb(pkt)
                    pkt[ABSORB] = 2
        mine = yield from self.approx(level, t0, plan, mine, t_calls)
        if plan.sort_time:
            mine, n = yield from self.sort(level, t0, plan, mine, t_calls)
        else:
            yield from self.reach(t_calls, lambda: bool(mine or self.incoming), t_calls)
            mine += self.take_incoming()
            mine.sort(key=packet_key)
            for r, pkt in enumerate(mine):
                pkt[RANK] = r
            n = len(mine)
        child = level + 1
        if child not in self.h:
            self.h[child] = h_value(n, hier.volume(child))
        h = self.h[child]
        batches: list[list[list[Any]]] = [[] for _ in range(h)]
        for pkt in mine:
            batches[batch_index(pkt[RANK], h)].append(pkt)
        tc = t_calls
        for j in range(h):
            tc = yield from self.invoke(child, tc, batches[j])
        return (yield from self.barrier(level, t0, plan, tc))

    def approx(self, level: int, t0: int, plan: LevelPlan, mine: list[list[Any]], t_calls: int) -> Sub:
        """Step 1: stage by stage, the movers cross to the mirror node, one per round."""
        hier = self.hier
        sides = hier.level_sides(level)
        t = t0
        absorb = 1 if level == self.absorb_level else 0
        for q, dim in enumerate(hier.split_dims(level)):
            d = sides[dim] // 2
            rounds = plan.c_in << q
            yield from self.reach(t, self.holding(mine), t_calls)
            mine += self.take_incoming()
            yield from cross_to_mirror(self, hier, level, dim, t, rounds, mine, absorb, t_calls)
            t += rounds * d
        return mine

    def sort(self, level: int, t0: int, plan: LevelPlan, mine: list[list[Any]], t_calls: int) -> Sub:
        """Step 2.1 in the node's level-(l+1) cube: bitonic merge-split, count, spread."""
        hier, coords = self.hier, self.coords
        child = level + 1
        bits = hier.local_bits(child)
        x = hier.local_index(coords, child)
        cap = plan.capacity
        c = self.version
        t_sort = t0 + plan.approx_time
        yield from self.reach(t_sort, lambda: bool(mine or self.incoming), t_calls)
        block = self.capped(sorted(mine + self.take_incoming(), key=packet_key), cap)
        for k, step in enumerate(self.sched.sort_steps[level]):
            tk = t0 + step.keys_at
            yield from self.reach(tk, self.holding(block), t_calls)
            if self.incoming:
                block = self.capped(sorted(block + self.take_incoming(), key=packet_key), cap)
            b = hier.local_bits(child)[step.bit][1]
            sign = -1 if (coords[step.dim] >> b) & 1 else 1
            port = self.port(step.dim, sign)
            d = step.distance
            if block:
                flat = [v for pkt in block for v in packet_key(pkt)]
                self.send_control(port, ["k", c, d - 1, k, flat], tk)
            td = t0 + step.data_at
            yield from self.reach(td, self.holding(block, incoming=False), t_calls)
            theirs = self.keys.pop(k, [])
            if not block:
                continue
            other = [(theirs[i], theirs[i + 1]) for i in range(0, len(theirs), 2)]
            kept, _ = merge_split([packet_key(p) for p in block], other, cap, keeps_low(x, step.stage, step.bit))
            keep = set(kept)
            sends = [p for p in block if packet_key(p) not in keep]
            block = [p for p in block if packet_key(p) in keep]
            for pkt in sends[cap:]:  # more than the data rounds (faults only): they stay here
                self.strand(pkt, "over rounds")
            sends = sends[:cap]
            for r, pkt in enumerate(sends):
                ts = td + r * d
                yield from self.reach(ts, lambda: True, t_calls)
                pkt[TAG] = "d"
                self.send_packet(port, pkt, d, ts)
        # the count: an all-reduce of the packets in H', lowest local-index bit first
        tc0 = t0 + self.sched.count_at[level]
        yield from self.reach(tc0, lambda: bool(block or self.incoming), t_calls)
        if self.incoming:
            block = self.capped(sorted(block + self.take_incoming(), key=packet_key), cap)
        partial = [len(block)]
        offset = 0
        for bi, (dim, b) in enumerate(bits):
            dd = 1 << b
            ts = tc0 + offset
            yield from self.reach(ts, lambda: partial[0] > 0, t_calls)
            if partial[0]:
                sign = -1 if (coords[dim] >> b) & 1 else 1
                self.send_control(self.port(dim, sign), ["c", c, dd - 1, bi, partial[0]], ts)
            offset += dd
            yield from self.reach(tc0 + offset, lambda: partial[0] > 0, t_calls)
            partial[0] += self.counts.pop(bi, 0)
        n = partial[0]
        if len(block) != min(cap, max(0, n - x * cap)):  # a fault took a packet, a key block or a count
            self.node.off_schedule(c, "layout")
        # the spread: fix the bits of node * C + slot from the most significant down
        volume = 1 << len(bits)
        logc = cap.bit_length() - 1
        held: dict[int, list[Any]] = {}
        for i, pkt in enumerate(block):
            pkt[RANK] = pkt[CUR] = x * cap + i
            held[i] = pkt
        for pbit in range(len(bits) - 1, -1, -1):
            dim, b = bits[pbit]
            d = 1 << b
            vb = pbit + logc
            ts0 = t0 + self.sched.spread_at[level][pbit]
            yield from self.reach(ts0, lambda: bool(held or self.incoming), t_calls)
            self.take_spread(held, cap, x)
            movers = []
            for slot in sorted(held):
                pkt = held[slot]
                if not 0 <= pkt[RANK] < n:  # a rank the count does not cover (faults only): it stays
                    continue
                target = spread_target(pkt[RANK], n, volume, cap)
                if (pkt[CUR] ^ target) >> vb & 1:
                    movers.append((slot, pkt, -1 if pkt[CUR] >> vb & 1 else 1))
            for slot, pkt, sign in movers:
                ts = ts0 + slot * d
                yield from self.reach(ts, lambda: True, t_calls)
                del held[slot]
                pkt[CUR] ^= 1 << vb
                pkt[TAG] = "s"
                self.send_packet(self.port(dim, sign), pkt, d, ts)
        yield from self.reach(t_calls, lambda: bool(held or self.incoming), t_calls)
        self.take_spread(held, cap, x)
        out = [held[s] for s in sorted(held)]
        if any(not 0 <= pkt[RANK] < n or spread_target(pkt[RANK], n, volume, cap) // cap != x for pkt in out):
            self.node.off_schedule(c, "wrong node")
        return out, n

    def capped(self, block: list[list[Any]], cap: int) -> list[list[Any]]:
        """``block`` (sorted) within the sort's capacity: a fault's extra packets, the last
        in key order, stay here for good (``over capacity``)."""
        for pkt in block[cap:]:
            self.strand(pkt, "over capacity")
        return block[:cap]

    def take_spread(self, held: dict[int, list[Any]], cap: int, x: int) -> None:
        """File the spread's arrivals by their virtual slot ``node * C + slot``; one whose
        virtual index names another node or a slot already taken (faults only) stays here
        for good (``slot taken``)."""
        for pkt in self.take_incoming():
            slot = pkt[CUR] & (cap - 1)
            if slot in held or pkt[CUR] // cap != x or pkt[ABSORB] == 2:
                self.strand(pkt, "slot taken")
            else:
                held[slot] = pkt

    def barrier(self, level: int, t0: int, plan: LevelPlan, f_own: int) -> Sub:
        """Step 3: return once every child cube has returned (see the module docstring)."""
        if plan.barrier_time == 0:
            return f_own
        if level in self.duration:
            end = t0 + self.duration[level]
            yield from self.reach(end, lambda: False, end)
            return end
        hier, coords = self.hier, self.coords
        corner = hier.corner(coords, level)
        sides = hier.level_sides(level)
        mine = 0  # this node's child: bit q set in the upper half of split dimension q
        for q, dim in enumerate(hier.split_dims(level)):
            if coords[dim] - corner[dim] >= sides[dim] // 2:
                mine |= 1 << q
        every_child = (1 << (1 << len(hier.split_dims(level)))) - 1
        ports = []
        for dim, s in enumerate(sides):
            off = coords[dim] - corner[dim]
            if off < s - 1:
                ports.append(self.port(dim, 1))
            if off > 0:
                ports.append(self.port(dim, -1))
        yield from self.reach(f_own, lambda: True, f_own)
        st = self.flood.setdefault(level, [0, -1])
        st[0] |= 1 << mine
        st[1] = max(st[1], f_own)
        sent = (0, -1)
        c = self.version
        while True:
            ret = st[1] + plan.barrier_time if st[0] == every_child else None
            if ret is not None and self.now >= ret:
                break
            if (st[0], st[1]) != sent:
                for p in ports:
                    self.send_control(p, ["f", c, 0, level, st[0], st[1]], self.now)
                sent = (st[0], st[1])
            yield from self.pause(ret)
        del self.flood[level]
        self.duration[level] = ret - t0
        return ret


class RecNode(EngineNode):
    """A node running :class:`RecProgram` (one version)."""

    def start(self) -> None:
        ctx = self.ctx
        prm: M2OInputs = ctx.params
        dest = prm.dest[ctx.node]
        self.own: list[Any] | None = None
        self.return_time = -1
        sides = tuple(int(s) for s in ctx.geometry.sides)
        self.emb = emb = embedding(sides)
        if dest >= 0 and not ctx.incarnation:  # restarted after a crash: its packet is gone
            me = ctx.node
            pkt = packet(0, me, dest, 0 if dest == me else -1)
            if emb.identity:
                pkt[R_ADDR] = schedule(sides).hier.address(hier_coords(sides, dest))
            else:
                pkt[R_ADDR] = schedule(emb.vsides).hier.address(emb.vcoords(dest))
                pkt[1] = emb.pattern(emb.vcoords(me))
            self.own = pkt
            self.hold(pkt)

    def programs(self) -> list[Program]:
        emb = self.emb
        if emb is None or emb.identity:
            return [RecProgram(self)]
        own = emb.vcoords(self.me)
        return [RecProgram(self, 0, vc, pat) if vc is not None else Idle(self, 0, own, pat)
                for pat, vc in enumerate(emb.hosted(self.me))]

    def finish(self) -> None:
        self.ctx.record("returned", self.return_time)


def prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[M2OInputs]:
    """The instance as node parameters (every mesh side a power of two, §4)."""
    return Inputs(prepare_instance(topology, params, "m2o-rec"))


@functools.lru_cache(maxsize=8)
def _reference(inst: Instance) -> RecResult:
    """The reference run of the (virtual, :mod:`._embed`) instance, shared by the cap and the theory."""
    emb = embedding(inst.sides)
    return reference_run(inst if emb.identity else emb.virtual_instance(inst), check_links=False)


def run_bound(inst: Instance, params: M2OInputs | None = None) -> int:
    """The slot a fault-free run has ended by: the reference run's last arrival and common
    return (virtual steps), times M slots per step (M = 1 when every side is a power of two)."""
    res = _reference(inst)
    m = embedding(inst.sides).multiplex
    return m * (max(res.completion_time, res.return_time) + 1)


def theory(setup: Setup) -> dict[str, Any]:
    """The instance's bounds, and the pure reference execution of rec_route (the same model,
    computed centrally) under the metric names, beside the run."""
    inst = instance_of(setup.topology, setup.params)
    emb = embedding(inst.sides)
    if not emb.identity:
        return virtual_theory(inst)
    res = _reference(inst)
    firsts = res.first_arrival
    return {
        **instance_bounds(inst),
        "completion_time": res.paper_time,
        "final_arrival_time": res.completion_time,
        "mean_delay": sum(firsts) / len(firsts) if firsts else None,
        "max_queue": res.max_load,
        "max_occupancy": res.max_occupancy,
        "return_time": res.return_time,
        "invocations": len(res.invocations),
        "occupancy_bound": occupancy_bound(Hierarchy(inst.sides)),
    }


def virtual_theory(inst: Instance) -> dict[str, Any]:
    """Beside a run on a mesh with a side that is not a power of two: the reference run of
    the virtual instance (:mod:`._embed`, in virtual steps) and the bounds it gives the run.

    Every virtual step is M slots (M = ``multiplex``) and no move takes more real hops
    than virtual ones, so the run delivers every packet by slot ``M`` times the virtual
    delivery step: ``completion_time_bound`` (and ``final_arrival_bound``); the nodes'
    common return (``return_time``) is counted in virtual steps, the programs' clock, and
    equals the reference's; a node hosts at most M virtual nodes, so its buffer stays
    within M times the virtual node's (``occupancy_bound``).
    """
    emb = embedding(inst.sides)
    res = _reference(inst)
    m = emb.multiplex
    return {
        **instance_bounds(inst),
        "multiplex": m,
        "levels": partition_levels(inst.sides),
        "virtual_completion_time": res.paper_time,
        "completion_time_bound": m * res.paper_time,
        "final_arrival_bound": m * res.completion_time,
        "return_time": res.return_time,
        "invocations": len(res.invocations),
        "occupancy_bound": m * occupancy_bound(Hierarchy(emb.vsides)),
    }


#: Values of :func:`theory` that the reference execution of rec_route computes exactly.
REC_EXACT = ("completion_time", "final_arrival_time", "mean_delay", "max_queue", "max_occupancy", "return_time",
             "invocations")


def rec_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`theory` is to the run: on a power-of-two mesh the reference run is the
    same model computed centrally, so its times, delays, queues and counts are exact, and
    the occupancy bound (sum of Lemma 4.3's C_l, plus 2) an upper bound; on any other mesh the virtual instance's
    bounds (:func:`virtual_theory`) are upper bounds and its return time and invocations
    exact. The instance's bounds as for every many-to-one scheme (:func:`.theory.instance_claims`)."""
    return instance_claims(th, exact=REC_EXACT, upper=(
        ("occupancy_bound", "max_occupancy", "sum_l C_l + 2 (Lemma 4.3; Theorem 1.2's O(log D) with our constants)"),
        ("completion_time_bound", "completion_time", "M x the virtual run's delivery step (every virtual step M slots)"),
        ("final_arrival_bound", "final_arrival_time", "M x the virtual run's last arrival")))


SCHEME = Scheme(
    name="m2o-rec",
    summary="rec_route of §4: local recursive routing in time O(D + W log D), buffers O(log D)",
    node=RecNode,
    reporter=M2OReporter,
    prepare=prepare,
    theory=theory,
    claims=rec_claims,
    # the delays, queues and times beside the run come from rec_route executed centrally
    # (reference_run), not from a formula: the paper gives only their orders (Theorems 1.1-1.3)
    theory_label="reference run",
    **record_fields(run_bound),  # every fault kind: see the module docstring
)
