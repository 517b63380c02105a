"""The coordinator of a sharded run: the nodes of one run spread over shards.

The coordinator (the ``slotnet run --shards K`` process) owns the reporter, the trace
writer, the stability monitor and the slot clock's decisions; the shards (``_shard``) own
the nodes. Slot after slot it takes every shard's report of the slot, hands it to the
reporter, closes the slot through the same ``SlotObservers`` as the one-process driver,
and tells the shards to go on or stop (the protocol is in ``_link``). A reporter that
merges across shards (``engine._open.merges_on_shards``) gets the shards' summaries of
the slot (``merge_slot``: what ``end_slot`` and the backlog need), each shard's reporter
having taken its own nodes' events, and at the end their states (``merge_shards``); any
other gets every shard's events, replayed in node order (``SlotBatch``). A one-shot
collective stops after the first slot at whose end every shard is idle, as in one
process. At the end every shard sends its end-of-run state (fault ledger, messages in
flight, holdings, counters), which :func:`coordinate` merges into one
:class:`~..engine._collect.EndState`, so the result is collected exactly as in one process.

:func:`coordinate` runs over any :class:`~._link.CoordinatorLink`; :func:`run_sharded` is
the run over MQTT (``_mqtt_link``), :func:`~._memory_link.run_sharded_in_memory` the run
with every shard a task of this process.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from slotnet.errors import SlotnetError
from slotnet.fabric import FaultLedger, ShardMap

from ..engine._collect import EndState, collect
from ..engine._completion import Waiting
from ..engine._observer import SlotBatch
from ..engine._open import open_run
from ..engine._progress import Progress
from ..engine._result import Result
from ..engine._spec import Prepared
from ._link import CoordinatorLink, Done
from ._mqtt_link import coordinator_link
from ._stops import stopping_on_signals
from ._timing import split
from ._wire import ledger_from_wire, spec_to_wire

__all__ = ["coordinate", "run_sharded"]


async def run_sharded(prep: Prepared, *, progress: Progress | None = None,
                      on_slot: Callable[[int], None] | None = None, spawn: bool = True,
                      run_id: str | None = None) -> Result:
    """The coordinator of a run over ``prep.spec.shards`` shard processes and an MQTT broker
    (started here unless ``prep.spec.broker`` names one; shards are started here unless not ``spawn``).

    Raises:
        Stopped, KeyboardInterrupt: SIGTERM or SIGINT arrived; the shards and the broker
            started here were stopped first.
    """
    # SIGTERM/SIGINT: the shards and the broker are stopped first
    async with stopping_on_signals(), coordinator_link(prep.spec, run_id or secrets.token_hex(6), spawn=spawn) as link:
        return await coordinate(prep, link, progress=progress, on_slot=on_slot)
    raise AssertionError("unreachable: a cancelled run raises on its way out")  # pragma: no cover


async def coordinate(prep: Prepared, link: CoordinatorLink, *, progress: Progress | None = None,
                     on_slot: Callable[[int], None] | None = None) -> Result:
    """Run ``prep`` over the shards at the other end of ``link``; the result merges theirs."""
    spec = prep.spec
    opened = open_run(prep, progress=progress, on_slot=on_slot, sharded=True)
    reporter, tracer, monitor, observers, one_shot = (opened.reporter, opened.tracer, opened.monitor,
                                                      opened.observers, opened.one_shot)
    merged = opened.merged  # the shards report; the coordinator merges (``engine._open.merges_on_shards``)
    batch = SlotBatch(opened.handlers, on_lost=opened.on_lost)
    judge = opened.judge
    if judge is not None:
        judge.attach(None, observers)
    timing = split()  # None unless SLOTNET_SHARD_TIMING asks (``_timing``)
    try:
        await link.start(spec_to_wire(spec))
        t0 = time.perf_counter()
        slots_run, done, last_active = 0, False, 0
        for slot in range(prep.slots):
            if timing is not None:
                timing.restart()
            reports = await link.done(slot)
            if timing is not None:
                timing.lap("waiting")
            if merged:
                _summaries(reports, slot)
                reporter.merge_slot(slot, [r.summary for r in reports])
            else:
                batch.replay([r.events for r in reports])
            if tracer is not None:
                tracer.buffer.extend(ev for r in reports for ev in r.traced)
            slots_run = slot + 1
            last_active = max(last_active, *(r.last_active for r in reports))
            go = observers.close_slot(slot)
            if go and one_shot and all(r.idle for r in reports):
                done, go = True, False
            go = go and slot + 1 < prep.slots
            if timing is not None:
                timing.lap("coordinator")
            link.go(slot, go)
            if not go:
                break
        finals = await link.finals()
        wall = time.perf_counter() - t0
    finally:
        observers.close()
    if merged:  # before the end of the run is collected: the reporter holds every shard's books
        reporter.merge_shards([final["reporter"] for final in finals])
        smap = ShardMap(prep.topology.n_nodes, len(finals))  # and the fault rules' witness every shard's
        opened.witness.merge_shards([final["witness"] for final in finals], [smap.nodes(j) for j in range(len(finals))])
    end = _merge(prep, finals, link)
    end.quiet, end.last_active, end.last_events = done, last_active, opened.last_events
    end.transport["reporting"] = "merged" if merged else "replayed"  # where the events were reported
    if judge is not None:
        for final in finals:
            judge.add_counts(final.get("choices", {}))
        reporter = judge.judged(reporter)
    if timing is not None:  # asked for: where the slots' time went, per shard and at the coordinator
        end.transport["timing"] = {"shards": [f.get("timing", {}) for f in finals], "coordinator": timing.seconds,
                                   "node_work_slots": [f.get("node_work_slots", []) for f in finals]}
    return collect(prep, reporter, monitor, slots_run, wall, end, tracer, opened.witness)


def _summaries(reports: list[Done], slot: int) -> None:
    """Check that every shard reported ``slot`` with its reporter's summary (a shard that
    replays while the coordinator merges would be a version mismatch).

    Raises:
        SlotnetError: naming the first shard that sent events instead.
    """
    for r in reports:
        if r.summary is None:
            raise SlotnetError(f"shard {r.shard} sent events for slot {slot} where its reporter's summary was due: "
                               f"the shards and the coordinator run different versions of slotnet or of the scheme")


def _merge(prep: Prepared, finals: list[dict[str, Any]], link: CoordinatorLink) -> EndState:
    """One end-of-run state from every shard's (``finals``, in shard order)."""
    n = prep.topology.n_nodes
    smap = ShardMap(n, len(finals))
    ledger = FaultLedger()
    in_flight: list[tuple[int, int, Any]] = []
    held = [0] * n
    held_packets: list[Any] = [()] * n
    crashed: list[tuple[int, int, list[Any]]] = []
    waiting: list[Waiting] = []
    down: list[int] = []
    delivered = wakeups = sent_local = sent_cross = 0
    rejected = dict(link.rejected)
    for shard, state in enumerate(finals):
        ledger.merge(ledger_from_wire(state["ledger"]))
        in_flight += [tuple(x) for x in state["in_flight"]]
        for v, h, items in zip(smap.nodes(shard), state["held"], state["held_packets"]):
            held[v] = h
            held_packets[v] = items
        crashed += [(slot, node, list(items)) for slot, node, items in state["crashed"]]
        waiting += [Waiting(node, since, until) for node, since, until in state.get("waiting", ())]
        down += state.get("down", ())
        delivered += state["delivered"]
        wakeups += state["wakeups"]
        sent_local += state["sent_local"]
        sent_cross += state["sent_cross"]
        for why, c in state["rejected"].items():
            rejected[why] = rejected.get(why, 0) + c
    cross_links, links = smap.cross_links(prep.topology)
    sent = sent_local + sent_cross
    about = link.describe()
    transport = {"kind": about["kind"], "shards": smap.shards, **{k: v for k, v in about.items() if k != "kind"},
                 "cross_shard_fraction": sent_cross / sent if sent else 0.0,
                 "cross_shard_links": cross_links / links if links else 0.0, "frames_rejected": dict(sorted(rejected.items()))}
    return EndState(ledger, _canonical(in_flight), held, held_packets, delivered, wakeups, transport,
                    sorted(crashed, key=lambda c: (c[0], c[1])), waiting=sorted(waiting, key=lambda w: w.node),
                    down=sorted(down))


def _canonical(entries: list[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """The shards' in-flight ``(receiver, in_port, message)`` in one order whatever the shard
    count: by receiver and in-port, and the messages on one link by their ``repr``.

    Sorted in place, on an integer key: the shards' lists come in receiver order, nearly
    sorted already. A link rarely holds more than one message, so a ``repr`` is taken only
    for those that share one (sorting every entry by its ``repr`` took 42 s for the 4.19 M
    still in flight at the end of 4 slots of the 2**20-cube).
    """
    wide = max((e[1] for e in entries), default=0).bit_length()
    entries.sort(key=lambda e: e[0] << wide | e[1])
    i, n = 0, len(entries)
    while i < n:
        r, p = entries[i][0], entries[i][1]
        j = i + 1
        while j < n and entries[j][1] == p and entries[j][0] == r:
            j += 1
        if j - i > 1:
            entries[i:j] = sorted(entries[i:j], key=repr)
        i = j
    return entries
