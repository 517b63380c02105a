"""The orchestrator: run specs, the driver, observers, invariants, traces, CLI."""

from slotnet.errors import NodeFailure, SpecError

from ._driver import in_process, run, run_async
from ._result import WALL_CLOCK_FIELDS, Result
from ._spec import Prepared, RunSpec, TraceSpec, TransportFactory
from ._trace import read_trace, timeline, to_perfetto

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
