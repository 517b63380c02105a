"""The pmnb scheme (§4.1 Theorem 6 and §4.2) between its bounds, and the static schemes on the CLI.

A sweep over placements (random, corner, spread), 2-D and 3-D arrays and tori with p
odd and even, with and without splitting: every run delivers every active packet to
every node exactly once, and its completion time lies between the lower bound
((3)/(4) or the placement's) and the covering theorem's upper bound ((5), (6), (5'),
(6')). The small sweep runs always; the larger one is marked slow.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.orchestrator.cli import main
from slotnet.schemes.pmnb import theory as th

FAST = ["mesh:4x4", "torus:5x5", "mesh:3x3x3", "torus:4x4x4"]
# (torus:5x5x5 and mesh:3x3x3x3 also pass; they are left out to keep CI's whole run short)
SLOW = ["mesh:5x5", "torus:4x4", "mesh:6x6", "torus:7x7", "torus:3x3x3", "mesh:4x4x4", "mesh:2x2x2", "torus:6", "mesh:7",
        "mesh:2x2x2x2"]


def _sweep(topo: str, ms: list[int], seeds: tuple[int, ...] = (0,)) -> int:
    kind, spec = topo.split(":")
    sides = tuple(int(x) for x in spec.split("x"))
    d, p, n = len(sides), sides[0], math.prod(sides)
    runs = 0
    for split, placement, m, seed in itertools.product((True, False), ("random", "corner", "spread"), ms, seeds):
        if placement != "random" and seed != seeds[0]:
            continue  # placement_seed draws only random placements: another seed would repeat the run
        r = run(RunSpec("pmnb", topo, params={"active": m, "placement": placement, "split": split,
                                              "placement_seed": seed}, slots=100_000))
        where = (topo, split, placement, m, seed)
        assert r.completion["complete"] and r.invariants["ok"], (where, r.invariants)
        t, lo, hi = r.metrics["completion_time"], r.theory["lower_bound"], r.theory["upper_bound"]
        assert lo - 1e-9 <= t <= hi + 1e-9, (where, lo, t, hi)
        assert r.metrics["prefix_time"] == pytest.approx((1 if split else 2) * 2 * d * (p - 1) * 0.125)
        if m:
            assert r.metrics["packing_time"] <= r.theory["packing_time"] + 1e-9
            assert r.metrics["broadcast_time"] <= r.theory["broadcast_time"] + 1e-9
        if m == n and kind == "mesh" and d == 2:
            assert t >= th.theorem1_mnb_array(sides)  # Theorem 1: no MNB on a p x p array beats ceil((N-1)/2)
        if m == n and kind == "torus":
            assert t >= (n - 1) / (2 * d)
        runs += 1
    return runs


@pytest.mark.parametrize("topo", FAST)
def test_pmnb_lies_between_its_bounds_on_2d_and_3d_arrays_and_tori(topo):
    """Random, corner and spread placements, split or not, M in {1, N/3, N}: lower <= measured <= upper, exactly once."""
    n = math.prod(int(x) for x in topo.split(":")[1].split("x"))
    assert _sweep(topo, [1, n // 3, n]) == 18


@pytest.mark.slow
@pytest.mark.parametrize("topo", FAST + SLOW)
def test_pmnb_lies_between_its_bounds_on_a_wide_sweep(topo):
    """Many M (0 to N) and two placement seeds on more shapes, p odd and even, d = 1..4."""
    n = math.prod(int(x) for x in topo.split(":")[1].split("x"))
    _sweep(topo, sorted({0, 1, 2, n // 4, n // 2 + 1, n - 1, n}), seeds=(0, 7))


def test_pmnb_refuses_unequal_sides_and_other_topologies():
    """The d classes share one schedule, so sides must be equal; hypercubes are not meshes."""
    with pytest.raises(SpecError, match="equal sides"):
        RunSpec("pmnb", "torus:4x5").prepare()
    with pytest.raises(SpecError, match="runs on"):
        RunSpec("pmnb", "hypercube:3").prepare()
    with pytest.raises(SpecError, match="active=17"):
        RunSpec("pmnb", "mesh:4x4", params={"active": 17}).prepare()


def test_pmnb_with_one_packet_broadcasts_it_by_rotated_classes():
    """M = 1 on a 3-D torus: d mini-packets, each from its class's node 0, every node gets all 2d halves once."""
    r = run(RunSpec("pmnb", "torus:4x4x4", params={"active": 1, "placement": "corner"}, slots=10_000))
    assert r.invariants["every_packet_everywhere_once"]["ok"] and r.metrics["receptions"] == 64
    assert r.metrics["packing_time"] == 0.0  # node 0 is every class's rank-0 node
    assert r.metrics["broadcast_time"] == pytest.approx(3 * 3 / 6)  # three rings of 4, halves 3 hops of 1/6


def test_cli_runs_pmnb_and_lists_the_static_schemes(capsys):
    """`slotnet run pmnb -t torus:4x4 --param active=6` works; `slotnet schemes` lists all five; theory prints bounds."""
    assert main(["run", "pmnb", "-t", "torus:4x4", "--param", "active=6", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["invariants"]["ok"] and out["completion"]["complete"]
    assert out["theory"]["lower_bound"] <= out["metrics"]["completion_time"] <= out["theory"]["upper_bound"]
    assert main(["schemes"]) == 0
    listed = capsys.readouterr().out
    for name in ("prefix-scan", "packing", "monotone", "array-broadcast", "pmnb"):
        assert f"{name}:" in listed
    for scheme, topo in (("pmnb", "mesh:4x4"), ("prefix-scan", "torus:3x3"), ("packing", "mesh:5x5"),
                         ("monotone", "torus:4x4"), ("array-broadcast", "torus:7")):
        assert main(["theory", scheme, "-t", topo]) == 0
        text = capsys.readouterr().out
        assert "upper_bound" in text and "lower_bound" in text
