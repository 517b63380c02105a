"""User-style schemes, as a researcher would write them, each with or without a planted bug.

Every scheme here states its properties with the kit (:mod:`slotnet.schemes.kit.properties`)
or declares its random choices (:mod:`slotnet.schemes.kit.choices`). A test module makes them
known with the :func:`installed` fixture (registered for the module's tests, removed after,
so that tests that walk every registered scheme never see them). They run on a ring
(``torus:N``: port ``(0, +1)`` goes right).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from slotnet import SCHEMES as REGISTRY
from slotnet import register
from slotnet.nodes import Node
from slotnet.schemes import Param, Scheme
from slotnet.schemes.kit import BaseReporter
from slotnet.schemes.kit.choices import Uniform
from slotnet.schemes.kit.properties import (
    AtMostOne,
    Conserved,
    CountIs,
    Delivered,
    EveryLiveNodeGot,
    ExactlyOnce,
    FifoPerLink,
    ShortestPaths,
    WithinHops,
)

#: laps the token makes
ROUNDS = 2


class Quiet(BaseReporter):
    """A reporter that keeps nothing: the properties judge the run."""

    events = {"lap": (), "got": (), "delivered": ("packet",), "picked": ("value",)}

    def handlers(self) -> dict[str, Any]:
        return {kind: (lambda node, slot, *values: None) for kind in self.events}

    def metrics(self) -> dict[str, Any]:
        return {}


class Token(Node):
    """A token passed round the ring ``ROUNDS`` times from node 0; each node holds it one slot."""

    dup_at: int | None = None  # planted bug: this node passes the token both ways on its first pass

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.has = ctx.node == 0

    def view(self) -> dict[str, Any]:
        return {"token": self.has}

    async def run(self) -> None:
        ctx = self.ctx
        right, left = ctx.port(0, +1), ctx.port(0, -1)
        for r in range(ROUNDS):
            if ctx.node == 0:
                ctx.send(right, "token")
                self.has = False
                await ctx.idle()
                self.has = True
                ctx.record("lap")
            else:
                await ctx.idle()
                self.has = True
                ctx.record("got")
                await ctx.next_slot()
                ctx.send(right, "token")
                if ctx.node == self.dup_at and r == 0:
                    ctx.send(left, "token")
                self.has = False


class DupToken(Token):
    dup_at = 2


class Deadlocked(Token):
    """Planted bug: node 0 waits for the token before sending it: nobody ever starts."""

    async def run(self) -> None:
        ctx = self.ctx
        await ctx.idle()
        ctx.send(ctx.port(0, +1), "token")


class NeverReturns(Token):
    """Planted bug: after its laps node 0 keeps stepping, slot after slot, forever."""

    async def run(self) -> None:
        await super().run()
        if self.ctx.node == 0:
            while True:
                await self.ctx.next_slot()


def token_properties(setup: Any) -> list[Any]:
    return [AtMostOne("one_holder", key="token"),
            Conserved("one_token", key="token", carries=lambda m: m == "token"),
            CountIs("laps", kind="lap", count=ROUNDS)]


TOKEN = Scheme("user-token", "a token passed round a ring", "slotnet tests", node=Token, reporter=Quiet,
               prepare=lambda t, p, load: dict(p), topologies=("torus",), until="quiescent",
               properties=token_properties, symmetric=False)


class Unicast(Node):
    """Node ``source`` sends one packet to ``dest`` the short way round; each node forwards it."""

    def wrong(self, dest: int, me: int) -> bool:
        return me == dest

    async def run(self) -> None:
        ctx = self.ctx
        n, me = ctx.n_nodes, ctx.node
        src, dest = ctx.params["source"], ctx.params["dest"]
        right, left = ctx.port(0, +1), ctx.port(0, -1)
        if me == src:
            port = right if (dest - src) % n <= n // 2 else left
            ctx.send(port, [src, dest, 0])
            return
        inbox = await ctx.idle()
        for in_port, (s, d, hops) in inbox:
            if self.wrong(d, me):
                ctx.record("delivered", [s, d])
                return
            ctx.send(left if in_port == right else right, [s, d, hops + 1])


class WrongDest(Unicast):
    """Planted bug: a node delivers the packet when it is one hop short of its destination."""

    def wrong(self, dest: int, me: int) -> bool:
        return (me + 1) % self.ctx.n_nodes == dest or me == dest


class Livelock(Unicast):
    """Planted bug: nobody ever delivers: the packet goes round and round (each node forwards
    every copy it gets)."""

    async def run(self) -> None:
        ctx = self.ctx
        right, left = ctx.port(0, +1), ctx.port(0, -1)
        if ctx.node == ctx.params["source"]:
            ctx.send(right, [ctx.node, ctx.params["dest"], 0])
        while True:
            inbox = await ctx.idle()
            for in_port, (s, d, hops) in inbox:
                ctx.send(left if in_port == right else right, [s, d, hops + 1])


def packet(m: Any) -> tuple[int, int] | None:
    return (m[0], m[1]) if isinstance(m, (list, tuple)) and len(m) == 3 else None


def unicast_properties(setup: Any) -> list[Any]:
    n = setup.topology.n_nodes
    dest = lambda m: m[1]
    return [Delivered("reached", key=packet, dest=dest), ExactlyOnce("once", key=packet, dest=dest),
            WithinHops("hops", key=packet, hops=n // 2), ShortestPaths("shortest", key=packet, dest=dest),
            FifoPerLink("fifo")]


def unicast_prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    return {"source": int(params.get("source", 0)), "dest": int(params.get("dest", 1))}


UNICAST = Scheme("user-unicast", "one packet routed the short way round a ring", "slotnet tests", node=Unicast,
                 reporter=Quiet, prepare=unicast_prepare, topologies=("torus",),
                 params=(Param("source", int, 0, "the sending node"), Param("dest", int, 1, "its destination")),
                 properties=unicast_properties)


class Picker(Node):
    """Each node draws ``picks`` values uniform over range(4), one a slot, and records them."""

    def draw(self) -> int:
        return int(self.ctx.rng.randrange(4))

    async def run(self) -> None:
        ctx = self.ctx
        for _ in range(ctx.params["picks"]):
            v = self.draw()
            ctx.record_choice("pick", v)
            await ctx.next_slot()


class SkewedPicker(Picker):
    """Planted bug: the smaller of two draws, not one uniform draw (0 comes 7 times in 16)."""

    def draw(self) -> int:
        return min(self.ctx.rng.randrange(4), self.ctx.rng.randrange(4))


PICKER = Scheme("user-picker", "uniform picks", "slotnet tests", node=Picker, reporter=Quiet,
                prepare=lambda t, p, load: {"picks": int(p.get("picks", 40))},
                params=(Param("picks", int, 40, "values each node draws"),), topologies=("torus", "hypercube"),
                until="quiescent", choices=lambda setup: {"pick": Uniform(range(4))}, symmetric=True)

class FloodAll(Node):
    """Every node floods its id: it sends it on every port it sees alive, and forwards the first
    copy of each other id on every such port but the one it came in on; it returns once it has
    them all."""

    async def run(self) -> None:
        ctx = self.ctx
        ctx.record("made", ctx.node)
        for p in ctx.live_ports:
            ctx.send(p, ctx.node)
        seen = {ctx.node}
        while len(seen) < ctx.n_nodes:
            inbox = await ctx.idle()
            for in_port, origin in inbox:
                if origin in seen:
                    continue
                seen.add(origin)
                ctx.record("got", origin)
                for p in ctx.live_ports:
                    if p != in_port:
                        ctx.send(p, origin)


class FloodReporter(Quiet):
    events = {"made": ("origin",), "got": ("origin",)}


FLOOD_ALL = Scheme("user-flood-all", "every node floods its id", "slotnet tests", node=FloodAll,
                   reporter=FloodReporter, prepare=lambda t, p, load: {}, topologies=("torus", "hypercube", "mesh"),
                   until="quiescent", symmetric=True,
                   properties=lambda setup: [EveryLiveNodeGot("all_got_all", made="made", got="got")])

#: name -> the scheme record, correct and planted
SCHEMES = {
    "user-token": TOKEN,
    "user-token-dup": dataclasses.replace(TOKEN, name="user-token-dup", node=DupToken),
    "user-token-deadlock": dataclasses.replace(TOKEN, name="user-token-deadlock", node=Deadlocked),
    "user-token-forever": dataclasses.replace(TOKEN, name="user-token-forever", node=NeverReturns),
    "user-unicast": UNICAST,
    "user-unicast-wrong-dest": dataclasses.replace(UNICAST, name="user-unicast-wrong-dest", node=WrongDest),
    "user-unicast-livelock": dataclasses.replace(UNICAST, name="user-unicast-livelock", node=Livelock),
    "user-flood-all": FLOOD_ALL,
    "user-picker": PICKER,
    "user-picker-skewed": dataclasses.replace(PICKER, name="user-picker-skewed", node=SkewedPicker),
}


@pytest.fixture(scope="module")
def installed() -> Iterator[None]:
    """The schemes here registered for a module's tests (as a user's package registers its own), then removed."""
    saved = dict(REGISTRY)
    for scheme in SCHEMES.values():
        register(scheme, replace=True)
    try:
        yield
    finally:
        REGISTRY.clear()
        REGISTRY.update(saved)
