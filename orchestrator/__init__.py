"""The orchestrator: run specs, the driver, observers, invariants, traces, CLI."""

from ._driver import NodeFailure, run, run_async
from ._result import WALL_CLOCK_FIELDS, Result
from ._spec import LOAD_FLAGS, Prepared, RunSpec, SpecError, TraceSpec
from ._trace import read_trace, timeline, to_perfetto

__all__ = [
    "LOAD_FLAGS",
    "NodeFailure",
    "Prepared",
    "Result",
    "RunSpec",
    "SpecError",
    "TraceSpec",
    "WALL_CLOCK_FIELDS",
    "read_trace",
    "run",
    "run_async",
    "timeline",
    "to_perfetto",
]
