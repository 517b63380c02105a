"""slotnet's errors cross process boundaries whole."""

from __future__ import annotations

import pickle

import pytest

from slotnet.errors import CapacityError, ForeignAwait, NodeFailure, NodeTimeout, SlotnetError, SpecError


@pytest.mark.parametrize("exc", [
    NodeFailure(3, 7, ValueError("bad")), CapacityError(1, 2, 3, 1.5), SpecError("--slots must be >= 1"),
    SlotnetError("plain"), NodeTimeout(2, 1, "node 2 held slot 1"), NodeTimeout(None, 5, "no node"),
    ForeignAwait(2, 1, "node 2 awaited trio.sleep"),
])
def test_every_error_pickles_whole(exc):
    """Type, message and attributes survive pickling (worker processes send errors back this way)."""
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert {k: repr(v) for k, v in back.__dict__.items()} == {k: repr(v) for k, v in exc.__dict__.items()}


@pytest.mark.parametrize(("exc", "kind"), [
    (NodeTimeout(2, 1, "node 2 held slot 1"), "node_timeout"), (NodeTimeout(None, 5, "no node"), "node_timeout"),
    (ForeignAwait(3, 4, "node 3 awaited trio.sleep"), "foreign_await"),
])
def test_held_node_errors_keep_their_json_across_pickling(exc, kind):
    """A NodeTimeout or ForeignAwait gives the same --json error object, of its own kind, before and after pickling."""
    want = {"kind": kind, "message": str(exc), "node": exc.node, "slot": exc.slot, "traceback": ""}
    assert exc.to_dict() == want
    assert pickle.loads(pickle.dumps(exc)).to_dict() == want
