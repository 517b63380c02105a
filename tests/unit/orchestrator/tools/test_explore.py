"""Unit tests of ``slotnet explore`` (``orchestrator/tools/_explore.py``): scenarios, the classes of a
random sample, the table and the shrinker's driver (the verdict's fault rules are the engine's:
``tests/unit/orchestrator/engine/test_fault_rules.py``). Hand-computed answers, fakes instead of runs
where a run is not the point, and a few runs of the 2-cube for 8 slots."""

from __future__ import annotations

import math

import pytest

from slotnet import RunSpec
from slotnet.errors import FaultSpecError, SpecError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools import _explore, _fuzz
from slotnet.orchestrator.tools._explore import (
    base_request,
    default_crash_slots,
    explore,
    faults_of,
    format_explore,
    judge,
    links,
    scenarios,
    shrink_failure,
)

SQUARE = parse_topology("hypercube:2")
CUBE = parse_topology("hypercube:3")


def test_explore_tables():
    assert _explore.FAMILIES == ("single-link", "single-node", "double-link", "crash-points", "random")
    assert _explore.CLASSES == ("crash", "refused", "nondeterministic", "unaccounted", "incomplete", "books", "verdict",
                               "ok")
    assert _explore.REPEAT_EVERY == 20
    assert _explore._KEY_METRICS == ("mean_delay", "mean_broadcast_delay", "completion_time", "throughput_per_node",
                                     "link_utilization", "mean_queue_per_node")


def test_links_and_scenarios_of_each_family():
    assert links(SQUARE) == [(0, 0, 1), (0, 1, 2), (1, 1, 3), (2, 0, 3)]
    assert scenarios(SQUARE, "single-link", slots=5, seed=0) == [
        ("link 0-1 (0:0)", [{"kind": "link-down", "slot": 0, "node": 0, "port": 0}]),
        ("link 0-2 (0:1)", [{"kind": "link-down", "slot": 0, "node": 0, "port": 1}]),
        ("link 1-3 (1:1)", [{"kind": "link-down", "slot": 0, "node": 1, "port": 1}]),
        ("link 2-3 (2:0)", [{"kind": "link-down", "slot": 0, "node": 2, "port": 0}])]
    assert scenarios(SQUARE, "single-node", slots=5, seed=0) == [
        (f"node {v}", [{"kind": "crash", "slot": 0, "node": v}]) for v in range(4)]
    pairs = scenarios(SQUARE, "double-link", slots=5, seed=0)
    assert len(pairs) == 6  # fewer pairs than the default sample of 20: all of them, in order
    assert pairs[0] == ("link 0-1 + link 0-2", [{"kind": "link-down", "slot": 0, "node": 0, "port": 0},
                                                {"kind": "link-down", "slot": 0, "node": 0, "port": 1}])
    assert [label for label, _ in pairs] == ["link 0-1 + link 0-2", "link 0-1 + link 1-3", "link 0-1 + link 2-3",
                                             "link 0-2 + link 1-3", "link 0-2 + link 2-3", "link 1-3 + link 2-3"]
    assert scenarios(SQUARE, "double-link", slots=5, seed=0, samples=6) == pairs
    assert [x for x, _ in scenarios(SQUARE, "double-link", slots=5, seed=3, samples=2)] == \
        ["link 0-1 + link 1-3", "link 0-2 + link 2-3"]
    assert [x for x, _ in scenarios(SQUARE, "single-link", slots=5, seed=3, samples=3)] == \
        ["link 0-1 (0:0)", "link 0-2 (0:1)", "link 1-3 (1:1)"]
    assert len(scenarios(CUBE, "double-link", slots=5, seed=3)) == 20
    crash = scenarios(SQUARE, "crash-points", slots=5, seed=0, crash_slots=[4, 0, 4])
    assert crash == [(f"node {v} at {s}", [{"kind": "crash", "slot": s, "node": v}]) for s in (0, 4) for v in range(4)]
    rnd = scenarios(SQUARE, "random", slots=6, seed=2, samples=3, kinds=["loss"], draw_detect=False)
    assert rnd == [(f"#{i}", _fuzz.random_schedule(SQUARE, 6, ["loss"], _fuzz.sample_rng(2, i), draw_detect=False))
                   for i in range(3)]
    assert len(scenarios(SQUARE, "random", slots=6, seed=2, kinds=["loss"])) == 20
    assert scenarios(SQUARE, "random", slots=6, seed=2, samples=2, kinds=["loss"])[1][1] == \
        _fuzz.random_schedule(SQUARE, 6, ["loss"], _fuzz.sample_rng(2, 1))


def test_scenarios_refuse_bad_input():
    with pytest.raises(SpecError) as e:
        scenarios(SQUARE, "crash-points", slots=5, seed=0, crash_slots=[2, 5])
    assert str(e.value) == "--crash-slots: slot 5 is not inside the run (0..4)"
    with pytest.raises(SpecError) as e:
        scenarios(SQUARE, "crash-points", slots=5, seed=0, crash_slots=[-1])
    assert str(e.value) == "--crash-slots: slot -1 is not inside the run (0..4)"
    with pytest.raises(SpecError) as e:
        scenarios(SQUARE, "nope", slots=5, seed=0)
    assert str(e.value) == ("--faults must be one of single-link, single-node, double-link, crash-points, random "
                            "or a faults file, got 'nope'")


def test_default_crash_slots():
    assert default_crash_slots(100, 20) == [40, 60, 80]
    assert default_crash_slots(10, 0) == [2, 5, 7]
    assert default_crash_slots(3, 1) == [1, 2]  # a set: no slot twice


def test_faults_of_names_the_schedule_not_the_file():
    sched = faults_of([{"kind": "crash", "slot": 2, "node": 1}, {"kind": "detect", "slots": 3}])
    assert sched.to_list() == ["crash@2:1", "detect=3"] and sched.detect == 3
    with pytest.raises(FaultSpecError) as e:
        faults_of([{"kind": "crash", "slot": -1, "node": 0}])
    assert str(e.value) == "schedule entry 0: slot and node must be >= 0"


def test_describe_difference_count():
    try:
        raise ValueError("first line\nsecond")
    except ValueError as exc:
        text = _explore._describe(exc)
    assert text.startswith("ValueError: first line (at test_explore.py:") and text.endswith(")")
    assert _explore._describe(KeyError()) == "KeyError: "
    assert _explore._describe(RuntimeError("x" * 400)) == "RuntimeError: " + "x" * 300
    dif = _explore._difference
    assert dif({"a": 1}, {"a": 1}) is None
    assert dif({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == "a.b.1: 2 vs 3"
    assert dif({"a": 1, "b": 2}, {"b": 2}) == "a only in the first run"
    assert dif({"b": 2}, {"a": 1, "b": 2}) == "a only in the second run"
    assert dif({"m": {"x": 1}}, {"m": {"y": 1}}) == "m.x only in the first run"
    assert dif([1, 2], [1, 2, 3]) == "the result: [1, 2] vs [1, 2, 3]"
    assert dif(1, 2) == "the result: 1 vs 2"
    assert dif({"a": "x" * 100}, {"a": "y"}) == 'a: "' + "x" * 79 + ' vs "y"'
    assert dif({"a": 1, "c": [0, {"d": 1}]}, {"a": 1, "c": [0, {"d": 2}]}) == "c.1.d: 1 vs 2"
    assert dif({"a": "y"}, {"a": "x" * 100}) == 'a: "y" vs "' + "x" * 79
    assert dif({"a": 1}, 5) == 'the result: {"a": 1} vs 5' and dif(5, {"a": 1}) == 'the result: 5 vs {"a": 1}'
    assert dif([1], 2) == "the result: [1] vs 2" and dif(2, [1]) == "the result: 2 vs [1]"
    assert dif({"aX": 1}, {"aX": 2}) == "aX: 1 vs 2"
    assert _explore._count(1, "node") == "1 node" and _explore._count(2, "node") == "2 nodes"
    assert _explore._count(0, "loss", "losses") == "0 losses" and _explore._count(1, "loss", "losses") == "1 loss"
    assert [_explore._scalar(v) for v in (None, True, 1, 1.5, "s", [1], {})] == [True] * 5 + [False] * 2
    assert [_explore._number(v) for v in (1, 1.5, True, math.inf, math.nan, "1", None)] == \
        [True, True, False, False, False, False, False]


class _Progress:
    def __init__(self):
        self.added: list[int] = []
        self.done_n = 0

    def add(self, n):
        self.added.append(n)

    def done(self):
        self.done_n += 1


def _square(r):
    if r["x"] < 0:
        raise ValueError("negative")
    return {"y": r["x"] ** 2}


def test_spread_in_order_with_progress_and_errors():
    p = _Progress()
    reqs = [{"x": i} for i in range(5)]
    assert _explore._spread(_square, reqs, 1, p) == [{"y": i * i} for i in range(5)]
    assert p.added == [5] and p.done_n == 5
    p = _Progress()
    assert _explore._spread(_square, reqs, 2, p) == [{"y": i * i} for i in range(5)]
    assert p.added == [5] and p.done_n == 5
    assert _explore._spread(_square, reqs[:1], 4, None) == [{"y": 0}]
    assert _explore._spread(_square, reqs, 3, None) == [{"y": i * i} for i in range(5)]
    with pytest.raises(ValueError, match="negative"):
        _explore._spread(_square, [{"x": 1}, {"x": -1}], 2, None)


def test_base_request():
    spec = RunSpec("deflection", "hypercube:2", params={}, load={"offered": 0.5}, slots=9, warmup=2, seed=4,
                   max_backlog_per_node=7)
    assert base_request(spec) == {"scheme": "deflection", "topology": "hypercube:2", "params": {},
                                  "load": {"offered": 0.5}, "slots": 9, "warmup": 2, "seed": 4, "rng": "philox",
                                  "max_backlog_per_node": 7}


DEFL = RunSpec("deflection", "hypercube:2", load={"offered": 1.0}, slots=8, seed=1)
BCAST = RunSpec("bcast-simple", "hypercube:2", load={"rho": 0.3}, slots=8, seed=1)


def test_explore_refuses_bad_input_before_any_run():
    def refused(msg, *a, spec=DEFL, **k):
        with pytest.raises(SpecError) as e:
            explore(spec, *a, jobs=1, **k)
        assert str(e.value) == msg

    refused("explore adds its own faults: give the run without faults", "single-link",
            spec=RunSpec("deflection", "hypercube:2", load={"offered": 1.0}, slots=8, faults=["crash@1:0"]))
    for bad in (0, -1, True, 1.5, "3"):
        refused(f"--samples must be an integer >= 1, got {bad!r}", "single-link", samples=bad)
    with pytest.raises(SpecError, match=r"^--jobs must be >= 1, got 0$"):
        explore(DEFL, "single-link", jobs=0)
    refused("give a fault family or a faults file, not both", "single-link", schedule=[])
    refused("--crash-slots goes with --faults crash-points", "single-node", crash_slots=[1])
    refused("--detect 1 contradicts the faults file's {'kind': 'detect', 'slots': 2}",
            schedule=[{"kind": "detect", "slots": 2}], detect=1)
    with pytest.raises(FaultSpecError):
        explore(DEFL, schedule=[{"kind": "crash", "slot": 99, "node": 0}], jobs=1)


def test_explore_one_schedule_with_a_detect_setting():
    rep = explore(DEFL, schedule=[{"kind": "link-down", "slot": 0, "node": 0, "port": 0}], detect="never", jobs=1)
    assert rep["family"] == "schedule" and [r["fault"] for r in rep["scenarios"]] == ["schedule"]
    assert rep["scenarios"][0]["faults"] == [{"kind": "link-down", "slot": 0, "node": 0, "port": 0},
                                             {"kind": "detect", "slots": "never"}]
    assert rep["baseline"]["faults"] == [] and "class" not in rep["scenarios"][0]
    assert set(rep) == {"scheme", "topology", "seed", "slots", "warmup", "params", "load", "family", "baseline",
                        "scenarios", "summary"}
    assert (rep["scheme"], rep["topology"]["spec"], rep["seed"], rep["slots"], rep["warmup"], rep["params"],
            rep["load"]) == ("deflection", "hypercube:2", 1, 8, 0, {}, {"offered": 1.0})
    assert rep["summary"] == {"scenarios": 1, "ok": 1, "failed": 0, "baseline_ok": True, "first_failure": None}
    # the same delay given twice is no contradiction
    rep = explore(DEFL, schedule=[{"kind": "detect", "slots": 2}], detect=2, jobs=1)
    assert rep["scenarios"][0]["faults"] == [{"kind": "detect", "slots": 2}]
    rep = explore(DEFL, "single-node", samples=1, detect=0, jobs=1)
    assert rep["scenarios"][0]["faults"][-1] == {"kind": "detect", "slots": 0}


def test_explore_deltas_and_summary_of_a_broadcast_family():
    rep = explore(BCAST, "crash-points", crash_slots=[2], samples=2, jobs=1)
    base = rep["baseline"]
    assert base["fault"] == "none" and base["ok"] and "missed" in base
    assert rep["family"] == "crash-points" and len(rep["scenarios"]) == 2
    for r in rep["scenarios"]:
        assert r["delta"] == {k: v - base["metrics"][k] for k, v in r["metrics"].items()
                              if _explore._number(v) and _explore._number(base["metrics"].get(k))}
    failed = [r["fault"] for r in rep["scenarios"] if not r["ok"]]
    assert rep["summary"] == {"scenarios": 2, "ok": 2 - len(failed), "failed": len(failed), "baseline_ok": True,
                              "first_failure": failed[0] if failed else None}


def test_a_judged_crash_of_a_broadcast_relay():
    """A crash in slot 2 of node 1 of the square: the ledger's avoidable losses, node 1 excused, node 3 not.
    Seed 7: a run where node 1 holds a copy when it crashes and its neighbours keep sending to it."""
    req = {**base_request(BCAST), "seed": 7, "label": "L", "faults": [{"kind": "crash", "slot": 2, "node": 1}]}
    v = judge(req)
    assert v["fault"] == "L" and v["faults"] == [{"kind": "crash", "slot": 2, "node": 1}] and not v["ok"]
    assert v["lost"] == {"excused": {"node_down": 1}, "avoidable": {"node_down": 3}, "forced": {}, "other": {}}
    assert v["reasons"] == ["3 avoidable losses (first sent in slot 4, 3->1)",
                            "1 broadcast missed 1 reachable node (first: 0,1 at 3)"]
    assert v["missed"] == {"broadcasts": 1, "nodes": 1, "excused_receptions": 4,
                           "first": {"origin": 0, "seq": 1, "born": v["missed"]["first"]["born"], "missing_nodes": [3]}}
    assert v["invariants_ok"] is True and v["slots_run"] == 8
    assert all(_explore._scalar(x) for x in v["metrics"].values()) and "mean_broadcast_delay" in v["metrics"]
    assert set(v) == {"fault", "faults", "ok", "reasons", "metrics", "lost", "invariants_ok", "slots_run", "missed",
                      "accounted"}
    # checked as a random sample: the replay command, the fingerprint, the class
    c = judge({**req, "checks": True, "repeat": True})
    assert c["command"] == ("slotnet run bcast-simple -t hypercube:2 --rho 0.3 --slots 8 --warmup 0 --seed 7 "
                            "--rng philox --fault crash@2:1 --json")
    assert c["classes"] == ["verdict"] and c["class"] == "verdict" and c["ok"] is False and c["repeated"] is True
    assert c["reasons"] == v["reasons"] and c["lost"] == v["lost"] and c["missed"] == v["missed"]
    assert len(c["sha256"]) == 16
    assert "repeated" not in judge({**req, "checks": True})


def test_a_checked_sample_that_is_ok_and_one_that_is_refused():
    req = {**base_request(DEFL), "label": "#3", "checks": True,
           "faults": [{"kind": "link-down", "slot": 0, "node": 0, "port": 0}, {"kind": "loss", "rate": 0.5}]}
    c = judge(req)
    assert c["command"].endswith("--seed 1 --rng philox --fault link-down@0:0:0 --fault loss=0.5 --json")
    assert (c["ok"], c["class"], c["classes"], c["reasons"]) == (True, "ok", [], [])
    assert c["lost"]["avoidable"] == {} and c["lost"]["excused"]["loss"] > 0 and "missed" not in c
    late = judge({**req, "faults": [{"kind": "crash", "slot": 99, "node": 0}]})  # parsed, refused by the run
    assert late["command"].endswith("--fault crash@99:0 --json") and late["class"] == "refused"
    assert late["reasons"][0].startswith("FaultSpecError: fault crash@99:0: slot 99 is past the run's 8 slots (at ")
    bad = judge({**req, "faults": [{"kind": "crash", "slot": -1, "node": 0}]})  # not even parsed
    assert bad == {"fault": "#3", "faults": [{"kind": "crash", "slot": -1, "node": 0}], "command": None, "ok": False,
                   "class": "refused", "classes": ["refused"], "reasons": [bad["reasons"][0]], "metrics": {},
                   "lost": {"excused": {}, "avoidable": {}, "other": {}}, "invariants_ok": False, "slots_run": 0}
    assert bad["reasons"][0].startswith("FaultSpecError: schedule entry 0: slot and node must be >= 0 (at _explore.py:")
    unknown = judge({**req, "scheme": "no-such-scheme", "faults": []})
    assert unknown["class"] == "refused" and unknown["reasons"][0].startswith("SpecError: unknown scheme")


class _Result:
    def __init__(self, data, fault_impact=None):
        self.data = data
        self.fault_impact = fault_impact

    def to_dict(self):
        return dict(self.data)


def _fake_judged(monkeypatch, verdicts, results):
    """``_judged`` returning the verdicts and results given, in turn."""
    calls = []

    def judged(fields, label, objects):
        calls.append((fields, label, list(objects)))
        v = verdicts.pop(0)
        if isinstance(v, BaseException):
            raise v
        return dict(v), results.pop(0)

    monkeypatch.setattr(_explore, "_judged", judged)
    return calls


_OK = {"fault": "x", "faults": [], "ok": True, "reasons": [], "metrics": {}, "slots_run": 4,
       "lost": {"excused": {}, "avoidable": {}, "forced": {}, "other": {}}, "invariants_ok": True}
_REQ = {"scheme": "deflection", "topology": "hypercube:2", "slots": 4, "seed": 0, "label": "#0",
        "faults": [{"kind": "loss", "rate": 0.5}], "checks": True}


def test_checked_classes_in_order(monkeypatch):
    books = {"u": {"packets": 2, "delivered": 1, "lost_to_faults": 0, "in_progress": 0}}
    bad = {**_OK, "ok": False, "invariants_ok": False, "reasons": ["invariant x failed", "1 avoidable loss"],
           "lost": {**_OK["lost"], "avoidable": {"link_down": 1}}}
    calls = _fake_judged(monkeypatch, [bad, _OK], [_Result({"a": 1, "timing": 1}, {"packets": books}),
                                                    _Result({"a": 2, "timing": 2})])
    out = judge({**_REQ, "repeat": True})
    assert calls[0] == ({"scheme": "deflection", "topology": "hypercube:2", "slots": 4, "seed": 0}, "#0",
                        [{"kind": "loss", "rate": 0.5}])
    assert len(calls) == 2
    assert out["classes"] == ["nondeterministic", "unaccounted", "books", "verdict"]
    assert out["class"] == "nondeterministic" and out["ok"] is False and out["repeated"] is True
    assert out["reasons"] == ["a second run differs: a: 1 vs 2", *_fuzz.book_failures(books),
                              "invariant x failed", "1 avoidable loss"]
    assert out["sha256"] == _fuzz.fingerprint({"a": 1})
    assert out["command"] == ("slotnet run deflection -t hypercube:2 --slots 4 --warmup 0 --seed 0 --rng philox "
                              "--fault loss=0.5 --json")
    # the same twice: no class; a missed broadcast alone is a verdict
    _fake_judged(monkeypatch, [_OK, _OK], [_Result({"a": 1}), _Result({"a": 1, "timing": 5})])
    out = judge({**_REQ, "repeat": True})
    assert (out["classes"], out["class"], out["ok"], out["reasons"]) == ([], "ok", True, [])
    _fake_judged(monkeypatch, [{**_OK, "missed": {"broadcasts": 1}}], [_Result({})])
    out = judge(_REQ)
    assert out["classes"] == ["verdict"] and "repeated" not in out
    _fake_judged(monkeypatch, [{**_OK, "missed": {"broadcasts": 0}}], [_Result({}, {"packets": None})])
    assert judge(_REQ)["classes"] == []
    # a second run that raises is a nondeterministic sample, not a crash
    _fake_judged(monkeypatch, [_OK, RuntimeError("again")], [_Result({"a": 1})])
    out = judge({**_REQ, "repeat": True})
    assert out["classes"] == ["nondeterministic"]
    assert out["reasons"][0].startswith("a second run differs: the second run raised RuntimeError: again (at ")


def test_checked_crash_and_refusal(monkeypatch):
    _fake_judged(monkeypatch, [RuntimeError("boom")], [])
    out = judge(_REQ)
    assert out["class"] == "crash" and out["classes"] == ["crash"]
    assert out["reasons"][0].startswith("RuntimeError: boom (at ")
    assert out["command"] is not None and out["metrics"] == {} and out["slots_run"] == 0
    _fake_judged(monkeypatch, [SpecError("bad")], [])
    assert judge(_REQ)["class"] == "refused"
    _fake_judged(monkeypatch, [ValueError("plain")], [])
    assert judge(_REQ)["class"] == "crash"  # only slotnet's own refusals are refusals
    from slotnet.errors import SlotnetError
    _fake_judged(monkeypatch, [SlotnetError("not a value error")], [])
    assert judge(_REQ)["class"] == "crash"


def test_explore_random_summary_and_repeats(monkeypatch):
    seen = []

    def fake(request):
        seen.append(request)
        label = request["label"]
        cls = {"#1": "refused", "#2": "books", "#3": "verdict"}.get(label, "ok")
        classes = {"#2": ["books", "verdict"]}.get(label, [] if cls == "ok" else [cls])
        return {"fault": label, "faults": request["faults"], "ok": cls == "ok", "class": cls, "classes": classes,
                "reasons": [] if cls == "ok" else [f"{cls} reason"], "metrics": {"m": 1.0 if label == "none" else 3.5,
                                                                                   "s": "x", "b": True},
                "lost": {"excused": {}, "avoidable": {}, "other": {}}, "command": f"cmd {label}"}

    monkeypatch.setattr(_explore, "judge", fake)
    rep = explore(DEFL, "random", samples=22, jobs=1)
    assert [r["label"] for r in seen] == ["none", *(f"#{i}" for i in range(22))]
    assert seen[0]["checks"] is True and "repeat" not in seen[0] and seen[0]["faults"] == []
    assert [r["repeat"] for r in seen[1:]] == [i % 20 == 0 for i in range(22)]
    assert all(r["checks"] is True for r in seen)
    assert seen[1]["faults"] == _fuzz.random_schedule(SQUARE, 8, _fuzz.drawable_kinds(
        __import__("slotnet.schemes", fromlist=["SCHEMES"]).SCHEMES["deflection"].refuses_fault), _fuzz.sample_rng(1, 0))
    assert rep["summary"] == {"scenarios": 22, "ok": 19, "failed": 2, "baseline_ok": True, "first_failure": "#2",
                              "refused": 1, "classes": {"crash": 0, "refused": 1, "nondeterministic": 0,
                                                        "unaccounted": 0, "incomplete": 0, "books": 1, "verdict": 2}}
    assert rep["scenarios"][0]["delta"] == {"m": 2.5}
    text = format_explore(rep)
    lines = text.splitlines()
    assert lines[0] == "explore deflection on hypercube:2, seed 1, 8 slots: 22 scenarios (random), 19 ok, 2 failed, 1 refused"
    assert "checks: crash 0, refused 1, nondeterministic 0, unaccounted 0, incomplete 0, books 1, verdict 2" in lines
    i = lines.index("checks: crash 0, refused 1, nondeterministic 0, unaccounted 0, incomplete 0, books 1, verdict 2")
    assert lines[i + 1:] == ["#1 refused: refused reason", "  replay: cmd #1", "#2 books: books reason",
                             "  replay: cmd #2", "#3 verdict: verdict reason", "  replay: cmd #3"]
    assert any(line.startswith("#2 ") and "BOOKS" in line for line in lines)
    assert any(line.startswith("#3 ") and "FAIL" in line for line in lines)
    assert any(line.startswith("#1 ") and "REFUSED" in line for line in lines)


def _report(n_bad, classes=True, refused=0):
    rows = [{"fault": f"#{i}", "ok": False, "class": "verdict", "reasons": [] if i == 1 else [f"why {i}", "more"],
             "command": None if i == 2 else f"slotnet run {i}", "faults": [{"kind": "loss", "rate": i}],
             "metrics": {"mean_delay": 2.0 + i}, "delta": {"mean_delay": float(i)},
             "lost": {"excused": {"a": 1, "b": i}, "avoidable": {"c": i}}} for i in range(n_bad)]
    rows.append({"fault": "fine", "ok": True, "class": "ok", "reasons": [], "command": "c",
                 "faults": [], "metrics": {"mean_delay": 2.0}, "delta": {"mean_delay": 0.0},
                 "lost": {"excused": {}, "avoidable": {}}})
    summary = {"scenarios": n_bad + 1, "ok": 1, "failed": n_bad, "refused": refused}
    if classes:
        summary["classes"] = {"crash": 0, "verdict": n_bad}
    return {"scheme": "s", "topology": {"spec": "mesh:2"}, "seed": 3, "slots": 9, "family": "random",
            "baseline": {"ok": True, "reasons": [], "metrics": {"mean_delay": 2.0, "throughput_per_node": 0.5,
                                                                "link_utilization": 0.25}},
            "scenarios": rows, "summary": summary}


def test_format_explore_table_and_replays():
    lines = format_explore(_report(3)).splitlines()
    assert lines[:4] == [
        "explore s on mesh:2, seed 3, 9 slots: 4 scenarios (random), 1 ok, 3 failed",
        "fault-free run: ok, mean_delay 2.0000, throughput_per_node 0.5000",
        "(metrics: value and change from the fault-free run; lost: messages destroyed by the fault itself, and "
        "avoidable ones sent on ports already seen dead)", ""]
    assert lines[4].split() == ["fault", "verdict", "lost", "avoidable", "mean_delay", "throughput_per_node", "why"]
    assert lines[6].split() == ["#0", "FAIL", "1", "0", "2.0000", "-", "why", "0;", "more"]
    assert lines[7].split() == ["#1", "FAIL", "2", "1", "3.0000", "(+1)", "-"]
    assert lines[9].split() == ["fine", "ok", "0", "0", "2.0000", "-"]
    assert lines[10:] == ["", "checks: crash 0, verdict 3", "#0 verdict: why 0", "  replay: slotnet run 0",
                          "#1 verdict: ", "  replay: slotnet run 1", "#2 verdict: why 2",
                          '  replay: [{"kind": "loss", "rate": 2}]']
    lines = format_explore(_report(12)).splitlines()
    assert lines[-1] == "... and 2 more (--json lists every sample's command)"
    assert lines[-2] == "  replay: slotnet run 9"
    assert format_explore(_report(11)).splitlines()[-1] == "... and 1 more (--json lists every sample's command)"
    assert format_explore(_report(10)).splitlines()[-1] == "  replay: slotnet run 9"
    plain = format_explore(_report(1, classes=False)).splitlines()
    assert plain[-1].split()[:2] == ["fine", "ok"] and "checks" not in "\n".join(plain)
    assert format_explore(_report(1, refused=2)).splitlines()[0].endswith("1 failed, 2 refused")


def test_format_explore_of_a_broadcast_family():
    rep = _report(1, classes=False)
    rep["family"] = "single-link"
    rep["scenarios"][0].pop("class")
    rep["scenarios"][0]["missed"] = {"broadcasts": 4}
    rep["baseline"] = {"ok": False, "reasons": ["r1", "r2"], "metrics": {"mean_broadcast_delay": 3.0}}
    rep["summary"] = {"scenarios": 1, "ok": 0, "failed": 1}
    lines = format_explore(rep).splitlines()
    assert lines[0] == "explore s on mesh:2, seed 3, 9 slots: 1 scenario (single-link), 0 ok, 1 failed"
    assert lines[1] == "fault-free run: NOT ok: r1; r2, mean_broadcast_delay 3.0000"
    assert lines[4].split() == ["fault", "verdict", "lost", "avoidable", "bcasts", "missed", "mean_broadcast_delay", "why"]
    assert lines[6].split() == ["#0", "FAIL", "1", "0", "4", "-", "why", "0;", "more"]
    assert lines[7].split() == ["fine", "ok", "0", "0", "0", "-"]


def test_shrink_failure_keeps_the_run_failing():
    failing = [{"kind": "crash", "slot": 2, "node": 1}, {"kind": "detect", "slots": 1}]
    out = shrink_failure(BCAST, failing)
    assert out["faults"][0] == {"kind": "crash", "slot": out["faults"][0]["slot"], "node": 1}
    assert {o["kind"] for o in out["faults"]} <= {"crash", "recover", "detect"}
    assert out["faults"][-1] == {"kind": "detect", "slots": 1}
    assert out["verdict"]["fault"] == "shrunk" and not out["verdict"]["ok"] and "class" not in out["verdict"]
    assert out["runs"] > 2
    checked = shrink_failure(BCAST, failing, "verdict")
    assert checked["faults"] == out["faults"] and checked["verdict"]["class"] == "verdict"
    assert checked["runs"] == out["runs"]
    assert checked["verdict"]["command"] is not None and "repeated" not in checked["verdict"]
