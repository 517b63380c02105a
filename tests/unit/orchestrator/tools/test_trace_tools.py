"""Unit tests of the trace tools: reading traces back (``_trace_query``), the Perfetto export
(``_perfetto``) and the slot diagram (``_diagram``), on small hand-written traces.

Expected values are worked out by hand from the documented rules (a message is read in the
slot after it was sent; 1 slot = 1000 µs in the Perfetto export; the diagram's geometry
constants); the diagram's full SVG text is also compared with a stored copy
(``golden/`` beside this file) so that any change to the drawing is seen.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.errors import SpecError
from slotnet.orchestrator.tools import _diagram, _perfetto
from slotnet.orchestrator.tools import _trace_query as tq
from slotnet.orchestrator.tools._diagram import MAX_NODES, MAX_SLOTS, diagram_svg, write_diagram
from slotnet.orchestrator.tools._perfetto import perfetto_events, to_perfetto, write_perfetto
from slotnet.orchestrator.tools._trace_query import (
    Hops,
    carries,
    describe_follow,
    follow,
    format_event,
    learn_links,
    message_key,
    parse_packet,
    peer,
    read_trace,
    timeline,
)


class Ring:
    """A directed ring of ``n`` nodes, 2 ports: port 0 -> v+1, port 1 -> v-1 (the in-port's sender is the same)."""

    def __init__(self, n: int = 4, ports: int = 2) -> None:
        self.n_nodes, self.n_ports = n, ports

    def neighbour(self, v: int, p: int) -> int | None:
        if p == 0:
            return (v + 1) % self.n_nodes
        if p == 1:
            return (v - 1) % self.n_nodes
        return None


def _write(tmp_path: Path, data: bytes | str, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def _ev(slot: int, node: int, event: str, **kw) -> dict:
    return {"slot": slot, "node": node, "event": event, **kw}


# -- read_trace ------------------------------------------------------------------------------
def test_read_trace_yields_events_skipping_blank_lines(tmp_path):
    p = _write(tmp_path, '{"slot": 0, "node": 1, "event": "sent", "message": [1, 2]}\n\n   \n'
                         '{"slot": 3, "node": 0, "event": "x"}')
    assert list(read_trace(p)) == [_ev(0, 1, "sent", message=[1, 2]), _ev(3, 0, "x")]
    assert list(read_trace(str(p))) == list(read_trace(p))
    assert list(read_trace(_write(tmp_path, "", "e.jsonl"))) == []


def test_read_trace_refusals(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(SpecError) as e:
        list(read_trace(missing))
    assert str(e.value) == f"cannot read trace {str(missing)!r}: No such file or directory"
    with pytest.raises(SpecError) as e:
        list(read_trace(tmp_path))
    assert str(e.value) == f"cannot read trace {str(tmp_path)!r}: Is a directory"
    gz = _write(tmp_path, b"\x1f\x8bxyz", "g")
    with pytest.raises(SpecError) as e:
        list(read_trace(gz))
    assert str(e.value) == f"trace {str(gz)!r} is gzip-compressed: decompress it first (gunzip)"
    assert not _write(tmp_path, b"\x1f{", "h").read_bytes().startswith(tq._GZIP_MAGIC)
    binary = _write(tmp_path, b'{"slot": 0}\0', "b")
    with pytest.raises(SpecError) as e:
        list(read_trace(binary))
    assert str(e.value) == f"trace {str(binary)!r} is a binary file, not JSON lines written by slotnet run --trace"
    # a NUL past the first 4096 bytes is not looked for: that line is then just not JSON
    late = _write(tmp_path, b" " * 4096 + b"\0\n", "late")
    with pytest.raises(SpecError, match="line 1 is not JSON"):
        list(read_trace(late))
    bad = _write(tmp_path, b'{"slot": 0, "node": 0, "event": "a"}\n\n\xff\xfe\n', "u")
    with pytest.raises(SpecError) as e:
        list(read_trace(bad))
    assert str(e.value) == f"trace {str(bad)!r} line 3 is not UTF-8 text: not a trace written by slotnet run"


def test_read_trace_utf8_error_on_the_first_line_names_line_1(tmp_path):
    bad = _write(tmp_path, b"\xff\n", "u")
    with pytest.raises(SpecError) as e:
        list(read_trace(bad))
    assert str(e.value) == f"trace {str(bad)!r} line 1 is not UTF-8 text: not a trace written by slotnet run"


@pytest.mark.parametrize("line, why", [
    ("nope", "is not JSON"),
    ("[" * 100000, "is not JSON"),
    ('{"slot": NaN, "node": 0, "event": "a"}', "is not JSON"),
    ('{"slot": Infinity, "node": 0, "event": "a"}', "is not JSON"),
    ("[1, 2]", "is not a trace event (needs slot, node and event)"),
    ('{"slot": 0, "node": 0}', "is not a trace event (needs slot, node and event)"),
    ('{"slot": 0, "event": "a"}', "is not a trace event (needs slot, node and event)"),
    ('{"node": 0, "event": "a"}', "is not a trace event (needs slot, node and event)"),
    ('{"slot": -1, "node": 0, "event": "a"}', ": 'slot' must be an integer >= 0, got -1"),
    ('{"slot": 1.0, "node": 0, "event": "a"}', ": 'slot' must be an integer >= 0, got 1.0"),
    ('{"slot": true, "node": 0, "event": "a"}', ": 'slot' must be an integer >= 0, got True"),
    ('{"slot": 0, "node": -1, "event": "a"}', ": 'node' must be an integer >= 0, got -1"),
    ('{"slot": 0, "node": "3", "event": "a"}', ": 'node' must be an integer >= 0, got '3'"),
    ('{"slot": 0, "node": false, "event": "a"}', ": 'node' must be an integer >= 0, got False"),
    ('{"slot": 0, "node": 0, "event": ""}', ": 'event' must be a non-empty string, got ''"),
    ('{"slot": 0, "node": 0, "event": 5}', ": 'event' must be a non-empty string, got 5"),
])
def test_read_trace_bad_lines(tmp_path, line, why):
    p = _write(tmp_path, '{"slot": 0, "node": 0, "event": "ok"}\n' + line + "\n")
    with pytest.raises(SpecError) as e:
        list(read_trace(p))
    assert str(e.value) == f"trace {str(p)!r} line 2" + ("" if why.startswith(":") else " ") + why


def test_read_trace_accepts_zero(tmp_path):
    assert list(read_trace(_write(tmp_path, '{"slot": 0, "node": 0, "event": "e"}'))) == [_ev(0, 0, "e")]


def test_no_constant_message():
    with pytest.raises(ValueError, match="^NaN is not a JSON number$"):
        tq._no_constant("NaN")


# -- timelines and formatting ----------------------------------------------------------------
def test_format_event_exact():
    ev = _ev(12, 3, "sent", port=1, message=[1, "a"])
    assert format_event(ev) == '      12  node 3     sent       port=1 message=[1, "a"]'
    assert format_event(ev, node=False) == '      12  sent       port=1 message=[1, "a"]'
    assert format_event(_ev(123456789, 12345, "averyverylongname")) == "123456789  node 12345  averyverylongname "


def test_timeline_filters_node_kinds_and_window():
    evs = [_ev(0, 1, "sent", port=0), _ev(1, 1, "received"), _ev(2, 2, "sent"), _ev(3, 1, "sent", port=1),
           _ev(4, 1, "fault")]
    assert timeline(evs, 1) == ["       0  sent       port=0", "       1  received   ", "       3  sent       port=1",
                                "       4  fault      "]
    assert timeline(evs, 1, {"sent"}) == ["       0  sent       port=0", "       3  sent       port=1"]
    assert timeline(evs, 1, set()) == timeline(evs, 1)  # an empty set is no filter
    assert timeline(evs, 1, None, (1, 4)) == ["       1  received   ", "       3  sent       port=1"]
    assert timeline(evs, 1, {"sent"}, (0, 1)) == ["       0  sent       port=0"]
    assert timeline(evs, 9) == []
    assert tq._in_window(3, None) and tq._in_window(1, (1, 2))
    assert not tq._in_window(2, (1, 2)) and not tq._in_window(0, (1, 2))


# -- packets ---------------------------------------------------------------------------------
def test_parse_packet():
    assert parse_packet("6,1") == (6, 1)
    assert parse_packet(" p , 0,3 ") == ("p", 0, 3)
    assert parse_packet("-2") == (-2,)
    for bad in ("", "1,", ",1", "1,,2", " , "):
        with pytest.raises(SpecError) as e:
            parse_packet(bad)
        assert str(e.value) == f"--packet must be comma-separated values such as 6,1 (origin,seq), got {bad!r}"


def test_carries():
    assert carries([6, 1, "x"], (6, 1)) and carries((6, 1), (6, 1)) and carries([6, 1], (6,))
    assert not carries([6], (6, 1)) and not carries([6, 2], (6, 1)) and not carries([1, 6], (6, 1))
    assert carries(5, (5,)) and not carries(5, (5, 0)) and not carries(5, (4,))


def _broadcast_trace() -> list[dict]:
    return [
        _ev(0, 6, "step", births=[[1, 0.25], [2, 0.5]], received=[]),
        _ev(0, 6, "sent", port=0, message=[6, 1]),
        _ev(1, 7, "received", port=1, message=[6, 1]),
        _ev(1, 7, "step", births=[], received=[[6, 1]]),
        _ev(1, 7, "sent", port=0, message=[6, 1, "fwd"]),
        _ev(2, 0, "received", port=1, message=[6, 1, "fwd"]),
        _ev(2, 0, "lost", **{"from": 0, "to": 1, "cause": "link_down"}, message=[6, 1]),  # written once, at its sender
        _ev(2, 2, "received", port=1, message=[6, 1]),
        _ev(3, 2, "received", port=1, message=[6, 1]),
        _ev(5, 3, "lost", **{"from": 3, "to": 4, "cause": "x"}, message=[6, 1]),
        _ev(5, 3, "sent", message=[6, 9]),
        _ev(6, 4, "received", message=[6, 1]),
    ]


def test_follow_a_broadcast():
    evs = _broadcast_trace()
    mine, summary = follow(evs, (6, 1))
    assert summary == {"packet": [6, 1], "birth": {"slot": 0, "node": 6, "time": 0.25}, "nodes_reached": 4,
                       "last_reception": 6, "copies_lost": 2, "events": 11}
    assert mine == [e for e in evs if e is not evs[10]]
    assert describe_follow(summary) == ("packet 6,1: born at node 6 in slot 0 (time 0.250); reached 4 nodes, "
                                        "the last in slot 6; 2 copies lost")


def test_follow_cuts_after_the_last_reception_but_keeps_losses():
    evs = [_ev(0, 1, "sent", message=[1, 1]), _ev(1, 2, "received", message=[1, 1]),
           _ev(2, 2, "sent", message=[1, 1]), _ev(3, 3, "lost", message=[1, 1], **{"from": 2})]
    mine, summary = follow(evs, (1, 1))
    assert mine == [evs[0], evs[1], evs[3]]
    assert summary == {"packet": [1, 1], "birth": {"slot": 0, "node": 1, "time": None}, "nodes_reached": 1,
                       "last_reception": 1, "copies_lost": 1, "events": 3}
    assert describe_follow(summary) == "packet 1,1: born at node 1 in slot 0; reached 1 nodes, the last in slot 1; 1 copies lost"
    # the later reception at the same node keeps the latest slot
    evs2 = [*evs[:2], _ev(4, 2, "received", message=[1, 1]), _ev(5, 2, "received", message=[1, 1, 0])]
    assert follow(evs2, (1, 1))[1]["last_reception"] == 5


def test_follow_birth_rules():
    # a recorded birth beats a first send, also when it comes later; a later birth does not replace one with a time
    evs = [_ev(0, 4, "sent", message=[4, 2]), _ev(1, 4, "step", births=[[2, 1.5]]), _ev(2, 4, "step", births=[[2, 9.0]])]
    assert follow(evs, (4, 2))[1]["birth"] == {"slot": 1, "node": 4, "time": 1.5}
    # a birth without a usable time keeps None, and is replaced by a later one with a time
    for junk in ([2], [2, True], [2, "x"]):
        evs = [_ev(1, 4, "step", births=[junk]), _ev(3, 4, "step", births=[[2, 7]])]
        assert follow(evs[:1], (4, 2))[1]["birth"] == {"slot": 1, "node": 4, "time": None}
        assert follow(evs, (4, 2))[1]["birth"] == {"slot": 3, "node": 4, "time": 7}
    # births at another node, of another seq, or not lists, are no birth of this packet
    assert follow([_ev(1, 5, "step", births=[[2, 1.0]])], (4, 2)) == ([], {
        "packet": [4, 2], "birth": None, "nodes_reached": 0, "last_reception": None, "copies_lost": 0, "events": 0})
    assert follow([_ev(1, 4, "step", births=[[3, 1.0], 2])], (4, 2))[0] == []
    assert follow([_ev(1, 4, "step", births=[[2, 1.0]])], (4,))[0] == []  # births need a 2-field id
    assert follow([_ev(1, 4, "step", births="x", received="y")], (4, 2))[0] == []
    # a send after a birth does not replace it
    evs = [_ev(0, 4, "step", births=[[2, 0.5]]), _ev(0, 4, "sent", message=[4, 2])]
    assert follow(evs, (4, 2))[1]["birth"] == {"slot": 0, "node": 4, "time": 0.5}
    assert describe_follow(follow([], (4, 2))[1]) == "packet 4,2: birth not in the trace; reached 0 nodes; 0 copies lost"


def test_follow_counts_receptions_by_step_and_every_lost_copy():
    """Receptions by the kit's step events; each lost event is one lost copy (a trace writes each once)."""
    evs = [_ev(1, 2, "step", received=[[4, 2]]), _ev(2, 3, "step", received=[[4, 2], [1, 1]]),
           _ev(2, 3, "sent", message=[4, 2]),
           _ev(3, 5, "lost", message=[4, 2]),  # no "from": the node itself
           _ev(3, 6, "lost", message=[4, 2], **{"from": 5}),
           _ev(4, 9, "other", message=[4, 2])]
    mine, s = follow(evs, (4, 2))
    assert s["nodes_reached"] == 2 and s["last_reception"] == 2 and s["copies_lost"] == 2
    assert mine == evs[:5]


# -- hops ------------------------------------------------------------------------------------
def test_message_key():
    assert message_key({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'
    assert message_key(None) == "null"


def test_peer():
    ring = Ring(4, 3)
    assert peer(ring, 0, 0) == 1 and peer(ring, 0, 1) == 3 and peer(ring, 3, 0) == 0
    assert peer(ring, 0, 2) is None  # the topology has no such link
    assert peer(ring, 4, 0) is None and peer(ring, -1, 0) is None
    assert peer(ring, 0, 3) is None and peer(ring, 0, -1) is None
    assert peer(ring, True, 0) is None and peer(ring, 0, False) is None
    assert peer(ring, "0", 0) is None and peer(ring, 0, None) is None and peer(ring, 0.0, 0) is None


def test_hops_with_a_topology():
    hops = Hops(Ring())
    assert hops.feed(_ev(0, 0, "sent", port=0, message="m"), "s") is None
    assert hops.feed(_ev(0, 2, "sent", port=1, message="m"), "t") is None
    # node 1 reads on in-port 1 (its sender is node 0): node 2's identical message is not it
    assert hops.feed(_ev(1, 1, "received", port=1, message="m"), "r") == ("s", "r")
    assert hops.feed(_ev(1, 1, "received", port=1, message="m"), "r2") is None  # taken already
    assert hops.feed(_ev(1, 1, "received", port=0, message="m"), "r3") == ("t", "r3")
    assert hops.sender_of(1, 1) == 0 and hops.sender_of(1, 2) == -1 and hops.sender_of(1, 7) == -1
    assert hops.sender_of(1, None) is None and hops.sender_of(1, True) is None and hops.sender_of(1, "1") is None
    assert hops.links == {}
    # the same slot is not "sent before": a message is read in a later slot
    hops.feed(_ev(2, 0, "sent", message="n"), "a")
    assert hops.feed(_ev(2, 1, "received", port=1, message="n"), "b") is None
    assert hops.feed(_ev(3, 1, "received", port=1, message="n"), "c") == ("a", "c")


def test_hops_inferred_learns_links_and_conflicts():
    hops = Hops()
    hops.feed(_ev(0, 0, "sent", message="m"), "a")
    assert hops.feed(_ev(1, 1, "received", port=0, message="m"), "b") == ("a", "b")
    assert hops.links == {(1, 0): 0}
    # the learnt link now names the sender, even two slots later
    hops.feed(_ev(2, 0, "sent", message="q"), "c")
    hops.feed(_ev(3, 5, "sent", message="q"), "d")
    assert hops.feed(_ev(4, 1, "received", port=0, message="q"), "e") == ("c", "e")
    # two nodes sent it the slot before: no hop, nothing learnt
    hops.feed(_ev(5, 2, "sent", message="z"), "f")
    hops.feed(_ev(5, 3, "sent", message="z"), "g")
    assert hops.feed(_ev(6, 4, "received", port=0, message="z"), "h") is None and (4, 0) not in hops.links
    # a node's own send is not its sender
    hops.feed(_ev(7, 4, "sent", message="y"), "i")
    hops.feed(_ev(7, 2, "sent", message="y"), "j")
    assert hops.feed(_ev(8, 4, "received", port=1, message="y"), "k") == ("j", "k") and hops.links[(4, 1)] == 2
    # a second sender for the same in-port: the link is forgotten and never learnt again
    hops.feed(_ev(9, 3, "sent", message="w"), "l")
    assert hops.feed(_ev(10, 4, "received", port=1, message="w"), "m") is None  # sender 2 is known: no match
    hops2 = Hops()
    hops2._learn((1, 0), 0)
    hops2._learn((1, 0), 0)
    assert hops2.links == {(1, 0): 0}
    hops2._learn((1, 0), 7)
    assert hops2.links == {} and hops2.conflicts == {(1, 0)}
    hops2._learn((1, 0), 0)
    assert hops2.links == {}
    # ports that are not ints are not learnt, the hop is still made
    hops3 = Hops()
    hops3.feed(_ev(0, 0, "sent", message="m"), "a")
    assert hops3.feed(_ev(1, 1, "received", port=True, message="m"), "b") == ("a", "b") and hops3.links == {}
    hops3.feed(_ev(1, 0, "sent", message="m"), "c")
    assert hops3.feed(_ev(2, 1, "received", message="m"), "d") == ("c", "d") and hops3.links == {}


def test_hops_links_are_copied_and_events_without_message_ignored():
    given_links = {(1, 0): 0}
    hops = Hops(links=given_links)
    hops._learn((2, 0), 1)
    assert given_links == {(1, 0): 0}
    assert hops.feed(_ev(0, 0, "sent"), "a") is None and hops._pending == {}
    assert hops.feed(_ev(1, 1, "received", port=0), "b") is None
    assert Hops().horizon == 16 and Hops(horizon=3).horizon == 3


def test_hops_lost_at_the_sender():
    hops = Hops()
    hops.feed(_ev(3, 2, "sent", message="m"), "a")
    hops.feed(_ev(3, 5, "sent", message="m"), "x")
    lost = {"from": 2, "to": 3, "message": "m"}
    assert hops.feed(_ev(3, 3, "lost", **lost), "r") is None  # recorded at the receiver: not the sender's
    assert hops.feed(_ev(2, 2, "lost", **lost), "early") is None  # sent after it: not this one
    assert hops.feed(_ev(3, 2, "lost", **lost), "b") == ("a", "b")
    assert hops.feed(_ev(4, 2, "lost", **lost), "c") is None  # taken already
    assert hops.feed(_ev(4, 5, "lost", **{**lost, "from": 5}), "d") == ("x", "d")
    assert hops._pending == {}


def test_hops_forget_after_the_horizon():
    hops = Hops()
    hops.feed(_ev(0, 0, "sent", message="m"), "a")
    hops.feed(_ev(1, 0, "sent", message="m"), "b")
    hops.feed(_ev(15, 9, "sent", message="other"), None)
    hops.feed(_ev(16, 9, "x"), None)  # 16 % 4 == 0: prune before 16 - 16 = 0 keeps both
    assert hops._pending[message_key("m")] == [(0, 0, "a"), (1, 0, "b")]
    hops.feed(_ev(17, 9, "x"), None)  # not a multiple of 4: no prune
    hops.feed(_ev(17, 9, "x"), None)
    assert len(hops._pending[message_key("m")]) == 2
    hops.feed(_ev(20, 9, "x"), None)  # prune before 4
    assert message_key("m") not in hops._pending and hops._pending[message_key("other")] == [(15, 9, None)]
    h = Hops(horizon=2)
    h.feed(_ev(1, 0, "sent", message="m"), "a")
    h.feed(_ev(2, 0, "sent", message="m"), "b")
    h.feed(_ev(4, 9, "x"), None)  # prune before 2
    assert h._pending == {message_key("m"): [(2, 0, "b")]}
    h.feed(_ev(4, 9, "x"), None)  # the same slot again: no second prune needed, nothing changes
    assert h._pending == {message_key("m"): [(2, 0, "b")]}
    h2 = Hops(horizon=0)
    h2.feed(_ev(3, 0, "sent", message="m"), "a")
    h2.feed(_ev(3, 0, "x"), None)
    h2.feed(_ev(4, 0, "x"), None)  # prune before 4
    assert h2._pending == {}


def test_hops_prune_only_when_the_slot_advances():
    h = Hops(horizon=0)
    h.feed(_ev(8, 0, "x"), None)  # prune before 8: nothing there
    h.feed(_ev(7, 0, "sent", message="m"), "a")  # an earlier slot: no prune
    h.feed(_ev(8, 0, "x"), None)
    assert h._pending == {message_key("m"): [(7, 0, "a")]}
    h.feed(_ev(12, 0, "x"), None)
    assert h._pending == {}


def test_take_keeps_the_others():
    h = Hops()
    h._pending = {"k": [(1, 0, "a"), (2, 1, "b"), (3, 1, "c")]}
    assert h._take("k", lambda s, v: v == 1) == "b"
    assert h._pending == {"k": [(1, 0, "a"), (3, 1, "c")]}
    assert h._take("k", lambda s, v: v == 9) is None
    assert h._take("nope", lambda s, v: True) is None
    h._pending["e"] = []
    assert h._take("e", lambda s, v: True) is None


def test_learn_links():
    evs = [_ev(0, 0, "sent", message="m"), _ev(1, 1, "received", port=0, message="m"),
           _ev(1, 1, "sent", message="q"), _ev(2, 2, "received", port=3, message="q")]
    assert learn_links(evs) == {(1, 0): 0, (2, 3): 1}
    assert learn_links([]) == {}


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1), st.sampled_from("ab")), max_size=12))
def test_inferred_hops_agree_with_the_topology_on_unique_sends(sends):
    """Each slot's sends, each read in the next slot by the ring neighbour: inference pairs as the topology does."""
    ring = Ring()
    events, slot, seen = [], 0, set()
    for v, p, m in sends:
        msg = f"{m}{slot}{v}{p}"
        if msg in seen:
            continue
        seen.add(msg)
        events.append((slot, _ev(slot, v, "sent", port=p, message=msg)))
        events.append((slot + 1, _ev(slot + 1, ring.neighbour(v, p), "received", port=1 - p, message=msg)))
        slot += 1
    ordered = [e for _, e in sorted(events, key=lambda x: (x[0], x[1]["event"] != "received"))]

    def pairs(hops):
        return [got for i, ev in enumerate(ordered) if (got := hops.feed(ev, i)) is not None]

    exact = pairs(Hops(ring))
    assert len(exact) == len(seen)
    assert pairs(Hops(None, learn_links(ordered))) == exact


# -- Perfetto --------------------------------------------------------------------------------


def _small_trace() -> list[dict]:
    return [
        _ev(0, 0, "sent", port=0, message="m"),
        _ev(0, 0, "step", births=[]),
        _ev(0, 2, "sent", port=1, message="q"),
        _ev(1, 1, "received", port=1, message="m"),
        _ev(1, 1, "received", port=0, message="q"),
        _ev(1, 1, "fault", fault="link-down", port=0),
        _ev(1, 1, "lost", cause="link_down", message="z"),
        _ev(2, 3, "fault", fault="crash"),
        _ev(2, 3, "fault"),
        _ev(2, 3, "lost"),
    ]


PERFETTO = [
    {"name": "sent", "ph": "X", "ts": 0.0, "dur": 500.0, "pid": 0, "tid": 0, "args": {"port": 0, "message": "m"}},
    {"name": "step", "ph": "X", "ts": 500.0, "dur": 500.0, "pid": 0, "tid": 0, "args": {"births": []}},
    {"name": "sent", "ph": "X", "ts": 0.0, "dur": 1000.0, "pid": 0, "tid": 2, "args": {"port": 1, "message": "q"}},
    {"name": "received", "ph": "X", "ts": 1000.0, "dur": 250.0, "pid": 0, "tid": 1, "args": {"port": 1, "message": "m"}},
    {"name": "hop", "cat": "hop", "ph": "s", "id": 1, "ts": 250.0, "pid": 0, "tid": 0},
    {"name": "hop", "cat": "hop", "ph": "f", "bp": "e", "id": 1, "ts": 1125.0, "pid": 0, "tid": 1},
    {"name": "received", "ph": "X", "ts": 1250.0, "dur": 250.0, "pid": 0, "tid": 1, "args": {"port": 0, "message": "q"}},
    {"name": "hop", "cat": "hop", "ph": "s", "id": 2, "ts": 500.0, "pid": 0, "tid": 2},
    {"name": "hop", "cat": "hop", "ph": "f", "bp": "e", "id": 2, "ts": 1375.0, "pid": 0, "tid": 1},
    {"name": "link-down port 0", "ph": "i", "s": "t", "ts": 1500.0, "pid": 0, "tid": 1,
     "args": {"fault": "link-down", "port": 0}},
    {"name": "lost (link_down)", "ph": "i", "s": "t", "ts": 1750.0, "pid": 0, "tid": 1,
     "args": {"cause": "link_down", "message": "z"}},
    {"name": "crash", "ph": "i", "s": "t", "ts": 2000.0, "pid": 0, "tid": 3, "args": {"fault": "crash"}},
    {"name": "fault", "ph": "i", "s": "t", "ts": 2333.333, "pid": 0, "tid": 3, "args": {}},
    {"name": "lost (?)", "ph": "i", "s": "t", "ts": 2666.667, "pid": 0, "tid": 3, "args": {}},
    *({"name": "thread_name", "ph": "M", "pid": 0, "tid": v, "args": {"name": f"node {v}"}} for v in range(4)),
]


def test_to_perfetto_exact():
    got = to_perfetto(_small_trace(), Ring())
    assert got == {"traceEvents": PERFETTO, "displayTimeUnit": "ms"}
    assert to_perfetto(_small_trace()) == got  # the hops inferred are the same
    assert to_perfetto(_small_trace(), None, {(1, 1): 0, (1, 0): 2}) == got
    assert [e["dur"] for e in got["traceEvents"] if e["name"] == "received"] == [250.0, 250.0]
    assert to_perfetto([]) == {"traceEvents": [], "displayTimeUnit": "ms"}


def test_perfetto_flows_only_for_receptions():
    # a loss at its sender pairs in Hops, but is no flow arrow
    evs = [_ev(0, 0, "sent", message="m"), _ev(0, 0, "lost", message="m", **{"from": 0})]
    out = list(perfetto_events(evs))
    assert [e["ph"] for e in out] == ["X", "i", "M"]
    # a group changes with the node and with the slot
    evs = [_ev(0, 0, "a"), _ev(0, 1, "a"), _ev(1, 1, "a"), _ev(1, 0, "a"), _ev(1, 0, "b")]
    assert [(e.get("ts"), e.get("dur")) for e in perfetto_events(evs)][:5] == [
        (0.0, 1000.0), (0.0, 1000.0), (1000.0, 1000.0), (1000.0, 500.0), (1500.0, 500.0)]


def test_perfetto_event_defaults_and_names():
    assert _perfetto._perfetto_event(_ev(3, 2, "sent", port=1)) == {
        "name": "sent", "ph": "X", "ts": 3000, "dur": 1000.0, "pid": 0, "tid": 2, "args": {"port": 1}}
    assert _perfetto._perfetto_event(_ev(3, 2, "lost"), 0.0)["ts"] == 0.0
    assert _perfetto._perfetto_event(_ev(0, 2, "fault", port=None))["name"] == "fault"
    assert _perfetto._instant_name(_ev(0, 0, "fault", fault="delay", port=3)) == "delay port 3"
    assert _perfetto._thread_name(5) == {"name": "thread_name", "ph": "M", "pid": 0, "tid": 5, "args": {"name": "node 5"}}
    assert _perfetto._INSTANTS == ("fault", "lost")


def test_write_perfetto_streams_the_same_json(tmp_path):
    target = tmp_path / "out.json"
    assert write_perfetto(_small_trace(), target, Ring()) == len(PERFETTO)
    text = target.read_text()
    assert text.startswith('{"traceEvents":[{"name":"sent","ph":"X","ts":0.0,"dur":500.0,') and text.endswith('"displayTimeUnit":"ms"}\n')
    assert json.loads(text) == {"traceEvents": PERFETTO, "displayTimeUnit": "ms"}
    assert ",," not in text and "[," not in text
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    assert write_perfetto([], str(target)) == 0
    assert target.read_text() == '{"traceEvents":[],"displayTimeUnit":"ms"}\n'


def test_write_perfetto_refuses_nan(tmp_path):
    with pytest.raises(ValueError):
        write_perfetto([_ev(0, 0, "x", v=float("nan"))], tmp_path / "n.json")
    assert list(tmp_path.iterdir()) == []


def test_write_perfetto_leaves_nothing_behind_on_a_bad_event(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def events():
        yield _ev(0, 0, "a")
        raise SpecError("bad line")

    with pytest.raises(SpecError, match="^bad line$"):
        write_perfetto(events(), target)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_write_perfetto_cannot_write(tmp_path):
    where = tmp_path / "no" / "out.json"
    with pytest.raises(SpecError) as e:
        write_perfetto([], where)
    assert str(e.value) == f"cannot write {str(where)!r}: No such file or directory"
    # a directory in the way: the rename fails, the temporary file is removed
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("")
    with pytest.raises(SpecError) as e:
        write_perfetto([], tmp_path / "d")
    assert str(e.value).startswith(f"cannot write {str(tmp_path / 'd')!r}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_write_perfetto_to_a_device():
    assert write_perfetto(_small_trace(), "/dev/null") == len(PERFETTO)
    with pytest.raises(SpecError) as e:
        write_perfetto([], "/dev/full")
    assert str(e.value) == "cannot write '/dev/full': No space left on device"


def test_remove_quietly(tmp_path):
    p = tmp_path / "f"
    p.write_text("")
    _perfetto._remove_quietly(str(p))
    assert not p.exists()
    _perfetto._remove_quietly(str(p))  # already gone: no error


# -- the slot diagram ------------------------------------------------------------------------

GOLDEN = Path(__file__).parent / "golden"


def _scenario() -> list[dict]:
    """Every kind of mark on a 4-node ring: hops, stubs both ways, losses to and from nodes drawn or not,
    births of both kits, faults with and without a port, a crash that recovers and one that does not."""
    return [
        _ev(0, 0, "step", births=[[1, 0.5]]),
        _ev(0, 0, "sent", port=0, message=[0, 1, "x"]),
        _ev(0, 2, "sent", port=0, message=[2, 5]),
        _ev(0, 1, "sent", port=1, message="u"),  # to node 0, which never reads it: an outgoing stub
        _ev(1, 1, "received", port=1, message=[0, 1, "x"]),
        _ev(1, 3, "received", port=1, message=[2, 5]),
        _ev(1, 3, "received", port=0, message="orphan"),  # no send: an incoming stub from the ring's n0
        _ev(1, 1, "born", count=2),
        _ev(1, 1, "born", count=0),
        _ev(2, 2, "fault", fault="crash"),
        _ev(2, 1, "sent", port=0, message="k"),
        _ev(2, 1, "lost", message="k", cause="node_down", **{"from": 1, "to": 2}),
        _ev(2, 3, "sent", port=0, message="far"),
        _ev(2, 3, "lost", message="far", cause="link_down", **{"from": 3, "to": 7}),
        _ev(3, 3, "sent", port=1, message="left"),
        _ev(3, 3, "lost", message="left", cause="link_down", **{"from": 3, "to": 0}),
        _ev(3, 0, "lost", message="in", cause="node_down", **{"from": 9, "to": 0}),
        _ev(3, 1, "fault", fault="link-down", port=0),
        _ev(4, 2, "fault", fault="recover"),
        _ev(4, 3, "fault", fault="crash"),
        _ev(5, 0, "received", port=7, message="odd"),
        _ev(5, 0, "step", births=[]),
    ]


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SLOTNET_REGOLD"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"the diagram changed: compare with {path}"


def test_diagram_golden_with_the_topology():
    svg, shown = diagram_svg(_scenario(), topology=Ring(), title="t<&>")
    assert shown == {"nodes": 4, "slots": 6, "first": 0, "last": 5, "hops": 2, "note": ""}
    _golden("diagram_ring.svg", svg)


def test_diagram_golden_in_a_window_inferred():
    events = [ev for ev in _scenario() if 1 <= ev["slot"] < 5]  # the CLI selects the window's events
    svg, shown = diagram_svg(events, window=(1, 5))
    assert shown == {"nodes": 4, "slots": 4, "first": 1, "last": 4, "hops": 0, "note": ""}
    _golden("diagram_window.svg", svg)


def test_diagram_geometry():
    """Hand-computed positions: column centre 64 + (i + 0.5)·56, row centre 84 + (slot - first + 0.5)·30."""
    svg, _ = diagram_svg(_scenario(), topology=Ring())
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" width="760" height="320" viewBox="0 0 760 320" ')
    assert svg.endswith("</svg>\n")
    assert ('<line x1="92.0" y1="99.0" x2="148.0" y2="129.0" stroke="#393b79" stroke-width="1.4" '
            'marker-end="url(#a9)"/>') in svg
    assert '<text x="148.0" y="60" text-anchor="middle" font-weight="bold">n1</text>' in svg
    assert '<rect x="64" y="84" width="224" height="30" fill="#f4f4f4"/>' in svg
    assert '<text x="56" y="253.0" text-anchor="end" fill="#555">5</text>' in svg
    assert '<text x="64" y="286" fill="#333">arrow: a message' in svg
    assert svg.count("<marker ") == 13
    # many nodes: the width grows past 760
    evs = [_ev(0, v, "x") for v in range(MAX_NODES)]
    svg, shown = diagram_svg(evs)
    assert svg.startswith(f'<svg xmlns="http://www.w3.org/2000/svg" width="{64 + 56 * 16 + 24}" height="{84 + 30 + 56}"')
    assert shown == {"nodes": 16, "slots": 1, "first": 0, "last": 0, "hops": 0, "note": ""}


def test_diagram_limits():
    with pytest.raises(SpecError) as e:
        diagram_svg([_ev(0, v, "x") for v in range(MAX_NODES + 1)])
    assert str(e.value) == ("--diagram draws at most 16 nodes and this selection has 17: "
                            "choose some with --node N (repeatable)")
    with pytest.raises(SpecError) as e:
        diagram_svg([])
    assert str(e.value) == "--diagram: no events match: nothing to draw"
    for window in ((0, 41), (3, 3), (5, 4)):
        with pytest.raises(SpecError) as e:
            diagram_svg([_ev(0, 0, "x")], window=window)
        assert str(e.value) == (f"--diagram draws at most 40 slots, the window {window[0]}:{window[1]} has "
                                f"{window[1] - window[0]}")
    assert diagram_svg([_ev(0, 0, "x")], window=(0, 40))[1]["slots"] == 40
    assert diagram_svg([_ev(7, 0, "x")], window=(7, 8))[1] == {"nodes": 1, "slots": 1, "first": 7, "last": 7,
                                                               "hops": 0, "note": ""}
    assert diagram_svg([], window=(2, 4))[1] == {"nodes": 0, "slots": 2, "first": 2, "last": 3, "hops": 0, "note": ""}
    assert (MAX_NODES, MAX_SLOTS) == (16, 40)


def test_diagram_first_40_slots_and_the_note():
    evs = [_ev(s, 0, "x") for s in range(3, 3 + MAX_SLOTS)]
    assert diagram_svg(evs)[1] == {"nodes": 1, "slots": 40, "first": 3, "last": 42, "hops": 0, "note": ""}
    shown = diagram_svg([*evs, _ev(43, 0, "x"), _ev(44, 1, "x")])[1]
    assert shown == {"nodes": 1, "slots": 40, "first": 3, "last": 42, "hops": 0,
                     "note": " (the first 40 slots: choose others with --slots A:B)"}
    assert diagram_svg([_ev(5, 0, "x"), _ev(2, 1, "x")])[1] == {  # an earlier slot after the first: dropped
        "nodes": 1, "slots": 1, "first": 5, "last": 5, "hops": 0, "note": ""}


def test_select_directly():
    evs = [_ev(1, 0, "a"), _ev(41, 0, "b"), _ev(40, 0, "c")]
    assert _diagram._select(evs, None) == ([evs[0], evs[2]], 1, 40, " (the first 40 slots: choose others with --slots A:B)")
    assert _diagram._select(evs[:1], None) == ([evs[0]], 1, 1, "")
    assert _diagram._select(evs, (1, 2)) == (evs, 1, 1, "")
    assert _diagram._select([], (0, 1)) == ([], 0, 0, "")


def test_down_spans():
    evs = [_ev(2, 1, "fault", fault="crash"), _ev(3, 1, "fault", fault="crash"), _ev(5, 1, "fault", fault="recover"),
           _ev(6, 1, "fault", fault="recover"), _ev(7, 0, "fault", fault="crash"), _ev(8, 1, "fault", fault="crash"),
           _ev(9, 1, "fault", fault="link-down")]
    assert _diagram._down_spans(evs, 1, 0, 20) == [(2, 5), (8, 20)]
    assert _diagram._down_spans(evs, 1, 4, 10) == [(4, 5), (8, 10)]
    assert _diagram._down_spans(evs, 1, 5, 8) == []  # touching the edges is outside
    assert _diagram._down_spans(evs, 1, 4, 9) == [(4, 5), (8, 9)]
    assert _diagram._down_spans(evs, 0, 0, 7) == []
    assert _diagram._down_spans(evs, 0, 0, 8) == [(7, 8)]
    assert _diagram._down_spans(evs, 2, 0, 20) == []


def test_born_and_colour():
    assert _diagram._born(_ev(0, 0, "step", births=[[1, 2]])) and _diagram._born(_ev(0, 0, "born", count=1))
    assert not _diagram._born(_ev(0, 0, "step", births=[])) and not _diagram._born(_ev(0, 0, "step"))
    assert not _diagram._born(_ev(0, 0, "born", count=0)) and not _diagram._born(_ev(0, 0, "born"))
    assert not _diagram._born(_ev(0, 0, "sent", births=[1], count=1))
    # the colour is the packet's: the first two fields
    assert _diagram._colour([1, 2, "a"]) == _diagram._colour((1, 2, "b")) == _diagram._colour([1, 2])
    assert _diagram._colour("u") == "#bcbd22" and _diagram._colour([0, 1, "x"]) == "#393b79"
    assert _diagram._colour([2, 5]) == "#2ca02c" and _diagram._colour("odd") == "#8c6d31"
    assert len(_diagram._PALETTE) == 12 and _diagram._RED == "#d62728"


def test_marks():
    assert _diagram._fault(10.0, 20.0, _ev(3, 2, "fault")) == (
        '<g><title>slot 3: fault at n2</title><path d="M10.0,13.0 L17.0,20.0 L10.0,27.0 L3.0,20.0 z" fill="#d62728"/>'
        '<text x="19.0" y="24.0" font-size="9" fill="#d62728">fault</text></g>')
    assert "delay p0 at n2" in _diagram._fault(0, 0, _ev(3, 2, "fault", fault="delay", port=0))
    assert _diagram._lost(0.0, 0.0, 10.0, 20.0, _ev(4, 1, "lost")) == (
        '<g><title>slot 4: lost to a fault (None) nNone → nNone: null</title><line x1="0.0" y1="0.0" x2="6.0" y2="12.0" '
        'stroke="#d62728" stroke-width="1.4" stroke-dasharray="4,2"/>'
        '<path d="M2.0,8.0 L10.0,16.0 M2.0,16.0 L10.0,8.0" stroke="#d62728" stroke-width="2"/></g>')
    assert _diagram._stub(100.0, 50.0, -1, "u", "w<", incoming=True, label="") == (
        '<g><title>w&lt;: "u"</title><line x1="80.4" y1="35.0" x2="100.0" y2="50.0" stroke="#bcbd22" stroke-width="1.2" '
        'stroke-dasharray="2,2" marker-end="url(#a7)"/></g>')
    assert _diagram._stub(100.0, 50.0, -1, "u", "w", incoming=False, label="n&") == (
        '<g><title>w: "u"</title><line x1="100.0" y1="50.0" x2="80.4" y2="65.0" stroke="#bcbd22" stroke-width="1.2" '
        'stroke-dasharray="2,2" marker-end="url(#a7)"/><text x="82.4" y="68.0" font-size="8" fill="#bcbd22" '
        'text-anchor="start">n&amp;</text></g>')
    assert _diagram._arrow(1.0, 2.0, 3.0, 4.0, "u", "w>") == (
        '<g><title>w&gt;: "u"</title><circle cx="1.0" cy="2.0" r="2.5" fill="#bcbd22"/>'
        '<line x1="1.0" y1="2.0" x2="3.0" y2="4.0" stroke="#bcbd22" stroke-width="1.4" marker-end="url(#a7)"/></g>')


def test_diagram_stub_labels():
    # an in-port the topology lacks: sender -1, so the stub names the port
    svg, _ = diagram_svg([_ev(0, 1, "received", port=5, message="m")], topology=Ring())
    assert '<title>slot 0: from port 5 → n1: "m"</title>' in svg
    # learnt links name the sender; a send whose receiver is known by the topology names it
    svg, _ = diagram_svg([_ev(0, 1, "received", port=0, message="m")], links={(1, 0): 3})
    assert '<title>slot 0: from n3 → n1: "m"</title>' in svg and ">n3</text>" in svg
    svg, _ = diagram_svg([_ev(0, 1, "sent", port=0, message="m")])
    assert '<title>slot 0: n1 → port 0: "m"</title>' in svg and "text-anchor=\"start\"" not in svg
    svg, _ = diagram_svg([_ev(0, 0, "sent", port=0, message="m"), _ev(0, 3, "sent", port=1, message="m")], topology=Ring())
    assert '<title>slot 0: n0 → n1: "m"</title>' in svg and '<title>slot 0: n3 → n2: "m"</title>' in svg
    assert 'x2="111.6" y2="114.0"' in svg  # a stub from n0 points right: 92 + 0.35·56
    # a loss to the left of a node not drawn
    svg, _ = diagram_svg([_ev(0, 2, "sent", message="m"), _ev(0, 2, "lost", message="m", **{"from": 2, "to": 0})])
    assert '<line x1="92.0" y1="99.0" x2="65.12" y2="117.0" stroke="#d62728"' in svg
    svg, _ = diagram_svg([_ev(0, 2, "sent", message="m"), _ev(0, 2, "lost", message="m", **{"from": 2, "to": True})])
    assert '<line x1="92.0" y1="99.0" x2="65.12" y2="117.0" stroke="#d62728"' in svg
    # a loss at the receiver from a node drawn is not drawn again
    svg, _ = diagram_svg([_ev(0, 2, "lost", message="m", **{"from": 2, "to": 3}), _ev(1, 3, "x")])
    assert "lost to a fault (" not in svg


def test_write_diagram(tmp_path):
    path = tmp_path / "d.svg"
    shown = write_diagram(_scenario(), path, topology=Ring())
    assert shown == {"nodes": 4, "slots": 6, "first": 0, "last": 5, "hops": 2, "note": ""}
    assert path.read_text(encoding="utf-8") == diagram_svg(_scenario(), topology=Ring(), title="slotnet trace d")[0]
    assert write_diagram([_ev(0, 0, "x")], str(path), window=(0, 2))["slots"] == 2
    where = tmp_path / "no" / "d.svg"
    with pytest.raises(SpecError) as e:
        write_diagram([_ev(0, 0, "x")], where)
    assert str(e.value) == f"--diagram: cannot write {str(where)!r}: No such file or directory"
    svg = write_diagram([_ev(0, 0, "sent", message="m"), _ev(1, 1, "received", port=0, message="m")], path,
                        links={(1, 0): 0})
    assert svg["hops"] == 1
