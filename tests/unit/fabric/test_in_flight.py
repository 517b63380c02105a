"""The messages a run ends with on its links (``Transport.in_flight``): the frames are
kept and decoded as they are read, in the order the plain list had, so that the end of a
run is not its memory peak (see ``fabric/_in_flight.py``)."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from slotnet.fabric import FaultSchedule, InProcessTransport, SlotClock, parse_topology
from slotnet.fabric._in_flight import InFlight

frames = st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 9), max_size=3)), max_size=4)
parts_of = st.lists(st.tuples(st.integers(0, 50), frames), max_size=5)


def _inflight(parts):
    packed = [(r, [(p, msgpack.packb(m)) for p, m in fs]) for r, fs in parts]
    return InFlight(packed, lambda b: msgpack.unpackb(b, use_list=False))


def _plain(parts):
    return [(r, p, tuple(m)) for r, fs in parts for p, m in fs]


@given(parts_of)
def test_reads_as_the_plain_list(parts):
    got, want = _inflight(parts), _plain(parts)
    assert len(got) == len(want)
    assert list(got) == want and list(got) == want  # every pass decodes again, the same
    assert got == want and got == tuple(want) and want == got
    assert [got[i] for i in range(len(want))] == want
    assert [got[-i] for i in range(1, len(want) + 1)] == [want[-i] for i in range(1, len(want) + 1)]
    assert got[1:3] == want[1:3] and got[::-1] == want[::-1]
    if want:
        assert got.count(want[0]) == want.count(want[0]) and got.index(want[-1]) == want.index(want[-1])
    assert (got == want[:-1]) is (not want)


def test_out_of_range_and_unhashable():
    got = _inflight([(3, [(0, [1]), (1, [2])])])
    for i in (2, -3, 10):
        with pytest.raises(IndexError, match="^InFlight index out of range$"):
            got[i]
    with pytest.raises(TypeError, match="unhashable type: 'InFlight'"):
        hash(got)
    assert got != [(3, 0, (1,))] and got != "abc" and got != [(3, 0, (1,)), (3, 1, (9,))]
    assert repr(got) == "InFlight([(3, 0, (1,)), (3, 1, (2,))])"


def test_the_transport_gives_its_undelivered_messages_in_receiver_and_port_order():
    topo = parse_topology("hypercube:2")
    t = InProcessTransport(topo, SlotClock(), FaultSchedule.parse([]))
    t.outlet(3).send(0, ("a", 3))  # 3 -> 2
    t.outlet(0).send(1, ("b", 0))  # 0 -> 2
    t.outlet(1).send(0, ("c", 1))  # 1 -> 0
    got = t.in_flight()
    assert isinstance(got, InFlight) and len(got) == 3
    assert list(got) == [(0, 0, ("c", 1)), (2, 0, ("a", 3)), (2, 1, ("b", 0))]  # receivers in id order
    t.outlet(2).send(0, ("d", 2))  # sent after the call: the sequence already taken does not change
    assert len(got) == 3 and len(list(got)) == 3


def test_checksums_are_stripped_and_held_messages_are_included():
    topo = parse_topology("hypercube:1")
    t = InProcessTransport(topo, SlotClock(), FaultSchedule.parse(["corrupt=0.000001@900", "delay=1.0:3"]))
    assert t.checksums
    t.outlet(0).send(0, (7, 7))
    assert list(t.in_flight()) == [(1, 0, (7, 7))]
    assert t._hand_over(1) == []  # the delay fault holds it back at the receiving end
    assert t.busy()
    assert list(t.in_flight()) == [(1, 0, (7, 7))]


@given(parts_of)
def test_entries_split_as_they_are_read(parts):
    """Parts kept as the transport's pending pairs (one bytes object a message) read as the plain list."""
    from slotnet.fabric._transport import _pair, _split

    packed = [(r, [_pair(p, msgpack.packb(m)) for p, m in fs]) for r, fs in parts]
    got = InFlight(packed, lambda b: msgpack.unpackb(b, use_list=False), _split)
    want = _plain(parts)
    assert got == want and len(got) == len(want)
    assert [got[i] for i in range(len(want))] == want
