"""The orchestrator: what runs a spec, in three rooms.

* ``engine/``: run specs, the one-process driver and the network it drives, the observer
  and the slot-close sequence, invariants, stability, the result and its collection, the
  trace writer, memory and GC settings, progress lines;
* ``shard/``: runs spread over worker processes: the coordinator and the shard loop, the
  link between them (MQTT, or in memory), the broker;
* ``tools/``: what reads runs back or runs many of them: trace queries, the Perfetto
  export, diagrams, fault exploration and shrinking, run reports, paper reproductions.

``cli/`` is the ``slotnet`` command; ``_run.py`` picks the one-process driver or the
shard coordinator. The engine imports neither of the other rooms (``tests/test_orchestrator_layers.py``).
The tools named here (``read_trace``, ``timeline``, ``to_perfetto``) load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from slotnet.errors import NodeFailure, SpecError

from ._run import run, run_async
from .engine._driver import in_process
from .engine._result import WALL_CLOCK_FIELDS, Result
from .engine._spec import Prepared, RunSpec, TraceSpec, TransportFactory

if TYPE_CHECKING:
    from .tools._perfetto import to_perfetto
    from .tools._trace_query import read_trace, timeline

#: The offline tools this package names, loaded on first use: ``import slotnet`` loads no tool
#: (tests/contract/test_import_cost.py).
_LAZY = {"to_perfetto": ".tools._perfetto", "read_trace": ".tools._trace_query", "timeline": ".tools._trace_query"}

__all__ = [
    "NodeFailure",
    "Prepared",
    "Result",
    "RunSpec",
    "SpecError",
    "TraceSpec",
    "TransportFactory",
    "WALL_CLOCK_FIELDS",
    "in_process",
    "read_trace",
    "run",
    "run_async",
    "timeline",
    "to_perfetto",
]


def __getattr__(name: str) -> Any:
    """``read_trace``, ``timeline`` and ``to_perfetto``, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
