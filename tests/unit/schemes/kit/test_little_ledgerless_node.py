"""``littles_law`` (:class:`slotnet.schemes.kit.LittlesLaw`): a node that reports a queue but keeps no stamps."""

from __future__ import annotations

from slotnet.schemes.kit import LittlesLaw


def _two_nodes() -> dict:
    """Node 0 keeps its ledger (one packet, queued and sent in slot 0); node 1 reports a packet
    queued in slots 0 and 1 but records no ledger at all."""
    law = LittlesLaw(2)
    law.queue(0, 0, 1, 0)
    law.residence(0, 0, 1, 1, 0, 0)
    law.queue(1, 0, 1, 1)
    law.end_slot(0)
    law.queue(1, 1, 1, 1)
    law.end_slot(1)
    return law.invariants()


def test_a_node_that_reports_a_queue_but_keeps_no_stamps_fails_the_check():
    """Other nodes keep ledgers: the one that reports 2 packet-slots with no stamps fails, named, not skipped."""
    out = _two_nodes()
    assert out["judged"] is True
    assert out["ok"] is False and out["violations"] == 1
    assert out["first"]["node"] == 1 and out["first"]["slot"] == 1
    assert "at 2 packet-slots" in out["first"]["problem"] and "add up to 0 slots" in out["first"]["problem"]
    assert (out["queue_area"], out["waits"]) == (3, 1)


def test_a_ledgerless_node_with_an_empty_queue_passes():
    """The same node reporting an empty queue owes no stamps: the check holds."""
    law = LittlesLaw(2)
    law.queue(0, 0, 1, 0)
    law.residence(0, 0, 1, 1, 0, 0)
    law.queue(1, 0, 0, 0)
    law.end_slot(0)
    out = law.invariants()
    assert out["ok"] and out["judged"] and out["violations"] == 0
