"""The fault ledger: every message a fault touched, by what happened to it and why.

``lost[cause]`` counts messages destroyed (``link_down``, ``partition``, ``node_down``,
``stalled``, ``loss``, ``corrupt``, ``undecodable``, ``crash`` for packets a crashed
node held, ``node_finished``, ...); ``duplicated``, ``delayed`` and ``corrupted`` count
messages a fault copied (``dup``), held back (``delay``) or garbled (``corrupt``,
``undetected``). Of the messages lost to a dead link or node, those sent on a port the
sender's context already showed dead are also counted as *avoidable*
(:attr:`FaultLedger.avoidable`): a scheme that used the failure detector would not have
lost them.

The ledger reads as a mapping of the *net* count of messages the faults took out of the
network, by cause: every loss cause with its (positive) count and, when a ``dup`` fault
copied messages, ``"dup"`` with minus the number of copies. So a reporter's
conservation check ``created == delivered + in_flight + held + sum(ledger.values())``
closes under every fault kind. Invariants receive the ledger, so a scheme can tell a
fault's doing from its own bug.

Books travel between shards as plain ``{cause: count}`` dicts (the avoidable sub-counts
ride in the ``lost`` book under ``avoidable:<cause>`` keys, which the mapping hides), so
a merged ledger is exactly the one-process one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

__all__ = ["AVOIDABLE", "FaultLedger"]

#: Prefix of the ``lost`` keys that sub-count avoidable losses (hidden from the mapping).
AVOIDABLE = "avoidable:"


class FaultLedger(Mapping[str, int]):
    """Counts of faulted messages; as a mapping, the net count each cause took out of the network."""

    #: The books, by name: each is an attribute, ``{cause: count}`` (declared here once;
    #: the annotations below only type them).
    BOOKS: ClassVar[tuple[str, ...]] = ("lost", "duplicated", "delayed", "corrupted")
    __slots__ = BOOKS

    lost: dict[str, int]
    duplicated: dict[str, int]
    delayed: dict[str, int]
    corrupted: dict[str, int]

    def __init__(self) -> None:
        for book in self.BOOKS:
            setattr(self, book, {})

    def add(self, book: str, cause: str, n: int = 1) -> None:
        """Count ``n`` messages in ``book`` (one of :attr:`BOOKS`)."""
        d: dict[str, int] = getattr(self, book)
        d[cause] = d.get(cause, 0) + n

    def merge(self, other: FaultLedger) -> None:
        """Add another ledger's counts (ledgers of shards merge exactly)."""
        for book in self.BOOKS:
            for cause, n in getattr(other, book).items():
                self.add(book, cause, n)

    def books(self) -> dict[str, dict[str, int]]:
        """Every book by name, in :attr:`BOOKS` order (``lost`` without the avoidable sub-counts)."""
        return {book: self.causes if book == "lost" else getattr(self, book) for book in self.BOOKS}

    @property
    def causes(self) -> dict[str, int]:
        """Messages lost, by cause (the avoidable sub-counts left out)."""
        return {c: n for c, n in self.lost.items() if not c.startswith(AVOIDABLE)}

    @property
    def avoidable(self) -> dict[str, int]:
        """Of the losses, those sent on a port the sender's context showed dead, by cause."""
        return {c[len(AVOIDABLE):]: n for c, n in self.lost.items() if c.startswith(AVOIDABLE)}

    @property
    def copies(self) -> int:
        """Copies ``dup`` faults added."""
        return sum(self.duplicated.values())

    def __getitem__(self, cause: str) -> int:
        if cause == "dup" and self.duplicated:
            return -self.copies
        if cause.startswith(AVOIDABLE):
            raise KeyError(cause)
        return self.lost[cause]

    def __iter__(self) -> Iterator[str]:
        yield from self.causes
        if self.duplicated:
            yield "dup"

    def __len__(self) -> int:
        return len(self.causes) + (1 if self.duplicated else 0)

    def to_dict(self) -> dict[str, Any]:
        """The non-empty books, for reports (``lost`` without the avoidable sub-counts)."""
        return {book: dict(d) for book, d in self.books().items() if d}
