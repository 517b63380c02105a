"""What ``import slotnet`` costs: no offline tool is loaded until it is asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_PROBE = """
import json, sys
import slotnet
print(json.dumps(sorted(m for m in sys.modules if m.startswith("slotnet."))))
"""


def _loaded_after(code: str) -> list[str]:
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_import_slotnet_loads_no_offline_tool() -> None:
    """A fresh ``import slotnet`` loads no ``slotnet.orchestrator.tools`` module (nor the command line), yet the run path."""
    loaded = _loaded_after(_PROBE)
    assert "slotnet.orchestrator._run" in loaded and "slotnet.orchestrator.engine._spec" in loaded
    assert [m for m in loaded if m.startswith(("slotnet.orchestrator.tools", "slotnet.orchestrator.cli"))] == []


def test_the_lazy_names_are_the_tools_functions() -> None:
    """``slotnet.orchestrator.read_trace``, ``timeline`` and ``to_perfetto`` load their tool on first use and are its functions."""
    import slotnet.orchestrator as orchestrator
    from slotnet.orchestrator.tools import _perfetto, _trace_query

    assert orchestrator.read_trace is _trace_query.read_trace
    assert orchestrator.timeline is _trace_query.timeline
    assert orchestrator.to_perfetto is _perfetto.to_perfetto
    assert {"read_trace", "timeline", "to_perfetto"} <= set(orchestrator.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    """A name the package does not have raises AttributeError naming it (``hasattr`` and ``from ... import`` rely on it)."""
    import slotnet.orchestrator as orchestrator

    assert not hasattr(orchestrator, "no_such_tool")
    try:
        orchestrator.no_such_tool  # noqa: B018
    except AttributeError as exc:
        assert "no_such_tool" in str(exc)
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("no AttributeError")
