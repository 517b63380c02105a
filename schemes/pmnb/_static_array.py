"""The ``array-broadcast`` node rule, reporter and theory (Theorem 2, §2).

K packets sit on the p nodes of a linear array (``mesh:p``) or ring (``torus:p``), a node
possibly holding several; each must reach every other node. Rule (proof of Theorem 2):
per direction, a node passes on the piece that came in from behind and, when nothing
came, inserts one of its own (:mod:`._static_line` for the hop limits). On a ring with
``split=true`` every packet is cut into two halves of 0.5 units, one per direction, each
going all the way round (quantum 2); ``split=false`` sends whole copies along the two
shorter arcs. On an array ``split`` changes nothing.

A node knows only its own packets; it never learns K, so it does not stop by itself:
it sleeps until a piece arrives and the run ends at quiescence, when nothing is in
flight. Each completed reception is recorded and checked by the reporter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from slotnet.nodes import Node

from .._base import SchemeError, Setup
from ..kit import BaseReporter
from ._static_line import hop_limits
from ._static_scan import port_label
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

    async def run(self) -> None:
        ctx = self.ctx
        prm = ctx.params
        p, wrap, halves = ctx.geometry.sides[0], ctx.geometry.kind == "torus", prm["halves"]
        size = 0.5 if halves else 1.0
        limits = dict(zip((1, -1), hop_limits(p, wrap, halves)))
        own = prm["counts"][ctx.node]
        ports: dict[int, int] = {}
        queue: dict[int, list[int]] = {}
        for direction in (1, -1):
            port = ctx.port(0, direction)
            if port is not None and limits[direction] != 0:
                ports[direction] = port
                queue[direction] = list(range(own))
        parts: dict[tuple[int, int], int] = {}
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
                parts[key] = parts.get(key, 0) + 1
                if parts[key] == need:
                    ctx.record("got", origin, j)
                elif parts[key] > need:
                    ctx.record("dup", origin, j)
            for direction, port in ports.items():
                came = coming.get(direction)
                limit = limits[direction]
                if came is not None and (limit is None or came[2] < limit):
                    ctx.send(port, ["a", came[0], came[1], came[2] + 1], size)
                elif queue[direction]:
                    ctx.send(port, ["a", ctx.node, queue[direction].pop(0), 1], size)
            busy = any(queue.values())
            inbox = await (ctx.idle(until=ctx.slot + 1) if busy else ctx.idle())


class ArrayBroadcastReporter(BaseReporter):
    """Every packet at every other node exactly once; the time of the last reception."""

    events: Mapping[str, tuple[str, ...]] = {"got": ("origin", "index"), "dup": ("origin", "index")}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.got: dict[int, set[tuple[int, int]]] = {}
        self.dups = 0
        self.last = 0

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"got": self._got, "dup": self._dup}

    def _got(self, node: int, slot: int, origin: int, index: int) -> None:
        self.got.setdefault(node, set()).add((origin, index))
        self.last = max(self.last, slot)

    def _dup(self, node: int, slot: int, origin: int, index: int) -> None:
        self.dups += 1

    def _missing(self) -> tuple[int, int]:
        counts = self.setup.params["counts"]
        missing = wrong = 0
        for v in range(len(counts)):
            want = {(o, j) for o, c in enumerate(counts) if o != v for j in range(c)}
            have = self.got.get(v, set())
            missing += len(want - have)
            wrong += len(have - want)
        return missing, wrong

    def metrics(self) -> dict[str, Any]:
        return {"receptions": sum(len(s) for s in self.got.values()), "last_reception_time": self.last / self.setup.quantum}

    def invariants(self, lost: Mapping[str, int], in_flight: list[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        missing, wrong = self._missing()
        return {
            "every_packet_everywhere_once": {"ok": missing == 0 and wrong == 0 and self.dups == 0,
                                             "missing": missing, "wrong": wrong, "duplicates": self.dups},
            "no_message_lost": {"ok": self.lost_messages == 0, "lost": self.lost_messages},
        }


def theory_array_broadcast(setup: Setup) -> dict[str, Any]:
    """Theorem 2's bound and a lower bound for the placement at hand."""
    prm = setup.params
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    b = bounds_for("array-broadcast", sides, wrap, active=prm["sources"], split=prm["halves"])
    return {k: b[k] for k in ("upper_bound", "which", "lower_bound", "lower_which")}
