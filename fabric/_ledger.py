"""The fault ledger: every message a fault touched, by what happened to it and why.

``lost[cause]`` counts messages destroyed (``link_down``, ``node_down``, ``loss``,
``node_finished``, ...); the other books count messages a fault duplicated, delayed or
corrupted. The ledger reads as a mapping of the lost counts, so a reporter's
conservation check can sum it; the other books are attributes. Invariants receive the
ledger, so a scheme can tell a fault's doing from its own bug.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["FaultLedger"]

_BOOKS = ("lost", "duplicated", "delayed", "corrupted")


class FaultLedger(Mapping[str, int]):
    """Counts of faulted messages; as a mapping, the lost ones by cause."""

    __slots__ = _BOOKS

    def __init__(self) -> None:
        self.lost: dict[str, int] = {}
        self.duplicated: dict[str, int] = {}
        self.delayed: dict[str, int] = {}
        self.corrupted: dict[str, int] = {}

    def add(self, book: str, cause: str, n: int = 1) -> None:
        """Count ``n`` messages in ``book`` (one of lost, duplicated, delayed, corrupted)."""
        d: dict[str, int] = getattr(self, book)
        d[cause] = d.get(cause, 0) + n

    def merge(self, other: FaultLedger) -> None:
        """Add another ledger's counts (ledgers of shards merge exactly)."""
        for book in _BOOKS:
            for cause, n in getattr(other, book).items():
                self.add(book, cause, n)

    def __getitem__(self, cause: str) -> int:
        return self.lost[cause]

    def __iter__(self) -> Iterator[str]:
        return iter(self.lost)

    def __len__(self) -> int:
        return len(self.lost)

    def to_dict(self) -> dict[str, Any]:
        """The non-empty books, for reports."""
        return {book: dict(getattr(self, book)) for book in _BOOKS if getattr(self, book)}
