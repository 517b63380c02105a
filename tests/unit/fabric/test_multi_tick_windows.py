"""Message-fault windows judge a multi-tick message by the slot its sender started it in (issue #35),
through the in-process transport and a whole run."""

from __future__ import annotations

import slotnet
from slotnet.fabric import FaultSchedule, InProcessTransport, SlotClock, parse_topology
from tests.support.deliver import deliver


def _transport(faults: list[str]) -> InProcessTransport:
    return InProcessTransport(parse_topology("hypercube:2"), SlotClock(), FaultSchedule.parse(faults), seed=1, quantum=4)


def _send_long(t: InProcessTransport, slot: int) -> None:
    """Node 0 starts a four-tick message on port 0 in ``slot`` (it arrives at slot + 4)."""
    t.clock.slot = slot
    t.outlet(0).send(0, "long", 1.0)


def test_a_window_opening_while_the_message_is_on_the_wire_does_not_touch_it():
    """loss=1@5-10: a message started in 3 and on the wire until 6 arrives; one started in 5 is lost."""
    t = _transport(["loss=1@5-10"])
    _send_long(t, 3)
    assert deliver(t, 7) == [(1, [(0, "long")])]
    _send_long(t, 7)
    assert deliver(t, 11) == [] and t.ledger.lost == {"loss": 1}


def test_a_window_closing_while_the_message_is_on_the_wire_still_judges_it():
    """dup=1@0-2: a message started in 1 is copied though its last tick (4) is past the window."""
    t = _transport(["dup=1@0-2"])
    _send_long(t, 1)
    assert deliver(t, 5) == [(1, [(0, "long")])]
    assert t.ledger.duplicated == {"dup": 1} and deliver(t, 6) == [(1, [(0, "long")])]


def test_the_reported_run_loses_no_packet_sent_before_the_window():
    """The issue's run: monotone on mesh:2x2 under loss=1@15-20 lost a packet sent in slot 12; now nothing sent before 15 is lost."""
    spec = slotnet.RunSpec("monotone", "mesh:2x2", params={"active": "3", "placement": "spread", "placement_seed": "6"},
                           seed=8944, faults=["loss=1@15-20"])
    result = slotnet.run(spec)
    lost = result.fault_impact["messages"].get("lost", {})
    assert lost.get("loss", 0) == 0, lost
    assert result.invariants["ok"]
