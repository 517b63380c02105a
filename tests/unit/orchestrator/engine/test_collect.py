"""The end of a run (``orchestrator/engine/_collect.py``), unit by unit, on stand-in parts:
``single_error``, ``collect``, ``fault_impact``, its packet books (a one-shot task's
completion: ``tests/unit/orchestrator/engine/test_completion.py``).

Each test pins a behaviour exactly so that a changed line fails here in seconds
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from slotnet._build import build
from slotnet.errors import SchemeError, SlotnetError
from slotnet.fabric import FaultLedger, FaultSchedule
from slotnet.orchestrator.engine._collect import EndState, _packets, collect, fault_impact, single_error
from slotnet.orchestrator.engine._stability import StabilityMonitor
from slotnet.schemes._base import Claim, PacketBook

# ------------------------------------------------------------------ single_error


def test_single_error_prefers_a_slotnet_error_and_notes_the_others():
    a, b, c = ValueError("a"), SchemeError("b"), KeyError("c")
    chosen = single_error(BaseExceptionGroup("g", [a, BaseExceptionGroup("h", [b, c])]))
    assert chosen is b
    assert b.__notes__ == ["also: ValueError: a", "also: KeyError: 'c'"]
    assert not hasattr(a, "__notes__")


def test_single_error_first_leaf_without_a_slotnet_error():
    a, c = ValueError("a"), KeyError("c")
    assert single_error(BaseExceptionGroup("g", [BaseExceptionGroup("h", [a]), c])) is a
    assert a.__notes__ == ["also: KeyError: 'c'"]
    one = RuntimeError("x")
    assert single_error(BaseExceptionGroup("g", [one])) is one
    assert not hasattr(one, "__notes__")


def test_single_error_first_of_several_slotnet_errors():
    a, b = SlotnetError("a"), SchemeError("b")
    assert single_error(BaseExceptionGroup("g", [a, b])) is a
    assert a.__notes__ == ["also: SchemeError: b"]


# ------------------------------------------------------------------ stand-in parts


class _Reporter:
    def __init__(self, invariants=None, metrics=None, books=()):
        self.calls: list = []
        self._inv = invariants if invariants is not None else {"conservation": {"ok": True}}
        self._metrics = metrics if metrics is not None else {"delay": 2.0, "delay_ci95": 0.1}
        self._books = list(books)

    def run_ended(self, last, complete):
        self.calls.append(("run_ended", last, complete))

    def crash_losses(self, crashed):
        self.calls.append(("crash_losses", crashed))

    def packet_books(self):
        self.calls.append(("packet_books",))
        return self._books

    def holdings(self, packets):
        self.calls.append(("holdings", packets))

    def invariants(self, ledger, in_flight, held):
        self.calls.append(("invariants", ledger, in_flight, held))
        return dict(self._inv)

    def metrics(self):
        return self._metrics

    def per_node(self):
        return {"queue": [1, 2]}

    def series(self):
        return [{"slot": 0}]


def _prep(faults=None, theory=None, claims=None, trace=None, until="slots", cap=None, quantum=1, warmup=10):
    spec = SimpleNamespace(faults=faults or FaultSchedule(), seed=5, rng="mt", warmup=warmup, trace=trace,
                           # what the provenance's command names
                           scheme="sch", topology="ring:4", params={"a": 1}, load={"lam": 0.25}, slots=100,
                           max_backlog_per_node=None, series=False, shards=1)
    scheme = SimpleNamespace(name="sch", theory=theory, claims=claims, until=until)
    return SimpleNamespace(spec=spec, scheme=scheme, setup=SimpleNamespace(load={"lam": 0.25}),
                           topology=SimpleNamespace(describe=lambda: {"kind": "ring", "n": 4}), slots=100,
                           params={"a": 1, "b": None}, cap=cap, quantum=quantum)


def _end(ledger=None, in_flight=((1, 0, "m"),), delivered=7, crashed=None):
    return EndState(ledger=ledger or FaultLedger(), in_flight=list(in_flight), held=[0, 2], held_packets=["p", "q"],
                    delivered=delivered, wakeups=11, transport={"kind": "inprocess"},
                    **({} if crashed is None else {"crashed": crashed}))


def _stable_monitor():
    return StabilityMonitor(4, 0, 10, 1e9)


# ------------------------------------------------------------------ collect


def test_end_state_default_crashed():
    assert _end().crashed == []


def test_collect_fault_free_result():
    rep = _Reporter()
    end = _end()
    r = collect(_prep(), rep, _stable_monitor(), 60, 2.0, end)
    assert rep.calls[0] == ("run_ended", 59, True)
    assert rep.calls[1] == ("holdings", ["p", "q"])
    assert rep.calls[2] == ("crash_losses", [])
    assert rep.calls[3][0] == "invariants" and rep.calls[3][1] is end.ledger and rep.calls[3][3] == [0, 2]
    assert list(rep.calls[3][2]) == [(1, 0, "m")]
    assert r.scheme == "sch" and r.topology == {"kind": "ring", "n": 4} and r.seed == 5 and r.slots == 100
    assert r.warmup == 10 and r.params == {"a": 1} and r.load == {"lam": 0.25}
    assert r.provenance["command"] == "slotnet run sch -t ring:4 --param a=1 --lam 0.25 --slots 100 --warmup 10 --seed 5 --rng mt"
    assert r.metrics == {"delay": 2.0, "delay_ci95": 0.1, "stable": True}
    assert r.invariants == {"link_capacity": {"ok": True, "enforced": "every send"}, "conservation": {"ok": True},
                            "ok": True}
    assert r.theory is None
    assert r.stability == {"stable": True, "reason": "too few measured slots for a trend test", "batches": []}
    assert r.per_node == {"queue": [1, 2]} and r.series == [{"slot": 0}] and r.faults == []
    assert r.slots_run == 60 and r.transport == {"kind": "inprocess"} and r.trace_fingerprint is None
    assert r.fault_impact is None and r.wall_seconds == 2.0
    assert r.performance == {"messages": 8, "node_wakeups": 11, "messages_per_second": 4.0, "build": build()}


def test_collect_calls_every_end_hook_in_order_and_zero_wall():
    """collect always calls run_ended, holdings, crash_losses, invariants (no books asked in a fault-free run)."""
    rep = _Reporter()
    r = collect(_prep(), rep, _stable_monitor(), 60, 0.0, _end())
    assert [c[0] for c in rep.calls] == ["run_ended", "holdings", "crash_losses", "invariants"]
    assert r.performance["messages_per_second"] is None
    assert r.ok


def test_collect_reporter_metrics_are_copied():
    metrics = {"delay": 2.0}
    collect(_prep(), _Reporter(metrics=metrics), _stable_monitor(), 60, 1.0, _end())
    assert metrics == {"delay": 2.0}


def test_collect_invariant_failure_reaches_ok():
    r = collect(_prep(), _Reporter(invariants={"conservation": {"ok": False}}), _stable_monitor(), 60, 1.0, _end())
    assert r.invariants["ok"] is False and not r.ok


def _claims(setup, theory):
    return [Claim("w", "delay", "exact")]


def test_collect_judges_theory_fault_free_and_stable():
    theory_calls = []

    def theory(setup):
        theory_calls.append(setup.load)
        return {"w": 1.0}

    r = collect(_prep(theory=theory, claims=_claims), _Reporter(), _stable_monitor(), 60, 1.0, _end())
    assert theory_calls == [{"lam": 0.25}] and r.theory == {"w": 1.0}
    ta = r.invariants["theory_agreement"]
    assert ta["ok"] is False and ta["rows"][0]["ok"] is False
    assert r.invariants["ok"] is False


@pytest.mark.parametrize("why", ["incomplete", "unstable", "faults"])
def test_collect_reports_theory_without_judging(why):
    monitor = _stable_monitor()
    faults = FaultSchedule.parse(["crash@50:1"]) if why == "faults" else None
    if why == "unstable":
        monitor.sample(0, 10**10)
    until = "quiescent" if why == "incomplete" else "slots"  # a one-shot task that never went quiet: cut short
    r = collect(_prep(theory=lambda s: {"w": 1.0}, claims=_claims, faults=faults, until=until), _Reporter(), monitor,
                60, 1.0, _end())
    row = r.invariants["theory_agreement"]["rows"][0]
    assert row["judged"] is False and "ok" not in row
    assert r.invariants["theory_agreement"]["ok"] is True


def test_collect_passes_warmup_and_window_to_the_agreement():
    claims = lambda setup, theory: [Claim("w", "delay", "exact", horizon=1.0)]
    # warm-up 10 >= 2 horizons, window 60 - 10 = 50 >= 50 horizons: judged
    r = collect(_prep(theory=lambda s: {"w": 1.0}, claims=claims), _Reporter(), _stable_monitor(), 60, 1.0, _end())
    assert r.invariants["theory_agreement"]["rows"][0]["ok"] is False
    # window 59 - 10 = 49: not judged
    r = collect(_prep(theory=lambda s: {"w": 1.0}, claims=claims), _Reporter(), _stable_monitor(), 59, 1.0, _end())
    assert r.invariants["theory_agreement"]["rows"][0]["judged"] is False
    r = collect(_prep(theory=lambda s: {"w": 1.0}, claims=claims, warmup=1), _Reporter(), _stable_monitor(), 60,
                1.0, _end())
    assert r.invariants["theory_agreement"]["rows"][0]["judged"] is False


def test_collect_theory_without_claims_or_claims_without_theory():
    r = collect(_prep(theory=lambda s: {"w": 1.0}), _Reporter(), _stable_monitor(), 60, 1.0, _end())
    assert r.theory == {"w": 1.0} and "theory_agreement" not in r.invariants
    r = collect(_prep(theory=lambda s: None, claims=_claims), _Reporter(), _stable_monitor(), 60, 1.0, _end())
    assert r.theory is None and "theory_agreement" not in r.invariants


def test_collect_trace_fingerprint(tmp_path):
    path = tmp_path / "t.trace"
    path.write_bytes(b"trace bytes")
    digest = hashlib.sha256(b"trace bytes").hexdigest()
    prep = _prep(trace=SimpleNamespace(path=path))
    r = collect(prep, _Reporter(), _stable_monitor(), 60, 1.0, _end())
    assert r.trace_fingerprint == digest
    r = collect(prep, _Reporter(), _stable_monitor(), 60, 1.0, _end(), SimpleNamespace(error=None))
    assert r.trace_fingerprint == digest
    r = collect(prep, _Reporter(), _stable_monitor(), 60, 1.0, _end(), SimpleNamespace(error=OSError("full")))
    assert r.trace_fingerprint is None


def test_collect_under_faults():
    ledger = FaultLedger()
    ledger.add("lost", "crash", 3)
    ledger.add("duplicated", "dup", 2)
    faults = FaultSchedule.parse(["crash@50:1"])
    crashed = [(50, 1, ["x"])]
    inv = {"conservation": {"ok": True, "created": 4, "delivered": 4}}
    rep = _Reporter(invariants=inv, books=[PacketBook("conservation", "unicast")])
    r = collect(_prep(faults=faults), rep, _stable_monitor(), 60, 1.0, _end(ledger=ledger, crashed=crashed))
    assert ("crash_losses", crashed) in rep.calls
    assert r.faults == faults.to_list() == ["crash@50:1"]
    # delivered 7 + in flight 1 + the ledger's net count (3 lost - 2 copies)
    assert r.performance["messages"] == 9
    assert r.fault_impact == fault_impact(faults, ledger, r.invariants, r.metrics, rep.packet_books())
    assert r.fault_impact["packets"] == {"conservation": {"packets": 4, "delivered": 4, "lost_to_faults": 0,
                                                          "in_progress": 0, "dup_copies": 2}}
    assert r.fault_impact["delivered_all_deliverable"]["ok"] is True


# ------------------------------------------------------------------ fault_impact


def test_fault_impact_books_and_shared_counts():
    faults = FaultSchedule.parse(["crash@5:1", "crash@9:2", "loss=0.5@0-20"])
    ledger = FaultLedger()
    ledger.add("lost", "crash", 4)
    ledger.add("lost", "loss", 2)
    out = fault_impact(faults, ledger, {"ok": True}, {"delay": 1.0, "delay_ci95": 0.1, "hops": 2.0, "max_delay": 3})
    assert [row["fault"] for row in out["faults"]] == [text for _, text, _ in faults.impacts()]
    crash_rows = [row for row in out["faults"] if row["kind"] == "crash"]
    assert len(crash_rows) == 2
    assert all(row["messages"] == {"lost": {"crash": 4}} and row["shared_by"] == 2 for row in crash_rows)
    loss_row = next(row for row in out["faults"] if row["kind"] == "loss")
    assert loss_row["messages"] == {"lost": {"loss": 2}} and "shared_by" not in loss_row
    assert list(loss_row) == ["fault", "kind", "messages"]
    assert out["messages"] == {"lost": {"crash": 4, "loss": 2}}
    assert out["avoidable"] == {}
    assert out["packets"] == {}
    assert out["detection"] == {"delay_slots": 1}
    assert out["delivered_all_deliverable"] == {"ok": True, "why": "every loss was the faults' own doing, before the "
                                                                   "senders could know"}
    assert out["survivor_biased"] == ["delay", "max_delay"]
    assert out["theory"] == "fault-free model"
    assert list(out) == ["faults", "messages", "avoidable", "packets", "detection", "delivered_all_deliverable",
                         "survivor_biased", "theory"]


def test_fault_impact_each_book_and_zero_counts_left_out():
    faults = FaultSchedule.parse(["dup=0.5@0-9", "delay=0.5:2@0-9", "corrupt=0.5@0-9"])
    ledger = FaultLedger()
    ledger.add("duplicated", "dup", 3)
    ledger.add("delayed", "delay", 4)
    ledger.add("corrupted", "corrupt", 0)
    out = fault_impact(faults, ledger, {"ok": True}, {})
    by_kind = {row["kind"]: row["messages"] for row in out["faults"]}
    assert by_kind["dup"] == {"duplicated": {"dup": 3}}
    assert by_kind["delay"] == {"delayed": {"delay": 4}}
    assert by_kind["corrupt"] == {}
    ledger.add("corrupted", "corrupt", 5)
    ledger.add("lost", "corrupt", 1)
    by_kind = {row["kind"]: row["messages"] for row in fault_impact(faults, ledger, {"ok": True}, {})["faults"]}
    assert by_kind["corrupt"] == {"corrupted": {"corrupt": 5}, "lost": {"corrupt": 1}}


def test_fault_impact_verdicts():
    faults = FaultSchedule.parse(["crash@5:1"])
    ledger = FaultLedger()
    out = fault_impact(faults, ledger, {"ok": False}, {})
    assert out["delivered_all_deliverable"] == {"ok": False,
                                                "why": "an invariant is violated: something is unaccounted for"}
    out = fault_impact(faults, ledger, {}, {})
    assert out["delivered_all_deliverable"]["ok"] is False
    ledger.add("lost", "avoidable:node_down", 2)
    ledger.add("lost", "avoidable:link_down", 1)
    out = fault_impact(faults, ledger, {"ok": True}, {})
    assert out["avoidable"] == {"node_down": 2, "link_down": 1}
    assert out["delivered_all_deliverable"] == {
        "ok": False, "why": "3 messages were sent on ports their senders already saw dead, and lost there"}
    out = fault_impact(faults, ledger, {"ok": False}, {})
    assert out["delivered_all_deliverable"]["why"] == "an invariant is violated: something is unaccounted for"
    never = FaultSchedule.parse(["crash@5:1"], detect="never")
    out = fault_impact(never, FaultLedger(), {"ok": True}, {})
    assert out["detection"] == {"delay_slots": None}
    assert out["delivered_all_deliverable"] == {
        "ok": True, "why": "every loss was the faults' own doing (nodes are never told of dead ports: --detect never)"}
    out = fault_impact(FaultSchedule.parse(["crash@5:1"], detect=3), FaultLedger(), {"ok": True}, {})
    assert out["detection"] == {"delay_slots": 3}


# ------------------------------------------------------------------ _packets


def _u(*names: str) -> list[PacketBook]:
    return [PacketBook(n, "unicast") for n in names]


def test_packets_unicast_book():
    """A declared unicast book: packets, delivered, losses to faults (not node_finished), in progress, dup copies."""
    inv = {"ok": True, "conservation": {"ok": True, "created": 10, "delivered": 6, "in_flight": 1, "held": 2,
                                        "dropped": {"crash": 1, "node_finished": 4, "loss": 0}}}
    assert _packets(inv, 0, _u("conservation")) == {"conservation": {"packets": 10, "delivered": 6, "lost_to_faults": 1,
                                                                     "in_progress": 3}}
    assert _packets(inv, 2, _u("conservation"))["conservation"]["dup_copies"] == 2


def test_packets_unicast_born_and_lost_and_defaults():
    """born stands for created and lost for dropped; a lost count that is no mapping counts no fault."""
    inv = {"u": {"born": 5, "delivered": 5, "lost": {"link_down": 2, "stalled": 1}, "second_deliveries": 1}}
    assert _packets(inv, 0, _u("u")) == {"u": {"packets": 5, "delivered": 5, "lost_to_faults": 3, "in_progress": 0,
                                               "second_deliveries": 1}}
    inv = {"u": {"born": 5, "delivered": 5, "lost": 3, "second_deliveries": 0}}
    assert _packets(inv, 0, _u("u")) == {"u": {"packets": 5, "delivered": 5, "lost_to_faults": 0, "in_progress": 0}}
    inv = {"u": {"created": 5, "born": 9, "delivered": 4, "dropped": {"a": 1}, "lost": {"b": 7}}}
    assert _packets(inv, 0, _u("u"))["u"]["packets"] == 5 and _packets(inv, 0, _u("u"))["u"]["lost_to_faults"] == 1


def test_packets_reads_only_declared_books():
    """An invariant shaped like a book is no book unless the reporter declares it."""
    inv = {"u": {"created": 5, "delivered": 5}, "b": {"broadcasts": 1, "completed": 1}}
    assert _packets(inv, 0, []) == {}
    assert list(_packets(inv, 0, _u("u"))) == ["u"]


@pytest.mark.parametrize("inv,book", [
    ({"x": {"delivered": 3}}, PacketBook("x", "unicast")),
    ({"x": {"created": 3}}, PacketBook("x", "unicast")),
    ({"b": {"broadcasts": 4}}, PacketBook("b", "broadcast")),
    ({}, PacketBook("gone", "broadcast")),
    ({"y": 4}, PacketBook("y", "unicast")),
])
def test_a_declared_book_the_invariants_lack_is_an_error(inv, book):
    """A declared book missing from the invariants, or without its counts, is one SlotnetError naming it."""
    with pytest.raises(SlotnetError, match=f"packet book {book.invariant!r}"):
        _packets(inv, 0, [book])


def test_packets_own_dup_copies_win():
    """A book's own dup_copies wins over the ledger's count, even when 0."""
    inv = {"u": {"created": 5, "delivered": 5, "dup_copies": 4}}
    assert _packets(inv, 9, _u("u"))["u"]["dup_copies"] == 4
    inv = {"u": {"created": 5, "delivered": 5, "dup_copies": 0}}
    assert "dup_copies" not in _packets(inv, 9, _u("u"))["u"]


def test_packets_broadcast_book():
    """A declared broadcast book: broadcasts, completed, missed as lost to faults, in progress."""
    inv = {"b": {"ok": True, "broadcasts": 4, "completed": 2, "missed": 1, "in_progress": 1}}
    b = [PacketBook("b", "broadcast")]
    assert _packets(inv, 3, b) == {"b": {"broadcasts": 4, "completed": 2, "lost_to_faults": 1, "in_progress": 1}}
    assert _packets({"b": {"broadcasts": 4, "completed": 4}}, 0, b) == {
        "b": {"broadcasts": 4, "completed": 4, "lost_to_faults": 0, "in_progress": 0}}


def test_packets_ledger_copies_only_for_the_one_book():
    """The ledger's copies go to a book only when it is the run's one declared book."""
    u = {"created": 5, "delivered": 5}
    b = {"broadcasts": 1, "completed": 1}
    assert _packets({"u": dict(u), "b": dict(b)}, 3, [*_u("u"), PacketBook("b", "broadcast")]) == {
        "u": {"packets": 5, "delivered": 5, "lost_to_faults": 0, "in_progress": 0},
        "b": {"broadcasts": 1, "completed": 1, "lost_to_faults": 0, "in_progress": 0}}
    assert "dup_copies" not in _packets({"u": dict(u), "v": dict(u)}, 3, _u("u", "v"))["u"]
    assert _packets({"u": dict(u), "x": {"delivered": 1}}, 3, _u("u"))["u"]["dup_copies"] == 3

