"""User-style one-shot schemes for the termination and error tests: a token passed round a ring.

Registered the way a user's package is (``slotnet.register``), never through the built-in
registry files. The ring is ``torus:N`` (one dimension): node ``v`` passes the token to
``(v + 1) % N``; node 0 starts it in slot 0 and returns once it is back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from slotnet import register
from slotnet.nodes import Node
from slotnet.schemes import SCHEMES, Scheme, Setup
from slotnet.schemes.kit import BaseReporter


class RingReporter(BaseReporter):
    """Books the token's hops and the nodes that said they were done."""

    events = {"token": ("hops",), "done": ()}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.hops: list[tuple[int, int, int]] = []
        self.done: list[int] = []

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {"token": lambda node, slot, hops: self.hops.append((slot, node, hops)),
                "done": lambda node, slot: self.done.append(node)}

    def metrics(self) -> dict[str, Any]:
        return {"hops": len(self.hops), "done": sorted(self.done)}


class TokenRing(Node):
    """The correct rule: node 0 sends the token, each other node forwards it once and returns."""

    async def run(self) -> None:
        ctx = self.ctx
        nxt = ctx.port_to((ctx.node + 1) % ctx.n_nodes)
        if ctx.node == 0:
            ctx.send(nxt, 1)
        while True:
            inbox = await ctx.idle()
            if inbox:
                hops = inbox[0][1]
                ctx.record("token", hops)
                if ctx.node != 0:
                    ctx.send(nxt, hops + 1)
                ctx.record("done")
                return


class NobodyStarts(TokenRing):
    """The deadlock bug: node 0 forgets to send the token, so every node waits for it forever."""

    async def run(self) -> None:
        while True:
            inbox = await self.ctx.idle()
            if inbox:
                return


class NeverReturns(TokenRing):
    """Node 3 keeps stepping after its part is done: the task never terminates."""

    async def run(self) -> None:
        await super().run()
        if self.ctx.node == 3:
            while True:
                await self.ctx.next_slot()


@contextmanager
def user_scheme(name: str, node: Callable[..., Node], **fields: Any) -> Iterator[str]:
    """Register a one-shot user scheme ``name`` with rule ``node`` for the body of a ``with``."""
    scheme = Scheme(name=name, summary="a token passed round a ring", source="tests", node=node,
                    reporter=RingReporter, prepare=lambda topology, params, load: dict(params),
                    topologies=("torus",), until="quiescent", **fields)
    register(scheme)
    try:
        yield name
    finally:
        SCHEMES.pop(name, None)
