"""The nodes' generator as a run option (``RunSpec.rng``, ``--rng``): schemes run under the
default compact philox stream and under the Mersenne Twister, a seed fixes the run with
either, and the result says which generator drew it."""

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
def test_schemes_run_under_either_generator(scheme, topology, load, params):
    """Each family's run holds its verdict under the default (philox) and under --rng mt, is
    the same run again with the same seed, draws other numbers with each generator, and
    names its generator in its JSON and in the command that reruns it."""
    runs = {}
    for rng in ("philox", "mt"):
        spec = RunSpec(scheme, topology, load=load, params=params, slots=60, seed=3, rng=rng)
        first, again = run(spec), run(spec)
        assert first.verdict is not None and first.verdict["ok"], (rng, first.verdict)
        assert _plain(first) == _plain(again)
        assert _plain(first)["rng"] == rng and f"--seed 3 --rng {rng}" in first.provenance["command"]
        runs[rng] = {k: v for k, v in _plain(first).items() if k != "rng"}
    assert runs["philox"] != runs["mt"]
    default = run(RunSpec(scheme, topology, load=load, params=params, slots=60, seed=3))
    assert default.rng == "philox" and {k: v for k, v in _plain(default).items() if k != "rng"} == runs["philox"]


def test_the_trace_header_names_the_generator(tmp_path):
    """A trace's header names its run's generator, and the command that reruns it has --rng,
    whichever generator drew it (a header without one came from an earlier version: mt)."""
    headers = {}
    for rng in ("mt", "philox"):
        path = tmp_path / f"{rng}.jsonl"
        run(RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, seed=2, rng=rng,
                    trace=TraceSpec(str(path))))
        headers[rng] = json.loads(path.read_text().splitlines()[0])
    for rng, header in headers.items():
        assert header["rng"] == rng and header["command"].endswith(f"--seed 2 --rng {rng}")


def test_the_cli_option(capsys):
    """The default is philox, --rng mt reaches the run (and its JSON); an unknown generator is
    one line and exit 2."""
    for extra, rng in (((), "philox"), (("--rng", "mt"), "mt"), (("--rng", "philox"), "philox")):
        code, out, err = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "10",
                                   *extra, "--json")
        assert code == 0 and json.loads(out)["rng"] == rng
    code, out, err = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--rng", "pcg")
    assert code == 2 and out == ""
    assert "rng must be 'philox' (the default: the compact Philox4x32-10 stream) or 'mt'" in err and "got 'pcg'" in err
    assert len(err.strip().splitlines()) == 1


def test_replications_use_the_generator(capsys):
    """--seeds runs every replication with the generator asked for."""
    for rng in ("mt", "philox"):
        code, out, _ = call_main(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "10",
                                 "--seeds", "1,2", "--rng", rng, "--jobs", "1", "--json")
        assert code == 0 and [r["rng"] for r in json.loads(out)["runs"]] == [rng, rng]
