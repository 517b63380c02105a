"""bcast-indirect's reporter merged across shards: the sends stalls took add up as in one process."""

from __future__ import annotations

from slotnet import RunSpec
from slotnet.fabric import decode, encode
from slotnet.schemes.broadcast.indirect import IndirectReporter


def test_sends_missed_while_stalled_merge_to_the_one_process_count():
    """Each shard's ``overdue`` events (sends a stall took) merge to the one-process total and
    invariant, the other books merging as the kit's."""
    setup = RunSpec("bcast-indirect", "hypercube:2", load={"rho": 0.5}, slots=10).prepare().setup
    events = [(0, 3, 2), (1, 3, 1), (3, 4, 4)]  # (node, slot, sends)
    one = IndirectReporter(setup)
    for node, slot, sends in events:
        one.handlers()["overdue"](node, slot, sends)
    shards = [IndirectReporter(setup) for _ in range(2)]
    for j, r in enumerate(shards):
        r.shard_start(range(2 * j, 2 * j + 2))
    for node, slot, sends in events:
        shards[node // 2].handlers()["overdue"](node, slot, sends)
    merged = IndirectReporter(setup)
    merged.merge_shards([decode(encode(r.shard_state())) for r in shards])
    args = ({}, [], [0] * 4)
    assert merged.missed_sends == one.missed_sends == 7
    assert merged.invariants(*args) == one.invariants(*args)
