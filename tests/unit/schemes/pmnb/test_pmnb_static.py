"""The static Varvarigos & Bertsekas schemes: exact times, prefix results, routing invariants.

Pins ``slotnet.schemes.pmnb``'s ``_inputs`` and ``_line``: the time quantum (t_p and
mini-packets exact, one MAX_QUANTUM for the family), Theorem 2's greedy line broadcast and
the §4.1 Phase 3 windows (pure), and runs of prefix-scan, packing, monotone and
array-broadcast checked against independent sequential computations and the pure
step-by-step references.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from fractions import Fraction

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.errors import SchemeError
from slotnet.schemes import SCHEMES
from slotnet.schemes.pmnb import SCHEMES as PMNB_SCHEMES
from slotnet.schemes.pmnb import _packing as K
from slotnet.schemes.pmnb import _prefix as P
from slotnet.schemes.pmnb import theory as th
from slotnet.schemes.pmnb._inputs import MAX_QUANTUM, prepare_routing, quantum_for, tp_fraction
from slotnet.schemes.pmnb._line import broadcast_windows, greedy_line_time, line_counts, subphase_patterns
from slotnet.schemes.pmnb.reporter import digest


def _run(scheme: str, topo: str, slots: int = 20000, **params):
    r = run(RunSpec(scheme, topo, params=params, slots=slots))
    assert r.completion is not None and r.completion["complete"], (scheme, topo, params)
    assert r.invariants["ok"], r.invariants
    return r


# -- pure parts -------------------------------------------------------------------------


def test_tp_is_read_exactly_and_the_quantum_is_the_least_common_multiple():
    """t_p as 0.125, "1/8" or 1/3 is exact; the quantum makes t_p, 1/d and 1/(2d) whole ticks."""
    assert tp_fraction(0.125) == tp_fraction("1/8") == Fraction(1, 8)
    assert tp_fraction(1 / 3) == Fraction(1, 3) and tp_fraction(1.0) == 1
    assert quantum_for(0.125, 6) == 24 and quantum_for(1 / 3, 4) == 12 and quantum_for(1.0) == 1
    for bad in (0, -0.5, 1.5, "x"):
        with pytest.raises(SchemeError, match="tp="):
            tp_fraction(bad)
    with pytest.raises(SchemeError, match="1000000 ticks per time unit"):
        tp_fraction(0.123457)
    assert digest([1, 2, 3]) == digest({3, 2, 1}) != digest([1, 2, 4])


def test_an_absurd_tp_is_refused_before_the_run():
    """tp=0.123457 would need a quantum of 10^6: a SpecError naming it, for every scheme with t_p."""
    for scheme in ("prefix-scan", "pmnb", "packing"):
        with pytest.raises(SpecError, match="quantum|ticks per time unit"):
            RunSpec(scheme, "torus:4x4", params={"tp": "0.123457"}).prepare()


def test_tp_of_1_over_1024_gives_quantum_1024_for_every_scheme_of_the_family():
    """One t_p reader and one MAX_QUANTUM for the family: tp=1/1024 is accepted by every scheme with t_p."""
    assert MAX_QUANTUM == 1024 and tp_fraction("1/1024") == Fraction(1, 1024)
    with_tp = [s.name for s in PMNB_SCHEMES if any(p.name == "tp" for p in s.params)]
    assert with_tp == ["prefix-scan", "packing", "monotone", "pmnb", "partial-exchange", "dynamic-broadcast"]
    loads = {"dynamic-broadcast": {"rho": 0.3}}
    for name in with_tp:
        for extra in ({}, {"split": False}) if name == "pmnb" else ({},):
            spec = RunSpec(name, "torus:4x4", params={"tp": "1/1024", **extra}, load=loads.get(name, {}))
            assert spec.prepare().quantum == 1024, (name, extra)


def test_greedy_line_broadcast_in_cases_known_by_hand():
    """All K at one end: K + p - 2 on an array; one per node: p - 1 (array), p - 1 half-steps or ceil((p-1)/2) (ring)."""
    for p, k in itertools.product(range(2, 8), range(1, 6)):
        assert greedy_line_time([k] + [0] * (p - 1), False, False) == k + p - 2
        assert greedy_line_time([k] + [0] * (p - 1), True, True) == k + p - 2  # halves all round: (K+p-2)/2 units
        assert greedy_line_time([1] * p, False, False) == p - 1
        assert greedy_line_time([1] * p, True, True) == p - 1
        assert greedy_line_time([1] * p, True, False) == math.ceil((p - 1) / 2)
    assert greedy_line_time([0, 0, 0], False, False) == 0


def test_greedy_line_broadcast_stays_within_theorem_2():
    """On random counts the greedy rule finishes within K + p - 1 steps (array, ring halves, ring arcs)."""
    rng = random.Random(8)
    for _ in range(400):
        p = rng.randint(2, 9)
        counts = [rng.randint(0, 3) for _ in range(p)]
        k = sum(counts)
        for wrap, split in ((False, False), (True, True), (True, False)):
            assert greedy_line_time(counts, wrap, split) <= k + p - 1


def _held_before(m: int, sides: tuple[int, ...], order: tuple[int, ...], l: int) -> dict[P.Coords, int]:
    """Brute force of Theorem 5: before subphase l node s holds the w < M agreeing with s on d-l+1 low class digits."""
    d = len(sides)
    low = order[: d - l + 1]
    out = {}
    for v in range(math.prod(sides)):
        s = P.coords_at(v, sides)
        out[s] = sum(1 for w in range(m) if all(P.coords_at(w, sides, order)[k] == s[k] for k in low))
    return out


def test_subphase_line_patterns_match_a_brute_force_count():
    """The two count vectors per subphase are exactly those on the lines of a brute-force count (all classes)."""
    for sides in ((3, 3), (4, 4), (2, 2, 2), (3, 3, 3)):
        d, p = len(sides), sides[0]
        for m in range(0, math.prod(sides) + 1, 2):
            for c in range(d):
                order = P.rotation(c, d)
                for l in range(1, d + 1):
                    held = _held_before(m, sides, order, l)
                    dim = order[d - l]
                    lines = set()
                    for s in held:
                        if s[dim] == 0:
                            lines.add(tuple(held[s[:dim] + (x,) + s[dim + 1:]] for x in range(p)))
                    assert lines <= {tuple(v) for v in subphase_patterns(m, p, d, l)}
                    assert {tuple(v) for v in subphase_patterns(m, p, d, l)} <= lines | {tuple(line_counts(0, p))}


def test_broadcast_windows_fit_lemma_1_and_the_whole_schedule_fits_5_6():
    """For every M on small p^d meshes: scan + packing + windows <= (5), (6), (5'), (6')."""
    for d, ps in ((1, range(2, 9)), (2, range(2, 7)), (3, range(2, 5))):
        for p in ps:
            n = p**d
            for m, wrap, split in itertools.product(range(n + 1), (False, True), (True, False)):
                g = 2 if wrap else 1
                piece = 1 / (g * d) if split else 1.0
                windows = broadcast_windows(m, p, d, wrap, split)
                per_packet = (p - 1) if (split or not wrap) else math.ceil((p - 1) / 2)
                sizes = [m] if split else [len(range(c, m, d)) for c in range(d)]
                for l, w in enumerate(windows, start=1):  # Lemma 1: T_l <= (p-1)/gamma max |W_l(s)|
                    assert w <= per_packet * max(max(v) for mc in sizes for v in subphase_patterns(mc, p, d, l))
                bcast = sum(windows) * piece
                if split:
                    assert bcast <= (n - 1) / n * m / (g * d) + (p - 1) / g + 1e-9
                    total = bcast + (p - 1) + th.prefix_time((p,) * d, 0.125)
                    assert total <= th.pmnb_split_bound((p,) * d, wrap, m, 0.125) + 1e-9
                else:
                    total = bcast + d * (p - 1) + 2 * th.prefix_time((p,) * d, 0.125)
                    assert total <= th.pmnb_unsplit_bound((p,) * d, wrap, m, 0.125) + 1e-9


# -- prefix-scan ------------------------------------------------------------------------


@pytest.mark.parametrize("topo", ["mesh:7", "torus:2", "mesh:3x4", "torus:4x4", "mesh:5x2x3", "torus:3x3x3", "mesh:2x3x2x2"])
def test_prefix_tree_equals_a_sequential_prefix_and_takes_exactly_2_sum_p_minus_1_steps(topo):
    """Every node ends with its running sum in node-id order and the total, at time 2 sum(p_k - 1) t_p exactly."""
    for seed, tp in ((0, 0.125), (3, 1.0), (5, "1/3")):
        r = run(RunSpec("prefix-scan", topo, params={"tp": tp}, seed=seed, slots=5000))
        inputs = r.per_node["input"]
        sums = list(itertools.accumulate(inputs))
        assert r.per_node["inclusive"] == sums and r.per_node["total"] == [sums[-1]] * len(sums)
        sides = [int(x) for x in topo.split(":")[1].split("x")]
        assert r.metrics["completion_time"] == pytest.approx(2 * sum(p - 1 for p in sides) * float(Fraction(str(tp))))
        assert r.invariants["ok"]


@pytest.mark.parametrize("topo", ["mesh:6", "torus:5x4", "mesh:3x5x2"])
def test_prefix_line_variant_gives_every_line_its_prefix_and_total(topo):
    """§5: per dimension, each node's prefix along its line and the line total, in 2 floor(p/2) steps of the longest side."""
    r = _run("prefix-scan", topo, variant="line", values="rank", active=5, placement="spread")
    sides = [int(x) for x in topo.split(":")[1].split("x")]
    vals = r.per_node["input"]
    strides = [math.prod(sides[:k]) for k in range(len(sides))]
    for v, (incs, tots) in enumerate(zip(r.per_node["inclusive"], r.per_node["total"])):
        for k, (st, p) in enumerate(zip(strides, sides)):
            x = (v // st) % p
            line = [vals[v - x * st + j * st] for j in range(p)]
            assert incs[k] == sum(line[: x + 1]) and tots[k] == sum(line)
    assert r.metrics["completion_time"] == pytest.approx(max(2 * (p // 2) for p in sides) * 0.125)


# -- packing and monotone ---------------------------------------------------------------


def _explicit(monkeypatch, base: str, active: list[int]) -> str:
    """A copy of ``base`` whose active set is given (the pure module's hand-made cases)."""
    scheme = SCHEMES[base]

    def prepare(topology, params, load):
        out = prepare_routing(topology, params, load, base)
        out["active"] = sorted(active)
        return out

    name = f"{base}-explicit"
    monkeypatch.setitem(SCHEMES, name, dataclasses.replace(scheme, name=name, prepare=prepare))
    return name


def test_packing_node_rule_counts_the_papers_mid_phase_counterexample(monkeypatch):
    """5 x 5, active 0,1,2,3,5,9: two packets meet mid-phase (the proof's "never" is false), never at a boundary."""
    name = _explicit(monkeypatch, "packing", [0, 1, 2, 3, 5, 9])
    r = _run(name, "mesh:5x5", rank="given")
    ref = K.simulate_packing([0, 1, 2, 3, 5, 9], (5, 5))
    assert r.metrics["meetings"] == ref.meetings > 0
    assert r.metrics["boundary_collisions"] == 0 and r.metrics["max_at_node"] == 2
    assert r.metrics["link_conflicts"] == 0 and r.metrics["routing_time"] == ref.completion


def test_packing_attains_theorem_3s_time_exactly(monkeypatch):
    """One active node N-1 packs to node 0 over sum(p_k - 1) hops: exactly Theorem 3's d(p-1)."""
    for topo, sides in (("mesh:4x4", (4, 4)), ("torus:3x3x3", (3, 3, 3)), ("mesh:5x3", (5, 3))):
        name = _explicit(monkeypatch, "packing", [math.prod(sides) - 1])
        r = _run(name, topo, rank="given")
        assert r.metrics["routing_time"] == sum(p - 1 for p in sides) == th.packing_time(sides)


def test_monotone_round_trip_takes_exactly_2d_p_minus_1(monkeypatch):
    """Source N-1 and target N-1: packed to node 0 and unpacked back, 2 d (p-1) steps exactly (Theorem 4)."""
    scheme = SCHEMES["monotone"]

    def prepare(topology, params, load):
        out = prepare_routing(topology, params, load, "monotone")
        n = topology.n_nodes
        out["active"], out["targets"] = [n - 1], [n - 1]
        return out

    monkeypatch.setitem(SCHEMES, "mono-trip", dataclasses.replace(scheme, name="mono-trip", prepare=prepare))
    for topo, steps in (("mesh:4x4", 6), ("torus:3x3x3", 6), ("mesh:5x3", 6)):
        r = _run("mono-trip", topo, rank="given", active=1)
        assert r.metrics["routing_time"] == 2 * steps


@pytest.mark.parametrize("topo", ["mesh:5x5", "torus:4x4", "mesh:3x4x2", "torus:3x3x3", "mesh:8"])
def test_packing_and_monotone_runs_equal_the_step_by_step_reference(topo):
    """Distributed runs give the reference's routing time, meetings and co-location; ranks by prefix are right."""
    for placement, seed, task in itertools.product(("random", "corner", "spread"), (0, 1), ("packing", "monotone")):
        spec = RunSpec(task, topo, params={"active": 7, "placement": placement, "placement_seed": seed, "tp": 0.25}, slots=5000)
        prm = spec.prepare().node_params
        sides = tuple(int(x) for x in topo.split(":")[1].split("x"))
        r = run(spec)
        assert r.completion["complete"] and r.invariants["ok"], r.invariants
        if task == "packing":
            ref = K.simulate_packing(prm["active"], sides)
        else:
            ref = K.simulate_monotone(prm["active"], prm["targets"], sides)
        scan = 2 * sum(p - 1 for p in sides) * 0.25
        assert r.metrics["prefix_time"] == scan
        assert r.metrics["routing_time"] == ref.completion
        assert r.metrics["completion_time"] == pytest.approx(scan + ref.completion)
        assert (r.metrics["meetings"], r.metrics["boundary_collisions"], r.metrics["link_conflicts"]) == (
            ref.meetings, ref.boundary_collisions, ref.link_conflicts)
        assert r.metrics["max_at_node"] == ref.max_at_node


# -- array-broadcast ---------------------------------------------------------------------


@pytest.mark.parametrize("topo", ["mesh:6", "mesh:7", "torus:6", "torus:7", "torus:2"])
def test_array_broadcast_times_are_exact(topo):
    """Corner: K + p - 2 (array, ring arcs differ), (K + p - 2)/2 with halves; random: the greedy reference; <= Theorem 2."""
    wrap, p = topo.startswith("torus"), int(topo.split(":")[1])
    for k, placement, split, seed in itertools.product((1, 4, 9), ("corner", "random", "spread"), (True, False), (0, 2)):
        spec = RunSpec("array-broadcast", topo, params={"packets": k, "placement": placement, "split": split,
                                                         "placement_seed": seed}, slots=1000)
        counts = spec.prepare().node_params["counts"]
        r = run(spec)
        assert r.completion["complete"] and r.invariants["ok"], r.invariants
        halves = wrap and split
        steps = greedy_line_time(counts, wrap, halves)
        assert r.metrics["completion_time"] == pytest.approx(steps / (2 if halves else 1))
        if placement == "corner" and (not wrap or split):
            assert steps == k + p - 2
        assert r.metrics["completion_time"] <= th.theorem2_bound((p,), wrap, k, split=split)
