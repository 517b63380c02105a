"""The fabric's small parts, unit by unit: what mutation testing found unpinned.

``devtools/mutation.sh`` runs these (with ``test_codec.py`` and ``test_fabric_runtime.py``)
against every mutant of ``fabric``; each test here kills mutants that change behaviour and
that no other fast test noticed (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import zlib

import msgpack
import pytest

from slotnet.fabric import FabricError, FaultLedger, SlotClock
from slotnet.fabric._codec import (
    CHECKSUM_BYTES,
    DECODE_ERRORS,
    checked_packer,
    decode,
    decode_checked,
    encode,
    packer,
    seal,
    verify,
)

# ------------------------------------------------------------------ the clock


def test_the_clock_starts_at_slot_0():
    clock = SlotClock()
    assert clock.slot == 0
    clock.slot = 7
    assert clock.slot == 7


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


# ------------------------------------------------------------------ the fault ledger


def test_the_ledger_counts_by_book_and_cause():
    ledger = FaultLedger()
    assert len(ledger) == 0 and dict(ledger) == {} and ledger.to_dict() == {} and ledger.copies == 0
    ledger.add("lost", "loss")
    ledger.add("lost", "loss", 2)
    ledger.add("lost", "avoidable:loss")
    ledger.add("delayed", "delay", 4)
    ledger.add("corrupted", "undetected")
    assert ledger.lost == {"loss": 3, "avoidable:loss": 1}
    assert ledger.causes == {"loss": 3} and ledger.avoidable == {"loss": 1}
    assert ledger["loss"] == 3 and list(ledger) == ["loss"] and len(ledger) == 1
    with pytest.raises(KeyError):
        ledger["avoidable:loss"]
    with pytest.raises(KeyError):
        ledger["dup"]  # no copies: no dup entry
    assert ledger.to_dict() == {"lost": {"loss": 3}, "delayed": {"delay": 4}, "corrupted": {"undetected": 1}}


def test_copies_count_against_the_network():
    ledger = FaultLedger()
    ledger.add("duplicated", "dup", 3)
    ledger.add("duplicated", "dup")
    assert ledger.copies == 4 and ledger["dup"] == -4
    assert list(ledger) == ["dup"] and len(ledger) == 1 and dict(ledger) == {"dup": -4}
    ledger.add("lost", "crash", 2)
    assert dict(ledger) == {"crash": 2, "dup": -4} and len(ledger) == 2 and ledger["crash"] == 2
    assert ledger.to_dict() == {"lost": {"crash": 2}, "duplicated": {"dup": 4}}


def test_ledgers_merge_book_by_book():
    a, b = FaultLedger(), FaultLedger()
    a.add("lost", "loss")
    b.add("lost", "loss", 2)
    b.add("lost", "avoidable:link_down")
    b.add("duplicated", "dup")
    b.add("delayed", "delay", 5)
    b.add("corrupted", "corrupt", 6)
    a.merge(b)
    assert (a.lost, a.duplicated, a.delayed, a.corrupted) == (
        {"loss": 3, "avoidable:link_down": 1}, {"dup": 1}, {"delay": 5}, {"corrupt": 6})
    assert b.lost == {"loss": 2, "avoidable:link_down": 1}  # the other is left as it was
