"""The observer's judge of a scheme's stated properties and declared random choices.

A :class:`PropertyMonitor` exists only for a scheme that states properties
(``Scheme.properties``) or declares choices (``Scheme.choices``); a run of any other scheme
has none, and nothing in it changes. The monitor

* sees every event the nodes record (it wraps the reporter's handlers; event kinds only a
  property reads are handled by it alone);
* where a property reads messages, sees every send and every reception through each node's
  context (a :class:`~slotnet.nodes.runtime.TracedContext` tap: what the node did, never what
  it says) and every message a fault destroyed, and matches each reception to its send;
* closes every slot after the reporter: reads each live node's ``view()`` where a property
  needs views, and runs the safety properties;
* at the end takes the outcomes each node counted itself (``Node.choice_counts``: a choice
  made every slot, counted in plain ints on the node's side), runs the end and message
  properties and the goodness-of-fit test of each declared choice, and adds ``properties``
  and ``choices`` to the result's invariants.

Every violation names the replay command of its run (:func:`replay_command`).
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from slotnet.errors import SlotnetError, SpecError
from slotnet.fabric import encode
from slotnet.schemes._choices import goodness_of_fit
from slotnet.schemes._properties import (
    EndView,
    Event,
    Lost,
    Property,
    Received,
    Sent,
    SlotView,
    Tally,
    Violation,
)

from ._spec import Prepared, RunSpec

__all__ = ["PropertyMonitor", "replay_command"]

def replay_command(spec: RunSpec, slots_run: int | None = None) -> str:
    """The ``slotnet run`` command line that replays ``spec`` (its faults as ``--fault`` flags)."""
    parts = ["slotnet", "run", spec.scheme, "-t", spec.topology, "--seed", str(spec.seed), "--rng", spec.rng]
    if spec.slots is not None:
        parts += ["--slots", str(spec.slots)]
    if spec.warmup:
        parts += ["--warmup", str(spec.warmup)]
    for k, v in sorted(spec.params.items()):
        parts += ["--param", f"{k}={v}"]
    for k, v in sorted(spec.load.items()):
        parts += [f"--{k}", f"{v:g}" if isinstance(v, float) else str(v)]
    for f in spec.faults.to_list():
        parts += ["--fault", f]
    return " ".join(shlex.quote(p) for p in parts)


class _Book:
    """One property's violations (:class:`~slotnet.schemes._properties.Tally`), judged once per slot or at the end."""

    def __init__(self, prop: Property) -> None:
        self.prop = prop
        self.tally = Tally(Violation.key)

    def add(self, found: Any) -> None:
        self.tally.checked += 1
        for v in found or ():
            self.tally.add(v)

    def result(self, replay: str) -> dict[str, Any]:
        t = self.tally
        out: dict[str, Any] = {"ok": t.count == 0, "checked": t.checked, "violations": t.count}
        if self.prop.doc:
            out["asserts"] = self.prop.doc
        if t.first is not None:
            first = t.first
            out["first"] = Violation(first.property, first.slot, first.nodes, first.problem, first.events,
                                     replay).as_dict()
        return out


def _same(a: Any, b: Any) -> bool:
    return a is b or encode(a) == encode(b)


class PropertyMonitor:
    """The judge of one run's properties and choices (see the module docstring)."""

    def __init__(self, prep: Prepared, reporter_events: Mapping[str, tuple[str, ...]]) -> None:
        scheme = prep.scheme
        self.prep = prep
        self.props: list[Property] = list(scheme.properties(prep.setup)) if scheme.properties else []
        for p in self.props:
            if not isinstance(p, Property):
                raise SlotnetError(f"scheme {scheme.name!r}: properties must be slotnet.schemes.kit.properties."
                                   f"Property objects, not {type(p).__name__}")
        names = [p.name for p in self.props]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise SlotnetError(f"scheme {scheme.name!r}: two properties are called {dup[0]!r}")
        self.dists: dict[str, Any] = dict(scheme.choices(prep.setup)) if scheme.choices else {}
        needs = frozenset().union(*(p.needs for p in self.props)) if self.props else frozenset()
        self.views = "views" in needs
        self.messages = "messages" in needs
        self.own_events: dict[str, tuple[str, ...]] = {}
        for p in self.props:
            for kind, fields in p.events.items():
                if kind not in reporter_events:
                    self.own_events[kind] = tuple(fields)
        self._slot_props = [p for p in self.props if type(p).check_slot is not Property.check_slot]
        self._end_props = [p for p in self.props if type(p).check_end is not Property.check_end]
        self.books = {p.name: _Book(p) for p in self.props}
        self.events: list[Event] = []
        self._slot_events: list[Event] = []
        #: value -> how many times it was chosen, by choice; plain dicts: a node's context adds
        #: to them itself (``NodeContext.record_choice``, compiled with these as C-level dicts)
        self.counts: dict[str, dict[Any, int]] = {name: {} for name in self.dists}
        self.sent: list[Sent] = []
        self.received: list[Received] = []
        self.lost: list[Lost] = []
        self._slot_sent: list[Sent] = []
        self._slot_received: list[Received] = []
        self._slot_lost: list[Lost] = []
        self._pending: dict[tuple[int, int], deque[Sent]] = {}
        self._net: Any = None
        self._nodes_counted = False
        topo = prep.topology
        self._neighbour = topo.neighbour
        self._reverse = topo.reverse_port

    @classmethod
    def of(cls, prep: Prepared, reporter_events: Mapping[str, tuple[str, ...]], *,
           sharded: bool = False) -> PropertyMonitor | None:
        """The run's monitor, or None for a scheme that states no property and declares no choice.

        ``sharded``: the monitor of a shard or of a sharded run's coordinator, which sees the
        events (replayed) and the choices (counted in each shard, merged at the end) but not
        the nodes' views or messages.

        Raises:
            SpecError: in a sharded run, a property that reads views or messages.
        """
        if prep.scheme.properties is None and prep.scheme.choices is None:
            return None
        mon = cls(prep, reporter_events)
        if sharded and (mon.views or mon.messages):
            what = [p.name for p in mon.props if p.needs & {"views", "messages"}]
            raise SpecError(f"scheme {prep.scheme.name!r}: property {what[0]!r} reads the nodes' views or messages, "
                            f"which only a one-process run observes: run it without --shards")
        return mon

    @property
    def judges_slots(self) -> bool:
        """Whether the monitor has anything to do at a slot close (a property to judge)."""
        return bool(self.props)

    def choice_counts(self) -> dict[str, list[list[Any]]]:
        """The counts of every declared choice, as wire data (a shard's, for its coordinator)."""
        return {name: [[v, n] for v, n in c.items()] for name, c in self.counts.items()}

    def take_node_counts(self, net: Any, last_slot: int) -> None:
        """Add the outcomes the nodes of ``net`` (its local ones) counted themselves up to slot
        ``last_slot`` (``Node.choice_counts(last_slot)``: name -> value -> count); once per run."""
        if self._nodes_counted or net is None or not self.dists:
            return
        self._nodes_counted = True
        for v in net.local:
            node = net.nodes[v]
            counted = getattr(node, "choice_counts", None) if node is not None else None
            if counted is None:
                continue
            for name, pairs in counted(last_slot).items():
                counts = self.counts.get(name)
                if counts is None:
                    raise SlotnetError(f"node {v} counted a choice {name!r} that scheme {self.prep.scheme.name!r} "
                                       f"does not declare (declared: {', '.join(sorted(self.dists)) or 'none'})")
                for value, n in pairs.items():
                    if n:
                        counts[value] = counts.get(value, 0) + n

    def add_counts(self, counts: Mapping[str, Any]) -> None:
        """Add a shard's :meth:`choice_counts` (values that crossed the wire as lists become tuples)."""
        for name, pairs in counts.items():
            for v, n in pairs:
                counts = self.counts[name]
                key = tuple(v) if isinstance(v, list) else v
                counts[key] = counts.get(key, 0) + n

    # -- what the run feeds it ----------------------------------------------------------
    def wrap(self, handlers: Mapping[str, Callable[..., None]]) -> dict[str, Callable[..., None]]:
        """The reporter's handlers, each also keeping its event here; plus the properties' own kinds."""
        if not self.props:  # choices alone: the events need no keeping
            return dict(handlers)
        out: dict[str, Callable[..., None]] = {}
        for kind, h in handlers.items():
            out[kind] = self._keeper(kind, h)
        for kind in self.own_events:
            if kind not in out:
                out[kind] = self._keeper(kind, None)
        return out

    def _keeper(self, kind: str, inner: Callable[..., None] | None) -> Callable[..., None]:
        keep = self._slot_events.append

        def handler(node: int, slot: int, *values: Any) -> None:
            if inner is not None:
                inner(node, slot, *values)
            keep(Event(slot, node, kind, values))
        return handler

    def attach(self, net: Any, observers: Any) -> None:
        """The run's network (its nodes' views and which nodes are up; None for a sharded run's
        coordinator) and its slot observers: the monitor closes each slot right after the reporter."""
        self._net = net
        if self.judges_slots:
            observers.observers.insert(1, self)

    def events_with(self, events: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        """The reporter's event schema with the properties' own kinds (the trace's schema)."""
        return {**events, **self.own_events}

    def on_lost_with(self, first: Callable[..., None]) -> Callable[..., None]:
        """An ``on_lost`` that tells ``first`` (the reporter), then the monitor."""
        def on_lost(slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
            first(slot, sender, port, receiver, message, cause)
            self.on_lost(slot, sender, port, receiver, message, cause)
        return on_lost

    def choose(self, node: int, slot: int, name: str, value: Any) -> None:
        """Count one outcome of choice ``name``; a name the scheme does not declare stops the
        run. A node's context counts a declared choice into :attr:`counts` itself (the hot
        path: ``NodeContext.record_choice``) and calls this only for a name it does not find."""
        counts = self.counts.get(name)
        if counts is None:
            raise SlotnetError(f"node {node} recorded a choice {name!r} in slot {slot} that scheme "
                               f"{self.prep.scheme.name!r} does not declare (declared: "
                               f"{', '.join(sorted(self.dists)) or 'none'})")
        counts[value] = counts.get(value, 0) + 1

    def tap(self, node: int, slot: int, kind: str, fields: dict[str, Any]) -> None:
        """A send or a reception, seen at the node's context."""
        if kind == "sent":
            port = fields["port"]
            receiver = self._neighbour(node, port)
            s = Sent(len(self.sent), slot, node, port, -1 if receiver is None else receiver, fields["message"])
            self.sent.append(s)
            self._slot_sent.append(s)
            self._pending.setdefault((node, port), deque()).append(s)
        elif kind == "received":
            in_port, message = fields["port"], fields["message"]
            sender = self._neighbour(node, in_port)
            sent = None
            if sender is not None:
                sent = self._take((sender, self._reverse(node, in_port)), message)
            r = Received(slot, node, in_port, message, sent)
            self.received.append(r)
            self._slot_received.append(r)

    def _take(self, link: tuple[int, int], message: Any) -> Sent | None:
        q = self._pending.get(link)
        if not q:
            return None
        for i, s in enumerate(q):
            if _same(s.message, message):
                del q[i]
                return s
        return None

    def on_lost(self, slot: int, sender: int, port: int, receiver: int, message: Any, cause: str) -> None:
        """A message a fault destroyed (cause ``dup``: a copy a fault added, no loss)."""
        if not self.messages or cause == "dup":
            return
        lost = Lost(slot, sender, port, receiver, message, cause)
        self.lost.append(lost)
        self._slot_lost.append(lost)
        if sender >= 0:
            self._take((sender, port), message)
            return
        for (s, p), q in self._pending.items():  # unread at the receiver: the sender is not named
            if q and self._neighbour(s, p) == receiver and self._take((s, p), message) is not None:
                return

    # -- slot close and end -------------------------------------------------------------
    def _alive(self) -> frozenset[int]:
        net = self._net
        if net is None:
            return frozenset()
        return frozenset(v for v in net.local if net.is_alive(v))

    def _up_at_end(self, last: int) -> frozenset[int]:
        """The nodes up after slot ``last``, from the fault schedule (the same in every runner)."""
        up = set(range(self.prep.topology.n_nodes))
        for ev in sorted(self.prep.spec.faults.events, key=lambda e: e.slot):
            if ev.slot > last:
                break
            if ev.kind == "crash":
                up.discard(ev.node)
            elif ev.kind == "recover":
                up.add(ev.node)
        return frozenset(up)

    def _views(self, alive: frozenset[int]) -> dict[int, Mapping[str, Any]]:
        if not self.views or self._net is None:
            return {}
        out: dict[int, Mapping[str, Any]] = {}
        for v in sorted(alive):
            node = self._net.nodes[v]
            view = getattr(node, "view", None) if node is not None else None
            if view is not None:
                try:
                    out[v] = dict(view())
                except Exception as exc:
                    raise SlotnetError(f"node {v}'s view() raised {type(exc).__name__}: {exc}") from exc
        return out

    def in_flight(self) -> list[Sent]:
        return sorted((s for q in self._pending.values() for s in q), key=lambda s: s.seq)

    def close_slot(self, slot: int) -> bool:
        """Every event of ``slot`` is in: the safety properties judge it."""
        events = sorted(self._slot_events, key=lambda e: e.node)  # stable: a node's events keep their order
        self.events.extend(events)
        self._slot_events.clear()
        if self._slot_props:
            alive = self._alive()
            view = SlotView(slot, tuple(events), self._views(alive), alive, tuple(self._slot_sent),
                            tuple(self._slot_received), tuple(self.in_flight()) if self.messages else (),
                            tuple(self._slot_lost))
            for p in self._slot_props:
                self.books[p.name].add(p.check_slot(view))
        self._slot_sent.clear()
        self._slot_received.clear()
        self._slot_lost.clear()
        return True

    def close(self) -> None:
        pass

    def judged(self, reporter: Any) -> Any:
        """``reporter`` as the run's end sees it: its invariants, then the properties' and the
        choices' (``properties``, ``choices``), judged with how the run ended (``run_ended``)."""
        return _Judged(reporter, self)

    def invariants(self, last_slot: int, complete: bool) -> dict[str, Any]:
        """The ``properties`` and ``choices`` invariants of a run that ended after ``last_slot``."""
        spec = self.prep.spec
        replay = replay_command(spec)
        out: dict[str, Any] = {}
        if self.props:
            alive = self._up_at_end(last_slot)
            crashed = frozenset(e.node for e in spec.faults.events if e.kind == "crash")
            end = EndView(last_slot, tuple(self.events), alive, crashed, complete, not spec.faults.empty,
                          self._views(alive), tuple(self.sent), tuple(self.received), tuple(self.lost),
                          tuple(self.in_flight()), self.prep.topology)
            for p in self._end_props:
                self.books[p.name].add(p.check_end(end))
            rows = {name: book.result(replay) for name, book in self.books.items()}
            bad = [name for name, row in rows.items() if not row["ok"]]
            props: dict[str, Any] = {"ok": not bad, "properties": rows}
            if bad:
                order = list(rows)  # the first slot; in one slot, the property declared first
                first = min((rows[n]["first"] for n in bad), key=lambda f: (f["slot"], order.index(f["property"])))
                props["problem"] = f"{first['property']}: {first['problem']} (slot {first['slot']})"
                props["first"] = first
            out["properties"] = props
        if self.dists:
            self.take_node_counts(self._net, last_slot)
            judged = spec.faults.empty and complete
            rows = {name: goodness_of_fit(dist, self.counts[name], judged=judged) for name, dist in self.dists.items()}
            bad = [name for name, row in rows.items() if not row["ok"]]
            choices: dict[str, Any] = {"ok": not bad, "choices": rows}
            if bad:
                choices["problem"] = f"choice {bad[0]!r}: {rows[bad[0]]['problem']}"
                choices["replay"] = replay
            out["choices"] = choices
        return out


class _Judged:
    """A reporter whose invariants include the run's properties and choices (everything else is the reporter's)."""

    def __init__(self, inner: Any, judge: PropertyMonitor) -> None:
        self._inner = inner
        self._judge = judge
        self._end = (judge.prep.slots - 1, True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run_ended(self, slot: int, complete: bool) -> None:
        self._end = (slot, complete)
        ended = getattr(self._inner, "run_ended", None)  # optional for a reporter of the user's own
        if ended is not None:
            ended(slot, complete)

    def invariants(self, lost: Any, in_flight: Any, held: Any) -> dict[str, Any]:
        out = dict(self._inner.invariants(lost, in_flight, held))
        out.update(self._judge.invariants(*self._end))
        return out
