"""The ``array-broadcast`` node rule, reporter and theory (Theorem 2, §2).

K packets sit on the p nodes of a linear array (``mesh:p``) or ring (``torus:p``), a node
possibly holding several; each must reach every other node. Rule (proof of Theorem 2):
per direction, a node passes on the piece that came in from behind and, when nothing
came, inserts one of its own (:mod:`._line` for the hop limits). On a ring with
``split=true`` every packet is cut into two halves of 0.5 units, one per direction, each
going all the way round (quantum 2); ``split=false`` sends whole copies along the two
shorter arcs. On an array ``split`` changes nothing.

A node knows only its own packets; it never learns K, so it does not stop by itself:
it sleeps until a piece arrives and the run ends at quiescence, when nothing is in
flight. Each completed reception is recorded and checked by the reporter
(:mod:`._static_array_report`). A node tells the pieces of a packet apart by the
direction they travel (with halves it needs one from each): without faults every piece
comes once, and this is the rule as written.

Faults (issue #11): every kind is tolerated, none repaired (the rule has no schedule to
break: a node forwards what comes and inserts its own when nothing comes). A piece a
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
"""

from __future__ import annotations

from typing import Any

from slotnet.nodes import Node, NodeContext

from .._base import SchemeError, Setup
from ._line import hop_limits
from ._scan import port_label
from ._static_array_report import ArrayBroadcastReporter
from ._static_setup import check_grid, placement_rng
from .theory import bounds_for

__all__ = ["ArrayBroadcastNode", "ArrayBroadcastReporter", "prepare_array_broadcast", "sources_for", "theory_array_broadcast"]


def sources_for(kind: str, p: int, k: int, params: dict[str, Any]) -> list[int]:
    """The node of every packet: random (uniform, repeats allowed), corner (all at 0), spread."""
    if kind == "random":
        rng = placement_rng(params, "array-broadcast")
        return sorted(rng.randrange(p) for _ in range(k))
    if kind == "corner":
        return [0] * k
    return sorted((2 * j + 1) * p // (2 * k) for j in range(k))


def prepare_array_broadcast(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    """Node parameters: each node's packet count; quantum 2 for ring halves.

    Raises:
        SchemeError: on a topology with more than one side, or K < 0.
    """
    sides, wrap = check_grid(topology, "array-broadcast")
    if len(sides) != 1:
        raise SchemeError(f"array-broadcast runs on a linear array or ring (mesh:p or torus:p), not {topology.spec}")
    p = sides[0]
    k = p if params["packets"] is None else params["packets"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise SchemeError(f"--param packets={k!r}: expected an integer K >= 0")
    sources = sources_for(params["placement"], p, k, params)
    counts = [0] * p
    for v in sources:
        counts[v] += 1
    halves = bool(params["split"]) and wrap
    return {**params, "packets": k, "sources": sources, "counts": counts, "halves": halves, "quantum": 2 if halves else 1}


class ArrayBroadcastNode(Node):
    """Theorem 2's greedy rule at one node of a line, both directions at once."""

    def __init__(self, ctx: NodeContext) -> None:
        """The node at time 0: per direction it sends in, a queue of its own packets' pieces."""
        super().__init__(ctx)
        p, wrap = ctx.geometry.sides[0], ctx.geometry.kind == "torus"
        self.limits = dict(zip((1, -1), hop_limits(p, wrap, ctx.params["halves"])))
        # restarted after a crash (incarnation > 0): its own packets died with its queues
        own = 0 if ctx.incarnation else ctx.params["counts"][ctx.node]
        self.ports: dict[int, int] = {}
        self.queue: dict[int, list[int]] = {}
        for direction in (1, -1):
            port = ctx.port(0, direction)
            if port is not None and self.limits[direction] != 0:
                self.ports[direction] = port
                self.queue[direction] = list(range(own))

    async def run(self) -> None:
        ctx = self.ctx
        halves = ctx.params["halves"]
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


def theory_array_broadcast(setup: Setup) -> dict[str, Any]:
    """Theorem 2's bound and a lower bound for the placement at hand."""
    prm = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    b = bounds_for("array-broadcast", sides, wrap, active=prm["sources"], split=prm["halves"])
    return {k: b[k] for k in ("upper_bound", "which", "lower_bound", "lower_which")}
