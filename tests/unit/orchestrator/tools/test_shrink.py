"""Unit tests of ``explore --shrink`` (``orchestrator/tools/_shrink.py``): cutting a schedule into
faults and back, ddmin's exact search, and the window shortening, against hand-computed answers."""

from __future__ import annotations

import hashlib
import json

import pytest

from slotnet.orchestrator.tools import _shrink
from slotnet.orchestrator.tools._shrink import Fault, ddmin, faults, objects, shrink


def _key(v: int, p: int) -> tuple[int, int]:
    """A hypercube's link, named the same from either end."""
    return min((v, p), (v ^ (1 << p), p))


def _digest(x: object) -> str:
    return hashlib.sha256(json.dumps(x, sort_keys=True).encode()).hexdigest()[:16]


#: more candidates than any search here needs: a search that runs away fails instead of hanging
BUDGET = 300


def _note(calls: list, x: object) -> None:
    calls.append(x)
    if len(calls) > BUDGET:
        raise RuntimeError(f"the search ran away: {len(calls)} candidates")


# -- the tables ------------------------------------------------------------------------------
def test_the_kind_tables():
    assert _shrink._PAIRS == {"link-down": ("link", "link-up"), "crash": ("node", "recover")}
    assert _shrink._WINDOWS == ("loss", "dup", "delay", "corrupt")
    assert _shrink._SPANS == ("partition", "stall")
    assert _shrink._SETTINGS == ("detect",)
    assert _shrink.__all__ == ["Fault", "ddmin", "faults", "objects", "shrink"]


@pytest.mark.parametrize("obj, slot", [
    ({"slot": 4, "from": 9}, 4), ({"from": 9}, 9), ({}, 0), ({"slot": "x"}, 0), ({"from": None}, 0),
    ({"slot": 0, "from": 3}, 0),
])
def test_first_slot(obj, slot):
    assert _shrink._first_slot(obj) == slot


# -- Fault.objects ---------------------------------------------------------------------------
def test_objects_of_each_kind_of_fault():
    other = Fault("other", 3, None, (("kind", "mystery"), ("slot", 3)))
    assert other.objects() == [{"kind": "mystery", "slot": 3}]
    win = Fault("window", 2, 7, (("kind", "loss"), ("rate", 0.5), ("until", 99)))
    assert win.objects() == [{"kind": "loss", "rate": 0.5, "until": 7, "from": 2}]
    open_win = Fault("window", 0, None, (("kind", "dup"), ("rate", 1.0), ("until", 99)))
    assert open_win.objects() == [{"kind": "dup", "rate": 1.0, "from": 0}]
    assert Fault("window", 5, None, (("kind", "dup"), ("rate", 1.0))).objects() == [{"kind": "dup", "rate": 1.0, "from": 5}]
    span = Fault("span", 4, 9, (("kind", "stall"), ("from", 0), ("to", 0), ("node", 2)))
    assert span.objects() == [{"kind": "stall", "from": 4, "to": 8, "node": 2}]
    assert Fault("span", 4, None, (("kind", "stall"), ("from", 0), ("to", 0), ("node", 2))).objects() == \
        [{"kind": "stall", "from": 4, "to": 4, "node": 2}]
    link = Fault("link", 6, None, (("kind", "link-down"), ("slot", 1), ("node", 2), ("port", 1)))
    assert link.objects() == [{"kind": "link-down", "slot": 6, "node": 2, "port": 1}]
    assert replace_end(link, 11).objects() == [{"kind": "link-down", "slot": 6, "node": 2, "port": 1},
                                               {"kind": "link-up", "slot": 11, "node": 2, "port": 1}]
    node = Fault("node", 0, 0, (("kind", "crash"), ("slot", 5), ("node", 7)))
    assert node.objects() == [{"kind": "crash", "slot": 0, "node": 7}, {"kind": "recover", "slot": 0, "node": 7}]
    assert Fault("node", 2, None, (("kind", "crash"), ("slot", 5), ("node", 7))).objects() == \
        [{"kind": "crash", "slot": 2, "node": 7}]


def replace_end(f: Fault, end: int | None) -> Fault:
    return Fault(f.what, f.start, end, f.entry)


# -- cutting a schedule into faults --------------------------------------------------------
def test_faults_pairs_windows_spans_and_settings():
    schedule = [
        {"kind": "link-up", "slot": 9, "node": 3, "port": 1},      # closes the link-down from the other end
        {"kind": "detect", "slots": 2},
        {"kind": "crash", "slot": 4, "node": 5},
        {"kind": "link-down", "slot": 1, "node": 1, "port": 1},
        {"kind": "recover", "slot": 8, "node": 5},
        {"kind": "recover", "slot": 12, "node": 6},               # nothing to close: a fault on its own
        {"kind": "loss", "rate": 0.5},                            # from 0, open
        {"kind": "delay", "rate": 0.1, "slots": 2, "from": 3, "until": 7},
        {"kind": "partition", "from": 2, "to": 6, "nodes": [1]},
        {"kind": "stall", "from": 5, "to": 5, "node": 0},
        {"kind": "mystery", "from": 7},
        {"kind": "link-down", "slot": 13, "node": 0, "port": 0},  # never comes back up
    ]
    fs = faults(schedule, _key)
    assert [(f.what, f.start, f.end) for f in fs] == [
        ("window", 0, None), ("link", 1, 9), ("span", 2, 7), ("window", 3, 7), ("node", 4, 8),
        ("span", 5, 6), ("other", 7, None), ("other", 12, None), ("link", 13, None)]
    assert fs[1].entry == (("kind", "link-down"), ("slot", 1), ("node", 1), ("port", 1))
    assert fs[7].entry == (("kind", "recover"), ("slot", 12), ("node", 6))
    assert fs[0].entry == (("kind", "loss"), ("rate", 0.5))
    # back to objects: the settings are gone, the rest sorted by slot
    objs = objects(fs)
    assert objs == [
        {"kind": "loss", "rate": 0.5, "from": 0},
        {"kind": "link-down", "slot": 1, "node": 1, "port": 1},
        {"kind": "partition", "from": 2, "to": 6, "nodes": [1]},
        {"kind": "delay", "rate": 0.1, "slots": 2, "from": 3, "until": 7},
        {"kind": "crash", "slot": 4, "node": 5},
        {"kind": "stall", "from": 5, "to": 5, "node": 0},
        {"kind": "mystery", "from": 7},
        {"kind": "recover", "slot": 8, "node": 5},
        {"kind": "link-up", "slot": 9, "node": 1, "port": 1},
        {"kind": "recover", "slot": 12, "node": 6},
        {"kind": "link-down", "slot": 13, "node": 0, "port": 0},
    ]


def test_a_link_up_closes_only_its_own_link_and_a_recover_only_its_node():
    fs = faults([{"kind": "link-down", "slot": 2, "node": 0, "port": 0},
                 {"kind": "link-up", "slot": 5, "node": 0, "port": 1},
                 {"kind": "crash", "slot": 3, "node": 0},
                 {"kind": "recover", "slot": 6, "node": 1},
                 {"kind": "link-up", "slot": 7, "node": 1, "port": 0}], _key)
    assert [(f.what, f.start, f.end) for f in fs] == [
        ("link", 2, 7), ("node", 3, None), ("other", 5, None), ("other", 6, None)]


# -- ddmin -----------------------------------------------------------------------------------
def test_ddmin_tries_halves_then_complements_then_finer_splits():
    calls: list[list[int]] = []

    def fails(xs):
        _note(calls, list(xs))
        return 3 in xs and 7 in xs

    assert ddmin(list(range(10)), fails) == [3, 7]
    assert calls[:10] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [5, 6, 7, 8, 9], [0, 1, 2, 3, 4],
                          [0, 1], [2, 3, 4], [5, 6], [7, 8, 9], [2, 3, 4, 5, 6, 7, 8, 9], [2, 3]]
    assert len(calls) == 33
    assert calls[-6:] == [[3, 8, 9], [3, 7], [3], [7], [7], [3]]

    calls.clear()

    def three(xs):
        _note(calls, list(xs))
        return 1 in xs and 4 in xs and 5 in xs

    assert ddmin(list(range(6)), three) == [1, 4, 5]
    assert calls == [[0, 1, 2], [3, 4, 5], [3, 4, 5], [0, 1, 2], [0], [1, 2], [3], [4, 5], [1, 2, 3, 4, 5], [1],
                     [2, 3], [4, 5], [2, 3, 4, 5], [1, 4, 5], [1], [4, 5], [4, 5], [1], [1], [4], [5], [4, 5],
                     [1, 5], [1, 4]]


def test_ddmin_edges():
    calls: list[list[int]] = []

    def rec(result):
        def fails(xs):
            _note(calls, list(xs))
            return result(xs)
        return fails

    assert ddmin([9], rec(lambda xs: True)) == [9] and calls == []  # one item: nothing to try
    assert ddmin([], rec(lambda xs: True)) == [] and calls == []
    assert ddmin([1, 2], rec(lambda xs: False)) == [1, 2]
    assert calls == [[1], [2], [2], [1]]  # the halves, then their complements (ddmin itself keeps no memo)
    calls.clear()
    assert ddmin([1, 2], rec(lambda xs: xs == [2])) == [2] and calls == [[1], [2]]
    calls.clear()
    assert ddmin([1, 2, 3], rec(lambda xs: False)) == [1, 2, 3]
    assert calls == [[1], [2, 3], [2, 3], [1], [1], [2], [3], [2, 3], [1, 3], [1, 2]]
    calls.clear()
    # a complement that fails: n drops by one, but never below 2
    assert ddmin([1, 2, 3, 4], rec(lambda xs: 1 in xs and 4 in xs)) == [1, 4]
    assert calls == [[1, 2], [3, 4], [3, 4], [1, 2], [1], [2], [3], [4], [2, 3, 4], [1, 3, 4], [1], [3], [4], [3, 4],
                     [1, 4], [1], [4], [4], [1]]


# -- shrink ----------------------------------------------------------------------------------
def _crash_and_partition(calls):
    def fails(objs):
        _note(calls, objs)
        c = [o for o in objs if o["kind"] == "crash"]
        r = [o for o in objs if o["kind"] == "recover"]
        p = [o for o in objs if o["kind"] == "partition"]
        down = bool(c) and c[0]["slot"] <= 9 and (not r or r[0]["slot"] > 9)
        return down and bool(p) and p[0]["from"] <= 12 <= p[0]["to"]
    return fails


def test_shrink_keeps_the_two_culprits_and_their_shortest_windows():
    calls: list[list[dict]] = []
    schedule = [{"kind": "loss", "rate": 0.5, "from": 3, "until": 20}, {"kind": "crash", "slot": 2, "node": 4},
                {"kind": "partition", "from": 5, "to": 15, "nodes": [1, 2]}, {"kind": "detect", "slots": 1},
                {"kind": "recover", "slot": 14, "node": 4}, {"kind": "link-down", "slot": 1, "node": 0, "port": 0}]
    out, runs = shrink(schedule, _crash_and_partition(calls), slots=30, link_key=_key)
    assert out == [{"kind": "crash", "slot": 9, "node": 4}, {"kind": "recover", "slot": 10, "node": 4},
                   {"kind": "partition", "from": 12, "to": 12, "nodes": [1, 2]}, {"kind": "detect", "slots": 1}]
    assert runs == len(calls) == 23  # every run once: the memo
    assert calls[0] == [{"kind": "detect", "slots": 1}]  # the empty schedule first, with the settings
    assert all(c[-1] == {"kind": "detect", "slots": 1} for c in calls)
    assert len({json.dumps(c, sort_keys=True) for c in calls}) == len(calls)
    assert _digest(calls) == "e962c78b5a5ab8fc"


def test_shrink_an_open_window_and_an_open_link():
    calls: list[list[dict]] = []

    def fails(objs):  # fails while loss covers slot 6 and link 0:0 is down in slot 8
        _note(calls, objs)
        loss = [o for o in objs if o["kind"] == "loss"]
        down = [o for o in objs if o["kind"] == "link-down"]
        up = [o for o in objs if o["kind"] == "link-up"]
        w = bool(loss) and loss[0].get("from", 0) <= 6 < loss[0].get("until", 10**9)
        ln = bool(down) and down[0]["slot"] <= 8 and (not up or up[0]["slot"] > 8)
        return w and ln

    schedule = [{"kind": "loss", "rate": 0.5}, {"kind": "link-down", "slot": 0, "node": 1, "port": 0}]
    out, runs = shrink(schedule, fails, slots=12, link_key=_key)
    assert out == [{"kind": "loss", "rate": 0.5, "from": 6, "until": 7},
                   {"kind": "link-down", "slot": 8, "node": 1, "port": 0},
                   {"kind": "link-up", "slot": 9, "node": 1, "port": 0}]
    assert runs == len(calls)
    assert _digest(calls) == "63f67e5de0979d4c"


def test_a_failure_to_the_last_slot_keeps_the_fault_open():
    calls: list[list[dict]] = []

    def fails(objs):  # node 2 must be down in the last slot (9) and since slot 4
        _note(calls, objs)
        c = [o for o in objs if o["kind"] == "crash"]
        r = [o for o in objs if o["kind"] == "recover"]
        return bool(c) and c[0]["slot"] <= 4 and not r

    out, runs = shrink([{"kind": "crash", "slot": 1, "node": 2}, {"kind": "stall", "from": 0, "to": 9, "node": 1}],
                       fails, slots=10, link_key=_key)
    assert out == [{"kind": "crash", "slot": 4, "node": 2}]
    assert runs == len(calls)
    assert _digest(calls) == "2ae0edbc9dac4ff3"


def test_a_span_to_the_end_of_the_run_stays_a_span():
    calls: list[list[dict]] = []

    def fails(objs):
        _note(calls, objs)
        s = [o for o in objs if o["kind"] == "stall"]
        return bool(s) and s[0]["from"] <= 3 and s[0]["to"] >= 9

    out, runs = shrink([{"kind": "stall", "from": 0, "to": 9, "node": 1}], fails, slots=10, link_key=_key)
    assert out == [{"kind": "stall", "from": 3, "to": 9, "node": 1}]
    assert runs == len(calls)
    assert _digest(calls) == "b96fc9c66e5ab630"


def test_nothing_to_shrink_when_no_fault_is_needed_and_others_are_kept_whole():
    calls: list[list[dict]] = []
    settings = [{"kind": "detect", "slots": "never"}]
    out, runs = shrink([{"kind": "crash", "slot": 3, "node": 1}, *settings],
                       lambda objs: _note(calls, objs) or True, slots=10, link_key=_key)
    assert (out, runs) == (settings, 1) and calls == [settings]
    out, runs = shrink([{"kind": "mystery", "slot": 3}, {"kind": "crash", "slot": 3, "node": 1}],
                       lambda objs: any(o["kind"] == "mystery" for o in objs), slots=10, link_key=_key)
    assert out == [{"kind": "mystery", "slot": 3}]
    assert runs == 2  # the empty schedule, then the first half fails alone; a lone 'other' has no window
