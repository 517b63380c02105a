"""The await guard (``orchestrator/engine/_await_guard.py``): a node awaiting anything but its context's
slot primitives is refused at the slot barrier, without the watchdog, in one process and in a shard;
a node that only holds the loop (busy in its step) is never taken for one."""

from __future__ import annotations

import json
import time

import pytest
import trio

from slotnet import RunSpec, run
from slotnet.errors import ForeignAwait
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory
from tests.support.user_ring import TokenRing, user_scheme

HERE = __file__.rsplit("/", 1)[-1]


class SleepsLate(TokenRing):
    """Node 2 awaits trio.sleep(30) in slot 1 (a guard that failed would let the run finish after 30 s)."""

    async def run(self) -> None:
        if self.ctx.node == 2:
            await self.ctx.next_slot()
            await trio.sleep(30)
        await super().run()


class WaitsForAnEvent(TokenRing):
    """Node 1 awaits an event no one sets, through a helper of its own."""

    async def _wait(self) -> None:
        await trio.Event().wait()

    async def run(self) -> None:
        if self.ctx.node == 1:
            await self._wait()
        await super().run()


class Busy(TokenRing):
    """Node 3 spends wall-clock time inside its step without awaiting anything else: allowed."""

    async def run(self) -> None:
        if self.ctx.node == 3:
            time.sleep(0.05)
        await super().run()


def test_trio_sleep_is_refused_with_what_and_where():
    """trio.sleep in slot 1: ForeignAwait naming node 2, slot 1, trio.sleep and the line of the await."""
    with user_scheme("guard-sleep", SleepsLate) as name, pytest.raises(ForeignAwait) as got:
        run(RunSpec(name, "torus:6", node_timeout=None))
    exc = got.value
    assert (exc.node, exc.slot) == (2, 1)
    assert str(exc).startswith("node 2 awaited trio.sleep at ") and f"{HERE}:" in str(exc)
    assert str(exc).endswith("in run in slot 1: a node may await only its context's slot primitives (ctx.next_slot(), "
                             "ctx.idle()), never trio.sleep, an event or any other awaitable")
    assert exc.to_dict()["kind"] == "foreign_await"


def test_an_event_awaited_in_a_helper_is_refused():
    """The innermost frame of the node's own code names the helper's line and what it awaited."""
    with user_scheme("guard-event", WaitsForAnEvent) as name, pytest.raises(ForeignAwait) as got:
        run(RunSpec(name, "torus:6", node_timeout=None))
    assert got.value.node == 1 and got.value.slot == 0
    assert str(got.value).startswith("node 1 awaited trio.Event.wait at ") and "in _wait in slot 0" in str(got.value)


def test_a_busy_step_is_not_a_foreign_await():
    """A step that holds the loop a while but awaits only its context completes the task."""
    with user_scheme("guard-busy", Busy) as name:
        result = run(RunSpec(name, "torus:6", node_timeout=None))
    assert result.complete is True and result.verdict == {"ok": True, "reasons": []}


def test_a_shard_refuses_it_too():
    """Two shards in this process: the shard hosting node 2 refuses its trio.sleep in the same words."""
    with user_scheme("guard-shard", SleepsLate) as name, pytest.raises(ForeignAwait) as got:
        trio.run(lambda: run_sharded_in_memory(RunSpec(name, "torus:6", shards=2, node_timeout=None).prepare()))
    assert (got.value.node, got.value.slot) == (2, 1) and str(got.value).startswith("node 2 awaited trio.sleep at ")


def test_the_cli_prints_one_line_and_exits_1(capsys):
    """slotnet run: one line on stderr, exit status 1; --json gives the error object."""
    with user_scheme("guard-cli", SleepsLate) as name:
        assert main(["run", name, "-t", "torus:6", "--no-progress", "--node-timeout", "0"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("slotnet run: failed: node 2 awaited trio.sleep at ") and err.count("\n") == 1
        assert main(["run", name, "-t", "torus:6", "--no-progress", "--json"]) == 1
        d = json.loads(capsys.readouterr().out)
    assert d["error"]["kind"] == "foreign_await" and d["error"]["node"] == 2 and d["error"]["slot"] == 1
