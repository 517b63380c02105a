"""Hypothesis strategies for generated networks (shared by the graph topology tests)."""

from __future__ import annotations

import random

from hypothesis import strategies as st

__all__ = ["connected_edges"]


@st.composite
def connected_edges(draw, max_nodes: int = 14) -> list[tuple[int, int]]:
    """A connected simple graph's links, shuffled, ids permuted, some listed twice or reversed."""
    n = draw(st.integers(2, max_nodes))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    label = list(range(n))
    rnd.shuffle(label)
    links = {tuple(sorted((label[v], label[rnd.randrange(v)]))) for v in range(1, n)}  # a spanning tree
    for _ in range(draw(st.integers(0, 2 * n))):
        u, v = rnd.sample(range(n), 2)
        links.add(tuple(sorted((u, v))))
    out = [(u, v) if rnd.random() < 0.5 else (v, u) for u, v in sorted(links)]
    rnd.shuffle(out)
    out += [(v, u) for u, v in rnd.sample(out, min(len(out), draw(st.integers(0, 3))))]  # repeats: the same link
    return out
