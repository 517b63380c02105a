"""The end of a run: its :class:`Result` from the end-of-run state, whoever ran it.

Both runners end here: the one-process driver (``_driver``) with its network's state, the
shard coordinator (``slotnet.orchestrator.shard``) with the state its shards sent back,
merged. :func:`collect` builds the result once (a one-shot task's completion, from
``_completion``, then invariants, stability, metrics, theory, fault impact, performance),
and :func:`single_error` turns a Trio exception group into the one error a caller sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from slotnet._build import build
from slotnet.errors import NodeFailure, SlotnetError
from slotnet.fabric import FaultLedger, FaultSchedule
from slotnet.schemes import PacketBook

from ._completion import LastEvents, Waiting, completion
from ._fault_rules import FaultWitness
from ._invariants import check_invariants, theory_agreement
from ._provenance import provenance
from ._result import Result
from ._spec import Prepared
from ._stability import StabilityMonitor
from ._trace import Tracer, fingerprint
from ._verdict import verdict

__all__ = ["EndState", "collect", "fault_impact", "single_error"]


def single_error(group: BaseExceptionGroup) -> BaseException:
    """The precise error inside a Trio exception group (of node failures, the earliest slot's
    lowest node); the others are attached as notes, in that order."""
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
    # node failures in (slot, node) order: which node's task failed first is the scheduler's
    # choice, the error named must not be (one seed fixes a run, whatever the task order)
    leaves.sort(key=lambda e: (0, e.slot, e.node) if isinstance(e, NodeFailure) else (1, 0, 0))
    chosen = next((e for e in leaves if isinstance(e, SlotnetError)), leaves[0])
    for other in leaves:
        if other is not chosen:
            chosen.add_note(f"also: {type(other).__name__}: {other}")
    return chosen


@dataclass
class EndState:
    """What a run's network holds at the end (or its shards', merged)."""

    ledger: FaultLedger
    #: messages sent but not delivered, as ``(receiver, in_port, message)``
    in_flight: Sequence[tuple[int, int, Any]]
    #: per node, the packets it holds (its ``held()``) and which (``held_packets()``)
    held: list[int]
    held_packets: list[Any]
    delivered: int
    wakeups: int
    #: the result's ``transport`` object
    transport: dict[str, Any]
    #: ``(slot, node, packets)``: what each crash destroyed in a node's hands, by slot and node
    crashed: list[tuple[int, int, list[Any]]] = field(default_factory=list)
    #: the run stopped because nothing could happen any more (a one-shot task: done or deadlocked)
    quiet: bool = False
    #: the last slot in which a node was awake
    last_active: int = -1
    #: the live nodes parked when the run ended, and the nodes down (crashed) then
    waiting: list[Waiting] = field(default_factory=list)
    down: list[int] = field(default_factory=list)
    #: each node's last recorded event, where the run kept them (a run that may deadlock)
    last_events: LastEvents | None = None


def collect(prep: Prepared, reporter: Any, monitor: StabilityMonitor, slots_run: int, wall: float, end: EndState,
            tracer: Tracer | None = None, witness: FaultWitness | None = None) -> Result:
    """The result of a finished run from its end-of-run state (``tracer``: the run's trace
    writer, closed; a trace it could not finish has no fingerprint). A one-shot task's
    completion is decided first (``_completion``): a task cut short or deadlocked has its
    reporter judge only what was due by its last slot, and the claims are judged once,
    with the completion time among the metrics. Last, the one verdict (``_verdict``), with
    the fault rules judged from ``witness`` (``_fault_rules``; every runner passes its own)."""
    spec = prep.spec
    ledger, in_flight = end.ledger, end.in_flight
    stability = monitor.verdict()
    done = completion(prep, reporter, quiet=end.quiet, last_active=end.last_active, slots_run=slots_run,
                      stability=stability, waiting=end.waiting, down=end.down, last_events=end.last_events)
    reporter.run_ended(slots_run - 1, done.complete)
    reporter.holdings(end.held_packets)
    reporter.crash_losses(end.crashed)
    scheme_invariants = reporter.invariants(ledger, in_flight, end.held)
    if done.invariant is not None:
        scheme_invariants = {**scheme_invariants, "termination": done.invariant}
    metrics = dict(reporter.metrics())
    metrics["stable"] = stability["stable"]
    if done.record is not None:
        if not done.complete:
            metrics["completion_time"] = None  # not a time the task took (m2o's would be its last delivery so far)
        metrics.setdefault("completion_time", done.time)
    theory = None
    if prep.scheme.theory is not None:
        theory = prep.scheme.theory(prep.setup)
    if prep.scheme.claims is not None and theory is not None:
        # a one-shot task cut short has only partial metrics: reported, not judged
        judged = spec.faults.empty and bool(stability["stable"]) and done.complete
        scheme_invariants["theory_agreement"] = theory_agreement(
            prep.scheme.claims(prep.setup, theory), theory, metrics, judged,
            warmup=spec.warmup, window=slots_run - spec.warmup)
    invariants = check_invariants(scheme_invariants)
    hops = end.delivered + len(in_flight) + sum(ledger.values())
    result = Result(
        scheme=prep.scheme.name,
        topology=prep.topology.describe(),
        seed=spec.seed,
        rng=spec.rng,
        slots=prep.slots,
        warmup=spec.warmup,
        params={k: v for k, v in prep.params.items() if v is not None},
        load=dict(prep.setup.load),
        metrics=metrics,
        invariants=invariants,
        theory=theory,
        stability=stability,
        completion=done.record,
        per_node=reporter.per_node(),
        series=reporter.series(),
        faults=spec.faults.to_list(),
        slots_run=slots_run,
        transport=end.transport,
        trace_fingerprint=fingerprint(spec.trace.path) if spec.trace is not None and _complete(tracer) else None,
        fault_impact=None if spec.faults.empty else fault_impact(spec.faults, ledger, invariants, metrics,
                                                                 reporter.packet_books()),
        wall_seconds=wall,
        performance={"messages": hops, "node_wakeups": end.wakeups,
                     "messages_per_second": hops / wall if wall else None,
                     "build": build()},  # this process's hot path: compiled or pure Python
        provenance=provenance(spec),
    )
    rules = None
    if witness is not None:
        rules = witness.judge(prep.topology, spec.faults, ledger, in_flight, end.held_packets, slots_run)
        result.fault_books = rules
    final = verdict(result, rules)
    result.verdict = {"ok": final.ok, "reasons": list(final.reasons)}
    return result


def _complete(tracer: Tracer | None) -> bool:
    """Whether the trace file holds the whole run (no write failed)."""
    return tracer is None or tracer.error is None


def fault_impact(faults: FaultSchedule, ledger: FaultLedger, invariants: dict[str, Any],
                 metrics: dict[str, Any], packet_books: Sequence[PacketBook] = ()) -> dict[str, Any]:
    """The result's ``fault_impact``: what each fault cost, and a verdict on the scheme.

    * ``faults``: each scheduled fault with the messages its kind lost, copied, held back or
      garbled (``shared_by`` > 1: several faults of that kind share the counts);
    * ``messages``: the ledger's books; ``avoidable``: of the lost messages, those sent on a
      port the sender's context already showed dead;
    * ``packets``: the scheme's packets (unicasts, broadcasts) delivered or completed, lost
      to a fault, still in progress, read off the invariants its reporter declares its
      packet books (``packet_books``, :meth:`Reporter.packet_books`);
    * ``delivered_all_deliverable``: ``ok`` when nothing is unaccounted (``invariants.ok``)
      and no message was lost on a port its sender knew dead -- everything lost was destroyed
      by the faults themselves, before the scheme could know;
    * ``survivor_biased``: the delay metrics, which average completed packets only;
      ``theory``: the theory column is the fault-free model.
    """
    books = {"lost": ledger.causes, "duplicated": ledger.duplicated, "delayed": ledger.delayed,
             "corrupted": ledger.corrupted}
    listed = faults.impacts()
    groups: dict[tuple[tuple[str, str], ...], int] = {}  # faults that share ledger entries share their counts
    for _, _, entries_of in listed:
        groups[entries_of] = groups.get(entries_of, 0) + 1
    entries = []
    for kind, text, entries_of in listed:
        impact: dict[str, dict[str, int]] = {}
        for book, cause in entries_of:
            n = books[book].get(cause, 0)
            if n:
                impact.setdefault(book, {})[cause] = n
        row: dict[str, Any] = {"fault": text, "kind": kind, "messages": impact}
        if entries_of and groups[entries_of] > 1:
            row["shared_by"] = groups[entries_of]
        entries.append(row)
    avoidable = ledger.avoidable
    # accounted for: every invariant but a one-shot task's termination (a deadlock loses nothing)
    failing = [k for k, v in invariants.items() if isinstance(v, dict) and not v.get("ok", False)]
    accounted = bool(invariants.get("ok")) or failing == ["termination"]
    ok = accounted and not avoidable
    if not accounted:
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
        "packets": _packets(invariants, ledger.copies, packet_books),
        "detection": {"delay_slots": faults.detect},
        "delivered_all_deliverable": {"ok": ok, "why": why},
        "survivor_biased": [k for k in metrics if "delay" in k and not k.endswith("_ci95")],
        "theory": "fault-free model",
    }


def _packets(invariants: dict[str, Any], copies: int, books: Sequence[PacketBook]) -> dict[str, Any]:
    """Delivered / lost to a fault / in progress, from the invariants the reporter declares
    its packet books (``books``; ``copies``: copies a dup fault added, which count among the
    delivered and in progress), in the invariants' order.

    Each book carries its own copies: the invariant's ``dup_copies`` where it counts them;
    the ledger's total only where the invariant is the run's one packet book (then every
    copy is one of its packets). Copies of another book's packets are never stamped on it.

    Raises:
        SlotnetError: a declared book is missing from the invariants or lacks its counts.
    """
    kinds = {book.invariant: book.kind for book in books}
    for name, kind in kinds.items():
        inv = invariants.get(name)
        need = ("broadcasts", "completed") if kind == "broadcast" else ("delivered",)
        if not isinstance(inv, dict) or any(k not in inv for k in need) or (
                kind == "unicast" and "created" not in inv and "born" not in inv):
            raise SlotnetError(f"the reporter declares the {kind} packet book {name!r}, but its invariants have no "
                               f"such book with {', '.join(need)}{' and created or born' if kind == 'unicast' else ''}")
    out: dict[str, Any] = {}
    for name, inv in invariants.items():
        book = kinds.get(name)
        if book == "broadcast":
            out[name] = {"broadcasts": inv["broadcasts"], "completed": inv["completed"],
                         "lost_to_faults": inv.get("missed", 0), "in_progress": inv.get("in_progress", 0)}
        elif book == "unicast":
            lost = inv.get("dropped", inv.get("lost", {}))
            destroyed = sum(n for c, n in lost.items() if n > 0 and c != "node_finished") if isinstance(lost, dict) else 0
            out[name] = {"packets": inv.get("created", inv.get("born")), "delivered": inv["delivered"],
                         "lost_to_faults": destroyed,
                         "in_progress": int(inv.get("in_flight", 0)) + int(inv.get("held", 0))}
            own = inv.get("dup_copies", copies if len(kinds) == 1 else 0)
            if own:
                out[name]["dup_copies"] = own
            if inv.get("second_deliveries"):  # copies delivered after the packet's first delivery
                out[name]["second_deliveries"] = inv["second_deliveries"]
    return out
