"""What the many-to-one schemes share on the prepare side: params, instance parsing, checks, faults.

Every scheme reads its instance once, in ``prepare``: from ``--param instance=FILE``
(:func:`.instances.load_instance`) or, without a file, from ``--param workload=...``
(:func:`.instances.parse_workload`) drawn with ``random.Random(seed)`` where ``seed`` is
``--param seed=S`` (``prepare`` does not see the run's ``--seed``, which drives the node
RNGs; none of these schemes draws from them). ``prepare`` reads the ``--param`` values
once, as a :class:`Given`, and the node parameters are a frozen record (:class:`M2OInputs`;
:class:`GreedyInputs` and :class:`OfflineInputs` add what those schemes' nodes know). It
holds the instance as ``dest``: per node id, the destination of the packet it is the
source of, or -1. A node reads only its own entry ``dest[ctx.node]`` (§2: a node knows its
own packet), never another node's.

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
from dataclasses import dataclass
from typing import Any

from .._base import Inputs, Param, SchemeError
from ..kit._completion import parked_when_done
from .instances import Instance, load_instance, make_instance, parse_workload

__all__ = [
    "CAP_FACTOR",
    "COMMON_PARAMS",
    "INSTANCE",
    "MESH",
    "Given",
    "GreedyInputs",
    "M2OInputs",
    "OfflineInputs",
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


@dataclass(frozen=True, slots=True)
class Given:
    """The ``--param`` values a scheme of the family was given, parsed (the defaults are the
    declared ones; ``order`` is m2o-greedy's alone).

    Example:
        >>> Given.of({"workload": "uniform", "seed": 3}).seed, Given().workload
        (3, 'all-to-one')
    """

    #: a JSON instance file; None: the workload
    instance: str | None = None
    workload: str = "all-to-one"
    #: seed of the workload generator
    seed: int = 0
    #: m2o-greedy's queue discipline: ``fifo`` or ``farthest-first``
    order: str = "fifo"

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Given:
        """The record of a scheme's parsed parameters (the names its ``Param`` records declare)."""
        return cls(**params)


@dataclass(frozen=True, slots=True)
class M2OInputs:
    """What a many-to-one node knows: the instance, of which it reads only its own entry."""

    #: per node id, the destination of the packet it is the source of, or -1
    dest: list[int]
    #: the number of packets
    n_packets: int


@dataclass(frozen=True, slots=True)
class GreedyInputs(M2OInputs):
    """m2o-greedy's nodes also know their queue discipline."""

    #: ``fifo`` or ``farthest-first``
    order: str


@dataclass(frozen=True, slots=True)
class OfflineInputs(M2OInputs):
    """m2o-offline's nodes also know their part of the centrally planned §3 schedule."""

    #: per node, its plan: ``(step, source, port, last)`` entries
    plan: list[Any]
    #: per node, the packets it expects to arrive for it
    expected: list[int]
    #: the planned schedule's length in steps
    offline_length: int


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


def prepare_instance(topology: Any, params: Mapping[str, Any], scheme: str) -> M2OInputs:
    """Node parameters with the instance: ``dest`` per node (-1: no packet), ``n_packets``.

    Raises:
        SchemeError: on a bad topology, a bad instance file (naming the file, the entry
            and the fault) or a workload that does not fit the mesh.
    """
    sides = check_mesh(topology, scheme)
    given = Given.of(params)
    seed = given.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SchemeError(f"--param seed={seed!r}: expected an integer >= 0")
    try:
        if given.instance:
            inst = load_instance(given.instance, sides)
        else:
            inst = make_instance(str(given.workload), sides, random.Random(seed))
    except ValueError as exc:
        raise SchemeError(str(exc)) from None
    dest = [-1] * math.prod(sides)
    for s, d in inst.packets:
        dest[s] = d
    return M2OInputs(dest, len(inst))


#: A run given no slot count stops (reported incomplete) at this many times its scheme's
#: bound on the slot it ends by (as the pmnb family's cap: ``CAP_FACTOR`` times its bound).
CAP_FACTOR = 4


#: A scheme's bound on the slot its run ends by, from the instance and the node parameters.
Bound = Callable[[Instance, Any], float]


def safety_cap(bound: Bound) -> Callable[[Any, Inputs[Any]], int]:
    """A scheme's ``max_slots``: :data:`CAP_FACTOR` times ``bound(instance, node_params)``,
    the slot the scheme's own analysis says the run ends by (at least 1).

    Example:
        >>> from slotnet.fabric import parse_topology
        >>> cap = safety_cap(lambda inst, params: 2.5 * len(inst))
        >>> cap(parse_topology("mesh:2x2"), Inputs(M2OInputs([3, 3, -1, -1], 2)))
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
    return {"source": SOURCE, "params": params, "topologies": MESH, "until": "quiescent", "done": parked_when_done, "faults": None,
            "max_slots": safety_cap(bound)}


def instance_of(topology: Any, params: M2OInputs) -> Instance:
    """The instance of a run, rebuilt from its node parameters (observer side)."""
    dest = params.dest
    return Instance(tuple(int(s) for s in topology.sides), tuple((s, d) for s, d in enumerate(dest) if d >= 0))
