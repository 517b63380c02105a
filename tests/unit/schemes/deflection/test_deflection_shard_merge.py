"""Deflection's reporter merged across shards gives the one-process result, bit for bit.

A sharded deflection run reports on its shards (each shard's own reporter takes its nodes'
events; the coordinator merges the slots' summaries and the shards' states): for any shard
count and any fault schedule, every figure of the result equals the one-process run's.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec
from slotnet.schemes.deflection.reporter import DeflectionReporter
from tests.support.shard_merge import assert_merged_as_one, cube_run

SLOTS = 40


@st.composite
def sharded_runs(draw: st.DrawFn) -> tuple[RunSpec, int]:
    """A small deflection run (blocking or input queueing, any consideration order, the series
    kept or not) and a shard count."""
    d = draw(st.integers(3, 4))
    load = {"offered": draw(st.sampled_from([0.5, 1.0, 2.0]))} if draw(st.booleans()) else {
        "lam": draw(st.sampled_from([0.3, 0.8, 1.5]))}
    params = {"order": draw(st.sampled_from(["random", "continuing-first"]))}
    return cube_run(draw, "deflection", d, load, params, SLOTS, (0, 5, 35))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharded_runs())
def test_merged_shards_give_the_one_process_result(case):
    """For 2..4 shards and any fault schedule, a deflection run whose shards report (merged, not
    replayed) has the one-process metrics, invariants, per-node figures, series, fault impact, verdict and the
    verdict's books of lost messages."""
    spec, shards = case
    assert_merged_as_one(spec, shards)


def test_sums_beyond_64_bits_survive_the_merge():
    """A delay sum past 2**64 (which msgpack cannot carry as an integer) merges to its exact value."""
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=10, seed=1)
    prep = spec.prepare()
    shards = [DeflectionReporter(prep.setup) for _ in range(2)]
    shards[0].sums.delay_sq = 2**70 + 3
    shards[1].sums.delay_sq = 5
    coordinator = DeflectionReporter(prep.setup)
    from slotnet.fabric import decode, encode  # what crosses the link: msgpack, as the shards send it
    coordinator.merge_shards([decode(encode(r.shard_state())) for r in shards])
    assert coordinator.sums.delay_sq == 2**70 + 8
