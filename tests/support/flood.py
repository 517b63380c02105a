"""A user-style scheme for the any-topology tests: a flood from one node, on every kind.

The source sends a token on every port in slot 0; a node that first hears it records its
hop count and passes it on on every other port (ports its failure detector shows dead are
skipped). Each node counts what it sends and reads,
so the reporter can check that every message is accounted for (sent = read + lost + in
flight) and that every node is reached at its BFS distance from the source.
"""

from __future__ import annotations

from typing import Any

from slotnet.nodes import Node
from slotnet.schemes import SCHEMES, Param, Scheme
from slotnet.schemes.kit import BaseReporter, parked_when_done

NAME = "flood-any"


class Flood(Node):
    """Flood a token from ``params['source']``; each node forwards it once, on every live port but the one it came in on."""

    async def run(self) -> None:
        ctx = self.ctx
        seen = ctx.node == ctx.params["source"]
        if seen:
            ctx.record("reached", 0)
            self._send(list(ctx.live_ports), 1)
        while True:
            inbox = await ctx.idle()
            ctx.record("got", len(inbox))
            if seen or not inbox:
                continue
            seen = True
            came, hops = inbox[0]
            ctx.record("reached", hops)
            self._send([p for p in ctx.live_ports if p != came], hops + 1)

    def _send(self, ports: list[int], hops: int) -> None:
        for p in ports:
            self.ctx.send(p, hops)
        self.ctx.record("sent", len(ports))


def count_handlers(reporter: Any) -> dict[str, Any]:
    """Handlers of ``sent`` and ``got`` events (``count``) adding to ``reporter.sent`` and ``.got``."""
    def sent(node: int, slot: int, count: int) -> None:
        reporter.sent += count

    def got(node: int, slot: int, count: int) -> None:
        reporter.got += count

    return {"sent": sent, "got": got}


class FloodReporter(BaseReporter):
    """Hop count of each node, messages sent and read; conservation as an invariant."""

    events = {"reached": ("hops",), "sent": ("count",), "got": ("count",)}

    def __init__(self, setup: Any) -> None:
        super().__init__(setup)
        self.hops: dict[int, list[int]] = {}
        self.sent = self.got = 0

    def handlers(self) -> dict[str, Any]:
        return {"reached": lambda node, slot, hops: self.hops.setdefault(node, []).append(hops),
                **count_handlers(self)}

    def metrics(self) -> dict[str, Any]:
        return {"reached": len(self.hops), "sent": self.sent, "got": self.got,
                "max_hops": max((h[0] for h in self.hops.values()), default=None)}

    def per_node(self) -> dict[str, list[Any]]:
        n = self.setup.topology.n_nodes
        return {"hops": [self.hops.get(v, [None])[0] for v in range(n)]}

    def invariants(self, lost: Any, in_flight: Any, held: list[int]) -> dict[str, Any]:
        accounted = self.got + sum(lost.values()) + len(in_flight)
        once = all(len(h) == 1 for h in self.hops.values())
        return {"conservation": {"ok": self.sent == accounted, "sent": self.sent, "accounted": accounted},
                "reached_once": {"ok": once}}


def flood_scheme(topologies: tuple[str, ...] = ("any",)) -> Scheme:
    """The flood as a Scheme record (registered by the tests' fixture)."""
    return Scheme(name=NAME, summary="flood a token from one node", source="tests", node=Flood,
                  reporter=FloodReporter, prepare=lambda topology, params, load: dict(params),
                  params=(Param("source", int, 0, "the node the token starts at"),),
                  topologies=topologies, until="quiescent",
                  done=parked_when_done)  # a node parks in idle() once it has flooded: done, not deadlocked


def install(monkeypatch: Any, topologies: tuple[str, ...] = ("any",)) -> str:
    """Register the flood for one test; its name."""
    monkeypatch.setitem(SCHEMES, NAME, flood_scheme(topologies))
    return NAME
