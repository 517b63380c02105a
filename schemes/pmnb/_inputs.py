"""What the schemes of Varvarigos & Bertsekas share on the prepare side (no network).

Time. The paper counts time in units in which a packet crosses a link; a prefix step
takes t_p (0 < t_p <= 1, §4.1 Phase 1), a mini-packet 1/d (§4.1, Theorem 6) and, halved
for the two directions of a ring, 1/(2d) (Lemma 1 via the Remark after Theorem 2). The
fabric runs on ticks of ``1/q`` unit; a message of size s holds its link for ``s q``
ticks, so every duration is exact when q is a common multiple of the denominators of
t_p and of the piece sizes. :func:`quantum_for` returns the least such q and refuses
t_p values whose exact denominator would need more than :data:`MAX_QUANTUM` ticks per
unit (e.g. 0.123457): rounding t_p instead would change the bounds being checked.

Inputs. Every task starts at time 0 with each node knowing only its own part of it:
whether it is active (``--param active=M placement=...``; :func:`active_ids`,
:func:`is_active`), for monotone routing the target list ``v^(0) < ... < v^(K-1)``
indexed by rank (:func:`prepare_routing`), for array-broadcast how many packets it
holds. A scheme's ``prepare`` reads its ``--param`` values once, as a :class:`Given`,
and returns its nodes' parameters as one of the family's frozen records
(:class:`PmnbInputs`, :class:`RoutingInputs`, :class:`ScanInputs`,
:class:`ExchangeInputs`, :class:`DynamicInputs`, :class:`ArrayInputs`) inside an
:class:`~slotnet.schemes.Inputs` with the quantum. One name means one thing across the
family: ``active`` is the parameter M (a count) in :class:`Given` and the sorted ids of
the active nodes in every node record (``n_active``: their number, where a scheme
keeps it). The placement is drawn here, once per run: ``prepare`` does not see the run's
``--seed``, so ``placement=random`` draws from its own seed ``placement_seed`` (node
RNGs, e.g. prefix-scan's ``values=random``, follow ``--seed``); one seed places the same
nodes for every scheme of the family.

Faults. Every scheme of this package runs under every fault kind. ``array-broadcast``'s
greedy rule has no schedule (a node forwards what comes and inserts its own when nothing
comes), so its reporter charges each lost reception to the fault that destroyed it
(:mod:`.array_broadcast`). The others are *fixed schedules* in the sense of the paper's
§2 model (reliable synchronous links, no acknowledgement or retransmission): how their
nodes meet a message a fault destroys, copies or moves, and how the damage is reported,
is :mod:`._offschedule`.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from .._base import Claim, Inputs, Param, SchemeError, Setup
from ._placement import PLACEMENTS, place

__all__ = [
    "completion_claims",
    "ACTIVE",
    "ArrayInputs",
    "DynamicInputs",
    "ExchangeInputs",
    "Given",
    "PmnbInputs",
    "RoutingInputs",
    "ScanInputs",
    "MAX_QUANTUM",
    "PLACEMENT",
    "PLACEMENT_SEED",
    "SOURCE",
    "TOLERANCE",
    "TP",
    "active_ids",
    "check_grid",
    "equal_side",
    "is_active",
    "parse_tp",
    "placement_rng",
    "prepare_routing",
    "quantum_for",
    "safety_cap",
    "tp_fraction",
    "tp_ticks",
]

SOURCE = ("Varvarigos & Bertsekas, Partial multinode broadcast and partial exchange algorithms "
          "for d-dimensional meshes")

#: Largest time quantum (ticks per paper unit) a scheme asks for: idle ticks cost the driver a
#: few microseconds each. 1024 admits t_p = 1/1024.
MAX_QUANTUM = 1024

#: How far a float t_p may lie from the fraction it is read as.
TOLERANCE = Fraction(1, 10**9)


# --------------------------------------------------------------------------------------
# time: t_p and the quantum


#: A one-shot run given no slot count stops (reported incomplete) at this many times its
#: theorem's bound on the completion time.
CAP_FACTOR = 4


def safety_cap(theory: Callable[[Setup], Mapping[str, Any]], *keys: str) -> Callable[[Any, Inputs[Any]], int]:
    """A scheme's ``max_slots``: :data:`CAP_FACTOR` times the largest of its theory's bounds
    ``keys`` (paper time units, converted to ticks at the run's quantum).

    Example:
        >>> from slotnet.fabric import parse_topology
        >>> cap = safety_cap(lambda setup: {"upper_bound": 7.5}, "upper_bound")
        >>> cap(parse_topology("mesh:4x4"), Inputs(None, quantum=8))
        240
    """
    def max_slots(topology: Any, inputs: Inputs[Any]) -> int:
        q = inputs.quantum
        bounds = theory(Setup(topology, inputs.params, {}, 1, 0, 0, q))
        worst = max(float(bounds[k]) for k in keys)
        return CAP_FACTOR * math.ceil(worst * q)
    return max_slots


def tp_fraction(tp: float | str | Fraction) -> Fraction:
    """t_p as an exact fraction with a denominator of at most :data:`MAX_QUANTUM`.

    Accepts ``0.125``, ``"1/8"`` or a Fraction; a float is read as the nearest such
    fraction, which must lie within :data:`TOLERANCE` of it (so ``1/3`` as a float is 1/3).

    Raises:
        SchemeError: t_p outside (0, 1], or one that needs a finer quantum.

    Example:
        >>> tp_fraction(0.125), tp_fraction("1/3"), tp_fraction(1 / 3)
        (Fraction(1, 8), Fraction(1, 3), Fraction(1, 3))
    """
    try:
        if isinstance(tp, bool):
            raise TypeError
        exact = Fraction(tp) if isinstance(tp, (str, Fraction)) else Fraction(str(float(tp)))
    except (TypeError, ValueError, ZeroDivisionError):
        raise SchemeError(f"--param tp={tp!r}: expected a number in (0, 1] such as 0.125 or 1/8") from None
    if not 0 < exact <= 1:
        raise SchemeError(f"--param tp={tp!r}: t_p must be in (0, 1] (§4.1: a prefix step is at most a packet time)")
    near = exact.limit_denominator(MAX_QUANTUM)
    if abs(near - exact) > TOLERANCE:
        raise SchemeError(
            f"--param tp={tp!r}: t_p = {float(exact):g} is a multiple of 1/{exact.denominator} only, which needs "
            f"{exact.denominator} ticks per time unit (at most {MAX_QUANTUM}); use t_p = k/n with n <= {MAX_QUANTUM}"
        )
    return near


def parse_tp(text: str | float) -> float:
    """The ``tp`` parameter's converter: ``"0.125"`` or ``"1/8"`` -> 0.125 (checked)."""
    return float(tp_fraction(text))


def quantum_for(tp: float | None, *pieces: int) -> int:
    """Least ticks per unit that make t_p and the pieces ``1/n`` (``n`` in ``pieces``) whole.

    Raises:
        SchemeError: if that quantum exceeds :data:`MAX_QUANTUM`.

    Example:
        >>> quantum_for(0.125, 6), quantum_for(None, 4), quantum_for(0.1), quantum_for(1 / 1024, 4)
        (24, 4, 10, 1024)
    """
    q = 1
    for n in pieces:
        q = math.lcm(q, int(n))
    if tp is not None:
        q = math.lcm(q, tp_fraction(tp).denominator)
    if q > MAX_QUANTUM:
        with_pieces = f" with pieces 1/{', 1/'.join(map(str, pieces))}" if pieces else ""
        raise SchemeError(f"t_p={tp!r}{with_pieces} needs {q} ticks per time unit (at most {MAX_QUANTUM}); "
                          "choose t_p with a smaller denominator")
    return q


def tp_ticks(tp: float, q: int) -> int:
    """t_p in ticks of the quantum q.

    Raises:
        SchemeError: if t_p is no whole number (>= 1) of ticks at q.
    """
    a = round(tp * q)
    if abs(a - tp * q) > 1e-9 or a < 1:
        raise SchemeError(f"t_p={tp!r} is not a whole number of ticks at quantum {q}")
    return a


# --------------------------------------------------------------------------------------
# parameters and shape checks

TP = Param("tp", parse_tp, 0.125, "t_p, one prefix step in packet times, 0 < t_p <= 1 (0.125 or 1/8; exact via the quantum)")
ACTIVE = Param("active", int, None, "M, the number of active nodes (default ceil(N/4); N: every node, for pmnb the full MNB)")
PLACEMENT = Param("placement", str, "random", "where the active nodes are: random, corner (Fig. 3) or spread", PLACEMENTS)
PLACEMENT_SEED = Param("placement_seed", int, 0, "seed of placement=random (the run's --seed drives the node RNGs)")


@dataclass(frozen=True, slots=True)
class Given:
    """The ``--param`` values a scheme of the family was given, parsed (each scheme declares
    some of them; the others keep these defaults, which are the family's declared ones).

    Example:
        >>> Given.of({"tp": 0.25, "active": 3}).active, Given().placement
        (3, 'random')
    """

    #: t_p, one prefix step in packet times
    tp: float = 0.125
    #: M, the number of active nodes; None: ceil(N/4)
    active: int | None = None
    #: where the active nodes (array-broadcast: the packets) are
    placement: str = "random"
    #: seed of ``placement=random``
    placement_seed: int = 0
    #: monotone: where the targets are
    targets: str = "random"
    #: packing, monotone: ``prefix`` (ranks by the scan) or ``given``
    rank: str = "prefix"
    #: pmnb: mini-packets on d classes; array-broadcast: ring halves
    split: bool = True
    #: prefix-scan: ``random`` or ``rank`` inputs
    values: str = "random"
    #: prefix-scan: ``tree`` or ``line``
    variant: str = "tree"
    #: array-broadcast: K, the number of packets; None: p
    packets: int | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Given:
        """The record of a scheme's parsed parameters (the names its ``Param`` records declare)."""
        return cls(**params)


@dataclass(frozen=True, slots=True)
class PmnbInputs:
    """What a ``pmnb`` node knows: t_p, the schedule (``split``) and the active set."""

    tp: float
    split: bool
    #: the active node ids, sorted
    active: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RoutingInputs:
    """What a ``packing`` / ``monotone`` node knows (``task`` names the scheme)."""

    task: str
    tp: float
    #: ``prefix``: ranks by the §4.1 scan first; ``given``: known at time 0
    rank: str
    #: the active node ids, sorted
    active: tuple[int, ...]
    #: monotone: the target ids ``v^(0) < ... < v^(M-1)`` by rank; packing: empty
    targets: list[int]


@dataclass(frozen=True, slots=True)
class ScanInputs:
    """What a ``prefix-scan`` node knows."""

    tp: float
    #: ``random`` (each node's own RNG) or ``rank`` (1 on active nodes)
    values: str
    #: ``tree`` (§4.1) or ``line`` (§5)
    variant: str
    #: the active node ids, sorted (empty unless ``values`` is ``rank``)
    active: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ExchangeInputs:
    """What a ``partial-exchange`` node knows."""

    tp: float
    #: t_p in ticks of the quantum
    tp_ticks: int
    #: the active node ids, sorted
    active: tuple[int, ...]
    #: M, their number
    n_active: int


@dataclass(frozen=True, slots=True)
class DynamicInputs:
    """What a ``dynamic-broadcast`` node knows, and the model's constants."""

    tp: float
    #: t_p in ticks of the quantum
    tp_ticks: int
    #: requests per node per time unit, and the load (12) they make
    lam: float
    rho: float
    #: X and V of (9), (10)
    x: float
    v: float
    #: the stability limit (14)
    stability_limit: float


@dataclass(frozen=True, slots=True)
class ArrayInputs:
    """What an ``array-broadcast`` node knows."""

    #: K, the number of packets
    packets: int
    #: the node of each packet, and each node's count of them
    sources: list[int]
    counts: list[int]
    #: on a ring, every packet split in two halves, one per direction
    halves: bool


def check_grid(topology: Any, scheme: str) -> tuple[tuple[int, ...], bool]:
    """``(sides, wrap)`` of a mesh or torus.

    Raises:
        SchemeError: on any other topology.
    """
    if topology.kind not in ("mesh", "torus"):
        raise SchemeError(f"{scheme} runs on mesh: (arrays) and torus: topologies, not {topology.spec}")
    return tuple(topology.sides), topology.kind == "torus"


def equal_side(sides: Sequence[int], what: str) -> int:
    """The common side p of a p^d mesh (for the schemes and for the theory alike).

    Raises:
        SchemeError: (a ValueError) if the sides differ; ``what`` names the scheme or the
            result that needs p^d, and why.

    Example:
        >>> equal_side((4, 4, 4), "Theorem 6")
        4
    """
    s = tuple(sides)
    if len(set(s)) != 1:
        raise SchemeError(f"{what} is stated for a p^d mesh (equal sides), got sides {s}")
    return s[0]


def placement_rng(given: Given, stream: str) -> random.Random:
    """The RNG of ``placement=random`` (and of monotone targets), from ``placement_seed``.

    Raises:
        SchemeError: if ``placement_seed`` is not an integer >= 0.
    """
    seed = given.placement_seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SchemeError(f"--param placement_seed={seed!r}: expected an integer >= 0")
    return random.Random(f"varvarigos-{stream}:{seed}")


def active_ids(sides: Sequence[int], given: Given) -> tuple[int, ...]:
    """The active node ids (sorted): ``active=M`` nodes (None: ceil(N/4)) placed by ``placement``.

    ``random`` draws from its own stream of the ``placement_seed`` parameter, so one
    seed places the same nodes for every scheme of the family: a scheme's ``prepare``
    does not see the run's seed, and the theory must see the set.

    Raises:
        SchemeError: on an M outside 0..N, an unknown placement or a bad seed.
    """
    n = math.prod(sides)
    m = given.active
    if m is None:
        m = math.ceil(n / 4)
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m <= n:
        raise SchemeError(f"--param active={m!r}: expected an integer in 0..{n} (the number of active nodes)")
    if given.placement not in PLACEMENTS:
        raise SchemeError(f"--param placement={given.placement!r}: one of {', '.join(PLACEMENTS)}")
    return place(given.placement, sides, m, placement_rng(given, "active"))


def is_active(node: int, active: Sequence[int]) -> bool:
    """Whether ``node`` is in the sorted ids ``active`` (all a node reads of the active set)."""
    i = bisect.bisect_left(active, node)
    return i < len(active) and active[i] == node


def prepare_routing(topology: Any, params: Mapping[str, Any], load: Mapping[str, float], task: str) -> Inputs[RoutingInputs]:
    """Node parameters of ``packing`` / ``monotone`` (``task``): the active set, the targets, the quantum."""
    given = Given.of(params)
    sides, _wrap = check_grid(topology, task)
    active = active_ids(sides, given)
    targets: list[int] = []
    if task == "monotone":
        targets = list(place(given.targets, sides, len(active), placement_rng(given, "targets")))
    q = quantum_for(given.tp) if given.rank == "prefix" else 1
    return Inputs(RoutingInputs(task, given.tp, given.rank, active, targets), quantum=q)


def completion_claims(th: Mapping[str, Any], exact: Sequence[str] = (), upper: Sequence[str] = ()) -> list[Claim]:
    """The claims of a one-shot scheme's theory: its ``upper_bound`` and ``lower_bound`` on
    ``completion_time`` (the theorem and the placement's cut and distance bounds, named by
    the theory's ``which`` / ``lower_which``); ``exact``: keys whose value is the
    deterministic schedule's own time for the metric of the same name (the scans, the
    oblivious routing steps); ``upper``: keys that bound the metric of the same name.
    Every value holds for any fault-free run (no horizon: nothing here is a steady state)."""
    out = []
    if "upper_bound" in th:
        out.append(Claim("upper_bound", "completion_time", "upper-bound", why=str(th.get("which", ""))))
    if "lower_bound" in th:
        out.append(Claim("lower_bound", "completion_time", "lower-bound", why=str(th.get("lower_which", ""))))
    out += [Claim(k, k, "exact", why="the deterministic schedule's own time") for k in exact if k in th]
    out += [Claim(k, k, "upper-bound", why="the phase's bound (its schedule's length)") for k in upper if k in th]
    return out
