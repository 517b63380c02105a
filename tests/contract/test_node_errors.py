"""Errors that point at the user's code: the rule's file and line, a watchdog for a node that
never lets go, and one-line errors for a wrong port or a wrong wake-up slot."""

from __future__ import annotations

import inspect

import pytest
import trio

from slotnet import NodeFailure, RunSpec, run
from slotnet.errors import ForeignAwait, NodeTimeout
from tests.support.user_ring import TokenRing, user_scheme

HERE = __file__.rsplit("/", 1)[-1]


def _line_of(cls: type, text: str) -> int:
    """The line of ``cls``'s source that holds ``text``."""
    lines, first = inspect.getsourcelines(cls)
    return first + next(i for i, line in enumerate(lines) if text in line)


class Raises(TokenRing):
    """Node 1 looks up a key that is not there in slot 1."""

    async def run(self) -> None:
        if self.ctx.node == 1:
            await self.ctx.next_slot()
            self.table: dict[str, int] = {}
            self.table["missing"] += 1
        await super().run()


class Loops(TokenRing):
    """Node 2 loops forever without awaiting, in slot 1."""

    async def run(self) -> None:
        if self.ctx.node == 2:
            await self.ctx.next_slot()
            n = 0
            while True:
                n += 1
        await super().run()


class Sleeps(TokenRing):
    """Node 4 awaits trio.sleep instead of its context."""

    async def run(self) -> None:
        if self.ctx.node == 4:
            await trio.sleep(3600)
        await super().run()


class WrongPort(TokenRing):
    """Every node sends to node 3, a neighbour of only two of them."""

    async def run(self) -> None:
        self.ctx.send(self.ctx.port_to(3), 1)


class WrongUntil(TokenRing):
    """Every node sleeps until 'soon'."""

    async def run(self) -> None:
        await self.ctx.idle(until="soon")


def test_a_failure_names_the_file_and_line_of_the_rule():
    """The one-line message ends with (at FILE:LINE in run) of the raising line; the traceback and its dict hold the rest."""
    with user_scheme("err-raises", Raises) as name, pytest.raises(NodeFailure) as got:
        run(RunSpec(name, "torus:6"))
    exc = got.value
    line = _line_of(Raises, 'self.table["missing"] += 1')
    assert str(exc).startswith("node 1 failed in slot 1: KeyError: 'missing' (at ")
    assert str(exc).endswith(f"{HERE}:{line} in run)") and "\n" not in str(exc)
    assert exc.where is not None and exc.where[1:] == (line, "run")
    assert "Traceback (most recent call last)" in exc.traceback and 'self.table["missing"] += 1' in exc.traceback
    d = exc.to_dict()
    assert d["node"] == 1 and d["slot"] == 1 and d["line"] == line and d["exception"] == "KeyError"


def test_a_node_looping_without_await_is_named_by_the_watchdog():
    """A node that never awaits ends the run (no hang) with a NodeTimeout naming node 2, slot 1 and its loop's line."""
    with user_scheme("err-loops", Loops) as name, pytest.raises(NodeTimeout) as got:
        run(RunSpec(name, "torus:6", node_timeout=0.5))
    exc = got.value
    assert exc.node == 2 and exc.slot == 1
    assert str(exc).startswith("node 2 held the run for more than 0.5 s of wall-clock time in slot 1 without awaiting")
    assert f"{HERE}:" in str(exc) and "--node-timeout" in str(exc)


def test_awaiting_trio_sleep_is_refused_with_a_message_saying_so():
    """A node awaiting trio.sleep(3600) is refused at the slot barrier, no watchdog needed: named with what it
    awaited and the line of its await, and told what it may await."""
    with user_scheme("err-sleeps", Sleeps) as name, pytest.raises(ForeignAwait) as got:
        run(RunSpec(name, "torus:6", node_timeout=None))
    exc = got.value
    line = _line_of(Sleeps, "await trio.sleep(3600)")
    assert exc.node == 4 and exc.slot == 0
    assert str(exc).startswith("node 4 awaited trio.sleep at ")
    assert f"{HERE}:{line} in run in slot 0" in str(exc) and "(ctx.next_slot(), ctx.idle())" in str(exc)
    assert "\n" not in str(exc)


def test_port_to_a_non_neighbour_says_so():
    """port_to(3) at node 0 of the 6-ring names node 0's neighbours, in one line with the rule's line."""
    with user_scheme("err-port", WrongPort) as name, pytest.raises(NodeFailure) as got:
        run(RunSpec(name, "torus:6"))
    assert str(got.value).startswith("node 0 failed in slot 0: NotANeighbour: ctx.port_to(3) at node 0: node 3 is not "
                                     "a neighbour of node 0 (its neighbours: 1, 5)")
    assert isinstance(got.value.error, KeyError)


def test_idle_until_a_non_slot_says_what_until_takes():
    """idle(until='soon') fails in one line naming the value, its type and what until takes."""
    with user_scheme("err-until", WrongUntil) as name, pytest.raises(NodeFailure) as got:
        run(RunSpec(name, "torus:6"))
    assert str(got.value).startswith("node 0 failed in slot 0: TypeError: node 0 asked to sleep until 'soon' (a str) "
                                     "in slot 0: ctx.idle(until=...) takes a slot number")


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), True, "10"])
def test_node_timeout_must_be_positive_seconds(bad):
    """A node_timeout that is no positive finite number of seconds is refused before the first slot."""
    from slotnet import SpecError

    with pytest.raises(SpecError, match="node_timeout must be a number of seconds > 0"):
        RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, node_timeout=bad).prepare()
