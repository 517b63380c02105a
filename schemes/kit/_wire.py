"""Integers as shard state: msgpack carries 64 bits (:class:`slotnet.schemes.ShardMerging`)."""

from __future__ import annotations

__all__ = ["int_from_wire", "int_to_wire"]

_WIRE_INT = 1 << 63


def int_to_wire(x: int) -> int | str:
    """An integer sum as shard state (``BaseReporter.shard_state``): as it is where msgpack
    carries it (64 bits), else as its decimal text (a sum of squared delays may outgrow 64 bits).

    Example:
        >>> int_to_wire(5), int_to_wire(2**70), int_from_wire(int_to_wire(2**70)) == 2**70
        (5, '1180591620717411303424', True)
    """
    return x if -_WIRE_INT <= x < _WIRE_INT else str(x)


def int_from_wire(v: int | str) -> int:
    """The integer :func:`int_to_wire` made."""
    return int(v) if isinstance(v, str) else v
