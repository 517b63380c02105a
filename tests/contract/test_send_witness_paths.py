"""The validator's send witness on both of its paths.

The fabric's outlets report the sends a scheme follows from inside their own ``send``
(``Outlet.watch``); an outlet of another transport, which cannot, gets the orchestrator's
wrapper around ``ctx.send`` instead. Both must see exactly the same sends, so a run gives
the same result either way.
"""

from __future__ import annotations

from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.errors import CapacityError
from slotnet.fabric import InProcessTransport, SlotClock, parse_topology
from slotnet.orchestrator import in_process


class _PlainOutlet:
    """An outlet with ``send`` and ``capacity_left`` only (no ``watch``), as another transport's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def send(self, port: int, message: Any, size: float = 1.0) -> None:
        self._inner.send(port, message, size)

    def capacity_left(self, port: int) -> float:
        return self._inner.capacity_left(port)

    def idle_ports(self, slot: int) -> list[int]:
        return self._inner.idle_ports(slot)


class _PlainTransport:
    """The in-process transport, its outlets without ``watch``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def outlet(self, node: int) -> _PlainOutlet:
        return _PlainOutlet(self._inner.outlet(node))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _plain(prep: Any, clock: Any, on_lost: Any) -> Any:
    return _PlainTransport(in_process(prep, clock, on_lost))


def _comparable(result: Any) -> dict[str, Any]:
    out = result.to_dict()
    for key in ("timing", "transport"):
        out.pop(key, None)
    return out


@pytest.mark.parametrize("scheme, topology, load, params", [
    ("deflection", "hypercube:4", {"offered": 1.0}, {}),
    ("deflection", "hypercube:4", {"lam": 0.6}, {}),
    ("star", "torus:4x4", {"rho": 0.5}, {"lam_unicast": 0.05}),
])
def test_outlet_reports_and_the_wrapper_see_the_same_sends(scheme, topology, load, params):
    """A run whose outlets report the followed sends themselves equals one where the
    orchestrator wraps ``send`` (a transport whose outlets cannot): same metrics, same
    invariants, the witness's counts included."""
    spec = dict(load=load, params=params, slots=40, seed=3)
    watched = run(RunSpec(scheme, topology, **spec))
    wrapped = run(RunSpec(scheme, topology, transport=_plain, **spec))
    assert _comparable(watched) == _comparable(wrapped)
    checks = {k: v for k, v in watched.invariants.items() if k in ("forced_deflections", "hops_witnessed")}
    assert checks and all(v["checked"] > 0 for v in checks.values())


def test_a_watched_outlet_reports_what_it_accepts_and_nothing_it_refuses():
    """``watch``: each accepted send named by ``follow`` is reported once, after it is
    parked, as (node, slot, port, *key); a refused send (the port already carries a
    message) and a message ``follow`` does not name are not."""
    transport = InProcessTransport(parse_topology("hypercube:2"), SlotClock())
    outlet = transport.outlet(1)
    seen: list[tuple[Any, ...]] = []
    outlet.watch(lambda m: None if m[0] == "ctl" else (m[0], m[1]), lambda *a: seen.append(a))
    transport.clock.slot = 4
    outlet.send(0, (7, 9, 2))
    with pytest.raises(CapacityError):
        outlet.send(0, (8, 1, 2))
    outlet.send(1, ("ctl", 0))
    assert seen == [(1, 4, 0, 7, 9)]
    assert len(transport.pending_frames(0)) == 1  # the refused message was not parked either


def test_an_outlet_without_started_ports_is_judged_by_its_idle_ports():
    """A transport whose outlets have idle_ports but no started_ports: its runs under detected faults
    book the same avoidable losses as the in-process outlets do (at quantum 1 the two rules agree)."""
    from slotnet import FaultSchedule

    spec = dict(scheme="bcast-dtree", topology="hypercube:4", load={"rho": 0.4}, slots=60, seed=3,
                faults=FaultSchedule.parse(["link-down@10:3:1", "crash@20:5", "recover@30:5"], detect=0))
    assert not hasattr(_PlainOutlet, "started_ports")
    plain = run(RunSpec(**spec, transport=_plain))
    own = run(RunSpec(**spec))
    assert plain.fault_impact == own.fault_impact and sum(own.fault_impact["avoidable"].values()) > 0
