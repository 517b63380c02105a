"""The wire codec: every message crossing a link is msgpack bytes.

Messages are built from ints, floats, strings, bytes, bools, None, tuples/lists and
dicts. Arrays decode as tuples, so a decoded message is immutable and never shares an
object with the sender.

Example:
    >>> decode(encode((5, 12, (1, 2))))
    (5, 12, (1, 2))
"""

from __future__ import annotations

from typing import Any

import msgpack

__all__ = ["decode", "encode"]

_packer = msgpack.Packer()


def encode(message: Any) -> bytes:
    """Serialise ``message`` to msgpack bytes.

    Raises:
        TypeError: if the message holds an object msgpack cannot carry.
    """
    return _packer.pack(message)


def decode(data: bytes) -> Any:
    """Inverse of :func:`encode` (arrays come back as tuples)."""
    return msgpack.unpackb(data, use_list=False, strict_map_key=False)
