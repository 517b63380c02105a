"""Greenberg & Hajek Tables I and II reproduced by the emulator (d = 6).

Table II is one 1,100-slot run per offered load (averages over the last 1,000); so is
ours. "The statistical agreement the paper reports" is read column by column: the
largest gap the paper shows between its simulation (Table II) and its model (Table III)
in that column. Two checks per row and column, each allowing that gap plus the noise of
two independent runs of this length (sqrt(2) times our 95% batch-means half-width):

* our run against the paper's model (Table III, which ``theory`` reproduces exactly);
* our run against the paper's own simulation (Table II).

Measured with seeds 1-4 (see the closing notes): our runs sit on the model, while the
paper's runs sit slightly below it at v >= 1 (lower delay, fewer deflections, more
accepted); the gap is systematic but inside the paper's own column-wise agreement.
"""

from __future__ import annotations

import math

import pytest

from slotnet import RunSpec, run
from slotnet.schemes.deflection import theory
from slotnet.schemes.deflection.paper import TABLE_II, TABLE_III
from slotnet.schemes.deflection.paper import TABLE_II_III_COLUMNS as KEYS

#: the paper's own simulation-vs-model agreement, column by column (largest |II - III|)
PAPER_AGREEMENT = [max(abs(TABLE_II[v][i] - TABLE_III[v][i]) for v in TABLE_II) for i in range(4)]


def test_paper_agreement_is_what_the_tables_print():
    """The column-wise agreement is read off Tables II and III (util, accept, delay, deflection)."""
    assert [round(a, 4) for a in PAPER_AGREEMENT] == [0.0117, 0.0076, 0.0724, 0.0058]


@pytest.mark.slow
@pytest.mark.parametrize("v", sorted(TABLE_II))
def test_table_ii_reproduced_within_the_papers_own_agreement(v):
    """Our run agrees with the paper's model and with its simulation as closely as those two agree."""
    r = run(RunSpec("deflection", "hypercube:6", load={"offered": v}, slots=1100, warmup=100, seed=1))
    assert r.invariants["ok"]
    for i, key in enumerate(KEYS):
        sim = r.metrics[key]
        ci = r.metrics[f"{key}_ci95"] or 0.0
        allowed = PAPER_AGREEMENT[i] + math.sqrt(2) * ci + 5e-5  # + half a printed digit
        for name, ref in (("model (Table III)", TABLE_III[v][i]), ("simulation (Table II)", TABLE_II[v][i])):
            assert abs(sim - ref) <= allowed, f"v={v} {key}: ours {sim:.4f}, paper's {name} {ref:.4f}, allowed {allowed:.4f}"


def test_table_i_transient_run_tracks_the_update_equations():
    """A full 6-cube emptying out follows (3.5)-(3.6): utilisation within a few links per slot."""
    r = run(RunSpec("deflection", "hypercube:6", params={"schedule": "6:1,0"}, slots=25, seed=1))
    pred = r.theory["series"]
    assert r.series[0]["link_utilization"] == 1.0 and r.series[0]["accept_fraction"] == 1.0
    for s, p in zip(r.series[:7], pred[:7]):
        # 384 links: binomial noise on a utilisation u is sqrt(u(1-u)/384) <= 0.026
        assert abs(s["link_utilization"] - p["link_utilization"]) < 0.06
    assert all(s["link_utilization"] == 0.0 for s in r.series[15:])
    assert r.invariants["conservation"]["delivered"] == 384


@pytest.mark.slow
def test_input_queueing_matches_section_iv_model():
    """With Poisson arrivals and input queues, transit delay ~ T and queueing delay within (4.1)'s bounds."""
    lam = 1.0
    r = run(RunSpec("deflection", "hypercube:6", load={"lam": lam}, slots=2100, warmup=100, seed=2))
    model = theory.input_queue(6, lam)
    assert r.metrics["stable"] and r.invariants["ok"]
    assert abs(r.metrics["throughput_per_node"] - lam) < 0.02
    assert abs(r.metrics["mean_transit_delay"] - model.mean_transit_delay) / model.mean_transit_delay < 0.03
    lo, hi = model.queueing_delay_bounds
    assert lo - 0.05 <= r.metrics["mean_queueing_delay"] <= hi + 0.05


def test_overload_with_input_queues_is_reported_unstable():
    """λ past the network's capacity makes queues grow; the run says so and stops early."""
    r = run(RunSpec("deflection", "hypercube:5", load={"lam": 3.0}, slots=3000, warmup=0, seed=1,
                    max_backlog_per_node=50))
    assert r.metrics["stable"] is False
    assert r.stability["stopped_at_slot"] < 3000 and r.slots_run < 3000
    assert r.invariants["conservation"]["ok"], "queued packets are counted as held"
