"""The shard's per-slot moves of pending pairs (``take_remote``, ``add_pairs``), against a plain reading."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.fabric._errors import FabricError
from slotnet.fabric._transport import add_pairs, take_remote

N, SHARDS = 24, 3
BLOCK = N // SHARDS


@st.composite
def _touched(draw: st.DrawFn) -> tuple[list[int], list[list[bytes] | None]]:
    receivers = draw(st.lists(st.integers(0, N - 1), unique=True))
    pending: list[list[bytes] | None] = [None] * N
    for r in receivers:
        pending[r] = [bytes([r, k]) for k in range(draw(st.integers(1, 3)))]
    return receivers, pending


@settings(max_examples=60, deadline=None)
@given(_touched(), st.integers(0, SHARDS - 1))
def test_take_remote_moves_other_blocks_pairs_out_in_touched_order(case: tuple, shard: int) -> None:
    """Other blocks' receivers leave ``pending`` and ``touched`` (same list object) as flat
    ``[r, pairs, ...]`` per shard in touched order; this block's stay, and the counts add up."""
    receivers, pending = case
    touched = list(receivers)
    before = [None if p is None else list(p) for p in pending]
    lo, hi = shard * BLOCK, (shard + 1) * BLOCK
    same = touched
    remote, local, taken = take_remote(pending, touched, lo, hi, BLOCK, SHARDS)
    assert touched is same and touched == [r for r in receivers if lo <= r < hi]
    expect: list[list[object]] = [[] for _ in range(SHARDS)]
    for r in receivers:
        if not lo <= r < hi:
            expect[r // BLOCK] += [r, before[r]]
    assert remote == expect
    assert local == sum(len(before[r]) for r in touched)
    assert taken == sum(len(before[r]) for r in receivers if not lo <= r < hi)
    assert all((pending[r] is None) != (lo <= r < hi) for r in receivers)


@settings(max_examples=60, deadline=None)
@given(_touched(), _touched())
def test_add_pairs_joins_a_frame_to_what_is_pending(mine: tuple, theirs: tuple) -> None:
    """A frame's pairs extend a receiver's pending list or start one (touching it once); the
    count returned is the number of pairs added."""
    receivers, pending = mine
    touched = list(receivers)
    frame: list[object] = []
    for r in theirs[0]:
        frame += [r, list(theirs[1][r])]
    expect = {r: list(pending[r] or []) + list(theirs[1][r] or []) for r in set(receivers) | set(theirs[0])}
    added = add_pairs(pending, touched, frame, 0, N)
    assert added == sum(len(theirs[1][r]) for r in theirs[0])
    assert {r: pending[r] for r in expect} == expect
    assert sorted(touched) == sorted(expect) and len(touched) == len(set(touched))


def test_add_pairs_refuses_a_receiver_of_another_block() -> None:
    """A pair for a node outside the block is a FabricError naming the node."""
    pending: list[list[bytes] | None] = [None] * N
    with pytest.raises(FabricError, match="node 9, hosted elsewhere"):
        add_pairs(pending, [], [9, [b"x"]], 0, BLOCK)
