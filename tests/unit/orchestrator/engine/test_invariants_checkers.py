"""Tests that check values, and a failing case for every checker, so a one-line bug cannot pass unnoticed."""

from __future__ import annotations

from typing import Any

import pytest

from slotnet import RunSpec, register, run
from slotnet.fabric import parse_topology
from slotnet.nodes import Node
from slotnet.orchestrator.engine._invariants import check_invariants
from slotnet.orchestrator.engine._stability import StabilityMonitor
from slotnet.schemes import SCHEMES, Scheme, Setup
from slotnet.schemes.deflection._inputs import DeflectionInputs
from slotnet.schemes.deflection.reporter import DeflectionReporter
from slotnet.schemes.kit import BaseReporter, BroadcastReporter, UnicastReporter

# ------------------------------------------------------------------ loss window edges


class _Ticker(Node):
    """Node 0 sends, on port 0, the number of the slot it sends in, every slot 0..14; node 1 records what arrives."""

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.node == 0:
            for _ in range(15):
                ctx.send(0, ctx.slot)
                await ctx.next_slot()
            return
        while True:
            for _, sent_in in await ctx.idle():
                ctx.record("got", sent_in)


class _Got(BaseReporter):
    events = {"got": ("sent_in",)}

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.got: list[tuple[int, int]] = []

    def handlers(self) -> dict[str, Any]:
        return {"got": lambda node, slot, sent_in: self.got.append((sent_in, slot))}

    def metrics(self) -> dict[str, Any]:
        return {"got": sorted(self.got), "lost": self.lost_messages}


@pytest.fixture
def ticker():
    scheme = Scheme(name="edge-probe", summary="loss window edges", source="tests", node=_Ticker, reporter=_Got,
                    prepare=lambda topology, params, load: dict(params))
    register(scheme)
    yield scheme.name
    SCHEMES.pop(scheme.name, None)


@pytest.mark.parametrize("fault, lost", [
    ("loss=1@5-8", {5, 6, 7}),      # the window [5, 8): messages on the wire in slots 5, 6, 7
    ("loss=1@0-1", {0}),
    ("loss=1@14", {14}),            # open-ended: from slot 14 on
    ("loss=1@13-14", {13}),
    ("loss=0@0-20", set()),
])
def test_loss_window_judges_messages_at_the_slot_they_were_sent(ticker, fault, lost):
    """A message sent in slot s is lost iff s lies in [from, until); it arrives (is read) in slot s + 1."""
    r = run(RunSpec(ticker, "hypercube:1", slots=20, faults=[fault]))
    got = r.metrics["got"]
    assert [s for s, _ in got] == [s for s in range(15) if s not in lost]
    assert all(read == sent + 1 for sent, read in got)
    assert r.metrics["lost"] == len(lost)


# ------------------------------------------------------------------ deflection-distance histogram


@pytest.mark.parametrize("v, seed", [(0.5, 3), (1.0, 7), (2.0, 3)])
def test_deflection_distance_histogram_matches_the_model(v, seed):
    """Table IV's quantity: each bucket of the simulated histogram within 0.01 of the model's (a shift fails)."""
    r = run(RunSpec("deflection", "hypercube:6", load={"offered": v}, slots=1100, warmup=100, seed=seed))
    sim, model = r.metrics["deflection_distance_hist"], r.theory["deflection_distance_hist"]
    assert len(sim) == len(model) == 6 and sum(sim) == pytest.approx(1.0)
    for i, (s, m) in enumerate(zip(sim, model)):
        assert abs(s - m) < 0.01, (i + 1, s, m)
    assert sim[0] > sim[1] > sim[2]  # deflected mostly one hop from home


def test_deflection_histogram_counts_by_distance():
    """The reporter files each deflection under its distance (index 0 = distance 1), normalised."""
    rep = DeflectionReporter(Setup(parse_topology("hypercube:3"), DeflectionInputs("blocking", 3, "random"), {}, 10, 0, 1))
    rep.step(0, 0, 0, 0, 3, 3, 0, 0, (1, 1, 3), (), (), 0)
    rep.end_slot(0)
    assert rep.metrics()["deflection_distance_hist"] == [2 / 3, 0.0, 1 / 3]


# ------------------------------------------------------------------ mean_reception_delay


def _bcast(d: int, slots: int = 100, warmup: int = 0) -> BroadcastReporter:
    return BroadcastReporter(Setup(parse_topology(f"hypercube:{d}"), {}, {}, slots, warmup, 1))


def test_mean_reception_delay_of_a_lone_packet_exactly():
    """A lone packet born at τ = 4.3 at node 0 of the 3-cube, sent in slot 5: node x reads it in slot 5 + |x|.

    D = 8 - 4.3 = 3.7; the reception delay is the mean over the 7 receivers, 0.7 + 12/7.
    """
    rep = _bcast(3)
    rep.step(0, 5, ((1, 4.3),), (), 1, 0)
    for slot in range(6, 9):
        for x in range(1, 8):
            if bin(x).count("1") == slot - 5:
                rep.step(x, slot, (), ((0, 1),), 0, 0)
        rep.end_slot(slot)
    m = rep.metrics()
    assert m["broadcasts_measured"] == 1
    assert m["mean_broadcast_delay"] == pytest.approx(3.7)
    assert m["mean_reception_delay"] == pytest.approx(0.7 + 12 / 7)


def test_mean_reception_delay_of_lone_packets_in_a_run():
    """At light load on the 4-cube nearly every packet is alone: E = 1/2 + d 2^(d-1)/(2^d - 1) = 2.633...,
    and per packet the reception delay is D - d + d 2^(d-1)/(2^d - 1) (the tree paths are shortest).

    The few packets that meet another shift both means a little (over 60 seeds: the gap
    -0.010 from the lone packets' with a standard error of 0.001, one run's gap spreading
    about 0.007), so the check averages 8 independent runs rather than trusting one seed."""
    d = 4
    mean_hops = d * 2 ** (d - 1) / (2**d - 1)
    runs = [run(RunSpec("bcast-simple", f"hypercube:{d}", load={"rho": 0.02}, slots=4000, warmup=100, seed=seed)).metrics
            for seed in range(1, 9)]
    assert all(m["broadcasts_measured"] > 200 for m in runs)

    def mean(key: str) -> float:
        return sum(m[key] for m in runs) / len(runs)

    assert mean("mean_reception_delay") - mean("mean_broadcast_delay") == pytest.approx(mean_hops - d, abs=0.02)
    assert mean("mean_reception_delay") == pytest.approx(0.5 + mean_hops, abs=0.06)
    assert mean("mean_broadcast_delay") == pytest.approx(d + 0.5, abs=0.06)


# ------------------------------------------------------------------ every checker can fail


def test_invariant_aggregator_fails_when_any_invariant_fails():
    """ok is the conjunction: one failing (or ok-less) invariant makes the run's invariants fail."""
    assert check_invariants({"a": {"ok": True}, "b": {"ok": True}})["ok"] is True
    assert check_invariants({"a": {"ok": True}, "b": {"ok": False}})["ok"] is False
    assert check_invariants({"a": {"ok": False}, "b": {"ok": True}})["ok"] is False
    assert check_invariants({"a": {"created": 3}})["ok"] is False
    assert check_invariants({})["ok"] is True and check_invariants({})["link_capacity"]["ok"] is True


def test_deflection_conservation_fails_for_a_missing_packet():
    """A packet created but neither delivered, in flight, held nor lost breaks conservation."""
    rep = DeflectionReporter(Setup(parse_topology("hypercube:3"), DeflectionInputs("blocking", 3, "random"), {}, 10, 0, 1))
    rep.step(0, 0, 2, 2, 2, 0, 2, 2, (), (), (), 0)
    rep.end_slot(0)
    assert rep.invariants({}, [(0, 0, "p"), (1, 0, "q")], [0] * 8)["conservation"]["ok"] is True
    bad = rep.invariants({}, [(0, 0, "p")], [0] * 8)["conservation"]
    assert bad["ok"] is False and bad["unaccounted"] == 1


def test_unicast_conservation_fails_for_a_missing_packet():
    """Unicast: born = delivered + in flight + held + lost, or the invariant fails."""
    rep = UnicastReporter(Setup(parse_topology("hypercube:3"), {}, {}, 10, 0, 1))
    rep.born(0, 0, 3)
    rep.delivered(1, 2, 0.5, 2)
    rep.end_slot(2)
    assert rep.invariants({"loss": 1}, [(0, 0, "p")], [0] * 8)["conservation"]["ok"] is True
    assert rep.invariants({}, [(0, 0, "p")], [0] * 8)["conservation"]["ok"] is False


def test_exactly_once_fails_on_a_duplicate_an_unknown_packet_and_a_miss():
    """A second reception, a packet never born, or a packet nobody still carries (without faults) fail."""
    rep = _bcast(2)
    rep.step(0, 1, ((1, 0.5),), (), 1, 0)
    rep.step(1, 2, (), ((0, 1),), 0, 0)
    rep.end_slot(2)
    assert rep.invariants({}, [(0, 2, (0, 1))], [0] * 4)["exactly_once"]["ok"] is True
    missed = rep.invariants({}, [], [0] * 4)["exactly_once"]
    assert missed["ok"] is False and missed["missed"] == 1 and missed["misses"][0]["missing_nodes"] == [2, 3]
    assert rep.invariants({"loss": 1}, [], [0] * 4)["exactly_once"]["ok"] is True  # a fault explains the miss
    rep.step(1, 3, (), ((0, 1),), 0, 0)
    dup = rep.invariants({}, [(0, 2, (0, 1))], [0] * 4)["exactly_once"]
    assert dup["ok"] is False and dup["duplicate_receptions"] == 1
    rep2 = _bcast(2)
    rep2.step(3, 1, (), ((2, 9),), 0, 0)
    assert rep2.invariants({}, [], [0] * 4)["exactly_once"]["ok"] is False


def test_stability_monitor_fails_on_growth_and_on_the_cap():
    """A steadily growing backlog is unstable; one past the cap stops the run at once."""
    flat = StabilityMonitor(4, 0, 200, 100.0)
    growing = StabilityMonitor(4, 0, 200, 100.0)
    for slot in range(200):
        assert flat.sample(slot, 8 + slot % 3)
        assert growing.sample(slot, 4 + slot // 2)
    assert flat.verdict()["stable"] is True
    assert growing.verdict()["stable"] is False and growing.verdict()["reason"] == "backlog grows steadily"
    capped = StabilityMonitor(4, 0, 200, 10.0)
    assert capped.sample(0, 40) and not capped.sample(1, 41)
    assert capped.verdict()["stable"] is False and capped.verdict()["stopped_at_slot"] == 1
