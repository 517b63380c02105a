"""The kit's broadcast reporter merged across shards gives the one-process result, bit for bit.

A sharded broadcast run (``bcast-simple``, ``bcast-balanced``, ``bcast-dtree``: the kit's
:class:`~slotnet.schemes.kit.BroadcastReporter`; ``bcast-indirect``, ``bcast-periodic``: its
subclasses) reports on its shards, the verdict's
missed-broadcast rule included: for any shard count and any fault schedule, every figure of
the result equals the one-process run's.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec
from tests.support.shard_merge import assert_merged_as_one, cube_run

SLOTS = 30


@st.composite
def sharded_runs(draw: st.DrawFn) -> tuple[RunSpec, int]:
    """A small broadcast run of a family whose reporter is the kit's or merges as it does (any
    discipline or rule, the series kept or not) and a shard count."""
    d = draw(st.integers(2, 4))
    scheme = draw(st.sampled_from(["bcast-simple", "bcast-balanced", "bcast-dtree", "bcast-indirect", "bcast-periodic"]))
    if scheme == "bcast-indirect":
        params = {"rule": draw(st.sampled_from(["D", "Dprime"])), "idling": draw(st.sampled_from(["true", "false"]))}
    elif scheme == "bcast-periodic":
        params = {"variant": draw(st.sampled_from(["random", "mnb", "simultaneous"])),
                  "nulls": draw(st.sampled_from(["account", "send"]))}
    else:
        params = {} if scheme == "bcast-simple" else {"discipline": draw(st.sampled_from(["fifo", "label"]))}
    return cube_run(draw, scheme, d, {"rho": draw(st.sampled_from([0.3, 0.7, 0.95]))}, params, SLOTS, (0, 5, 25))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharded_runs())
def test_merged_broadcast_shards_give_the_one_process_result(case):
    """For 2..4 shards and any fault schedule, a broadcast run whose shards report (merged, not
    replayed) has the one-process metrics, invariants, per-node figures, series, fault impact,
    verdict (missed broadcasts included) and the verdict's books of lost messages."""
    spec, shards = case
    assert_merged_as_one(spec, shards)


def _feed(reporters, events, shard_of, coordinator=None):
    """Each ``(node, slot, births, received)`` event to its shard's reporter, slot by slot, each
    slot closed as one process (one reporter) or a coordinator (the shards' summaries) closes it."""
    for slot in sorted({e[1] for e in events}):
        for node, s, births, received in events:
            if s == slot:
                reporters[shard_of(node)].step(node, slot, births, received, 0, 0)
        if coordinator is None:
            reporters[0].end_slot(slot)
        else:
            coordinator.merge_slot(slot, [r.shard_slot(slot) for r in reporters])
            coordinator.end_slot(slot)


def test_second_and_late_receptions_are_classed_as_in_one_process():
    """A second reception before its packet completed is a duplicate, one after it (or at a
    higher node in its last slot) and any reception of a packet never born an unknown packet's,
    merged as one process books them."""
    from slotnet.fabric import decode, encode
    from slotnet.schemes.kit import BroadcastReporter

    setup = RunSpec("bcast-simple", "hypercube:2", load={"rho": 0.5}, slots=10).prepare().setup
    events = [(0, 1, ((0, 0.5),), ()), (1, 2, (), ((0, 0),)), (2, 2, (), ((0, 0),)),
              (1, 3, (), ((0, 0),)), (3, 3, (), ((0, 0), (0, 0))),  # node 1 again; node 3 completes it, then again
              (0, 4, (), ((0, 0),)), (2, 4, (), ((0, 0), (1, 7)))]  # after completion; (1, 7) never born
    one = BroadcastReporter(setup)
    _feed([one], events, lambda v: 0)
    shards = [BroadcastReporter(setup) for _ in range(2)]
    for j, r in enumerate(shards):
        r.shard_start(range(2 * j, 2 * j + 2))
    merged = BroadcastReporter(setup)
    _feed(shards, events, lambda v: v // 2, merged)
    merged.merge_shards([decode(encode(r.shard_state())) for r in shards])
    args = ({}, [], [0] * 4)
    assert merged.invariants(*args)["exactly_once"] == one.invariants(*args)["exactly_once"]
    assert (one.invariants(*args)["exactly_once"]["duplicate_receptions"], len(one.unknown)) == (1, 4)
    assert merged.metrics() == one.metrics()


def test_receptions_of_a_copied_packet_are_counted_not_kept():
    """A second or late reception of a packet a dup fault copied is no scheme bug. One that comes
    after the copy was reported is counted, not kept as a tuple (a long run under dup faults
    would keep one for each); the books equal those of a reporter told of the copy only at the
    end, which keeps the receptions and excuses them then, in one process and over shards."""
    from slotnet.fabric import decode, encode
    from slotnet.schemes.kit import BroadcastReporter

    setup = RunSpec("bcast-simple", "hypercube:2", load={"rho": 0.5}, slots=10, faults=["dup=0.1"]).prepare().setup
    events = [(0, 1, ((0, 0.5),), ()), (1, 2, (), ((0, 0),)), (2, 2, (), ((0, 0),)),
              (1, 3, (), ((0, 0),)), (3, 3, (), ((0, 0), (0, 0))),  # node 1 again; node 3 completes it, then again
              (0, 4, (), ((0, 0),)), (2, 4, (), ((0, 0), (1, 7)))]  # after completion; (1, 7) never born

    def copy_of_0_0(reporter):
        reporter.on_lost(1, 0, 0, 1, (0, 0, 0.5), "dup")

    early, late = BroadcastReporter(setup), BroadcastReporter(setup)
    copy_of_0_0(early)
    _feed([early], events, lambda v: 0)
    _feed([late], events, lambda v: 0)
    copy_of_0_0(late)
    args = ({"dup": 0}, [], [0] * 4)
    books = late.invariants(*args)["exactly_once"]
    assert early.invariants(*args)["exactly_once"] == books
    assert (books["duplicate_receptions"], books["unknown_packets"], books["duplicates_from_dup_faults"]) == (0, 1, 4)
    assert (early.duplicates, early.unknown, early.excused) == ([], [(4, 2, 1, 7)], 4)
    assert (len(late.duplicates), len(late.unknown), late.excused) == (1, 4, 0)

    shards = [BroadcastReporter(setup) for _ in range(2)]
    for j, r in enumerate(shards):
        r.shard_start(range(2 * j, 2 * j + 2))
    copy_of_0_0(shards[0])  # one shard told of the copy, as the sender's would be
    merged = BroadcastReporter(setup)
    _feed(shards, events, lambda v: v // 2, merged)
    assert shards[0].excused > 0
    merged.merge_shards([decode(encode(r.shard_state())) for r in shards])
    assert merged.invariants(*args)["exactly_once"] == books
