"""Per-node random streams derived from (seed, node id, incarnation).

Each node owns a :class:`random.Random` (a :class:`NodeRandom`) seeded through NumPy's
``SeedSequence``, so streams of different nodes are independent and a node's stream does
not depend on task scheduling, on the transport, or on which process hosts the node.
"""

from __future__ import annotations

import random

import numpy as np

__all__ = ["NodeRandom", "node_rng", "node_seed"]


class NodeRandom(random.Random):
    """A :class:`random.Random` without an instance dict: the one attribute the class sets
    (``gauss_next``) has a slot. The dict would be about 300 bytes a node; the draws are
    ``random.Random``'s own, bit for bit."""

    __slots__ = ("gauss_next",)


def node_seed(seed: int, node: int, incarnation: int = 0) -> int:
    """A 128-bit integer seed for ``node``'s stream (``incarnation`` counts restarts)."""
    words = np.random.SeedSequence(entropy=seed, spawn_key=(node, incarnation)).generate_state(4)
    return int(words[0]) | int(words[1]) << 32 | int(words[2]) << 64 | int(words[3]) << 96


def node_rng(seed: int, node: int, incarnation: int = 0) -> random.Random:
    """The node's own random stream."""
    return NodeRandom(node_seed(seed, node, incarnation))
