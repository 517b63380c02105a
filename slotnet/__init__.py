"""slotnet: a slotted, message-passing emulator of interconnection networks.

Every processor is its own Trio task with only local state; neighbours talk only
through msgpack messages on a synchronous, slotted fabric.

Example:
    >>> import slotnet
    >>> result = slotnet.run(slotnet.RunSpec("deflection", "hypercube:4", load={"offered": 0.5},
    ...                                      slots=50, warmup=10, seed=1))
    >>> result.invariants["ok"]
    True
"""

from typing import TYPE_CHECKING, Any

# First: with SLOTNET_PURE_PYTHON=1 it must act before any hot-path module is imported.
from slotnet import _build  # noqa: F401  (installs the pure-Python finder when asked)
from slotnet.errors import NodeFailure, SchemeError, SlotnetError, SpecError
from slotnet.fabric import FaultSchedule, Topology, graph_topology, parse_topology, topology_from
from slotnet.orchestrator import Result, RunSpec, TraceSpec, run, run_async
from slotnet.schemes import SCHEMES, get_scheme, register

if TYPE_CHECKING:
    from slotnet.orchestrator import check

__all__ = [
    "SCHEMES",
    "FaultSchedule",
    "NodeFailure",
    "Result",
    "RunSpec",
    "SchemeError",
    "SlotnetError",
    "SpecError",
    "Topology",
    "TraceSpec",
    "check",
    "get_scheme",
    "graph_topology",
    "parse_topology",
    "register",
    "run",
    "run_async",
    "topology_from",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``slotnet.check`` (an offline tool) is loaded on first use: ``import slotnet`` loads no tool."""
    if name == "check":
        from slotnet.orchestrator import check

        return check
    raise AttributeError(f"module 'slotnet' has no attribute {name!r}")
