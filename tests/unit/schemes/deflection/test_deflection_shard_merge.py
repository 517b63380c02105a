"""Deflection's reporter merged across shards gives the one-process result, bit for bit.

A sharded deflection run reports on its shards (each shard's own reporter takes its nodes'
events; the coordinator merges the slots' summaries and the shards' states): for any shard
count and any fault schedule, every figure of the result equals the one-process run's.
"""

from __future__ import annotations

import dataclasses

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import FaultSchedule, RunSpec, run
from slotnet.orchestrator.shard import run_sharded_in_memory
from slotnet.schemes.deflection.reporter import DeflectionReporter

#: what must not depend on how the nodes are spread
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "series", "completion", "faults", "fault_impact",
        "verdict")
SLOTS = 40


@st.composite
def faults(draw: st.DrawFn, n: int, d: int) -> list[str]:
    """A fault schedule of up to four faults of any kind within the run's slots (each node
    crashed or stalled, and each link cut, at most once)."""
    node = st.integers(0, n - 1)
    rate = st.sampled_from(["0.02", "0.05", "0.1"])
    out: list[str] = []
    crashed: set[int] = set()  # crashed or stalled
    cut: set[tuple[int, int]] = set()
    for kind in draw(st.lists(st.sampled_from(["crash", "link", "loss", "dup", "delay", "stall", "partition",
                                               "corrupt"]), max_size=4)):
        a = draw(st.integers(0, SLOTS - 2))
        b = draw(st.integers(a + 1, min(a + 10, SLOTS - 1)))  # a window ends after it starts, within the run
        if kind == "crash":
            v = draw(node)
            if v not in crashed:
                crashed.add(v)
                out += [f"crash@{a}:{v}"] + ([f"recover@{b}:{v}"] if draw(st.booleans()) else [])
        elif kind == "link":
            v, p = draw(node), draw(st.integers(0, d - 1))
            if (min(v, v ^ 1 << p), p) not in cut:  # port p of v and of v ^ 2**p: one link
                cut.add((min(v, v ^ 1 << p), p))
                out += [f"link-down@{a}:{v}:{p}"] + ([f"link-up@{b}:{v}:{p}"] if draw(st.booleans()) else [])
        elif kind in ("loss", "dup", "corrupt"):
            out.append(f"{kind}={draw(rate)}" + (f"@{a}-{b}" if draw(st.booleans()) else ""))
        elif kind == "delay":
            out.append(f"delay={draw(rate)}:{draw(st.integers(1, 3))}")
        elif kind == "stall":
            v = draw(node)
            if v not in crashed:
                crashed.add(v)
                out.append(f"stall@{a}:{b}:{v}")
        else:
            out.append(f"partition@{a}:{b}:{','.join(map(str, sorted(draw(st.sets(node, min_size=1, max_size=3)))))}")
    return out


@st.composite
def sharded_runs(draw: st.DrawFn) -> tuple[RunSpec, int]:
    """A small deflection run (blocking or input queueing, any consideration order, the series
    kept or not) and a shard count."""
    d = draw(st.integers(3, 4))
    n = 1 << d
    load = {"offered": draw(st.sampled_from([0.5, 1.0, 2.0]))} if draw(st.booleans()) else {
        "lam": draw(st.sampled_from([0.3, 0.8, 1.5]))}
    spec = RunSpec("deflection", f"hypercube:{d}", load=load, slots=SLOTS, warmup=draw(st.sampled_from([0, 5, 35])),
                   seed=draw(st.integers(0, 10**6)), params={"order": draw(st.sampled_from(["random", "continuing-first"]))},
                   series=draw(st.booleans()), faults=FaultSchedule.parse(draw(faults(n, d))))
    return spec, draw(st.integers(2, 4))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharded_runs())
def test_merged_shards_give_the_one_process_result(case):
    """For 2..4 shards and any fault schedule, a deflection run whose shards report (merged, not
    replayed) has the one-process metrics, invariants, per-node figures, series, fault impact, verdict and the
    verdict's books of lost messages."""
    spec, shards = case
    first = run(spec)
    one = first.to_dict(per_node=True, series=True)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=shards).prepare()))
    assert many.transport["reporting"] == "merged"
    many_d = many.to_dict(per_node=True, series=True)
    for key in SAME:
        assert one.get(key) == many_d.get(key), f"{shards} shards, faults {spec.faults.to_list()}: {key} differs"
    assert first.fault_books == many.fault_books, "the lost messages' books differ"


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
