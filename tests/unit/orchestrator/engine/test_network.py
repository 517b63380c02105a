"""Unit and small-run tests of the network of a run and the one-process driver.

The network's slot rules (faults, stalls, restarts, the follow witness, dead-port sends)
are pinned on a few short runs under every fault kind: the result must be the same
whichever path the events take (direct handlers, a buffered batch, a transport whose
outlets cannot report their own sends), and equal to the digest pinned here.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from slotnet import RunSpec, TraceSpec, run
from slotnet.errors import SlotnetError
from slotnet.fabric import InProcessTransport, SlotClock
from slotnet.orchestrator import WALL_CLOCK_FIELDS, run_async
from slotnet.orchestrator.engine._driver import in_process
from slotnet.orchestrator.engine._network import _FollowedSend, checked_handlers
from slotnet.orchestrator.tools._trace_query import read_trace
from slotnet.schemes import get_scheme

FAULTS = ["crash@10:3", "recover@20:3", "stall@5:8:6", "link-down@12:2:1", "link-up@15:2:1",
          "partition@25:28:0-3", "loss=0.05", "dup=0.03", "delay=0.05:2", "corrupt=0.03", "detect=2"]


# -- handlers and the follow witness ---------------------------------------------------------------

class _Rep:
    events = {"x": ("a", "b"), "y": ()}

    def __init__(self, handlers: dict[str, Any]) -> None:
        self._h = handlers

    def handlers(self):
        return self._h


def test_checked_handlers():
    def good(node, slot, a, b):
        pass

    def y(node, slot):
        pass

    got = checked_handlers(_Rep({"x": good, "y": y, "extra": print}))
    assert got == {"x": good, "y": y, "extra": print}
    with pytest.raises(SlotnetError) as e:
        checked_handlers(_Rep({"y": y}))
    assert str(e.value) == "reporter _Rep declares event 'x' but has no handler for it"

    def bad(node, slot, a):
        pass

    with pytest.raises(SlotnetError) as e:
        checked_handlers(_Rep({"x": bad, "y": y}))
    assert str(e.value) == "reporter _Rep: the handler of 'x' does not take (node, slot, a, b)"

    def bad_y(node):
        pass

    with pytest.raises(SlotnetError) as e:
        checked_handlers(_Rep({"x": good, "y": bad_y}))
    assert str(e.value) == "reporter _Rep: the handler of 'y' does not take (node, slot, )"


def test_followed_send_reports_followed_packets():
    sent: list[tuple[Any, ...]] = []
    hops: list[tuple[Any, ...]] = []
    clock = SlotClock()
    clock.slot = 6
    follow = lambda m: None if m == "ctl" else (m[0], m[1])
    send = _FollowedSend(lambda *a: sent.append(a), 4, (follow, lambda *a: hops.append(a), clock))
    send(2, (9, 3))
    send(1, "ctl", 2.5)
    assert sent == [(2, (9, 3), 1.0), (1, "ctl", 2.5)]
    assert hops == [(4, 6, 2, 9, 3)]

    def refuse(*a):
        raise SlotnetError("over capacity")

    with pytest.raises(SlotnetError):
        _FollowedSend(refuse, 4, (follow, lambda *a: hops.append(a), clock))(0, (1, 1))
    assert len(hops) == 1  # a refused send is no hop


# -- small runs, pinned --------------------------------------------------------------------------------

def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in WALL_CLOCK_FIELDS}


def _digest(result: Any) -> str:
    d = _strip(result.to_dict(per_node=True, series=True))
    return hashlib.sha256(json.dumps(d, sort_keys=True, default=repr).encode()).hexdigest()[:16]


class _BareOutlet:
    """An outlet of another transport: no ``watch``, no ``started_ports``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("watch", "started_ports"):
            raise AttributeError(name)
        return getattr(self._inner, name)


class _BareTransport:
    def __init__(self, inner: InProcessTransport) -> None:
        self._inner = inner

    def outlet(self, node: int) -> Any:
        return _BareOutlet(self._inner.outlet(node))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _bare(prep, clock, on_lost):
    return _BareTransport(in_process(prep, clock, on_lost))


def _deflection(tmp_path: Path, name: str, **kw: Any):
    path = tmp_path / name
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=40, seed=3, faults=FAULTS,
                   trace=TraceSpec(str(path)), **kw)
    return run(spec), path


def test_a_faulted_deflection_run_is_the_same_on_every_event_path(tmp_path: Path):
    direct, t1 = _deflection(tmp_path, "direct.jsonl")
    buffered, t2 = _deflection(tmp_path, "buffered.jsonl", observer="buffered")
    bare, t3 = _deflection(tmp_path, "bare.jsonl", transport=_bare)
    assert t1.read_bytes() == t2.read_bytes() == t3.read_bytes()
    assert _digest(direct) == _digest(buffered)
    assert _strip(direct.to_dict())["metrics"] == _strip(bare.to_dict())["metrics"]
    assert direct.invariants == bare.invariants
    assert direct.fault_impact == bare.fault_impact
    assert direct.trace_fingerprint == "005431e0ba157238a56fdddc8c8a267fd56819b7746bd5d7c6205178cd3edd7c"
    assert _digest(direct) == "1f4065b0b2941657"  # the untraced digest with the trace fingerprint (its header) added
    events = list(read_trace(t1))
    faults = {e.get("fault") for e in events if e["event"] == "fault"}
    assert faults >= {"crash", "recover", "stall", "stall-end", "link-down", "link-up", "partition", "dup", "delay"}
    assert {e.get("cause") for e in events if e["event"] == "lost"} >= {"loss", "node_down", "link_down"}
    assert direct.slots_run == 40


def test_a_faulted_deflection_run_untraced_is_the_traced_one(tmp_path: Path):
    traced, _ = _deflection(tmp_path, "t.jsonl")
    plain = run(RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=40, seed=3, faults=FAULTS))
    assert _strip(traced.to_dict())["metrics"] == _strip(plain.to_dict())["metrics"]
    assert traced.fault_impact == plain.fault_impact
    assert _digest(plain) == "838c79f633ac4b7b"


def test_a_partial_trace(tmp_path: Path):
    path = tmp_path / "part.jsonl"
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=40, seed=3, faults=FAULTS,
                   trace=TraceSpec(str(path), nodes=frozenset({3, 6}), slots=(4, 22)))
    result = run(spec)
    events = list(read_trace(path))
    assert {e["node"] for e in events} == {3, 6}
    assert min(e["slot"] for e in events) >= 4 and max(e["slot"] for e in events) < 22
    kinds = {(e["node"], e.get("fault")) for e in events if e["event"] == "fault"}
    assert {(3, "crash"), (3, "recover"), (6, "stall"), (6, "stall-end")} <= kinds
    assert result.trace_fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(("faults", "pinned"), [
    (["stall@0:3:5", "crash@2:1", "recover@4:1"], "2323578065746402"),
    (["crash@0:2", "recover@0:2", "stall@1:2:6"], "4f8903379d0e1712"),
    (["stall@0:4:3", "crash@5:3", "recover@8:3"], "229317444d39f17e"),
    (["stall@2:9:1", "link-down@4:1:0", "crash@10:1"], "9e67b3c0ffc8b905"),
])
def test_stalls_and_restarts_on_every_path(tmp_path: Path, faults, pinned):
    base = dict(load={"offered": 1.0}, slots=20, seed=5, faults=faults)
    direct = run(RunSpec("deflection", "hypercube:3", **base))
    buffered = run(RunSpec("deflection", "hypercube:3", **base, observer="buffered"))
    bare = run(RunSpec("deflection", "hypercube:3", **base, transport=_bare))
    assert _digest(direct) == _digest(buffered) == pinned
    assert direct.metrics == bare.metrics and direct.fault_impact == bare.fault_impact


def test_a_scheme_that_follows_no_packet_under_faults():
    spec = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.3}, slots=20, seed=2,
                   faults=["crash@4:1", "stall@0:3:2", "detect=0", "link-down@2:5:0"])
    assert get_scheme("bcast-simple").follow is None
    assert _digest(run(spec)) == "0d6d5f8e0e16ec24"


def test_a_one_shot_task_under_faults():
    result = run(RunSpec("m2o-greedy", "mesh:3x3", seed=3, faults=["stall@0:2:4", "crash@3:7", "recover@5:7"]))
    assert result.slots_run == 4
    assert _digest(result) == "c8e7377992020c3e"


def _run(spec: RunSpec, seen: list[int]) -> Any:
    return trio.run(lambda: run_async(spec, on_slot=seen.append))


def test_the_one_shot_task_ends_when_quiescent():
    seen: list[int] = []
    result = _run(RunSpec("m2o-greedy", "mesh:3x3", seed=3), seen)
    assert result.completion is not None and result.completion["complete"] is True
    assert result.slots_run == len(seen) and seen == list(range(result.slots_run))
    assert result.slots_run == 4 and result.completion == {"complete": True, "slot": 3, "time": 3.0}
    assert _digest(result) == "d1a29a31bd27203c"


def test_a_one_shot_task_cut_short_is_incomplete():
    result = run(RunSpec("m2o-greedy", "mesh:4x4", seed=3, slots=2))
    assert result.slots_run == 2
    assert result.completion is not None and result.completion["complete"] is False


def test_a_run_for_its_slots_runs_every_slot():
    seen: list[int] = []
    t0 = time.perf_counter()
    result = _run(RunSpec("deflection", "hypercube:2", load={"offered": 0.2}, slots=6, warmup=1, seed=1), seen)
    spent = time.perf_counter() - t0
    assert seen == [0, 1, 2, 3, 4, 5] and result.slots_run == 6
    assert 0 < result.wall_seconds <= spent


def test_an_unstable_run_stops_after_the_slot_its_monitor_says():
    seen: list[int] = []
    result = _run(RunSpec("deflection", "hypercube:3", load={"lam": 3.0}, slots=200, seed=1,
                          max_backlog_per_node=2), seen)
    assert result.stability["stable"] is False and result.stability["stopped_at_slot"] == 1
    assert result.slots_run == 2 and seen == [0, 1]


# -- the network, built but not run ----------------------------------------------------------------------

from slotnet.fabric import decode  # noqa: E402
from slotnet.nodes.runtime import TracedContext  # noqa: E402
from slotnet.orchestrator.engine._network import Network  # noqa: E402
from slotnet.orchestrator.engine._observer import SlotBatch  # noqa: E402
from slotnet.orchestrator.engine._trace import TraceBuffer  # noqa: E402


def _net(*, faults: Any = (), tracer: TraceBuffer | None = None, batch: Any = None, local: range | None = None,
         handlers: Any = "reporter", transport: Any = None, scheme: str = "deflection", load: Any = None):
    prep = RunSpec(scheme, "hypercube:2", load=load or {"offered": 0.5}, slots=10, seed=4,
                   faults=list(faults)).prepare(check_memory=False)
    if handlers == "reporter":
        handlers = checked_handlers(prep.scheme.reporter(prep.setup))
    lost: list[tuple[Any, ...]] = []
    factory = transport or in_process
    net = Network(prep, lambda clock, on_lost: factory(prep, clock, on_lost), handlers=handlers, batch=batch,
                  on_lost=lambda *a: lost.append(a), tracer=tracer, local=local)
    return net, lost


def test_a_new_network():
    net, _ = _net()
    assert net.local == range(4)
    assert net.last_active == -1
    assert net.held() == [0, 0, 0, 0] and net.held_packets() == [(), (), (), ()]
    assert net.restarts == [] and net.crashed == []
    assert all(c is not None and c.incarnation == 0 and c.node == v for v, c in enumerate(net.contexts))
    assert all(type(c) is not TracedContext for c in net.contexts)
    assert net.nodes == [None] * 4 and net.scopes == [None] * 4
    assert net._scoped is False and net._watched == [] and net._timeline == {}
    assert net._watching is True  # the fabric's outlets report followed sends themselves
    assert net.quiescent() is True
    net._stalled[2] = False
    assert net.quiescent() is False


def test_a_network_of_some_nodes():
    net, _ = _net(local=range(1, 3))
    assert net.local == range(1, 3)
    assert net.outlets[0] is None and net.outlets[1] is not None and net.outlets[3] is None
    assert net.contexts[0] is None and net.contexts[2] is not None
    net.stall(0, True, 5)
    net.crash(3)
    net.recover(0)
    assert net._stalled == {} and net.restarts == []
    assert net.is_alive(0) and net.is_alive(3)


def test_a_network_under_faults():
    net, _ = _net(faults=["crash@3:1", "detect=1"])
    assert net._scoped is True
    assert net._detect == 1
    assert set(net._timeline) == {0, 3} and net._watched == [0, 3]
    net, _ = _net(faults=["crash@3:1", "detect=never"])
    assert net._timeline == {} and net._watched == [] and net._detect is None
    assert net.contexts[0]._detect == 0
    net, _ = _net(faults=["detect=2"])
    assert net._timeline == {} and net._watched == [] and net._scoped is False
    net, _ = _net(faults=["detect=0", "crash@3:1"])
    assert net._detect == 0 and net._watched == [0, 3]
    assert net.contexts[0]._detect == 0
    net, _ = _net(faults=["detect=3", "crash@3:1"])
    assert net.contexts[0]._detect == 3


def test_the_network_records_events():
    calls: list[tuple[Any, ...]] = []
    prep = RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=10).prepare(check_memory=False)
    handlers = dict(checked_handlers(prep.scheme.reporter(prep.setup)))
    handlers["born"] = lambda *a: calls.append(a)
    net, _ = _net(handlers=handlers)
    net._record(2, 5, "born", (7, 8))
    assert calls == [(2, 5, 7, 8)]
    with pytest.raises(SlotnetError) as e:
        net._record(2, 5, "zz", ())
    assert str(e.value) == "node 2 recorded unknown event 'zz' in slot 5"


def test_the_network_records_into_a_batch():
    prep = RunSpec("deflection", "hypercube:2", load={"offered": 0.5}, slots=10).prepare(check_memory=False)
    handlers = checked_handlers(prep.scheme.reporter(prep.setup))
    batch = SlotBatch(handlers)
    net, _ = _net(handlers=handlers, batch=batch)
    assert net.contexts[0]._handlers is None
    kind = next(iter(prep.scheme.reporter(prep.setup).events))
    net._record(1, 3, kind, (1, 2))
    assert net._followed is not None
    net._followed[1](2, 3, 0, 9, 4)  # a hop
    _, events = decode(batch.frame())
    assert [(n, k, decode(d)) for n, k, d in events] == [(1, kind, (3, (1, 2))), (2, "hop", (3, (0, 9, 4)))]


def test_a_followed_scheme_needs_hop_events():
    with pytest.raises(SlotnetError) as e:
        _net(handlers={})
    assert str(e.value) == "scheme 'deflection' declares follow but its reporter does not handle 'hop' events"
    with pytest.raises(SlotnetError) as e:
        _net(batch=SlotBatch({"x": print}))
    assert str(e.value) == "scheme 'deflection' declares follow but its reporter does not handle 'hop' events"


def test_a_transport_without_watch_gets_a_wrapped_send():
    net, _ = _net(transport=_bare)
    assert net._watching is False
    assert all(isinstance(c.send, _FollowedSend) for c in net.contexts)
    net, _ = _net()
    assert not any(isinstance(c.send, _FollowedSend) for c in net.contexts)
    net, _ = _net(scheme="bcast-simple", load={"rho": 0.2}, transport=_bare)
    assert net._followed is None and net._watching is False
    assert not any(isinstance(c.send, _FollowedSend) for c in net.contexts)


def test_losses_reach_the_reporter_and_the_trace():
    buf = TraceBuffer(TraceSpec("x"), {})
    net, lost = _net(tracer=buf)
    assert all(type(c) is TracedContext for c in net.contexts)
    net.clock.slot = 6
    net._lost(6, 0, 1, 1, "m", "loss")
    net._lost(6, 2, 0, 3, "d", "delay")
    net._lost(6, 3, 1, 1, "c", "dup")
    net._lost(6, -1, 0, 2, "x", "node_down")
    assert lost == [(6, 0, 1, 1, "m", "loss"), (6, 3, 1, 1, "c", "dup"), (6, -1, 0, 2, "x", "node_down")]
    got = [(n, ev) for n, _, ev in buf.take()]
    loss = {"from": 0, "port": 1, "to": 1, "message": "m", "cause": "loss"}
    delay = {"from": 2, "port": 0, "to": 3, "message": "d", "fault": "delay"}
    dup = {"from": 3, "port": 1, "to": 1, "message": "c", "fault": "dup"}
    down = {"from": -1, "port": 0, "to": 2, "message": "x", "cause": "node_down"}
    assert got == [  # each written once: at its sender, or at its receiver when the sender is unknown
        (0, {"slot": 6, "node": 0, "event": "lost", **loss}),
        (2, {"slot": 6, "node": 2, "event": "fault", **delay}),
        (3, {"slot": 6, "node": 3, "event": "fault", **dup}),
        (2, {"slot": 6, "node": 2, "event": "lost", **down}),
    ]


def test_losses_of_untraced_nodes_are_not_traced():
    buf = TraceBuffer(TraceSpec("x", nodes=frozenset({1})), {})
    net, lost = _net(tracer=buf)
    assert type(net.contexts[1]) is TracedContext and type(net.contexts[0]) is not TracedContext
    net._lost(2, 0, 1, 3, "m", "loss")
    assert buf.take() == [] and len(lost) == 1
    net, lost = _net()
    net._lost(2, 0, 1, 3, "m", "loss")
    assert lost == [(2, 0, 1, 3, "m", "loss")]


def test_two_crashes_out_of_node_order():
    spec = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.6}, slots=16, seed=2,
                   faults=["crash@4:6", "crash@6:1", "crash@6:0", "crash@9:5", "crash@9:2"])
    assert _digest(run(spec)) == "288d7fd6cc0e3823"


def test_sends_on_ports_seen_dead_are_judged_on_every_path():
    """star holds packets back (no forced sends): every loss on a port its sender saw dead is avoidable."""
    base = dict(load={"rho": 0.5}, slots=40, seed=4, faults=["crash@4:5", "link-down@3:1:0", "detect=0"])
    direct = run(RunSpec("star", "torus:4x4", **base))
    bare = run(RunSpec("star", "torus:4x4", **base, transport=_bare))
    assert direct.fault_impact is not None and bare.fault_impact is not None
    assert direct.fault_impact["avoidable"] == bare.fault_impact["avoidable"] == {"link_down": 29, "node_down": 55}
    assert _digest(direct) == "7a78f6e688e1ca06"


class _BusyOutlet:
    """Every port busy with a message begun in an earlier slot, except ``idle``."""

    def __init__(self, idle: list[int], started: list[int]) -> None:
        self.idle, self.started = idle, started

    def idle_ports(self, slot: int) -> list[int]:
        return self.idle

    def started_ports(self, slot: int) -> list[int]:
        return self.started


def test_a_port_busy_since_an_earlier_slot_is_no_choice_made_now():
    net, _ = _net(faults=["crash@0:1", "detect=0"])
    marks: list[tuple[int, int]] = []
    net.transport.mark_unforced = lambda v, slot: marks.append((v, slot))
    net.clock.slot = 2
    ctx = net.contexts[0]
    assert ctx is not None and net._watched == [0, 3]
    dead = [p.index for p in ctx.ports if p.index not in ctx.live_ports]
    alive = list(ctx.live_ports)
    assert len(dead) == 1 and alive
    net.outlets[0] = _BusyOutlet(idle=alive[:1], started=[])
    net.outlets[3] = _BusyOutlet(idle=[], started=[])
    net._judge_dead_sends(2)
    assert marks == []  # the dead port's message began earlier: nothing was sent on it now
    net.outlets[0] = _BusyOutlet(idle=alive[:1], started=dead)
    net._judge_dead_sends(2)
    assert marks == [(0, 2)]  # sent on a port seen dead with a port seen alive idle: avoidable
    marks.clear()
    net.outlets[0] = _BusyOutlet(idle=[], started=dead)
    net._judge_dead_sends(2)
    assert marks == []  # deflection must forward: every port seen alive busy, the send was forced


def test_a_steady_run_that_ran_its_slots_is_judged_against_its_bounds():
    # a run for its slots is complete: its theory rows are judged (a one-shot task cut short is not)
    result = run(RunSpec("star", "torus:4x4", load={"rho": 0.3}, seed=1, slots=300))
    rows = result.invariants["theory_agreement"]["rows"]
    bounds = [r for r in rows if r["kind"] in ("exact", "upper-bound", "lower-bound")]
    assert bounds and all(r.get("ok") is True and "judged" not in r for r in bounds)


def test_stopping_the_nodes_leaves_no_cycle_for_the_gc():
    """The end of a run frees what stopping each node made at once, without the cyclic GC (held back in the slot loop)."""
    import gc

    import slotnet

    gc.collect()
    gc.disable()
    try:
        slotnet.run(slotnet.RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=4, warmup=0, seed=1))
        assert not [o for o in gc.get_objects() if type(o).__name__ == "_Stop"]
    finally:
        gc.enable()


async def test_start_counts_each_node_as_running_as_it_spawns_it():
    """Slot 0 counts each node task as running (and spawned) when it spawns it, not all before the
    first spawn: the watchdog and the heartbeat see a long spawning move."""
    net, _ = _net()
    seen: list[tuple[int, int]] = []

    class Spawner:
        def __init__(self, nursery: Any) -> None:
            self.nursery = nursery

        def start_soon(self, *args: Any, **kw: Any) -> None:
            seen.append((net.runtime.running, net.spawned))
            self.nursery.start_soon(*args, **kw)

    async with trio.open_nursery() as nursery:
        await net.start(Spawner(nursery))  # type: ignore[arg-type]
        assert seen == [(0, 0), (1, 1), (2, 2), (3, 3)] and net.spawned == 4
        await net.stop()
