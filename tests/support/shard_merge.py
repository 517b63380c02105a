"""Merged sharded runs against one process: a fault-schedule strategy and the comparison
(the reporters that merge across shards: ``slotnet.schemes.ShardMerging``)."""

from __future__ import annotations

import dataclasses

import trio
from hypothesis import strategies as st

from slotnet import FaultSchedule, RunSpec, run
from slotnet.orchestrator.shard import run_sharded_in_memory

#: what must not depend on how the nodes are spread
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "series", "completion", "faults", "fault_impact",
        "verdict", "rng")


@st.composite
def hypercube_faults(draw: st.DrawFn, n: int, d: int, slots: int) -> list[str]:
    """A fault schedule of up to four faults of any kind within ``slots`` on the ``d``-cube of
    ``n`` nodes (each node crashed or stalled, and each link cut, at most once)."""
    node = st.integers(0, n - 1)
    rate = st.sampled_from(["0.02", "0.05", "0.1"])
    out: list[str] = []
    crashed: set[int] = set()  # crashed or stalled
    cut: set[tuple[int, int]] = set()
    for kind in draw(st.lists(st.sampled_from(["crash", "link", "loss", "dup", "delay", "stall", "partition",
                                               "corrupt"]), max_size=4)):
        a = draw(st.integers(0, slots - 2))
        b = draw(st.integers(a + 1, min(a + 10, slots - 1)))  # a window ends after it starts, within the run
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


def cube_run(draw: st.DrawFn, scheme: str, d: int, load: dict[str, float], params: dict[str, str], slots: int,
             warmups: tuple[int, ...]) -> tuple[RunSpec, int]:
    """A run of ``scheme`` on the ``d``-cube for ``slots`` (any seed, either nodes' generator, warm-up
    of ``warmups``, the series kept or not, any :func:`hypercube_faults` schedule) and a shard
    count: 2 to 4, or 2 or 4 on the 2-cube (3 shards of its 4 nodes leave one empty)."""
    spec = RunSpec(scheme, f"hypercube:{d}", load=load, slots=slots, warmup=draw(st.sampled_from(warmups)),
                   seed=draw(st.integers(0, 10**6)), params=params, series=draw(st.booleans()),
                   faults=FaultSchedule.parse(draw(hypercube_faults(1 << d, d, slots))),
                   rng=draw(st.sampled_from(["mt", "philox"])))
    return spec, draw(st.sampled_from([2, 4]) if d == 2 else st.integers(2, 4))


@st.composite
def node_faults(draw: st.DrawFn, n: int, slots: int) -> list[str]:
    """A fault schedule of up to four faults of any kind but a link's within ``slots`` on any
    topology of ``n`` nodes (each node crashed or stalled at most once)."""
    node = st.integers(0, n - 1)
    rate = st.sampled_from(["0.02", "0.05", "0.1"])
    out: list[str] = []
    crashed: set[int] = set()
    for kind in draw(st.lists(st.sampled_from(["crash", "loss", "dup", "delay", "stall", "partition", "corrupt"]),
                              max_size=4)):
        a = draw(st.integers(0, slots - 2))
        b = draw(st.integers(a + 1, min(a + slots // 4, slots - 1)))
        if kind in ("crash", "stall"):
            v = draw(node)
            if v not in crashed:
                crashed.add(v)
                if kind == "stall":
                    out.append(f"stall@{a}:{b}:{v}")
                else:
                    out += [f"crash@{a}:{v}"] + ([f"recover@{b}:{v}"] if draw(st.booleans()) else [])
        elif kind in ("loss", "dup", "corrupt"):
            out.append(f"{kind}={draw(rate)}" + (f"@{a}-{b}" if draw(st.booleans()) else ""))
        elif kind == "delay":
            out.append(f"delay={draw(rate)}:{draw(st.integers(1, 3))}")
        else:
            out.append(f"partition@{a}:{b}:{','.join(map(str, sorted(draw(st.sets(node, min_size=1, max_size=3)))))}")
    return out


def assert_merged_as_one(spec: RunSpec, shards: int) -> None:
    """``spec`` over ``shards`` in-memory shards reports on them (merged) and has the one-process
    result: every field :data:`SAME` names, and the verdict's books of lost messages."""
    first = run(spec)
    one = first.to_dict(per_node=True, series=True)
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=shards).prepare()))
    assert many.transport["reporting"] == "merged"
    many_d = many.to_dict(per_node=True, series=True)
    for key in SAME:
        assert one.get(key) == many_d.get(key), f"{shards} shards, faults {spec.faults.to_list()}: {key} differs"
    assert first.fault_books == many.fault_books, "the lost messages' books differ"
