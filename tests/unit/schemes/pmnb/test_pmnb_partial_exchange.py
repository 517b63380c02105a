"""Partial exchange (§5): routes and priorities, the reference run against the bounds,
and the network run against the reference, exactly once, with the exact Phase 1."""

from __future__ import annotations

import io
import math
import random
from contextlib import redirect_stdout

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.orchestrator.cli import main
from slotnet.schemes.pmnb import _placement as PL
from slotnet.schemes.pmnb import theory as th
from slotnet.schemes.pmnb._exchange_rule import (
    C_SET,
    R_SET,
    ExchangeRouter,
    exchange_class,
    next_hop,
    port_index,
    priority,
    simulate_exchange,
)
from slotnet.schemes.pmnb.partial_exchange import ExchangeReporter


def _path(src: tuple[int, int], dst: tuple[int, int], cls: int) -> list[tuple[int, int]]:
    here, out = src, [src]
    while (hop := next_hop(here, dst, cls)) is not None:
        dim, dr = hop
        here = (here[0] + dr, here[1]) if dim == 0 else (here[0], here[1] + dr)
        out.append(here)
    return out


def test_routes_turn_once_and_are_shortest() -> None:
    """R goes along its row (dimension 0) first, C along its column first; one turn, |dx|+|dy| hops."""
    for src in [(0, 0), (3, 1), (2, 4)]:
        for dst in [(4, 4), (0, 3), (3, 1), (1, 0)]:
            for cls in (R_SET, C_SET):
                path = _path(src, dst, cls)
                assert path[-1] == dst and len(path) - 1 == abs(src[0] - dst[0]) + abs(src[1] - dst[1])
                first = 0 if cls == R_SET else 1
                dims = [0 if a[1] == b[1] else 1 for a, b in zip(path, path[1:])]
                assert dims == sorted(dims, key=lambda k: k != first)  # first-leg dimension, then the other


def test_class_and_priority_rules() -> None:
    """R iff r_i <= c_j; rule a): R first on horizontal links, C first on vertical ones."""
    assert exchange_class(2, 2) == R_SET and exchange_class(1, 3) == R_SET and exchange_class(3, 1) == C_SET
    assert priority(0, R_SET) == 0 and priority(0, C_SET) == 1
    assert priority(1, C_SET) == 0 and priority(1, R_SET) == 1


def test_router_serves_the_priority_class_first() -> None:
    """A C packet queued first on a horizontal port waits for a later R packet; the reverse on a vertical port."""
    p = 4
    r = ExchangeRouter((1, 1), p, 5)
    r.receive((0, 7, C_SET, 1, 0), 1)   # to (3, 1): horizontal, class C
    r.receive((4, 6, R_SET, 1, 1), 1)   # to (2, 1): horizontal, class R
    r.receive((1, 13, R_SET, 1, 1), 1)  # to (1, 3): vertical, class R
    r.receive((9, 9, C_SET, 1, 0), 1)   # to (1, 2): vertical, class C
    sent = dict(r.transmit())
    assert sent[port_index(0, +1)][:2] == (4, 6)   # R before C horizontally
    assert sent[port_index(1, +1)][:2] == (9, 9)   # C before R vertically
    assert r.held == 2  # and rule b): both ports were used


def _cases() -> list[tuple[int, str, int]]:
    out = []
    for p in (2, 3, 4, 5, 6, 7):
        n = p * p
        for kind in ("random", "corner", "spread"):
            for m in sorted({1, 2, p, n // 4, n // 2, n - 1, n}):
                out.append((p, kind, m))
    return out


@pytest.mark.parametrize("wrap", [False, True], ids=["array", "torus"])
def test_reference_lies_between_the_placement_bound_and_the_upper_bound(wrap: bool) -> None:
    """Many placements, p odd and even: lower bound for the placement <= T <= 2m(N-p)+2(p-1)+p t_p; exactly once; Lemma 3."""
    for p, kind, m in _cases():
        ids = PL.place(kind, (p, p), m, random.Random(p * 100 + m))
        out = simulate_exchange(ids, p, 0.125)
        b = th.partial_exchange_bounds((p, p), wrap, list(ids), 0.125)
        assert b["lower_bound"] <= out.completion_time <= b["upper_bound"], (p, kind, m)
        assert out.delivered == m * (p * p - 1) and out.duplicates == 0 and out.all_shortest
        assert out.max_r_per_row <= math.isqrt(m) and out.max_c_per_column <= math.isqrt(m)
        assert out.first_leg_time <= math.isqrt(m) * (p * p - p) + p - 1  # the proof's first half


@pytest.mark.parametrize("topology,kind,m,tp", [
    ("mesh:4x4", "random", 5, 0.125), ("mesh:5x5", "corner", 9, 0.375), ("mesh:5x5", "spread", 7, 1.0),
    ("mesh:6x6", "random", 36, 0.125), ("torus:4x4", "corner", 4, 0.25), ("mesh:3x3", "random", 0, 0.5),
])
def test_network_run_matches_the_reference(topology: str, kind: str, m: int, tp: float) -> None:
    """The node rule over the fabric finishes at the reference's time, Phase 1 in exactly 2 floor(p/2) t_p."""
    spec = RunSpec("partial-exchange", topology, params={"active": m, "placement": kind, "tp": tp, "placement_seed": 3},
                   slots=100_000)
    r = run(spec)
    p = int(topology.split(":")[1].split("x")[0])
    assert r.invariants["ok"], r.invariants
    assert r.completion["complete"]
    ids = spec.prepare().node_params["active_ids"]
    assert len(ids) == m
    ref = simulate_exchange(ids, p, tp)
    assert r.metrics["completion_time"] == pytest.approx(ref.completion_time)
    assert r.metrics["phase1_time"] == pytest.approx(2 * (p // 2) * tp)
    assert r.metrics["packets_delivered"] == m * (p * p - 1)
    assert r.theory is not None
    assert r.theory["completion_time_lower_bound"] <= r.metrics["completion_time"] <= r.theory["completion_time"]


def test_reporter_flags_a_duplicate_and_a_wrong_sum() -> None:
    """The exactly-once and row/column-sum invariants can fail: a second delivery and a bad sum are caught."""
    r = run(RunSpec("partial-exchange", "mesh:3x3", params={"active": 2, "placement": "corner"}, slots=1000))
    assert r.invariants["ok"]
    from slotnet.fabric import parse_topology
    from slotnet.schemes import Setup

    setup = Setup(topology=parse_topology("mesh:3x3"), params={"active_ids": (0, 1), "tp": 0.125}, load={},
                  slots=10, warmup=0, seed=0, quantum=8)
    rep = ExchangeReporter(setup)
    rep.on_sums(0, 6, 2, 1, R_SET)
    rep.on_delivered(4, 20, 0, 2, 1)
    rep.on_delivered(4, 28, 0, 2, 1)
    inv = rep.invariants({}, [], [0] * 9)
    assert not inv["exactly_once"]["ok"] and inv["exactly_once"]["duplicates"] == 1
    assert not inv["row_column_sums"]["ok"]


@pytest.mark.parametrize("topology", ["mesh:4x5", "mesh:3x3x3", "torus:6", "hypercube:4"])
def test_other_shapes_are_refused(topology: str) -> None:
    """§5 is stated for p x p arrays (and tori): other shapes are refused before the run."""
    with pytest.raises(SpecError):
        RunSpec("partial-exchange", topology, params={"active": 2}).prepare()


def test_tp_that_needs_too_fine_a_tick_is_refused() -> None:
    """t_p is honoured exactly or refused, never rounded."""
    with pytest.raises(SpecError, match="tp"):
        RunSpec("partial-exchange", "mesh:4x4", params={"active": 2, "tp": 0.1234567}).prepare()


def test_cli_theory_prints_the_bounds() -> None:
    """`slotnet theory partial-exchange -t mesh:6x6 --param active=9` prints the upper, placement and worst-case bounds."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["theory", "partial-exchange", "-t", "mesh:6x6", "--param", "active=9"])
    out = buf.getvalue()
    assert rc == 0
    assert "completion_time " in out and "completion_time_lower_bound_worst_case" in out
    assert f"{th.pe_upper_bound((6, 6), False, 9, 0.125):.4f}" in out
