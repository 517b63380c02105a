"""The base class of every scheme's node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._context import NodeContext

__all__ = ["Node"]


class Node:
    """A processor: subclass it and write :meth:`run` as straight-line code.

    Example:
        class Echo(Node):
            async def run(self) -> None:
                while True:
                    inbox = await self.ctx.idle()
                    for port, message in inbox:
                        self.ctx.send(port, message)
    """

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    async def run(self) -> None:
        """The node's whole life, one step per slot it is awake; returning ends it."""
        raise NotImplementedError

    def held(self) -> int:
        """Packets this node holds in its own queues right now (for conservation).

        It is asked before :meth:`run` too: every node is built before slot 0's faults,
        and a crash there books what it holds. A node whose input exists at time 0 (a
        source's packet, an origin's broadcasts) therefore sets it up in ``__init__``.
        """
        return 0

    def held_packets(self) -> Iterable[Any]:
        """Identities of the packets counted by :meth:`held` (for exactly-once checks)."""
        return ()

    def choice_counts(self, last_slot: int) -> Mapping[str, Mapping[Any, int]]:
        """Outcomes of declared random choices this node counted itself, up to slot ``last_slot``.

        A choice made every slot (how many packets arrive) is cheaper counted here, in plain
        ints, than told one outcome at a time with ``ctx.record_choice``; the observer asks
        once, after the run's last slot ``last_slot``, and adds the counts (choice name ->
        value -> count) to what the node recorded. A count must cover exactly the slots up to
        ``last_slot`` whose outcome the node has drawn, never a slot past it. Default: none.
        """
        return {}
