"""FaultSchedule unit by unit: parsing (every refusal word for word), the fields a spec
gives, the canonical text form, validation, the order of a slot's events, the message
pipeline's order and salts, and the dead-port timeline against a plain model."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.errors import FaultSpecError
from slotnet.fabric import parse_topology
from slotnet.fabric._fault_entries import (
    FaultEvent,
    LossStage,
    LossWindow,
    MessageWindow,
    SpanEdge,
    SpanFault,
    WindowStage,
)
from slotnet.fabric._faults import DEFAULT_DETECT, NOTE_CAUSES, FaultSchedule, PortTimeline

P = FaultSchedule.parse
KNOWN = ("link-down@SLOT:NODE:PORT, link-up@SLOT:NODE:PORT, crash@SLOT:NODE, recover@SLOT:NODE, "
         "loss=RATE[@FROM[-UNTIL]], dup=RATE[@FROM[-UNTIL]], delay=RATE:SLOTS[@FROM[-UNTIL]], "
         "corrupt=RATE[:undetected][@FROM[-UNTIL]], partition@FROM:TO:NODES, stall@FROM:TO:NODE, detect=SLOTS|never")
H3 = parse_topology("hypercube:3")


def refusal(fn, *args, **kw) -> str:
    with pytest.raises(FaultSpecError) as info:
        fn(*args, **kw)
    assert type(info.value) is FaultSpecError
    return str(info.value)


# -- parsing: what each text gives, field by field ------------------------------------------
def test_control_texts_give_their_events():
    s = P(["crash@8:2", "link-down@5:1:0", "recover@12:2", "link-up@9:0:1"])
    assert s.events == (FaultEvent("crash", 8, 2, None), FaultEvent("link-down", 5, 1, 0),
                        FaultEvent("recover", 12, 2, None), FaultEvent("link-up", 9, 0, 1))
    assert s.loss == () and s.windows == () and s.spans == () and s.detect == DEFAULT_DETECT == 1


def test_span_texts_give_their_spans():
    s = P(["partition@7:12:0-3", "stall@30:33:3", "partition@1:1:8,0-2,2"])
    assert s.spans == (SpanFault("partition", 7, 12, (0, 1, 2, 3)), SpanFault("stall", 30, 33, (3,)),
                       SpanFault("partition", 1, 1, (0, 1, 2, 8)))
    assert s.events == ()


def test_message_texts_give_their_windows():
    s = P(["loss=0.02@10-90", "loss=0.5", "loss=1@3", "dup=0.25@4-5", "delay=0.1:3", "delay=0:7@2-9",
           "corrupt=0.3", "corrupt=0.3:undetected@6"])
    assert s.loss == (LossWindow(0.02, 10, 90), LossWindow(0.5, 0, None), LossWindow(1.0, 3, None))
    assert s.windows == (MessageWindow("dup", 0.25, 4, 5), MessageWindow("delay", 0.1, 0, None, slots=3),
                         MessageWindow("delay", 0.0, 2, 9, slots=7), MessageWindow("corrupt", 0.3),
                         MessageWindow("corrupt", 0.3, 6, None, undetected=True))
    assert s.windows[3].undetected is False and s.windows[0].slots == 0


def test_entries_are_stripped_and_one_string_is_one_entry():
    assert P("  crash@1:2 ").events == (FaultEvent("crash", 1, 2),)
    assert P(["detect= 3"]).detect == 3


@pytest.mark.parametrize("texts, detect, want", [
    ([], "default", 1), (["detect=0"], "default", 0), (["detect=3"], "default", 3), (["detect=never"], "default", None),
    ([], 0, 0), ([], "2", 2), ([], None, None), ([], "never", None), (["detect=2", "detect=2"], 2, 2),
])
def test_detection_delay(texts, detect, want):
    assert P(texts, detect=detect).detect == want


def test_message_windows_cover_from_up_to_but_not_until():
    w = P(["loss=0.1@10-90"]).loss[0]
    assert [w.active(s) for s in (9, 10, 89, 90)] == [False, True, True, False]
    w2 = P(["dup=0.1@10"]).windows[0]
    assert [w2.active(s) for s in (9, 10, 10**9)] == [False, True, True]


@pytest.mark.parametrize("text, message", [
    ("crash@8", f"fault 'crash@8' not understood (expected one of: {KNOWN})"),
    ("boom@8:2", f"fault 'boom@8:2' not understood (expected one of: {KNOWN})"),
    ("crash@-1:2", f"fault 'crash@-1:2' not understood (expected one of: {KNOWN})"),
    ("crash@8:2:1", "fault 'crash@8:2:1': crash takes SLOT:NODE, not a port"),
    ("recover@8:2:1", "fault 'recover@8:2:1': recover takes SLOT:NODE, not a port"),
    ("link-down@5:1", "fault 'link-down@5:1': link-down needs SLOT:NODE:PORT"),
    ("link-up@5:1", "fault 'link-up@5:1': link-up needs SLOT:NODE:PORT"),
    ("loss=abc", "fault 'loss=abc': loss rate 'abc' is not a number"),
    ("loss=", "fault 'loss=': loss rate '' is not a number"),
    ("loss=1.5", "fault 'loss=1.5': loss rate must be in [0, 1], got 1.5"),
    ("dup=-0.1", "fault 'dup=-0.1': dup rate must be in [0, 1], got -0.1"),
    ("loss=nan", "fault 'loss=nan': loss rate must be in [0, 1], got nan"),
    ("loss=0.1@x", "fault 'loss=0.1@x': loss window 'x' must be FROM or FROM-UNTIL (integer slots >= 0)"),
    ("loss=0.1@5-", "fault 'loss=0.1@5-': loss window '5-' must be FROM or FROM-UNTIL (integer slots >= 0)"),
    ("loss=0.1@-5", "fault 'loss=0.1@-5': loss window '-5' must be FROM or FROM-UNTIL (integer slots >= 0)"),
    ("loss=0.1@5-5", "fault 'loss=0.1@5-5': loss window end 5 must be after its start 5"),
    ("dup=0.1@6-5", "fault 'dup=0.1@6-5': dup window end 5 must be after its start 6"),
    ("loss=0.1:3", "fault 'loss=0.1:3': loss takes loss=RATE[@FROM[-UNTIL]], not '3' after the rate"),
    ("dup=0.1:a:b", "fault 'dup=0.1:a:b': dup takes dup=RATE[@FROM[-UNTIL]], not 'a:b' after the rate"),
    ("delay=0.1", "fault 'delay=0.1': delay takes delay=RATE:SLOTS[@FROM[-UNTIL]] (the extra slots after the rate)"),
    ("delay=0.1:1:2", "fault 'delay=0.1:1:2': delay takes delay=RATE:SLOTS[@FROM[-UNTIL]] (the extra slots after "
                      "the rate)"),
    ("delay=0.1:0", "fault 'delay=0.1:0': delay must be a whole number of slots >= 1, got 0 (no delay)"),
    ("delay=0.1:-2", "fault 'delay=0.1:-2': delay must be a whole number of slots >= 1, got a negative delay -2"),
    ("delay=0.1:x", "fault 'delay=0.1:x': delay must be a whole number of slots >= 1, got 'x'"),
    ("delay=2:3", "fault 'delay=2:3': delay rate must be in [0, 1], got 2"),
    ("corrupt=0.1:foo", "fault 'corrupt=0.1:foo': corrupt takes corrupt=RATE[:undetected][@FROM[-UNTIL]], "
                        "not 'foo' after the rate"),
    ("corrupt=0.1:undetected:x", "fault 'corrupt=0.1:undetected:x': corrupt takes "
                                 "corrupt=RATE[:undetected][@FROM[-UNTIL]], not 'undetected:x' after the rate"),
    ("partition@7:12", "fault 'partition@7:12': partition needs FROM:TO:NODES"),
    ("partition@7:12:0:1", "fault 'partition@7:12:0:1': partition needs FROM:TO:NODES"),
    ("partition@a:12:0", "fault 'partition@a:12:0': partition FROM must be an integer slot >= 0, got 'a'"),
    ("partition@7:-1:0", "fault 'partition@7:-1:0': partition TO must be an integer slot >= 0, got '-1'"),
    ("partition@12:7:0", "fault 'partition@12:7:0': partition range 12..7 is reversed (it ends at slot 7, before "
                         "it begins at 12)"),
    ("partition@7:12:3-1", "fault 'partition@7:12:3-1': node range 3-1 is reversed"),
    ("partition@7:12:", "fault 'partition@7:12:': the node set is empty"),
    ("partition@7:12:0,,1", "fault 'partition@7:12:0,,1': node set '0,,1' has an empty item; write node ids and "
                            "ranges such as 0-31 or 0,5,9"),
    ("partition@7:12:0,x", "fault 'partition@7:12:0,x': node set '0,x' has 'x'; write node ids and ranges such as "
                           "0-31 or 0,5,9"),
    ("stall@30:33", "fault 'stall@30:33': stall needs FROM:TO:NODE"),
    ("stall@30:33:0-3", "fault 'stall@30:33:0-3': stall NODE must be one node id >= 0, got '0-3'"),
    ("stall@33:30:3", "fault 'stall@33:30:3': stall range 33..30 is reversed (it ends at slot 30, before it begins "
                      "at 33)"),
    ("detect=-1", "fault 'detect=-1': detection delay must be a whole number of slots >= 0 or 'never', got '-1'"),
    ("detect=soon", "fault 'detect=soon': detection delay must be a whole number of slots >= 0 or 'never', "
                    "got 'soon'"),
])
def test_every_malformed_text_is_refused_word_for_word(text, message):
    assert refusal(P, [text]) == message


def test_a_single_slot_span_and_a_one_slot_window_are_accepted():
    assert P(["partition@7:7:0"]).spans[0] == SpanFault("partition", 7, 7, (0,))
    assert P(["loss=0.1@5-6"]).loss[0] == LossWindow(0.1, 5, 6)


def test_other_refusals_of_parse():
    assert refusal(P, [5]) == "fault 5 must be a string such as 'crash@10:3'"
    assert refusal(P, ["detect=2"], detect=3) == "detection delay given twice, differently: detect=2 and --detect 3"
    assert refusal(P, ["detect=2", "detect=never"]) == ("detection delay given twice, differently: detect=2 and "
                                                         "detect=never")
    assert refusal(P, [], detect=-1) == ("--detect: detection delay must be a whole number of slots >= 0 or 'never', "
                                         "got -1")
    assert refusal(P, [], detect=True) == ("--detect: detection delay must be a whole number of slots >= 0 or "
                                           "'never', got True")


# -- the JSON file form ------------------------------------------------------------------------
def _file(tmp_path, data) -> str:
    path = tmp_path / "f.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_the_file_form_gives_what_the_texts_give(tmp_path):
    items = [{"kind": "link-down", "slot": 5, "node": 1, "port": 0}, {"kind": "crash", "slot": 8, "node": 2},
             {"kind": "loss", "rate": 0.02, "from": 10, "until": 90}, {"kind": "delay", "rate": 0.1, "slots": 3},
             {"kind": "corrupt", "rate": 0.1, "undetected": True}, {"kind": "dup", "rate": 1},
             {"kind": "partition", "from": 7, "to": 12, "nodes": "0-3"},
             {"kind": "partition", "from": 1, "to": 2, "nodes": [3, 1, 1]},
             {"kind": "stall", "from": 30, "to": 33, "node": 3}, {"kind": "detect", "slots": "never"}]
    got = P(file=_file(tmp_path, items))
    want = P(["link-down@5:1:0", "crash@8:2", "loss=0.02@10-90", "delay=0.1:3", "corrupt=0.1:undetected", "dup=1",
              "partition@7:12:0-3", "partition@1:2:1,3", "stall@30:33:3", "detect=never"])
    assert got == want and got.detect is None
    assert P(["crash@1:1"], file=_file(tmp_path, [{"kind": "crash", "slot": 2, "node": 1}])).events == (
        FaultEvent("crash", 1, 1), FaultEvent("crash", 2, 1))


def test_the_file_form_refusals_word_for_word(tmp_path):
    path = _file(tmp_path, "[")
    w = f"fault file {path!r}"
    assert refusal(P, file=path).startswith(f"{w}: not a JSON text (Expecting value")
    missing = str(tmp_path / "none.json")
    assert refusal(P, file=missing) == f"fault file {missing!r}: No such file or directory"
    cases = [
        ({"kind": "crash"}, f"{w}: expected a JSON list of fault objects"),
        ([5], f"{w} entry 0: expected an object with a 'kind'"),
        ([{"slot": 1}], f"{w} entry 0: expected an object with a 'kind'"),
        ([{"kind": "crash", "slot": 1, "node": 1}, {"kind": "boom"}],
         f"{w} entry 1: unknown kind 'boom' (known: link-down, link-up, crash, recover, loss, dup, delay, corrupt, "
         "partition, stall, detect)"),
        ([{"kind": 5}], f"{w} entry 0: unknown kind 5 (known: link-down, link-up, crash, recover, loss, dup, delay, "
                        "corrupt, partition, stall, detect)"),
        ([{"kind": "detect"}], f"{w} entry 0: detect needs 'slots' (a whole number of slots >= 0, or \"never\")"),
        ([{"kind": "detect", "slots": 1, "x": 2}], f"{w} entry 0: unknown field 'x' (a detect fault takes slots)"),
        ([{"kind": "detect", "slots": -1}],
         f"{w} entry 0: detection delay must be a whole number of slots >= 0 or 'never', got -1"),
        ([{"kind": "crash", "slot": 1, "node": 2, "port": 0}],
         f"{w} entry 0: unknown field 'port' (a crash fault takes slot, node)"),
        ([{"kind": "crash", "slot": 1, "node": 2, "z": 0, "a": 1}],
         f"{w} entry 0: unknown field 'a', 'z' (a crash fault takes slot, node)"),
        ([{"kind": "crash", "slot": 1}], f"{w} entry 0: needs integer 'slot' and 'node'"),
        ([{"kind": "crash", "slot": True, "node": 1}], f"{w} entry 0: needs integer 'slot' and 'node'"),
        ([{"kind": "crash", "slot": 1.0, "node": 1}], f"{w} entry 0: needs integer 'slot' and 'node'"),
        ([{"kind": "link-down", "slot": 1, "node": 2, "port": "1"}],
         f"{w} entry 0: needs integer 'slot' and 'node' and 'port'"),
        ([{"kind": "link-down", "slot": 1, "node": 2}], f"{w} entry 0: link-down needs a 'port'"),
        ([{"kind": "link-up", "slot": 1, "node": 2, "port": -1}], f"{w} entry 0: port must be >= 0"),
        ([{"kind": "recover", "slot": -1, "node": 2}], f"{w} entry 0: slot and node must be >= 0"),
        ([{"kind": "recover", "slot": 1, "node": -2}], f"{w} entry 0: slot and node must be >= 0"),
        ([{"kind": "loss", "rate": "0.1"}], f"{w} entry 0: loss 'rate' must be a JSON number in [0, 1], got '0.1'"),
        ([{"kind": "dup", "rate": True}], f"{w} entry 0: dup 'rate' must be a JSON number in [0, 1], got True"),
        ([{"kind": "dup"}], f"{w} entry 0: dup 'rate' must be a JSON number in [0, 1], got None"),
        ([{"kind": "loss", "rate": 2}], f"fault {w + ' entry 0'!r}: loss rate must be in [0, 1], got 2"),
        ([{"kind": "loss", "rate": 0.1, "from": 1.5}], f"{w} entry 0: loss 'from' must be an integer slot >= 0, got 1.5"),
        ([{"kind": "loss", "rate": 0.1, "until": False}],
         f"{w} entry 0: loss 'until' must be an integer slot >= 0, got False"),
        ([{"kind": "loss", "rate": 0.1, "from": -1}],
         f"fault {w + ' entry 0'!r}: loss window bounds must be integer slots >= 0, got -1"),
        ([{"kind": "loss", "rate": 0.1, "from": 4, "until": 4}],
         f"fault {w + ' entry 0'!r}: loss window end 4 must be after its start 4"),
        ([{"kind": "loss", "rate": 0.1, "slots": 4}],
         f"{w} entry 0: unknown field 'slots' (a loss fault takes rate, from, until)"),
        ([{"kind": "delay", "rate": 0.1}],
         f"fault {w + ' entry 0'!r}: delay must be a whole number of slots >= 1, got None"),
        ([{"kind": "delay", "rate": 0.1, "slots": 0}],
         f"fault {w + ' entry 0'!r}: delay must be a whole number of slots >= 1, got 0 (no delay)"),
        ([{"kind": "corrupt", "rate": 0.1, "undetected": "yes"}],
         f"{w} entry 0: corrupt 'undetected' must be true or false, got 'yes'"),
        ([{"kind": "partition", "to": 3, "nodes": [1]}], f"{w} entry 0: partition needs integer 'from' and 'to' slots"),
        ([{"kind": "partition", "from": 1, "to": "3", "nodes": [1]}],
         f"{w} entry 0: partition needs integer 'from' and 'to' slots"),
        ([{"kind": "partition", "from": -1, "to": 3, "nodes": [1]}],
         f"{w} entry 0: partition 'from' and 'to' must be slots >= 0"),
        ([{"kind": "partition", "from": 3, "to": 1, "nodes": [1]}],
         f"fault {w + ' entry 0'!r}: partition range 3..1 is reversed (it ends at slot 1, before it begins at 3)"),
        *[([{"kind": "partition", "from": 1, "to": 3, "nodes": bad}],
           f"{w} entry 0: partition 'nodes' must be a non-empty list of node ids >= 0 or a text such as '0-31' or "
           f"'0,5,9', got {bad!r}") for bad in ([], [1, -1], [1, True], 5, None, [1.0])],
        ([{"kind": "partition", "from": 1, "to": 3, "nodes": "3-1"}], f"{w} entry 0: node range 3-1 is reversed"),
        ([{"kind": "stall", "from": 1, "to": 3, "node": True}], f"{w} entry 0: stall 'node' must be a node id >= 0, "
                                                                 "got True"),
        ([{"kind": "stall", "from": 1, "to": 3, "node": -1}], f"{w} entry 0: stall 'node' must be a node id >= 0, "
                                                               "got -1"),
        ([{"kind": "stall", "from": 1, "to": 3, "nodes": [1]}],
         f"{w} entry 0: unknown field 'nodes' (a stall fault takes from, to, node)"),
    ]
    for data, message in cases:
        assert refusal(P, file=_file(tmp_path, data)) == message, data


# -- the canonical text form -------------------------------------------------------------------
def test_to_list_entries_and_impacts_in_their_order():
    s = P(["loss=0.02@10-90", "corrupt=0.5:undetected", "delay=0.25:3@4", "crash@8:2", "link-down@5:1:0",
           "stall@30:33:3", "partition@7:12:0-3", "detect=3"])
    texts = ["link-down@5:1:0", "crash@8:2", "partition@7:12:0-3", "stall@30:33:3", "loss=0.02@10-90",
             "corrupt=0.5:undetected", "delay=0.25:3@4"]
    assert s.to_list() == [*texts, "detect=3"]
    assert s.entries() == [(t.split("@")[0].split("=")[0], t) for t in texts]
    assert [i[:2] for i in s.impacts()] == s.entries()
    assert [i[2] for i in s.impacts()] == [
        (("lost", "link_down"),), (("lost", "node_down"), ("lost", "crash")), (("lost", "partition"),),
        (("lost", "stalled"),), (("lost", "loss"),), (("corrupted", "undetected"), ("lost", "undecodable")),
        (("delayed", "delay"),)]
    assert P(["detect=never"]).to_list() == ["detect=never"] and P(["detect=1"]).to_list() == []
    assert P(["detect=0"]).to_list() == ["detect=0"]
    assert P(["loss=0.1@0"]).to_list() == ["loss=0.1"] and P(["loss=0.1@0-5"]).to_list() == ["loss=0.1@0-5"]


rates = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.01, 0.1 + 0.2]), st.floats(0.0, 1.0))
window = st.tuples(st.integers(0, 50), st.one_of(st.none(), st.integers(1, 20)))


def _win(w: tuple[int, int | None]) -> str:
    start, length = w
    return f"@{start}" + ("" if length is None else f"-{start + length}")


@st.composite
def specs(draw) -> list[str]:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["link-down", "link-up", "crash", "recover", "loss", "dup", "delay", "corrupt",
                                     "partition", "stall"]))
        slot, node = draw(st.integers(0, 99)), draw(st.integers(0, 40))
        if kind in ("link-down", "link-up"):
            out.append(f"{kind}@{slot}:{node}:{draw(st.integers(0, 5))}")
        elif kind in ("crash", "recover"):
            out.append(f"{kind}@{slot}:{node}")
        elif kind in ("partition", "stall"):
            nodes = str(node) if kind == "stall" else ",".join(
                map(str, draw(st.lists(st.integers(0, 40), min_size=1, max_size=6))))
            out.append(f"{kind}@{slot}:{slot + draw(st.integers(0, 9))}:{nodes}")
        else:
            arg = {"delay": f":{draw(st.integers(1, 9))}",
                   "corrupt": draw(st.sampled_from(["", ":undetected"]))}.get(kind, "")
            out.append(f"{kind}={draw(rates)!r}{arg}{_win(draw(window))}")
    if draw(st.booleans()):
        out.append(f"detect={draw(st.sampled_from(['never', '0', '2', '5']))}")
    return out


@settings(max_examples=150, deadline=None)
@given(specs())
def test_the_text_form_parses_back_to_the_same_schedule(texts):
    s = P(texts)
    again = P(s.to_list())
    assert again.to_list() == s.to_list()
    assert sorted(map(repr, again.events)) == sorted(map(repr, s.events))
    assert sorted(map(repr, again.spans)) == sorted(map(repr, s.spans))
    assert again.loss == s.loss and again.windows == s.windows and again.detect == s.detect


@settings(max_examples=100, deadline=None)
@given(rates, window, st.sampled_from(["loss", "dup", "corrupt"]))
def test_a_window_keeps_its_exact_rate_and_bounds(rate, w, kind):
    s = P([f"{kind}={rate!r}{_win(w)}"])
    got = (s.loss or s.windows)[0]
    assert got.rate == rate and got.start == w[0]
    assert got.until == (None if w[1] is None else w[0] + w[1])


# -- validation against a run --------------------------------------------------------------------
@pytest.mark.parametrize("texts, message", [
    (["crash@3:8"], "fault crash@3:8: node 8 not in 0..7"),
    (["link-down@3:1:3"], "fault link-down@3:1:3: node 1 has no port 3"),
    (["link-down@3:8:0"], "fault link-down@3:8:0: node 8 not in 0..7"),
    (["crash@20:1"], "fault crash@20:1: slot 20 is past the run's 20 slots"),
    (["crash@19:1"], None),
    (["loss=0.1@20"], "fault loss=0.1@20: the window starts at slot 20, after the run's 20 slots (0..19)"),
    (["delay=0.1:2@20-30"], "fault delay=0.1:2@20-30: the window starts at slot 20, after the run's 20 slots (0..19)"),
    (["loss=0.1@19-300", "dup=1@19"], None),
    (["partition@3:5:9"], "fault partition@3:5:9: node 9 not in 0..7"),
    (["partition@3:20:0"], "fault partition@3:20:0: it ends at slot 20, past the run's 20 slots (0..19)"),
    (["partition@20:25:0"], "fault partition@20:25:0: it begins at slot 20, past the run's 20 slots (0..19)"),
    (["partition@3:19:0-6"], None),
    (["partition@3:5:0-7"], "fault partition@3:5:0-7: the set holds every node of hypercube:3, so it cuts no link"),
    (["stall@3:5:8"], "fault stall@3:5:8: node 8 not in 0..7"),
    (["recover@3:1"], "fault recover@3:1: node 1 is already up at slot 3 (no crash before it)"),
    (["crash@2:1", "crash@4:1"], "fault crash@4:1: node 1 is already down at slot 4 since crash@2:1"),
    (["crash@2:1", "recover@4:1", "recover@6:1"], "fault recover@6:1: node 1 is already up at slot 6 since recover@4:1"),
    (["crash@2:1", "recover@4:1", "crash@4:1"], "fault crash@4:1: node 1 is already down at slot 4 since crash@2:1"),
    (["crash@2:1", "recover@4:1", "crash@5:1", "recover@9:1"], None),
    (["link-up@3:0:1"], "fault link-up@3:0:1: link 0:1 is already up at slot 3 (no link-down before it)"),
    (["link-down@2:0:0", "link-down@4:1:0"], "fault link-down@4:1:0: link 1:0 is already down at slot 4 since "
                                             "link-down@2:0:0"),
    # in one slot a link goes down before it comes up (kind order), so this down finds it down
    (["link-down@2:0:0", "link-up@4:1:0", "link-down@4:0:0"], "fault link-down@4:0:0: link 0:0 is already down at "
                                                              "slot 4 since link-down@2:0:0"),
    (["link-down@2:0:0", "link-up@4:1:0", "link-down@5:0:0"], None),
    (["stall@3:6:1", "stall@5:8:1"], "fault stall@5:8:1: node 1 is already stalled at slot 5 by stall@3:6:1"),
    (["stall@3:6:1", "stall@6:8:1"], "fault stall@6:8:1: node 1 is already stalled at slot 6 by stall@3:6:1"),
    (["stall@3:6:1", "stall@7:8:1", "stall@3:6:2"], None),
    (["crash@2:1", "stall@3:6:1"], "fault stall@3:6:1: node 1 is down at slot 3 (since crash@2:1)"),
    (["crash@2:1", "recover@3:1", "stall@3:6:1"], "fault stall@3:6:1: node 1 is down at slot 3 (since crash@2:1)"),
    (["crash@1:1", "recover@2:1", "stall@2:6:1"], "fault stall@2:6:1: node 1 is down at slot 2 (since crash@1:1)"),
    (["crash@1:1", "recover@2:1", "stall@3:6:1"], None),
    (["crash@1:1", "recover@2:1", "stall@3:6:1", "crash@7:1"], None),
    (["stall@3:6:1", "crash@3:1"], "fault stall@3:6:1: node 1 cannot crash while stalled (crash@3:1)"),
    (["stall@3:6:1", "crash@6:1"], "fault stall@3:6:1: node 1 cannot crash while stalled (crash@6:1)"),
    (["stall@3:6:1", "crash@2:2", "crash@4:2"], "fault crash@4:2: node 2 is already down at slot 4 since crash@2:2"),
])
def test_validation_word_for_word(texts, message):
    s = P(texts)
    if message is None:
        s.validate(H3, 20)
    else:
        assert refusal(s.validate, H3, 20) == message


def test_a_recover_inside_a_stall_is_named_by_the_stall_check():
    # validate() reports such a recover as one without a crash first; the stall check alone names the stall
    s = P(["stall@3:6:1", "recover@5:1"])
    assert refusal(s.validate, H3, 20) == "fault recover@5:1: node 1 is already up at slot 5 (no crash before it)"
    assert refusal(s._check_stalls) == "fault stall@3:6:1: node 1 cannot recover while stalled (recover@5:1)"
    assert refusal(P(["stall@3:6:1", "recover@7:1", "crash@6:1"])._check_stalls) == (
        "fault stall@3:6:1: node 1 cannot crash while stalled (crash@6:1)")
    P(["stall@3:6:1", "recover@7:1"])._check_stalls()
    P(["stall@3:6:1", "crash@7:1"])._check_stalls()


def test_the_schedule_refuses_entries_of_the_wrong_sort():
    controls = "link-down, link-up, crash, recover, partition, stall"
    w = LossWindow(0.1)
    assert refusal(FaultSchedule, events=(w,)) == f"schedule entry {w!r} is not a control fault event (known: {controls})"
    ev = FaultEvent("boom", 1, 1)
    assert refusal(FaultSchedule, events=(ev,)) == f"schedule entry {ev!r} is not a control fault event (known: {controls})"
    loss_ev = FaultEvent("loss", 1, 1)
    assert refusal(FaultSchedule, events=(loss_ev,)).startswith(f"schedule entry {loss_ev!r} is not a control")
    ok = FaultEvent("crash", 1, 1)
    assert refusal(FaultSchedule, spans=(ok,)) == f"schedule entry {ok!r} is not a partition or stall"
    bad_span = SpanFault("boom", 1, 2, (1,))
    assert refusal(FaultSchedule, spans=(bad_span,)) == f"schedule entry {bad_span!r} is not a partition or stall"
    assert refusal(FaultSchedule, windows=(w,)) == f"schedule entry {w!r} is not a message fault window"
    mw = MessageWindow("boom", 0.1)
    assert refusal(FaultSchedule, windows=(mw,)) == f"schedule entry {mw!r} is not a message fault window"
    assert refusal(FaultSchedule, detect=-1) == ("schedule: detection delay must be a whole number of slots >= 0 or "
                                                 "'never', got -1")
    assert FaultSchedule(detect=0).detect == 0 and FaultSchedule(detect=None).detect is None


# -- properties, the slot order, the message pipeline -----------------------------------------------
def test_empty_and_checksums():
    assert FaultSchedule().empty and P(["detect=never"]).empty
    for text in ("crash@1:1", "loss=0.1", "dup=0.1", "stall@1:2:1"):
        assert not P([text]).empty
    assert P(["corrupt=0.1"]).checksums and P(["corrupt=0:undetected"]).checksums
    assert not P(["loss=0.1", "dup=0.1", "delay=0.1:2", "crash@1:1"]).checksums
    assert frozenset({"dup", "delay"}) == NOTE_CAUSES


def test_a_slots_events_run_in_kind_order_then_node_order():
    s = P(["recover@5:2", "stall@5:6:4", "crash@5:3", "crash@5:1", "partition@5:6:0-1", "link-up@5:0:2",
           "link-down@5:1:1", "link-down@5:1:0", "crash@2:2", "partition@5:5:6", "stall@1:6:5"])
    got = [(e.describe(), getattr(e, "begin", None)) for e in s.by_slot[5]]
    assert got == [("link-down@5:1:0", None), ("link-down@5:1:1", None), ("link-up@5:0:2", None),
                   ("partition@5:6:0-1", True), ("partition@5:5:6", True), ("crash@5:1", None), ("crash@5:3", None),
                   ("stall@5:6:4", True), ("recover@5:2", None)]
    assert sorted(s.by_slot) == [1, 2, 5, 6, 7]
    assert [(e.describe(), e.begin) for e in s.by_slot[6]] == [("partition@5:5:6 (end)", False)]
    assert [(e.describe(), e.begin) for e in s.by_slot[7]] == [
        ("partition@5:6:0-1 (end)", False), ("stall@1:6:5 (end)", False), ("stall@5:6:4 (end)", False)]
    assert s.by_slot[1] == (SpanEdge(s.spans[-1], 1, True),)
    assert P(["partition@5:6:1", "partition@5:6:0"]).by_slot[5][0].span.nodes == (0,)
    assert [e.span.start for e in P(["partition@4:6:0", "partition@2:6:0"]).by_slot[7]] == [2, 4]


def test_the_message_pipeline_order_and_salts():
    s = P(["delay=0.1:2", "dup=0.2", "corrupt=0.3", "loss=0.4", "dup=0.5@3", "loss=0.1@2-4", "corrupt=0.6:undetected"])
    stages = s.message_stages()
    assert isinstance(stages[0], LossStage) and stages[0].windows == s.loss
    rest = stages[1:]
    assert all(isinstance(x, WindowStage) for x in rest)
    assert [(x.window, x.salt) for x in rest] == [
        (s.windows[2], 1 + 0 + 2), (s.windows[4], 1 + 0 + 4), (s.windows[1], 1 + 1_000_003 + 1),
        (s.windows[3], 1 + 1_000_003 + 3), (s.windows[0], 1 + 2 * 1_000_003 + 0)]
    assert P(["dup=0.1"]).message_stages()[0].salt == 1 + 1_000_003
    assert P(["crash@1:1"]).message_stages() == []
    assert s.loss_rate(1) == pytest.approx(0.4) and s.loss_rate(2) == pytest.approx(1 - 0.6 * 0.9)
    assert s.loss_rate(4) == pytest.approx(0.4) and FaultSchedule().loss_rate(3) == 0.0


# -- the dead-port timeline against a plain model -----------------------------------------------------
def _model_dead(texts: list[str], topo, slot: int, v: int) -> int:
    """Bit p set when port p of v is dead in ``slot``: its link down (any holder) or its neighbour crashed/stalled."""
    s = P(texts)
    down_links: dict[frozenset[int], int] = {}
    down_nodes: dict[int, int] = {}
    for ev in s.events:
        if ev.slot <= slot:
            if ev.kind in ("link-down", "link-up"):
                ends = frozenset((ev.node, topo.neighbour(ev.node, ev.port)))
                down_links[ends] = down_links.get(ends, 0) + (1 if ev.kind == "link-down" else -1)
            else:
                down_nodes[ev.node] = down_nodes.get(ev.node, 0) + (1 if ev.kind == "crash" else -1)
    for sp in s.spans:
        if sp.start <= slot <= sp.end:
            if sp.kind == "stall":
                down_nodes[sp.nodes[0]] = down_nodes.get(sp.nodes[0], 0) + 1
            else:
                for a in range(topo.n_nodes):
                    for p in topo.ports(a):
                        if (a in sp.nodes) != (p.neighbour in sp.nodes):
                            ends = frozenset((a, p.neighbour))
                            down_links[ends] = down_links.get(ends, 0) + 1
    mask = 0
    for p in topo.ports(v):
        if down_links.get(frozenset((v, p.neighbour)), 0) > 0 or down_nodes.get(p.neighbour, 0) > 0:
            mask |= 1 << p.index
    return mask


def _check_timeline(texts: list[str], topo, last: int = 30) -> None:
    s = P(texts)
    line = s.port_timeline(topo)
    assert isinstance(line, PortTimeline)
    for v in range(topo.n_nodes):
        masks = [_model_dead(texts, topo, t, v) for t in range(last)]
        assert [line.dead_mask(v, t) for t in range(last)] == masks, (v, texts)
        assert (v in line) == any(masks), v
        if v in line:
            slots, ms = line[v]
            assert list(slots) == sorted(set(slots)) and ms[0] != 0
            assert all(a != b for a, b in zip(ms, ms[1:])), "a change point repeats the mask before it"
            assert all(ms[i] == masks[slots[i]] and (slots[i] == 0 or masks[slots[i] - 1] != ms[i])
                       for i in range(len(slots)))
        # the failure detector's view: the schedule's mask ``detect`` slots late, none for "never"
        for detect in (0, 1, 3, None):
            seen = [0 if detect is None or t - detect < 0 else masks[t - detect] for t in range(last)]
            sched = P([*texts, f"detect={'never' if detect is None else detect}"])
            assert sched.detect == detect
            got = [0 if sched.detect is None else sched.port_timeline(topo).dead_mask(v, t - sched.detect)
                   for t in range(last)]
            assert got == seen


@pytest.mark.parametrize("texts", [
    ["crash@5:1", "recover@9:1"],
    ["link-down@3:1:0", "link-up@7:0:0"],
    ["link-down@3:1:2"],
    ["partition@4:8:0-3"],
    ["partition@4:8:0,3", "partition@6:10:0-1", "link-down@5:0:1", "link-up@9:0:1"],
    ["stall@2:4:6", "crash@6:6", "recover@8:6", "stall@8:9:6"],
    ["crash@0:0", "stall@0:3:1", "link-down@0:2:0"],
    ["crash@5:1", "link-down@5:0:0", "recover@7:1", "link-up@7:1:0"],
])
def test_the_timeline_matches_the_model(texts):
    _check_timeline(texts, H3)


def test_the_timeline_on_a_torus_and_the_documented_example():
    _check_timeline(["partition@2:6:0-3", "crash@3:5", "recover@4:5", "link-down@1:6:2"], parse_topology("torus:4x4"), 10)
    assert P(["crash@5:1", "recover@9:1"]).port_timeline(parse_topology("hypercube:2"))[0] == ((5, 9), (1, 0))
    line = PortTimeline({3: ((2, 5), (6, 0))})
    assert [line.dead_mask(3, t) for t in (0, 1, 2, 4, 5, 9)] == [0, 0, 6, 6, 0, 0] and line.dead_mask(4, 3) == 0


def test_a_change_that_cancels_within_its_slot_is_no_change_point():
    # the link 0-1 goes down and comes back in slot 3 (down, then up in the slot's order): nothing changes
    line = P(["crash@3:1", "link-down@3:0:0", "recover@6:1", "link-up@8:0:0"]).port_timeline(H3)
    assert line[0] == ((3, 8), (1, 0))
    # one slot both ends something and starts something else on the same port: the mask is written once
    line2 = P(["stall@2:4:1", "crash@5:1", "recover@7:1"]).port_timeline(H3)
    assert line2[0] == ((2, 7), (1, 0))
    line3 = P(["stall@2:4:1", "link-down@5:0:0", "stall@6:7:3"]).port_timeline(H3)
    assert line3[0] == ((2,), (1,)) and line3[2] == ((6, 8), (1, 0)) and line3[1] == ((5, 6, 8), (1, 3, 1))


def test_the_timeline_is_built_once_per_topology():
    s = P(["crash@5:1"])
    first = s.port_timeline(H3)
    assert s.port_timeline(parse_topology("hypercube:3")) is first
    assert s.port_timeline(parse_topology("hypercube:2")) is not first


@st.composite
def dead_specs(draw) -> list[str]:
    out: list[str] = []
    links = draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 2)), max_size=3,
                          unique_by=lambda t: frozenset((t[0], t[0] ^ (1 << t[1])))))
    for node, port in links:
        a = draw(st.integers(0, 15))
        out.append(f"link-down@{a}:{node}:{port}")
        if draw(st.booleans()):
            other = node ^ (1 << port) if draw(st.booleans()) else node
            out.append(f"link-up@{a + draw(st.integers(1, 8))}:{other}:{port}")
    nodes = draw(st.lists(st.integers(0, 7), max_size=4, unique=True))
    for i, v in enumerate(nodes):
        a = draw(st.integers(0, 15))
        if i % 2:
            out.append(f"stall@{a}:{a + draw(st.integers(0, 6))}:{v}")
        else:
            out.append(f"crash@{a}:{v}")
            if draw(st.booleans()):
                out.append(f"recover@{a + draw(st.integers(1, 8))}:{v}")
    for _ in range(draw(st.integers(0, 2))):
        a = draw(st.integers(0, 15))
        group = draw(st.lists(st.integers(0, 7), min_size=1, max_size=7, unique=True))
        out.append(f"partition@{a}:{a + draw(st.integers(0, 6))}:{','.join(map(str, group))}")
    return out


@settings(max_examples=60, deadline=None)
@given(dead_specs())
def test_generated_timelines_match_the_model(texts):
    P(texts).validate(H3, 40)
    _check_timeline(texts, H3, 30)
