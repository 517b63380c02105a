"""The kit's reporter base and argument checks, unit by unit: what mutation testing found unpinned.

``devtools/mutation/run_tests.py`` runs these against the mutants of ``schemes/kit/_reporter.py``
and ``schemes/kit/_validate.py`` (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slotnet.fabric import parse_topology
from slotnet.schemes import Setup
from slotnet.schemes.kit import BaseReporter
from slotnet.schemes.kit._reporter import split_dup
from slotnet.schemes.kit._validate import finite_nonnegative

# ------------------------------------------------------------------ split_dup


def test_split_dup_separates_the_copies_from_the_losses():
    assert split_dup({"loss": 3, "dup": -2}) == ({"loss": 3}, 2)
    assert split_dup({"loss": 3, "node_finished": 1}) == ({"loss": 3, "node_finished": 1}, 0)
    assert split_dup({"dup": -5}) == ({}, 5)
    assert split_dup({}) == ({}, 0)


@given(st.dictionaries(st.sampled_from(["loss", "crash", "node_finished", "dup", "partition"]),
                       st.integers(-50, 50)))
def test_split_dup_keeps_the_ledger_sum(lost):
    """Losses minus copies is the ledger's net sum; ``dup`` never stays among the causes."""
    dropped, copies = split_dup(lost)
    assert "dup" not in dropped
    assert dropped == {c: n for c, n in lost.items() if c != "dup"}
    assert copies == -lost.get("dup", 0)
    assert sum(dropped.values()) - copies == sum(lost.values())


# ------------------------------------------------------------------ BaseReporter defaults


def _setup(slots: int = 50, faults: bool = False) -> Setup:
    return Setup(parse_topology("mesh:4"), {}, {}, slots, 0, 0, faults=faults)


def test_a_run_not_told_how_it_ended_did_all_it_owed():
    """Until run_ended: the last slot is the run's last (slots - 1), the task complete, nothing backlogged."""
    rep = BaseReporter(_setup(50))
    assert rep.run_last_slot == 49 and rep.run_complete is True
    assert rep.backlog() == 0 and rep.lost_messages == 0
    rep.run_ended(7, complete=False)
    assert (rep.run_last_slot, rep.run_complete) == (7, False)


def test_on_lost_counts_losses_but_not_dup_copies():
    rep = BaseReporter(_setup())
    rep.on_lost(3, 0, 1, 1, (0, 0), "dup")
    assert rep.lost_messages == 0
    rep.on_lost(4, 0, 1, 1, (0, 1), "loss")
    rep.on_lost(5, 1, 0, 0, (1, 0), "node_finished")
    assert rep.lost_messages == 2


def test_liveness_is_judged_without_faults_only():
    """A message that reaches a finished node is a violation in a fault-free run, only reported under faults."""
    clean = BaseReporter(_setup(faults=False))
    clean.on_lost(5, 1, 0, 2, (1, 0), "node_finished")
    assert clean.invariants({}, [], []) == {}  # the base has no checks of its own
    live = clean.liveness.invariants()
    assert live["liveness"]["ok"] is False and live["liveness"]["messages_to_finished_nodes"] == 1
    assert live["liveness"]["first"]["node"] == 2
    faulty = BaseReporter(_setup(faults=True))
    faulty.on_lost(5, 1, 0, 2, (1, 0), "node_finished")
    live = faulty.liveness.invariants()["liveness"]
    assert live["ok"] is True and live["messages_to_finished_nodes"] == 1 and "first" not in live


def test_a_setup_without_a_faults_field_is_fault_free():
    """A setup object that predates ``faults`` (no such attribute) gets the fault-free liveness check."""
    setup = SimpleNamespace(topology=parse_topology("mesh:4"), params={}, load={}, slots=20, warmup=0, seed=0)
    rep = BaseReporter(setup)  # type: ignore[arg-type]
    assert rep.liveness.faults is False
    rep.on_lost(5, 1, 0, 2, (1, 0), "node_finished")
    assert rep.liveness.invariants()["liveness"]["ok"] is False


# ------------------------------------------------------------------ finite_nonnegative


@given(st.floats(min_value=0.0, allow_infinity=False, allow_nan=False) | st.integers(0, 10**6))
def test_finite_nonnegative_returns_the_float(value):
    out = finite_nonnegative(value, "rho")
    assert type(out) is float and out == float(value)


def test_zero_is_nonnegative():
    assert finite_nonnegative(0, "rho") == 0.0
    assert finite_nonnegative(0.0, "rho") == 0.0
    assert finite_nonnegative(-0.0, "rho") == 0.0


@pytest.mark.parametrize("value", [-1e-300, -1, -2.5, math.inf, -math.inf, math.nan])
def test_negative_or_not_finite_is_refused(value):
    with pytest.raises(ValueError) as e:
        finite_nonnegative(value, "rho")
    assert str(e.value) == f"rho must be finite and >= 0, got {value!r}"


@given(st.floats(max_value=-1e-300, allow_infinity=False, allow_nan=False))
def test_any_negative_is_refused(value):
    with pytest.raises(ValueError, match=r"^load must be finite and >= 0, got "):
        finite_nonnegative(value, "load")


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_number(value):
    with pytest.raises(TypeError) as e:
        finite_nonnegative(value, "rho")
    assert str(e.value) == f"rho must be a real number, got {value!r}"
    with pytest.raises(KeyError) as k:
        finite_nonnegative(value, "rho", not_a_number=KeyError)
    assert k.value.args == (f"rho must be a real number, got {value!r}",)


@pytest.mark.parametrize("value", ["fast", None, [1.0], object])
def test_what_does_not_convert_is_not_a_number(value):
    with pytest.raises(TypeError) as e:
        finite_nonnegative(value, "rho")
    assert str(e.value) == f"rho must be a real number, got {value!r}"
    assert e.value.__cause__ is None and e.value.__suppress_context__
    with pytest.raises(ValueError) as v:
        finite_nonnegative(value, "load", not_a_number=ValueError)
    assert str(v.value) == f"load must be a real number, got {value!r}"
