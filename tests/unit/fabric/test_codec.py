"""The wire codec (``fabric/_codec.py``): msgpack round trips, no shared objects, and its parts
unit by unit (the packers, the checksum seal, the decoding errors)."""

from __future__ import annotations

import zlib

import msgpack
import pytest

from slotnet.fabric import FabricError, decode, encode
from slotnet.fabric._codec import (
    CHECKSUM_BYTES,
    DECODE_ERRORS,
    checked_packer,
    decode_checked,
    packer,
    seal,
    verify,
)


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


# ------------------------------------------------------------------ the codec


def test_checksummed_frames_end_with_the_crc32_little_endian():
    """The trailer is 4 bytes, the msgpack bytes' CRC-32, little endian; seal writes the same frame."""
    message = (5, 12, "x", (1, 2.5))
    payload = encode(message)
    frame = checked_packer()(message)
    assert CHECKSUM_BYTES == 4
    assert frame == payload + zlib.crc32(payload).to_bytes(4, "little") == seal(payload)
    assert verify(frame) == payload and decode(verify(frame)) == message
    assert packer()(message) == payload


def test_verify_refuses_a_flipped_bit_or_a_short_frame():
    frame = seal(encode((1, 2, 3)))
    for i in range(len(frame)):
        assert verify(frame[:i] + bytes([frame[i] ^ 0x10]) + frame[i + 1:]) is None
    assert verify(b"") is None and verify(b"\x00\x00\x00") is None
    assert verify(b"\x00\x00\x00\x00") == b""  # the CRC-32 of nothing is 0: an empty payload, intact


def test_decode_gives_tuples_and_keeps_integer_keys():
    assert decode(encode([1, [2, 3]])) == (1, (2, 3))
    assert decode(encode({1: "a", 2: (3,)})) == {1: "a", 2: (3,)}


@pytest.mark.parametrize("data", [b"\xc1", b"\x92\x01", encode(1) + encode(2), b"\x81\x80\x01"])
def test_malformed_bytes_are_a_fabric_error_naming_where(data):
    with pytest.raises(DECODE_ERRORS):
        decode(data)
    with pytest.raises(FabricError, match=r"^link 3->4: undecodable frame \(\w+: .*\)$"):
        decode_checked(data, "link 3->4")
    assert issubclass(msgpack.UnpackException, DECODE_ERRORS)


def test_decode_checked_passes_good_bytes_through():
    assert decode_checked(encode((1, "a")), "here") == (1, "a")
