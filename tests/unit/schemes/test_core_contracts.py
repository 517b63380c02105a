"""The core's contracts for schemes: geometry, capacity, durations, quiescence, registry, errors."""

from __future__ import annotations

import sys
import textwrap
from types import SimpleNamespace

import pytest

from slotnet import NodeFailure, RunSpec, SpecError, run
from slotnet.errors import CapacityError, FabricError
from slotnet.nodes import Node
from slotnet.schemes import SCHEMES, _registry
from slotnet.schemes.kit import ClassQueues, PortQueues
from tests.support.probes import register


class Geo(Node):
    """Each node logs its coordinates and the ports it has along every dimension."""

    async def run(self) -> None:
        ctx = self.ctx
        ports = [(ctx.port(k, 1), ctx.port(k, -1)) for k in range(ctx.geometry.d)]
        ctx.record("log", (ctx.coords, ports, ctx.geometry.node_at(ctx.coords) == ctx.node))
        await ctx.idle()


def test_context_gives_coordinates_and_ports_by_dimension(monkeypatch):
    """On a 3x4 mesh, ctx.coords is mixed-radix (dim 0 fastest) and boundary ports are None."""
    register("geo", Geo, monkeypatch)
    log = {node: what for node, _, what in run(RunSpec("geo", "mesh:3x4", slots=2)).metrics["log"]}
    assert log[0] == ((0, 0), [(0, None), (2, None)], True)
    assert log[5] == ((2, 1), [(None, 1), (2, 3)], True)
    assert log[11] == ((2, 3), [(None, 1), (None, 3)], True)
    torus = {n: w for n, _, w in run(RunSpec("geo", "torus:3x4", slots=2)).metrics["log"]}
    assert torus[0] == ((0, 0), [(0, 1), (2, 3)], True)


class Filler(Node):
    """Node 0 fills port 0 with 0.25-unit messages, logging capacity_left before each."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            seen = []
            for _ in range(4):
                seen.append(ctx.capacity_left(0))
                ctx.send(0, "x", 0.25)
            seen.append(ctx.capacity_left(0))
            ctx.record("log", seen)
            await ctx.next_slot()
            ctx.record("log", ctx.capacity_left(0))
        await ctx.idle()


def test_capacity_left_counts_down_within_a_slot(monkeypatch):
    """capacity_left falls by each send's size and is whole again next slot."""
    register("fill", Filler, monkeypatch)
    log = [w for _, _, w in run(RunSpec("fill", "hypercube:1", slots=3)).metrics["log"]]
    assert log == [[1.0, 0.75, 0.5, 0.25, 0.0], 1.0]


class Timed(Node):
    """At quantum 4: node 0 sends a whole packet (4 ticks) then a quarter (1 tick) on port 0."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            ctx.send(0, "packet", 1.0)
            for _ in range(4):
                ctx.record("log", ("left", ctx.slot, ctx.capacity_left(0)))
                await ctx.next_slot()
            ctx.send(0, "quarter", 0.25)
            return
        inbox = await ctx.idle()
        ctx.record("log", ("got", ctx.slot, ctx.time, list(inbox)))
        inbox = await ctx.idle()
        ctx.record("log", ("got", ctx.slot, ctx.time, list(inbox)))


def test_messages_hold_their_link_for_their_duration(monkeypatch):
    """At quantum 4 a size-1 packet arrives 4 ticks later, a 1/4 message 1 tick later; the link is busy meanwhile."""
    register("timed", Timed, monkeypatch, quantum=lambda p: 4, until="quiescent")
    r = run(RunSpec("timed", "hypercube:1", slots=50))
    log = [w for _, _, w in sorted(r.metrics["log"], key=lambda e: (e[1], e[0]))]
    assert log[:4] == [("left", 0, 0.0), ("left", 1, 0.0), ("left", 2, 0.0), ("left", 3, 0.0)]
    assert ("got", 4, 1.0, [(0, "packet")]) in log
    assert ("got", 5, 1.25, [(0, "quarter")]) in log
    assert r.completion == {"complete": True, "slot": 5, "time": 1.25}
    assert r.metrics["completion_time"] == 1.25


class Eager(Node):
    """Sends a second whole packet while the first still holds the link."""

    async def run(self) -> None:
        self.ctx.send(0, "a", 1.0)
        await self.ctx.next_slot()
        self.ctx.send(0, "b", 1.0)


def test_sending_on_a_busy_link_is_refused(monkeypatch):
    """A multi-tick message keeps its link: a send before it ends is a CapacityError."""
    register("eager", Eager, monkeypatch, quantum=lambda p: 3)
    with pytest.raises(CapacityError, match="port 0 in slot 1"):
        run(RunSpec("eager", "hypercube:1", slots=5))


class Odd(Node):
    async def run(self) -> None:
        self.ctx.send(0, "x", 0.3)
        await self.ctx.idle()


def test_a_size_that_is_not_a_whole_number_of_ticks_is_refused(monkeypatch):
    """0.3 units at quantum 4 is 1.2 ticks: refused, naming the quantum."""
    register("odd", Odd, monkeypatch, quantum=lambda p: 4)
    with pytest.raises(FabricError, match="quantum 4"):
        run(RunSpec("odd", "hypercube:1", slots=5))


class Relay(Node):
    """A token walks along a 1-D mesh from node 0 to the end; each node returns once done."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node != 0:
            await ctx.idle()
        right = ctx.port(0, 1)
        if right is not None:
            ctx.send(right, ctx.node)


def test_one_shot_runs_stop_at_quiescence_with_the_completion_slot(monkeypatch):
    """A scheme declaring until='quiescent' stops when nothing is left; the completion slot is the last active one."""
    register("relay", Relay, monkeypatch, until="quiescent")
    r = run(RunSpec("relay", "mesh:6", slots=1000))
    assert r.completion == {"complete": True, "slot": 5, "time": 5.0}
    assert r.slots_run == 6
    short = run(RunSpec("relay", "mesh:6", slots=4))
    assert short.completion == {"complete": False, "slot": None, "time": None, "stopped_at_slot": 3, "ended_by": "slots"}


class BadInit(Node):
    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        raise ValueError("no such thing")

    async def run(self) -> None:  # pragma: no cover - never reached
        await self.ctx.idle()


def test_a_failing_node_constructor_is_named(monkeypatch):
    """An exception in a node's __init__ is a NodeFailure naming the node and slot."""
    register("badinit", BadInit, monkeypatch)
    with pytest.raises(NodeFailure, match="node 0 failed in slot 0: ValueError: no such thing"):
        run(RunSpec("badinit", "hypercube:2", slots=3))


def test_param_values_are_checked_whatever_their_type():
    """A non-string API value outside a parameter's choices is refused before the run."""
    with pytest.raises(SpecError, match="discipline=7"):
        RunSpec("bcast-dtree", "hypercube:3", params={"discipline": 7}, load={"rho": 0.1}).prepare()
    with pytest.raises(SpecError, match="idling=1"):
        RunSpec("bcast-indirect", "hypercube:3", params={"idling": 1}, load={"rho": 0.1}).prepare()


def test_queues_exist_only_for_the_ports_a_node_has():
    """Port-keyed queues on a mesh corner (ports 0 and 2) serve those ports, in index order."""
    q = PortQueues([2, 0])
    q.add(("a", 1), [0, 2])
    q.add(("b", 2), [2])
    assert q.ports == (0, 2) and list(q.busy()) == [0, 2]
    assert q.pop(0) == ("a", 1) and q.held == 2
    assert q.pop(2) == ("a", 1) and q.held == 1
    with pytest.raises(AttributeError):
        q.add(("c", 3), [1])  # no queue for a port the node lacks
    c = ClassQueues([1, 3], classes=3)
    c.add(("low", 1), [(1, 2)])
    c.add(("mid", 2), [(1, 1), (3, 1)])
    c.add(("high", 3), [(1, 0)])
    assert [c.pop(1) for _ in range(3)] == [("high", 3), ("mid", 2), ("low", 1)]
    assert c.held == 1 and list(c.busy()) == [3]


def test_scheme_packages_of_other_distributions_are_found(tmp_path, monkeypatch):
    """A package published in the slotnet.schemes entry-point group joins the registry."""
    pkg = tmp_path / "thirdparty_scheme"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from slotnet.schemes import Scheme
        from slotnet.schemes.kit import BaseReporter
        from slotnet.nodes import Node

        class Quiet(Node):
            async def run(self):
                await self.ctx.idle()

        class R(BaseReporter):
            def handlers(self):
                return {}
            def metrics(self):
                return {"quiet": True}

        SCHEMES = (Scheme("third-party", "a plugin", "tests", Quiet, R, lambda t, p, l: dict(p)),)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = SimpleNamespace(name="thirdparty", value="thirdparty_scheme",
                           load=lambda: __import__("thirdparty_scheme"))
    monkeypatch.setattr(_registry, "entry_points", lambda group: [fake] if group == "slotnet.schemes" else [])
    registry = _registry._Registry("SCHEMES", "name")
    assert "third-party" in registry and "deflection" in registry
    monkeypatch.setitem(SCHEMES, "third-party", registry["third-party"])
    assert run(RunSpec("third-party", "hypercube:2", slots=3)).metrics["quiet"] is True
    sys.modules.pop("thirdparty_scheme", None)


class Negative(Node):
    async def run(self) -> None:
        self.ctx.send(-1, "x")
        await self.ctx.idle()


def test_a_negative_port_is_refused(monkeypatch):
    """Port -1 is not 'the last port': the fabric refuses it, naming the node."""
    register("negative", Negative, monkeypatch)
    with pytest.raises(FabricError, match="node 0 has no port -1"):
        run(RunSpec("negative", "hypercube:2", slots=3))
