"""The driver: builds the network, runs the slot loop, collects the result.

One slot, in order: the slot's control faults take effect (links, crashes); the
transport delivers what is due; every node due in this slot is woken with its inbox;
nodes restarted by a ``recover`` fault begin; the driver waits until every woken node
has parked again (the slot barrier); the reporter closes the slot. Warm-up slots run the
same way; reporters exclude them from the metrics. A scheme that declares
``until="quiescent"`` (a one-shot collective) ends the run at the first slot after
which no node is awake or has a timer and nothing is in flight.

The driver knows no scheme and no transport: it reads the :class:`Scheme` record and
receives a :class:`~slotnet.fabric.Transport` from the spec's factory (the in-process
fabric by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import trio

from slotnet._build import build
from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FaultLedger, FaultSchedule, InProcessTransport, SlotClock, Transport

from ._gc import quiet_gc
from ._invariants import check_invariants
from ._network import Network, checked_handlers
from ._observer import SlotBatch
from ._progress import Progress
from ._result import Result
from ._spec import Prepared, RunSpec
from ._stability import StabilityMonitor
from ._trace import Tracer, fingerprint

__all__ = ["NodeFailure", "collect", "fault_impact", "in_process", "run", "run_async"]


def in_process(prep: Prepared, clock: SlotClock, on_lost: Callable[..., None]) -> Transport:
    """The default transport factory: every link of the run in this process."""
    return InProcessTransport(prep.topology, clock, prep.spec.faults, prep.spec.seed, on_lost=on_lost,
                              quantum=prep.quantum)


async def run_async(spec: RunSpec, *, progress: Progress | None = None,
                    on_slot: Callable[[int], None] | None = None) -> Result:
    """Run ``spec`` inside the caller's Trio loop and return its :class:`Result`.

    Raises:
        SpecError, TopologyError, FaultSpecError: bad input (before any slot runs).
        NodeFailure: a node's rule raised.
        CapacityError: a node oversent a port.
    """
    prep = spec.prepare()
    if spec.shards > 1:
        from ._sharded import run_sharded

        return await run_sharded(prep, progress=progress, on_slot=on_slot)
    reporter = prep.scheme.reporter(prep.setup)
    handlers = checked_handlers(reporter)
    tracer = Tracer(spec.trace, reporter.events) if spec.trace else None
    factory = spec.transport or in_process
    net = Network(prep, lambda clock, lost: factory(prep, clock, lost), handlers=handlers,
                  batch=SlotBatch(handlers) if spec.observer == "buffered" else None,
                  on_lost=reporter.on_lost, tracer=tracer)
    n = prep.topology.n_nodes
    monitor = StabilityMonitor(n, spec.warmup, spec.slots, prep.max_backlog_per_node)
    one_shot = prep.scheme.until == "quiescent"
    t0 = time.perf_counter()
    slots_run = 0
    complete = False
    try:
        async with trio.open_nursery() as nursery:
            await net.start(nursery)
            with quiet_gc():
                for slot in range(spec.slots):
                    if slot:
                        await net.step(slot, nursery)
                    slots_run = slot + 1
                    if net.batch is not None:
                        net.batch.flush()
                    reporter.end_slot(slot)
                    if net.tracer is not None:
                        net.tracer.end_slot()
                    if progress is not None:
                        progress.update(slot)
                    if on_slot is not None:
                        on_slot(slot)
                    if not monitor.sample(slot, reporter.backlog()):
                        break
                    if one_shot and net.quiescent():
                        complete = True
                        break
                await net.stop()
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # unwrap a lone failure into its precise error
        raise _single(group) from None
    finally:
        if net.tracer is not None:
            net.tracer.close()
        if progress is not None:
            progress.close()
    wall = time.perf_counter() - t0
    t = net.transport
    result = collect(prep, reporter, monitor, slots_run, wall, ledger=t.ledger, in_flight=t.in_flight(),
                     held=net.held(), held_packets=net.held_packets(), delivered=t.delivered,
                     wakeups=net.runtime.wakeups, transport=t.describe())
    if net.tracer is not None and net.tracer.error is not None:
        result.trace_fingerprint = None  # the file holds only part of the run
    if one_shot:
        result.completion = {"complete": complete, "slot": net.last_active if complete else None,
                             "time": net.last_active / prep.quantum if complete else None}
        result.metrics.setdefault("completion_time", result.completion["time"])
    return result


def _single(group: BaseExceptionGroup) -> BaseException:
    """The precise error inside a Trio exception group; the others are attached as notes."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for sub in e.exceptions:
                walk(sub)
        else:
            leaves.append(e)

    walk(group)
    if not leaves:
        return group
    chosen = next((e for e in leaves if isinstance(e, SlotnetError)), leaves[0])
    for other in leaves:
        if other is not chosen:
            chosen.add_note(f"also: {type(other).__name__}: {other}")
    return chosen


def collect(prep: Prepared, reporter: Any, monitor: StabilityMonitor, slots_run: int, wall: float, *,
            ledger: FaultLedger, in_flight: list[tuple[int, int, Any]], held: list[int], held_packets: list[Any],
            delivered: int, wakeups: int, transport: dict[str, Any]) -> Result:
    """The result of a finished run from the end-of-run state of its network (or shards)."""
    spec = prep.spec
    reporter.holdings(held_packets)
    invariants = check_invariants(reporter.invariants(ledger, in_flight, held))
    stability = monitor.verdict()
    metrics = dict(reporter.metrics())
    metrics["stable"] = stability["stable"]
    theory = None
    if prep.scheme.theory is not None:
        theory = prep.scheme.theory(prep.setup)
    hops = delivered + len(in_flight) + sum(ledger.values())
    return Result(
        scheme=prep.scheme.name,
        topology=prep.topology.describe(),
        seed=spec.seed,
        slots=spec.slots,
        warmup=spec.warmup,
        params={k: v for k, v in prep.params.items() if v is not None},
        load=dict(prep.setup.load),
        metrics=metrics,
        invariants=invariants,
        theory=theory,
        stability=stability,
        per_node=reporter.per_node(),
        series=reporter.series(),
        faults=spec.faults.to_list(),
        slots_run=slots_run,
        transport=transport,
        trace_fingerprint=fingerprint(spec.trace.path) if spec.trace is not None else None,
        fault_impact=None if spec.faults.empty else fault_impact(spec.faults, ledger, invariants, metrics),
        wall_seconds=wall,
        performance={"messages": hops, "node_wakeups": wakeups,
                     "messages_per_second": hops / wall if wall else None,
                     "build": build()},  # this process's hot path: compiled or pure Python
    )


#: Which ledger entries each fault kind accounts for: (book, cause).
_IMPACT = {
    "loss": (("lost", "loss"),),
    "dup": (("duplicated", "dup"),),
    "delay": (("delayed", "delay"),),
    "corrupt": (("corrupted", "corrupt"), ("lost", "corrupt")),
    "corrupt:undetected": (("corrupted", "undetected"), ("lost", "undecodable")),
    "link-down": (("lost", "link_down"),),
    "partition": (("lost", "partition"),),
    "crash": (("lost", "node_down"), ("lost", "crash")),
    "stall": (("lost", "stalled"),),
}


def fault_impact(faults: FaultSchedule, ledger: FaultLedger, invariants: dict[str, Any],
                 metrics: dict[str, Any]) -> dict[str, Any]:
    """The result's ``fault_impact``: what each fault cost, and a verdict on the scheme.

    * ``faults``: each scheduled fault with the messages its kind lost, copied, held back or
      garbled (``shared_by`` > 1: several faults of that kind share the counts);
    * ``messages``: the ledger's books; ``avoidable``: of the lost messages, those sent on a
      port the sender's context already showed dead;
    * ``packets``: the scheme's packets (unicasts, broadcasts) delivered or completed, lost
      to a fault, still in progress, read off its invariants;
    * ``delivered_all_deliverable``: ``ok`` when nothing is unaccounted (``invariants.ok``)
      and no message was lost on a port its sender knew dead -- everything lost was destroyed
      by the faults themselves, before the scheme could know;
    * ``survivor_biased``: the delay metrics, which average completed packets only;
      ``theory``: the theory column is the fault-free model.
    """
    books = {"lost": ledger.causes, "duplicated": ledger.duplicated, "delayed": ledger.delayed,
             "corrupted": ledger.corrupted}
    groups: dict[str, int] = {}
    listed = []
    for kind, text in faults.entries():
        group = "corrupt:undetected" if text.startswith("corrupt=") and ":undetected" in text else kind
        groups[group] = groups.get(group, 0) + 1
        listed.append((group, kind, text))
    entries = []
    for group, kind, text in listed:
        impact: dict[str, dict[str, int]] = {}
        for book, cause in _IMPACT.get(group, ()):
            n = books[book].get(cause, 0)
            if n:
                impact.setdefault(book, {})[cause] = n
        row: dict[str, Any] = {"fault": text, "kind": kind, "messages": impact}
        if _IMPACT.get(group) and groups[group] > 1:
            row["shared_by"] = groups[group]
        entries.append(row)
    avoidable = ledger.avoidable
    ok = bool(invariants.get("ok")) and not avoidable
    if not invariants.get("ok"):
        why = "an invariant is violated: something is unaccounted for"
    elif avoidable:
        why = f"{sum(avoidable.values())} messages were sent on ports their senders already saw dead, and lost there"
    elif faults.detect is None:
        why = "every loss was the faults' own doing (nodes are never told of dead ports: --detect never)"
    else:
        why = "every loss was the faults' own doing, before the senders could know"
    return {
        "faults": entries,
        "messages": ledger.to_dict(),
        "avoidable": avoidable,
        "packets": _packets(invariants, ledger.copies),
        "detection": {"delay_slots": faults.detect},
        "delivered_all_deliverable": {"ok": ok, "why": why},
        "survivor_biased": [k for k in metrics if "delay" in k and not k.endswith("_ci95")],
        "theory": "fault-free model",
    }


def _packets(invariants: dict[str, Any], copies: int) -> dict[str, Any]:
    """Delivered / lost to a fault / in progress, from the scheme's own invariants (``dup_copies``:
    copies a dup fault added, which count among the delivered and in progress)."""
    out: dict[str, Any] = {}
    for name, inv in invariants.items():
        if not isinstance(inv, dict):
            continue
        if "broadcasts" in inv and "completed" in inv:
            out[name] = {"broadcasts": inv["broadcasts"], "completed": inv["completed"],
                         "lost_to_faults": inv.get("missed", 0), "in_progress": inv.get("in_progress", 0)}
        elif "delivered" in inv and ("created" in inv or "born" in inv):
            lost = inv.get("dropped", inv.get("lost", {}))
            destroyed = sum(n for c, n in lost.items() if n > 0 and c != "node_finished") if isinstance(lost, dict) else 0
            out[name] = {"packets": inv.get("created", inv.get("born")), "delivered": inv["delivered"],
                         "lost_to_faults": destroyed,
                         "in_progress": int(inv.get("in_flight", 0)) + int(inv.get("held", 0))}
            if copies:
                out[name]["dup_copies"] = copies
    return out


def run(spec: RunSpec, *, progress: Progress | None = None) -> Result:
    """Run ``spec`` to completion (starts its own Trio loop)."""
    return trio.run(lambda: run_async(spec, progress=progress))
