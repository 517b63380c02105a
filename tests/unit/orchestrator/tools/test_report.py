"""Unit tests of the human report (``orchestrator/tools/_report.py``): exact text, hand-checked.

Each expectation below was read off the code's rules (4 decimals below 1e5, ``-`` for None,
``yes``/``no``, relative differences as signed percentages, columns two spaces apart).
"""

from __future__ import annotations

import pytest

from slotnet.orchestrator.engine._result import Result
from slotnet.orchestrator.tools import _report
from slotnet.orchestrator.tools._report import CI_LEGEND, format_per_node, format_result, format_series, format_theory, format_value, table
from slotnet.schemes import Column


def _result(**kw) -> Result:
    base = dict(scheme="x", topology={"spec": "s", "n_nodes": 2, "n_links": 1}, seed=1, slots=10, warmup=2, params={},
                load={}, metrics={}, invariants={"ok": True}, slots_run=10)
    base.update(kw)
    return Result(**base)


@pytest.mark.parametrize("v, text", [
    (None, "-"), (True, "yes"), (False, "no"), (0, "0"), (7, "7"), ("abc", "abc"),
    (2.5, "2.5000"), (-2.5, "-2.5000"), (99999.0, "99999.0000"), (99999.99, "99999.9900"),
    (100000.0, "1e+05"), (-100000.0, "-1e+05"), (123456.0, "1.235e+05"), (-99999.0, "-99999.0000"),
    ([1, 2.5, None], "[1, 2.5000, -]"), ((True,), "[yes]"), ([], "[]"),
    ({}, "none"), ({"a": 1, "b": 0.5}, "a 1, b 0.5000"),
])
def test_format_value(v, text):
    assert format_value(v) == text


def test_rel_and_brief():
    assert _report._rel(2.5, 2.0) == "+25.00%"
    assert _report._rel(1.5, -2.0) == "+175.00%"  # divided by |theory|
    assert _report._rel(1, 2) == "-50.00%"
    assert _report._rel(1.0, 0) == "" and _report._rel(1.0, 0.0) == ""
    assert _report._rel(True, 1.0) == "" and _report._rel("a", 1.0) == "" and _report._rel(1.0, "a") == ""
    assert _report._rel(1.0, None) == ""
    assert _report._brief([{"a": 1}, {"b": 2}]) == "2 (see --json)"
    assert _report._brief([(1, 2)]) == "1 (see --json)" and _report._brief([[1]]) == "1 (see --json)"
    assert _report._brief([1, 2]) == "[1, 2]"
    assert _report._brief([]) == "none" and _report._brief(()) == "none" and _report._brief({}) == "none"
    assert _report._brief(0) == "0" and _report._brief(None) == "-"


def test_table_pads_and_strips():
    assert table([["a", "bbb"], ["cc", ""]], ["h1", "h"]) == ["h1  h", "--  ---", "a   bbb", "cc"]
    assert table([], ["one", "two"]) == ["one  two", "---  ---"]


def test_constants():
    assert _report.WIDTH == 100
    assert CI_LEGEND == "± is the 95% confidence half-width (batch means)"


FULL = """\
scheme bcast on ring:4 (4 nodes, 8 links)
load rho=0.25  params k=3  seed 7
slots 10/10 (warm-up 2)  wall 1.23 s

metric  simulation       model   sim vs model
------  ---------------  ------  ------------
delay   2.5000 ± 0.1250  2.0000  +25.00%
count   12
flag    yes
per[0]  1.0000           1.0000  +0.00%
per[1]  2.0000           2.5000  -20.00%
per[2]  3.0000           -
extra   -
± is the 95% confidence half-width (batch means)

theory only: only=4.5000

per slot: simulation | prediction
slot  Q       pred Q
----  ------  ------
1     0.4000  0.5000
2     0.8000  0.7500

invariants: ok
  conservation: ok  lost: 0  records: 1 (see --json)
  order: VIOLATED  empty: none
stable: yes (flat)"""


def _full() -> Result:
    return _result(scheme="bcast", topology={"spec": "ring:4", "n_nodes": 4, "n_links": 8}, seed=7, params={"k": 3},
                   load={"rho": 0.25},
                   metrics={"delay": 2.5, "delay_ci95": 0.125, "count": 12, "flag": True, "per": [1.0, 2.0, 3.0],
                            "extra": None},
                   invariants={"ok": True, "conservation": {"ok": True, "lost": 0, "records": [{"a": 1}]},
                               "order": {"ok": False, "empty": []}},
                   theory={"delay": 2.0, "per": [1.0, 2.5], "only": 4.5, "lst": [1],
                           "series": [{"slot": 0, "v": 1, "q": 0.5}, {"slot": 1, "v": 2, "q": 0.75}]},
                   stability={"stable": True, "reason": "flat"}, series=[{"slot": 0, "q": 0.4}, {"slot": 1, "q": 0.8}],
                   wall_seconds=1.234)


def test_format_result_full():
    assert format_result(_full(), [Column("q", "Q")], "model") == FULL


def test_format_result_defaults_and_no_series_without_columns():
    text = format_result(_full())
    assert "metric  simulation       theory  sim vs theory" in text
    assert "per slot" not in text  # no columns: no series table
    r = _full()
    r.series = []
    assert "per slot" not in format_result(r, [Column("q", "Q")])
    r = _full()
    del r.theory["series"]
    assert "per slot" not in format_result(r, [Column("q", "Q")])


FAULTED = """\
scheme x on s (2 nodes, 1 links)
load -  params -  seed 1
slots 5/10 (warm-up 2)  wall 0.00 s
faults crash@3:1 link-down@4:0:1
fault impact (messages): data lost 3, sent 9
  lost on ports the sender already saw dead: lost 1
  unicast: lost in flight 2, ratio 0.5000
  delivered all the faults left deliverable: yes (all); failure detection: 2 slot(s)
NOTE: {note}

metric   simulation  theory (fault-free)  sim vs theory
-------  ----------  -------------------  -------------
delay *  1.5000
a        3
* completed packets only: under faults these delays are survivor-biased

invariants: VIOLATED, incomplete at slot 4
stable: - ()""".format(note="incomplete at slot 4: the 10 slots given ended the run before its task completed. The "
                       "invariants judge what was due by then (packets in flight, queued or waiting are accounted for)")


def _faulted(**kw) -> Result:
    base = dict(metrics={"delay": 1.5, "a": 3}, invariants={"ok": False}, faults=["crash@3:1", "link-down@4:0:1"],
                fault_impact={"survivor_biased": ["delay"], "messages": {"data": {"lost": 3, "sent": 9}},
                              "detection": {"delay_slots": 2}, "avoidable": {"lost": 1},
                              "packets": {"unicast": {"lost_in_flight": 2, "ratio": 0.5}},
                              "delivered_all_deliverable": {"ok": True, "why": "all"}},
                slots_run=5, completion={"complete": False, "stopped_at_slot": 4})
    base.update(kw)
    return _result(**base)


def test_format_result_under_faults_incomplete():
    assert format_result(_faulted()) == FAULTED


def test_incomplete_verdicts():
    text = format_result(_faulted(invariants={"ok": True}, completion={"complete": False}, slots_run=6))
    assert "\ninvariants: ok so far, incomplete at slot 5\n" in text
    text = format_result(_faulted(completion={"complete": True}))
    assert "\ninvariants: VIOLATED\n" in text and "NOTE" not in text
    text = format_result(_result(slots_run=4, invariants={}))
    assert "NOTE: the run stopped after slot 3" in text and "\ninvariants: VIOLATED\n" in text


def test_impact_lines_empty_and_wrapped():
    assert _report._impact_lines({}) == [
        "fault impact (messages): none touched",
        "  delivered all the faults left deliverable: - (); failure detection: never"]
    long = {"messages": {f"book{i}": {"lost": i, "sent": 10 * i} for i in range(8)}}
    lines = _report._impact_lines(long)
    assert len(lines) == 4 and all(len(x) <= 100 for x in lines)
    assert lines[0].startswith("fault impact (messages): book0 lost 0, sent 0; book1")
    assert lines[1].startswith("    ") and not lines[1].startswith("     ")
    assert " ".join(x.strip() for x in lines[:3]) == ("fault impact (messages): " + "; ".join(
        f"book{i} lost {i}, sent {10 * i}" for i in range(8)))
    # a long word is not broken, nor a hyphenated one
    word = "x-" * 60
    lines = _report._impact_lines({"delivered_all_deliverable": {"why": word}})
    assert any(word + ")" in x for x in lines)


def test_invariant_details_wrap_at_width():
    detail = {f"key{i}": i * 1000 for i in range(20)}
    text = format_result(_result(invariants={"ok": True, "big": {"ok": True, **detail}, "none": {"ok": True}}))
    lines = text.split("\n")
    start = lines.index("  big: ok  key0: 0  key1: 1000  key2: 2000  key3: 3000  key4: 4000  key5: 5000  key6: 6000  key7:")
    assert lines[start + 1:start + 3] == [
        "      7000  key8: 8000  key9: 9000  key10: 10000  key11: 11000  key12: 12000  key13: 13000  key14:",
        "      14000  key15: 15000  key16: 16000  key17: 17000  key18: 18000  key19: 19000"]
    assert all(len(x) <= 100 for x in lines)
    assert "  none: ok" in lines  # nothing to detail: the head alone, right-stripped
    long = format_result(_result(invariants={"ok": True, "w": {"ok": True, "why": "a-b" * 50}}))
    assert "a-b" * 50 in long


def test_format_series_and_per_node():
    r = _full()
    assert format_series(r) == "per slot:\nslot  q\n----  ------\n0     0.4000\n1     0.8000"
    r.series = [{"q": 1}, {"q": 2, "r": 3}]
    assert format_series(r) == "per slot:\nslot  q\n----  -\n0     1\n1     2"
    r.series = []
    assert format_series(r) == "per slot: none kept (this scheme records no per-slot series)"
    assert format_per_node(r) == "per node: none (this scheme keeps no per-node statistics)"
    r.per_node = {"a": [1, 2, 3], "b": [0.5]}
    assert format_per_node(r) == ("per node:\nnode  a  b\n----  -  ------\n0     1  0.5000\n1     2  -\n2     3  -")


def test_series_table_past_the_prediction():
    got = _report._series_table([{"slot": 0, "q": 1}, {"slot": 1, "q": 2}], [{"q": 5}], [Column("q", "Q")])
    assert got == ["slot  Q  pred Q", "----  -  ------", "1     1  5", "2     2  -"]


def test_format_theory():
    got = format_theory("bcast", "ring:4", {"delay": 2.0, "series": [{"slot": 1, "v": 0.5, "q": 1.0}, {"v": 0.25}]},
                        [Column("q", "Q")])
    assert got == ("theory of bcast on ring:4\n\nmetric  model\n------  ------\ndelay   2.0000\n\n"
                   "slot  v       Q\n----  ------  ------\n1     0.5000  1.0000\n2     0.2500  -")
    assert format_theory("s", "t", {"a": 1, "series": [{"v": 1}]}) == "theory of s on t\n\nmetric  model\n------  -----\na       1"
