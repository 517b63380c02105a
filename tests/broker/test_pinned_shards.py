"""Sharded runs: behaviours pinned here, each by a test that fails when it breaks.

* a frame that names a sender outside the run (shard K of K shards, one past the last, or
  a negative index) is refused and counted, over the in-memory link and over MQTT, and the
  run's result is the one it would have been without it;
* the coordinator's ``performance`` figures (messages, node wake-ups) sum every shard's.

The in-memory link runs the protocol in this process; one test goes through a real
mosquitto, as ``tests/broker/test_sharded.py`` does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import trio

from slotnet import FaultSchedule, RunSpec, run
from slotnet.fabric import encode
from slotnet.orchestrator.shard._coordinator import coordinate
from slotnet.orchestrator.shard._link import UNKNOWN_SHARD, Done, is_shard
from slotnet.orchestrator.shard._memory_link import _BEFORE, MemoryHub, MemoryShardLink, run_sharded_in_memory
from slotnet.orchestrator.shard._mqtt_link import _Inbox
from slotnet.orchestrator.shard._shard import serve_shard
from tests.support.broker_noise import sharded_run_with_noise

#: what must not depend on how the nodes are spread (nor on frames refused)
SAME = ("metrics", "invariants", "stability", "slots_run", "per_node", "series", "completion", "faults", "fault_impact")


# ------------------------------------------------------------------ who may send a frame


@pytest.mark.parametrize(("origin", "shards", "ok"), [
    (0, 1, True), (0, 3, True), (2, 3, True), (3, 3, False), (4, 3, False), (-1, 3, False),
    (True, 3, False), ("1", 3, False), (None, 3, False), (1.0, 3, False),
])
def test_a_shard_of_the_run_is_an_integer_below_the_count(origin, shards, ok):
    """Shards 0..K-1 are the run's; K (one past the last), negatives and non-integers are not."""
    assert is_shard(origin, shards) is ok


class _Spoofer(MemoryShardLink):
    """Shard 0's end of the link, which also sends every frame it sends a second time under
    the name ``alias`` (a shard the run does not have), ahead of the true one."""

    alias = 0

    async def ready(self) -> None:
        self.hub.coordinator.put("ready", _BEFORE, self.alias)
        await super().ready()

    def send(self, slot: int, to: int, frame: bytes) -> None:
        self.hub.boxes[to].put("data", slot, (self.alias, frame))
        super().send(slot, to, frame)

    def done(self, report: Done) -> None:
        self.hub.coordinator.put("done", report.slot, tuple(report._replace(shard=self.alias)))
        super().done(report)

    def final(self, state: dict[str, Any]) -> None:
        self.hub.coordinator.put("final", _BEFORE, (self.alias, state))
        super().final(state)


async def _spoofed_run(spec: RunSpec, alias: int) -> dict[str, Any]:
    hub = MemoryHub(spec.shards)
    spoofer = _Spoofer(hub, 0)
    spoofer.alias = alias
    with trio.fail_after(120):  # a frame taken for another's would leave a shard waiting
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_shard, spoofer)
            for i in range(1, spec.shards):
                nursery.start_soon(serve_shard, hub.shard_link(i))
            result = await coordinate(spec.prepare(), hub.coordinator_link())
    return result.to_dict(per_node=True, series=True)


@pytest.mark.parametrize("alias", [3, 4, -1])
def test_frames_from_a_shard_outside_the_run_are_refused_in_memory(alias):
    """3 shards; shard 0 also sends its hello, data frames, slot reports and final state as
    shard ``alias``: each such frame is refused and counted, and the result is unchanged."""
    spec = RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=40, seed=5,
                   faults=FaultSchedule.parse(["crash@10:3", "recover@20:3", "loss=0.05"]))
    one = run(spec).to_dict(per_node=True, series=True)
    many = trio.run(_spoofed_run, dataclasses.replace(spec, shards=3), alias)
    for key in SAME:
        assert one.get(key) == many.get(key), key
    slots = many["slots_run"]
    # the hello and the final state, and every slot a report and a frame to each of the 2 other shards
    assert many["transport"]["frames_rejected"] == {UNKNOWN_SHARD: 2 + 3 * slots}


def test_a_sharded_run_in_memory_refuses_nothing_of_its_own():
    """Without a spoofer no frame is refused: the count above is the spoofer's alone."""
    spec = RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=40, seed=5, shards=3)
    assert trio.run(lambda: run_sharded_in_memory(spec.prepare())).transport["frames_rejected"] == {}


@pytest.mark.parametrize("topic", ["hello", "done", "data/0", "final", "error", "beat"])
def test_the_mqtt_inbox_refuses_frames_from_shard_k(topic):
    """Over MQTT, every topic a shard publishes on: a frame that claims shard 2 of a 2-shard
    run is refused as an unknown shard; the same frame from shard 1 is admitted."""
    inbox = _Inbox(None, "slotnet/x", 2)  # type: ignore[arg-type]  # _admit reads no client

    def frame(shard: int) -> bytes:
        if topic == "done":
            return encode((0, shard, b"", [], True, 0, None))
        if topic == "data/0":
            return encode((0, shard, b""))
        if topic == "hello":
            return encode((shard, 0))
        if topic == "beat":  # (shard, sequence, progress count)
            return encode((shard, 0, 0))
        return encode((shard, 0, "x"))

    assert inbox._admit(topic, frame(2)) is None
    assert inbox.rejected == {UNKNOWN_SHARD: 1}
    assert inbox._admit(topic, frame(1)) is not None
    assert inbox.rejected == {UNKNOWN_SHARD: 1}


def test_frames_from_shard_k_are_refused_through_a_real_broker():
    """A 2-shard run over mosquitto while another client publishes, on the run's topics,
    well-formed frames that claim shard 2: they are refused and counted, the result is the
    one-process one."""
    argv = ["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "120", "--seed", "3", "--json",
            "--no-progress", "--shards", "2"]

    def spoof(slot: int) -> list[tuple[str, bytes]]:
        return [("hello", encode((2, 0))), ("data/0", encode((slot, 2, b""))), ("data/1", encode((slot, 2, b""))),
                ("done", encode((slot, 2, b"", [], True, 0, None))), ("final", encode((2, 0, {})))]

    sharded = sharded_run_with_noise(argv, "spoof", spoof, period=0.02)
    alone = run(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=120, seed=3))
    assert sharded["metrics"] == alone.to_dict()["metrics"]
    rejected = sharded["transport"]["frames_rejected"]
    assert rejected.get(UNKNOWN_SHARD, 0) > 0


# ------------------------------------------------------------------ performance sums every shard


@pytest.mark.parametrize("faults", [[], ["crash@10:3", "recover@20:3", "loss=0.05", "dup=0.03", "delay=0.05:2"]])
def test_the_coordinators_message_count_sums_every_shard(faults):
    """``performance``'s messages (delivered, in flight and faulted) and node wake-ups over
    3 shards are the one-process run's, not one shard's."""
    spec = RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=50, seed=7, faults=FaultSchedule.parse(faults))
    one = run(spec).performance
    many = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(spec, shards=3).prepare())).performance
    assert one["messages"] > 1000 and one["node_wakeups"] > 0
    assert (many["messages"], many["node_wakeups"]) == (one["messages"], one["node_wakeups"])
