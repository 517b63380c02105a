"""The benchmark scripts run: each at a tiny size, its figures printed and its own checks passed.

The documentation quotes ``benchmarks/``'s output for every performance figure, and the
scripts reach into the engine (a network built by hand, the shards' timing), so a change
elsewhere can break one without any other test noticing. These runs are seconds long and
assert what a script checks of its own run (the verdict, the same result as one process),
never a speed. ``instructions_per_hop.py`` is left out: under valgrind even a 3-cube takes
a minute and a half.
"""

from __future__ import annotations

import re

from tests.support.benchmarks import bench, row


def test_deflection_throughput_prints_a_checked_row_per_dimension() -> None:
    """deflection_throughput.py: one row per d, with hops per second and the run's verdict ok."""
    lines = bench("deflection_throughput.py", "--dims", "3", "4", "--slots", "5")
    for d, nodes in (("3", "8"), ("4", "16")):
        fields = row(lines, d)
        assert fields[1] == nodes and fields[2] in ("compiled", "pure") and fields[3] == "philox"
        assert float(fields[4]) > 0  # hops/s
        assert fields[-1] == "True"  # the run's verdict


def test_deflection_throughput_runs_each_generator_asked_for() -> None:
    """--rng philox mt: a row per generator for each d, in the order given."""
    lines = bench("deflection_throughput.py", "--dims", "3", "--slots", "5", "--rng", "philox", "mt")
    rows = [line.split() for line in lines if line.split()[:1] == ["3"]]
    assert [r[3] for r in rows] == ["philox", "mt"] and all(r[-1] == "True" for r in rows)


def test_memory_per_node_prints_the_growth_per_node_of_each_size() -> None:
    """memory_per_node.py: a row per topology with its peak and the KiB per added node."""
    lines = bench("memory_per_node.py", "--dims", "5", "6", "--slots", "2", "--no-breakdown")
    for d, nodes in (("5", "32"), ("6", "64")):
        fields = row(lines, f"hypercube:{d}")
        assert fields[1] == nodes and fields[-1] == "KiB" and fields[-3] == "MiB"
        assert re.fullmatch(r"-?\d+\.\d\d", fields[-2])


def test_shard_ceiling_prints_each_round_and_the_median() -> None:
    """shard_ceiling.py: c, m and the ceiling K / (c m), each round (with the spread of a slot's CPU time) and their median."""
    lines = bench("shard_ceiling.py", "--dim", "4", "--slots", "4", "--repeat", "1")
    p10, p50, p90 = map(int, row(lines, "1")[-1].split("/"))
    assert 0 <= p10 <= p50 <= p90
    c, m, ceiling = map(float, row(lines, "median")[1:])
    assert c > 0 and m > 0
    assert abs(ceiling - 2 / (c * m)) < 0.02  # printed to two or three places
