"""A known bug, pinned so that it is fixed, not forgotten: STAR's unicast books under dup faults.

Found by ``tests/contract/test_faults_fuzz_schemes.py`` (random mixed fault schedules): with
``dup=0.5`` alone, a 4x4 torus, λ_u = 0.3, the books are one packet short at slots 40 to 42 and
close again by slot 45, so some unicast (or copy) sits where the end-of-run accounting does
not look. Present at 27abe7b already; not yet explained.
"""

from __future__ import annotations

import pytest

from slotnet import RunSpec, run


@pytest.mark.xfail(strict=True, reason="STAR's unicast conservation misses one packet at some end slots under dup faults")
def test_star_unicast_books_close_under_dup_faults():
    """Every unicast born is delivered, in flight, held or lost by a recorded cause, dup copies counted."""
    r = run(RunSpec("star", "torus:4x4", params={"lam_unicast": "0.3", "discipline": "fcfs"}, load={"rho": 0.6},
                    slots=40, seed=1, faults=["dup=0.5"]))
    assert r.invariants["unicast_conservation"]["ok"], r.invariants["unicast_conservation"]
