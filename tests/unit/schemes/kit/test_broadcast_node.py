"""The kit's broadcast node skeleton (:mod:`slotnet.schemes.kit._broadcast_node`), unit by unit.

What the run-level tests do not pin: how a node numbers its packets (consecutively, from
a base that a restart moves past every number an earlier incarnation could have used),
and the port count a scheme's subclass reads. ``devtools/mutation.sh`` runs these against
every mutant of the module.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from slotnet.schemes.kit import INCARNATION_SHIFT, BroadcastNode, first_seq


def _ctx(incarnation: int = 0, ports: int = 3, lam: float = 2.0, slot: int = 0, seed: int = 1) -> Any:
    return SimpleNamespace(incarnation=incarnation, ports=tuple(range(ports)), params=SimpleNamespace(lam=lam),
                           rng=random.Random(seed), slot=slot)


def test_a_restarted_node_numbers_from_its_incarnation_shifted_32_bits():
    assert INCARNATION_SHIFT == 32
    assert [first_seq(_ctx(incarnation=i)) for i in range(4)] == [0, 1 << 32, 2 << 32, 3 << 32]


@given(incarnation=st.integers(0, 2**20), births=st.integers(0, 2**32 - 1))
def test_no_two_incarnations_share_a_sequence_number(incarnation, births):
    """An incarnation numbers its packets first_seq + 1, + 2, ...: below 2**32 packets it
    never reaches the next incarnation's first number."""
    assert first_seq(_ctx(incarnation=incarnation)) + births < first_seq(_ctx(incarnation=incarnation + 1))


def test_births_are_numbered_consecutively_after_the_first_seq():
    node = BroadcastNode(_ctx(incarnation=1, lam=3.0))
    got = node.births(5) + node.births(9)
    assert len(got) > 3
    assert [seq for seq, _ in got] == [(1 << 32) + k for k in range(1, len(got) + 1)]
    assert all(tau < 9 for _, tau in got) and [tau for _, tau in got] == sorted(tau for _, tau in got)


def test_the_node_knows_its_port_count():
    assert BroadcastNode(_ctx(ports=5)).n_ports == 5
    assert BroadcastNode(_ctx(ports=1)).n_ports == 1


def test_the_largest_queue_counts_from_the_first_measured_slot():
    from slotnet.fabric import parse_topology
    from slotnet.schemes import Setup
    from slotnet.schemes.kit import BroadcastReporter

    rep = BroadcastReporter(Setup(parse_topology("hypercube:2"), {}, {}, 20, 5, 1))
    rep.step(1, 4, (), (), 9, 9)  # the warm-up's last slot: not measured
    assert (rep.max_q, rep.max_q_node) == (0, -1)
    rep.step(2, 5, (), (), 3, 3)  # the first measured slot
    assert (rep.max_q, rep.max_q_node) == (3, 2)
    rep.step(3, 6, (), (), 3, 2)  # a tie keeps the first node
    assert (rep.max_q, rep.max_q_node) == (3, 2) and rep.node_max_q == [0, 9, 3, 3]


def _bcast_reporter():
    from slotnet.fabric import parse_topology
    from slotnet.schemes import Setup
    from slotnet.schemes.kit import BroadcastReporter

    return BroadcastReporter(Setup(parse_topology("hypercube:2"), {}, {}, 20, 0, 1))


def test_exactly_once_fails_on_an_unknown_packet_alone():
    rep = _bcast_reporter()
    rep.step(1, 3, (), ((0, 7),), 0, 0)  # node 1 reads a packet nobody sent
    out = rep.invariants({}, [], [0] * 4)["exactly_once"]
    assert out["ok"] is False and out["unknown_packets"] == 1 and out["duplicate_receptions"] == 0


def test_exactly_once_fails_on_a_miss_and_names_the_lost_copies():
    rep = _bcast_reporter()
    rep.step(0, 1, ((1, 0.5),), (), 1, 0)  # born at node 0, never delivered, no copy left
    out = rep.invariants({"link_down": 0}, [], [0] * 4)["exactly_once"]
    assert out["ok"] is False and out["missed"] == 1 and out["copies_lost_to_faults"] == {}
    out = rep.invariants({"link_down": 2}, [], [0] * 4)["exactly_once"]
    assert out["ok"] is True and out["copies_lost_to_faults"] == {"link_down": 2} and out["lost_to_faults"] == 1


def test_a_duplicated_copy_is_named_by_origin_and_sequence():
    rep = _bcast_reporter()
    rep.on_lost(2, 0, 0, 1, (0, 5), "dup")  # a two-field message: (origin, seq)
    rep.on_lost(2, 0, 1, 2, (3, 6, "payload"), "dup")
    assert rep.copied == {(0, 5), (3, 6)} and rep.lost_copies == 0


def test_per_node_names_its_columns():
    rep = _bcast_reporter()
    assert list(rep.per_node()) == ["born", "received", "max_queue", "queue_at_end"]
