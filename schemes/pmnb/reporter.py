"""The reporter ``packing`` and ``monotone`` share: delivery, ranks, link requests, co-location.

What it counts (see :mod:`._packing` for why):

* ``link_conflicts``: (step, out-port) pairs at which a node was asked to send two
  packets (the fabric would refuse the second; the node sends one and counts);
* ``boundary_collisions``: (phase boundary, node) pairs holding two or more packets;
  Theorem 3's induction says 0 (checked as an invariant);
* ``meetings``: the same inside a phase. The proof's "no two packets are at any time at
  the same node" is false there (the 5 x 5 counterexample of :mod:`._packing`); it is
  reported, with ``max_at_node`` (at most 2, checked), not asserted.

Beside them ``prefix_time`` and ``routing_time`` (:mod:`._routing_node`), and the
checks: every packet delivered exactly once to its rank's node (packing) or its target
(monotone), and with ``rank=prefix`` the ranks the scan found.

Under faults (:mod:`._offschedule`) these are what the faults did, not violations: the
delivery check reports ``correctness`` -- whether every packet arrived once at its node
(``result_correct``), the first packet that did not (its origin, rank, where it should be
and where it arrived, if anywhere), the nodes whose scan found a wrong rank (the first of
them), packets stranded or unroutable, and the nodes' off-schedule records -- and the
schedule's own checks (link requests, co-location, the ranks) move under
``correctness.schedule``, each with ``holds``. Every message stays in the fabric's books.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._base import Setup
from ..kit import BaseReporter
from ._inputs import RoutingInputs
from ._offschedule import FAULT_EVENTS, FaultNotes
from ._packing import rank_destination, ranks
from ._routing_node import phase_boundaries, start_tick

__all__ = ["RoutingReporter", "digest"]

_MERSENNE = (1 << 61) - 1


class RoutingReporter(BaseReporter):
    """Delivery, ranks, link requests and co-location of a packing or monotone run."""

    events: Mapping[str, tuple[str, ...]] = {
        "scanned": ("rank", "total", "last_tick"),
        "crowd": ("step", "count"),
        "conflict": ("step", "port", "count"),
        "arrive": ("origin", "rank"),
        **FAULT_EVENTS,
    }

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        prm: RoutingInputs = setup.params
        self.sides = tuple(setup.topology.sides)
        self.task = prm.task
        self.start = start_tick(prm, self.sides, setup.quantum)
        self.bounds = phase_boundaries(self.sides, self.task)
        self.scan_ranks: dict[int, int] = {}
        self.scan_last = -1
        self.crowds: list[tuple[int, int, int]] = []
        self.conflicts = 0
        self.arrivals: list[tuple[int, int, int, int]] = []  # (node, slot, origin, rank)
        self.notes = FaultNotes(bool(getattr(setup, "faults", False)))

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"scanned": self._scanned, "crowd": self._crowd, "conflict": self._conflict, "arrive": self._arrive,
                **self.notes.handlers()}

    def _scanned(self, node: int, slot: int, rank: int, total: int, last_tick: int) -> None:
        if rank >= 0:
            self.scan_ranks[node] = rank
        self.scan_last = max(self.scan_last, last_tick)

    def _crowd(self, node: int, slot: int, step: int, count: int) -> None:
        self.crowds.append((node, step, count))

    def _conflict(self, node: int, slot: int, step: int, port: int, count: int) -> None:
        self.conflicts += 1

    def _arrive(self, node: int, slot: int, origin: int, rank: int) -> None:
        self.arrivals.append((node, slot, origin, rank))

    def _delivery(self) -> tuple[int, int, int]:
        """(delivered right, wrong or repeated, missing)."""
        prm: RoutingInputs = self.setup.params
        topo = self.setup.topology
        expected = ranks(prm.active, self.sides)
        seen: set[int] = set()
        right = wrong = 0
        for node, _slot, origin, rank in self.arrivals:
            r = expected.get(origin)
            if r is None or r != rank or origin in seen:
                wrong += 1
                continue
            seen.add(origin)
            goal = topo.node_at(rank_destination(r, self.sides)) if self.task == "packing" else prm.targets[r]
            if node == goal:
                right += 1
            else:
                wrong += 1
        return right, wrong, len(expected) - len(seen)

    def metrics(self) -> dict[str, Any]:
        q = self.setup.quantum
        last = max((slot for _, slot, _, _ in self.arrivals), default=self.start)
        mid = [c for c in self.crowds if c[1] not in self.bounds]
        return {
            "prefix_time": (self.scan_last / q) if self.setup.params.rank == "prefix" else 0.0,
            "routing_time": (last - self.start) / q,
            "delivered": self._delivery()[0],
            "link_conflicts": self.conflicts,
            "boundary_collisions": len(self.crowds) - len(mid),
            "meetings": len(mid),
            "max_at_node": max((c[2] for c in self.crowds), default=1 if self.arrivals else 0),
        }

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """The checks of the module docstring. Their deadlines are the schedule's: the ranks
        when the scan ends, every packet at its node when the last routing phase ends (the
        theorem's d(p-1), or 2d(p-1), steps); a run cut short before one reports what is
        still to come as ``pending``, with ``due_at_slot``."""
        right, wrong, missing = self._delivery()
        crowded_at_bounds = sum(1 for c in self.crowds if c[1] in self.bounds)
        most = max((c[2] for c in self.crowds), default=1)
        routed_by = self.start + max(self.bounds) * self.setup.quantum
        delivered: dict[str, Any] = {"ok": wrong == 0 and missing == 0, "right": right, "wrong": wrong, "missing": missing}
        if not self.due(routed_by):  # cut short: the packets not at their nodes yet are on their way
            delivered = {"ok": wrong == 0, "right": right, "wrong": wrong, "pending": missing, "due_at_slot": routed_by}
        out: dict[str, Any] = {
            "delivered_exactly_once": delivered,
            "no_link_asked_twice": {"ok": self.conflicts == 0, "conflicts": self.conflicts},
            "no_two_at_phase_boundaries": {"ok": crowded_at_bounds == 0, "collisions": crowded_at_bounds},
            "at_most_two_per_node": {"ok": most <= 2, "max_at_node": most},
            "no_message_lost": self.notes.no_message_lost(self.lost_messages, lost),
        }
        if self.setup.params.rank == "prefix":
            expected = ranks(self.setup.params.active, self.sides)
            if self.due(self.start):
                bad = sum(1 for v, r in expected.items() if self.scan_ranks.get(v) != r) + len(set(self.scan_ranks) - set(expected))
                out["ranks_by_prefix"] = {"ok": bad == 0, "wrong": bad}
            else:  # cut short in the scan: the ranks found so far
                bad = sum(1 for v, r in self.scan_ranks.items() if expected.get(v) != r)
                out["ranks_by_prefix"] = {"ok": bad == 0, "wrong": bad, "pending": len(set(expected) - set(self.scan_ranks)),
                                          "due_at_slot": self.start}
        if self.notes.faulted(lost):  # what the faults did, reported beside the books
            schedule = {}
            for name in [k for k in out if k not in ("delivered_exactly_once", "no_message_lost")]:
                check = dict(out.pop(name))
                schedule[name] = {"holds": check.pop("ok"), **check}
            out["delivered_exactly_once"] = {"ok": True, "correctness": self.correctness(routed_by) | {"schedule": schedule}}
        elif self.notes.scheme_error(lost):
            out["delivered_exactly_once"] |= {"ok": False, **self.notes.report()}
        return out

    def correctness(self, routed_by: int) -> dict[str, Any]:
        """Under faults: every packet once at its node or not, the first that is not, wrong ranks."""
        prm: RoutingInputs = self.setup.params
        topo = self.setup.topology
        expected = ranks(prm.active, self.sides)
        where: dict[int, list[int]] = {}
        for node, _slot, origin, _rank in self.arrivals:
            where.setdefault(origin, []).append(node)
        right = 0
        first: dict[str, Any] | None = None
        for origin in sorted(expected):
            r = expected[origin]
            goal = topo.node_at(rank_destination(r, self.sides)) if self.task == "packing" else prm.targets[r]
            nodes = where.get(origin, [])
            if nodes == [goal]:
                right += 1
            elif first is None:
                first = {"origin": origin, "rank": r, "node": goal, "arrived_at": sorted(set(nodes)),
                         "problem": "not delivered" if not nodes else ("delivered twice" if goal in nodes else "wrong node")}
        out: dict[str, Any] = {"result_correct": right == len(expected) and not set(where) - set(expected),
                               "packets": len(expected), "delivered_right": right,
                               "not_delivered": sum(1 for v in expected if v not in where),
                               "wrong_node": sum(1 for v, r in expected.items() if v in where and any(
                                   n != (topo.node_at(rank_destination(r, self.sides)) if self.task == "packing"
                                         else prm.targets[r]) for n in where[v])),
                               "routing_end": routed_by,
                               "last_arrival": max((slot for _, slot, _, _ in self.arrivals), default=None)}
        if first is not None:
            out["first_wrong"] = first
        if prm.rank == "prefix":
            bad = sorted(v for v, r in expected.items() if self.scan_ranks.get(v) != r)
            out["wrong_ranks"] = len(bad)
            if bad:
                out["first_wrong_rank"] = {"node": bad[0], "rank": self.scan_ranks.get(bad[0]), "expected": expected[bad[0]]}
        return out | self.notes.report()


def digest(keys: list[int] | set[int] | frozenset[int]) -> int:
    """An order-free fingerprint of a set of non-negative integers (for exactly-once checks).

    Example:
        >>> digest([3, 1]) == digest({1, 3}) != digest([1, 2])
        True
    """
    total = 0
    for k in keys:
        x = (k + 1) * 0x9E3779B97F4A7C15 % _MERSENNE
        total = (total + x * x % _MERSENNE + x) % _MERSENNE
    return total
