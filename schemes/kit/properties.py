"""Properties a scheme states: what *correct* means for it, judged by the observer.

A scheme lists its properties in its record (``Scheme.properties``: ``setup -> [Property]``).
The orchestrator, never a node, judges them from what it sees itself:

* every event the nodes record (``ctx.record``), slot by slot;
* a small read-only *view* of each node's state, where the node rule exposes one: a method
  ``view(self) -> Mapping[str, Any]`` on the :class:`~slotnet.nodes.Node` (e.g.
  ``{"token": self.has_token}``), read at the close of every slot, after every node has
  parked; the mapping is copied, so a property cannot change the node;
* its own record of every message sent (sender, port, receiver, message) and of every
  message a node received, and of every message a fault destroyed -- never what a node
  says it sent.

Three kinds of property:

* **safety**, judged at the close of every slot over a :class:`SlotView` (the slot's events,
  sends, receptions and the nodes' views): :class:`Safety` (your own predicate),
  :class:`AtMostOne`, :class:`Conserved`;
* **at the end**, over an :class:`EndView` (every event of the run, the live nodes, the
  completion): :class:`AtEnd` (your own predicate), :class:`EveryLiveNodeGot`,
  :class:`CountIs`;
* **message** properties over the observer's record of every message (which needs the
  scheme's ``key(message)``, naming the end-to-end message a send carries, and usually its
  ``dest(message)``): :class:`Delivered` (reached its destination), :class:`ExactlyOnce`,
  :class:`WithinHops`, :class:`ShortestPaths`, :class:`FifoPerLink`. Where one is the same
  check as a built-in scheme's, it is that check: :class:`ShortestPaths` is the kit's
  :class:`~slotnet.schemes.kit.PathCheck` (``shortest_paths``), fed from the record.

A property's result is one invariant of the run (``invariants.properties.<name>``): ``ok``,
``checked``, ``violations`` and, for the first violation (smallest slot, then nodes), a
:class:`Violation`: the property, the slot, the nodes, the events that show it, the problem
and the command that replays the run (``slotnet run ... --seed S --fault ...``).

Example (a token ring: at most one node holds the token, and it goes round 3 times):

    >>> props = [AtMostOne("one_token", "token"), CountIs("three_rounds", "lap", 3)]
    >>> [p.name for p in props]
    ['one_token', 'three_rounds']
"""

from .._properties import (
    AtEnd,
    AtMostOne,
    Conserved,
    CountIs,
    Delivered,
    EndView,
    Event,
    EveryLiveNodeGot,
    ExactlyOnce,
    FifoPerLink,
    Lost,
    MessageProperty,
    Property,
    Received,
    Safety,
    Sent,
    SlotView,
    Tally,
    Violation,
    WithinHops,
)
from ._check_properties import ShortestPaths

__all__ = [
    "AtEnd",
    "AtMostOne",
    "Conserved",
    "CountIs",
    "Delivered",
    "EndView",
    "Event",
    "EveryLiveNodeGot",
    "ExactlyOnce",
    "FifoPerLink",
    "Lost",
    "MessageProperty",
    "Property",
    "Received",
    "Safety",
    "Sent",
    "ShortestPaths",
    "SlotView",
    "Tally",
    "Violation",
    "WithinHops",
]
