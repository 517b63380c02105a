"""dynamic-broadcast's reporter merged across shards gives the one-process result, bit for bit.

A sharded ``dynamic-broadcast`` run reports on its shards (the kit's broadcast books, node 0's
intervals, the pieces received twice and the nodes' fault notes): for any shard count and any
fault schedule, every figure of the result equals the one-process run's.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import FaultSchedule, RunSpec
from tests.support.shard_merge import assert_merged_as_one, node_faults

SLOTS = 1500  # fabric ticks: a few dozen PMNB intervals on a 3x3 or 4x4 network


@st.composite
def sharded_runs(draw: st.DrawFn) -> tuple[RunSpec, int]:
    """A small dynamic-broadcast run on a torus or mesh and a shard count that fits it."""
    topology, n = draw(st.sampled_from([("torus:3x3", 9), ("mesh:3x3", 9), ("torus:4x4", 16)]))
    spec = RunSpec("dynamic-broadcast", topology, load={"rho": draw(st.sampled_from([0.2, 0.5]))}, slots=SLOTS,
                   warmup=draw(st.sampled_from([0, 300])), seed=draw(st.integers(0, 10**6)),
                   series=draw(st.booleans()), faults=FaultSchedule.parse(draw(node_faults(n, SLOTS))))
    return spec, draw(st.integers(2, 3 if n == 9 else 4))  # 4 shards of 3 leave the fourth of 9 nodes empty


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharded_runs())
def test_merged_dynamic_broadcast_shards_give_the_one_process_result(case):
    """For 2..4 shards and any fault schedule but a link's, a dynamic-broadcast run whose shards
    report (merged, not replayed) has the one-process metrics, invariants, per-node figures,
    series, fault impact, verdict and the verdict's books of lost messages."""
    spec, shards = case
    assert_merged_as_one(spec, shards)
