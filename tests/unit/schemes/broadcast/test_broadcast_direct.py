"""The non-idling direct schemes of Stamoulis & Tsitsiklis §4.3: ``bcast-dtree``, ``bcast-balanced``.

Table 1 criterion, fixed before any d = 8 run was compared with the paper: our D (one
5,500-slot run, first 500 slots discarded, seed 1 — the paper's 5,000 measured slots) may
differ from the paper's Simulation column by at most the paper's own agreement between
its simulation and its approximation (25) over the range it calls excellent, ρ <= 0.3
("less than 2%"): the largest |Simulation - Approximation| there, 0.1429 (ρ = 0.3), plus
sqrt(2) times our 95% batch-means half-width (two independent runs of that length) and
half a printed digit. Only two rows run here (time budget). The full table (all 16 rows,
``slotnet run bcast-dtree -t hypercube:8 --rho R --slots 5500 --warmup 500 --seed 1``)
meets the criterion in every row with the default FIFO ties (``ties=hops``), our D lying
0.2–0.5% above the paper's for ρ <= 0.2 and 1–2% above for ρ >= 0.225; with
``ties=inport`` it does not (ρ = 0.2: 9.59 against 9.19), see ``bcast-dtree``'s docstring.
"""

from __future__ import annotations

import math
from functools import cache

import pytest

from slotnet import RunSpec, run
from slotnet.schemes.broadcast import theory
from slotnet.schemes.broadcast._direct import fifo_arrival_order
from slotnet.schemes.broadcast.balanced import balanced_plan
from slotnet.schemes.broadcast.dtree import dtree_plan
from slotnet.schemes.broadcast.paper import TABLE_1 as PAPER_TABLE_1
from slotnet.schemes.broadcast.trees import (
    balanced_children,
    balanced_period,
    balanced_priority,
    dtree_children,
    dtree_priority,
    label_sequence,
)
from slotnet.schemes.kit import LabelQueues, StreamLabels

#: ρ: (Simulation, Approximation (25)) -- Table 1 of the paper, d = 8
TABLE_1 = {rho: (sim, approx) for rho, sim, approx, _ in PAPER_TABLE_1}
PAPER_AGREEMENT = max(abs(s - a) for rho, (s, a) in TABLE_1.items() if rho <= 0.3)
SCHEMES = ("bcast-dtree", "bcast-balanced")


@cache  # several tests compare against one run: run it once
def _run(scheme: str, d: int, rho: float, slots: int, warmup: int, seed: int = 1, **params: str):
    r = run(RunSpec(scheme, f"hypercube:{d}", params=params, load={"rho": rho}, slots=slots, warmup=warmup,
                    seed=seed))
    assert r.invariants["ok"], r.invariants
    return r


def _d(r) -> tuple[float, float]:
    return r.metrics["mean_broadcast_delay"], r.metrics["mean_broadcast_delay_ci95"]


# ------------------------------------------------------------------ pure pieces


def test_plans_are_the_children_with_the_periodic_tie_break():
    """dtree_plan/balanced_plan list each child port with the slot of trees.*_priority."""
    d = 5
    for rel in range(1 << d):
        for j in range(d):
            plan = dtree_plan(rel, j, d)
            assert [k for k, _ in plan] == list(dtree_children(rel, j, d))
            assert all((7, s) == dtree_priority(7, rel, j, k, d) for k, s in plan)
        plan = balanced_plan(rel, d)
        assert [k for k, _ in plan] == list(balanced_children(rel, d))
        assert all((3, s) == balanced_priority(3, rel, k, d) for k, s in plan)


def test_stream_labels_follow_the_recursion_of_section_4_3_1():
    """StreamLabels gives trees.label_sequence per stream, streams independent."""
    period = balanced_period(6)
    taus = [0, 1, 1, 2, 30, 31, 31, 31, 32, 90]
    labels = StreamLabels(2, period)
    got = [labels.next(0, t) for t in taus]
    assert got == label_sequence(taus, period)
    assert labels.next(1, 90) == label_sequence([90], period)[0]


def test_label_queues_serve_smallest_label_then_periodic_slot():
    """Each port pops by (label, slot in period); Q counts a packet until its last port."""
    q = LabelQueues(2)
    q.add(("a", 1), 5, [(0, 3), (1, 0)])
    q.add(("b", 1), 4, [(0, 9)])
    q.add(("c", 1), 5, [(0, 1)])
    assert q.held == 3
    assert [q.pop(0) for _ in range(3)] == [("b", 1), ("c", 1), ("a", 1)]
    assert q.held == 1 and q.items() == [("a", 1)]
    assert q.pop(1) == ("a", 1) and q.held == 0


def test_arrival_order_puts_copies_with_more_hops_first():
    """ties=hops orders one slot's copies by hops travelled, then in-port; inport keeps the inbox."""
    inbox = [(0, (0b0001, 1, 0)), (1, (0b1111, 1, 0)), (2, (0b0011, 1, 0)), (3, (0b0110, 1, 0))]
    assert [p for p, _ in fifo_arrival_order(0, inbox, "hops")] == [1, 2, 3, 0]
    assert fifo_arrival_order(0, inbox, "inport") == inbox


# ------------------------------------------------------------------ correctness


@pytest.mark.parametrize("rho", [0.1, 0.8])
@pytest.mark.parametrize("scheme,params", [
    ("bcast-dtree", {}), ("bcast-dtree", {"discipline": "label"}), ("bcast-dtree", {"ties": "inport"}),
    ("bcast-balanced", {}), ("bcast-balanced", {"discipline": "fifo"}),
])
def test_every_packet_reaches_every_node_exactly_once(scheme, params, rho):
    """No duplicates, no unknown packets, nothing lost; incomplete packets are still in flight."""
    r = _run(scheme, 5, rho, 400, 50, **params)
    once = r.invariants["exactly_once"]
    assert once["ok"] and once["duplicate_receptions"] == 0 and once["missed"] == 0
    assert once["completed"] + once["in_progress"] == once["broadcasts"] > 0


def test_same_seed_same_run(shuffled_scheduling):
    """Two runs of one spec under different Trio schedules give bit-identical metrics."""
    spec = RunSpec("bcast-dtree", "hypercube:4", params={"discipline": "label"}, load={"rho": 0.5},
                   slots=300, warmup=30, seed=1)
    shuffled_scheduling(1)
    a = run(spec)  # not the cached _run: two genuinely separate runs
    shuffled_scheduling(2)
    b = run(spec)
    assert a.metrics == b.metrics and a.metrics["broadcasts_measured"] > 50
    assert a.invariants == b.invariants and a.per_node == b.per_node


@pytest.mark.parametrize("scheme", SCHEMES)
def test_lone_packet_completes_in_d_plus_half(scheme):
    """With almost no other traffic D = d + 1/2 (depth d plus the mean synchronisation 1/2)."""
    d = 6
    r = _run(scheme, d, 0.0005, 100_000, 100)
    D, ci = _d(r)
    assert r.metrics["broadcasts_measured"] > 200
    assert abs(D - (d + 0.5)) <= ci, (D, ci)


@pytest.mark.slow
def test_dtree_at_light_load_is_d_plus_half_plus_the_first_order_term():
    """At ρ = 0.01, d = 6: |D − (d + ½)| ≤ CI95 + the first-order term (25) predicts (≈ 0.02)."""
    d, rho = 6, 0.01
    D, ci = _d(_run("bcast-dtree", d, rho, 20_000, 100))
    assert abs(D - (d + 0.5)) <= ci + (theory.dtree_delay(d, rho) - (d + 0.5)), (D, ci)


# ------------------------------------------------------------------ the paper's numbers


def test_paper_agreement_is_what_table_1_prints():
    """The paper's own largest |Simulation − (25)| for ρ ≤ 0.3 is 0.1429 (ρ = 0.3)."""
    assert round(PAPER_AGREEMENT, 4) == 0.1429


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.05, 0.15])
def test_table_1_simulation_reproduced(rho):
    """bcast-dtree D at d = 8 agrees with Table 1's Simulation column (criterion: module docstring)."""
    D, ci = _d(_run("bcast-dtree", 8, rho, 5500, 500))
    allowed = PAPER_AGREEMENT + math.sqrt(2) * ci + 5e-5
    assert abs(D - TABLE_1[rho][0]) <= allowed, f"ρ={rho}: ours {D:.4f} ± {ci:.4f}, paper {TABLE_1[rho][0]}"


#: moderate load for the comparisons below: d = 6, ρ = 0.4, 3,000 slots (300 warm-up)
MODERATE = (6, 0.4, 3000, 300)


@pytest.mark.slow
def test_fifo_tie_order_moves_d_but_not_the_queues():
    """ties=inport raises D (a max over 2^d − 1 paths) above ties=hops; Q stays within its CI."""
    hops = _run("bcast-dtree", *MODERATE)
    inport = _run("bcast-dtree", *MODERATE, ties="inport")
    (dh, ch), (di, ci) = _d(hops), _d(inport)
    assert di - dh > math.hypot(ch, ci), (dh, ch, di, ci)
    qh, qi = hops.metrics["mean_queue_per_node"], inport.metrics["mean_queue_per_node"]
    assert abs(qi - qh) <= math.hypot(hops.metrics["mean_queue_per_node_ci95"], inport.metrics["mean_queue_per_node_ci95"])


@pytest.mark.slow
def test_label_priority_no_slower_than_fifo():
    """At moderate load label priority's D ≤ FIFO's D + the CI of the difference."""
    fifo = _d(_run("bcast-dtree", *MODERATE))
    label = _d(_run("bcast-dtree", *MODERATE, discipline="label"))
    assert label[0] <= fifo[0] + math.hypot(fifo[1], label[1]), (fifo, label)


@pytest.mark.slow
def test_balanced_scheme_has_the_larger_delay_and_queues():
    """§4.3.3, Figs. 6–9 (d = 10 there, d = 6 here for time): §4.3.1's D and Q exceed §4.3.2's."""
    dt = _run("bcast-dtree", *MODERATE)
    bal = _run("bcast-balanced", *MODERATE)
    (d1, c1), (d2, c2) = _d(dt), _d(bal)
    assert d2 - d1 > math.hypot(c1, c2), ((d1, c1), (d2, c2))
    q1, q2 = dt.metrics["mean_queue_per_node"], bal.metrics["mean_queue_per_node"]
    assert q2 - q1 > math.hypot(dt.metrics["mean_queue_per_node_ci95"], bal.metrics["mean_queue_per_node_ci95"])


@pytest.mark.parametrize("scheme,params", [("bcast-dtree", {}), ("bcast-dtree", {"discipline": "label"}),
                                           ("bcast-balanced", {})])
def test_stable_at_rho_0_8(scheme, params):
    """At ρ = 0.8 (d = 5; (12) allows 0.886 for §4.3.1) Q does not grow: second half ≤ 1.5 × first + ½."""
    r = _run(scheme, 5, 0.8, 3000, 300, **params)
    assert r.stability["stable"], r.stability
    b = r.stability["batch_backlog_per_node"]
    first, second = sum(b[:5]) / 5, sum(b[5:]) / 5
    assert second <= 1.5 * first + 0.5, b


def test_the_stability_check_flags_the_simple_scheme_at_rho_0_8():
    """Control: bcast-simple (§4.1, stable only for ρ < 0.3875 at d = 5) is caught growing at ρ = 0.8."""
    r = run(RunSpec("bcast-simple", "hypercube:5", load={"rho": 0.8}, slots=3000, warmup=300, seed=1))
    assert not r.stability["stable"]
