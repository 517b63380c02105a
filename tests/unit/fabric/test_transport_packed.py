"""Packed inboxes (one bytearray of pairs per receiver, fault-free runs) against the list of pairs they replace."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.fabric import SlotClock, parse_topology
from slotnet.fabric._errors import FabricError
from slotnet.fabric._faults import FaultSchedule
from slotnet.fabric._transport import (
    _PACKED_HEAD,
    _PORT_PAIR,
    Frames,
    InProcessTransport,
    _append_int_pair,
    _append_pair,
    _decode_inbox,
    _packed_count,
    _packed_pairs,
    _pair,
    add_pairs,
    take_remote,
)

_messages = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
_pairs = st.lists(st.tuples(st.integers(0, 127), _messages), max_size=12)
#: every width msgpack gives an int, both sides of each boundary (fixint, 8, 16, 32, 64 bits)
_EDGES = sorted({e + k for e in (0, 0x80, 0x100, 0x10000, 1 << 32, 1 << 63, -32, -0x80, -0x8000, -(1 << 31), -(1 << 63))
                 for k in (-1, 0, 1)})
_int64 = st.integers(-(1 << 63), (1 << 63) - 1) | st.sampled_from([e for e in _EDGES if -(1 << 63) <= e < 1 << 63])
#: a scheme's packet as it mostly is: a flat tuple of ints (deflection's (dest, born, source))
_int_tuples = st.lists(_int64, max_size=15).map(tuple)


def _packed(pairs: list[tuple[int, Any]]) -> bytearray:
    buf = bytearray(_PACKED_HEAD)
    for p, m in pairs:
        _append_pair(buf, _pair(p, msgpack.packb(m)))
    return buf


@settings(max_examples=80, deadline=None)
@given(_pairs)
def test_a_packed_inbox_decodes_as_the_sorted_list_of_its_pairs(pairs: list[tuple[int, Any]]) -> None:
    """Counted, split back into the same pairs, and decoded by in-port exactly as the list
    of pairs is (stable: one port's messages keep their order)."""
    buf = _packed(pairs)
    as_list = [_pair(p, msgpack.packb(m)) for p, m in pairs]
    assert _packed_count(buf) == len(pairs) == len(Frames(0, 1, buf))
    assert _packed_pairs(buf) == as_list
    expect = _decode_inbox(0, sorted(as_list, key=lambda b: b[1]), 1) if as_list else []
    assert Frames(0, 1, buf).decode() == expect


@pytest.mark.parametrize("n", [255, 256, 65535, 65536, 70000])
def test_the_count_carries_and_widens_past_sixteen_bits(n: int) -> None:
    """Past 255 the count's high byte carries; past 65,535 the header becomes an array 32."""
    buf = _packed([(i % 3, i) for i in range(n)])
    assert _packed_count(buf) == n
    assert buf[0] == (0xDC if n < 65536 else 0xDD)
    inbox = Frames(0, 1, buf).decode()
    assert len(inbox) == n and [p for p, _ in inbox] == sorted(i % 3 for i in range(n))
    assert [m for p, m in inbox if p == 1] == [i for i in range(n) if i % 3 == 1]


def test_a_malformed_pending_frame_is_named() -> None:
    buf = bytearray(_PACKED_HEAD)
    _append_pair(buf, b"\x92\x01\xc1")  # 0xc1: never used in msgpack
    with pytest.raises(FabricError, match="undecodable"):
        Frames(7, 3, buf).decode()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 15), st.integers(0, 3), _messages | _int_tuples), max_size=40))
def test_packed_and_list_transports_hand_over_the_same_inboxes(sends: list[tuple[int, int, Any]]) -> None:
    """The same sends parked in a packed transport and in a list one give the same inboxes,
    the same counts and the same messages in flight."""
    topo = parse_topology("hypercube:4")
    out = []
    for packed in (True, False):
        t = InProcessTransport(topo, SlotClock(), FaultSchedule())
        assert t.packed
        t.packed = packed  # before any outlet: they take the setting when made
        outlets = [t.outlet(v) for v in range(topo.n_nodes)]
        t.clock.slot = 0
        used = set()
        for v, port, m in sends:
            if (v, port) not in used:
                used.add((v, port))
                outlets[v].send(port, m)
        flight = list(t.in_flight())
        got = [(r, list(f), len(f)) for r, f in t._hand_over(1)]
        out.append((flight, got, t.delivered))
    assert out[0] == out[1]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 127), _int_tuples, _pairs)
def test_a_tuple_of_ints_is_written_in_place_as_msgpack_packs_it(in_port: int, message: tuple[int, ...],
                                                                  before: list[tuple[int, Any]]) -> None:
    """An outlet's fast path for a flat tuple of ints (compiled, it skips the packer) appends
    exactly the pair's head and the bytes msgpack's packer makes, behind what is there."""
    buf = _packed(before)
    tail = len(buf)
    assert _append_int_pair(buf, in_port, message)
    assert bytes(buf[tail:]) == _PORT_PAIR[in_port] + msgpack.packb(message)


@pytest.mark.parametrize("message", [
    (1 << 63,), (-(1 << 63) - 1,), ((1 << 64) - 1, 2),  # past 64 bits signed: msgpack's uint 64, or refused
    (True,), (1, False), (1.0,), (1, None), ("a",), (b"x",),  # not ints (a bool is an int to Python)
    (1, (2,)), [1, 2], 5, None, tuple(range(16)),  # nested, a list, not a tuple, longer than a fixarray
])
def test_anything_else_is_left_to_the_packer(message: Any) -> None:
    """Any other message: False, and the inbox untouched (the outlet packs it as before)."""
    buf = _packed([(1, (2, 3))])
    was = bytes(buf)
    assert not _append_int_pair(buf, 3, message)
    assert bytes(buf) == was


def test_a_faulted_run_keeps_lists() -> None:
    topo = parse_topology("hypercube:3")
    assert not InProcessTransport(topo, SlotClock(), FaultSchedule.parse(["loss=0.1"])).packed
    assert not InProcessTransport(topo, SlotClock(), quantum=2).packed


@settings(max_examples=60, deadline=None)
@given(_pairs, _pairs, st.booleans())
def test_another_shards_packed_inbox_joins_what_is_pending(mine: list, theirs: list, pending_here: bool) -> None:
    """A packed inbox taken out for another shard (``take_remote``), sent as bytes, joins
    the receiver's packed inbox there (``add_pairs``): its pairs follow, counted."""
    r = 5
    sender_pending: list[Any] = [None] * 8
    sender_pending[r] = _packed(theirs) if theirs else None
    touched = [r] if theirs else []
    remote, _, taken = take_remote(sender_pending, touched, 0, 4, 4, 2)
    assert taken == len(theirs)
    frame = msgpack.unpackb(msgpack.packb(([], remote[1])), use_list=True)[1]
    pending: list[Any] = [None] * 8
    here: list[int] = []
    if pending_here:
        pending[r] = _packed(mine)
        here.append(r)
    assert add_pairs(pending, here, frame, 4, 8) == len(theirs)
    joined = (mine if pending_here else []) + theirs
    if pending[r] is None:
        assert not joined and not here
    else:
        assert _packed_pairs(pending[r]) == _packed_pairs(_packed(joined)) and here == [r]


@pytest.mark.parametrize(("here", "there"), [(65530, 10), (0, 65540), (3, 65540), (65540, 2)])
def test_joined_inboxes_count_past_sixteen_bits(here: int, there: int) -> None:
    """A join whose total passes 65,535 pairs widens the header; either side may already be wide."""
    pending: list[Any] = [None, _packed([(0, i) for i in range(here)]) if here else None]
    touched = [1] if here else []
    theirs = bytes(_packed([(1, -i) for i in range(there)]))
    assert add_pairs(pending, touched, [1, theirs], 0, 2) == there
    buf = pending[1]
    assert _packed_count(buf) == here + there and buf[0] == (0xDC if here + there < 65536 else 0xDD)
    inbox = Frames(1, 1, buf).decode()
    assert inbox == [(0, i) for i in range(here)] + [(1, -i) for i in range(there)]
