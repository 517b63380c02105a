"""The messages still on their way when a run ends, read without decoding them all at once.

At the end of a run every node's state is still in memory (the reporters read it), and
the messages on the links are still frames: msgpack bytes. Decoding all of them into one
list beside that state made the end of a run its memory peak: about 0.5 KiB a node on the
d-cube at v = 1, where a packet is on some link in every slot. :class:`InFlight` keeps the
frames and decodes a message when it is read, in the order the list had.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

__all__ = ["InFlight"]

#: (receiver, [(in_port, frame), ...]): one receiver's frames, in order (or entries that
#: InFlight's ``split`` makes such pairs of)
Part = tuple[int, Sequence[Any]]


class InFlight(Sequence[tuple[int, int, Any]]):
    """``(receiver, in_port, message)`` for every message sent and not delivered.

    A read-only sequence: its length costs nothing, and iterating decodes one frame at a
    time (again on each pass). It compares equal to a list or tuple of the same entries.

    Args:
        parts: each receiver's frames, in the order the entries are read.
        decode: a frame's bytes -> its message.
    """

    __slots__ = ("_parts", "_decode", "_len", "_split")

    def __init__(self, parts: list[Part], decode: Callable[[bytes], Any],
                 split: Callable[[Any], tuple[int, bytes]] | None = None) -> None:
        self._parts = parts
        self._decode = decode
        self._len = sum(len(frames) for _, frames in parts)
        #: where given, the parts' entries are split into ``(in_port, frame)`` as they are
        #: read (the transport keeps each pending message as one object: no pair is made
        #: for every message at once)
        self._split = split

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple[int, int, Any]]:
        dec = self._decode
        split = self._split
        for r, frames in self._parts:
            for f in frames:
                p, b = f if split is None else split(f)
                yield r, p, dec(b)

    @overload
    def __getitem__(self, index: int) -> tuple[int, int, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, int, Any]]: ...
    def __getitem__(self, index: int | slice) -> tuple[int, int, Any] | list[tuple[int, int, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        i = index.__index__()
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("InFlight index out of range")
        for r, frames in self._parts:
            if i < len(frames):
                p, b = frames[i] if self._split is None else self._split(frames[i])
                return r, p, self._decode(b)
            i -= len(frames)
        raise AssertionError("unreachable: the parts hold _len frames")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (InFlight, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list: unhashable like one

    def __repr__(self) -> str:
        return f"InFlight({list(self)!r})"
