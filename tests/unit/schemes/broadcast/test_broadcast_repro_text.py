"""`slotnet repro stamoulis`'s description states the run lengths its runs use."""

from __future__ import annotations

from slotnet.schemes import EXPERIMENTS
from slotnet.schemes.broadcast import repro as bcast_repro


def _recorded(quick: bool) -> list[dict]:
    asked: list[dict] = []

    def runner(requests):
        asked.extend(requests)
        return [{"mean_broadcast_delay": 10.0, "mean_broadcast_delay_ci95": 0.1, "mean_queue_per_node": 1.0,
                 "mean_queue_per_node_ci95": 0.1, "mean_broadcast_delay_period_end": 10.0,
                 "mean_broadcast_delay_period_end_ci95": 0.1, "_theory": {}} for _ in requests]

    bcast_repro.stamoulis(runner, seed=1, quick=quick)
    return asked


def test_the_description_gives_the_measured_slots_of_the_runs():
    """Table 1's runs and the checks' runs measure what the text says, with and without --quick."""
    doc = EXPERIMENTS["stamoulis"].doc
    for quick in (True, False):
        asked = _recorded(quick)
        table = {r["slots"] - r["warmup"] for r in asked if r["topology"] == "hypercube:8"}
        checks = {r["slots"] - r["warmup"] for r in asked if r["topology"] != "hypercube:8"}
        assert len(table) == 1 and len(checks) == 1
        (t,), (c,) = table, checks
        if quick:
            assert f"{t:,} with --quick" in doc and f"({c:,} with --quick)" in doc
        else:
            assert f"runs of {t:,} measured slots" in doc and f"one run of {c:,} measured slots" in doc
    assert "5,000 measured slots" in doc and "1,000 with --quick" in doc  # the case: quick runs measure 1,000
