"""The kit's port queues (:mod:`slotnet.schemes.kit._queues`), unit by unit.

What the run-level Little's law tests cannot see: a queue that miscounts its backlog
feeds the same wrong count to both of that check's witnesses, so the two still agree.
Here each discipline is held against a plain model of its records (what it serves next,
its backlog, its ledger's stamps), and the declared service order, the defaults and the
error messages are pinned. ``devtools/mutation.sh`` runs these against every mutant of the
module.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.schemes.kit import ClassQueues, LabelQueues, PortQueues, ServiceOrder

PORTS = (0, 1, 3)  # a node without port 2 (a boundary node): queues only for the ports it has
KINDS = ["port", "class", "label"]


def _queue(kind: str, order: ServiceOrder | None = None) -> Any:
    if kind == "port":
        return PortQueues(list(PORTS))
    if kind == "class":
        return ClassQueues(list(PORTS), classes=2, order=order)
    return LabelQueues(list(PORTS), order=order)


def _add(q: Any, kind: str, message: Any, ports: list[int], cls: int = 0, label: int = 0, slot: int = 0) -> None:
    if kind == "port":
        q.add(message, ports)
    elif kind == "class":
        q.add(message, [(p, cls) for p in ports])
    else:
        q.add(message, label, [(p, slot) for p in ports])


class _Ctx:
    """The one thing a :class:`ServiceOrder` takes from its node: ``record``."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def record(self, kind: str, *values: Any) -> None:
        self.events.append((kind, *values))


# -- every discipline against a model of its records --------------------------------------------
_ADD = st.tuples(st.just("add"), st.lists(st.sampled_from(PORTS), unique=True, max_size=3),
                 st.integers(0, 1), st.integers(0, 2), st.integers(0, 1), st.integers(0, 3))
_POP = st.tuples(st.just("pop"), st.sampled_from(PORTS))
_STEPS = st.lists(st.lists(st.one_of(_ADD, _POP), max_size=4), min_size=1, max_size=12)


@settings(max_examples=120, deadline=None)
@given(kind=st.sampled_from(KINDS), start=st.integers(0, 3), steps=_STEPS)
def test_each_discipline_serves_counts_and_stamps_as_its_model(kind, start, steps):
    """Any queueings and pops: the packet served, the backlog, the busy ports, the items and
    the ledger are those of a model that keeps each packet's ports, key and entry slot.

    FIFO per port; class 0 before class 1, FIFO within a class; smallest (label, slot) with
    ties served in queueing order (never by comparing messages, which here sort otherwise).
    """
    q = _queue(kind)
    ledger = q.start_ledger(start)
    waiting: dict[int, list[tuple[tuple[int, ...], Any]]] = {p: [] for p in PORTS}
    left: dict[Any, int] = {}  # message -> ports still to cross
    entry: dict[Any, int] = {}
    served = released = count = 0
    for now, ops in enumerate(steps, start):
        q.now = now
        for op in ops:
            if op[0] == "add":
                _, ports, cls, label, slot, origin = op
                count += 1
                message = (origin, -count)  # by value, later packets sort first
                _add(q, kind, message, list(ports), cls, label, slot)
                key = {"port": (count,), "class": (cls, count), "label": (label, slot, count)}[kind]
                for p in ports:
                    waiting[p].append((key, message))
                if ports:
                    left[message], entry[message] = len(ports), now
                continue
            port = op[1]
            if not waiting[port]:
                continue
            head = min(waiting[port])
            waiting[port].remove(head)
            assert q.pop(port) == head[1]
            left[head[1]] -= 1
            if left[head[1]] == 0:
                del left[head[1]]
                served += now + 1 - entry.pop(head[1])
                released += 1
        assert q.held == len(left)
        assert list(q.busy()) == [p for p in PORTS if waiting[p]]
        assert sorted(q.items()) == sorted({(m[0], m[1]) for m in left})  # each packet once, however many ports
        assert (ledger.held, ledger.stamps) == (len(left), sum(entry.values()))
        assert (ledger.served, ledger.released) == (served, released)


# -- the backlog: a packet counts once, until its last port serves it ---------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("now", [0, 5])
def test_a_packet_is_held_once_until_its_last_port_serves_it(kind, now):
    """Queued on two ports it is one packet held; served on one, still held; on both, gone.
    A packet queued on no port is not held at all (whatever the slot)."""
    q = _queue(kind)
    q.now = now
    _add(q, kind, (4, 1), [])
    assert q.held == 0 and not q.items()
    _add(q, kind, (4, 2), [0, 3])
    assert q.held == 1 and q.items() == [(4, 2)]
    assert q.pop(3) == (4, 2) and q.held == 1
    assert q.pop(0) == (4, 2) and q.held == 0 and not q.items()


def test_label_ties_are_served_in_queueing_order():
    """Equal (label, slot) keys: the packet queued first is served first, whatever the messages."""
    q = LabelQueues(1)
    q.add((1, 1), 2, [(0, 0)])
    q.add((0, 2), 2, [(0, 0)])
    q.add((0, 3), 1, [(0, 5)])
    q.add((0, 4), 1, [(0, 4)])
    assert [q.pop(0) for _ in range(4)] == [(0, 4), (0, 3), (1, 1), (0, 2)]


def test_label_ties_never_compare_messages():
    q = LabelQueues(1)
    q.add({"a": 1}, 0, [(0, 0)])
    q.add({"b": 2}, 0, [(0, 0)])
    assert q.pop(0) == {"a": 1} and q.pop(0) == {"b": 2}


# -- the ledger ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_start_ledger_stamps_the_packets_already_queued_once_each(kind):
    """The packets queued before the ledger starts are entered once (however many ports they
    wait on) with the ledger's first slot; their residence runs from it."""
    q = _queue(kind)
    q.now = 1
    _add(q, kind, (0, 1), [0, 3])
    _add(q, kind, (0, 2), [1])
    ledger = q.start_ledger(3)
    assert q.now == 3
    assert (ledger.held, ledger.stamps, ledger.served, ledger.released) == (2, 6, 0, 0)
    q.now = 4
    q.pop(0)
    assert ledger.held == 2
    q.pop(3)
    q.pop(1)
    assert (ledger.held, ledger.stamps, ledger.served, ledger.released) == (0, 0, 4, 2)


@pytest.mark.parametrize("kind", KINDS)
def test_a_packet_queued_after_the_ledger_starts_is_stamped_with_its_slot(kind):
    """Queued in the ledger's first slot (the node's first step) without a further ``now``."""
    q = _queue(kind)
    ledger = q.start_ledger(5)
    _add(q, kind, (0, 1), [1])
    assert (ledger.held, ledger.stamps) == (1, 5)
    q.pop(1)
    assert (ledger.held, ledger.stamps, ledger.served, ledger.released) == (0, 0, 1, 1)


# -- the declared service order -----------------------------------------------------------------
def _rank(message: Any, port: int) -> int:
    return int(message[2])


def test_class_queues_check_the_head_of_every_class_left():
    """A class-0 packet served while class 1's head is declared first: one ``disorder`` event,
    though class 0's own head (checked first) is in order."""
    ctx = _Ctx()
    q = ClassQueues([0, 1], classes=2, order=ServiceOrder(ctx, _rank))
    q.add((0, 1, 5), [(1, 0)])
    q.add((0, 2, 9), [(1, 0)])
    q.add((0, 3, 1), [(1, 1)])
    assert q.pop(1) == (0, 1, 5)
    assert ctx.events == [("disorder", 1, (0, 1), 5, (0, 3), 1)]


def test_class_queues_name_one_disorder_per_packet_served():
    """Both classes' heads declared before the packet served: the first class's is named, once."""
    ctx = _Ctx()
    q = ClassQueues(1, classes=2, order=ServiceOrder(ctx, _rank))
    q.add((0, 1, 5), [(0, 0)])
    q.add((0, 2, 2), [(0, 0)])
    q.add((0, 3, 1), [(0, 1)])
    q.pop(0)
    assert ctx.events == [("disorder", 0, (0, 1), 5, (0, 2), 2)]
    q.pop(0)
    assert ctx.events[1:] == [("disorder", 0, (0, 2), 2, (0, 3), 1)]
    q.pop(0)
    assert len(ctx.events) == 2


def test_label_queues_check_the_packet_served_against_the_next():
    """The heap serves label 0 first; the declaration ranks the label-1 packet first: named."""
    ctx = _Ctx()
    q = LabelQueues(1, order=ServiceOrder(ctx, _rank))
    q.add((0, 1, 7), 0, [(0, 0)])
    q.add((0, 2, 3), 1, [(0, 0)])
    assert q.pop(0) == (0, 1, 7)
    assert q.pop(0) == (0, 2, 3)
    assert ctx.events == [("disorder", 0, (0, 1), 7, (0, 2), 3)]


# -- defaults and errors ------------------------------------------------------------------------
def test_class_queues_default_to_two_classes_per_port():
    q = ClassQueues([0, 2])
    assert q.classes == 2 and q.order is None
    assert [len(q.queues[p]) for p in q.ports] == [2, 2]
    q.add("m", [(2, 1)])
    with pytest.raises(IndexError):
        q.add("m", [(2, 2)])


def test_class_queues_need_a_class():
    with pytest.raises(ValueError, match=f"^{re.escape('need at least one class, got 0')}$"):
        ClassQueues(2, classes=0)


def test_an_empty_port_has_nothing_to_pop():
    q = ClassQueues(2)
    q.add("m", [(0, 1)])
    with pytest.raises(IndexError, match="^port 1 has nothing queued$"):
        q.pop(1)
