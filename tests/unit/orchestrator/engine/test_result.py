"""The run's result (``orchestrator/engine/_result.py``) unit by unit: ``json_ready`` and the
``Result`` object and its JSON form.

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line fails here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import enum
import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.orchestrator.engine._result import NON_FINITE, WALL_CLOCK_FIELDS, Result, _pointer, json_ready

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
    assert WALL_CLOCK_FIELDS == ("timing", "provenance") and r.provenance == {}


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
    assert list(d) == ["scheme", "topology", "seed", "rng", "slots", "warmup", "slots_run", "measured_slots", "params",
                       "load", "faults", "metrics", "theory", "invariants", "stability", "transport", "timing"]
    assert d == {"scheme": "s", "topology": {"kind": "ring"}, "seed": 7, "rng": "philox", "slots": 100, "warmup": 10,
                 "slots_run": 100, "measured_slots": 90, "params": {"p": 1}, "load": {"lam": 0.5}, "faults": [],
                 "metrics": {"m": 1.0}, "theory": None, "invariants": {"ok": True}, "stability": {},
                 "transport": {"kind": "inprocess"},
                 "timing": {"wall_seconds": 1.5, "performance": {"messages": 3}}}


def test_result_to_dict_everything():
    r = _result(slots_run=50, theory={"w": math.inf}, trace_fingerprint="abc", completion={"complete": False},
                fault_impact={"x": 1}, per_node={"q": [1, 2]}, series=[{"slot": 0}], faults=["crash@1:0"])
    d = r.to_dict(per_node=True, series=True)
    assert list(d) == ["scheme", "topology", "seed", "rng", "slots", "warmup", "slots_run", "measured_slots", "params",
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
