"""The fabric: topologies, links, the slot clock, the wire codec, transports, faults."""

from ._clock import SlotClock
from ._codec import decode, encode
from ._errors import CapacityError, FabricError, FaultSpecError, SlotnetError, TopologyError
from ._faults import FaultEvent, FaultSchedule, LossWindow, loss_draw
from ._topology import Hypercube, Mesh, Port, Topology, Torus, parse_topology
from ._transport import InProcessFabric, LostCallback, Outlet

__all__ = [
    "CapacityError",
    "FabricError",
    "FaultEvent",
    "FaultSchedule",
    "FaultSpecError",
    "Hypercube",
    "InProcessFabric",
    "LossWindow",
    "LostCallback",
    "Mesh",
    "Outlet",
    "Port",
    "SlotClock",
    "SlotnetError",
    "Topology",
    "TopologyError",
    "Torus",
    "decode",
    "encode",
    "loss_draw",
    "parse_topology",
]
