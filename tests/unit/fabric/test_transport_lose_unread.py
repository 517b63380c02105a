"""``Transport.lose_unread``: a message its receiver never read names its sender when the in-port is known."""

from __future__ import annotations

from slotnet.fabric import FaultSchedule, SlotClock, parse_topology
from slotnet.fabric._transport import InProcessTransport


def test_an_unread_message_names_its_sender_and_port_from_its_in_port():
    """On a 4-node ring-like mesh, a message read on in-port p of node v came from v's neighbour on p."""
    topo = parse_topology("mesh:2x2")
    lost: list = []
    t = InProcessTransport(topo, SlotClock(), FaultSchedule(), seed=0, on_lost=lambda *a: lost.append(a))
    t.clock.slot = 3
    port = next(p.index for p in topo.ports(0))
    sender = topo.neighbour(0, port)
    t.lose_unread(0, ["m"], "node_finished", port)
    t.lose_unread(0, ["n"], "crash")
    assert lost == [(3, sender, topo.reverse_port(0, port), 0, ["m"], "node_finished"),
                    (3, -1, -1, 0, ["n"], "crash")]
    assert t.ledger.lost == {"node_finished": 1, "crash": 1}
