"""``m2o-bfs``: §5's bfs_route, one time-multiplexed version per distance class.

See :mod:`._bfs_route` for the algorithm as implemented and where it reads the sketch of §5.
Every node runs K programs (:class:`BfsProgram`, one per version, on slots ``k mod K``
through :mod:`._engine`); version k carries the node's packet if its distance is in
``[2^k, 2^(k+1))``. In a version, the node walks down its own chain of cubes: at each
level, the phase of its cube (reduce, Step 1) and then the balancing of its child cube,
with durations it computes from the values the reduces give it -- the same at every
node of the cube. It stops once a reduce shows its cube (or child) empty in this
version. Messages: packets (``tag`` ``a``: Step 1, ``b``: balancing, field 9 the target
position on the line), ``["r", c, hops, start, bit, value]`` (reduces: max) and
``["l", c, hops, start, bit, sum]`` (line prefixes). A node with nothing sends nothing;
a partner that hears nothing in a segment takes 0.

Events: ``phase(version, level, start, end, overrun)`` once per child cube H' of a
level-l cube H that has packets (by H''s corner node: the start of H's phase and the end
of H''s balancing, the time its packets spent in phase l), and ``overrun(version,
level, packets)`` from any node still holding a packet away from its target when a
balancing window closes (never seen in the tests; an invariant).

The scheme runs on meshes of any sides, until quiescence, with the instance of
:mod:`._inputs`; beside the run it reports the instance's bounds. On a side that is not
a power of two the cubes are §4's with halves ⌈s/2⌉ and ⌊s/2⌋, in a virtual mesh of
power-of-two sides (:mod:`._embed`): a node runs its versions for every virtual node it
hosts, version k of pattern p on engine slot ``(k M + p) mod K M``, and a packet's class
is that of its virtual distance (at most twice the real one per dimension), for which
:func:`._bfs_route.start_level` sizes the pre-step.

Faults: every kind runs, and what it breaks is handled where it happens
(:mod:`._engine`). §5's phases have durations every node of a cube computes from its
reduces, so a packet or reduce value a fault destroys, copies or holds back leaves a
node with more movers than a stage's rounds, or a packet more than one cube away in
the pre-step (the excess stays where it is, stranded), a late send after a stall
(stranded; a late reduce value is dropped, and the partner takes it as 0), or a
balancing target off the line (that packet stays put). Each node goes on with what it
has; it never raises; a version that ends strands the packets it still holds. A
restarted node runs its versions again with nothing (its own packet is gone with the
crash). The reporter books every packet and reports the damage beside the books
(:mod:`.reporter`), the phase windows included.
"""

from __future__ import annotations

import functools
from typing import Any

from .._base import Inputs, Scheme, Setup
from ._bfs_route import (
    block_offsets,
    class_count,
    distance_class_of,
    flow_window,
    prestep_time,
    start_level,
    target_of,
    time_bound,
)
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
    take,
)
from ._inputs import M2OInputs, instance_of, prepare_instance, record_fields
from ._rec_route import Hierarchy
from .instances import Instance
from .reporter import M2OReporter
from .theory import instance_bounds, instance_claims

__all__ = ["SCHEME", "BfsNode", "BfsProgram", "prepare", "theory"]

TARGET = R_ADDR  # the same field: once balancing sets a target, packet_key orders the packet by it


@functools.lru_cache(maxsize=32)
def _hierarchy(sides: tuple[int, ...]) -> Hierarchy:
    return Hierarchy(sides)


class BfsProgram(Program):
    """bfs_route in one version at one node."""

    def __init__(self, node: BfsNode, version: int, own: list[Any] | None, vcoords: tuple[int, ...] | None = None,
                 slot_version: int | None = None) -> None:
        super().__init__(node, version, vcoords, slot_version)
        self.hier = _hierarchy(self.sides)
        self.own = own
        self.incoming: list[list[Any]] = []
        self.values: dict[tuple[str, int, int], int] = {}

    def dispatch(self, msg: list[Any]) -> None:
        kind = msg[0]
        if kind == "p":
            if msg[ABSORB] != 2:  # delivered packets have left the version
                self.incoming.append(msg)
        elif kind in ("r", "l"):  # keyed by the exchange's start step and bit
            self.values[(kind, msg[3], msg[4])] = msg[5]
        else:  # pragma: no cover - a bug in this module
            raise RuntimeError(f"node {self.me}: unknown message {msg!r}")

    def take(self, mine: list[list[Any]]) -> None:
        mine += self.incoming
        self.incoming = []

    # -- the version ----------------------------------------------------------------------
    def body(self) -> Gen:
        hier = self.hier
        mine: list[list[Any]] = [self.own] if self.own is not None else []
        first = start_level(hier.exponents, self.version)
        t = 0
        if first > 0:
            t = yield from self.prestep(first, mine)
        for level in range(first, hier.levels):
            start = t
            n_l = yield from self.reduce("r", hier.local_bits(level), t, len(mine))
            t += sum(1 << b for _, b in hier.local_bits(level))
            if n_l == 0:
                return
            t = yield from self.approx(level, t, n_l, mine)
            child = level + 1
            top = yield from self.reduce("r", hier.local_bits(child), t, len(mine) + len(self.incoming))
            t += sum(1 << b for _, b in hier.local_bits(child))
            self.take(mine)
            overrun = 0
            if top:
                for dim, m in enumerate(hier.level_sides(child)):
                    if m > 1:
                        t, late = yield from self.balance(child, dim, m, t, top, mine)
                        overrun += late
            if hier.cube_id(self.coords, child) == self.vid:
                self.ctx.record("phase", self.version, level, start, t, overrun)
            if overrun:
                self.ctx.record("overrun", self.version, level, overrun)
            if not top:
                return

    def prestep(self, level: int, mine: list[list[Any]]) -> Sub:
        """§2's preliminary simplification: every packet into its destination's level-``level`` cube."""
        sides = self.sides
        end = prestep_time(sides, level)
        t, q = 0, 0
        for dim, s in enumerate(sides):
            b = max(1, s >> level)
            if b == s:
                continue
            rounds = 3**q
            q += 1
            yield from self.reach(t, lambda: bool(mine or self.incoming), end)
            self.take(mine)
            up: list[list[Any]] = []
            down: list[list[Any]] = []
            for pkt in sorted(mine, key=packet_key):
                off = block_offsets(sides, level, self.coords, self.vcoords_of(pkt[DST]))[dim]
                if abs(off) > 1:  # only a fault brings one from farther
                    take(mine, pkt)
                    self.strand(pkt, "too far")
                elif off:
                    (up if off > 0 else down).append(pkt)
            for group in (up, down):  # more movers than rounds (faults only): the excess stays here
                for pkt in group[rounds:]:
                    take(mine, pkt)
                    self.strand(pkt, "over rounds")
                del group[rounds:]
            for r in range(max(len(up), len(down))):
                ts = t + r * b
                yield from self.reach(ts, lambda: True, end)
                for group, sign in ((up, 1), (down, -1)):
                    if r < len(group):
                        pkt = group[r]
                        take(mine, pkt)
                        pkt[TAG] = "a"
                        pkt[ABSORB] = 1
                        self.send_packet(self.port(dim, sign), pkt, b, ts)
            t += rounds * b
        yield from self.reach(end, lambda: bool(mine or self.incoming), end)
        self.take(mine)
        return end

    def reduce(self, kind: str, bits: tuple[tuple[int, int], ...], t: int, value: int) -> Sub:
        """All-reduce (max for ``r``, sum for ``l``) over the given local-index bits, lowest first."""
        cur = [value]
        end = t + sum(1 << b for _, b in bits)
        offset = 0
        for bi, (dim, b) in enumerate(bits):
            dd = 1 << b
            ts = t + offset
            yield from self.reach(ts, lambda: cur[0] > 0, end)
            if cur[0] > 0:
                sign = -1 if (self.coords[dim] >> b) & 1 else 1
                self.send_control(self.port(dim, sign), [kind, self.version, dd - 1, t, bi, cur[0]], ts)
            offset += dd
            yield from self.reach(t + offset, lambda: cur[0] > 0, end)
            got = self.values.pop((kind, t, bi), 0)
            cur[0] = max(cur[0], got) if kind == "r" else cur[0] + got
        yield from self.reach(end, lambda: False, end)
        return cur[0]

    def approx(self, level: int, t: int, top: int, mine: list[list[Any]]) -> Sub:
        """Step 1: stage by stage to the mirror node, ``top 2^q`` rounds of d steps."""
        hier = self.hier
        sides = hier.level_sides(level)
        stages = hier.split_dims(level)
        end = t + sum((top << q) * (sides[dim] // 2) for q, dim in enumerate(stages))
        for q, dim in enumerate(stages):
            d = sides[dim] // 2
            rounds = top << q
            yield from self.reach(t, lambda: bool(mine or self.incoming), end)
            self.take(mine)
            yield from cross_to_mirror(self, hier, level, dim, t, rounds, mine, 1, end)
            t += rounds * d
        yield from self.reach(t, lambda: bool(mine or self.incoming), t)
        return t

    def balance(self, child: int, dim: int, m: int, t: int, top: int, mine: list[list[Any]]) -> Sub:
        """One dimension of Theorem 5.1's balancing in the child cube: prefix, then the flow."""
        pos = self.coords[dim] % m
        line_bits = tuple((dim, b) for b in range(m.bit_length() - 1))
        # the prefix: partner exchanges of block sums, lowest bit first
        block = [len(mine)]
        before = 0
        offset = 0
        end = t + m - 1
        for bi, (_, b) in enumerate(line_bits):
            dd = 1 << b
            ts = t + offset
            yield from self.reach(ts, lambda: block[0] > 0, end)
            if block[0] > 0:
                sign = -1 if (pos >> b) & 1 else 1
                self.send_control(self.port(dim, sign), ["l", self.version, dd - 1, t, bi, block[0]], ts)
            offset += dd
            yield from self.reach(t + offset, lambda: block[0] > 0, end)
            got = self.values.pop(("l", t, bi), 0)
            if (pos >> b) & 1:
                before += got
            block[0] += got
        total = block[0]
        yield from self.reach(end, lambda: False, end)
        # the flow: each packet to its position in the balanced layout
        stop = end + flow_window(top, m)
        for i, pkt in enumerate(sorted(mine, key=packet_key)):
            pkt[TARGET] = target_of(before + i, total, m) if before + i < total else pos  # (faults: a short total)
        plus, minus = self.vport(dim, 1), self.vport(dim, -1)

        def away(p: list[Any]) -> bool:  # a target off the line only comes with a fault: it stays put
            return p[TARGET] != pos and 0 <= p[TARGET] < m

        def moving() -> bool:
            return any(away(p) for p in mine) or any(away(p) for p in self.incoming)

        tau = end
        while tau < stop:
            yield from self.reach(tau, moving, stop)
            if self.now > tau:  # woken later by an arrival (or the window's end): act then
                tau = min(self.now, stop)
                continue
            self.take(mine)
            for port, pick in ((plus, max), (minus, min)):
                if port is None:  # the line's end (a target beyond it only comes with a fault)
                    continue
                ahead = [p for p in mine if away(p) and (p[TARGET] > pos if pick is max else p[TARGET] < pos)]
                if ahead:
                    pkt = pick(ahead, key=lambda p: (p[TARGET], packet_key(p)))
                    take(mine, pkt)
                    pkt[TAG] = "b"
                    pkt[ABSORB] = 1
                    self.send_packet(port, pkt, 1, tau)
            tau += 1
        yield from self.reach(stop, lambda: bool(mine or self.incoming), stop)
        self.take(mine)
        return stop, sum(1 for p in mine if p[TARGET] != pos)


class BfsNode(EngineNode):
    """A node running one :class:`BfsProgram` per distance class."""

    def start(self) -> None:
        ctx = self.ctx
        me = ctx.node
        self.emb = emb = embedding(tuple(int(s) for s in ctx.geometry.sides))
        self.sides = emb.vsides  # the virtual mesh (the mesh itself when every side is a power of two)
        self.k = class_count(self.sides)
        self.own: list[Any] | None = None
        self.own_class = -1
        prm: M2OInputs = ctx.params
        dest = prm.dest[me]
        if dest < 0 or ctx.incarnation:  # restarted after a crash: its packet is gone
            return
        if dest == me:  # born at its destination: delivered at time 0
            self.home()
            return
        pkt = packet(0, me, dest, -1)
        hier = _hierarchy(self.sides)
        if emb.identity:
            pkt[R_ADDR] = hier.address(hier_coords(self.sides, dest))
            self.own_class = distance_class_of(ctx.geometry.distance(me, dest))
            pkt[1] = self.own_class
        else:  # the class of the virtual distance, which the virtual cubes of start_level are sized for
            src_v, dst_v = emb.vcoords(me), emb.vcoords(dest)
            pkt[R_ADDR] = hier.address(dst_v)
            self.own_class = distance_class_of(sum(abs(a - b) for a, b in zip(src_v, dst_v)))
            pkt[1] = self.slot_version_of(self.own_class, src_v)
        self.own = pkt
        self.hold(pkt)

    def programs(self) -> list[Program]:
        emb = self.emb
        if emb is None or emb.identity:
            return [BfsProgram(self, c, self.own if c == self.own_class else None) for c in range(self.k)]
        mine = emb.vcoords(self.me)
        out: list[Program] = []
        for c in range(self.k):
            for pat, vc in enumerate(emb.hosted(self.me)):
                slot = c * emb.multiplex + pat
                if vc is None:
                    out.append(Idle(self, c, mine, slot))
                else:
                    own = self.own if c == self.own_class and vc == mine else None
                    out.append(BfsProgram(self, c, own, vc, slot))
        return out


def prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[M2OInputs]:
    """The instance as node parameters (any mesh sides: a virtual mesh of powers of two, :mod:`._embed`)."""
    return Inputs(prepare_instance(topology, params, "m2o-bfs"))


def run_bound(inst: Instance, params: M2OInputs | None = None) -> int:
    """The slot every version has ended by (:func:`._bfs_route.time_bound`), on the virtual
    mesh (:mod:`._embed`; the mesh itself when every side is a power of two)."""
    emb = embedding(inst.sides)
    counts: dict[int, int] = {}
    for s, d in inst.packets:
        a, b = emb.vcoords(s), emb.vcoords(d)
        dist = sum(abs(x - y) for x, y in zip(a, b))
        if dist:
            k = distance_class_of(dist)
            counts[k] = counts.get(k, 0) + 1
    k = class_count(emb.vsides)
    return time_bound(emb.vsides, [counts.get(c, 0) for c in range(k)], k * emb.multiplex)


def theory(setup: Setup) -> dict[str, Any]:
    """The instance's bounds (:func:`.theory.instance_bounds`), per distance class included."""
    return instance_bounds(instance_of(setup.topology, setup.params))


SCHEME = Scheme(
    name="m2o-bfs",
    summary="bfs_route of §5: load balancing, log D time-multiplexed distance classes (average delivery time)",
    node=BfsNode,
    reporter=M2OReporter,
    prepare=prepare,
    theory=theory,
    claims=lambda setup, th: instance_claims(th),
    **record_fields(run_bound),  # every fault kind: see the module docstring
)
