""""Where the papers slip": every slip the papers are known to make is a row with verdict `known`,
shown in the report's section with its evidence (the paper's value, what the rules give, what a run
measures, an independent check), every number of it computed, none typed in."""

from __future__ import annotations

import html
import math
import re
from typing import Any

import pytest

from slotnet.orchestrator.tools._paper_run import PaperRun
from slotnet.orchestrator.tools.report_html import render
from slotnet.schemes import Row
from slotnet.schemes.broadcast import _theory_indirect_slots as slot_model
from slotnet.schemes.broadcast import repro as bcast
from slotnet.schemes.broadcast import theory as bcast_theory
from slotnet.schemes.deflection import repro as gh
from slotnet.schemes.deflection import theory as gh_theory
from slotnet.schemes.pmnb import repro as vb
from slotnet.schemes.star import repro as yeh

SEED = 1


def _slips(text: str) -> list[dict[str, str]]:
    """The rows of the page's "Where the papers slip" table, as {column: text}."""
    section = re.search(r'<section id="slips">(.*?)</section>', text, re.S)
    assert section is not None, "no slips section"
    body = section.group(1)
    heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", body)]
    out = []
    for tr in re.findall(r"<tr class=known>(.*?)</tr>", body, re.S):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        out.append(dict(zip(heads, cells)))
    return out


def _one(slips: list[dict[str, str]], table: str, metric: str | None = None) -> dict[str, str]:
    got = [s for s in slips if s["table"] == table and (metric is None or s["metric"] == metric)]
    assert got, f"{table} {metric or ''} is not among the slips: {[(s['table'], s['metric']) for s in slips]}"
    return got[0]


def _page(rows_by_paper: dict[str, list[Row]]) -> str:
    runs = [PaperRun(paper, SEED, True, rows=rows) for paper, rows in rows_by_paper.items()]
    return render(runs, [("slotnet", "test")], figures=False)


# --- the real runs behind each slip, quick ---------------------------------------------


@pytest.fixture(scope="module")
def real():
    """The runs each slip's evidence comes from, at --quick length, and the page they make."""
    from slotnet.orchestrator.tools._repro import _Runner

    checks = [c for c in bcast.CHECKS if c[0] == "bcast-indirect"]
    check_specs = bcast.check_requests(checks, seed=SEED, quick=True)
    figs = [("8x8", "priority", 0.5), ("8x8", "fcfs", 0.9)]
    fig_specs = [yeh._spec("torus:8x8", rho, 1200, 200, SEED, discipline=disc) for _, disc, rho in figs]
    table_ii = dict(scheme="deflection", topology="hypercube:6", load={"offered": 1.0}, slots=1100, warmup=100, seed=SEED)
    specs = check_specs + fig_specs + [yeh.hops_request(SEED), vb.theorem3_request(SEED), table_ii]
    res = _Runner(2)(specs)
    it = iter(res)
    check_res = [next(it) for _ in check_specs]
    fig_res = [next(it) for _ in fig_specs]
    hops_res, t3_res, short = next(it), next(it), next(it)
    rows = {
        "stamoulis": bcast.check_rows(checks, check_res),
        "yeh": yeh.hops_rows(hops_res) + yeh.wait_rows(figs, fig_res),
        "varvarigos": vb.theorem1_rows() + vb.theorem3_rows(t3_res),
        "greenberg-hajek": [gh.table_ii_against_table_vi(short, None)],
    }
    text = _page(rows)
    return {"rows": rows, "text": text, "slips": _slips(text), "check_res": check_res, "fig_res": fig_res,
            "hops": hops_res, "t3": t3_res, "short": short}


@pytest.mark.slow
def test_the_section_lists_exactly_the_known_rows(real):
    """Every row whose verdict is `known` is in the section, and nothing else."""
    known = [r for rows in real["rows"].values() for r in rows if r.verdict().startswith(Row.KNOWN)]
    assert len(real["slips"]) == len(known) >= 12
    assert {(s["table"], s["case"], s["metric"]) for s in real["slips"]} == {(r.experiment, r.case, r.metric) for r in known}


@pytest.mark.slow
def test_indirect_scheme_overcount_prop5_cor8_prop6(real):
    """Prop. 5, Cor. 8 and Prop. 6: the printed formula, the rules slot by slot, and the run, each in the evidence."""
    d, rho = 6, 0.3
    rule_d, rule_dp = real["check_res"][0], real["check_res"][1]
    for table, printed, rules, sim in (
        ("indirect Rule D, Prop. 5", bcast_theory.indirect_delay(d, rho), slot_model.slot_delay(d, rho, "D"),
         rule_d["mean_broadcast_delay"]),
        ("indirect Rule D', Cor. 8", bcast_theory.indirect_delay_rule_d_prime(d, rho), slot_model.slot_delay(d, rho, "D'"),
         rule_dp["mean_broadcast_delay"]),
        ("indirect Q, Prop. 6", bcast_theory.indirect_queue(d, rho), slot_model.slot_queue(d, rho),
         rule_d["mean_queue_per_node"]),
    ):
        s = _one(real["slips"], table)
        ev = s["note (the evidence)"]
        assert f"the paper's formula gives {printed:.4f}" in ev and f"Rules A-F slot by slot give {rules:.4f}" in ev
        assert f"the run measures {sim:.4f}" in ev and "half-widths" in ev
        assert abs(sim - rules) < abs(sim - printed)  # the run sides with the rules
    # the slot-by-slot rows agree with the runs: not slips
    assert not any("slot by slot" in s["table"] for s in real["slips"])


@pytest.mark.slow
def test_theorem3_meetings_inside_a_phase_with_the_counterexample(real):
    """Theorem 3's "never two packets at one node": the run's and the reference's meetings, and the counterexample."""
    t3 = real["t3"]
    s = _one(real["slips"], vb.EXP_T3, "meetings inside a phase")
    ev = s["note (the evidence)"]
    assert "no two packets are at any time at the same node" in ev
    assert f"the run counts {t3['meetings']} meeting(s)" in ev and t3["meetings"] >= 1
    assert "Counterexample" in ev and "after 2 steps the packet from (0, 1) to (4, 0) and the packet from (4, 1) to (0, 1) " \
        "both sit at (2, 1)" in ev
    assert _one(real["slips"], vb.EXP_T3, "most packets at one node, inside a phase")["simulation ± 95%"] == "2.0000"


@pytest.mark.slow
def test_theorem1_for_odd_p(real):
    """Theorem 1's ceil(N/2) is one too many for odd p (5 and 7); even p is no slip."""
    s = _one(real["slips"], vb.EXP_T1)
    assert "ceil(N/2) = 13" in s["note (the evidence)"] and "ceil((N - 1)/2) = 12" in s["note (the evidence)"]
    assert {x["case"] for x in real["slips"] if x["table"] == vb.EXP_T1} == {"mesh:5x5 p=5", "mesh:7x7 p=7"}


@pytest.mark.slow
def test_floor_n_over_4_ring_distance(real):
    """§4's floor(n/4): the paper's hops, the exact mean, and the hops the run measured."""
    hops = real["hops"]
    s = _one(real["slips"], yeh.EXP_HOPS)
    ev = s["note (the evidence)"]
    assert "floor(n/4)" in ev and "2.7931" in ev and f"measures {hops['mean_unicast_hops']:.4f}" in ev
    assert s["paper value"] == "2.0000" and abs(hops["mean_unicast_hops"] - 2.7931) < 0.1


@pytest.mark.slow
def test_gd1_waits_with_v_equal_rho(real):
    """§3.2's G/D/1 waits with V = ρ sit well above the measured waits: each shown with both numbers."""
    waits = [s for s in real["slips"] if s["table"] == yeh.EXP_WAITS]
    assert len(waits) == 3  # priority: high and low classes; fcfs: overall
    for (_, disc, rho), r in zip([("8x8", "priority", 0.5), ("8x8", "fcfs", 0.9)], real["fig_res"]):
        for metric in (("mean_wait_high", "mean_wait_low") if disc == "priority" else ("mean_wait",)):
            s = next(x for x in waits if x["metric"].startswith(metric + " ") and x["case"] == f"{disc} rho={rho:g}")
            ev = s["note (the evidence)"]
            assert "V = ρ" in ev and f"is {r['_theory'][metric]:.4f}" in ev and f"the run measures {r[metric]:.4f}" in ev
            assert r[metric] < r["_theory"][metric]


@pytest.mark.slow
def test_table_ii_against_table_vi(real):
    """G-H Table II's v = 1 delay against a run and the model, with Little's law on Table II's own row."""
    short = real["short"]
    s = _one(real["slips"], gh.TABLE_II_VS_VI)
    ev = s["note (the evidence)"]
    model = float(gh_theory.steady_state_metrics(6, 1.0)["mean_delay"])  # type: ignore[arg-type]
    assert "T = 4.2092" in ev and f"model's {model:.4f}" in ev and "Table VI" in ev
    assert f"measures {short['mean_delay']:.4f}" in ev and "Little's law" in ev and "= 4.1842" in ev


# --- the experiments carry these rows -------------------------------------------------


def _star_result(spec: dict[str, Any]) -> dict[str, Any]:
    dims = len(spec["topology"].partition(":")[2].split("x"))
    theory = {"link_imbalance": 1.0, "link_utilization_per_dim": [0.1] * dims, "stable": True,
              "mean_reception_delay_zero_load": 4.0, "reception_delay_order": 10.0, "mean_wait_high": 0.03,
              "mean_wait_low": 0.56, "mean_wait": 4.5, "rho_high": 0.05, "throughput_factor": 0.9}
    return {"link_imbalance": 1.0, "link_utilization_per_dim": [0.1] * dims, "stable": True, "mean_reception_delay": 5.0,
            "mean_broadcast_delay": 6.0, "mean_broadcast_delay_ci95": 0.1, "mean_wait_high": 0.015, "mean_wait_low": 0.3,
            "mean_wait": 2.6, "mean_unicast_hops": 2.79, "unicasts_measured": 8000, "link_utilization": 0.07,
            "_theory": theory, "_ok": True}


def test_yeh_carries_its_two_slips_in_quick_and_full():
    """`repro yeh` (quick and full) runs the unicast-only hops run and sets the 8x8 waits beside §3.2."""
    for quick in (True, False):
        seen: list[dict[str, Any]] = []

        def fake(specs, seen=seen):
            seen.extend(specs)
            return [_star_result(s) for s in specs]

        rows = yeh.yeh(fake, seed=SEED, quick=quick)
        assert yeh.hops_request(SEED) in seen
        known = {r.experiment for r in rows if r.verdict().startswith(Row.KNOWN)}
        assert known == {yeh.EXP_HOPS, yeh.EXP_WAITS}, known
        assert sum(r.experiment == yeh.EXP_WAITS for r in rows) == 3 * len(yeh.WAITS_OF[1])


def test_a_slip_that_the_run_does_not_show_is_not_listed():
    """The verdict comes from the numbers: a run that sides with the paper, or is off the rules' value, is no slip."""
    res = _star_result({"topology": "torus:5x6"})
    res["mean_unicast_hops"] = 2.79310
    assert yeh.hops_rows(res)[0].verdict().startswith("known: §4 takes")  # on the exact mean: the paper's slip
    res["mean_unicast_hops"] = 2.0
    assert yeh.hops_rows(res)[0].verdict().startswith("OUTSIDE")  # on the paper's floor: off the exact model
    fig = _star_result({"topology": "torus:8x8"})
    fig["mean_wait"] = fig["_theory"]["mean_wait"]
    (row,) = yeh.wait_rows([("8x8", "fcfs", 0.9)], [fig])
    assert row.verdict() == Row.WITHIN and not _slips(_page({"yeh": [row]}))
    fig["mean_wait"] = 2 * fig["_theory"]["mean_wait"]  # above the model: not what V < ρ explains
    (row,) = yeh.wait_rows([("8x8", "fcfs", 0.9)], [fig])
    assert row.verdict().startswith("OUTSIDE")
    run = {"max_at_node": 1, "meetings": 0, "boundary_collisions": 0, "link_conflicts": 0}  # a run that never meets
    assert all(r.verdict().startswith("OUTSIDE") for r in vb.theorem3_rows(run)[:2])
    far = {"mean_delay": 4.5, "mean_delay_ci95": 0.01, "link_utilization": 0.66, "accept_fraction": 0.93}
    assert gh.table_ii_against_table_vi(far, None).verdict().startswith("OUTSIDE")  # off the model too


def test_theorem1_rows_are_exact_arithmetic():
    """The Theorem 1 rows: printed ceil(N/2) against ceil((N-1)/2), known exactly when p is odd."""
    for row in vb.theorem1_rows((3, 4, 5, 8, 9)):
        p = int(row.case.split("p=")[1])
        assert row.paper == math.ceil(p * p / 2) and row.theory == math.ceil((p * p - 1) / 2)
        assert row.verdict().startswith(Row.KNOWN) == (p % 2 == 1)


def test_a_dtree_sweep_point_past_the_models_range_cites_section_4_3_3():
    """(25) is vouched for up to rho = 0.3 (§4.3.3): past it the row says so, with the numbers; below it, no note."""
    from slotnet.schemes.broadcast.repro import DTREE_MODEL_RANGE, _sweep_note

    res = {"mean_broadcast_delay": 13.0, "mean_broadcast_delay_ci95": 1.1, "_theory": {"mean_broadcast_delay": 10.4}}
    note = _sweep_note("bcast-dtree", 4, 0.8, res)
    assert note.startswith("§4.3.3") and "10.4000" in note and "+25.0%" in note
    assert _sweep_note("bcast-dtree", 4, DTREE_MODEL_RANGE, res) == ""
    assert _sweep_note("bcast-balanced", 4, 0.8, res) == ""
