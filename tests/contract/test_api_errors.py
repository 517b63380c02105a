"""The Python API refuses a malformed call with a SlotnetError that says what is expected."""

from __future__ import annotations

import dataclasses

import pytest

import slotnet


@pytest.mark.parametrize(("make", "says"), [
    (lambda: slotnet.RunSpec(load={"offered": 1.0}), "RunSpec needs a scheme"),
    (lambda: slotnet.RunSpec("deflection", load={"offered": 1.0}), "RunSpec needs a topology"),
    (lambda: slotnet.RunSpec("deflection", "hypercube:3", load=0.5), "load must be a mapping of name to value, got float 0.5"),
    (lambda: slotnet.RunSpec("deflection", "hypercube:3", params=["order=random"]), "params must be a mapping"),
    (lambda: slotnet.RunSpec("deflection", 6), "topology must be a string"),
])
def test_a_malformed_runspec_is_a_spec_error(make, says):
    """RunSpec checks its fields' types on creation and names the one that is wrong."""
    with pytest.raises(slotnet.SpecError, match=says):
        make()


def test_run_takes_a_runspec():
    """slotnet.run('deflection') is refused with the shape of a correct call, not an AttributeError."""
    with pytest.raises(slotnet.SpecError, match=r"run\(\) takes a RunSpec.*got str 'deflection'"):
        slotnet.run("deflection")  # type: ignore[arg-type]


def test_register_refuses_a_taken_name_unless_asked():
    """register() does not silently replace a built-in scheme; replace=True does."""
    star = slotnet.get_scheme("star")
    copy = dataclasses.replace(star, summary="a copy")
    with pytest.raises(slotnet.SchemeError, match="'star' is taken.*replace=True"):
        slotnet.register(copy)
    assert slotnet.get_scheme("star") is star
    try:
        assert slotnet.register(copy, replace=True) is copy
        assert slotnet.get_scheme("star") is copy
    finally:
        slotnet.register(star, replace=True)
    assert slotnet.register(star) is star  # the same record again is no replacement


def test_register_takes_a_scheme_record():
    """register() with something that is no Scheme says so."""
    with pytest.raises(slotnet.SchemeError, match="takes a Scheme record"):
        slotnet.register("star")  # type: ignore[arg-type]
