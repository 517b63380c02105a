"""The node runtime without Trio's privates: Trio's public park and wake-up give the same runs."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.nodes import _runtime


def _digest(spec: RunSpec) -> str:
    """A run's ``--json`` object without its timing, as canonical text."""
    d = run(spec).to_dict(per_node=True)
    d.pop("timing", None)
    return json.dumps(d, sort_keys=True, default=repr)


@pytest.mark.parametrize(("scheme", "topology", "load", "faults"), [
    ("deflection", "hypercube:4", {"offered": 1.0}, ["crash@8:2", "recover@25:2", "loss=0.02", "stall@30:33:3"]),
    ("prefix-scan", "mesh:4x4", {}, []),
    ("bcast-simple", "hypercube:3", {"rho": 0.4}, ["link-down@5:1:0", "link-up@20:1:0", "delay=0.05:2"]),
])
def test_public_api_fallback_gives_identical_results(monkeypatch, tmp_path, scheme, topology, load, faults):
    """With FAST_PARK off (Trio's public wait_task_rescheduled/reschedule) a seeded run's result and trace are unchanged."""
    assert _runtime.FAST_PARK, "this Trio has the private names: the fast path is the default"

    def spec(name: str) -> RunSpec:
        return RunSpec(scheme, topology, load=load, slots=60, warmup=5, seed=3, faults=faults,
                       trace=TraceSpec(str(tmp_path / name)))

    fast = _digest(spec("fast.jsonl"))
    monkeypatch.setattr(_runtime, "FAST_PARK", False)
    slow = _digest(spec("slow.jsonl"))
    assert fast == slow
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "slow.jsonl").read_bytes()


def test_fallback_path_is_taken(monkeypatch):
    """With FAST_PARK off, a wake-up goes through the public reschedule wrapper, never the runner's own."""
    monkeypatch.setattr(_runtime, "FAST_PARK", False)
    assert _runtime._rescheduler() is _runtime._public_wake
