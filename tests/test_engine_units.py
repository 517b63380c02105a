"""The run engine's small parts, unit by unit: the result object and its JSON form, the
stability monitor, the progress lines, the invariants' combination and theory agreement,
and the garbage collector's settings during a slot loop.

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line in ``orchestrator/engine`` fails here in seconds (``docs/development.md``,
"Mutation testing"). The end of a run (``_collect``) is in ``test_engine_collect_units.py``.
"""

from __future__ import annotations

import enum
import gc
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.orchestrator.engine import _gc, _progress
from slotnet.orchestrator.engine._invariants import (
    AGREEMENT_WIDTHS,
    STEADY_WARMUP,
    STEADY_WINDOW,
    check_invariants,
    theory_agreement,
)
from slotnet.orchestrator.engine._progress import Progress, RunsProgress, _clock
from slotnet.orchestrator.engine._result import NON_FINITE, WALL_CLOCK_FIELDS, Result, _pointer, json_ready
from slotnet.orchestrator.engine._stability import MIN_TREND_SLOTS, StabilityMonitor
from slotnet.schemes._base import Claim

# ------------------------------------------------------------------ json_ready


class _Colour(enum.IntEnum):
    RED = 3


class _Name(str, enum.Enum):  # noqa: UP042 -- a str mixin, whose str() is its name (StrEnum differs)
    A = "alpha"


def test_json_ready_the_docstring_example():
    out = json_ready({"theory": {"mean_wait": float("inf"), "rho": 1.2}, "hist": (0.5, float("nan"))})
    assert out == {"theory": {"mean_wait": None, "rho": 1.2}, "hist": [0.5, None],
                   "non_finite": {"/theory/mean_wait": "inf", "/hist/1": "nan"}}
    assert list(out) == ["theory", "hist", "non_finite"]
    assert NON_FINITE == "non_finite"


def test_json_ready_negative_infinity_and_nesting():
    out = json_ready({"a": [1, {"b": -math.inf}], "c": math.inf})
    assert out == {"a": [1, {"b": None}], "c": None, "non_finite": {"/a/1/b": "-inf", "/c": "inf"}}


def test_json_ready_all_finite_has_no_non_finite_key():
    assert json_ready({"x": 1.5, "y": [2, 3]}) == {"x": 1.5, "y": [2, 3]}


def test_json_ready_top_level_list_never_gets_the_key():
    assert json_ready([math.inf, 1.0]) == [None, 1.0]
    assert json_ready(math.nan) is None
    assert json_ready((1, 2)) == [1, 2]


def test_json_ready_plain_values_pass_through():
    for v in (None, True, False, 0, 7, "s", ""):
        out = json_ready(v)
        assert out is v or out == v
        assert type(out) is type(v)
    assert json_ready({1: "a", (2, 3): "b"}) == {"1": "a", "(2, 3)": "b"}


def test_json_ready_subclasses_numpy_and_sets():
    out = json_ready({"c": _Colour.RED, "n": _Name.A, "f": np.float64(2.5), "i": np.int64(4),
                      "arr": np.array([[1, 2], [3, 4]]), "s": {3, 1, 2}, "fs": frozenset({"b", "a"}),
                      "nan": np.float64("nan")})
    assert out == {"c": 3, "n": "alpha", "f": 2.5, "i": 4, "arr": [[1, 2], [3, 4]], "s": [1, 2, 3],
                   "fs": ["a", "b"], "nan": None, "non_finite": {"/nan": "nan"}}
    assert type(out["c"]) is int and type(out["n"]) is str and type(out["f"]) is float and type(out["i"]) is int
    assert json_ready(np.array([1.0, np.inf])) == [1.0, None]


def test_json_ready_unknown_objects_are_returned_unchanged():
    o = object()
    assert json_ready(o) is o
    assert json_ready({"o": o}) == {"o": o}


def test_json_ready_pointer_escapes_tilde_and_slash():
    assert _pointer("a/b~c") == "a~1b~0c"
    assert _pointer("~/") == "~0~1"
    assert json_ready({"a/b": {"~x": math.inf}}) == {"a/b": {"~x": None}, "non_finite": {"/a~1b/~0x": "inf"}}


@settings(max_examples=25, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                    max_leaves=12))
def test_json_ready_round_trips_through_json(value):
    out = json_ready({"v": value})
    assert json.loads(json.dumps(out, allow_nan=False)) == out


# ------------------------------------------------------------------ Result


def _result(**kw) -> Result:
    base = dict(scheme="s", topology={"kind": "ring"}, seed=7, slots=100, warmup=10, params={"p": 1},
                load={"lam": 0.5}, metrics={"m": 1.0}, invariants={"ok": True})
    base.update(kw)
    return Result(**base)


def test_result_defaults():
    r = _result()
    assert r.theory is None and r.stability == {} and r.per_node == {} and r.series == [] and r.faults == []
    assert r.slots_run == 0 and r.transport == {"kind": "inprocess"} and r.completion is None
    assert r.fault_impact is None and r.trace_fingerprint is None and r.wall_seconds == 0.0 and r.performance == {}
    assert WALL_CLOCK_FIELDS == ("timing",)


def test_result_ok():
    assert _result().ok is True
    assert _result(invariants={"ok": False}).ok is False
    assert _result(invariants={}).ok is False
    assert _result(invariants={"ok": 1}).ok is True


def test_result_measured_slots():
    assert _result(slots_run=100).measured_slots == 90
    assert _result(slots_run=11).measured_slots == 1
    assert _result(slots_run=10).measured_slots == 0
    assert _result(slots_run=3).measured_slots == 0


def test_result_complete():
    assert _result().complete is None
    assert _result(completion={"complete": True}).complete is True
    assert _result(completion={"complete": 0}).complete is False
    assert _result(completion={}).complete is False


def test_result_note_fixed_slot_runs():
    assert _result(slots_run=100).note is None
    assert _result(slots_run=101).note is None
    assert _result(slots_run=99).note == ("the run stopped after slot 98: metrics cover the 89 slots run after "
                                          "the warm-up, not the 90 planned")
    assert _result(slots_run=11).note == ("the run stopped after slot 10: metrics cover the 1 slots run after "
                                          "the warm-up, not the 90 planned")
    assert _result(slots_run=10).note == ("nothing was measured: the run stopped after slot 9, before its "
                                          "warm-up of 10 slots ended")


def test_result_note_one_shot():
    assert _result(slots_run=5, completion={"complete": True}).note is None
    tail = ". The invariants judge what was due by then (packets in flight, queued or waiting are accounted for)"
    r = _result(slots_run=100, completion={"complete": False, "stopped_at_slot": 42, "ended_by": "cap"})
    assert r.note == ("incomplete at slot 42: the safety cap of 100 slots ended the run before its task "
                      "completed; give --slots to run longer" + tail)
    r = _result(slots_run=100, completion={"complete": False, "stopped_at_slot": 42, "ended_by": "unstable"})
    assert r.note == "incomplete at slot 42: the stability monitor stopped the run before its task completed" + tail
    r = _result(slots_run=100, completion={"complete": False, "stopped_at_slot": 42, "ended_by": "slots"})
    assert r.note == "incomplete at slot 42: the 100 slots given ended the run before its task completed" + tail
    r = _result(slots_run=60, completion={"complete": False})
    assert r.note == "incomplete at slot 59: the 100 slots given ended the run before its task completed" + tail


def test_result_to_dict_minimal():
    r = _result(slots_run=100, wall_seconds=1.5, performance={"messages": 3})
    d = r.to_dict()
    assert list(d) == ["scheme", "topology", "seed", "slots", "warmup", "slots_run", "measured_slots", "params",
                       "load", "faults", "metrics", "theory", "invariants", "stability", "transport", "timing"]
    assert d == {"scheme": "s", "topology": {"kind": "ring"}, "seed": 7, "slots": 100, "warmup": 10,
                 "slots_run": 100, "measured_slots": 90, "params": {"p": 1}, "load": {"lam": 0.5}, "faults": [],
                 "metrics": {"m": 1.0}, "theory": None, "invariants": {"ok": True}, "stability": {},
                 "transport": {"kind": "inprocess"},
                 "timing": {"wall_seconds": 1.5, "performance": {"messages": 3}}}


def test_result_to_dict_everything():
    r = _result(slots_run=50, theory={"w": math.inf}, trace_fingerprint="abc", completion={"complete": False},
                fault_impact={"x": 1}, per_node={"q": [1, 2]}, series=[{"slot": 0}], faults=["crash@1:0"])
    d = r.to_dict(per_node=True, series=True)
    assert list(d) == ["scheme", "topology", "seed", "slots", "warmup", "slots_run", "measured_slots", "params",
                       "load", "faults", "metrics", "theory", "invariants", "stability", "transport",
                       "trace_fingerprint", "timing", "note", "completion", "fault_impact", "per_node", "series",
                       "non_finite"]
    assert d["trace_fingerprint"] == "abc" and d["note"] == r.note and d["completion"] == {"complete": False}
    assert d["fault_impact"] == {"x": 1} and d["per_node"] == {"q": [1, 2]} and d["series"] == [{"slot": 0}]
    assert d["faults"] == ["crash@1:0"] and d["theory"] == {"w": None} and d["non_finite"] == {"/theory/w": "inf"}
    assert d["measured_slots"] == 40
    d = r.to_dict(per_node=True)
    assert "per_node" in d and "series" not in d
    d = r.to_dict(series=True)
    assert "series" in d and "per_node" not in d
    d = r.to_dict()
    assert "series" not in d and "per_node" not in d


# ------------------------------------------------------------------ StabilityMonitor


def _monitor(samples, n=1, warmup=0, per_node=1e9) -> StabilityMonitor:
    m = StabilityMonitor(n, warmup, len(samples), per_node)
    for slot, b in enumerate(samples):
        assert m.sample(slot, b)
    return m


def _pairs(means):
    """Samples whose 10 batch means (20 samples, one node) are ``means``."""
    return [x for m in means for x in (m, m)]


def test_monitor_fields_and_cap():
    m = StabilityMonitor(4, 3, 50, 2.5)
    assert (m.n_nodes, m.warmup, m.slots, m.cap, m.samples, m.stopped_at) == (4, 3, 50, 10.0, [], None)


def test_monitor_samples_only_after_warmup():
    m = StabilityMonitor(2, 3, 10, 100)
    for slot in range(6):
        assert m.sample(slot, slot * 10) is True
    assert m.samples == [30, 40, 50]


def test_monitor_cap_boundary():
    m = StabilityMonitor(4, 0, 10, 2.5)
    assert m.sample(0, 10) is True and m.stopped_at is None
    assert m.sample(1, 11) is False and m.stopped_at == 1
    assert m.samples == [10, 11]
    assert m.verdict() == {"stable": False, "reason": "backlog exceeded 2.5 packets per node", "stopped_at_slot": 1,
                           "final_backlog_per_node": 2.75}


def test_monitor_cap_during_warmup_has_no_final_backlog():
    m = StabilityMonitor(2, 5, 10, 3)
    assert m.sample(0, 7) is False
    assert m.verdict() == {"stable": False, "reason": "backlog exceeded 3 packets per node", "stopped_at_slot": 0,
                           "final_backlog_per_node": None}


def test_monitor_stopped_at_slot_zero_is_still_stopped():
    m = StabilityMonitor(1, 0, 10, 1)
    m.sample(0, 2)
    assert m.verdict()["stable"] is False


def test_monitor_too_few_samples():
    assert _monitor(list(range(19))).verdict() == {"stable": True, "reason": "too few measured slots for a trend test",
                                                   "batches": []}
    assert "batch_backlog_per_node" in _monitor(list(range(20))).verdict()


def test_monitor_uneven_batches_and_undetermined():
    v = _monitor(list(range(25))).verdict()
    assert v == {"stable": None,
                 "reason": ("undetermined: the backlog rose over 25 measured slots, too few to tell growth from "
                            "the start-up transient (at least 200 are needed)"),
                 "batch_backlog_per_node": [0.5, 3.0, 5.5, 8.0, 10.5, 13.0, 15.5, 18.0, 20.5, 23.0],
                 "increasing_steps": 9}
    assert MIN_TREND_SLOTS == 200


def test_monitor_trend_needs_min_trend_slots():
    rising = [i // 20 for i in range(200)]  # ten batches of 20, means 0..9
    v = _monitor(rising).verdict()
    assert v == {"stable": False, "reason": "backlog grows steadily",
                 "batch_backlog_per_node": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], "increasing_steps": 9}
    v = _monitor(rising[:199]).verdict()
    assert v["stable"] is None and "199 measured slots" in v["reason"]


def test_monitor_batch_means_per_node_rounded():
    v = _monitor([1] * 20, n=3).verdict()
    assert v == {"stable": True, "reason": "backlog does not grow steadily",
                 "batch_backlog_per_node": [0.3333] * 10, "increasing_steps": 0}


@pytest.mark.parametrize(("means", "stable"), [
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], None),   # 9 rising steps
    ([1, 2, 3, 4, 5, 6, 7, 8, 9, 9], None),    # 8 rising steps, one flat
    ([1, 2, 3, 4, 5, 6, 7, 8, 8, 8], True),    # 7 rising, two flat
    ([1, 2, 3, 4, 5, 6, 7, 6, 5, 9], True),    # 7 rising, two falling
    ([0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5], True),   # growth exactly 0.5
    ([0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5625], None),
    ([2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 3.0], True),      # last exactly 1.5 x first
    ([2, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 3.0625], None),
])
def test_monitor_trend_thresholds(means, stable):
    v = _monitor(_pairs(means)).verdict()
    assert v["stable"] is stable


def test_monitor_trend_thresholds_long_window_says_unstable():
    means = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9]
    v = _monitor([m for m in means for _ in range(20)]).verdict()
    assert v["stable"] is False and v["increasing_steps"] == 8


# ------------------------------------------------------------------ progress lines


class _Clock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def monotonic(self) -> float:
        return self.t


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(_progress, "time", c)
    return c


def test_progress_enabled_follows_the_terminal(clock):
    assert Progress(10, stream=_Tty()).enabled is True
    assert Progress(10, stream=io.StringIO()).enabled is False
    assert Progress(10, stream=io.StringIO(), enabled=True).enabled is True
    assert Progress(10, stream=_Tty(), enabled=False).enabled is False
    p = Progress(10, stream=io.StringIO())
    assert (p.total, p.after, p.start, p._last, p._shown) == (10, 2.0, 100.0, 0.0, False)


def test_progress_default_stream_is_stderr(clock, monkeypatch):
    err = _Tty()
    monkeypatch.setattr(_progress.sys, "stderr", err)
    p = Progress(4)
    assert p.stream is err and p.enabled is True
    r = RunsProgress()
    assert r.stream is err and r.enabled is True


def test_progress_draws_after_the_delay(clock):
    out = io.StringIO()
    p = Progress(10, stream=out, enabled=True)
    clock.t = 101.99
    p.update(0)
    assert out.getvalue() == "" and p._shown is False
    clock.t = 102.0
    p.update(2)
    assert out.getvalue() == "\r[#########                     ] slot 3/10, 0:02 elapsed, about 0:05 left"
    assert p._shown is True and p._last == 102.0
    clock.t = 102.24
    p.update(3)
    assert out.getvalue().count("\r") == 1
    clock.t = 102.25
    p.update(9)
    assert out.getvalue().endswith("\r[##############################] slot 10/10, 0:02 elapsed")
    p.close()
    assert out.getvalue().endswith("\r" + " " * 80 + "\r")


def test_progress_custom_delay_and_disabled(clock):
    out = io.StringIO()
    p = Progress(3, stream=out, after=0.5, enabled=True)
    clock.t = 100.5
    p.update(0)
    assert out.getvalue() == "\r[##########                    ] slot 1/3, 0:01 elapsed, about 0:01 left"
    out = io.StringIO()
    p = Progress(3, stream=out, enabled=False)
    clock.t = 200.0
    p.update(1)
    p.close()
    assert out.getvalue() == ""


def test_progress_close_without_drawing_writes_nothing(clock):
    out = io.StringIO()
    Progress(3, stream=out, enabled=True).close()
    assert out.getvalue() == ""


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0:00"), (0.49, "0:00"), (0.5, "0:01"), (59.4, "0:59"), (59.5, "1:00"), (61, "1:01"),
    (3599, "59:59"), (3599.5, "1:00:00"), (3600, "1:00:00"), (3661, "1:01:01"), (36000 + 600 + 5, "10:10:05"),
])
def test_clock(seconds, text):
    assert _clock(seconds) == text


def test_runs_progress_line(clock):
    r = RunsProgress(stream=io.StringIO())
    assert (r.total, r.finished, r._width, r.start, r.enabled) == (0, 0, 0, 100.0, False)
    assert r.line() == "[                    ] runs 0/0, 0:00 elapsed"
    r.add(4)
    clock.t = 110.0
    assert r.line() == "[                    ] runs 0/4, 0:10 elapsed"
    r.done()
    assert r.line() == "[#####               ] runs 1/4, 0:10 elapsed, about 0:30 left"
    r.done()
    r.done()
    clock.t = 130.0
    assert r.line() == "[###############     ] runs 3/4, 0:30 elapsed, about 0:10 left"
    r.done()
    assert r.line() == "[####################] runs 4/4, 0:30 elapsed"
    r.add(1)
    assert r.line() == "[################    ] runs 4/5, 0:30 elapsed, about 0:08 left"


def test_runs_progress_draws_and_clears(clock):
    out = io.StringIO()
    r = RunsProgress(stream=out, enabled=True)
    r.clear()
    assert out.getvalue() == ""
    r.add(2)
    first = "[                    ] runs 0/2, 0:00 elapsed"
    assert out.getvalue() == "\r" + first and r._width == len(first)
    clock.t = 170.0
    r.done()
    second = "[##########          ] runs 1/2, 1:10 elapsed, about 1:10 left"
    assert out.getvalue() == "\r" + first + "\r" + second and r._width == len(second)
    r.done()
    third = "[####################] runs 2/2, 1:10 elapsed"
    assert out.getvalue().endswith("\r" + third.ljust(len(second)))
    out.seek(0)
    out.truncate()
    r.close()
    assert out.getvalue() == "\r" + " " * len(third) + "\r" and r._width == 0
    r.clear()
    assert out.getvalue() == "\r" + " " * len(third) + "\r"


def test_runs_progress_disabled_writes_nothing(clock):
    out = io.StringIO()
    r = RunsProgress(stream=out, enabled=False)
    r.add(3)
    r.done()
    r._width = 5
    r.clear()
    r.close()
    assert out.getvalue() == "" and r.total == 3 and r.finished == 1


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


# ------------------------------------------------------------------ quiet_gc


def test_quiet_gc_sets_and_restores(monkeypatch):
    before = gc.get_threshold()
    assert _gc._depth == 0
    try:
        gc.set_threshold(700, 11, 12)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (50_000, 11, 12)
            assert gc.get_freeze_count() > 0
            assert _gc._depth == 1 and _gc._saved == (700, 11, 12)
            with _gc.quiet_gc():
                assert _gc._depth == 2
                assert gc.get_threshold() == (50_000, 11, 12)
            assert _gc._depth == 1
            assert gc.get_threshold() == (50_000, 11, 12) and gc.get_freeze_count() > 0
        assert _gc._depth == 0
        assert gc.get_threshold() == (700, 11, 12) and gc.get_freeze_count() == 0
        gc.set_threshold(80_000, 5, 6)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (80_000, 5, 6)
        gc.set_threshold(49_999, 5, 6)
        with _gc.quiet_gc():
            assert gc.get_threshold() == (50_000, 5, 6)
        with pytest.raises(KeyError), _gc.quiet_gc():
            raise KeyError("x")
        assert _gc._depth == 0 and gc.get_threshold() == (49_999, 5, 6) and gc.get_freeze_count() == 0
    finally:
        gc.set_threshold(*before)



def test_agreement_a_bound_met_exactly_at_its_slack_holds():
    # th = 10, half-width 0.125: the slack is 4 x 0.125 + 1e-9 x 10; a value exactly at th + slack is no violation
    slack = AGREEMENT_WIDTHS * 0.125 + 0.0 + 1e-9 * 10.0
    for kind, sim in (("upper-bound", 10.0 + slack), ("lower-bound", 10.0 - slack)):
        c = Claim("w", "delay", kind)
        assert theory_agreement([c], {"w": 10.0}, {"delay": sim, "delay_ci95": 0.125}, True)["ok"] is True, kind
