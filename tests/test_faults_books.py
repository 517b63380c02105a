"""fault_impact's packet books close, each with its own copies."""

from __future__ import annotations

import pytest

import slotnet


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
