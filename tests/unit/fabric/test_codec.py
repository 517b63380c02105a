"""The wire codec: msgpack round trips, no shared objects."""

from __future__ import annotations

import pytest

from slotnet.fabric import decode, encode


@pytest.mark.parametrize(
    "message",
    [0, -5, 2**40, 1.5, "txt", b"raw", None, True, (1, 2, 3), (5, (1, 2), "a"), {"k": (1, 2)}, {3: "int key"}, ()],
)
def test_round_trip(message):
    """decode(encode(m)) == m, with arrays coming back as tuples."""
    assert decode(encode(message)) == message


def test_decoded_lists_are_tuples_and_fresh():
    """A list is sent as an array and decoded as a new tuple."""
    sent = [1, [2, 3]]
    got = decode(encode(sent))
    assert got == (1, (2, 3))
    assert got is not sent


def test_unencodable_message_raises():
    """Objects msgpack cannot carry are refused at the sender."""
    with pytest.raises(TypeError):
        encode(object())
