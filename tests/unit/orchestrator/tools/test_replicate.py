"""Replications and sweeps: seed lists, sweep ranges, and each metric's mean over independent runs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slotnet import SpecError
from slotnet.orchestrator.tools._replicate import parse_over, parse_seeds, summarise
from slotnet.schemes.kit import t_half_width


@pytest.mark.parametrize(("text", "seeds"), [
    ("1-10", list(range(1, 11))), ("3", [3]), ("1,3,5", [1, 3, 5]), ("1-3,7,2", [1, 2, 3, 7]), ("0-1", [0, 1]),
    (" 4 , 2 ", [4, 2]),
])
def test_seed_lists(text, seeds):
    """Seeds and ranges, in the order given, each seed once."""
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(("text", "says"), [
    ("", "takes seeds and ranges"), ("a-b", "takes seeds and ranges"), ("5-1", "runs backwards"),
    ("1-100000", "more than 10000"), ("1,,2", "takes seeds and ranges"),
])
def test_bad_seed_lists(text, says):
    """A malformed seed list is one precise SpecError."""
    with pytest.raises(SpecError, match=says):
        parse_seeds(text)


@given(a=st.integers(0, 20), n=st.integers(1, 30), step=st.sampled_from([0.05, 0.1, 0.25, 1.0, 2.5]))
def test_a_sweep_range_includes_both_ends(a, n, step):
    """NAME=A:B:STEP gives A, A+STEP, ... B with B included and no float drift (0.30000000000000004)."""
    lo = round(a * step, 12)
    hi = round(lo + (n - 1) * step, 12)
    name, values = parse_over(f"rho={lo!r}:{hi!r}:{step!r}")
    assert name == "rho" and len(values) == n
    assert values[0] == pytest.approx(lo) and values[-1] == pytest.approx(hi)
    assert all(v == round(v, 12) for v in values)


@pytest.mark.parametrize(("text", "says"), [
    ("rho", "NAME=A:B:STEP"), ("=0.1:0.2:0.1", "NAME=A:B:STEP"), ("rho=0.5:0.1:0.1", "step must be positive"),
    ("rho=0.1:0.5:0", "step must be positive"), ("rho=a,b", "with numbers"), ("rho=0:1000:0.01", "more than"),
])
def test_bad_sweep_ranges(text, says):
    """A malformed --over is one precise SpecError."""
    with pytest.raises(SpecError, match=says):
        parse_over(text)


def test_a_value_list():
    """NAME=V1,V2 takes the values as given."""
    assert parse_over("offered=0.5,1,2") == ("offered", [0.5, 1.0, 2.0])


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=12))
def test_summary_of_a_metric(values):
    """Mean, Student-t half-width, range and count over the runs that report the metric."""
    s = summarise([{"metrics": {"m": v}} for v in values])["m"]
    assert s["n"] == len(values) and s["min"] == min(values) and s["max"] == max(values)
    assert s["mean"] == pytest.approx(math.fsum(values) / len(values))
    half = t_half_width(values)
    assert (s["ci95"] is None) if half is None else s["ci95"] == pytest.approx(half, abs=1e-9)


def test_summary_kinds():
    """A yes/no metric counts its yeses; non-finite values and lists are left out; a missing metric is not counted."""
    runs = [{"metrics": {"ok": True, "d": 1.0, "hist": [1, 2], "w": None}},
            {"metrics": {"ok": False, "d": math.inf, "hist": [2, 1], "w": 3}},
            {"metrics": {"ok": True, "d": 3.0}}]
    s = summarise(runs)
    assert s["ok"] == {"true": 2, "n": 3}
    assert s["d"]["n"] == 2 and s["d"]["mean"] == 2.0
    assert "hist" not in s
    assert s["w"]["n"] == 1 and s["w"]["ci95"] is None
