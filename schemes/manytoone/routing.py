"""The many-to-one schemes of Mansour & Patt-Shamir as ``Scheme`` records.

* ``m2o-greedy`` -- the baseline: dimension-order shortest paths, one FIFO (or
  farthest-first) queue per out-port (:mod:`._greedy_node`);
* ``m2o-rec`` -- rec_route of §4, local (:mod:`._rec_node`), reproducing the pure
  reference :func:`._rec.reference_run` step for step;
* ``m2o-bfs`` -- §5's bfs_route with load balancing (Theorem 5.1) and time
  multiplexing over the distance classes (:mod:`._bfs_node`);
* ``m2o-offline`` -- CENTRALISED: the §3 schedule (:mod:`._offline`) computed in
  ``prepare`` and followed by the nodes as a precomputed plan (:mod:`._offline_node`).

All run on ``mesh:`` topologies of dimension 1 to 3 until quiescence, with the instance
from ``--param instance=FILE`` or ``--param workload=... seed=S`` (:mod:`._setup`);
metrics and invariants are :mod:`._report`'s.

Faults (issue #11). ``m2o-greedy`` runs under every fault kind (``faults=None``): it
has no schedule, so a fault only removes, copies or moves packets, and its report says
what that cost -- each packet delivered, lost to a fault by cause (``crash`` for those a
crashed node held), or still in progress, and second deliveries of packets a ``dup``
fault copied told apart from scheme bugs (:mod:`._greedy_node`, :mod:`._report`). A
lost packet leaves nobody waiting, so a faulted run still ends at quiescence. The other
three are refused, every kind (``faults=NO_FAULTS``; a faulted run is a SpecError
before its first slot). §2's model has reliable, synchronous links and every packet
exists exactly once, unacknowledged: ``m2o-offline`` replays the §3 schedule in which
each node expects a packet at a planned step, ``m2o-rec`` runs §4's invocations in
windows every node computes from the instance (Lemma 4.3's common return), and
``m2o-bfs`` time-multiplexes §5's distance classes in fixed phases; a message a fault
destroys, copies or delays leaves a node waiting at a step for a packet that is not
there, or holding one the plan has no place for.
"""

from __future__ import annotations

from typing import Any

from .._base import Param, Scheme, Setup
from ._inputs import INSTANCE, SEED, WORKLOAD, instance_of, prepare_instance
from ._rec_route import Hierarchy, occupancy_bound, reference_run
from .bfs import BfsNode
from .greedy import GreedyNode
from .instances import Instance
from .offline import OfflineNode, node_plans
from .rec import RecNode
from .reporter import M2OReporter, theory_m2o

__all__ = ["SCHEMES", "SOURCE"]

SOURCE = "Y. Mansour and B. Patt-Shamir, Many-to-one packet routing on grids"
_MESH = ("mesh",)
_COMMON = (INSTANCE, WORKLOAD, SEED)
#: The fault kinds m2o-rec, m2o-bfs and m2o-offline declare supported: none (see the module docstring).
NO_FAULTS: frozenset[str] = frozenset()
_NO_RETRY = "each packet exists once, with no acknowledgement or retransmission to replace one a fault destroys, copies or moves"
_WHY = {
    "m2o-rec": f"§4's invocations run in windows every node computes from the instance (Lemma 4.3); {_NO_RETRY}",
    "m2o-bfs": f"§5 time-multiplexes the distance classes in fixed phases (Theorem 5.1); {_NO_RETRY}",
    "m2o-offline": f"the nodes replay the §3 schedule (Theorem 3.1), each expecting a packet at a planned step; {_NO_RETRY}",
}


def _rec_extra(inst: Instance) -> dict[str, Any]:
    """The reference execution's values under the metric names (same model, computed centrally)."""
    res = reference_run(inst, check_links=False)
    firsts = res.first_arrival
    return {
        "completion_time": res.paper_time,
        "final_arrival_time": res.completion_time,
        "mean_delay": sum(firsts) / len(firsts) if firsts else None,
        "max_queue": res.max_load,
        "max_occupancy": res.max_occupancy,
        "return_time": res.return_time,
        "invocations": len(res.invocations),
        "occupancy_bound": occupancy_bound(Hierarchy(inst.sides)),
    }


def _theory_rec(setup: Setup) -> dict[str, Any]:
    """Bounds of the instance, and the pure reference execution of rec_route beside the run."""
    return theory_m2o(setup, _rec_extra)


def _theory(setup: Setup) -> dict[str, Any]:
    return theory_m2o(setup)


GREEDY = Scheme(
    name="m2o-greedy",
    summary="many-to-one baseline: dimension-order shortest paths, FIFO (or farthest-first) per out-port",
    source=SOURCE,
    node=GreedyNode,
    reporter=M2OReporter,
    prepare=lambda t, p, ld: prepare_instance(t, p, "m2o-greedy", power_of_two=False),
    theory=_theory,
    params=(*_COMMON, Param("order", str, "fifo", "queue discipline per out-port", ("fifo", "farthest-first"))),
    topologies=_MESH,
    until="quiescent",
    faults=None,  # every kind: see the module docstring
)

REC = Scheme(
    name="m2o-rec",
    summary="rec_route of §4: local recursive routing in time O(D + W log D), buffers O(log D)",
    source=SOURCE,
    node=RecNode,
    reporter=M2OReporter,
    prepare=lambda t, p, ld: prepare_instance(t, p, "m2o-rec", power_of_two=True),
    theory=_theory_rec,
    # the delays, queues and times beside the run come from rec_route executed centrally
    # (reference_run), not from a formula: the paper gives only their orders (Theorems 1.1-1.3)
    theory_label="reference run",
    params=_COMMON,
    topologies=_MESH,
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=_WHY["m2o-rec"],
)

BFS = Scheme(
    name="m2o-bfs",
    summary="bfs_route of §5: load balancing, log D time-multiplexed distance classes (average delivery time)",
    source=SOURCE,
    node=BfsNode,
    reporter=M2OReporter,
    prepare=lambda t, p, ld: prepare_instance(t, p, "m2o-bfs", power_of_two=True),
    theory=_theory,
    params=_COMMON,
    topologies=_MESH,
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=_WHY["m2o-bfs"],
)

def _prepare_offline(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    """CENTRALISED: the instance, then the §3 schedule of the whole of it, split into per-node plans."""
    out = prepare_instance(topology, params, "m2o-offline", power_of_two=False)
    inst = instance_of(topology, out)
    plans, length = node_plans(inst)
    expected = [0] * inst.n_nodes
    for p in plans:
        for _, src, _, last in p:
            if last:
                expected[out["dest"][src]] += 1
    return {**out, "plan": plans, "expected": expected, "offline_length": length}


def _theory_offline(setup: Setup) -> dict[str, Any]:
    """Bounds of the instance, and the planned schedule's own T_loc beside the run."""
    return theory_m2o(setup, lambda inst: {"completion_time": setup.params["offline_length"]})


OFFLINE = Scheme(
    name="m2o-offline",
    summary="CENTRALISED: the offline §3 schedule (max-flow paths, Theorem 3.1) replayed by the nodes",
    source=SOURCE,
    node=OfflineNode,
    reporter=M2OReporter,
    prepare=_prepare_offline,
    theory=_theory_offline,
    theory_label="plan",  # completion_time beside the run is the §3 schedule's own length
    params=_COMMON,
    topologies=_MESH,
    until="quiescent",
    faults=NO_FAULTS,
    faults_why=_WHY["m2o-offline"],
)

SCHEMES = (GREEDY, REC, BFS, OFFLINE)
