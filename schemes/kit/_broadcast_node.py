"""The skeleton of a broadcast node: Poisson births, first receptions, the step event.

Topology-agnostic: queues are keyed by the node's own ports (see :mod:`._queues`), so
the same skeleton serves hypercube, torus and mesh nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from slotnet.nodes import Inbox, Node, NodeContext

from ._births import BirthProcess
from .choices import Poisson

__all__ = ["INCARNATION_SHIFT", "BirthRate", "BroadcastNode", "Forwarding", "births_choice", "first_seq"]

#: A restarted node numbers its packets from ``incarnation << INCARNATION_SHIFT`` on, so a
#: packet's name ``(origin, seq)`` stays unique across crashes and recoveries: a new
#: incarnation keeps none of its predecessor's state, but it knows which incarnation it is
#: (``ctx.incarnation``, as a real node knows its boot count).
INCARNATION_SHIFT = 32


def births_choice(lam: float) -> dict[str, Poisson]:
    """The declaration of a :class:`BroadcastNode`'s births (``Scheme.choices``): ``births``,
    the number born at a node in a slot, Poisson(λ) -- a Poisson process of rate λ per slot,
    independent from node to node (Stamoulis & Tsitsiklis, §1 and §2.1.1(b)). None at λ = 0.

    Example:
        >>> births_choice(0.25)
        {'births': Poisson(mean=0.25)}
    """
    return {"births": Poisson(lam)} if lam > 0 else {}


def first_seq(ctx: NodeContext) -> int:
    """The sequence number before this incarnation's first packet (0 for a node never restarted)."""
    return ctx.incarnation << INCARNATION_SHIFT


class BirthRate(Protocol):
    """What :class:`BroadcastNode` reads of its node parameters (``ctx.params``): the family's
    record (e.g. the broadcast schemes' and star's) has a ``lam`` attribute."""

    @property
    def lam(self) -> float:
        """The Poisson birth rate of broadcasts per node per slot."""
        ...


class Forwarding(Protocol):
    """What :meth:`BroadcastNode.forward_heads` needs of a queue set."""

    held: int

    def busy(self) -> Iterable[int]: ...
    def pop(self, port: int) -> Any: ...


class BroadcastNode(Node):
    """Births at rate ``ctx.params.lam`` (a :class:`BirthRate`), first receptions, and the ``step`` event.

    Subclasses implement :meth:`run`; they call :meth:`births` once per step to get the
    packets born here that became sendable, :meth:`received` for each first reception,
    and end a non-idling step with :meth:`forward_heads`.
    """

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.n_ports = len(ctx.ports)
        prm: BirthRate = ctx.params
        self.lam = prm.lam
        self.births_proc = BirthProcess(ctx.rng, self.lam, start=float(ctx.slot))
        self.seq = first_seq(ctx)
        self._new_births: list[tuple[int, float]] = []
        self._received: list[tuple[int, int]] = []

    def births(self, slot: int) -> list[tuple[int, float]]:
        """New packets of this node sendable from ``slot`` as (seq, τ)."""
        out = []
        for tau in self.births_proc.take_until(slot):
            self.seq += 1
            out.append((self.seq, tau))
        self._new_births.extend(out)
        return out

    def choice_counts(self, last_slot: int) -> dict[str, dict[int, int]]:
        """``births``: how many slots up to ``last_slot`` saw each number of births here (the
        Poisson(λ) count per slot that :func:`births_choice` declares; none at λ = 0)."""
        counts = self.births_proc.counts(last_slot)
        return {"births": counts} if counts else {}

    def received(self, origin: int, seq: int) -> None:
        """Note a first reception of (origin, seq) at this node for the observer."""
        self._received.append((origin, seq))

    def report(self, q_start: int, q_after: int) -> None:
        """Record this slot's ``step`` event (births, first receptions, Q before and after)."""
        self.ctx.record("step", self._new_births, self._received, q_start, q_after)
        self._new_births = []
        self._received = []

    def next_wake(self) -> int | None:
        return self.births_proc.wake_slot()

    async def forward_heads(self, queues: Forwarding) -> Inbox:
        """Non-idling step end: every port with work sends its head packet, Q is reported,
        and the node parks until the next slot (work left) or its next birth (none).

        A kit queue (:mod:`._queues`) also keeps its residence ledger: started at the
        node's first step, its clock (``now``) kept at the current slot, recorded after Q
        (``residence``, the stamps of the ``littles_law`` check, :mod:`._little`).
        """
        ctx = self.ctx
        q: Any = queues
        ledger = getattr(q, "ledger", None)
        if ledger is None and hasattr(q, "start_ledger"):
            ledger = q.start_ledger(ctx.slot)
        q_start = queues.held
        send = ctx.send
        for port in queues.busy():
            send(port, queues.pop(port))
        self.report(q_start, queues.held)
        if ledger is not None:
            ledger.record(ctx)
        inbox = await (ctx.next_slot() if queues.held else ctx.idle(until=self.next_wake()))
        if ledger is not None:
            q.now = ctx.slot
        return inbox
