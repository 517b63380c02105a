"""`slotnet run --seeds` and `slotnet sweep`: independent replications of any scheme, user schemes included."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

import slotnet
from slotnet.nodes import Node
from slotnet.schemes import Load, Scheme, Setup
from slotnet.schemes.kit import BaseReporter
from tests.support.cli import call_main

_call = call_main  # the suite's one CLI helper (tests/support/cli.py)


def test_replications_are_the_separate_runs(capsys):
    """--seeds 1-3 --json holds each seed's run exactly as `run --seed S` gives it, and their means."""
    argv = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "60", "--warmup", "10"]
    code, out, _ = _call(capsys, *argv, "--seeds", "1-3", "--jobs", "2", "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["seeds"] == [1, 2, 3] and len(rep["runs"]) == 3 and rep["invariants_ok"] == 3
    for seed, got in zip(rep["seeds"], rep["runs"]):
        alone = slotnet.run(slotnet.RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=60, warmup=10,
                                            seed=seed)).to_dict()
        assert got["metrics"] == alone["metrics"] and got["seed"] == seed
    delays = [r["metrics"]["mean_delay"] for r in rep["runs"]]
    assert rep["metrics"]["mean_delay"]["mean"] == pytest.approx(sum(delays) / 3)
    assert rep["theory"]["mean_delay"] == rep["runs"][0]["theory"]["mean_delay"]


def test_replications_do_not_depend_on_the_workers(capsys):
    """One worker or two: the same replications, byte for byte."""
    argv = ["run", "bcast-simple", "-t", "hypercube:3", "--rho", "0.3", "--slots", "40", "--seeds", "4,2", "--json"]
    one = _call(capsys, *argv, "--jobs", "1")[1]
    two = _call(capsys, *argv, "--jobs", "2")[1]
    assert one == two and json.loads(one)["seeds"] == [4, 2]


def test_replications_table(capsys):
    """The human table names the seeds, the invariants' count and each metric's mean with its interval."""
    code, out, _ = _call(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "40",
                         "--seeds", "1-2")
    assert code == 0
    assert "2 replications, seeds 1-2" in out and "invariants ok in 2 of 2 runs" in out
    assert "mean_delay" in out and " ± " in out and "mean_delay_ci95" not in out


@pytest.mark.parametrize(("extra", "says"), [
    (["--seed", "3"], "--seed and --seeds contradict"), (["--trace", "t.jsonl"], "--trace describe one run"),
    (["--shards", "2"], "--shards describe one run"), (["--seeds", "2-1"], "runs backwards"),
])
def test_replications_refuse_what_describes_one_run(capsys, extra, says):
    """Options of a single run are refused with --seeds, before any run."""
    argv = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "40", "--seeds", "1-2", *extra]
    code, _, err = _call(capsys, *argv)
    assert code == 2 and says in err


def test_jobs_needs_seeds(capsys):
    """--jobs without --seeds is refused: one run is one process."""
    code, _, err = _call(capsys, "run", "deflection", "-t", "hypercube:3", "--offered", "1", "--jobs", "2")
    assert code == 2 and "--jobs needs --seeds" in err


class _Coin(Node):
    """A user's scheme: each node flips a coin each slot and records heads."""

    async def run(self) -> None:
        ctx = self.ctx
        while True:
            ctx.record("flip", int(ctx.rng.random() < ctx.params["bias"]))
            await ctx.next_slot()


class _CoinReporter(BaseReporter):
    events = {"flip": ("heads",)}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.heads = self.flips = 0

    def handlers(self) -> dict[str, Any]:
        return {"flip": self.on_flip}

    def on_flip(self, node: int, slot: int, heads: int) -> None:
        self.flips += 1
        self.heads += heads

    def metrics(self) -> dict[str, Any]:
        return {"heads_fraction": self.heads / self.flips if self.flips else None}


@pytest.fixture
def coin():
    scheme = Scheme(name="coin-user", summary="a user's coin", source="tests", node=_Coin, reporter=_CoinReporter,
                    prepare=lambda topology, params, load: {**params, "bias": load["bias"]},
                    loads=(Load("bias", "the chance of heads"),), topologies=("mesh",),
                    theory=lambda setup: {"heads_fraction": setup.load["bias"]})
    slotnet.register(scheme)
    yield scheme.name
    slotnet.SCHEMES.pop(scheme.name, None)


def test_a_sweep_of_a_user_scheme(capsys, tmp_path, coin):
    """`slotnet sweep` runs a registered user scheme at each value, gives a table, CSV and JSON, and a cached
    second sweep returns the same."""
    csv_path = tmp_path / "coin.csv"
    argv = ["sweep", coin, "-t", "mesh:3x3", "--over", "bias=0.2:0.8:0.3", "--seeds", "1-3", "--slots", "50",
            "--cache", str(tmp_path / "cache")]
    code, out, _ = _call(capsys, *argv, "--csv", str(csv_path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["bias", "heads_fraction", "theory"]
    assert [line.split()[0] for line in lines[2:5]] == ["0.2", "0.5", "0.8"]
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert [float(r["bias"]) for r in rows] == [0.2, 0.5, 0.8] and all(r["runs"] == "3" for r in rows)
    for r in rows:  # 3 seeds x 9 nodes x 50 flips: the mean is within a few hundredths of the bias
        assert abs(float(r["heads_fraction"]) - float(r["heads_fraction_theory"])) < 0.06
    code, first, _ = _call(capsys, *argv, "--json")
    code, again, _ = _call(capsys, *argv, "--json")
    assert first == again
    data = json.loads(first)
    assert data["over"] == "bias" and [len(p["runs"]) for p in data["points"]] == [3, 3, 3]


def test_a_sweep_draws_with_the_generator_asked_for(capsys, coin):
    """--rng reaches every run of every point (philox unless told otherwise), and the two generators draw apart."""
    argv = ["sweep", coin, "-t", "mesh:3x3", "--over", "bias=0.2,0.5", "--seeds", "1-2", "--slots", "30", "--no-cache",
            "--json"]
    points = {}
    for extra, rng in (((), "philox"), (("--rng", "mt"), "mt")):
        code, out, _ = _call(capsys, *argv, *extra)
        data = json.loads(out)
        assert code == 0 and {r["rng"] for p in data["points"] for r in p["runs"]} == {rng}
        points[rng] = [[r["metrics"] for r in p["runs"]] for p in data["points"]]
    assert points["philox"] != points["mt"]


@pytest.mark.parametrize(("over", "says"), [
    ("nosuch=0:1:0.5", "has no load or parameter of that name"), ("bias", "NAME=A:B:STEP"),
])
def test_a_sweep_over_nothing_known(capsys, coin, over, says):
    """--over names a load or parameter of the scheme, or it is refused with the known ones."""
    code, _, err = _call(capsys, "sweep", coin, "-t", "mesh:3x3", "--over", over, "--slots", "10", "--no-cache")
    assert code == 2 and says in err


class _Raiser(Node):
    async def run(self) -> None:
        await self.ctx.next_slot()
        raise ValueError("the rule broke")


def test_a_node_failure_in_a_worker_is_one_line(capsys):
    """A user rule failing in a replication's worker process reaches the command as the node's failure
    (a NodeFailure pickles whole), not as a broken process pool."""
    scheme = Scheme(name="raiser-user", summary="fails", source="tests", node=_Raiser, reporter=_CoinReporter,
                    prepare=lambda topology, params, load: dict(params), topologies=("mesh",))
    slotnet.register(scheme)
    try:
        code, _, err = _call(capsys, "run", "raiser-user", "-t", "mesh:2x2", "--slots", "5", "--seeds", "1-2",
                             "--jobs", "2")
    finally:
        slotnet.SCHEMES.pop("raiser-user", None)
    assert code == 1 and "failed: node" in err and "ValueError: the rule broke" in err and "Broken" not in err
