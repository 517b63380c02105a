"""A node's prefix scans over the network: the glue between ``_prefix``'s state machines and ctx.

A :class:`ScanPhase` runs one or more scans of one node side by side (the d class scans
of Theorem 6 on rotated dimensions, or the d line scans of §5), all starting at the
same tick and stepping every ``u`` ticks (``u = t_p q``). At a step start the node sends
what each scan's schedule says; a message sent at step s arrives exactly at the start of
step s + 1, where it is handed to its scan as "received at step s". Messages are
``["s", key, payload]`` with ``key`` naming the scan.

Under faults (see :mod:`._offschedule`) the phase never raises: a message off the step
grid, or at a step where its scan has no receive, is dropped; a receive still missing
when its step is over is given up (:meth:`ScanLike.miss`: the scan goes on with the
identity); a send whose step is past (the node was stalled) is not made, nor one on a
port the node sees dead or busy. Each is recorded ``off_schedule(phase, why)``. So the
scans always end, by the phase's last tick at the latest, and the node goes on with
what it has. Without faults none of this happens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from slotnet.nodes import NodeContext

from ._offschedule import send_blocked
from ._prefix import LineScanNode

__all__ = ["LineAdapter", "ScanLike", "ScanPhase", "port_label"]


class ScanLike(Protocol):
    """What :class:`ScanPhase` needs of a scan (``ScanNode`` has it; see :class:`LineAdapter`)."""

    @property
    def done(self) -> bool: ...
    def outgoing(self, step: int) -> list[tuple[int, int, Any]]: ...
    def incoming(self, step: int, dim: int, direction: int, payload: Any) -> None: ...
    def miss(self, step: int) -> int: ...


class LineAdapter:
    """A §5 :class:`LineScanNode` along dimension ``dim``, seen as a :class:`ScanLike`."""

    def __init__(self, dim: int, scan: LineScanNode) -> None:
        self.dim, self.scan = dim, scan

    @property
    def done(self) -> bool:
        return self.scan.done

    def outgoing(self, step: int) -> list[tuple[int, int, Any]]:
        return [(self.dim, direction, payload) for direction, payload in self.scan.outgoing(step)]

    def incoming(self, step: int, dim: int, direction: int, payload: Any) -> None:
        if dim != self.dim:
            raise ValueError(f"line scan of dimension {self.dim} got a message on dimension {dim}")
        self.scan.incoming(step, direction, payload)

    def miss(self, step: int) -> int:
        return self.scan.miss(step)


def port_label(in_port: int) -> tuple[int, int]:
    """``(dim, direction towards the sender)`` of a mesh or torus in-port (port 2k is +1 along k)."""
    return in_port // 2, (1 if in_port % 2 == 0 else -1)


class ScanPhase:
    """The scans of one node, stepping together from tick ``start`` every ``u`` ticks.

    Args:
        ctx: the node's context.
        scans: key -> scan (state machine).
        start: tick of step 0.
        u: ticks per step (``t_p q``).
        n_steps: steps of the longest scan.
        size: message size in paper units (t_p).
        up_steps: per key, steps of the forward (up) half, to tell the halves apart in
            the timings.
        phase: the phase named in the node's ``off_schedule`` records.
        raw: send the bare payloads (the keys are the dimensions, as in §5's row and
            column scans), not ``["s", key, payload]``.
    """

    def __init__(self, ctx: NodeContext, scans: Mapping[int, ScanLike], start: int, u: int, n_steps: int,
                 size: float, up_steps: Mapping[int, int], phase: str = "scan", raw: bool = False) -> None:
        self.ctx, self.scans = ctx, dict(scans)
        self.start, self.u, self.n_steps, self.size, self.up_steps = start, u, n_steps, size, dict(up_steps)
        self.end = start + n_steps * u
        self.last_up = -1  # tick of the last forward-half reception
        self.last_down = -1
        self.phase = phase
        self.raw = raw  # messages are the bare payloads (the key is the dimension they travel on)
        self.sent = 0  # steps whose sends are done (or given up)
        self.settled = 0  # steps whose receives are done (or given up)
        self.missed = 0  # receives given up (faults only)

    @property
    def done(self) -> bool:
        return all(s.done for s in self.scans.values())

    def _off(self, why: str) -> None:
        self.ctx.record("off_schedule", self.phase, why)

    def receive(self, tick: int, in_port: int, key: Any, payload: Any) -> None:
        """Hand a scan message that arrived at ``tick`` to its scan (one off the schedule is dropped)."""
        offset = tick - self.start
        if offset <= 0 or offset % self.u:
            self._off("off grid")
            return
        step = offset // self.u - 1
        scan = self.scans.get(key) if isinstance(key, int) else None
        if scan is None or step < self.settled:
            self._off("unexpected")
            return
        dim, direction = port_label(in_port)
        try:
            scan.incoming(step, dim, direction, payload)
        except (ValueError, TypeError, KeyError, IndexError):
            self._off("unexpected")
            return
        if step < self.up_steps[key]:
            self.last_up = tick
        else:
            self.last_down = tick

    def send_due(self, tick: int) -> None:
        """At a step start, send every scan's messages of that step (after the receives due
        by ``tick`` that did not come have been given up; a send whose step is past is not made)."""
        while self.settled < self.n_steps and self.start + (self.settled + 1) * self.u <= tick:
            for scan in self.scans.values():
                n = scan.miss(self.settled)
                self.missed += n
                for _ in range(n):
                    self._off("missed")
            self.settled += 1
        while self.sent < self.n_steps and self.start + self.sent * self.u <= tick:
            step = self.sent
            self.sent += 1
            late = self.start + step * self.u != tick
            for key, scan in self.scans.items():
                for dim, direction, payload in scan.outgoing(step):
                    port = self.ctx.port(dim, direction)
                    if port is None:
                        raise ValueError(f"node {self.ctx.node}: scan {key} wants to leave the array on dim {dim}")
                    why = "late send" if late else send_blocked(self.ctx, port, self.size)
                    if why is not None:
                        self._off(why)
                        continue
                    self.ctx.send(port, payload if self.raw else ["s", key, payload], self.size)

    def next_tick(self, tick: int) -> int | None:
        """The next step start after ``tick`` while the scans are not done, else None."""
        if self.done:
            return None
        if tick < self.start:
            return self.start
        offset = tick - self.start
        nxt = self.start + (offset // self.u + 1) * self.u
        return nxt if nxt <= self.end else None
