"""The pmnb family (Varvarigos & Bertsekas: prefix-scan, packing, monotone, pmnb, partial-exchange,
dynamic-broadcast) tells a scheme's own error from a fault's damage.

Each node of these schemes never returns from ``run()`` and never stops without a fault
(:mod:`slotnet.schemes.pmnb._offschedule`). The nodes planted here break that on node 3:
one returns at once (messages then reach a finished node), one records a stop and goes on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.schemes import SCHEMES

#: scheme -> (topology, load, slots, the invariant that carries its delivery check)
FAMILY: dict[str, tuple[str, dict[str, float], int | None, str]] = {
    "prefix-scan": ("mesh:4x4", {}, None, "prefix_matches_sequential"),
    "packing": ("mesh:4x4", {}, None, "delivered_exactly_once"),
    "monotone": ("torus:4x4", {}, None, "delivered_exactly_once"),
    "pmnb": ("mesh:4x4", {}, None, "every_packet_everywhere_once"),
    "partial-exchange": ("mesh:4x4", {}, None, "exactly_once"),
    "dynamic-broadcast": ("torus:4x4", {"rho": 0.4}, 120, "exactly_once"),
}


def _planted(base: type, kind: str) -> type:
    class Planted(base):  # type: ignore[misc, valid-type]
        async def run(self) -> None:
            if self.ctx.node == 3:
                if kind == "finish":
                    return
                self.ctx.record("stopped", "scan", "restarted")
            await super().run()

    return Planted


def _run(monkeypatch: pytest.MonkeyPatch, scheme: str, kind: str, faults: list[str]) -> Any:
    topology, load, slots, _ = FAMILY[scheme]
    monkeypatch.setitem(SCHEMES, scheme, replace(SCHEMES[scheme], node=_planted(SCHEMES[scheme].node, kind)))
    return run(RunSpec(scheme, topology, load=load, slots=slots, seed=1, faults=faults))


@pytest.mark.parametrize("scheme", sorted(FAMILY))
def test_a_fault_free_run_in_which_a_node_stopped_fails(monkeypatch, scheme):
    """No fault, node 3 records a stop: the delivery check fails as the scheme's error, naming the stop."""
    r = _run(monkeypatch, scheme, "stop", [])
    check = r.invariants[FAMILY[scheme][3]]
    assert r.invariants["ok"] is False
    assert check["ok"] is False and "correctness" not in check
    assert check["stopped_nodes"] == 1 and check["first_stopped"]["node"] == 3


@pytest.mark.parametrize("scheme", sorted(FAMILY))
def test_a_message_to_a_finished_node_is_the_schemes_error_not_a_fault(monkeypatch, scheme):
    """No fault, node 3 returns from run(): its losses (``node_finished``) do not make the run a faulted one;
    the delivery check is judged and fails."""
    r = _run(monkeypatch, scheme, "finish", [])
    check = r.invariants[FAMILY[scheme][3]]
    assert r.faults == [] and r.invariants["ok"] is False
    assert check["ok"] is False and "correctness" not in check
    if "no_message_lost" in r.invariants:
        assert r.invariants["no_message_lost"]["ok"] is False and "by_cause" not in r.invariants["no_message_lost"]


@pytest.mark.parametrize("scheme", sorted(FAMILY))
def test_under_faults_messages_to_a_finished_node_are_not_excused(monkeypatch, scheme):
    """A loss window and node 3 returning from run(): the faults' damage is reported, but the messages the
    scheme itself sent to its finished node still fail the run."""
    r = _run(monkeypatch, scheme, "finish", ["loss=0.05@0-2"])
    assert r.invariants["ok"] is False
    failed = {k for k, v in r.invariants.items() if isinstance(v, dict) and v.get("ok") is False}
    assert failed, r.invariants
    if "no_message_lost" in r.invariants:
        nml = r.invariants["no_message_lost"]
        assert nml["ok"] is False and nml["by_cause"]["node_finished"] >= 1
    else:  # partial-exchange, dynamic-broadcast: their delivery check carries it
        check = r.invariants[FAMILY[scheme][3]]
        assert check["ok"] is False and check["messages_to_finished_nodes"] >= 1
