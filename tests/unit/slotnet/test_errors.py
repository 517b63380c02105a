"""slotnet's errors cross process boundaries whole."""

from __future__ import annotations

import pickle

import pytest

from slotnet.errors import CapacityError, NodeFailure, SlotnetError, SpecError


@pytest.mark.parametrize("exc", [
    NodeFailure(3, 7, ValueError("bad")), CapacityError(1, 2, 3, 1.5), SpecError("--slots must be >= 1"),
    SlotnetError("plain"),
])
def test_every_error_pickles_whole(exc):
    """Type, message and attributes survive pickling (worker processes send errors back this way)."""
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert {k: repr(v) for k, v in back.__dict__.items()} == {k: repr(v) for k, v in exc.__dict__.items()}
