"""The nodes' generator as a run option (``RunSpec.rng``, ``--rng``): schemes run unchanged
under the compact philox stream, a seed still fixes the run, and the result says which
generator drew it."""

from __future__ import annotations

import json

import pytest

from slotnet import RunSpec, TraceSpec, run
from slotnet.orchestrator import WALL_CLOCK_FIELDS
from tests.support.cli import call_main

#: (scheme, topology, load, params): small runs of the families whose nodes draw from ctx.rng
#: (random(), getrandbits, randrange, the birth processes)
DRAWING = [
    ("deflection", "hypercube:4", {"offered": 1.0}, {}),
    ("bcast-indirect", "hypercube:4", {"rho": 0.4}, {}),
    ("bcast-dtree", "hypercube:4", {"rho": 0.4}, {}),
    ("star", "torus:4x4", {"rho": 0.5}, {"lam_unicast": 0.05}),
    ("dynamic-broadcast", "mesh:4x4", {"rho": 0.3}, {}),
    ("prefix-scan", "mesh:4x4", {}, {"values": "random"}),
]


def _plain(result) -> dict:
    d = result.to_dict(per_node=True)
    for key in WALL_CLOCK_FIELDS:
        d.pop(key, None)
    return d


@pytest.mark.parametrize(("scheme", "topology", "load", "params"), DRAWING, ids=[c[0] for c in DRAWING])
def test_schemes_run_unchanged_under_philox(scheme, topology, load, params):
    """Each family's run under --rng philox holds its verdict, is the same run again with the
    same seed, draws other numbers than the Twister, and names its generator."""
    spec = RunSpec(scheme, topology, load=load, params=params, slots=60, seed=3, rng="philox")
    first, again = run(spec), run(spec)
    assert first.verdict is not None and first.verdict["ok"], first.verdict
    assert _plain(first) == _plain(again)
    mt = _plain(run(RunSpec(scheme, topology, load=load, params=params, slots=60, seed=3)))
    assert "rng" not in mt and _plain(first)["rng"] == "philox"
    assert {k: v for k, v in _plain(first).items() if k != "rng"} != mt
    assert "--rng philox" in first.provenance["command"]


def test_the_trace_header_names_philox_and_the_default_run_stays_as_it_was(tmp_path):
    """A philox run's trace header names its generator (and the command that reruns it); an mt
    run's header and JSON name none, as before the option existed."""
    headers = {}
    for rng in ("mt", "philox"):
        path = tmp_path / f"{rng}.jsonl"
        run(RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, seed=2, rng=rng,
                    trace=TraceSpec(str(path))))
        headers[rng] = json.loads(path.read_text().splitlines()[0])
    assert headers["philox"]["rng"] == "philox" and headers["philox"]["command"].endswith("--seed 2 --rng philox")
    assert "rng" not in headers["mt"] and "--rng" not in headers["mt"]["command"]


def test_the_cli_option(capsys):
    """--rng philox reaches the run (and its JSON); an unknown generator is one line and exit 2."""
    code, out, err = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "10",
                               "--rng", "philox", "--json")
    assert code == 0 and json.loads(out)["rng"] == "philox"
    code, out, err = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--rng", "pcg")
    assert code == 2 and out == ""
    assert "rng must be 'mt' (the default: the Mersenne Twister) or 'philox'" in err and "got 'pcg'" in err
    assert len(err.strip().splitlines()) == 1


def test_replications_use_the_generator(capsys):
    """--seeds with --rng philox runs every replication with philox."""
    code, out, _ = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "10",
                             "--seeds", "1,2", "--rng", "philox", "--jobs", "1", "--json")
    assert code == 0 and [r["rng"] for r in json.loads(out)["runs"]] == ["philox", "philox"]
