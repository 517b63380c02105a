"""The wire codec: every message crossing a link is msgpack bytes.

Messages are built from ints, floats, strings, bytes, bools, None, tuples/lists and
dicts. Arrays decode as tuples, so a decoded message is immutable and never shares an
object with the sender. Every transport packs and unpacks through this module.

Example:
    >>> decode(encode((5, 12, (1, 2))))
    (5, 12, (1, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import msgpack

from ._errors import FabricError

__all__ = ["DECODE_ERRORS", "decode", "decode_checked", "encode", "packer"]

#: What msgpack raises on bytes that are not one well-formed message.
DECODE_ERRORS: tuple[type[BaseException], ...] = (ValueError, TypeError, msgpack.UnpackException)

#: Inverse of :func:`encode` (arrays come back as tuples). A C-level partial: this is the
#: per-message hot path of every transport.
decode: Callable[[bytes], Any] = partial(msgpack.unpackb, use_list=False, strict_map_key=False)


def packer() -> Callable[[Any], bytes]:
    """A fresh ``pack(message) -> bytes`` (one per outlet: packers keep a buffer)."""
    return msgpack.Packer().pack


_pack = packer()


def encode(message: Any) -> bytes:
    """Serialise ``message`` to msgpack bytes.

    Raises:
        TypeError: if the message holds an object msgpack cannot carry.
    """
    return _pack(message)


def decode_checked(data: bytes, where: str) -> Any:
    """:func:`decode`, with malformed bytes reported as a :class:`FabricError` naming ``where``."""
    try:
        return decode(data)
    except DECODE_ERRORS as exc:
        raise FabricError(f"{where}: undecodable frame ({type(exc).__name__}: {exc})") from None
