"""Symmetry groups of the topologies and the reduction of fault schedules to classes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import RunSpec
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools._check import Atom, atoms, check, schedules
from slotnet.orchestrator.tools._symmetry import automorphisms, is_automorphism
from tests.contract import user_schemes
from tests.support.orbits import classes_as_orbits, orbit_key

installed = user_schemes.installed  # the user schemes, registered for the test that runs them


@pytest.mark.parametrize("spec, size", [
    ("hypercube:2", 4 * 2), ("hypercube:3", 8 * 6), ("torus:5", 5 * 2), ("torus:4x3", 12 * 4),
    ("mesh:3x4", 4), ("mesh:5", 2),
])
def test_every_symmetry_is_an_automorphism_and_the_group_has_its_size(spec, size):
    """Each listed symmetry maps links onto links, ports included; none repeats; the count is the group's order."""
    topo = parse_topology(spec)
    group = automorphisms(topo)
    assert len(group) == size
    assert all(is_automorphism(topo, s) for s in group)
    assert len({(s.nodes, tuple(s.port(v, p.index) for v in range(topo.n_nodes) for p in topo.ports(v)))
                for s in group}) == size


def test_a_general_graph_kind_has_the_identity_alone():
    """A topology of another kind (here a stand-in) gets no reduction."""
    class Other:
        kind, n_nodes = "graph", 3
    group = automorphisms(Other())
    assert len(group) == 1 and group[0].nodes == (0, 1, 2)


def test_atoms_name_each_link_once():
    """A link fault is enumerated once per slot (n_links counts directed links), from its end of lower id."""
    topo = parse_topology("torus:4x3")
    singles = atoms(topo, ["link-down"], range(2))
    assert len(singles) == 2 * topo.n_links // 2 and len(set(singles)) == len(singles)
    assert all(a.node < topo.neighbour(a.node, a.port) for a in singles)


@settings(max_examples=15, deadline=None)
@given(spec=st.sampled_from(["hypercube:3", "torus:5", "torus:3x3", "mesh:3x3"]), k=st.integers(1, 2))
def test_classes_partition_the_schedules_into_orbits(spec, k):
    """Class sizes add up to every schedule; each class is closed under the group (orbit sizes divide the group order)."""
    topo = parse_topology(spec)
    group = automorphisms(topo)
    every = list(schedules(atoms(topo, ["crash", "link-down"], range(1)), k))
    orbits = classes_as_orbits(topo, every, group)
    assert all(len(group) % members == 0 for _, members in orbits)


def test_an_atom_maps_to_the_same_kind_and_slot():
    """A symmetry keeps a fault's kind and slot and moves only its target."""
    topo = parse_topology("hypercube:3")
    for s in automorphisms(topo):
        a = Atom("link-down", 4, 0, 2).image(s, topo)
        assert a.kind == "link-down" and a.slot == 4 and topo.neighbour(a.node, a.port) is not None


@pytest.mark.usefixtures("installed")
def test_the_reduction_finds_the_same_violating_classes_as_the_whole_enumeration():
    """On a symmetric scheme (every node floods its id round a 5-ring), the schedules run one by one fail in
    exactly the classes the reduced enumeration finds failing (two faults split the ring, one does not)."""
    spec = RunSpec("user-flood-all", "torus:5", slots=40)
    full = check(spec, ["crash", "link-down"], 2, window=(0, 0), shrink=False, reduce=False)
    reduced = check(spec, ["crash", "link-down"], 2, window=(0, 0), shrink=False, reduce=True)
    assert full["schedules"] == reduced["schedules"] == full["classes"] > reduced["classes"]
    assert full["violations"] and len(full["violations"]) < full["schedules"]  # some fail, some pass
    assert sum(v["members"] for v in reduced["violations"]) == len(full["violations"])
    topo = parse_topology("torus:5")
    group = automorphisms(topo)

    def parse(entries):
        out = []
        for e in entries:
            kind, _, rest = e.partition("@")
            nums = [int(x) for x in rest.split(":")]
            out.append(Atom(kind, nums[0], nums[1], nums[2] if kind == "link-down" else -1))
        return frozenset(out)

    bad_full = {orbit_key(topo, group, parse(v["faults"])) for v in full["violations"]}
    bad_reduced = {orbit_key(topo, group, parse(v["faults"])) for v in reduced["violations"]}
    assert bad_full == bad_reduced


def test_a_ring_kind_gets_its_rotations_and_reflections():
    """A topology of kind ring (a cycle, as the ring:N topology is) gets the 2N dihedral symmetries, each an automorphism."""
    from slotnet.fabric._topology import Torus

    class Ring(Torus):
        kind = "ring"

    ring = Ring((7,))
    group = automorphisms(ring)
    assert len(group) == 14 and all(is_automorphism(ring, s) for s in group)
    assert len({s.nodes for s in group}) == 14
