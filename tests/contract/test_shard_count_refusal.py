"""A shard count the network cannot be split into is refused before any process starts, in
one line (issue #35, item 6): more shards than nodes, or so many that the last is empty."""

from __future__ import annotations

import subprocess

import pytest

from slotnet import RunSpec, SpecError
from slotnet.orchestrator.cli import main


@pytest.fixture
def no_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)


def test_more_shards_than_nodes_is_refused_on_the_command_line(no_processes, capsys):
    """`--shards 100` on 16 nodes: exit status 2 and one line, before any shard or broker starts."""
    code = main(["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "10", "--shards", "100"])
    assert code == 2
    assert capsys.readouterr().err == ("slotnet run: error: shards=100 does not fit hypercube:4: "
                                       "cannot split 16 nodes into 100 shards\n")


@pytest.mark.parametrize(("topology", "shards", "why"), [
    ("hypercube:3", 9, "cannot split 8 nodes into 9 shards"),
    ("hypercube:3", 6, "6 shards of 2 nodes leave the last one empty (8 nodes)"),
    ("hypercube:2", 5, "cannot split 4 nodes into 5 shards"),
])
def test_a_shard_count_that_does_not_split_the_network_is_a_spec_error(no_processes, topology, shards, why):
    """RunSpec.prepare refuses it with SpecError naming the count, the topology and why."""
    spec = RunSpec("deflection", topology, load={"offered": 1.0}, slots=10, shards=shards)
    with pytest.raises(SpecError) as e:
        spec.prepare()
    assert str(e.value) == f"shards={shards} does not fit {topology}: {why}"


@pytest.mark.parametrize("shards", [2, 4, 8])
def test_one_node_per_shard_at_most_is_accepted(no_processes, shards):
    """Up to one shard per node, with no empty shard, prepares (nothing starts until the run)."""
    assert RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=10, shards=shards).prepare().spec.shards == shards
