"""The invariants' combination and theory agreement (``orchestrator/engine/_invariants.py``),
unit by unit.

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line fails here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import math

from slotnet.orchestrator.engine._invariants import (
    AGREEMENT_WIDTHS,
    STEADY_WARMUP,
    STEADY_WINDOW,
    check_invariants,
    theory_agreement,
)
from slotnet.schemes._base import Claim

# ------------------------------------------------------------------ invariants


def test_check_invariants_conjunction():
    assert check_invariants({}) == {"link_capacity": {"ok": True, "enforced": "every send"}, "ok": True}
    out = check_invariants({"a": {"ok": True}, "n": 3})
    assert out == {"link_capacity": {"ok": True, "enforced": "every send"}, "a": {"ok": True}, "n": 3, "ok": True}
    assert check_invariants({"a": {"ok": False}})["ok"] is False
    assert check_invariants({"a": {"x": 1}})["ok"] is False
    assert check_invariants({"a": {"ok": True}, "b": {"ok": False}})["ok"] is False
    assert list(check_invariants({"a": {"ok": True}})) == ["link_capacity", "a", "ok"]


def test_agreement_constants():
    assert (AGREEMENT_WIDTHS, STEADY_WARMUP, STEADY_WINDOW) == (4.0, 2.0, 50.0)


def test_agreement_exact_row_and_slack_boundary():
    c = Claim("w", "delay", "exact", why="eq. 3")
    out = theory_agreement([c], {"w": 10.0}, {"delay": 10.5, "delay_ci95": 0.125}, True)
    assert out == {"ok": True, "rows": [{"theory": "w", "metric": "delay", "kind": "exact", "value": 10.0,
                                         "simulation": 10.5, "gap": 0.5, "ci95": 0.125, "error": 0.0,
                                         "why": "eq. 3", "ok": True}]}
    out = theory_agreement([c], {"w": 10.0}, {"delay": 10.51, "delay_ci95": 0.125}, True)
    assert out["ok"] is False and out["violations"] == 1
    assert out["problem"] == ("delay = 10.51 differs from the exact model w = 10 by 0.51, more than 4 x its 95% "
                              "half-width 0.125")
    assert out["rows"][0]["ok"] is False
    low = theory_agreement([c], {"w": 10.0}, {"delay": 9.49, "delay_ci95": 0.125}, True)
    assert low["ok"] is False


def test_agreement_relative_tolerance():
    c = Claim("w", "delay", "exact")
    assert theory_agreement([c], {"w": 1e6}, {"delay": 1e6 + 5e-4, "delay_ci95": 0.0}, True)["ok"] is True
    assert theory_agreement([c], {"w": 1e6}, {"delay": 1e6 + 2e-3, "delay_ci95": 0.0}, True)["ok"] is False
    assert theory_agreement([c], {"w": 0.1}, {"delay": 0.1 + 5e-10, "delay_ci95": 0.0}, True)["ok"] is True
    assert theory_agreement([c], {"w": 0.1}, {"delay": 0.1 + 2e-9, "delay_ci95": 0.0}, True)["ok"] is False


def test_agreement_error_allowance_and_message():
    c = Claim("w", "delay", "exact", error=0.25)
    assert theory_agreement([c], {"w": 1.0}, {"delay": 1.75, "delay_ci95": 0.125}, True)["ok"] is True
    out = theory_agreement([c], {"w": 1.0}, {"delay": 1.76, "delay_ci95": 0.125}, True)
    assert out["problem"] == ("delay = 1.76 differs from the exact model w = 1 by 0.76, more than 4 x its 95% "
                              "half-width 0.125 + 0.25")


def test_agreement_bounds():
    up = Claim("b", "t", "upper-bound")
    lo = Claim("b", "t", "lower-bound")
    m = {"t_ci95": 0.25}
    assert theory_agreement([up], {"b": 5.0}, {**m, "t": 6.0}, True)["ok"] is True
    assert theory_agreement([up], {"b": 5.0}, {**m, "t": 1.0}, True)["ok"] is True
    out = theory_agreement([up], {"b": 5.0}, {**m, "t": 6.01}, True)
    assert out["problem"].startswith("t = 6.01 exceeds the upper bound b = 5 by 1.01, more than 4 x its 95%")
    assert theory_agreement([lo], {"b": 5.0}, {**m, "t": 4.0}, True)["ok"] is True
    assert theory_agreement([lo], {"b": 5.0}, {**m, "t": 9.0}, True)["ok"] is True
    out = theory_agreement([lo], {"b": 5.0}, {**m, "t": 3.99}, True)
    assert out["problem"].startswith("t = 3.99 falls below the lower bound b = 5 by 1.01, more than 4 x")


def test_agreement_without_a_half_width_key_counts_zero():
    c = Claim("b", "t", "upper-bound")
    out = theory_agreement([c], {"b": 5.0}, {"t": 5.0}, True)
    assert out == {"ok": True, "rows": [{"theory": "b", "metric": "t", "kind": "upper-bound", "value": 5.0,
                                         "simulation": 5.0, "gap": 0.0, "ci95": 0.0, "error": 0.0, "ok": True}]}
    assert theory_agreement([c], {"b": 5.0}, {"t": 5.001}, True)["ok"] is False


def test_agreement_not_judged():
    c = Claim("w", "delay", "exact")
    m = {"delay": 99.0, "delay_ci95": None}
    out = theory_agreement([c], {"w": 1.0}, m, True)
    assert out == {"ok": True, "rows": [{"theory": "w", "metric": "delay", "kind": "exact", "value": 1.0,
                                         "simulation": 99.0, "gap": 98.0, "ci95": None, "error": 0.0,
                                         "judged": False}]}
    out = theory_agreement([c], {"w": 1.0}, {"delay": 99.0, "delay_ci95": 0.1}, False)
    assert out["ok"] is True and out["rows"][0]["judged"] is False and "ok" not in out["rows"][0]


def test_agreement_horizon_boundaries():
    c = Claim("w", "delay", "exact", horizon=10.0)
    m = {"delay": 99.0, "delay_ci95": 0.1}
    for warmup, window, judged in [(20, 500, True), (19, 500, False), (20, 499, False), (0, 0, False)]:
        row = theory_agreement([c], {"w": 1.0}, m, True, warmup=warmup, window=window)["rows"][0]
        assert row["horizon"] == 10.0
        assert ("judged" not in row) is judged
        assert ("ok" in row) is judged
    row = theory_agreement([Claim("w", "delay", "exact")], {"w": 1.0}, m, True)["rows"][0]
    assert "horizon" not in row and row["ok"] is False


def test_agreement_approximation():
    c = Claim("a", "x", "approximation", error=0.5)
    rows = theory_agreement([c], {"a": 1.0}, {"x": 1.75, "x_ci95": 0.25}, True)["rows"]
    assert rows == [{"theory": "a", "metric": "x", "kind": "approximation", "value": 1.0, "simulation": 1.75,
                     "gap": 0.75, "ci95": 0.25, "error": 0.5, "within_error": True}]
    assert theory_agreement([c], {"a": 1.0}, {"x": 1.76, "x_ci95": 0.25}, True)["rows"][0]["within_error"] is False
    assert theory_agreement([c], {"a": 1.0}, {"x": 0.25, "x_ci95": 0.25}, True)["rows"][0]["within_error"] is True
    assert theory_agreement([c], {"a": 1.0}, {"x": 0.24, "x_ci95": 0.25}, True)["rows"][0]["within_error"] is False
    assert theory_agreement([c], {"a": 1.0}, {"x": 1.5, "x_ci95": None}, True)["rows"][0]["within_error"] is True
    out = theory_agreement([c], {"a": 1.0}, {"x": 100.0, "x_ci95": 0.0}, True)
    assert out["ok"] is True


def test_agreement_skips_missing_and_non_numbers_and_lists_undeclared():
    claims = [Claim("w", "delay", "exact"), Claim("v", "rate", "exact"), Claim("u", "flag", "exact")]
    theory = {"w": math.inf, "v": 1.0, "u": 1.0, "z": 2.0, "y": 3, "x": math.nan, "t": "text", "s": True}
    metrics = {"delay": 1.0, "flag": True}
    out = theory_agreement(claims, theory, metrics, True)
    assert out == {"ok": True, "rows": [], "undeclared": ["y", "z"]}
    assert theory_agreement(claims, None, metrics, True) == {"ok": True, "rows": []}


def test_agreement_counts_violations_and_reports_the_first():
    a, b = Claim("w", "d1", "exact"), Claim("v", "d2", "exact")
    out = theory_agreement([a, b], {"w": 1.0, "v": 1.0}, {"d1": 3.0, "d1_ci95": 0.1, "d2": 5.0, "d2_ci95": 0.1}, True)
    assert out["violations"] == 2 and out["problem"].startswith("d1 = 3 ")
    assert list(out) == ["ok", "rows", "problem", "violations"]
