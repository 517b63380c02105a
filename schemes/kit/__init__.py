"""The scheme kit: what several papers' schemes share, topology-agnostic and public.

A new scheme package imports from here (and from :mod:`slotnet.nodes`), never from a
sibling paper's private modules.

* queues keyed by the node's own ports: :class:`PortQueues` (FIFO), :class:`ClassQueues`
  (priority classes), :class:`LabelQueues` (keyed heaps);
* traffic: :class:`BirthProcess` (Poisson births in continuous time), :func:`available_slot`;
* label priorities: :func:`first_label`, :func:`next_label`, :class:`StreamLabels`;
* statistics: :class:`BatchMeans`, :func:`ratio_ci95`, :func:`t_half_width`;
* observers: :class:`BaseReporter` (with the rule for a one-shot task cut short:
  ``run_ended`` and ``due``, judge only what was owed; and the base of a state that merges
  across shards, with :func:`int_to_wire`, :func:`int_from_wire`, :func:`sum_columns`), :class:`BroadcastReporter`
  (exactly-once, reception and broadcast delay, Q, M), :class:`UnicastReporter` (delay,
  hops, Q, conservation);
* nodes: :class:`BroadcastNode` (births, first receptions, the step event, non-idling step end),
  with :func:`births_choice` (its births' declared Poisson count per slot);
* checks that come with the reporters (:mod:`._checks`): :class:`PathCheck` (unicasts delivered
  at their destination, hops within the topology's bounds, shortest paths where declared),
  :class:`BirthCheck`, :class:`Liveness`, :class:`OrderCheck` with the node side's
  :class:`ServiceOrder` (a declared service order, checked by the queue); :class:`HopWitness`
  (the observer's own hop count of a followed packet, its declared route shape and FIFO
  order) and :class:`FifoOrder` (a queue declared first come, first served);
* Little's law on the sample path (:mod:`._little`): :class:`LittlesLaw` holds the queue a
  node reports against its queue's :class:`Residence` ledger of entry stamps (kept by the
  kit's queues, and by a node's own queue that stamps its packets);
* :mod:`.portable`: sums of products, a linear solve and ``exp`` with the same bits on every
  machine, for analytic models (numpy's BLAS and vector kernels round by processor).
"""

from . import portable
from ._births import BirthProcess, available_slot
from ._broadcast_node import INCARNATION_SHIFT, BirthRate, BroadcastNode, Forwarding, births_choice, first_seq
from ._broadcast_reporter import STEP_FIELDS, BroadcastReporter, StepEvent
from ._checks import (
    CHECK_EVENTS,
    HOP_EVENTS,
    ROUTES,
    BirthCheck,
    Book,
    FifoOrder,
    HopWitness,
    Liveness,
    OrderCheck,
    PathCheck,
    ServiceOrder,
    bipartite,
    eccentricity,
)
from ._completion import parked_when_done
from ._labels import StreamLabels, first_label, next_label
from ._little import RESIDENCE_EVENTS, LittlesLaw, Residence
from ._queues import ClassQueues, LabelQueues, PortQueues, port_indices
from ._reporter import BaseReporter, int_from_wire, int_to_wire, split_dup, sum_columns
from ._stats import T_975, BatchMeans, WindowBatches, ratio_ci95, t_half_width
from ._unicast_reporter import UNICAST_EVENTS, UnicastReporter

__all__ = [
    "CHECK_EVENTS",
    "HOP_EVENTS",
    "INCARNATION_SHIFT",
    "RESIDENCE_EVENTS",
    "ROUTES",
    "STEP_FIELDS",
    "T_975",
    "UNICAST_EVENTS",
    "BaseReporter",
    "BatchMeans",
    "BirthCheck",
    "BirthProcess",
    "Book",
    "BirthRate",
    "BroadcastNode",
    "FifoOrder",
    "BroadcastReporter",
    "ClassQueues",
    "Forwarding",
    "HopWitness",
    "LabelQueues",
    "LittlesLaw",
    "Liveness",
    "OrderCheck",
    "PathCheck",
    "PortQueues",
    "Residence",
    "ServiceOrder",
    "StepEvent",
    "StreamLabels",
    "UnicastReporter",
    "WindowBatches",
    "available_slot",
    "bipartite",
    "births_choice",
    "eccentricity",
    "first_label",
    "first_seq",
    "int_from_wire",
    "int_to_wire",
    "parked_when_done",
    "next_label",
    "port_indices",
    "portable",
    "ratio_ci95",
    "split_dup",
    "sum_columns",
    "t_half_width",
]
