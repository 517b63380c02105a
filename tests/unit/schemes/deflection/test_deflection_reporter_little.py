"""Deflection's ``littles_law`` (input queueing) says whether it was judged, as the validator page does."""

from __future__ import annotations

from slotnet import RunSpec, run


def _law(faults: list[str]) -> dict:
    r = run(RunSpec("deflection", "hypercube:4", load={"lam": 1.0}, slots=30, seed=1, faults=faults))
    return r.invariants["littles_law"]


def test_under_faults_unequal_totals_are_reported_unjudged_with_the_reason():
    """Under loss the totals differ (packets lost, waits unknown): ok stands, but judged is false and the reason given."""
    law = _law(["loss=0.3"])
    assert law["queue_area"] != law["waits"]
    assert law["ok"] is True and law["judged"] is False
    assert law["why"].startswith("faults:")


def test_without_faults_the_totals_are_equal_and_judged():
    """A fault-free queueing run: the two totals agree exactly and the check says it judged them."""
    law = _law([])
    assert law["judged"] is True and "why" not in law
    assert law["ok"] and law["queue_area"] == law["waits"] > 0


def test_every_fault_kind_leaves_the_check_unjudged():
    """A crash, a dup or a delay window: the check reports its totals, not judged, whatever they are."""
    for faults in (["crash@5:3"], ["dup=0.2"], ["delay=0.3:2"], ["stall@4:9:2"]):
        law = _law(faults)
        assert law["ok"] is True and law["judged"] is False, faults
        assert law["why"].startswith("faults:"), faults
