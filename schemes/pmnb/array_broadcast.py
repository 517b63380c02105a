"""``array-broadcast``: K packets broadcast on a linear array or ring (Theorem 2, §2).

K packets sit on the p nodes of a linear array (``mesh:p``) or ring (``torus:p``), a node
possibly holding several; each must reach every other node. Rule (proof of Theorem 2):
per direction, a node passes on the piece that came in from behind and, when nothing
came, inserts one of its own (:mod:`._line` for the hop limits). On a ring with
``split=true`` every packet is cut into two halves of 0.5 units, one per direction, each
going all the way round (quantum 2); ``split=false`` sends whole copies along the two
shorter arcs. On an array ``split`` changes nothing.

A node knows only its own packets; it never learns K, so it does not stop by itself:
it sleeps until a piece arrives and the run ends at quiescence, when nothing is in
flight. Each completed reception is recorded and checked by the reporter (below). A
node tells the pieces of a packet apart by the direction they travel (with halves it
needs one from each): without faults every piece comes once, and this is the rule as
written.

Faults: every kind is tolerated, none repaired (the rule has no schedule to break: a
node forwards what comes and inserts its own when nothing comes). A piece a
fault destroys (``loss``, ``corrupt``, a down link or partition, a stalled or crashed
receiver) stops there: the nodes past it on its path never get that packet, and a
node whose in-port stays quiet inserts its own pieces sooner. A piece ``dup`` copies
travels on behind the original and every node it reaches records it as a ``dup`` (it
came from that direction already), never as a reception: the reporter charges those to
the fault. A ``delay`` only moves a piece later. A crashed node loses its queue of own
pieces (the fabric books them as ``crash``, from :meth:`ArrayBroadcastNode.held`) and
its record of half-received packets; restarted, its own packets -- the input of the
broadcast -- are gone, so it inserts none, records ``restart`` (so the reporter knows its
earlier halves died with it) and forwards what reaches it. The run still ends at
quiescence, and the reporter says which receptions each fault cost.

The reporter: every packet at every other node exactly once, and under faults what each
missing reception was lost to.

Nodes record ``got(origin, index)`` when a packet is complete at them (its piece, or on
a ring with halves both halves), ``dup(origin, index)`` when a piece arrives from a
direction it already came from, and ``restart()`` at the first step of a node restarted
after a crash (never in a fault-free run).

Pieces and receptions. Packet ``(o, j)`` leaves its origin ``o`` as one piece per
direction ``d = ±1`` (:func:`._line.hop_limits`); the piece reaches the node at
hop ``h`` of its path in its ``h``-th hop, carried in a message ``["a", o, j, h]``. A
node never holds a passing piece (it forwards it in the slot it reads it), so a piece
is only ever queued at its origin, on a wire, or destroyed. A *reception* ``(o, j, v)``
-- packet ``(o, j)`` complete at ``v != o`` -- needs the pieces whose paths cover
``v``: one, or on a ring with halves both.

Every missing reception is put in one book (:meth:`ArrayBroadcastReporter.books`):

* ``in_progress``: a needed piece is still queued at its origin (the nodes'
  :meth:`held_packets`) or on a wire at a hop not past ``v`` (the in-flight list);
* lost to a fault, by cause: a needed piece was destroyed at a hop not past ``v`` (every
  such message reaches :meth:`on_lost` with its cause); ``crash`` when ``v`` was
  restarted (its record of a half that came before the crash died with it), or when a
  needed piece shows no sign of ever leaving its origin -- no loss, no wire, and no
  node on its path holding the packet -- so it died in the queue of its crashed
  origin: either the origin was seen down (a message to it was lost as ``node_down``,
  or it restarted; this covers an origin that crashed before its first step, whose
  pieces no ledger books), or there are at most as many such pieces (on a ring with
  halves, packets) as the fabric's ledger books under ``crash`` from the nodes'
  :meth:`held`;
* ``unexplained``: none of these; a scheme bug.

A second arrival of a piece is a ``dup`` fault's doing when that packet was copied by
one (the fabric reports each copy to :meth:`on_lost` as cause ``dup``), else a scheme
bug. Without faults the checks are the fault-free ones: every packet everywhere
exactly once, nothing lost; a run cut short (by ``--slots`` or the safety cap) owes only
that every reception still missing is in progress.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Node, NodeContext

from .._base import Inputs, PacketBook, Param, Scheme, SchemeError, Setup, parse_bool
from ..kit import BaseReporter
from ..kit._completion import parked_when_done
from . import theory as th
from ._inputs import PLACEMENT_SEED, SOURCE, ArrayInputs, Given, check_grid, completion_claims, placement_rng, safety_cap
from ._line import hop_limits
from ._scan import port_label

__all__ = ["ARRAY_EVENTS", "SCHEME", "ArrayBroadcastNode", "ArrayBroadcastReporter", "LineGeometry", "prepare_array_broadcast",
           "sources_for", "theory_array_broadcast"]


def sources_for(kind: str, p: int, k: int, given: Given) -> list[int]:
    """The node of every packet: random (uniform, repeats allowed, from ``given``'s
    ``placement_seed``), corner (all at 0), spread."""
    if kind == "random":
        rng = placement_rng(given, "array-broadcast")
        return sorted(rng.randrange(p) for _ in range(k))
    if kind == "corner":
        return [0] * k
    return sorted((2 * j + 1) * p // (2 * k) for j in range(k))


def prepare_array_broadcast(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[ArrayInputs]:
    """Node parameters: each node's packet count; quantum 2 for ring halves.

    Raises:
        SchemeError: on a topology with more than one side, or K < 0.
    """
    sides, wrap = check_grid(topology, "array-broadcast")
    if len(sides) != 1:
        raise SchemeError(f"array-broadcast runs on a linear array or ring (mesh:p or torus:p), not {topology.spec}")
    p = sides[0]
    given = Given.of(params)
    k = p if given.packets is None else given.packets
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise SchemeError(f"--param packets={k!r}: expected an integer K >= 0")
    sources = sources_for(given.placement, p, k, given)
    counts = [0] * p
    for v in sources:
        counts[v] += 1
    halves = given.split and wrap
    return Inputs(ArrayInputs(k, sources, counts, halves), quantum=2 if halves else 1)


class ArrayBroadcastNode(Node):
    """Theorem 2's greedy rule at one node of a line, both directions at once."""

    def __init__(self, ctx: NodeContext) -> None:
        """The node at time 0: per direction it sends in, a queue of its own packets' pieces."""
        super().__init__(ctx)
        p, wrap = ctx.geometry.sides[0], ctx.geometry.kind == "torus"
        prm: ArrayInputs = ctx.params
        self.limits = dict(zip((1, -1), hop_limits(p, wrap, prm.halves)))
        # restarted after a crash (incarnation > 0): its own packets died with its queues
        own = 0 if ctx.incarnation else prm.counts[ctx.node]
        self.ports: dict[int, int] = {}
        self.queue: dict[int, list[int]] = {}
        for direction in (1, -1):
            port = ctx.port(0, direction)
            if port is not None and self.limits[direction] != 0:
                self.ports[direction] = port
                self.queue[direction] = list(range(own))

    async def run(self) -> None:
        ctx = self.ctx
        halves = ctx.params.halves
        size = 0.5 if halves else 1.0
        limits, ports, queue = self.limits, self.ports, self.queue
        if ctx.incarnation:
            ctx.record("restart")
        parts: dict[tuple[int, int], int] = {}  # packet -> directions its pieces came from (bit 1: +1, bit 2: -1)
        need = 2 if halves else 1
        inbox: Any = ()
        while True:
            coming: dict[int, list[int]] = {}
            for in_port, msg in inbox:
                _, towards = port_label(in_port)
                travel = -towards
                origin, j, hops = msg[1], msg[2], msg[3]
                coming[travel] = [origin, j, hops]
                key = (origin, j)
                seen, bit = parts.get(key, 0), 1 if travel == 1 else 2
                if seen & bit or (seen and need == 1):
                    ctx.record("dup", origin, j)
                    continue
                parts[key] = seen | bit
                if need == 1 or seen:  # with halves: the other direction's half came before
                    ctx.record("got", origin, j)
            for direction, port in ports.items():
                came = coming.get(direction)
                limit = limits[direction]
                if came is not None and (limit is None or came[2] < limit):
                    ctx.send(port, ["a", came[0], came[1], came[2] + 1], size)
                elif queue[direction]:
                    ctx.send(port, ["a", ctx.node, queue[direction].pop(0), 1], size)
            busy = any(queue.values())
            inbox = await (ctx.idle(until=ctx.slot + 1) if busy else ctx.idle())

    def held(self) -> int:
        """Own pieces still queued (one per packet and direction)."""
        return sum(len(q) for q in self.queue.values())

    def held_packets(self) -> list[tuple[int, int, int]]:
        """The queued pieces as ``(origin, index, direction)``."""
        return [(self.ctx.node, j, d) for d, q in sorted(self.queue.items()) for j in q]


ARRAY_EVENTS: Mapping[str, tuple[str, ...]] = {"got": ("origin", "index"), "dup": ("origin", "index"), "restart": ()}

#: A piece: (origin, index, direction).
Piece = tuple[int, int, int]


class LineGeometry:
    """The paths of the pieces on a line of ``p`` nodes (ring when ``wrap``).

    Example:
        >>> g = LineGeometry(6, True, False)
        >>> g.needed(0, 3), g.needed(0, 4)
        ([(1, 3)], [(-1, 2)])
        >>> LineGeometry(5, True, True).needed(1, 0)
        [(1, 4), (-1, 1)]
    """

    def __init__(self, p: int, wrap: bool, halves: bool) -> None:
        self.p, self.wrap = p, wrap
        self.limits: dict[int, int | None] = dict(zip((1, -1), hop_limits(p, wrap, halves))) if p >= 2 else {}

    def length(self, origin: int, d: int) -> int:
        """Hops of the piece of ``origin`` in direction ``d`` (0: it has none)."""
        if d not in self.limits:
            return 0
        limit = self.limits[d]
        if limit is not None:
            return limit
        return self.p - 1 - origin if d == 1 else origin

    def hop(self, origin: int, d: int, v: int) -> int:
        """The hop at which the piece of ``origin`` in direction ``d`` reaches ``v`` (0: never)."""
        h = (v - origin) * d % self.p if self.wrap else (v - origin) * d
        return h if 1 <= h <= self.length(origin, d) else 0

    def needed(self, origin: int, v: int) -> list[tuple[int, int]]:
        """``(direction, hop)`` of every piece of ``origin`` whose path covers ``v``."""
        return [(d, h) for d in (1, -1) if (h := self.hop(origin, d, v))]


def _piece_message(message: Any) -> tuple[int, int, int] | None:
    """``(origin, index, hops)`` of a piece message ``["a", origin, index, hops]``, or None."""
    if isinstance(message, (list, tuple)) and len(message) >= 4 and message[0] == "a":
        return int(message[1]), int(message[2]), int(message[3])
    return None


class ArrayBroadcastReporter(BaseReporter):
    """Every packet at every other node exactly once; the time of the last reception."""

    events = ARRAY_EVENTS

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        prm: ArrayInputs = setup.params
        self.counts: list[int] = list(prm.counts)
        self.line = LineGeometry(int(setup.topology.sides[0]), setup.topology.kind == "torus", prm.halves)
        self.got: dict[int, set[tuple[int, int]]] = {}
        self.dups = 0
        self.dup_keys: list[tuple[int, int]] = []
        self.last = 0
        self.cut: dict[Piece, tuple[int, str]] = {}  # piece -> (lowest hop, cause) a fault destroyed it at
        self.copied: set[tuple[int, int]] = set()  # packets a dup fault copied
        self.restarted: set[int] = set()
        self.down: set[int] = set()  # nodes seen down: a message to them was lost as node_down, or they restarted
        self.held_pieces: set[Piece] = set()

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"got": self._got, "dup": self._dup, "restart": self._restart}

    def _got(self, node: int, slot: int, origin: int, index: int) -> None:
        self.got.setdefault(node, set()).add((origin, index))
        self.last = max(self.last, slot)

    def _dup(self, node: int, slot: int, origin: int, index: int) -> None:
        self.dups += 1
        self.dup_keys.append((origin, index))

    def _restart(self, node: int, slot: int) -> None:
        self.restarted.add(node)
        self.down.add(node)

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A piece a fault destroyed (the hop and cause), or copied (cause ``dup``)."""
        super().on_lost(slot, sender, port, receiver, message, cause)
        piece = _piece_message(message)
        if piece is None:
            return
        o, j, hops = piece
        if cause == "node_down":
            self.down.add(receiver)
        if cause == "dup":
            self.copied.add((o, j))
            return
        if port >= 0:  # the sender's out-port: 2k is +1 along k
            dirs = [1 if port % 2 == 0 else -1]
        else:  # read by nobody (its receiver crashed): the direction(s) whose hop ``hops`` is the receiver
            dirs = [d for d in (1, -1) if self.line.hop(o, d, receiver) == hops]
        for d in dirs:
            prev = self.cut.get((o, j, d))
            if prev is None or hops < prev[0]:
                self.cut[(o, j, d)] = (hops, cause)

    def holdings(self, per_node: Sequence[Any]) -> None:
        self.held_pieces = {(int(o), int(j), int(d)) for items in per_node for o, j, d in items}

    def _missing(self) -> tuple[int, int]:
        counts = self.counts
        missing = wrong = 0
        for v in range(len(counts)):
            want = {(o, j) for o, c in enumerate(counts) if o != v for j in range(c)}
            have = self.got.get(v, set())
            missing += len(want - have)
            wrong += len(have - want)
        return missing, wrong

    def books(self, in_flight: Sequence[tuple[int, int, Any]], crash: int) -> dict[str, Any]:
        """Every expected reception in one book (see the module docstring), and per packet
        completed / missed (a reception lost to a fault) / in progress / unexplained."""
        line = self.line
        moving: dict[Piece, int] = {}
        for _, in_port, msg in in_flight:
            piece = _piece_message(msg)
            if piece is not None:
                at = (piece[0], piece[1], -port_label(in_port)[1])
                moving[at] = min(moving.get(at, piece[2]), piece[2])
        reached: dict[tuple[int, int], set[int]] = {}
        for v, keys in self.got.items():
            for key in keys:
                reached.setdefault(key, set()).add(v)
        received = 0
        rows: list[tuple[int, int, int, str]] = []  # (origin, index, node, book) of each missing reception
        suspects: dict[tuple[int, int], set[tuple[int, ...]]] = {}  # packet -> candidate sets of pieces its crashed origin lost
        for o, c in enumerate(self.counts):
            for j in range(c):
                key = (o, j)
                left = {d for v in reached.get(key, ()) for d, _ in line.needed(o, v)}  # pieces seen to leave o
                for v in range(line.p):
                    needed = line.needed(o, v) if v != o else []
                    if not needed:
                        continue
                    if key in self.got.get(v, ()):
                        received += 1
                        continue
                    rows.append((o, j, v, self._why(key, v, needed, moving, left, suspects)))
        n_suspect = sum(len(sets) for sets in suspects.values())  # pieces (or, for halves, packets) lost at origins
        if n_suspect > crash:  # more than the crashes destroyed: those receptions stay unexplained
            rows = [(o, j, v, "unexplained" if book == "crash?" else book) for o, j, v, book in rows]
        rows = [(o, j, v, "crash" if book == "crash?" else book) for o, j, v, book in rows]
        by_book = Counter(book for *_, book in rows)
        level = {"in_progress": 1, "unexplained": 3}  # a packet's state: its worst reception's book (lost: 2)
        state: dict[tuple[int, int], int] = {}
        for o, j, _, book in rows:
            state[(o, j)] = max(state.get((o, j), 0), level.get(book, 2))
        per_packet = Counter(state.values())
        lost_by_cause = {b: n for b, n in sorted(by_book.items()) if b not in level}
        return {
            "broadcasts": sum(self.counts),
            "completed": sum(self.counts) - len(state),
            "missed": per_packet[2],
            "in_progress": per_packet[1],
            "unexplained_packets": per_packet[3],
            "receptions": {"expected": received + len(rows), "received": received,
                           "lost_to_faults": sum(lost_by_cause.values()), "lost_by_cause": lost_by_cause,
                           "in_progress": by_book["in_progress"], "unexplained": by_book["unexplained"]},
            "lost_receptions": [[o, j, v, b] for o, j, v, b in rows if b not in level][:20],
        }

    def _why(self, key: tuple[int, int], v: int, needed: list[tuple[int, int]], moving: dict[Piece, int],
             left: set[int], suspects: dict[tuple[int, int], set[tuple[int, ...]]]) -> str:
        """The book of the missing reception of packet ``key`` at ``v`` (``crash?``: its origin's crash, if the
        ledger has room for it)."""
        o, j = key
        for d, h in needed:
            if (o, j, d) in self.held_pieces or moving.get((o, j, d), h + 1) <= h:
                return "in_progress"
        for d, h in needed:
            cut = self.cut.get((o, j, d))
            if cut is not None and cut[0] <= h:
                return cut[1]
        if v in self.restarted:
            return "crash"
        stuck = tuple(d for d, _ in needed if d not in left and (o, j, d) not in self.cut and (o, j, d) not in moving)
        if not stuck:
            return "unexplained"
        if o in self.down:  # its origin was seen down: crashed holding them, or before its first step
            return "crash"
        suspects.setdefault(key, set()).add(stuck)
        return "crash?"

    def metrics(self) -> dict[str, Any]:
        return {"receptions": sum(len(s) for s in self.got.values()), "last_reception_time": self.last / self.setup.quantum}

    def packet_books(self) -> Sequence[PacketBook]:
        """The packets' book: ``every_packet_everywhere_once``."""
        return (PacketBook("every_packet_everywhere_once", "broadcast"),)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        missing, wrong = self._missing()
        destroyed = {c: n for c, n in lost.items() if n > 0}
        faulted = (any(c != "node_finished" for c in lost) or bool(getattr(lost, "delayed", None))
                   or bool(self.restarted))
        books = self.books(in_flight, destroyed.get("crash", 0))
        scheme_dups = sum(1 for key in self.dup_keys if key not in self.copied)
        if faulted:
            once_ok = books["receptions"]["unexplained"] == 0 and wrong == 0 and scheme_dups == 0
            lost_ok = not lost.get("node_finished", 0)
            n_lost = sum(destroyed.values())  # the ledger's: messages, and queued pieces a crash destroyed
        else:
            once_ok = missing == 0 and wrong == 0 and self.dups == 0
            lost_ok = self.lost_messages == 0
            n_lost = self.lost_messages
            if not self.run_complete:  # cut short: a reception still to come has its piece queued or on a wire
                once_ok = missing == books["receptions"]["in_progress"] and wrong == 0 and self.dups == 0
        return {
            "every_packet_everywhere_once": {"ok": once_ok, "missing": missing, "wrong": wrong, "duplicates": scheme_dups,
                                             "duplicates_from_dup_faults": self.dups - scheme_dups, **books},
            "no_message_lost": {"ok": lost_ok, "lost": n_lost, "by_cause": destroyed},
        }


def theory_array_broadcast(setup: Setup) -> dict[str, Any]:
    """Theorem 2's bound and a lower bound for the placement at hand."""
    prm: ArrayInputs = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    b = th.array_broadcast_bounds(sides, wrap, prm.sources, prm.halves)
    return {k: b[k] for k in ("upper_bound", "which", "lower_bound", "lower_which")}


SCHEME = Scheme(
    name="array-broadcast",
    summary="K packets broadcast on a linear array or ring by Theorem 2's greedy rule",
    source=SOURCE,
    node=ArrayBroadcastNode,
    reporter=ArrayBroadcastReporter,
    prepare=prepare_array_broadcast,
    theory=theory_array_broadcast,
    claims=lambda setup, th: completion_claims(th),
    params=(
        Param("packets", int, None, "K, the number of packets (default p); a node may hold several"),
        Param("placement", str, "random", "random (each packet at a uniform node), corner (all at node 0), spread",
              ("random", "corner", "spread")),
        PLACEMENT_SEED,
        Param("split", parse_bool, True, "on a ring, split every packet in two halves, one per direction (Theorem 2)",
              (True, False)),
    ),
    topologies=("torus", "mesh"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_array_broadcast, "upper_bound"),
    faults=None,  # every kind: see the module docstring
)
