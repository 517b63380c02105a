"""STAR's unicast books under dup faults: two copies of one unicast queued at one node are two.

Found by ``tests/contract/test_faults_fuzz_schemes.py`` (random mixed fault schedules): with
``dup=0.5`` alone, a 4x4 torus, λ_u = 0.3, seed 1, the books were one packet short at slots
40 to 42 -- a node's held packets were a set of (origin, seq), so a dup copy queued beside
its original counted once.
"""

from __future__ import annotations

import pytest

from slotnet import RunSpec, run


@pytest.mark.parametrize("slots", [36, 40, 41, 42, 45])
def test_star_unicast_books_close_under_dup_faults(slots):
    """Every unicast born is delivered, in flight, held or lost by a recorded cause, dup copies counted."""
    r = run(RunSpec("star", "torus:4x4", params={"lam_unicast": "0.3", "discipline": "fcfs"}, load={"rho": 0.6},
                    slots=slots, seed=1, faults=["dup=0.5"]))
    assert r.invariants["unicast_conservation"]["ok"], r.invariants["unicast_conservation"]
