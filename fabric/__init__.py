"""The fabric: topologies, links, the slot clock, the wire codec, transports, faults."""

from ._clock import SlotClock
from ._codec import decode, encode
from ._errors import CapacityError, FabricError, FaultSpecError, SlotnetError, TopologyError
from ._faults import (
    DEFAULT_DETECT,
    FAULT_KINDS,
    NOTE_CAUSES,
    Copy,
    FaultEvent,
    FaultKind,
    FaultSchedule,
    FaultTarget,
    Flip,
    Hold,
    Lose,
    LossWindow,
    MessageStage,
    MessageWindow,
    PortTimeline,
    SpanEdge,
    SpanFault,
    Verdict,
    parse_nodes,
    register_fault_kind,
)
from ._graph import AnyNet, Graph
from ._graph_python import graph_topology, topology_from
from ._ledger import AVOIDABLE, FaultLedger
from ._protocol import Delivery, SendSide, Transport
from ._sharded import ShardMap, ShardTransport
from ._topology import KINDS, Hypercube, Mesh, Port, Ring, Topology, Torus, parse_topology
from ._transport import InProcessTransport

__all__ = [
    "AVOIDABLE",
    "KINDS",
    "AnyNet",
    "DEFAULT_DETECT",
    "FAULT_KINDS",
    "NOTE_CAUSES",
    "CapacityError",
    "Copy",
    "Delivery",
    "FabricError",
    "FaultEvent",
    "FaultKind",
    "FaultLedger",
    "FaultSchedule",
    "FaultSpecError",
    "FaultTarget",
    "Flip",
    "Hold",
    "Graph",
    "Hypercube",
    "InProcessTransport",
    "Lose",
    "LossWindow",
    "MessageStage",
    "MessageWindow",
    "Mesh",
    "Port",
    "PortTimeline",
    "Ring",
    "SendSide",
    "ShardMap",
    "ShardTransport",
    "SlotClock",
    "SlotnetError",
    "SpanEdge",
    "SpanFault",
    "Topology",
    "TopologyError",
    "Torus",
    "Transport",
    "Verdict",
    "decode",
    "encode",
    "graph_topology",
    "parse_nodes",
    "parse_topology",
    "register_fault_kind",
    "topology_from",
]
