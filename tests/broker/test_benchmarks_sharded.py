"""The sharded benchmarks run through a real mosquitto at a tiny size, and find the same result as one process."""

from __future__ import annotations

from tests.support.benchmarks import bench, row


def test_shard_scaling_splits_a_sharded_slot_and_matches_one_process() -> None:
    """shard_scaling.py: K = 1 and K = 2 rows, the per-slot split of the sharded one, the same result."""
    lines = bench("shard_scaling.py", "--dim", "5", "--slots", "5", "--shards", "2")
    one, two = row(lines, "1"), row(lines, "2")
    assert one[-1] == "yes" and two[-1] == "yes"  # the same result as the one-process run
    assert two[-2] == "merged"  # deflection's reporter merges across shards
    assert all(float(part) >= 0 for part in two[4:9])  # node work, encoding, broker, barrier, coordinator
    m, lost = float(two[9]), float(two[10])  # the slowest shard's node work a slot against the mean shard's
    assert m >= 1 and lost >= 0


def test_sharded_scaling_compares_two_shards_with_one_process() -> None:
    """sharded_scaling.py: per K the cost per hop, and the sharded run's results equal one process's."""
    lines = bench("sharded_scaling.py", "--dims", "5", "--slots", "5")  # K = 1 and 2
    rows = [line.split() for line in lines if line.split()[:2] in (["5", "1"], ["5", "2"])]
    assert [r[1] for r in rows] == ["1", "2"], lines
    assert rows[1][-1] == "yes"  # metrics, invariants and per-node figures equal K = 1's
    assert float(rows[0][4]) > 0 and float(rows[1][4]) > 0  # µs per hop
