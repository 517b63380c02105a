"""The ``pmnb`` scheme's preparation, reporter and theory (§4.1 Theorem 6, §4.2).

Metrics (paper units): ``prefix_time`` (the scans, exactly ``2 d (p-1) t_p``, twice that
without splitting), ``packing_time`` (last packing arrival after the scans),
``broadcast_time`` (last reception after packing), ``completion_time`` (the driver's
quiescence time, their sum). Invariants: every node receives every active packet
(all its pieces) exactly once, ranks and M match a sequential count, no broadcast piece
outlived its subphase window, nothing lost.

Theory: the covering bound is (5)/(6) (Theorem 6) with splitting, (5')/(6') without; the
lower bound is (3)/(4) (with a ceiling for whole packets) or, where larger, the bound for
the placement at hand (:func:`.theory.bounds_for`). Per phase: the exact scan time, the
packing bound (``p - 1`` with 1/d mini-packets, ``d (p - 1)`` whole), and the broadcast
bound of Lemma 1 (scaled by 1/d with splitting) or of §4.2's ``A_c``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .._base import Setup
from ..kit import BaseReporter
from ._packing import ranks
from ._prefix import rotation
from ._static_pmnb import timeline
from ._static_setup import active_ids, check_grid, equal_side
from ._static_time import quantum_for
from .theory import bounds_for

__all__ = ["PmnbReporter", "expected_ranks", "prepare_pmnb", "theory_pmnb"]


def prepare_pmnb(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    """Node parameters of ``pmnb``: the active set and the quantum (t_p, 1/d, 1/(2d) exact).

    Raises:
        SchemeError: on unequal sides (the d classes share one schedule), a bad M or t_p.
    """
    sides, wrap = check_grid(topology, "pmnb")
    equal_side(sides, "pmnb", "the d classes of Theorem 6 step through their phases together on rotated dimensions")
    active = active_ids(sides, params)
    d = len(sides)
    q = quantum_for(params["tp"], (2 if wrap else 1) * d) if params["split"] else quantum_for(params["tp"])
    return {**params, "active": active, "quantum": q}


def expected_ranks(active: list[int], sides: tuple[int, ...], split: bool) -> dict[int, list[tuple[int, int]]]:
    """Per active node, its ``(class, rank)`` pairs as the scans must find them."""
    d = len(sides)
    if split:
        per = [ranks(active, sides, rotation(c, d)) for c in range(d)]
        return {v: [(c, per[c][v]) for c in range(d)] for v in active}
    cls = {v: r % d for v, r in ranks(active, sides).items()}
    out: dict[int, list[tuple[int, int]]] = {}
    for c in range(d):
        members = [v for v in active if cls[v] == c]
        for v, r in ranks(members, sides, rotation(c, d)).items():
            out[v] = [(c, r)]
    return out


class PmnbReporter(BaseReporter):
    """Exactly-once delivery of every active packet everywhere, and the phase times."""

    events: Mapping[str, tuple[str, ...]] = {
        "ranked": ("total", "ranks"),
        "got": ("origin",),
        "dup": ("origin", "piece"),
        "summary": ("scan_tick", "pack_tick", "bcast_tick", "overruns"),
    }

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.active = list(setup.params["active"])
        self.got: dict[int, set[int]] = {}
        self.dups = 0
        self.totals: dict[int, int] = {}
        self.rank_of: dict[int, list[tuple[int, int]]] = {}
        self.summaries: dict[int, tuple[int, int, int, int]] = {}
        self.last_got = -1

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"ranked": self._ranked, "got": self._got, "dup": self._dup, "summary": self._summary}

    def _ranked(self, node: int, slot: int, total: int, ranks_: list[Any]) -> None:
        self.totals[node] = total
        if ranks_:
            self.rank_of[node] = [(int(c), int(r)) for c, r in ranks_]

    def _got(self, node: int, slot: int, origin: int) -> None:
        s = self.got.setdefault(node, set())
        if origin in s:
            self.dups += 1
        s.add(origin)
        self.last_got = max(self.last_got, slot)

    def _dup(self, node: int, slot: int, origin: int, piece: int) -> None:
        self.dups += 1

    def _summary(self, node: int, slot: int, scan_tick: int, pack_tick: int, bcast_tick: int, overruns: int) -> None:
        self.summaries[node] = (scan_tick, pack_tick, bcast_tick, overruns)

    def _delivery(self) -> tuple[int, int]:
        want = set(self.active)
        missing = wrong = 0
        for v in range(self.setup.topology.n_nodes):
            have = self.got.get(v, set())
            missing += len(want - have)
            wrong += len(have - want)
        return missing, wrong

    def _timeline(self) -> Any:
        prm, topo = self.setup.params, self.setup.topology
        return timeline(tuple(topo.sides), topo.kind == "torus", bool(prm["split"]), float(prm["tp"]), self.setup.quantum,
                        len(self.active))

    def metrics(self) -> dict[str, Any]:
        q = self.setup.quantum
        scan = max((s[0] for s in self.summaries.values()), default=-1)
        out: dict[str, Any] = {"active": len(self.active), "prefix_time": scan / q if scan >= 0 else None}
        if self.active:
            tl = self._timeline()
            pack = max((s[1] for s in self.summaries.values()), default=-1)
            out["packing_time"] = (pack - tl.scan_end) / q if pack >= 0 else 0.0
            out["broadcast_time"] = (self.last_got - tl.pack_end) / q if self.last_got >= 0 else None
        out["receptions"] = sum(len(s) for s in self.got.values())
        return out

    def invariants(self, lost: Mapping[str, int], in_flight: list[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        n = self.setup.topology.n_nodes
        missing, wrong = self._delivery()
        sides = tuple(self.setup.topology.sides)
        want = expected_ranks(self.active, sides, bool(self.setup.params["split"]))
        bad_ranks = sum(1 for v in set(want) | set(self.rank_of) if sorted(want.get(v, [])) != sorted(self.rank_of.get(v, [])))
        bad_totals = sum(1 for v in range(n) if self.totals.get(v) != len(self.active))
        overruns = sum(s[3] for s in self.summaries.values())
        return {
            "every_packet_everywhere_once": {"ok": missing == 0 and wrong == 0 and self.dups == 0,
                                             "missing": missing, "wrong": wrong, "duplicates": self.dups},
            "ranks_and_m_by_prefix": {"ok": bad_ranks == 0 and bad_totals == 0, "wrong_ranks": bad_ranks,
                                      "wrong_totals": bad_totals},
            "within_subphase_windows": {"ok": overruns == 0 and len(self.summaries) == n, "overruns": overruns,
                                        "unfinished_nodes": n - len(self.summaries)},
            "no_message_lost": {"ok": self.lost_messages == 0, "lost": self.lost_messages},
        }


def theory_pmnb(setup: Setup) -> dict[str, Any]:
    """(5)/(6) or (5')/(6') above, (3)/(4) or the placement's bound below, and per phase."""
    prm, topo = setup.params, setup.topology
    sides, wrap = tuple(topo.sides), topo.kind == "torus"
    p, d, n = sides[0], len(sides), topo.n_nodes
    m, split, tp = len(prm["active"]), bool(prm["split"]), float(prm["tp"])
    g = 2 if wrap else 1
    b = bounds_for("pmnb", sides, wrap, active=prm["active"], tp=tp, split=split)
    out = {k: v for k, v in b.items() if not isinstance(v, dict)}
    scans = 1 if split else 2
    out["prefix_time"] = scans * 2 * d * (p - 1) * tp
    if split:
        out["packing_time"] = float(p - 1)
        out["broadcast_time"] = (m / g * (n - 1) / n + (p - 1) * d / g) / d
        out["broadcast_which"] = "Lemma 1 with 1/d mini-packets"
    else:
        step = math.ceil((p - 1) / g)
        out["packing_time"] = float(d * (p - 1))
        out["broadcast_time"] = math.ceil(m / d) / (p - 1) * step * (n - 1) / n + d * step
        out["broadcast_which"] = "§4.2: A_c with ceil(M/d) whole packets"
    tl = timeline(sides, wrap, split, tp, setup.quantum, m)
    out["schedule_end"] = tl.starts[-1] / setup.quantum if m else tl.scan_end / setup.quantum
    return out
