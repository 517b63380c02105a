"""The shared node base of the many-to-one schemes: buffer accounting, and an engine for local programs.

:class:`BufferedNode` counts the packets a node stores (§2's load and the occupancy)
and records every new peak; every node of the family is one (``m2o-greedy``'s directly).
The node rules of ``m2o-rec``, ``m2o-bfs`` and ``m2o-offline`` are written as plain
generators over their own clock (see :class:`Program`); :class:`EngineNode` runs them
on the slotted fabric. It does three things a program should not have to repeat:

* **Time multiplexing** (§5). With ``K`` versions, version c owns the global slots
  ``t = K tau + c``; its program sees only its own clock tau. A message it sends at tau
  arrives at slot ``K tau + c + 1`` and is handed to the program at ``tau + 1`` (it waits
  at the receiving node meanwhile), so a version behaves exactly as an unmultiplexed run
  in its own clock. With K = 1 (``m2o-rec``) tau is the slot.
* **Virtual nodes** (:mod:`._embed`: a mesh with a side that is not a power of two).
  A node runs one program per virtual node it hosts and per version, the engine index
  ``version M + pattern`` (:meth:`EngineNode.slot_version_of`); the programs see the
  virtual mesh (``sides``, ``coords``, ``vid``; ``me`` is -1 at a hole) and send on
  virtual ports (:meth:`Program.port`), which the sends translate into the real port,
  the real hops (fewer or equal) and the receiving program's version, or into a hand-off
  inside the node (0 hops). A message is handed to its program at the virtual step it
  is due (its last field, :data:`DUE`), never earlier, so every program follows the
  virtual schedule step for step. On power-of-two sides none of this is used.
* **Moves of several hops.** A message whose ``hops`` field is positive is forwarded
  straight on (out of the port opposite its in-port) at the version's next step,
  ``hops`` decremented; the program sees only messages at the end of their move.
* **Buffers.** Every packet message counts at the node from the slot it arrives until
  the slot it leaves (or is absorbed); §2's load ``L_v(t)`` leaves out packets whose
  destination is v. Loads and occupancies are sampled after the slot's arrivals and
  absorptions, before its departures -- the counts at integer time t. A packet whose
  ``absorb`` flag is set is delivered on arriving at its destination (even mid-move)
  and never counts there; the program still receives it, marked ``absorb = 2``.

Packet messages are lists ``["p", version, hops, src, dst, first, last, absorb, tag, a,
b, c]``: ``first``/``last`` are the slots of the packet's first and latest arrival at its
destination (-1: not yet; updated by every node it reaches); ``tag`` and ``a``-``c``
are the program's. Control messages are ``[kind, version, hops, ...]``. Messages decode
as tuples; the engine hands programs lists, which they mutate and resend (the fabric
encodes a message when it is sent).

Events recorded: ``delivered(src, first, last)`` once per packet, at its destination;
``peak(load, occupancy)`` whenever the node's largest load or occupancy grows.

Faults. A schedule run on the fabric meets what §2's model rules out: a message lost,
copied, held back, or a node stalled or restarted. The engine and the programs handle
each such surprise where it happens, never raising, and record it as
``off_schedule(version, why, src)`` (``src`` -1 unless a packet is concerned; the
whys are :data:`OFF_SCHEDULE`):

* a packet the node cannot move as planned -- its send is late (the node was stalled,
  or the packet arrived after its slot), its out-port already carries a message this
  slot, or the plan has no place for it -- is *stranded*: it stays stored here, named
  by :meth:`EngineNode.held_packets`, and never moves again (at its destination it is
  delivered instead). A control message that cannot go out on time is dropped;
* a node woken later than it asked (a stall) takes up every version from the slot it
  wakes in; the sends due meanwhile are late (above). Its ``woken late`` record and a
  restarted node's ``restarted`` are the node's own evidence of a fault;
* a restarted node keeps none of its state: its own packet (§2's input at time 0) is
  gone -- sent before the crash, or destroyed by it -- so it is not created again, and
  its programs start over, their past sends all late;
* messages reaching a version whose program has ended are handled as they come:
  moves in progress go on, packets ending their move here are stranded (delivered at
  their destination), control messages dropped; a node never returns, so nothing
  that reaches it later is lost for that.

Without faults none of this happens (the schedules are exact), and nothing is recorded.

Shared by rec_route and bfs_route (§4's Step 1, which §5 reuses): packets carry
Definition 4.1's address of their destination in field :data:`R_ADDR` and are ordered
by :func:`packet_key`; :func:`cross_to_mirror` is one stage of Step 1.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from slotnet.nodes import Node, NodeContext

from ._embed import Embedding
from ._rec_route import Hierarchy, approx_direction
from .instances import mesh_coords, mesh_node

__all__ = [
    "ABSORB",
    "DST",
    "FIRST",
    "HOPS",
    "LAST",
    "OFF_SCHEDULE",
    "R_ADDR",
    "SRC",
    "STRANDING",
    "TAG",
    "FAULT_EVIDENCE",
    "BufferedNode",
    "EngineNode",
    "Idle",
    "Gen",
    "Program",
    "Sub",
    "cross_to_mirror",
    "hier_coords",
    "packet",
    "packet_key",
    "take",
]

HOPS, SRC, DST, FIRST, LAST, ABSORB, TAG = 2, 3, 4, 5, 6, 7, 8
#: multiplexed virtual nodes only (:mod:`._embed`): the last field of a message, the
#: virtual step it is due at its receiver (a packet's field 12)
DUE = 12

#: Why a node went off its schedule (the ``off_schedule`` event): the node's own evidence
#: of a fault first, then what a packet or message met. Only faults cause any of them.
OFF_SCHEDULE = {
    "woken late": "the node was woken after the slot it asked for (a stall)",
    "restarted": "the node restarted after a crash, with none of its state",
    "late send": "a packet's send fell in a slot already past: the packet is stranded",
    "late control": "a control message's send fell in a slot already past: dropped",
    "port busy": "the out-port already carried a message this slot: the packet is stranded (control: dropped)",
    "after end": "a packet reached a version whose program had ended: stranded",
    "late arrival": "a packet arrived after its planned send had passed: stranded",
    "left at end": "a packet was still held when its version's program ended: stranded",
    "over rounds": "more movers than the stage has rounds: the excess is stranded",
    "over capacity": "more packets than the sort's capacity: the excess is stranded",
    "slot taken": "a spread packet landed on a slot already taken: stranded",
    "layout": "the sorted layout is not the one the count implies (a packet or count went missing)",
    "wrong node": "the spread left a packet at a node other than its rank's",
    "not at destination": "a packet was not at its destination when the recursion bottomed out: stranded",
    "too far": "a packet is more than one cube away in the pre-step: stranded",
    "missing": "the plan's packet was not here at its send step",
    "extra copy": "a second copy of a packet the plan holds: stranded",
}
#: The whys that are a node's own evidence of a fault (the rest are consequences).
FAULT_EVIDENCE = frozenset({"woken late", "restarted"})
#: The whys recorded with the packet (``src``) they leave stranded.
STRANDING = frozenset({"late send", "port busy", "after end", "late arrival", "left at end", "over rounds",
                       "over capacity", "slot taken", "not at destination", "too far", "extra copy"})
#: The field of rec_route's and bfs_route's packets holding R(dest), Definition 4.1's address.
R_ADDR = 9

#: A program body: yields the next version time it must run at (None: only when a
#: message comes), receives ``(tau, [(in_port, message), ...])``.
Gen = Generator[int | None, tuple[int, list[tuple[int, Any]]], None]
#: A sub-generator of a body, returning a value.
Sub = Generator[int | None, tuple[int, list[tuple[int, Any]]], Any]


def packet(version: int, src: int, dst: int, first: int) -> list[Any]:
    """A fresh packet message at its source (``first`` = 0 if it starts at its destination)."""
    return ["p", version, 0, src, dst, first, first, 0, "", 0, 0, 0]


class Program:
    """One version's local algorithm. Subclasses implement :meth:`body`.

    Attributes:
        node: The engine node (``node.ctx`` is the context).
        version: c.
        now: The version's current time tau (set before each resumption).
        me, sides, coords: the node's id, the mesh's sides and the node's coordinates.
    """

    def __init__(self, node: EngineNode, version: int, vcoords: tuple[int, ...] | None = None,
                 slot_version: int | None = None) -> None:
        self.node = node
        self.version = version
        #: the engine's index of this program (its slots); ``version`` unless virtual nodes are multiplexed
        self.slot_version = version if slot_version is None else slot_version
        self.now = 0
        self.buffer: deque[tuple[int, list[tuple[int, Any]]]] = deque()
        ctx = node.ctx
        self.ctx = ctx
        self.me = ctx.node
        self.sides = tuple(int(s) for s in ctx.geometry.sides)
        self.coords = tuple(ctx.coords)
        emb = node.emb
        #: the embedding in the virtual mesh (:mod:`._embed`), None when it is the mesh itself
        self.emb = emb if emb is not None and not emb.identity else None
        self.vid = self.me
        if self.emb is not None:
            assert vcoords is not None
            self.sides = self.emb.vsides
            self.coords = tuple(vcoords)
            self.me = self.emb.real_node(vcoords)  # -1: a hole (no packet is ever bound for it)
            self.vid = mesh_node(self.sides, self.coords)

    def vcoords_of(self, node: int) -> tuple[int, ...]:
        """Coordinates of a (real) node id in this program's mesh (the virtual one, if any)."""
        return hier_coords(self.sides, node) if self.emb is None else self.emb.vcoords(node)

    def port(self, dim: int, sign: int) -> int:
        """The out-port along ``dim`` in direction ``sign`` (of the virtual node, when
        multiplexed: a negative token the sends translate).

        Raises:
            RuntimeError: the node has no such port (a bug in a rule: meshes have boundaries).
        """
        p = self.vport(dim, sign)
        if p is None:
            raise RuntimeError(f"node {self.me}: no port along dimension {dim} direction {sign:+d}")
        return p

    def vport(self, dim: int, sign: int) -> int | None:
        """:meth:`port`, None at the mesh's boundary."""
        if self.emb is None:
            return self.ctx.port(dim, sign)
        if not 0 <= self.coords[dim] + sign < self.sides[dim]:
            return None
        return -(1 + 2 * dim + (1 if sign > 0 else 0))

    def _virtual_send(self, port: int, msg: list[Any], hops: int) -> tuple[int, int] | None:
        """A send on a virtual port: set the message's version to the receiving program's,
        and give ``(real port, real hops)``; None when the receiver is hosted here (0 hops)."""
        emb = self.emb
        assert emb is not None
        dim, sign = divmod(-port - 1, 2)
        sign = 1 if sign else -1
        target = list(self.coords)
        target[dim] += sign * hops
        msg[1] = self.node.slot_version_of(self.version, tuple(target))
        # the step it reaches its receiver in the virtual schedule: the receiver's engine
        # holds it until then (fewer real hops than virtual ones must not make it early)
        due = self.now + hops
        if msg[0] == "p" and len(msg) > DUE:
            msg[DUE] = due
        else:
            msg.append(due)
        real = emb.real_hops(self.coords, dim, sign, hops)
        if real == 0:
            return None
        p = self.ctx.port(dim, sign)
        assert p is not None
        return p, real

    def body(self) -> Gen:
        raise NotImplementedError

    def dispatch(self, msg: list[Any]) -> None:
        """File one message that ended its move here (called in arrival order, on time)."""
        raise NotImplementedError

    def drain(self, upto: int) -> None:
        """Dispatch every buffered message that arrived at or before ``upto``."""
        buf = self.buffer
        while buf and buf[0][0] <= upto:
            for _, msg in buf.popleft()[1]:
                self.dispatch(msg)

    def reach(self, tau: int, need: Callable[[], bool], fallback: int) -> Sub:
        """Bring the program to its step ``tau``, dispatching every message that arrived by then.

        It sleeps until ``tau`` if ``need()`` (something is due there), else until a
        message arrives or ``fallback`` (a later step it must see anyway); it may then
        pass ``tau`` late, which is harmless: nothing was due at tau, and messages that
        arrived after tau stay buffered for the later steps. A send made late is refused
        (:meth:`send_packet`, :meth:`send_control` check the time).
        """
        while True:
            self.drain(tau)
            if self.now >= tau:
                return
            wake = tau if need() else max(fallback, tau)
            now, msgs = yield wake
            self.now = now
            if msgs:
                self.buffer.append((now, msgs))

    def pause(self, wake: int | None) -> Sub:
        """Sleep until ``wake`` (None: until a message) and dispatch what arrived by then."""
        now, msgs = yield wake
        self.now = now
        if msgs:
            self.buffer.append((now, msgs))
        self.drain(now)

    # helpers for subclasses
    def send_packet(self, port: int, msg: list[Any], hops: int, at: int) -> bool:
        """Send a held packet on ``port`` for a move of ``hops`` hops, at version time ``at``.

        Returns whether it left: a send due at another time than now (only after a fault)
        strands the packet here, as does an out-port already used this slot.
        """
        if msg[ABSORB] == 2:  # a copy already delivered here (faults only): nothing to move
            return False
        if at != self.now:
            self.node.strand(msg, self.slot_version, "late send")
            return False
        if port < 0:
            real = self._virtual_send(port, msg, hops)
            if real is None:
                msg[HOPS] = 0
                self.node.handoff(msg)
                return True
            port, hops = real
        msg[HOPS] = hops - 1
        return self.node.depart(port, msg, self.slot_version)

    def send_control(self, port: int, msg: list[Any], at: int) -> bool:
        """Send a control message (``msg[2]`` hops still to go after the first); one due at
        another time than now, or on a port already used this slot, is dropped (faults only)."""
        if at != self.now:
            self.node.off_schedule(self.slot_version, "late control")
            return False
        if port < 0:
            real = self._virtual_send(port, msg, msg[2] + 1)
            if real is None:
                msg[2] = 0
                self.node.handoff(msg)
                return True
            port, msg[2] = real[0], real[1] - 1
        return self.node.send_control(port, msg, self.slot_version)

    def strand(self, msg: list[Any], why: str) -> None:
        """Keep a packet here off the schedule for good (see the module docstring)."""
        self.node.strand(msg, self.slot_version, why)


class Idle(Program):
    """The program of a pattern for which a node hosts no virtual node: it ends at once
    (messages passing through are still forwarded by the engine)."""

    def body(self) -> Gen:
        return
        yield  # pragma: no cover - makes this a generator

    def dispatch(self, msg: list[Any]) -> None:  # pragma: no cover - an ended program gets nothing
        pass


def _boot(prog: Program) -> Gen:
    """The program's body, started at its time 0 (the engine primes it at once)."""
    yield 0
    yield from prog.body()


class BufferedNode(Node):
    """A node that counts the packets it stores: ``occ`` all of them, ``load`` those bound
    elsewhere (§2's L_v(t)), and records ``peak(load, occupancy)`` whenever either maximum grows."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.me = ctx.node
        self.occ = self.load = self.max_load = self.max_occ = 0

    def _peak(self) -> None:
        if self.load > self.max_load or self.occ > self.max_occ:
            self.max_load = max(self.max_load, self.load)
            self.max_occ = max(self.max_occ, self.occ)
            self.ctx.record("peak", self.max_load, self.max_occ)

    def held(self) -> int:
        return self.occ


class EngineNode(BufferedNode):
    """Runs ``K`` programs, one per version, on the fabric (see the module docstring)."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.delivered_here = 0
        #: every packet message stored here (counted in ``occ``), by identity
        self.stored: dict[int, list[Any]] = {}
        self.stranded: set[int] = set()  # identities of the stored packets kept off the schedule
        self.at_home = False  # its own packet starts at its destination: delivered in its first step
        #: the mesh in its virtual mesh (:mod:`._embed`); set by ``start`` of the schemes that use one
        self.emb: Embedding | None = None
        #: multiplexed virtual nodes only: per version, the messages not yet due, ``(version tau, port, message)``
        self._later: dict[int, list[tuple[int, int, list[Any]]]] = {}
        self._tau = 0
        self._pattern = -1  # the pattern of this node's own virtual node (set on first use)
        self._multiplex = 1
        self.start()

    def held_packets(self) -> list[int]:
        """The sources of the packets stored here (a packet is named by its source, §2)."""
        return sorted([msg[SRC] for msg in self.stored.values()] + ([self.me] if self.at_home else []))

    def off_schedule(self, version: int, why: str, src: int = -1) -> None:
        """Record a surprise a fault caused (see the module docstring; ``why`` in :data:`OFF_SCHEDULE`)."""
        self.ctx.record("off_schedule", version, why, src)

    def programs(self) -> list[Program]:
        """The node's programs, version c at index c."""
        raise NotImplementedError

    def start(self) -> None:
        """Called once when the node is built, before slot 0's faults (§2's input: the node's
        own packet, :meth:`hold` or ``at_home``; counters). It records nothing: a crash in
        slot 0 books what it holds, and its events come in its first step."""

    def home(self) -> None:
        """The node's own packet starts at its destination: held until its first step, where
        it is delivered at time 0 (a crash before then destroys it, as any held packet)."""
        self.at_home = True
        self.occ += 1

    def finish(self) -> None:
        """Called once after every program has returned."""

    def slot_version_of(self, version: int, vcoords: tuple[int, ...]) -> int:
        """The engine index of the program of ``version`` at a virtual node (multiplexed
        virtual nodes: one program per pattern of :meth:`._embed.Embedding.pattern`)."""
        assert self.emb is not None
        return version * self.emb.multiplex + self.emb.pattern(vcoords)

    @property
    def _deferred(self) -> bool:
        return self.emb is not None and not self.emb.identity

    def handoff(self, msg: list[Any]) -> None:
        """A message between two virtual nodes this node hosts (0 real hops): it stays
        stored here and reaches the program of version ``msg[1]`` at its next step."""
        self._later.setdefault(msg[1], []).append((self._tau + 1, -1, msg))

    # -- buffers ------------------------------------------------------------------------
    def hold(self, msg: list[Any]) -> None:
        """A packet starts being stored here (its source, at time 0; the peak is recorded in the first step)."""
        self.stored[id(msg)] = msg
        self.occ += 1
        if msg[DST] != self.me:
            self.load += 1

    def _free(self, port: int) -> bool:
        """Whether ``port`` can still take a message this slot (always, without faults)."""
        return self.ctx.capacity_left(port) >= 1.0

    def depart(self, port: int, msg: list[Any], version: int = -1) -> bool:
        """A stored packet leaves on ``port``; returns False (the packet stranded here) if
        the port already carried a message this slot (faults only)."""
        if not self._free(port):
            self.strand(msg, version, "port busy")
            return False
        if self.stored.pop(id(msg), None) is not None:
            self.occ -= 1
            if msg[DST] != self.me:
                self.load -= 1
        self.ctx.send(port, msg)
        return True

    def send_control(self, port: int, msg: list[Any], version: int = -1) -> bool:
        """Send a control message; one for a port already used this slot is dropped (faults only)."""
        if not self._free(port):
            self.off_schedule(version, "port busy")
            return False
        self.ctx.send(port, msg)
        return True

    def absorb(self, msg: list[Any]) -> None:
        """A stored packet at its destination is consumed (delivered)."""
        if msg[DST] != self.me:
            raise RuntimeError(f"node {self.me} absorbs a packet bound for {msg[DST]}")
        if self.stored.pop(id(msg), None) is not None:
            self.occ -= 1
        self.stranded.discard(id(msg))
        self.delivered_here += 1
        self.ctx.record("delivered", msg[SRC], msg[FIRST], msg[LAST])

    def strand(self, msg: list[Any], version: int, why: str) -> None:
        """Keep a packet here for good, off its schedule (delivered instead at its destination).

        A packet already delivered here (a copy handed on with ``absorb`` 2) or not stored
        here needs nothing; each stranded packet is recorded once.
        """
        key = id(msg)
        if msg[0] != "p" or msg[ABSORB] == 2 or key not in self.stored or key in self.stranded:
            return
        if msg[DST] == self.me:
            self.absorb(msg)
            msg[ABSORB] = 2
            return
        self.stranded.add(key)
        self.off_schedule(version, why, msg[SRC])

    # -- the loop -----------------------------------------------------------------------
    async def run(self) -> None:
        ctx = self.ctx
        if self.at_home:
            self.at_home = False
            self.occ -= 1
            ctx.record("delivered", self.me, 0, 0)
        self._peak()
        if ctx.incarnation:
            self.off_schedule(-1, "restarted")
        progs = self.programs()
        k = len(progs)
        gens: list[Gen | None] = [_boot(p) for p in progs]
        wake: list[int | None] = [next(g) for g in gens if g is not None]
        pending: list[list[tuple[int, Any]]] = [[] for _ in range(k)]
        alive = k
        finished = False
        asked: int | None = None  # the slot this node asked to be woken in (None: a message)
        inbox: Any = ()
        while True:
            slot = ctx.slot
            if asked is not None and slot > asked:  # a stall took the slots asked .. slot - 1
                self.off_schedule(-1, "woken late")
            if inbox:
                self._arrive(slot, inbox, pending)
            c, tau = slot % k, slot // k
            self._tau = tau
            if self._later:
                self._due(c, tau, pending)
            gen = gens[c]
            if gen is None and pending[c]:  # the version has ended: what reaches it is handled here
                for _, msg in self._forward(pending[c], c):
                    self.strand(msg, c, "after end")
                pending[c] = []
            w = wake[c]
            if gen is not None and (pending[c] or (w is not None and w <= tau)):  # w < tau: woken late
                finals = self._forward(pending[c], c) if pending[c] else []
                pending[c] = []
                prog = progs[c]
                prog.now = tau
                try:
                    w = wake[c] = gen.send((tau, finals))
                except StopIteration:
                    gens[c] = None
                    w = wake[c] = None
                    alive -= 1
                    self._left_at_end(c)
                if w is not None and w <= tau:
                    raise RuntimeError(f"node {self.me} version {c}: wake {w} is not after {tau}")
            if not alive and not finished:
                self.finish()
                finished = True
            nxt = None
            for v in range(k):
                w = wake[v] if gens[v] is not None else None
                cand = None if w is None else max(k * w + v, slot + 1 + (v - slot - 1) % k)
                if pending[v]:
                    due = slot + 1 + (v - slot - 1) % k
                    cand = due if cand is None else min(cand, due)
                later = self._later.get(v)
                if later:
                    due = max(k * min(item[0] for item in later) + v, slot + 1 + (v - slot - 1) % k)
                    cand = due if cand is None else min(cand, due)
                if cand is not None and (nxt is None or cand < nxt):
                    nxt = cand
            asked = nxt
            # a node never returns: a message that reaches it after its programs end is
            # handled (faults only; without them nothing comes and it sleeps for good)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())

    def _left_at_end(self, version: int) -> None:
        """Strand the packets of ``version`` its program left here when it ended (faults only)."""
        left = [msg for msg in self.stored.values()
                if msg[1] == version and id(msg) not in self.stranded]
        for msg in left:
            self.strand(msg, version, "left at end")

    def _due(self, version: int, tau: int, pending: list[list[tuple[int, Any]]]) -> None:
        """Hand ``version`` the deferred messages due by its step ``tau``, in arrival order."""
        later = self._later.get(version)
        if not later:
            return
        keep = []
        for item in later:
            if item[0] <= tau:
                pending[version].append((item[1], item[2]))
            else:
                keep.append(item)
        self._later[version] = keep

    def _arrive(self, slot: int, inbox: Any, pending: list[list[tuple[int, Any]]]) -> None:
        """File a slot's arrivals. With multiplexed virtual nodes a message is due at the
        receiving version's first step after the sender's (its slot tau is ``(slot - 1) // k``,
        k the number of versions): a message between two patterns must not reach a
        later pattern within the step it was sent in."""
        me = self.me
        k = len(pending) if self._deferred else 0
        if k and self._pattern < 0:
            assert self.emb is not None
            self._pattern = self.emb.pattern(self.emb.vcoords(me))
            self._multiplex = self.emb.multiplex
        for port, frozen in inbox:
            msg = list(frozen)  # messages decode as tuples
            if msg[0] == "p":
                if msg[DST] == me:
                    if msg[FIRST] < 0:
                        msg[FIRST] = slot
                    msg[LAST] = slot
                    # delivered on arrival, never stored here -- with multiplexed virtual nodes
                    # only when it reaches this node's own virtual node, not a hole it hosts:
                    # it goes on to its own one by the virtual schedule (its first arrival is kept)
                    if msg[ABSORB] == 1 and (not k or msg[1] % self._multiplex == self._pattern):
                        self.ctx.record("delivered", msg[SRC], msg[FIRST], msg[LAST])
                        self.delivered_here += 1
                        msg[ABSORB] = 2
                        self._file(pending, k, slot, port, msg)
                        continue
                else:
                    self.load += 1
                self.occ += 1
                self.stored[id(msg)] = msg
            self._file(pending, k, slot, port, msg)
        self._peak()

    def _file(self, pending: list[list[tuple[int, Any]]], k: int, slot: int, port: int, msg: list[Any]) -> None:
        if k:
            due = (slot - 1) // k + 1
            if msg[HOPS] <= 0 or (msg[0] == "p" and msg[ABSORB] == 2):  # at the end of its move
                due = max(due, msg[-1])
            self._later.setdefault(msg[1], []).append((due, port, msg))
        else:
            pending[msg[1]].append((port, msg))

    def _forward(self, msgs: list[tuple[int, Any]], version: int) -> list[tuple[int, Any]]:
        finals = []
        for port, msg in msgs:
            if msg[HOPS] > 0 and not (msg[0] == "p" and msg[ABSORB] == 2):
                msg[HOPS] -= 1
                if msg[0] == "p":
                    self.depart(port ^ 1, msg, version)
                else:
                    self.send_control(port ^ 1, msg, version)
            else:
                finals.append((port, msg))
        return finals


# -- shared by rec_route and bfs_route ------------------------------------------------------
def packet_key(pkt: list[Any]) -> tuple[int, int]:
    """The order of packets at a node: ``(R(dest), source)`` (Definition 4.1's address, ties by source)."""
    return (pkt[R_ADDR], pkt[SRC])


@functools.lru_cache(maxsize=4096)
def hier_coords(sides: tuple[int, ...], node: int) -> tuple[int, ...]:
    """Coordinates of a node id (dimension 0 fastest: :func:`.instances.mesh_coords`), cached."""
    return mesh_coords(sides, node)


def cross_to_mirror(prog: Program, hier: Hierarchy, level: int, dim: int, t: int, rounds: int, mine: list[list[Any]],
                    absorb: int, fallback: int) -> Sub:
    """One stage of Step 1 (§4, and §5's versions): the packets of ``mine`` that must change
    half along ``dim`` cross to the mirror node, one per round of ``d = side/2`` steps, in
    address order. Both rec_route and bfs_route run it. More movers than rounds (only a
    fault brings them: the schedule's bound) -- the excess is stranded (``over rounds``).
    """
    d = hier.level_sides(level)[dim] // 2
    movers = []
    for pkt in sorted(mine, key=packet_key):
        sign = approx_direction(hier, level, dim, prog.coords, prog.vcoords_of(pkt[DST]))
        if sign:
            movers.append((pkt, sign))
    if len(movers) > rounds:  # more than the schedule allows (faults only): the excess stays here
        for pkt, _ in movers[rounds:]:
            take(mine, pkt)
            prog.strand(pkt, "over rounds")
        movers = movers[:rounds]
    for r, (pkt, sign) in enumerate(movers):
        ts = t + r * d
        yield from prog.reach(ts, lambda: True, fallback)
        take(mine, pkt)
        pkt[TAG] = "a"
        pkt[ABSORB] = absorb
        prog.send_packet(prog.port(dim, sign), pkt, d, ts)


def take(items: list[Any], obj: Any) -> None:
    """Remove ``obj`` itself from ``items`` (two copies a dup fault made are equal lists, not one)."""
    for i, x in enumerate(items):
        if x is obj:
            del items[i]
            return
    raise ValueError("not held")  # pragma: no cover - a bug in a program
