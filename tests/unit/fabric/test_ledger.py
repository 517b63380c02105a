"""The fault ledger (``fabric/_ledger.py``) unit by unit.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import pytest

from slotnet.fabric import FaultLedger

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
