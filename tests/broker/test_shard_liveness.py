"""Liveness of a sharded run by progress, through a real mosquitto: a shard stuck inside a node
rule is named quickly, while a shard whose slot is long but moving is waited for (issue #33).

The coordinator runs in this thread and its two shards in threads of this process (the probe
schemes below are registered here only, so shard processes could not build them); each end
has its own MQTT client and heartbeat thread, as in separate processes. Timeouts are cut to
a second or so, so that a slot outlasts them.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest
import trio

from slotnet import RunSpec, SlotnetError
from slotnet.nodes import Node
from slotnet.orchestrator.shard import _mqtt_link
from slotnet.orchestrator.shard._broker import PASSWORD_ENV, private_broker
from slotnet.orchestrator.shard._coordinator import run_sharded
from slotnet.orchestrator.shard._shard import run_shard
from tests.support.probes import register

RELEASE = threading.Event()


def _busy(seconds: float) -> None:
    """Work for ``seconds`` without awaiting (and without sleeping: the GIL is wanted)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not RELEASE.is_set():
        pass


class Stuck(Node):
    """Node 3 never returns from its step in slot 2 (until the test releases it)."""

    async def run(self) -> None:
        while True:
            await self.ctx.next_slot()
            self.ctx.record("log", self.ctx.slot)
            if self.ctx.node == 3 and self.ctx.slot == 2:
                _busy(3600.0)


class Slow(Node):
    """Every step works 0.8 s without awaiting: a shard's slot (4 nodes, 3.2 s) outlasts the timeouts."""

    async def run(self) -> None:
        while True:
            await self.ctx.next_slot()
            _busy(0.8)
            self.ctx.record("log", self.ctx.slot)


class SlowStart(Node):
    """Building each node works 0.25 s, and so does each of its steps (no await in either):
    a shard of 4 nodes takes 1 s to start and 1 s a slot."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        _busy(0.25)

    async def run(self) -> None:
        while True:
            await self.ctx.next_slot()
            _busy(0.25)
            self.ctx.record("log", self.ctx.slot)


class FailsThenSlowToStop(Node):
    """Node 0 fails in slot 2; every other node, cancelled then, works 0.15 s in its ``finally``
    (no await) before its task ends: on the 4-cube shard 0 takes 1.05 s to cancel nodes 1 to 7."""

    async def run(self) -> None:
        try:
            while True:
                await self.ctx.next_slot()
                if self.ctx.node == 0 and self.ctx.slot == 2:
                    raise ValueError("node 0 gives up")
        finally:
            if self.ctx.node != 0:
                _busy(0.15)


def _sharded(spec: RunSpec, run_id: str, monkeypatch: pytest.MonkeyPatch):
    """Run ``spec`` over 2 shards in threads of this process; returns the result or the error raised."""
    outcome: dict[str, object] = {}
    with private_broker(run_id) as broker:
        monkeypatch.setenv(PASSWORD_ENV, broker.password or "")
        url = f"mqtt://{broker.user}@127.0.0.1:{broker.port}"
        spec = RunSpec(**{**spec.__dict__, "broker": url, "shards": 2})
        errors: list[BaseException] = []

        def shard(i: int) -> None:
            try:
                trio.run(run_shard, url, run_id, i, 2)
            except BaseException as exc:  # kept for the test to see
                errors.append(exc)

        threads = [threading.Thread(target=shard, args=(i,), daemon=True) for i in range(2)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        try:
            outcome["result"] = trio.run(lambda: run_sharded(spec.prepare(), spawn=False, run_id=run_id))
        except SlotnetError as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - t0
        RELEASE.set()
        for t in threads:
            t.join(timeout=30)
        RELEASE.clear()
        assert not any(t.is_alive() for t in threads), "a shard thread did not end"
    return outcome


def _timeouts(monkeypatch: pytest.MonkeyPatch, silence: float, stall: float) -> None:
    monkeypatch.setattr(_mqtt_link, "HEARTBEAT", 0.05)
    monkeypatch.setattr(_mqtt_link, "SILENCE", silence)
    monkeypatch.setattr(_mqtt_link, "STALL", stall)


def test_a_shard_stuck_in_a_node_rule_is_named(monkeypatch):
    """A node step that never ends (no await) stops its shard's progress while its heartbeat goes
    on: the run stops with one error naming that shard as stuck, not as silent."""
    _timeouts(monkeypatch, silence=10.0, stall=1.0)
    register("stuck", Stuck, monkeypatch)
    out = _sharded(RunSpec("stuck", "hypercube:3", slots=50), "liveness-stuck", monkeypatch)
    assert "result" not in out
    assert str(out["error"]).startswith("shard 0 made no progress for 1 s (no node step, its heartbeat goes on) "
                                        "while the run waited for the shards to finish slot 2")


def test_a_long_slot_that_moves_is_not_killed(monkeypatch):
    """Each shard's slot takes longer than the silence and stall timeouts (4 steps of 0.8 s
    against 3 s and 2 s), but its node steps move: the run completes, with every node's every slot."""
    _timeouts(monkeypatch, silence=3.0, stall=2.0)
    register("slow", Slow, monkeypatch)
    out = _sharded(RunSpec("slow", "hypercube:3", slots=3), "liveness-slow", monkeypatch)
    assert "error" not in out, out.get("error")
    log = out["result"].metrics["log"]  # type: ignore[attr-defined]
    assert sorted(log) == [(v, s, s) for v in range(8) for s in range(1, 3)]


def test_a_long_start_and_long_slots_beside_a_busy_program_complete(monkeypatch):
    """With another program spinning on the machine, shards whose start-up (building their nodes)
    and slots each outlast the stall limit (1 s against 0.8 s), while each node built and each
    step moves their progress (every 0.25 s: the rest of the limit is for the beat to reach the
    coordinator through a loaded machine), are waited for: the run completes with every node's
    every slot."""
    _timeouts(monkeypatch, silence=10.0, stall=0.8)
    monkeypatch.setattr(_mqtt_link, "HEARTBEAT", 0.1)
    register("slow-start", SlowStart, monkeypatch)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        out = _sharded(RunSpec("slow-start", "hypercube:3", slots=3), "liveness-slow-start", monkeypatch)
    finally:
        spinner.kill()
        spinner.wait()
    assert "error" not in out, out.get("error")
    log = out["result"].metrics["log"]  # type: ignore[attr-defined]
    assert sorted(log) == [(v, s, s) for v in range(8) for s in range(1, 3)]


def test_a_failed_shard_cancelling_its_nodes_reports_the_failure(monkeypatch):
    """A shard whose node failed cancels its other nodes' tasks before it reports; each task that
    ends moves its progress (every 0.15 s: the rest of the limit is for the beat to reach the
    coordinator through a loaded machine), so a cancellation longer than the stall limit (1.05 s
    against 0.6 s) is waited for and the run stops with the node's own failure, not as a shard
    that made no progress."""
    _timeouts(monkeypatch, silence=10.0, stall=0.6)
    register("fails-then-slow", FailsThenSlowToStop, monkeypatch)
    out = _sharded(RunSpec("fails-then-slow", "hypercube:4", slots=50), "liveness-fail-cancel", monkeypatch)
    assert "result" not in out
    assert "node 0 gives up" in str(out["error"]) and "no progress" not in str(out["error"]), out["error"]
