"""A one-shot run over shards ends when the whole network is quiescent, and its completion
slot is the last active slot over every shard (issue #35, item 9): a message still on its way
from one shard to another keeps the run going, and the activity that ends last may be on any
shard. Run with the in-memory shard link (the same slot protocol as over MQTT, no broker)."""

from __future__ import annotations

import dataclasses

import pytest
import trio

from slotnet import RunSpec, run
from slotnet.nodes import Node
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory
from tests.support.probes import register


class Relay(Node):
    """Node 0 (shard 0) sends a token to node 2 (shard 1) in slot 0 and finishes; node 2
    passes it to node 3 (shard 1), which records it in slot 2; node 1 waits for ever."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            ctx.send(ctx.port_to(2), "token")
            ctx.record("log", "sent")
            return
        inbox = await ctx.idle()
        ctx.record("log", ("got", [m for _, m in inbox]))
        if ctx.node == 2:
            ctx.send(ctx.port_to(3), "token")


@pytest.fixture
def relay(monkeypatch: pytest.MonkeyPatch) -> RunSpec:
    register("relay", Relay, monkeypatch, until="quiescent", done=lambda reporter: True)  # node 1's wait is by design
    return RunSpec("relay", "hypercube:2", slots=20)


def _sharded(spec: RunSpec) -> dict:
    return trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=2).prepare())).to_dict()


def test_a_shard_with_messages_on_their_way_is_not_idle(relay):
    """At the end of slot 0 both shards are quiescent but shard 0's token is on its way to shard 1:
    the run goes on until node 3 has it, as in one process."""
    one, many = run(relay).to_dict(), _sharded(relay)
    assert one["metrics"]["log"] == [[0, 0, "sent"], [2, 1, ["got", ["token"]]], [3, 2, ["got", ["token"]]]]
    assert many["metrics"] == one["metrics"]
    assert many["slots_run"] == one["slots_run"] == 3


def test_a_one_shot_runs_completion_slot_is_the_last_active_slot_of_any_shard(relay):
    """The last activity is on shard 1 (slot 2), shard 0's ended in slot 0: the sharded run completes
    in slot 2, as in one process."""
    one, many = run(relay).to_dict(), _sharded(relay)
    assert one["completion"]["complete"] is True and one["completion"]["slot"] == 2
    assert many["completion"] == one["completion"]
