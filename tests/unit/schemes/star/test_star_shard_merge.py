"""STAR's reporter merged across shards gives the one-process result, bit for bit.

A sharded STAR run reports on its shards (broadcasts, unicasts with their hop witness, link
counters, the verdict's missed-broadcast rule): for any shard count and any fault schedule,
every figure of the result equals the one-process run's.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import RunSpec
from tests.support.shard_merge import assert_merged_as_one, cube_run

SLOTS = 30


@st.composite
def sharded_runs(draw: st.DrawFn) -> tuple[RunSpec, int]:
    """A small STAR run (either discipline, two or three priority classes, with or without unicasts, the
    series kept or not) and a shard count."""
    d = draw(st.integers(2, 4))
    discipline = draw(st.sampled_from(["priority", "fcfs"]))
    params = {"discipline": discipline, "lam_unicast": draw(st.sampled_from(["0", "0.05", "0.2"]))}
    if discipline == "priority":  # fcfs has one class
        params["classes"] = draw(st.sampled_from(["2", "3"]))
    return cube_run(draw, "star", d, {"rho": draw(st.sampled_from([0.3, 0.7, 0.95]))}, params, SLOTS, (0, 5, 25))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharded_runs())
def test_merged_star_shards_give_the_one_process_result(case):
    """For 2..4 shards and any fault schedule, a STAR run whose shards report (merged, not
    replayed) has the one-process metrics, invariants (unicast books and hop witness included),
    per-node figures, series, fault impact, verdict and the verdict's books of lost messages."""
    spec, shards = case
    assert_merged_as_one(spec, shards)
