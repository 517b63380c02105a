"""The watchdog's pieces (``engine/_watchdog.py``): no watchdog without a limit, a debugger
is never a hog, and the node a looping frame belongs to."""

from __future__ import annotations

import sys

from slotnet.orchestrator.engine._watchdog import _debugging, _node_of, _where, watching


def _frame_in(filename: str, code: str = "import sys\nframe = sys._getframe()") -> object:
    """A frame whose code claims to live in ``filename``."""
    ns: dict[str, object] = {}
    exec(compile(code, filename, "exec"), ns)
    return ns["frame"]


def test_no_limit_no_watchdog():
    """watching(None, ...) runs the body with no watchdog at all."""
    with watching(None, object()) as dog:
        assert dog is None


def test_a_debugger_frame_is_never_a_hog():
    """A stack that passes through bdb.py or pdb.py is a debugger stopped in a node; any other is not."""
    assert _debugging(_frame_in("/usr/lib/python3/bdb.py"))
    assert _debugging(_frame_in("/usr/lib/python3/pdb.py"))
    assert not _debugging(sys._getframe())
    assert not _debugging(None)


def test_the_node_of_a_frame_is_node_mains_v():
    """The node of a running frame is the v of the node_main frame below it (None without one)."""
    ns: dict[str, object] = {}
    exec(compile("import sys\ndef node_main(v):\n    return inner()\ndef inner():\n    return sys._getframe()\n",
                 "engine.py", "exec"), ns)
    frame = ns["node_main"](7)  # type: ignore[operator]
    assert _node_of(frame) == 7
    assert _node_of(sys._getframe()) is None


def test_where_names_the_innermost_user_frame():
    """Of a stack, the innermost frame outside slotnet, Trio and the stdlib is the one named."""
    here = sys._getframe()
    lib = _frame_in(sys.modules["json"].__file__)  # a stdlib frame, inner to this one
    got, line = _where([here, lib]), here.f_lineno  # type: ignore[list-item]  # (a live frame: the line running)
    assert got is not None and got.endswith(f"test_watchdog.py:{line} in test_where_names_the_innermost_user_frame")
