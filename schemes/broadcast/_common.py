"""Pieces every broadcast scheme shares: load resolution, the node skeleton, registration."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from slotnet.nodes import Node

from .._base import Param, Scheme, SchemeError, Setup
from . import theory as _theory
from ._traffic import BirthProcess
from .metrics import BroadcastReporter

__all__ = ["BroadcastNode", "PortQueues", "make_scheme", "resolve_load"]


def resolve_load(topology: Any, load: dict[str, float]) -> tuple[float, float]:
    """(λ, ρ) from exactly one of --rho / --lam on a d-cube (eq. 8).

    Raises:
        SchemeError: on a non-hypercube, on zero or two loads, or on a negative load.
    """
    if topology.kind != "hypercube":
        raise SchemeError(f"the broadcast schemes of Stamoulis & Tsitsiklis run on hypercubes, not {topology.spec}")
    d = topology.d
    if ("rho" in load) == ("lam" in load):
        raise SchemeError("broadcast schemes need exactly one load: --rho ρ (eq. 8: ρ = λ(2^d−1)/d) or --lam λ")
    if "rho" in load:
        rho = load["rho"]
        lam = _theory.lam_from_rho(d, rho)
    else:
        lam = load["lam"]
        rho = _theory.rho_from_lam(d, lam)
    if not (math.isfinite(lam) and lam >= 0):
        raise SchemeError(f"load must be a finite number >= 0, got λ={lam!r}")
    return lam, rho


class PortQueues:
    """Per-port FIFO queues of packets a node must forward, with Q's unit count.

    A packet record is ``[message, ports_left]``; the node's Q (§4.3.3) is the number
    of records with ``ports_left > 0``, however many ports each still needs.
    """

    __slots__ = ("queues", "held", "_records")

    def __init__(self, d: int) -> None:
        self.queues: list[deque[list[Any]]] = [deque() for _ in range(d)]
        self.held = 0

    def add(self, message: Any, ports: Iterable[int]) -> None:
        rec = [message, 0]
        for p in ports:
            self.queues[p].append(rec)
            rec[1] += 1
        if rec[1]:
            self.held += 1

    def pop(self, port: int) -> Any:
        """The head packet of ``port``'s queue (its record is released when done)."""
        rec = self.queues[port].popleft()
        rec[1] -= 1
        if rec[1] == 0:
            self.held -= 1
        return rec[0]

    def items(self) -> set[tuple[int, int]]:
        """(origin, seq) of every packet still to forward."""
        return {(r[0][0], r[0][1]) for q in self.queues for r in q}


class BroadcastNode(Node):
    """Skeleton of a broadcast node: births, first receptions, the step event.

    Subclasses implement :meth:`run`; they call :meth:`births` once per step to get the
    packets born here that became sendable, :meth:`seen` to turn an arriving copy into a
    first reception (or None for a copy already seen), and :meth:`report` to record the
    step.
    """

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.d = len(ctx.ports)
        self.lam = ctx.params["lam"]
        self.births_proc = BirthProcess(ctx.rng, self.lam, start=float(ctx.slot))
        self.seq = 0
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

    def received(self, origin: int, seq: int) -> None:
        """Note a first reception of (origin, seq) at this node for the observer."""
        self._received.append((origin, seq))

    def report(self, q_start: int, q_after: int) -> None:
        self.ctx.record("step", self._new_births, self._received, q_start, q_after)
        self._new_births = []
        self._received = []

    def next_wake(self) -> int | None:
        return self.births_proc.wake_slot()

    async def forward_heads(self, queues: Any) -> Any:
        """Non-idling step end: every port with work sends its head packet, Q is reported,
        and the node parks until the next slot (work left) or its next birth (none).

        ``queues`` is a :class:`PortQueues` or any object with ``queues`` (per port),
        ``held`` and ``pop(port)``.
        """
        q_start = queues.held
        send = self.ctx.send
        for port, q in enumerate(queues.queues):
            if q:
                send(port, queues.pop(port))
        self.report(q_start, queues.held)
        if queues.held:
            return await self.ctx.next_slot()
        return await self.ctx.idle(until=self.next_wake())

    def held_packets(self) -> Iterable[tuple[int, int]]:
        return ()


def make_scheme(
    name: str,
    summary: str,
    node: Callable[[Any], Any],
    *,
    params: tuple[Param, ...] = (),
    extra_prepare: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None,
    theory_kwargs: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Scheme:
    """A broadcast :class:`Scheme` record with the shared load handling and theory."""

    def prepare(topology: Any, p: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
        lam, rho = resolve_load(topology, load)
        out = {"lam": lam, "rho": rho, "d": topology.d, **p}
        if extra_prepare is not None:
            out.update(extra_prepare(topology, out))
        return out

    def theory(setup: Setup) -> dict[str, Any]:
        kw = theory_kwargs(dict(setup.params)) if theory_kwargs else {}
        return _theory.theory_metrics(name, setup.topology.d, setup.params["rho"], **kw)

    return Scheme(
        name=name,
        summary=summary,
        source="Stamoulis & Tsitsiklis, Efficient routing schemes for multiple broadcasts in hypercubes, "
               "IEEE Trans. Parallel Distrib. Syst. 4(7), 1993",
        node=node,
        reporter=BroadcastReporter,
        prepare=prepare,
        theory=theory,
        params=params,
        loads=("rho", "lam"),
        topologies=("hypercube",),
    )
