"""Unit tests of a node's context and random stream (``nodes/_context.py``, ``nodes/_rng.py``).

What a scheme reads from its context -- ports, the failure detector's view of them, the
random stream, the clock, the refusal of a wake-up slot that has begun -- is exercised
end to end by every scheme's tests; these pin each piece on its own, so that a change to
one of them fails here, next to its cause (they are the mutation run's selection for
these modules, ``devtools/mutation/run_tests.py``).
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slotnet.fabric import TopologyError, parse_topology
from slotnet.nodes import _context
from slotnet.nodes._context import NodeContext, TracedContext
from slotnet.nodes._rng import NodeRandom, node_rng, node_seed
from slotnet.nodes._runtime import SlotRuntime, _timer


class _Outlet:
    def __init__(self) -> None:
        self.sent: list[tuple[int, Any, float]] = []

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        self.sent.append((port, message, size))

    def capacity_left(self, port: int) -> float:
        return 10.0 + port


def _ctx(topology: str = "hypercube:3", node: int = 5, slot: int = 0, cls: type = NodeContext,
         **kwargs: Any) -> tuple[NodeContext, SimpleNamespace, list[tuple[int, int, str, tuple[Any, ...]]]]:
    clock = SimpleNamespace(slot=slot)
    events: list[tuple[int, int, str, tuple[Any, ...]]] = []
    ctx = cls(node=node, geometry=parse_topology(topology), params={"a": 1}, seed=kwargs.pop("seed", 7),
              outlet=kwargs.pop("outlet", _Outlet()), clock=clock, runtime=kwargs.pop("runtime", SlotRuntime(64)),
              recorder=lambda *e: events.append(e), **kwargs)
    return ctx, clock, events


# -- the random stream ---------------------------------------------------------------------
def test_node_seeds_are_the_documented_derivation():
    """Known answers: a change to how the 128-bit seed is assembled changes every run."""
    assert node_seed(1, 0) == 164305144133135138822006548754738351693
    assert node_seed(7, 5, 2) == 219542844318368368772491671576422786016
    assert node_seed(0, 2**20 - 1, 3) == 313765848377420018485611512924772240272
    r = node_rng(1, 3)
    assert [r.random(), r.random()] == [0.26635601028339995, 0.47444827660485367]


@given(seed=st.integers(0, 2**64), node=st.integers(0, 2**24), inc=st.integers(0, 50))
def test_a_node_seed_is_four_32_bit_words_of_its_seed_sequence(seed, node, inc):
    import numpy as np

    words = np.random.SeedSequence(entropy=seed, spawn_key=(node, inc)).generate_state(4)
    assert node_seed(seed, node, inc) == sum(int(w) << (32 * i) for i, w in enumerate(words))
    assert node_seed(seed, node) == node_seed(seed, node, 0)  # the first incarnation is 0
    assert node_rng(seed, node).getstate() == random.Random(node_seed(seed, node, 0)).getstate()


def test_a_node_random_keeps_no_instance_dict_entries():
    """``gauss_next`` lives in a slot: about 300 bytes a node saved, and the draws unchanged."""
    r = node_rng(3, 4)
    assert isinstance(r, NodeRandom)
    assert vars(r) == {}
    assert r.gauss(0, 1) == random.Random(node_seed(3, 4)).gauss(0, 1)


def test_the_context_stream_is_the_nodes_made_once():
    ctx, _, _ = _ctx(node=6, seed=11, incarnation=2)
    rng = ctx.rng
    assert rng is ctx.rng
    assert rng.getstate() == node_rng(11, 6, 2).getstate()


# -- defaults, clock, record ---------------------------------------------------------------
def test_context_defaults_and_clock():
    ctx, clock, events = _ctx(slot=6)
    assert (ctx.incarnation, ctx.quantum) == (0, 1)
    assert ctx.rng.getstate() == node_rng(7, 5, 0).getstate()
    assert (ctx.slot, ctx.time, ctx.topology, ctx.n_nodes) == (6, 6.0, "hypercube:3", 8)
    assert ctx.params["a"] == 1
    with pytest.raises(TypeError):
        ctx.params["a"] = 2  # type: ignore[index]
    q, clock_q, _ = _ctx(slot=6, quantum=4)
    assert q.time == 1.5
    clock.slot = 9
    ctx.record("born", 1, 2)
    assert events == [(5, 9, "born", (1, 2))]
    assert ctx.capacity_left(2) == 12.0
    assert ctx.coords == (1, 0, 1) and ctx.coords is ctx.coords


# -- ports ---------------------------------------------------------------------------------
def test_ports_port_and_port_to():
    ctx, _, _ = _ctx("hypercube:3", node=5)
    assert [p.index for p in ctx.ports] == [0, 1, 2]
    assert ctx.port(1) == 1  # a hypercube's direction defaults to 0
    assert ctx.port_to(4) == 0 and ctx.port_to(7) == 1 and ctx.port_to(1) == 2
    with pytest.raises(KeyError):
        ctx.port_to(2)
    mesh, _, _ = _ctx("mesh:3x3", node=0)
    assert mesh.port(0, +1) == 0 and mesh.port(0, -1) is None
    with pytest.raises(TopologyError):
        mesh.port(0)  # a mesh or torus port needs its direction
    assert mesh.live_ports == (0, 2)
    assert not mesh.port_alive(1)  # a port the corner lacks is never alive
    assert mesh.port_alive(2)
    assert not mesh.port_alive(99)


def test_nodes_with_the_same_ports_share_one_tuple(monkeypatch):
    monkeypatch.setattr(_context, "_PORT_IDS", {})
    a, _, _ = _ctx("hypercube:3", node=1)
    b, _, _ = _ctx("hypercube:3", node=6)
    assert a.live_ports == (0, 1, 2) and a.live_ports is b.live_ports
    for k in range(3 * _context._PORT_IDS_KEPT):  # distinct tuples: the shared table stays bounded
        ids = tuple(range(k + 1))
        assert _context._shared(ids) == ids
    assert len(_context._PORT_IDS) == _context._PORT_IDS_KEPT


#: from slot 3, port 1 dead; from slot 6, ports 0 and 2; from slot 9, none
DEAD = ([3, 6, 9], [0b010, 0b101, 0])


@pytest.mark.parametrize("detect", [0, 2])
def test_the_failure_detector_reports_port_deaths_detect_slots_late(detect):
    ctx, clock, _ = _ctx("hypercube:3", dead_ports=DEAD, detect=detect)
    for slot in range(0, 13):
        clock.slot = slot
        seen = slot - detect
        dead = {1} if 3 <= seen < 6 else {0, 2} if 6 <= seen < 9 else set()
        assert ctx.live_ports == tuple(p for p in (0, 1, 2) if p not in dead), slot
        assert [ctx.port_alive(p) for p in (0, 1, 2)] == [p not in dead for p in (0, 1, 2)], slot
        assert not ctx.port_alive(3)


def test_the_detector_delay_defaults_to_none():
    ctx, clock, _ = _ctx("hypercube:3", dead_ports=DEAD)
    clock.slot = 3
    assert ctx.live_ports == (0, 2) and not ctx.port_alive(1)


def test_without_a_dead_port_schedule_every_port_is_alive():
    ctx, _, _ = _ctx("torus:4x4", node=0)
    assert ctx.live_ports == (0, 1, 2, 3)
    assert all(ctx.port_alive(p) for p in range(4))


# -- idle and next_slot ----------------------------------------------------------------------
@pytest.mark.parametrize(("until", "began"), [(21, "which is the current slot"), (19, "which began 2 slot(s) ago")])
def test_idle_refuses_a_slot_that_has_begun(until, began):
    ctx, _, _ = _ctx(node=3, slot=21)
    with pytest.raises(ValueError) as err:
        ctx.idle(until)
    assert str(err.value) == (f"node 3 asked to sleep until slot {until}, {began} (slot 21 is running): "
                              "idle(until=...) must name a later slot, at least 22")


def test_idle_parks_until_a_later_slot():
    runtime = SlotRuntime(8)
    ctx, _, _ = _ctx(node=3, slot=21, runtime=runtime)
    ctx.idle(25)
    assert runtime.timers == [_timer(25, 3, 0)] and runtime.active == []
    ctx2, _, _ = _ctx(node=4, slot=21, runtime=runtime)
    nxt = ctx2.idle(22)  # due next slot anyway: no timer
    assert runtime.active == [nxt] and len(runtime.timers) == 1


# -- the traced context ------------------------------------------------------------------------
def test_a_traced_context_sends_and_writes_the_send_to_the_trace():
    taps: list[tuple[int, int, str, dict[str, Any]]] = []
    outlet = _Outlet()
    ctx, _, _ = _ctx(cls=TracedContext, node=2, slot=4, outlet=outlet, tap=lambda *t: taps.append(t))
    ctx.send(1, b"m")
    ctx.send(2, b"n", 0.5)
    assert outlet.sent == [(1, b"m", 1.0), (2, b"n", 0.5)]
    assert taps == [(2, 4, "sent", {"port": 1, "message": b"m", "size": 1.0}),
                    (2, 4, "sent", {"port": 2, "message": b"n", "size": 0.5})]


def test_a_traced_context_writes_each_reception_to_the_trace():
    taps: list[tuple[int, int, str, dict[str, Any]]] = []
    ctx, clock, _ = _ctx(cls=TracedContext, node=2, slot=4, tap=lambda *t: taps.append(t))
    inbox = [(0, b"a"), (2, b"b")]

    async def parked() -> list[tuple[int, Any]]:
        clock.slot = 5  # the node wakes in the next slot
        return inbox

    step = ctx._traced(parked())  # what next_slot() and idle() return, driven by hand
    with pytest.raises(StopIteration) as done:
        step.send(None)
    assert done.value.value is inbox
    assert taps == [(2, 5, "received", {"port": 0, "message": b"a"}),
                    (2, 5, "received", {"port": 2, "message": b"b"})]


# -- events: the observer's handlers, called by the context itself ------------------------
def test_record_calls_a_given_handler_itself_and_the_recorder_for_the_rest():
    """An untraced context calls the reporter's handler with (node, slot, *values); a kind
    it has no handler for (the orchestrator refuses it there) and a context given no
    handlers go through the recorder, with the values as one tuple."""
    calls: list[tuple[Any, ...]] = []
    ctx, clock, events = _ctx(node=3, slot=9, handlers={"step": lambda *a: calls.append(a)})
    ctx.record("step", 1, [2], (3,))
    assert calls == [(3, 9, 1, [2], (3,))] and events == []
    clock.slot = 10
    ctx.record("other", 4)
    assert events == [(3, 10, "other", (4,))] and len(calls) == 1
    plain, _, plain_events = _ctx(node=2, slot=4)
    plain.record("step", 1)
    assert plain_events == [(2, 4, "step", (1,))]


def test_a_handler_added_after_the_context_was_made_is_called_too():
    """The context reads the observer's handlers as they are at each event, not a copy."""
    handlers: dict[str, Any] = {}
    calls: list[tuple[Any, ...]] = []
    ctx, _, events = _ctx(node=1, slot=2, handlers=handlers)
    ctx.record("late", 5)
    handlers["late"] = lambda *a: calls.append(a)
    ctx.record("late", 6)
    assert events == [(1, 2, "late", (5,))] and calls == [(1, 2, 6)]
