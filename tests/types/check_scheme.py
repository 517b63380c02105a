"""Type tests of the scheme contract: a user's scheme package, as the docs write one, checked by mypy.

A reporter that sets ``events`` as a plain class attribute (a dict), a node rule reading
its context, and the ``Scheme`` record that registers them must type-check without an
annotation the docs do not show.
"""

from collections.abc import Awaitable, Callable
from typing import Any, assert_type

from slotnet import register
from slotnet.nodes import Inbox, Node, NodeStream
from slotnet.schemes import Scheme, Setup
from slotnet.schemes.kit import BaseReporter


class TokenReporter(BaseReporter):
    events = {"token": ("hops",), "done": ()}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.hops = 0

    def handlers(self) -> dict[str, Callable[..., None]]:
        return {"token": lambda node, slot, hops: None, "done": lambda node, slot: None}

    def metrics(self) -> dict[str, Any]:
        return {"hops": self.hops}


class Token(Node):
    async def run(self) -> None:
        ctx = self.ctx
        assert_type(ctx.rng, NodeStream)
        assert_type(ctx.idle(), Awaitable[Inbox])
        assert_type(ctx.port(0, 1), int | None)
        nxt = ctx.port_to((ctx.node + 1) % ctx.n_nodes)
        if ctx.node == 0:
            ctx.send(nxt, 1)
        inbox = await ctx.idle()
        first_port, first = inbox[0]  # the tutorial's flood: idle() without until wakes for a message
        assert_type(first_port, int)
        for _port, hops in inbox:
            ctx.record("token", hops)
            ctx.send(nxt, hops + 1)


register(Scheme(name="token", summary="a token round a ring", source="my package", node=Token,
                reporter=TokenReporter, prepare=lambda topology, params, load: dict(params),
                topologies=("torus",), until="quiescent"))

Scheme(name="token", summary="", source="", node=42, reporter=TokenReporter,  # type: ignore[arg-type]
       prepare=lambda topology, params, load: {})
