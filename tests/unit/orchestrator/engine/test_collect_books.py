"""fault_impact's packet books close, each with its own copies."""

from __future__ import annotations

import pytest

import slotnet
from slotnet.nodes import Node
from tests.support.probes import register


def _impact(scheme: str, topology: str, load: dict, faults: list[str], **params) -> dict:
    spec = slotnet.RunSpec(scheme, topology, load=load, params=params, slots=40, seed=3, faults=faults)
    return slotnet.run(spec).fault_impact


def test_dup_copies_of_broadcasts_are_not_stamped_on_the_unicast_book():
    """STAR without unicasts: 88 broadcast copies were once booked as unicast dup_copies."""
    packets = _impact("star", "torus:4x4", {"rho": 0.2}, ["dup=0.2"])["packets"]
    assert "dup_copies" not in packets["unicast_conservation"]
    assert packets["unicast_conservation"]["packets"] == 0


@pytest.mark.parametrize("scheme, topology, load, params", [
    ("star", "torus:4x4", {"rho": 0.2}, {"lam_unicast": "0.05"}),
    ("deflection", "hypercube:4", {"offered": 1.0}, {}),
    ("m2o-greedy", "mesh:4x4", {}, {}),
])
def test_unicast_books_close_with_their_own_copies(scheme, topology, load, params):
    """packets + dup_copies = delivered (+ second deliveries) + lost_to_faults + in_progress, for every unicast book."""
    packets = _impact(scheme, topology, load, ["dup=0.2", "loss=0.05"], **params)["packets"]
    for name, book in packets.items():
        if "packets" in book:
            assert book["packets"] + book.get("dup_copies", 0) == \
                book["delivered"] + book.get("second_deliveries", 0) + book["lost_to_faults"] + book["in_progress"], (name, book)


FORCED = slotnet.RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=27, seed=643,
                         faults=slotnet.FaultSchedule.parse(["stall@17:26:13"], detect=0))


def test_a_forced_send_into_a_dead_port_is_not_avoidable():
    """A bufferless deflection node with more packets than live ports must use a dead one: not avoidable."""
    impact = slotnet.run(FORCED).fault_impact
    assert impact["messages"]["lost"]["stalled"] > 0
    assert impact["avoidable"] == {}
    assert impact["delivered_all_deliverable"]["ok"]


class Blind(Node):
    """Sends on port 0 every slot, dead or not, leaving its other ports idle."""

    async def run(self) -> None:
        while True:
            self.ctx.send(0, [self.ctx.node])
            await self.ctx.next_slot()


@pytest.mark.parametrize("must_forward", [False, True])
def test_an_unforced_send_into_a_dead_port_is_avoidable(monkeypatch, must_forward):
    """A node that uses a port it sees dead while a live one stays idle lost its message by choice: avoidable,
    bufferless or not."""
    register("blind", Blind, monkeypatch, must_forward=must_forward)
    spec = slotnet.RunSpec("blind", "hypercube:3", slots=12, seed=1,
                           faults=slotnet.FaultSchedule.parse(["link-down@3:0:0"], detect=0))
    impact = slotnet.run(spec).fault_impact
    assert impact["avoidable"].get("link_down", 0) > 0
    assert not impact["delivered_all_deliverable"]["ok"]


def test_forced_and_avoidable_agree_across_shards():
    """The judgement crosses shard borders: two in-memory shards give the one-process fault_impact."""
    import dataclasses

    import trio

    from slotnet.orchestrator.shard._memory_link import run_sharded_in_memory

    one = slotnet.run(FORCED).fault_impact
    two = trio.run(lambda: run_sharded_in_memory(dataclasses.replace(FORCED, shards=2).prepare())).fault_impact
    assert one == two


def test_explore_crash_points_with_instant_detection_blames_no_forced_send():
    """The reported explore run: 9 of 16 crash points failed on forced sends; none does now."""
    from slotnet.orchestrator.tools._explore import explore

    spec = slotnet.RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=60, seed=1,
                           faults=slotnet.FaultSchedule.parse([], detect=0))
    report = explore(spec, "crash-points", crash_slots=[5, 17], jobs=1, detect=0)
    failed = [s for s in report["scenarios"] if not s["ok"]]
    assert len(report["scenarios"]) == 16
    assert not failed, failed[:2]
