"""The core of :mod:`slotnet.schemes.kit.properties` (where a scheme imports it from; the orchestrator
imports this module, never the kit). See that module for the whole story."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "Tally",
    "arrivals",
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
    "SlotView",
    "Violation",
    "WithinHops",
]


class Tally:
    """How a check keeps its violations, for the kit's invariants (:class:`slotnet.schemes.kit.Book`)
    and the stated properties alike: how many were ``checked``, how many failed (``count``),
    and the first, by ``order`` (the same whatever order a slot's violations come in).

    Example:
        >>> t = Tally(order=lambda v: v[0])
        >>> t.add((5, "late")); t.add((2, "early"))
        >>> t.count, t.first
        (2, (2, 'early'))
    """

    __slots__ = ("checked", "count", "first", "_order")

    def __init__(self, order: Callable[[Any], Any]) -> None:
        self.checked = 0
        self.count = 0
        self.first: Any = None
        self._order = order

    def add(self, violation: Any) -> None:
        """Count a violation; keep it if it is the first so far."""
        self.count += 1
        if self.first is None or self._order(violation) < self._order(self.first):
            self.first = violation

    def shard_state(self) -> tuple[int, int, Any]:
        """``(checked, count, first)``: what another tally merges (:meth:`merge_shards`)."""
        return self.checked, self.count, self.first

    def merge_shards(self, states: Sequence[Sequence[Any]]) -> None:
        """Add other tallies' :meth:`shard_state` to this one: the counts add up, and the first
        is the first of them all by ``order``, as if every violation had come here.

        Example:
            >>> a, b = Tally(order=lambda v: v[0]), Tally(order=lambda v: v[0])
            >>> a.add((5, "late")); b.add((2, "early")); b.checked = 7
            >>> t = Tally(order=lambda v: v[0])
            >>> t.merge_shards([a.shard_state(), b.shard_state()])
            >>> t.checked, t.count, t.first
            (7, 2, (2, 'early'))
        """
        for checked, count, first in states:
            self.checked += checked
            self.count += count
            if first is not None and (self.first is None or self._order(first) < self._order(self.first)):
                self.first = first


class Event(NamedTuple):
    """One event a node recorded: ``ctx.record(kind, *values)`` at ``node`` in ``slot``."""

    slot: int
    node: int
    kind: str
    values: tuple[Any, ...]


class Sent(NamedTuple):
    """One message the observer saw leave ``sender`` on ``port`` towards ``receiver`` in ``slot``
    (``seq``: its number among every send of the run, in the order they were made)."""

    seq: int
    slot: int
    sender: int
    port: int
    receiver: int
    message: Any


class Received(NamedTuple):
    """One message a node received: handed to ``node`` on ``in_port`` in ``slot``; ``sent`` is
    the send it came from (None: a copy a ``dup`` fault added, or a send the observer did not see)."""

    slot: int
    node: int
    in_port: int
    message: Any
    sent: Sent | None


class Lost(NamedTuple):
    """One message a fault destroyed (``cause``: the fault ledger's, e.g. ``link_down``, ``node_down``)."""

    slot: int
    sender: int
    port: int
    receiver: int
    message: Any
    cause: str


@dataclass(frozen=True)
class Violation:
    """What shows that a property failed: the first slot, the nodes, the events, a sentence.

    ``replay`` is filled in by the orchestrator: the ``slotnet run`` command that replays the run.
    """

    property: str
    slot: int
    nodes: tuple[int, ...]
    problem: str
    events: tuple[Any, ...] = ()
    replay: str = ""

    def key(self) -> tuple[int, tuple[int, ...], str]:
        """The order in which violations are first: slot, then nodes, then the problem."""
        return self.slot, self.nodes, self.problem

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"property": self.property, "slot": self.slot, "nodes": list(self.nodes),
                               "problem": self.problem, "events": [_event_dict(e) for e in self.events]}
        if self.replay:
            out["replay"] = self.replay
        return out


def _event_dict(e: Any) -> Any:
    if isinstance(e, Event):
        return {"slot": e.slot, "node": e.node, "kind": e.kind, "values": list(e.values)}
    if isinstance(e, Sent):
        return {"slot": e.slot, "kind": "sent", "from": e.sender, "port": e.port, "to": e.receiver,
                "message": e.message}
    if isinstance(e, Received):
        return {"slot": e.slot, "kind": "received", "node": e.node, "port": e.in_port, "message": e.message}
    if isinstance(e, Lost):
        return {"slot": e.slot, "kind": "lost", "from": e.sender, "port": e.port, "to": e.receiver,
                "message": e.message, "cause": e.cause}
    return e


@dataclass
class SlotView:
    """What a safety property sees when a slot closes (read-only: build nothing on it)."""

    slot: int
    #: the events the nodes recorded in this slot, in node order
    events: Sequence[Event]
    #: node -> its view (``Node.view()``), for every node up and holding a node object now
    views: Mapping[int, Mapping[str, Any]]
    #: the nodes up now (not crashed)
    alive: frozenset[int]
    #: the messages sent in this slot, and received in it (message properties' record)
    sent: Sequence[Sent] = ()
    received: Sequence[Received] = ()
    #: every message sent and neither received nor lost yet, after this slot
    in_flight: Sequence[Sent] = ()
    #: the messages faults destroyed in this slot
    lost: Sequence[Lost] = ()


@dataclass
class EndView:
    """What an end property sees once the run is over."""

    #: the run's last slot
    slot: int
    #: every event of the run, in slot then node order
    events: Sequence[Event]
    #: the nodes up at the end, and the nodes that ever crashed
    alive: frozenset[int]
    crashed: frozenset[int]
    #: whether the task completed (a one-shot task), and whether the schedule held a fault
    complete: bool
    faults: bool
    #: node -> its view at the end (nodes up and holding a node object)
    views: Mapping[int, Mapping[str, Any]]
    #: the observer's record of messages (empty unless a message property asked for it)
    sent: Sequence[Sent] = ()
    received: Sequence[Received] = ()
    lost: Sequence[Lost] = ()
    in_flight: Sequence[Sent] = ()
    #: the run's topology (``distance``, ``neighbour``, ``n_nodes``)
    topology: Any = None

    def of_kind(self, kind: str) -> list[Event]:
        """The events of one kind."""
        return [e for e in self.events if e.kind == kind]


@dataclass
class Property:
    """A property of a run. Subclass it, or use :class:`Safety`/:class:`AtEnd` with a function.

    ``check_slot`` is called at every slot close, ``check_end`` once at the end; each returns
    the violations it finds (an iterable of :class:`Violation`, or None). ``needs``: what the
    property reads -- ``"views"`` (the nodes' ``view()`` each slot), ``"messages"`` (the
    record of sends and receptions; costs a call per message) -- so that a run pays only for
    what its properties read. ``events``: event kinds the property reads that the scheme's
    reporter does not handle (declared here so that nodes may record them: ``kind -> fields``).
    """

    name: str
    needs: frozenset[str] = field(default=frozenset(), kw_only=True)
    events: Mapping[str, tuple[str, ...]] = field(default_factory=dict, kw_only=True)
    #: one line saying what the property asserts (shown in reports)
    doc: str = field(default="", kw_only=True)

    def check_slot(self, view: SlotView) -> Iterable[Violation] | None:
        return None

    def check_end(self, view: EndView) -> Iterable[Violation] | None:
        return None

    def violation(self, slot: int, nodes: Iterable[int], problem: str, events: Iterable[Any] = ()) -> Violation:
        """A violation of this property (nodes sorted, events kept in order)."""
        return Violation(self.name, slot, tuple(sorted(set(nodes))), problem, tuple(events))


def _as_violations(prop: Property, slot: int, got: Any) -> list[Violation]:
    """What a user's predicate returned, as violations: None/True/"" -- none; a string -- one
    at no node; ``(nodes, problem)`` or ``(nodes, problem, events)``; a Violation; or a list of those."""
    if got is None or got is True or got == "":
        return []
    if got is False:
        return [prop.violation(slot, (), f"{prop.name} does not hold")]
    if isinstance(got, Violation):
        return [got]
    if isinstance(got, str):
        return [prop.violation(slot, (), got)]
    if isinstance(got, tuple) and len(got) in (2, 3) and isinstance(got[1], str):
        return [prop.violation(slot, got[0], got[1], got[2] if len(got) == 3 else ())]
    out: list[Violation] = []
    for item in got:
        out.extend(_as_violations(prop, slot, item))
    return out


@dataclass
class Safety(Property):
    """A safety property of your own: ``predicate(view: SlotView)`` at every slot close.

    It returns None (holds) or the problem: a sentence, ``(nodes, sentence)``,
    ``(nodes, sentence, events)`` or a list of those. The view holds the nodes' views; pass
    ``needs=frozenset({"messages"})`` for its record of messages too.

    Example:
        >>> p = Safety("no_self_send", lambda v: None)
        >>> p.check_slot(SlotView(0, (), {}, frozenset()))
        []
    """

    predicate: Callable[[SlotView], Any] = field(default=lambda v: None)

    def __post_init__(self) -> None:
        self.needs = self.needs | {"views"}  # a safety property reads the nodes' views (say "messages" too if it reads them)

    def check_slot(self, view: SlotView) -> list[Violation]:
        return _as_violations(self, view.slot, self.predicate(view))


@dataclass
class AtEnd(Property):
    """A property of your own judged once, at the end: ``predicate(view: EndView)`` returns as for :class:`Safety`."""

    predicate: Callable[[EndView], Any] = field(default=lambda v: None)

    def check_end(self, view: EndView) -> list[Violation]:
        return _as_violations(self, view.slot, self.predicate(view))


@dataclass
class AtMostOne(Property):
    """At every slot close, at most one node's view has a true ``key`` ("at most one node holds the token")."""

    key: str = ""

    def __post_init__(self) -> None:
        self.needs = self.needs | {"views"}

    def check_slot(self, view: SlotView) -> list[Violation]:
        holders = sorted(v for v, state in view.views.items() if state.get(self.key))
        if len(holders) <= 1:
            return []
        return [self.violation(view.slot, holders, f"{len(holders)} nodes ({', '.join(map(str, holders))}) hold "
                                                   f"{self.key!r} at the end of slot {view.slot}; at most one may",
                               [e for e in view.events if e.node in holders])]


@dataclass
class Conserved(Property):
    """At every slot close, the nodes whose view has a true ``key`` plus the messages in flight
    that ``carries(message)`` says carry it number exactly ``count`` ("one token, held or on
    its way": neither lost nor duplicated). A message a fault destroyed is gone: the property
    then fails (a scheme that does not regenerate it has lost it)."""

    key: str = ""
    carries: Callable[[Any], bool] = field(default=lambda m: False)
    count: int = 1

    def __post_init__(self) -> None:
        self.needs = self.needs | {"views", "messages"}

    def check_slot(self, view: SlotView) -> list[Violation]:
        holders = sorted(v for v, state in view.views.items() if state.get(self.key))
        moving = [s for s in view.in_flight if self.carries(s.message)]
        total = len(holders) + len(moving)
        if total == self.count:
            return []
        gone = [x for x in view.lost if self.carries(x.message)]
        where = ", ".join([f"held at {v}" for v in holders] + [f"{s.sender}->{s.receiver} in flight" for s in moving]
                          + [f"{x.sender}->{x.receiver} lost ({x.cause})" for x in gone])
        return [self.violation(view.slot, [*holders, *(s.receiver for s in moving), *(x.receiver for x in gone)],
                               f"{total} {self.key!r} at the end of slot {view.slot} ({where or 'none anywhere'}); "
                               f"there must be exactly {self.count}",
                               [*[e for e in view.events if e.node in holders], *moving, *gone,
                                *[r for r in view.received if self.carries(r.message)]])]


@dataclass
class CountIs(Property):
    """At the end, the run holds exactly ``count`` events of ``kind`` ("the token went round r
    times": a ``lap`` event per round). ``count`` may be a function of the :class:`EndView`.
    Judged only for a run that completed (a task cut short owes less)."""

    kind: str = ""
    count: int | Callable[[EndView], int] = 0

    def check_end(self, view: EndView) -> list[Violation]:
        if not view.complete:
            return []
        want = self.count(view) if callable(self.count) else self.count
        got = view.of_kind(self.kind)
        if len(got) == want:
            return []
        shown = got[want:want + 5] if len(got) > want else got[-5:]
        return [self.violation(got[want].slot if len(got) > want else view.slot,
                               [e.node for e in shown],
                               f"{len(got)} {self.kind!r} events where {want} are due", shown)]


@dataclass
class EveryLiveNodeGot(Property):
    """At the end, every node up then recorded ``got`` for every item some node recorded
    ``made`` for ("every live node received every broadcast"). An item is named by the event's
    values (or the first ``fields`` of them); the node that made an item need not record ``got`` it.
    Judged only for a run that completed."""

    made: str = ""
    got: str = ""
    fields: int | None = None

    def _item(self, e: Event) -> tuple[Any, ...]:
        return tuple(e.values[:self.fields] if self.fields is not None else e.values)

    def check_end(self, view: EndView) -> list[Violation]:
        if not view.complete:
            return []
        made: dict[tuple[Any, ...], Event] = {}
        for e in view.of_kind(self.made):
            made.setdefault(self._item(e), e)
        have: set[tuple[int, tuple[Any, ...]]] = {(e.node, self._item(e)) for e in view.of_kind(self.got)}
        out = []
        for item, origin in made.items():
            missing = sorted(v for v in view.alive if v != origin.node and (v, item) not in have)
            if missing:
                out.append(self.violation(view.slot, missing, f"item {list(item)} made at node {origin.node} in slot "
                                                              f"{origin.slot} never reached live node(s) "
                                                              f"{', '.join(map(str, missing[:10]))}"
                                                              + (" ..." if len(missing) > 10 else ""), [origin]))
        return out


@dataclass
class MessageProperty(Property):
    """A property over the observer's record of messages. ``key(message)`` names the
    end-to-end message a send carries (None: not one of them, e.g. a control message);
    ``dest(message)``, its destination node, where the property needs one."""

    key: Callable[[Any], Hashable | None] = field(default=lambda m: None)
    dest: Callable[[Any], int] | None = None

    def __post_init__(self) -> None:
        self.needs = self.needs | {"messages"}

    def journeys(self, view: EndView) -> dict[Hashable, list[Any]]:
        """key -> its sends, receptions and losses, in the order they happened."""
        out: dict[Hashable, list[Any]] = {}
        records: list[Any] = [*view.sent, *view.received, *view.lost]
        for rec in sorted(records, key=_when):
            k = self.key(rec.message)
            if k is not None:
                out.setdefault(k, []).append(rec)
        return out


def _when(rec: Any) -> tuple[int, int, int]:
    # within a slot: receptions (made at the start of the slot), then losses, then sends
    order = 0 if isinstance(rec, Received) else 1 if isinstance(rec, Lost) else 2
    return rec.slot, order, rec.seq if isinstance(rec, Sent) else 0


def arrivals(j: Sequence[Any], dest: int) -> list[Received]:
    """The receptions of a journey ``j`` (:meth:`MessageProperty.journeys`) at ``dest``."""
    return [r for r in j if isinstance(r, Received) and r.node == dest]


@dataclass
class Delivered(MessageProperty):
    """Every message (by ``key``) reached its destination, unless a fault destroyed it or the
    run was cut short with it on its way. Judged at the end."""

    def check_end(self, view: EndView) -> list[Violation]:
        assert self.dest is not None, f"{self.name}: Delivered needs dest"
        out = []
        for k, j in self.journeys(view).items():
            dest = self.dest(j[0].message)
            if arrivals(j, dest) or any(isinstance(r, Lost) for r in j):
                continue
            if not view.complete and any(s.message == j[-1].message for s in view.in_flight):
                continue
            last = j[-1]
            at = last.node if isinstance(last, Received) else last.receiver
            out.append(self.violation(last.slot, [at, dest], f"message {k!r} bound for node {dest} never reached "
                                                            f"it (last seen {_said(last)})", j[-3:]))
        return out


def _said(rec: Any) -> str:
    if isinstance(rec, Received):
        return f"received at node {rec.node} in slot {rec.slot}"
    if isinstance(rec, Sent):
        return f"sent {rec.sender}->{rec.receiver} in slot {rec.slot}"
    return f"lost {rec.sender}->{rec.receiver} in slot {rec.slot} ({rec.cause})"


@dataclass
class ExactlyOnce(MessageProperty):
    """Every message (by ``key``) reached its destination at most once (and, with
    ``at_least`` true, at least once, as :class:`Delivered`). Copies a ``dup`` fault added
    are the fault's, not the scheme's: they are not counted."""

    at_least: bool = False

    def check_end(self, view: EndView) -> list[Violation]:
        assert self.dest is not None, f"{self.name}: ExactlyOnce needs dest"
        out = []
        for k, j in self.journeys(view).items():
            dest = self.dest(j[0].message)
            got = [r for r in arrivals(j, dest) if r.sent is not None]
            if len(got) > 1:
                out.append(self.violation(got[1].slot, [dest], f"message {k!r} reached node {dest} {len(got)} times "
                                                               f"(slots {', '.join(str(r.slot) for r in got[:5])})",
                                          got[:3]))
        if self.at_least:
            out += Delivered(self.name, key=self.key, dest=self.dest).check_end(view)
        return out


@dataclass
class WithinHops(MessageProperty):
    """Every message (by ``key``) was sent at most ``hops`` times (``hops`` may be a function
    of the message and the topology, e.g. its distance plus a slack). Judged at the end."""

    hops: int | Callable[[Any, Any], int] = 0

    def check_end(self, view: EndView) -> list[Violation]:
        out = []
        for k, j in self.journeys(view).items():
            sends = [r for r in j if isinstance(r, Sent)]
            bound = self.hops(j[0].message, view.topology) if callable(self.hops) else self.hops
            if len(sends) > bound:
                over = sends[bound]
                out.append(self.violation(over.slot, [over.sender], f"message {k!r} took {len(sends)} hops, more "
                                                                    f"than {bound}", sends[:bound + 1][-3:]))
        return out


@dataclass
class FifoPerLink(Property):
    """Every directed link hands its messages over in the order they were sent on it. A
    ``delay`` fault may reorder a link (its doing, not the scheme's): judged in fault-free runs."""

    def __post_init__(self) -> None:
        self.needs = self.needs | {"messages"}

    def check_end(self, view: EndView) -> list[Violation]:
        if view.faults:
            return []
        last: dict[tuple[int, int], Received] = {}
        out = []
        for r in sorted(view.received, key=lambda r: r.slot):
            if r.sent is None:
                continue
            link = (r.sent.sender, r.sent.port)
            prev = last.get(link)
            if prev is not None and prev.sent is not None and r.sent.seq < prev.sent.seq:
                out.append(self.violation(r.slot, [r.sent.sender, r.node],
                                          f"link {r.sent.sender}->{r.node} delivered a message sent in slot "
                                          f"{r.sent.slot} after one sent later, in slot {prev.sent.slot}", [prev, r]))
            last[link] = r
        return out
