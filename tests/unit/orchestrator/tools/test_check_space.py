"""The fault space of ``slotnet check`` (``orchestrator/tools/_check_space.py``): every kind it enumerates,
its entries and JSON objects, its images under the topology's symmetries, the kinds it refuses, and the
reduction against the whole enumeration for the kinds beyond crash, link-down and stall."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet import RunSpec
from slotnet.errors import SpecError
from slotnet.fabric import FAULT_KINDS, FaultSchedule, parse_topology
from slotnet.orchestrator.tools._check import check
from slotnet.orchestrator.tools._check_space import KINDS, PARTITION_NODES, Atom, atoms, check_kinds, schedules
from slotnet.orchestrator.tools._explore import faults_of
from slotnet.orchestrator.tools._symmetry import automorphisms, is_automorphism
from tests.contract import user_schemes
from tests.support.orbits import classes_as_orbits, orbit_key

installed = user_schemes.installed  # the user schemes, registered for the test that runs them
RING = parse_topology("torus:5")


def test_the_kinds():
    """Every registered fault kind is enumerated; partitions on at most 10 nodes."""
    assert KINDS == ("crash", "recover", "link-down", "link-up", "stall", "partition", "loss", "dup", "delay", "corrupt")
    assert set(KINDS) == set(FAULT_KINDS) and PARTITION_NODES == 10


def test_how_many_faults_each_kind_enumerates():
    """Over slots 0..2 of the 5-ring (5 nodes, 5 links): pairs take A < B, a cut is named once, a message kind is one a slot."""
    window = range(3)
    count = {k: len(atoms(RING, [k], window)) for k in KINDS}
    assert count == {"crash": 15, "recover": 5 * 3, "link-down": 15, "link-up": 5 * 3, "stall": 15,
                     "partition": 3 * (2 ** 4 - 1), "loss": 3, "dup": 3, "delay": 3, "corrupt": 3}
    cuts = {a.side for a in atoms(RING, ["partition"], range(1))}
    assert len(cuts) == 15 and all(4 not in side and side for side in cuts)


def test_entries_and_objects_are_one_schedule_that_validates():
    """Each atom's CLI entries and its JSON objects parse to the same schedule, valid on the topology."""
    cube = parse_topology("hypercube:3")
    for a in atoms(cube, list(KINDS), range(2)):
        text = FaultSchedule.parse(a.entries())
        text.validate(cube, 4)
        assert faults_of(a.objects()).to_list() == text.to_list(), a
    assert Atom("recover", 1, 3, end=4).entries() == ["crash@1:3", "recover@4:3"]
    assert Atom("link-up", 0, 2, 1, end=2).objects() == [{"kind": "link-down", "slot": 0, "node": 2, "port": 1},
                                                          {"kind": "link-up", "slot": 2, "node": 2, "port": 1}]
    assert Atom("partition", 3, side=(0, 2)).entries() == ["partition@3:3:0,2"]
    assert Atom("delay", 5).entries() == ["delay=1:1@5-6"] and Atom("loss", 5).entries() == ["loss=1@5-6"]


def test_no_two_faults_on_one_target():
    """A node, a link, a slot's cut and a slot's message kind are targets: a crash/recover of one node, two cuts of
    one slot never go together; a loss and a dup of one slot do."""
    singles = [Atom("crash", 0, 1), Atom("recover", 0, 1, end=1), Atom("stall", 1, 1), Atom("partition", 0, side=(0,)),
               Atom("partition", 0, side=(1,)), Atom("loss", 0), Atom("dup", 0)]
    pairs = {tuple(a.kind for a in sorted(s)) for s in schedules(singles, 2) if len(s) == 2}
    assert ("crash", "recover") not in pairs and ("partition", "partition") not in pairs
    assert ("dup", "loss") in pairs
    assert sum(1 for s in schedules(singles, 2) if len(s) == 2) == 21 - 3 - 1  # C(7,2) less the node's 3, the cut's 1


def test_images_keep_kind_and_slots_and_name_the_target_again():
    """A symmetry moves a link pair to a link named from its lower end, a cut to its side without the last node;
    a message fault is its own image."""
    cube = parse_topology("hypercube:3")
    for s in automorphisms(cube):
        assert is_automorphism(cube, s)
        link = Atom("link-up", 2, 0, 2, end=5).image(s, cube)
        assert (link.kind, link.slot, link.end) == ("link-up", 2, 5) and link.node < cube.neighbour(link.node, link.port)
        cut = Atom("partition", 1, side=(0, 1, 2)).image(s, cube)
        assert len(cut.side) in (3, 5) and 7 not in cut.side
        assert Atom("corrupt", 4).image(s, cube) == Atom("corrupt", 4)
        node = Atom("recover", 1, 6, end=3).image(s, cube)
        assert (node.kind, node.slot, node.end, node.node) == ("recover", 1, 3, s.node(6))


@settings(max_examples=12, deadline=None)
@given(spec=st.sampled_from(["hypercube:2", "hypercube:3", "torus:5", "torus:3x2", "mesh:2x3"]),
       kinds=st.lists(st.sampled_from(["recover", "link-up", "partition", "dup", "stall"]), min_size=1, max_size=2,
                      unique=True))
def test_classes_partition_the_new_kinds_schedules_into_orbits(spec, kinds):
    """For the new kinds too, class sizes add up to every schedule and each class is one orbit of the group."""
    topo = parse_topology(spec)
    group = automorphisms(topo)
    every = list(schedules(atoms(topo, kinds, range(2)), 2 if topo.n_nodes <= 5 else 1))
    orbits = classes_as_orbits(topo, every, group)
    assert all(orbit <= set(every) for orbit, _ in orbits)


def test_kinds_that_cannot_be_enumerated_are_refused_with_why(monkeypatch):
    """detect is a setting; a kind a user registered has no enumeration; cuts of more than 10 nodes are too many;
    a kind the scheme refuses names the scheme's reason (for a pair: either of its entries)."""
    def none(kind):
        return None

    with pytest.raises(SpecError, match=r"^--kinds: detect is a setting \(how many slots late a node sees a dead port\)"):
        check_kinds(["detect"], RING, none, "s")
    monkeypatch.setitem(FAULT_KINDS, "brownout", object())
    with pytest.raises(SpecError, match="'brownout' is a registered fault kind slotnet check has no enumeration of"):
        check_kinds(["brownout"], RING, none, "s")
    with pytest.raises(SpecError, match="'nope' is not a kind slotnet check enumerates \\(it enumerates: crash, recover"):
        check_kinds(["nope"], RING, none, "s")
    with pytest.raises(SpecError, match=r"--kinds partition: every cut of the 16 nodes in two is 2\^15 - 1 = 32767"):
        check_kinds(["partition"], parse_topology("hypercube:4"), none, "s")
    check_kinds(["partition"], parse_topology("torus:10"), none, "s")  # 10 nodes: enumerated

    def no_restarts(kind):
        return "it keeps no state to restart from" if kind == "recover" else None

    with pytest.raises(SpecError, match="scheme 's' does not run under recover faults: it keeps no state"):
        check_kinds(["recover"], RING, no_restarts, "s")


def _orbits(report, topo, kinds, k, window):
    """The orbits (as their least member) of a report's violating schedules."""
    group = automorphisms(topo)
    by_entries = {tuple(e for a in sorted(s) for e in a.entries()): s
                  for s in schedules(atoms(topo, kinds, range(window[0], window[1] + 1)), k)}
    return {orbit_key(topo, group, by_entries[tuple(v["faults"])]) for v in report["violations"]}


@pytest.mark.usefixtures("installed")
@pytest.mark.parametrize("kinds, k", [(["recover", "link-up"], 2), (["partition", "loss", "dup", "delay", "corrupt"], 1)])
def test_the_reduction_finds_the_violating_classes_of_the_whole_enumeration(kinds, k):
    """Every id flooded round a 5-ring: run schedule by schedule, the new kinds fail in exactly the classes the
    reduced enumeration finds failing (some fail, some pass)."""
    spec = RunSpec("user-flood-all", "torus:5", slots=40)
    full = check(spec, kinds, k, window=(0, 1), shrink=False, reduce=False)
    reduced = check(spec, kinds, k, window=(0, 1), shrink=False, reduce=True)
    assert full["schedules"] == reduced["schedules"] == full["classes"] > reduced["classes"]
    assert 0 < len(full["violations"]) < full["schedules"]
    assert sum(v["members"] for v in reduced["violations"]) == len(full["violations"])
    assert _orbits(full, RING, kinds, k, (0, 1)) == _orbits(reduced, RING, kinds, k, (0, 1))
