"""A block's node seeds computed at once are NumPy's SeedSequence seeds, node by node."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.nodes._rng import SeedTable, node_rng, node_seed, node_seeds


@given(st.integers(0, 2**160), st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=8),
       st.integers(0, 2**40))
@settings(max_examples=80, deadline=None)
def test_bulk_seeds_are_seedsequence_seeds(seed, nodes, incarnation):
    """node_seeds gives, row by row, node_seed's 128-bit seed (any run seed, node id and incarnation)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning: the words wrap on purpose
        rows = node_seeds(seed, np.array(nodes, dtype=np.uint64), incarnation)
    assert rows.shape == (len(nodes), 4)
    for v, row in zip(nodes, rows):
        assert int.from_bytes(row.tobytes(), "little") == node_seed(seed, v, incarnation)


@given(st.integers(0, 2**64), st.integers(0, 50), st.integers(1, 40), st.integers(0, 3))
@settings(max_examples=30, deadline=None)
def test_a_seed_table_gives_every_node_its_own_stream(seed, start, size, incarnation):
    """A context given a table draws exactly the stream the run's seed gives it, inside the block or not."""
    table = SeedTable(seed, range(start, start + size))
    for v in (start, start + size - 1, start + size, max(start - 1, 0)):
        assert node_rng(table, v, incarnation).random() == node_rng(seed, v, incarnation).random()
