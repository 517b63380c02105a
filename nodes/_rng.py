"""Per-node random streams derived from (seed, node id, incarnation).

A run chooses its nodes' generator (``RunSpec.rng``, ``--rng``; :data:`RNG_KINDS`):

* ``"philox"`` (the default, :data:`DEFAULT_RNG`): each node owns a
  :class:`~._philox.PhiloxStream`, Philox4x32-10 words under one key of the run
  (:func:`philox_key`: ``SeedSequence`` of the seed with the one-word spawn key
  :data:`PHILOX_SPAWN_KEY`, so never an MT node's seed) and a counter that holds the node
  and its incarnation. A few C integers a node: the counter-based generator of Salmon et
  al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11), made for many independent
  streams;
* ``"mt"``: each node owns a :class:`random.Random` (a :class:`NodeRandom`, the Mersenne
  Twister, 2.5 KiB of state a node) seeded through NumPy's ``SeedSequence`` with the spawn
  key ``(node, incarnation)``. The default of earlier versions: ``--rng mt`` reruns a
  result they drew.

Either way streams of different nodes are independent, and a node's stream does not
depend on task scheduling, on the transport, or on which process hosts the node. Both
satisfy :class:`NodeStream`, the type of ``ctx.rng``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, MutableSequence, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from ._philox import PhiloxStream

__all__ = ["DEFAULT_RNG", "PHILOX_SPAWN_KEY", "RNG_KINDS", "NodeRandom", "NodeStream", "PhiloxStreams", "SeedTable", "node_rng",
           "node_seed", "node_seeds", "philox_key", "run_streams"]

#: The nodes' generators a run may choose: the Mersenne Twister or Philox4x32-10.
RNG_KINDS = ("mt", "philox")

#: The generator a run draws from unless it names another (``RunSpec.rng``, ``--rng``):
#: Philox4x32-10, a few bytes a node where the Twister keeps 2.5 KiB, at about the same cost
#: per draw.
DEFAULT_RNG = "philox"

#: The spawn key under which the run's philox key is drawn from its seed ("philox" in
#: ASCII, truncated to a 32-bit word): one word, where an MT node's spawn key has two.
PHILOX_SPAWN_KEY = (0x7068696C,)

_T = TypeVar("_T")


class NodeStream(Protocol):
    """A node's random stream (``ctx.rng``): the draws of :class:`random.Random` a scheme uses.

    ``random.Random`` satisfies it (the default generator, ``--rng mt``), and so does the
    compact :class:`~._philox.PhiloxStream` (``--rng philox``). A scheme that draws only
    through these methods runs unchanged with either.
    """

    def random(self) -> float: ...
    def getrandbits(self, k: int) -> int: ...
    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int: ...
    def randint(self, a: int, b: int) -> int: ...
    def choice(self, seq: Sequence[_T]) -> _T: ...
    def shuffle(self, x: MutableSequence[Any]) -> None: ...
    def sample(self, population: Sequence[_T], k: int, *, counts: Iterable[int] | None = None) -> list[_T]: ...
    def uniform(self, a: float, b: float) -> float: ...
    def gauss(self, mu: float = 0.0, sigma: float = 1.0) -> float: ...
    def normalvariate(self, mu: float = 0.0, sigma: float = 1.0) -> float: ...
    def expovariate(self, lambd: float) -> float: ...


class NodeRandom(random.Random):
    """A :class:`random.Random` without an instance dict: the one attribute the class sets
    (``gauss_next``) has a slot. The dict would be about 300 bytes a node; the draws are
    ``random.Random``'s own, bit for bit."""

    __slots__ = ("gauss_next",)


def node_seed(seed: int, node: int, incarnation: int = 0) -> int:
    """A 128-bit integer seed for ``node``'s stream (``incarnation`` counts restarts)."""
    words = np.random.SeedSequence(entropy=seed, spawn_key=(node, incarnation)).generate_state(4)
    return int(words[0]) | int(words[1]) << 32 | int(words[2]) << 64 | int(words[3]) << 96


def node_rng(seed: int | SeedTable | PhiloxStreams, node: int, incarnation: int = 0) -> NodeStream:
    """The node's own random stream (``seed``: the run's, a table of its nodes' seeds, or
    the run's philox key)."""
    if type(seed) is not int:
        return seed.rng(node, incarnation)  # type: ignore[union-attr]
    return NodeRandom(node_seed(seed, node, incarnation))


def philox_key(seed: int) -> tuple[int, int]:
    """The run's philox key, two 32-bit words: ``SeedSequence(seed)`` under :data:`PHILOX_SPAWN_KEY`."""
    words = np.random.SeedSequence(entropy=seed, spawn_key=PHILOX_SPAWN_KEY).generate_state(2)
    return int(words[0]), int(words[1])


class PhiloxStreams:
    """The run's philox key, handed to the contexts in place of the seed (``--rng philox``):
    ``rng(node, incarnation)`` is the node's :class:`~._philox.PhiloxStream`."""

    __slots__ = ("seed", "key")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.key = philox_key(seed)

    def rng(self, node: int, incarnation: int) -> PhiloxStream:
        """The stream of ``node``'s ``incarnation``."""
        return PhiloxStream(self.key, node, incarnation)


def run_streams(seed: int, kind: str, nodes: range | None = None) -> int | SeedTable | PhiloxStreams:
    """What a run hands its contexts to make their streams: ``kind`` (one of :data:`RNG_KINDS`)
    ``"philox"``: the run's key; ``"mt"``: a table of the seeds of ``nodes`` (a block of the
    local nodes), or the seed itself where ``nodes`` is None.

    Raises:
        ValueError: ``kind`` is none of :data:`RNG_KINDS`.
    """
    if kind == "philox":
        return PhiloxStreams(seed)
    if kind != "mt":
        raise ValueError(f"rng must be one of {', '.join(map(repr, RNG_KINDS))}, got {kind!r}")
    return SeedTable(seed, nodes) if nodes is not None else seed


class SeedTable:
    """The first incarnation's seeds of a block of nodes, made at once (:func:`node_seeds`).

    A network hands it to its contexts in place of the run's seed: a node's stream is
    then made from its row (16 bytes a node) instead of its own ``SeedSequence``, the
    same stream at a small fraction of the cost. Other nodes and later incarnations are
    seeded node by node.
    """

    __slots__ = ("seed", "start", "_words")

    def __init__(self, seed: int, nodes: range) -> None:
        self.seed = seed
        self.start = nodes.start if nodes.step == 1 else 0
        block = nodes if nodes.step == 1 else range(0)
        self._words = node_seeds(seed, np.arange(block.start, block.stop, dtype=np.uint64))

    def rng(self, node: int, incarnation: int) -> NodeRandom:
        """The stream of ``node``'s ``incarnation``: ``node_rng(seed, node, incarnation)``."""
        i = node - self.start
        if incarnation == 0 and 0 <= i < len(self._words):
            return NodeRandom(int.from_bytes(self._words[i].tobytes(), "little"))
        return NodeRandom(node_seed(self.seed, node, incarnation))


# -- many nodes' seeds at once ---------------------------------------------------------------
# NumPy's SeedSequence (numpy/random/bit_generator.pyx: its pool of 4 words, hashmix and
# mix), computed for a block of nodes at once: every node's entropy differs only in its
# spawn key, and the hash constants evolve the same for all of them, so each step is one
# array operation over the block. ``node_seeds`` gives exactly what ``node_seed`` gives
# node by node (tests/unit/nodes/test_rng_bulk.py), at a small fraction of the time.
_POOL = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_M32 = 0xFFFFFFFF


def _words(value: int) -> list[int]:
    """An int's 32-bit words, least significant first (SeedSequence's coercion; 0 is one word)."""
    words = []
    while True:
        words.append(value & _M32)
        value >>= 32
        if not value:
            return words


def node_seeds(seed: int, nodes: np.ndarray, incarnation: int = 0) -> np.ndarray:
    """``node_seed(seed, v, incarnation)`` for every ``v`` of ``nodes`` (below 2**32): an
    array of shape ``(len(nodes), 4)`` of the seed's 32-bit words, least significant first."""
    run = _words(seed)
    run += [0] * (_POOL - len(run))  # a spawn key pads the run's entropy to the pool's size
    n = len(nodes)
    # the entropy words: the run's (the same for every node), then the spawn key's
    entropy = [np.full(n, w, dtype=np.uint64) for w in run]
    entropy += [np.asarray(nodes, dtype=np.uint64)] + [np.full(n, w, dtype=np.uint64) for w in _words(incarnation)]
    hash_const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        value = (value ^ hash_const) & _M32
        hash_const = hash_const * _MULT_A & _M32
        value = value * hash_const & _M32
        return value ^ value >> _XSHIFT

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = (_MIX_L * x + (_M32 + 1 - _MIX_R) * y) & _M32  # L·x − R·y modulo 2**32, without a negative
        return result ^ result >> _XSHIFT

    mixer = [hashmix(entropy[i]) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                mixer[dst] = mix(mixer[dst], hashmix(mixer[src]))
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            mixer[dst] = mix(mixer[dst], hashmix(entropy[src]))
    out = np.empty((n, _POOL), dtype=np.uint32)
    hash_b = _INIT_B
    for i in range(_POOL):
        value = (mixer[i] ^ hash_b) & _M32
        hash_b = hash_b * _MULT_B & _M32
        value = value * hash_b & _M32
        out[:, i] = value ^ value >> _XSHIFT
    return out
