"""The reporter split: events batched per slot as msgpack frames give identical results."""

from __future__ import annotations

import pytest

from slotnet import FaultSchedule, RunSpec, run
from slotnet.orchestrator import WALL_CLOCK_FIELDS

CASES = [
    ("deflection", "hypercube:5", {"offered": 1.0}, {}),
    ("deflection", "hypercube:5", {"lam": 1.0}, {}),
    ("bcast-dtree", "hypercube:5", {"rho": 0.5}, {}),
    ("bcast-periodic", "hypercube:4", {"rho": 0.4}, {"variant": "mnb"}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.4}, {}),
]


def _strip(d):
    return {k: v for k, v in d.items() if k not in WALL_CLOCK_FIELDS}


@pytest.mark.parametrize(("scheme", "topo", "load", "params"), CASES)
def test_buffered_observer_gives_the_direct_result(scheme, topo, load, params):
    """Replaying each slot's encoded events in node order equals calling handlers as nodes record."""
    faults = FaultSchedule.parse(["crash@60:3", "recover@90:3", "loss=0.02@20-80"])
    base = dict(scheme=scheme, topology=topo, load=load, params=params, slots=200, warmup=20, seed=7, faults=faults)
    direct = run(RunSpec(**base)).to_dict(per_node=True, series=True)
    buffered = run(RunSpec(**base, observer="buffered")).to_dict(per_node=True, series=True)
    assert _strip(direct) == _strip(buffered)


def test_unknown_observer_is_refused():
    """An observer mode other than direct/buffered is a spec error."""
    from slotnet import SpecError

    with pytest.raises(SpecError, match="observer"):
        RunSpec("deflection", "hypercube:3", load={"offered": 1}, observer="magic").prepare()
