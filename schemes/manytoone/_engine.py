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

from ._rec_route import Hierarchy, approx_direction
from .instances import mesh_coords

__all__ = [
    "ABSORB",
    "DST",
    "FIRST",
    "HOPS",
    "LAST",
    "R_ADDR",
    "SRC",
    "TAG",
    "BufferedNode",
    "EngineNode",
    "Gen",
    "Program",
    "Sub",
    "cross_to_mirror",
    "hier_coords",
    "packet",
    "packet_key",
]

HOPS, SRC, DST, FIRST, LAST, ABSORB, TAG = 2, 3, 4, 5, 6, 7, 8
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

    def __init__(self, node: EngineNode, version: int) -> None:
        self.node = node
        self.version = version
        self.now = 0
        self.buffer: deque[tuple[int, list[tuple[int, Any]]]] = deque()
        ctx = node.ctx
        self.ctx = ctx
        self.me = ctx.node
        self.sides = tuple(int(s) for s in ctx.geometry.sides)
        self.coords = tuple(ctx.coords)

    def port(self, dim: int, sign: int) -> int:
        """The out-port along ``dim`` in direction ``sign``.

        Raises:
            RuntimeError: the node has no such port (a bug in a rule: meshes have boundaries).
        """
        p = self.ctx.port(dim, sign)
        if p is None:
            raise RuntimeError(f"node {self.me}: no port along dimension {dim} direction {sign:+d}")
        return p

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
    def send_packet(self, port: int, msg: list[Any], hops: int, at: int) -> None:
        """Send a held packet on ``port`` for a move of ``hops`` hops, at version time ``at``."""
        self._check_time(at)
        msg[HOPS] = hops - 1
        self.node.depart(port, msg)

    def send_control(self, port: int, msg: list[Any], at: int) -> None:
        """Send a control message (``msg[2]`` hops still to go after the first)."""
        self._check_time(at)
        self.node.ctx.send(port, msg)

    def _check_time(self, at: int) -> None:
        if at != self.now:
            raise RuntimeError(f"node {self.node.ctx.node} version {self.version}: a send due at {at} runs at {self.now}")


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

    def programs(self) -> list[Program]:
        """The node's programs, version c at index c."""
        raise NotImplementedError

    def start(self) -> None:
        """Called once before the programs start (the node's own packet, counters)."""

    def finish(self) -> None:
        """Called once after every program has returned."""

    # -- buffers ------------------------------------------------------------------------
    def hold(self, msg: list[Any]) -> None:
        """A packet starts being stored here (its source, at time 0)."""
        self.occ += 1
        if msg[DST] != self.me:
            self.load += 1
        self._peak()

    def depart(self, port: int, msg: list[Any]) -> None:
        """A stored packet leaves on ``port``."""
        self.occ -= 1
        if msg[DST] != self.me:
            self.load -= 1
        self.ctx.send(port, msg)

    def absorb(self, msg: list[Any]) -> None:
        """A stored packet at its destination is consumed (delivered)."""
        if msg[DST] != self.me:
            raise RuntimeError(f"node {self.me} absorbs a packet bound for {msg[DST]}")
        self.occ -= 1
        self.delivered_here += 1
        self.ctx.record("delivered", msg[SRC], msg[FIRST], msg[LAST])

    # -- the loop -----------------------------------------------------------------------
    async def run(self) -> None:
        ctx = self.ctx
        self.start()
        progs = self.programs()
        k = len(progs)
        gens: list[Gen | None] = [_boot(p) for p in progs]
        wake: list[int | None] = [next(g) for g in gens if g is not None]
        pending: list[list[tuple[int, Any]]] = [[] for _ in range(k)]
        alive = k
        inbox: Any = ()
        while True:
            slot = ctx.slot
            if inbox:
                self._arrive(slot, inbox, pending)
            c, tau = slot % k, slot // k
            gen = gens[c]
            if gen is not None and (pending[c] or wake[c] == tau):
                finals = self._forward(pending[c]) if pending[c] else []
                pending[c] = []
                prog = progs[c]
                prog.now = tau
                try:
                    wake[c] = gen.send((tau, finals))
                except StopIteration:
                    gens[c] = None
                    wake[c] = None
                    alive -= 1
                if wake[c] is not None and wake[c] <= tau:
                    raise RuntimeError(f"node {self.me} version {c}: wake {wake[c]} is not after {tau}")
            if not alive and not any(pending):
                self.finish()
                return
            nxt = None
            for v in range(k):
                if gens[v] is None:
                    continue
                w = wake[v]
                cand = None if w is None else k * w + v
                if pending[v]:
                    due = slot + 1 + (v - slot - 1) % k
                    cand = due if cand is None else min(cand, due)
                if cand is not None and (nxt is None or cand < nxt):
                    nxt = cand
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())

    def _arrive(self, slot: int, inbox: Any, pending: list[list[tuple[int, Any]]]) -> None:
        me = self.me
        for port, frozen in inbox:
            msg = list(frozen)  # messages decode as tuples
            if msg[0] == "p":
                if msg[DST] == me:
                    if msg[FIRST] < 0:
                        msg[FIRST] = slot
                    msg[LAST] = slot
                    if msg[ABSORB] == 1:  # delivered on arrival: never stored here
                        self.ctx.record("delivered", msg[SRC], msg[FIRST], msg[LAST])
                        self.delivered_here += 1
                        msg[ABSORB] = 2
                        pending[msg[1]].append((port, msg))
                        continue
                else:
                    self.load += 1
                self.occ += 1
            pending[msg[1]].append((port, msg))
        self._peak()

    def _forward(self, msgs: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        finals = []
        for port, msg in msgs:
            if msg[HOPS] > 0 and not (msg[0] == "p" and msg[ABSORB] == 2):
                msg[HOPS] -= 1
                if msg[0] == "p":
                    self.depart(port ^ 1, msg)
                else:
                    self.ctx.send(port ^ 1, msg)
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
                    absorb: int, fallback: int, where: str) -> Sub:
    """One stage of Step 1 (§4, and §5's versions): the packets of ``mine`` that must change
    half along ``dim`` cross to the mirror node, one per round of ``d = side/2`` steps, in
    address order. Both rec_route and bfs_route run it.

    Raises:
        RuntimeError: more movers than rounds (the schedule's bound broken), naming ``where``.
    """
    d = hier.level_sides(level)[dim] // 2
    movers = []
    for pkt in sorted(mine, key=packet_key):
        sign = approx_direction(hier, level, dim, prog.coords, hier_coords(prog.sides, pkt[DST]))
        if sign:
            movers.append((pkt, sign))
    if len(movers) > rounds:
        raise RuntimeError(f"node {prog.me}: {len(movers)} movers for {rounds} rounds ({where})")
    for r, (pkt, sign) in enumerate(movers):
        ts = t + r * d
        yield from prog.reach(ts, lambda: True, fallback)
        mine.remove(pkt)
        pkt[TAG] = "a"
        pkt[ABSORB] = absorb
        prog.send_packet(prog.port(dim, sign), pkt, d, ts)
