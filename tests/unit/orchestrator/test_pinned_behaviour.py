"""Behaviours fixed once and pinned here, each by a test that fails when it breaks.

* batch means start at the warm-up: its first measured slot opens the first batch, and
  a packet born before it is not measured;
* star's link utilisation is over the slots actually run when the stability monitor
  stops a run early, never over the slots planned;
* the stability monitor judges per node: its cap and its trend thresholds are per node;
* explore judges a node that crashes in the first slot of an epoch as down in that epoch;
* two overlapping loss windows combine independently: (1 - a)(1 - b) of the messages survive;
* the CLI refuses ``--rho nan``, ``--offered nan`` and the empty window ``--trace-slots 5:5``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.fabric import FaultSchedule, PortTimeline, parse_topology
from slotnet.nodes import Node
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.engine._fault_rules import _epochs, _reachable
from slotnet.orchestrator.engine._stability import MIN_TREND_SLOTS, StabilityMonitor
from slotnet.schemes import SCHEMES, Scheme, Setup, register
from slotnet.schemes.kit import BaseReporter, BatchMeans, BroadcastReporter, UnicastReporter, WindowBatches, ratio_ci95

# ------------------------------------------------------------------ batch means at the warm-up


def test_batch_means_start_at_the_warm_up():
    """Warm-up 100 of 200 slots: batches of 10 measured slots, the first opened by slot 100."""
    b = BatchMeans(100, 200)
    assert (b.n, b.width) == (10, 10.0)
    assert [b.batch(s) for s in (100, 109, 110, 119, 190, 199)] == [0, 0, 1, 1, 9, 9]
    for slot in range(100, 200):
        b.add(slot, float(slot // 10))  # batch k holds the value k + 10
    assert b.sums == [10.0 * (k + 10) for k in range(10)] and b.counts == [10.0] * 10


def test_window_batches_start_at_the_warm_up():
    """The streaming ratio's batches are ratio_ci95's over the measured slots only: slot warmup opens batch 0."""
    warmup, slots = 37, 137
    wb = WindowBatches(warmup, slots)
    nums, dens = [], []
    for slot in range(warmup, slots):
        num, den = float(slot % 7), 1.0 + slot % 3
        wb.add(slot, num, den)
        nums.append(num)
        dens.append(den)
    assert wb.bounds == [10 * k for k in range(10)]
    assert wb.nums[0] == sum(nums[:10]) and wb.dens[-1] == sum(dens[90:])
    assert wb.half_width() == pytest.approx(ratio_ci95(nums, dens))


def _setup(warmup: int, slots: int = 100) -> Setup:
    return Setup(parse_topology("hypercube:3"), {}, {}, slots, warmup, 1)


def test_a_packet_born_before_the_warm_up_is_not_measured():
    """Births are continuous: τ = 19.5 is before a warm-up of 20 slots, τ = 20.0 is in it (unicast and broadcast)."""
    uni = UnicastReporter(_setup(20))
    uni.delivered(1, 25, 19.5, 2)
    uni.delivered(1, 26, 20.0, 2)
    uni.end_slot(26)
    assert uni.metrics()["packets_measured"] == 1 and uni.metrics()["mean_delay"] == 6.0
    assert uni.delays.counts[0] == 1.0
    bc = BroadcastReporter(_setup(20))
    bc.step(0, 20, ((1, 19.5), (2, 20.0)), (), 2, 0)
    for slot in range(21, 24):
        for x in range(1, 8):
            if bin(x).count("1") == slot - 20:
                bc.step(x, slot, (), ((0, 1), (0, 2)), 0, 0)
        bc.end_slot(slot)
    m = bc.metrics()
    assert m["broadcasts_measured"] == 1 and m["mean_broadcast_delay"] == 3.0
    assert bc.d_batches.counts[0] == 1.0


# ------------------------------------------------------------------ star: link use over the slots run


def test_star_link_utilisation_is_over_the_slots_run_on_early_stop():
    """Stopped early by the monitor, link use is what was sent per link and slot run after the warm-up."""
    r = run(RunSpec("star", "torus:4x4", load={"rho": 1.05}, slots=3000, warmup=20, seed=1, max_backlog_per_node=20))
    assert r.stability["stable"] is False and r.slots_run < 3000
    sent = sum(sum(row) for row in r.per_node["sent_per_port"])
    links = r.topology["n_links"]
    assert r.measured_slots == r.slots_run - 20 > 0
    assert r.metrics["link_utilization"] == pytest.approx(sent / (links * r.measured_slots))
    assert r.metrics["link_utilization"] <= 1.0


# ------------------------------------------------------------------ the stability monitor, per node


def _verdict(n: int, totals: list[int]) -> dict[str, Any]:
    mon = StabilityMonitor(n, 0, len(totals), 1000.0)
    for slot, q in enumerate(totals):
        assert mon.sample(slot, q)
    return mon.verdict()


def test_stability_trend_is_judged_per_node():
    """The same steadily growing total backlog is stable on 1000 nodes (0.4 per node) and not on 10 (40 per node)."""
    totals = [4 * (s // 22) for s in range(220)]  # grows by 36 over the run, in every batch
    wide, narrow = _verdict(1000, totals), _verdict(10, totals)
    assert wide["stable"] is True and wide["increasing_steps"] == 9
    assert max(wide["batch_backlog_per_node"]) < 0.5
    assert narrow["stable"] is False and narrow["reason"] == "backlog grows steadily"


def test_a_short_rising_window_is_undetermined_not_unstable():
    """Fewer measured slots than the trend test needs: a rise is undetermined (None), never "unstable";
    the same rise over MIN_TREND_SLOTS slots is unstable."""
    short = _verdict(10, [4 * (s // 4) for s in range(40)])
    assert short["stable"] is None and short["reason"].startswith("undetermined")
    assert short["increasing_steps"] == 9
    long = _verdict(10, [s // 2 for s in range(MIN_TREND_SLOTS)])
    assert long["stable"] is False and long["reason"] == "backlog grows steadily"
    flat = _verdict(10, [5] * 40)
    assert flat["stable"] is True


def test_a_short_broadcast_run_filling_from_empty_is_not_called_unstable():
    """bcast-indirect at rho = 0.4, below its limit (28): 40 slots from an empty network only fill it.
    Seed 1 is a run whose backlog rises over those slots (with others it does not, and they are stable)."""
    r = run(RunSpec("bcast-indirect", "hypercube:3", load={"rho": 0.4}, slots=40, seed=1))
    assert r.invariants["ok"] and r.theory["stable"] is True
    assert r.stability["stable"] is None and r.metrics["stable"] is None


def test_stability_cap_is_per_node():
    """A cap of 5 packets per node on 10 nodes stops the run past 50 queued packets, not past 5."""
    mon = StabilityMonitor(10, 0, 100, 5.0)
    assert mon.sample(0, 6) and mon.sample(1, 50)
    assert not mon.sample(2, 51)
    v = mon.verdict()
    assert v["stable"] is False and v["stopped_at_slot"] == 2
    assert v["reason"] == "backlog exceeded 5 packets per node" and v["final_backlog_per_node"] == 5.1


# ------------------------------------------------------------------ explore: a crash opens its epoch


def test_a_node_crashing_in_an_epochs_first_slot_is_down_in_it():
    """crash@5:2 and recover@9:2: node 2 is down in the epoch [5, 9) and up again from 9."""
    schedule = FaultSchedule.parse(["crash@5:2", "recover@9:2"])
    assert _epochs(schedule, PortTimeline(), 20) == [(0, 5, frozenset()), (5, 9, frozenset({2})), (9, 20, frozenset())]
    topology = parse_topology("mesh:5")
    _, _, dead = _epochs(schedule, PortTimeline(), 20)[1]
    assert _reachable(topology, 0, 5, dead, PortTimeline()) == {0, 1}  # node 2 is down: it cuts the line
    assert _reachable(topology, 2, 5, dead, PortTimeline()) == set()


def test_a_crash_at_slot_0_is_down_from_the_first_epoch():
    """The first epoch opens at slot 0: a node crashed there is down in it."""
    assert _epochs(FaultSchedule.parse(["crash@0:1"]), PortTimeline(), 10) == [(0, 10, frozenset({1}))]


# ------------------------------------------------------------------ overlapping loss windows


def test_overlapping_loss_windows_combine_independently():
    """loss=0.2@0-10 and loss=0.5@5-15: 0.2, then 1 - 0.8 x 0.5 = 0.6 where they overlap, then 0.5, then none."""
    schedule = FaultSchedule.parse(["loss=0.2@0-10", "loss=0.5@5-15"])
    (stage,) = schedule.message_stages()
    assert [stage.rate(s) for s in (0, 4, 5, 9, 10, 14, 15)] == pytest.approx([0.2, 0.2, 0.6, 0.6, 0.5, 0.5, 0.0])


class _Flood(Node):
    """Every node sends one message on every port in each of slots 0..99."""

    async def run(self) -> None:
        ctx = self.ctx
        for _ in range(100):
            for port in range(len(ctx.geometry.ports(ctx.node))):
                ctx.send(port, 0)
            await ctx.next_slot()


class _Quiet(BaseReporter):
    events: Mapping[str, tuple[str, ...]] = {}

    def handlers(self) -> Mapping[str, Any]:
        return {}

    def metrics(self) -> dict[str, Any]:
        return {"lost": self.lost_messages}


@pytest.fixture
def flood():
    register(Scheme(name="flood-probe", summary="every port, every slot", source="tests", node=_Flood, reporter=_Quiet,
                    prepare=lambda topology, params, load: dict(params)))
    yield "flood-probe"
    SCHEMES.pop("flood-probe", None)


def test_overlapping_loss_windows_lose_what_the_product_says(flood):
    """38,400 messages under loss=0.2 and loss=0.5 at once: 60% are lost (not 70% or 50%)."""
    r = run(RunSpec(flood, "hypercube:6", slots=101, seed=4, faults=["loss=0.2@0-100", "loss=0.5@0-100"]))
    sent = 64 * 6 * 100
    assert r.metrics["lost"] / sent == pytest.approx(0.6, abs=0.015)


# ------------------------------------------------------------------ CLI refusals


@pytest.mark.parametrize("argv, fragment", [
    (["run", "bcast-simple", "-t", "hypercube:3", "--rho", "nan"], "--rho must be a finite number >= 0, got nan"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "nan"], "--offered must be a finite number >= 0, got nan"),
    (["theory", "bcast-simple", "-t", "hypercube:3", "--rho", "nan"], "--rho must be a finite number >= 0, got nan"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "0.5", "--trace", "{tmp}/t.jsonl", "--trace-slots", "5:5"],
     "--trace-slots must look like A:B with 0 <= A < B, got '5:5'"),
])
def test_cli_refuses_nan_loads_and_an_empty_trace_window(argv, fragment, capsys, tmp_path):
    """Exit status 2, one line on stderr naming the flag; nothing runs."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and fragment in err
    assert not (tmp_path / "t.jsonl").exists()
