"""What the many-to-one schemes share on the prepare side: params, instance parsing, checks, faults.

Every scheme reads its instance once, in ``prepare``: from ``--param instance=FILE``
(:func:`.instances.load_instance`) or, without a file, from ``--param workload=...``
(:func:`.instances.parse_workload`) drawn with ``random.Random(seed)`` where ``seed`` is
``--param seed=S`` (``prepare`` does not see the run's ``--seed``, which drives the node
RNGs; none of these schemes draws from them). The node parameters hold the instance as
``dest``: per node id, the destination of the packet it is the source of, or -1. A node
reads only its own entry ``dest[ctx.node]`` (§2: a node knows its own packet), never
another node's.

Faults. Every scheme runs under every fault kind. §2's model has reliable, synchronous
links and every packet exists exactly once, unacknowledged: ``m2o-offline`` replays the
§3 schedule in which each node expects a packet at a planned step, ``m2o-rec`` runs §4's
invocations in windows every node computes from the instance (Lemma 4.3's common
return), and ``m2o-bfs`` time-multiplexes §5's distance classes in fixed phases. A
message a fault destroys, copies or delays leaves a node waiting at a step for a packet
that is not there, or holding one the plan has no place for; ``m2o-greedy`` has no
schedule to break (:mod:`.greedy`), and the other three handle each such surprise
locally (:mod:`._engine`: the node goes on with what it has, strands what it cannot
place, never raises), while the reporter books every packet and reports the damage
(:mod:`.reporter`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any

from .._base import Inputs, Param, SchemeError
from .instances import Instance, load_instance, make_instance, parse_workload

__all__ = [
    "CAP_FACTOR",
    "COMMON_PARAMS",
    "INSTANCE",
    "MESH",
    "SEED",
    "SOURCE",
    "WORKLOAD",
    "check_mesh",
    "instance_of",
    "prepare_instance",
    "record_fields",
    "safety_cap",
    "workload_text",
]


def workload_text(text: str) -> str:
    """A ``--param workload=`` value, checked for its syntax (the mesh is checked in prepare)."""
    parse_workload(text)
    return text


INSTANCE = Param("instance", str, None, "JSON file {\"packets\": [[source, destination], ...]} (coordinates); "
                                        "overrides workload")
WORKLOAD = Param("workload", workload_text, "all-to-one",
                 "generator: all-to-one[:node=X,Y], hotspots:k=K, uniform, region:lo=..;hi=.., bounded:r=R "
                 "(each with ;fraction=F)")
SEED = Param("seed", int, 0, "seed of the workload generator (the run's --seed drives node RNGs, unused here)")
#: The params every scheme of the family takes.
COMMON_PARAMS = (INSTANCE, WORKLOAD, SEED)
SOURCE = "Y. Mansour and B. Patt-Shamir, Many-to-one packet routing on grids"
#: The topologies every scheme of the family runs on.
MESH = ("mesh",)


def check_mesh(topology: Any, scheme: str) -> tuple[int, ...]:
    """The sides of a mesh of dimension 1 to 3, any sides (rec_route and bfs_route split a
    side s into ⌈s/2⌉ and ⌊s/2⌋: :mod:`._embed`).

    Raises:
        SchemeError: on another topology kind or dimension.
    """
    if topology.kind != "mesh":
        raise SchemeError(f"{scheme} runs on mesh: topologies, not {topology.spec}")
    sides = tuple(int(s) for s in topology.sides)
    if not 1 <= len(sides) <= 3:
        raise SchemeError(f"{scheme} runs on meshes of dimension 1 to 3, not {topology.spec}")
    return sides


def prepare_instance(topology: Any, params: dict[str, Any], scheme: str) -> dict[str, Any]:
    """Node parameters with the instance: ``dest`` per node (-1: no packet), ``n_packets``.

    Raises:
        SchemeError: on a bad topology, a bad instance file (naming the file, the entry
            and the fault) or a workload that does not fit the mesh.
    """
    sides = check_mesh(topology, scheme)
    seed = params.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SchemeError(f"--param seed={seed!r}: expected an integer >= 0")
    try:
        if params.get("instance"):
            inst = load_instance(params["instance"], sides)
        else:
            inst = make_instance(str(params["workload"]), sides, random.Random(seed))
    except ValueError as exc:
        raise SchemeError(str(exc)) from None
    dest = [-1] * math.prod(sides)
    for s, d in inst.packets:
        dest[s] = d
    return {**params, "dest": dest, "n_packets": len(inst)}


#: A run given no slot count stops (reported incomplete) at this many times its scheme's
#: bound on the slot it ends by (as the pmnb family's cap: ``CAP_FACTOR`` times its bound).
CAP_FACTOR = 4


#: A scheme's bound on the slot its run ends by, from the instance and the node parameters.
Bound = Callable[[Instance, Mapping[str, Any]], float]


def safety_cap(bound: Bound) -> Callable[[Any, Inputs[Any]], int]:
    """A scheme's ``max_slots``: :data:`CAP_FACTOR` times ``bound(instance, node_params)``,
    the slot the scheme's own analysis says the run ends by (at least 1).

    Example:
        >>> from slotnet.fabric import parse_topology
        >>> cap = safety_cap(lambda inst, params: 2.5 * len(inst))
        >>> cap(parse_topology("mesh:2x2"), Inputs({"dest": [3, 3, -1, -1]}))
        20
    """
    def max_slots(topology: Any, inputs: Inputs[Any]) -> int:
        node_params = inputs.params
        return CAP_FACTOR * max(1, math.ceil(bound(instance_of(topology, node_params), node_params)))
    return max_slots


def record_fields(bound: Bound, params: tuple[Param, ...] = COMMON_PARAMS) -> dict[str, Any]:
    """The fields every scheme record of the family shares: the paper, the params, mesh
    topologies, a one-shot run until quiescence under every fault kind (see the module
    docstring), and the safety cap from the scheme's own bound (:func:`safety_cap`)."""
    return {"source": SOURCE, "params": params, "topologies": MESH, "until": "quiescent", "faults": None,
            "max_slots": safety_cap(bound)}


def instance_of(topology: Any, params: Mapping[str, Any]) -> Instance:
    """The instance of a run, rebuilt from its node parameters (observer side)."""
    dest = params["dest"]
    return Instance(tuple(int(s) for s in topology.sides), tuple((s, d) for s, d in enumerate(dest) if d >= 0))
