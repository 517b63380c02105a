"""The static schemes of Varvarigos & Bertsekas: prefix-scan, packing, monotone, array-broadcast, pmnb.

E. A. Varvarigos and D. P. Bertsekas, "Partial multinode broadcast and partial exchange
algorithms for d-dimensional meshes". Every node rule here is local: a node decides from
its coordinates, its own state, its inbox and the clock; the schedules are the pure
functions of :mod:`._prefix`, :mod:`._packing` and :mod:`._line`. Each run is a
one-shot collective (``until="quiescent"``): it stops when nothing is left to do and
reports ``completion_time`` in the paper's units, with the time quantum chosen so that
t_p, 1/d and 1/(2d) are whole numbers of ticks (:mod:`._static_time`).

* ``prefix-scan`` (§4.1 Phase 1, Fig. 2; §5 Phase 1): :mod:`._static_prefixscan`;
* ``packing`` (Theorem 3) and ``monotone`` (Theorem 4): :mod:`._static_routing`;
* ``array-broadcast`` (Theorem 2): :mod:`._static_array`;
* ``pmnb`` (§4.1 Theorem 6 with ``split=true``, §4.2 without): :mod:`._static_pmnb`.

``slotnet theory <scheme>`` prints the upper bound of the theorem covering the run and
a lower bound (:func:`.theory.bounds_for`), and per-phase values under the metric names.

Readings where the paper leaves room (see also ``_prefix``, ``_packing``, ``_theory_static``):

* Theorems 3 and 4 time the routing alone (§3: "assume that packets know their rank");
  ``packing``/``monotone`` run the rank scan first by default and report ``prefix_time``
  and ``routing_time`` apart; the theorem is checked on ``routing_time``.
* Phase 3 (§4.1): "Phase 3 is easy to implement since the current subphase l is easily
  known" -- each subphase gets a fixed window that every node computes from M alone,
  the longest time Theorem 2's greedy rule needs on any line of that subphase; it is
  never longer than Lemma 1's ``(p - 1)/gamma max |W_l(s)|`` (tested for every M).
* Lemma 1 on tori halves the mini-packets (pieces of 1/(2d)); §4.2 on tori sends whole
  copies along the two shorter arcs (the Remark's ``floor(p/2)``).
* §4.2: "only packets of class c take part in the rank computation phase" of ``A_c`` --
  a second scan per class after the class scan, hence (5')/(6')'s ``4(p-1)d t_p``; the
  windows follow the largest class, ``ceil(M/d)``.
* ``completion_time`` is the last reception (quiescence), not the end of the last window.
* pmnb needs equal sides (the classes' phases must align); the scans and the routing
  schemes run on any sides.

Faults (issue #11). ``array-broadcast`` runs under every fault kind (``faults=None``):
Theorem 2's greedy rule has no schedule -- a node forwards what comes and inserts its
own when nothing comes -- so a fault only destroys, copies or moves pieces, the run
still ends at quiescence, and the reporter says which receptions each fault cost and
tells a ``dup`` fault's copies from scheme bugs (:mod:`._static_array`,
:mod:`._static_array_report`). The other schemes are refused, every kind. Each is a
fixed schedule on the reliable, synchronous links of §2 (the scans of §4.1 Phase 1 wait
for each partial sum in one precomputed step; §3's routing and Phase 3's windows follow
from the ranks and M they give), with no acknowledgement or retransmission, so a
message a fault destroys, copies or moves leaves a node without an operand the schedule
cannot do without. Tolerating it would be another algorithm; a faulted run is refused
before its first slot, naming the scheme, the fault and the section
(:mod:`._fault_support`).
"""

from __future__ import annotations

from typing import Any

from .._base import Param, Scheme, Setup, parse_bool
from ._fault_support import NO_FAULTS, WHY_PMNB, WHY_PREFIX, WHY_ROUTING
from ._static_array import ArrayBroadcastNode, prepare_array_broadcast, theory_array_broadcast
from ._static_array_report import ArrayBroadcastReporter
from ._static_pmnb import PmnbNode
from ._static_pmnb_report import PmnbReporter, prepare_pmnb, theory_pmnb
from ._static_prefixscan import PrefixScanNode, PrefixScanReporter
from ._static_routing import RoutingNode, RoutingReporter, prepare_routing, theory_routing
from ._static_setup import ACTIVE, PLACEMENT, PLACEMENT_SEED, TP, active_ids, check_grid
from ._static_time import quantum_for
from .theory import bounds_for

__all__ = ["SCHEMES", "SOURCE", "prepare_prefix_scan", "theory_prefix_scan"]

SOURCE = ("Varvarigos & Bertsekas, Partial multinode broadcast and partial exchange algorithms "
          "for d-dimensional meshes")

_GRIDS = ("torus", "mesh")


def prepare_prefix_scan(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    """Node parameters of ``prefix-scan``; the quantum makes t_p whole ticks.

    Raises:
        SchemeError: on a topology other than mesh/torus, or a bad M or t_p.
    """
    sides, _wrap = check_grid(topology, "prefix-scan")
    active = active_ids(sides, params) if params["values"] == "rank" else []
    return {**params, "active": active, "quantum": quantum_for(params["tp"])}


def theory_prefix_scan(setup: Setup) -> dict[str, Any]:
    """§4.1 Phase 1 (tree: ``2 sum (p_k - 1) t_p``, exact) or §5 Phase 1 (line: ``p t_p``)."""
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    prm = setup.params
    b = bounds_for("prefix-scan", sides, wrap, tp=prm["tp"])
    tp = prm["tp"]
    if prm["variant"] == "tree":
        half = sum(p - 1 for p in sides) * tp
        return {"upper_bound": b["upper_bound"], "which": b["which"], "lower_bound": b["lower_bound"],
                "lower_which": b["lower_which"], "forward_time": half, "reverse_time": half}
    half = max(p // 2 for p in sides) * tp
    return {"upper_bound": b["row_column_upper_bound"], "which": "§5 Phase 1: p t_p (median-rooted line trees)",
            "lower_bound": b["row_column_lower_bound"], "lower_which": "a line's total must reach both ends",
            "exact_schedule": 2 * half, "forward_time": half, "reverse_time": half}


PREFIX_SCAN = Scheme(
    name="prefix-scan",
    summary="parallel prefix on the embedded tree P (§4.1 Fig. 2) or median-rooted line trees (§5)",
    source=SOURCE,
    node=PrefixScanNode,
    reporter=PrefixScanReporter,
    prepare=prepare_prefix_scan,
    theory=theory_prefix_scan,
    params=(
        TP,
        Param("values", str, "random", "inputs: random (each node's own RNG, 0..999) or rank (1 on active nodes)",
              ("random", "rank")),
        Param("variant", str, "tree", "tree: prefix tree P of §4.1; line: §5's row/column prefix on every dimension",
              ("tree", "line")),
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
    ),
    topologies=_GRIDS,
    quantum=lambda p: int(p["quantum"]),
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=WHY_PREFIX,
)

PACKING = Scheme(
    name="packing",
    summary="greedy packing of the active packets to nodes 0..M-1, dimension by dimension (Theorem 3)",
    source=SOURCE,
    node=RoutingNode,
    reporter=RoutingReporter,
    prepare=lambda t, p, ld: prepare_routing(t, p, ld, "packing"),
    theory=theory_routing,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
        Param("rank", str, "prefix", "prefix: ranks by the §4.1 scan first; given: ranks known at time 0 (what Theorem 3 times)",
              ("prefix", "given")),
        TP,
    ),
    topologies=_GRIDS,
    quantum=lambda p: int(p["quantum"]),
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=WHY_ROUTING,
)

MONOTONE = Scheme(
    name="monotone",
    summary="monotone routing s^(i) -> v^(i): pack to node i, then unpack in reverse dimension order (Theorem 4)",
    source=SOURCE,
    node=RoutingNode,
    reporter=RoutingReporter,
    prepare=lambda t, p, ld: prepare_routing(t, p, ld, "monotone"),
    theory=theory_routing,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
        Param("targets", str, "random", "where the targets v^(0) < ... < v^(M-1) are: random, corner or spread",
              ("random", "corner", "spread")),
        Param("rank", str, "prefix", "prefix: ranks by the §4.1 scan first; given: ranks known at time 0 (what Theorem 4 times)",
              ("prefix", "given")),
        TP,
    ),
    topologies=_GRIDS,
    quantum=lambda p: int(p["quantum"]),
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=WHY_ROUTING,
)

ARRAY_BROADCAST = Scheme(
    name="array-broadcast",
    summary="K packets broadcast on a linear array or ring by Theorem 2's greedy rule",
    source=SOURCE,
    node=ArrayBroadcastNode,
    reporter=ArrayBroadcastReporter,
    prepare=prepare_array_broadcast,
    theory=theory_array_broadcast,
    params=(
        Param("packets", int, None, "K, the number of packets (default p); a node may hold several"),
        Param("placement", str, "random", "random (each packet at a uniform node), corner (all at node 0), spread",
              ("random", "corner", "spread")),
        PLACEMENT_SEED,
        Param("split", parse_bool, True, "on a ring, split every packet in two halves, one per direction (Theorem 2)",
              (True, False)),
    ),
    topologies=_GRIDS,
    quantum=lambda p: int(p["quantum"]),
    until="quiescent",
    faults=None,  # every kind: see the module docstring
)

PMNB = Scheme(
    name="pmnb",
    summary="partial multinode broadcast: rank by prefix, packing, d broadcast subphases (§4.1 / §4.2)",
    source=SOURCE,
    node=PmnbNode,
    reporter=PmnbReporter,
    prepare=prepare_pmnb,
    theory=theory_pmnb,
    params=(
        ACTIVE, PLACEMENT, PLACEMENT_SEED, TP,
        Param("split", parse_bool, True, "true: §4.1 mini-packets of 1/d on d rotated classes (Theorem 6); "
                                         "false: §4.2 whole packets, class r mod d", (True, False)),
    ),
    topologies=_GRIDS,
    quantum=lambda p: int(p["quantum"]),
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=WHY_PMNB,
)

SCHEMES = (PREFIX_SCAN, PACKING, MONOTONE, ARRAY_BROADCAST, PMNB)
