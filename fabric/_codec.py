"""The wire codec: every message crossing a link is msgpack bytes.

Messages are built from ints, floats, strings, bytes, bools, None, tuples/lists and
dicts. Arrays decode as tuples, so a decoded message is immutable and never shares an
object with the sender. Every transport packs and unpacks through this module.

Checksums. When a run schedules a ``corrupt`` fault, every outlet packs through
:func:`checked_packer`: the msgpack bytes followed by their CRC-32 (4 bytes, little
endian). The receiving transport checks and strips it (:func:`verify`). Runs without a
corrupt fault never pay for it: their outlets keep the plain :func:`packer`.

Example:
    >>> decode(encode((5, 12, (1, 2))))
    (5, 12, (1, 2))
    >>> framed = checked_packer()((5, 12))
    >>> verify(framed) == encode((5, 12)), verify(framed[:-1] + bytes([framed[-1] ^ 1]))
    (True, None)
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from functools import partial
from typing import Any

import msgpack

from ._errors import FabricError

__all__ = ["CHECKSUM_BYTES", "DECODE_ERRORS", "checked_packer", "decode", "decode_checked", "encode", "packer",
           "seal", "split_values", "unpackb", "verify"]

#: Length of the CRC-32 trailer :func:`checked_packer` appends.
CHECKSUM_BYTES = 4

#: What msgpack raises on bytes that are not one well-formed message.
DECODE_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, msgpack.UnpackException)

#: Inverse of :func:`encode` (arrays come back as tuples). A C-level partial: this is the
#: per-message hot path of every transport.
decode: Callable[[bytes], Any] = partial(msgpack.unpackb, use_list=False, strict_map_key=False)
#: msgpack's own ``unpackb``, for the compiled transport's per-inbox decode: called there
#: with :func:`decode`'s keywords (``use_list=False, strict_map_key=False``) written out,
#: it gives what :func:`decode` gives without the partial's keyword dict per call.
unpackb: Callable[..., Any] = msgpack.unpackb


def packer() -> Callable[[Any], bytes]:
    """A fresh ``pack(message) -> bytes`` (one per transport: a packer keeps a buffer, so it is not shared across threads)."""
    return msgpack.Packer().pack


def seal(payload: bytes) -> bytes:
    """``payload`` followed by its CRC-32 trailer."""
    return payload + zlib.crc32(payload).to_bytes(CHECKSUM_BYTES, "little")


def checked_packer() -> Callable[[Any], bytes]:
    """A fresh ``pack(message) -> bytes`` whose frames end with a CRC-32 of the msgpack bytes."""
    pack = packer()
    crc = zlib.crc32

    def pack_checked(message: Any) -> bytes:
        payload = pack(message)
        return payload + crc(payload).to_bytes(CHECKSUM_BYTES, "little")

    return pack_checked


def verify(frame: bytes) -> bytes | None:
    """The msgpack bytes of a checksummed ``frame``, or None if its CRC-32 does not match."""
    payload = frame[:-CHECKSUM_BYTES]
    if len(frame) < CHECKSUM_BYTES or zlib.crc32(payload).to_bytes(CHECKSUM_BYTES, "little") != frame[-CHECKSUM_BYTES:]:
        return None
    return payload


_pack = packer()


def encode(message: Any) -> bytes:
    """Serialise ``message`` to msgpack bytes.

    Raises:
        TypeError: if the message holds an object msgpack cannot carry.
    """
    return _pack(message)


def split_values(body: bytes, count: int) -> list[bytes]:
    """The first ``count`` msgpack values of ``body``, each as its own bytes, undecoded.

    Example:
        >>> split_values(encode(1) + encode((2, 3)) + encode("x"), 3)
        [b'\\x01', b'\\x92\\x02\\x03', b'\\xa1x']

    Raises:
        ValueError, msgpack.UnpackException: ``body`` holds fewer well-formed values.
    """
    unpacker = msgpack.Unpacker(max_buffer_size=max(len(body), 1))
    unpacker.feed(body)
    out = []
    start = 0
    for _ in range(count):
        unpacker.skip()
        end = unpacker.tell()
        out.append(body[start:end])
        start = end
    return out


def decode_checked(data: bytes, where: str) -> Any:
    """:func:`decode`, with malformed bytes reported as a :class:`FabricError` naming ``where``."""
    try:
        return decode(data)
    except DECODE_ERRORS as exc:
        raise FabricError(f"{where}: undecodable frame ({type(exc).__name__}: {exc})") from None
