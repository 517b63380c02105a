"""Many-to-one instances (Mansour & Patt-Shamir §2): files, generators, workload strings."""

from __future__ import annotations

import json
import math
import random

import pytest

from slotnet.schemes.manytoone import instances as m2o
from slotnet.schemes.manytoone.instances import Instance, load_instance, make_instance, parse_workload


def _write(tmp_path, text: str):
    path = tmp_path / "inst.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_node_ids_are_mixed_radix_dimension_zero_fastest():
    """Node id = c0 + n0*c1 + n0*n1*c2, and coords inverts it, on every node of a 3-D mesh."""
    sides = (3, 4, 2)
    for v in range(24):
        c = m2o.mesh_coords(sides, v)
        assert c[0] + 3 * c[1] + 12 * c[2] == v
        assert m2o.mesh_node(sides, c) == v


def test_load_round_trip(tmp_path):
    """A file written from instance_to_json loads back to the same instance, in coordinates."""
    inst = make_instance("hotspots:k=3", (4, 5), random.Random(2))
    path = _write(tmp_path, json.dumps(m2o.instance_to_json(inst)))
    assert load_instance(path, (4, 5)) == inst
    text = json.dumps({"packets": [[[3, 0], [0, 4]]], "comment": "extra keys are ignored"})
    loaded = load_instance(_write(tmp_path, text), (4, 5))
    assert loaded.packets == ((3, 16),)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("{not json", r"inst\.json: not JSON"),
        ("[1, 2]", r"inst\.json: top level must be a JSON object"),
        ('{"packet": []}', r"inst\.json: missing key 'packets'"),
        ('{"packets": {"a": 1}}', r"inst\.json: 'packets' must be a list"),
        ('{"packets": [[[0, 0], [1, 1]], [[0, 1]]]}', r"inst\.json: packets\[1\]: must be a pair"),
        ('{"packets": [[[0, 0], [1, 1]], [[1, 0], [1]]]}', r"packets\[1\]: destination \[1\] has 1 coordinate\(s\), the mesh has 2"),
        ('{"packets": [[[0, 0, 0], [1, 1]]]}', r"packets\[0\]: source \[0, 0, 0\] has 3 coordinate"),
        ('{"packets": [[[0, 0], [1, 5]]]}', r"packets\[0\]: destination coordinate 1 is 5, outside \[0, 5\)"),
        ('{"packets": [[[-1, 0], [1, 1]]]}', r"packets\[0\]: source coordinate 0 is -1, outside \[0, 4\)"),
        ('{"packets": [[[0, 0], [1.0, 1]]]}', r"packets\[0\]: destination coordinate 0 must be an integer, got 1\.0"),
        ('{"packets": [[[0, "1"], [1, 1]]]}', r"packets\[0\]: source coordinate 1 must be an integer, got '1'"),
        ('{"packets": [[[0, true], [1, 1]]]}', r"packets\[0\]: source coordinate 1 must be an integer, got True"),
        ('{"packets": [[0, [1, 1]]]}', r"packets\[0\]: source must be a list of 2 coordinates, got 0"),
        (
            '{"packets": [[[0, 0], [1, 1]], [[2, 2], [1, 1]], [[0, 0], [3, 3]]]}',
            r"packets\[2\]: source \[0, 0\] already used by packets\[0\] \(at most one packet per source",
        ),
    ],
)
def test_bad_files_name_file_entry_and_fault(tmp_path, text, pattern):
    """Every kind of bad file raises ValueError naming the file, the entry and what is wrong."""
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=pattern):
        load_instance(path, (4, 5))


def test_missing_file_is_a_value_error(tmp_path):
    """An unreadable file is reported as a ValueError that names it."""
    with pytest.raises(ValueError, match=r"nope\.json: cannot read instance file"):
        load_instance(tmp_path / "nope.json", (4, 4))


def test_instance_rejects_reused_source_and_bad_dimension():
    """The record itself enforces §2's injective source and dimensions 1-3."""
    with pytest.raises(ValueError, match="source 3 already used by packet 0"):
        Instance((4,), ((3, 0), (3, 1)))
    with pytest.raises(ValueError, match="outside"):
        Instance((4,), ((4, 0),))
    with pytest.raises(ValueError, match="dimension 1 to 3"):
        Instance((2, 2, 2, 2), ())


@pytest.mark.parametrize("sides", [(7,), (4, 6), (3, 4, 5)])
def test_generators_counts_ranges_and_sources(sides):
    """Each generator gives one packet per chosen source, distinct sources, destinations in its range."""
    n = math.prod(sides)
    rng = random.Random(11)
    inst = m2o.all_to_one(sides, rng)
    assert len(inst) == n and {d for _, d in inst.packets} == {m2o.mesh_node(sides, m2o.centre(sides))}
    corner = tuple(s - 1 for s in sides)
    inst = m2o.all_to_one(sides, rng, node=corner, fraction=0.5)
    assert len(inst) == math.floor(0.5 * n + 0.5)
    assert {d for _, d in inst.packets} == {n - 1}
    inst = m2o.hotspots(sides, rng, 3)
    assert len(inst) == n and len({d for _, d in inst.packets}) <= 3
    inst = m2o.uniform(sides, rng, fraction=0.25)
    assert len(inst) == math.floor(0.25 * n + 0.5)
    lo = tuple(min(1, s - 1) for s in sides)
    hi = tuple(min(2, s - 1) for s in sides)
    inst = m2o.region(sides, rng, lo, hi)
    for _, d in inst.packets:
        c = m2o.mesh_coords(sides, d)
        assert all(a <= x <= b for a, x, b in zip(lo, c, hi))
    inst = m2o.bounded(sides, rng, 2)
    assert len(inst) == n
    assert all(1 <= inst.distance(s, d) <= 2 for s, d in inst.packets)
    for inst in (m2o.uniform(sides, rng, 0.6), m2o.bounded(sides, rng, 3, 0.3)):
        srcs = [s for s, _ in inst.packets]
        assert len(set(srcs)) == len(srcs) and all(0 <= s < n for s in srcs)


def test_generators_deterministic_given_rng():
    """Same seed, same instance; another seed, another instance (for every family)."""
    for spec in ("all-to-one:fraction=0.5", "hotspots:k=4", "uniform", "region:lo=0,0;hi=3,3", "bounded:r=3"):
        a = make_instance(spec, (8, 8), random.Random(5))
        b = make_instance(spec, (8, 8), random.Random(5))
        c = make_instance(spec, (8, 8), random.Random(6))
        assert a == b, spec
        assert a != c, spec


def test_bounded_covers_the_whole_ball():
    """bounded draws every node at distance 1..r of a source (uniformly enough to hit all)."""
    rng = random.Random(3)
    seen = set()
    for _ in range(300):
        inst = m2o.bounded((5, 5), rng, 2)
        seen |= {d for s, d in inst.packets if s == 12}
    ball = {v for v in range(25) if 1 <= m2o.mesh_distance((5, 5), 12, v) <= 2}
    assert seen == ball


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("all-to-one", "all-to-one"),
        ("all-to-one:node=3,4", "all-to-one:node=3,4"),
        ("hotspots:k=4", "hotspots:k=4"),
        ("uniform:fraction=0.5", "uniform:fraction=0.5"),
        ("region:lo=0,0;hi=3,3", "region:hi=3,3;lo=0,0"),
        ("region:lo=0,0,hi=3,3,fraction=0.25", "region:fraction=0.25;hi=3,3;lo=0,0"),
        ("bounded:r=5", "bounded:r=5"),
        (" Hotspots : k = 2 ; fraction = 1 ", "hotspots:fraction=1.0;k=2"),
        ("all-to-one:node=1,2,3,fraction=0.5", "all-to-one:fraction=0.5;node=1,2,3"),
    ],
)
def test_parse_workload_examples(text, canonical):
    """The issue's workload strings parse, commas and semicolons both separating parameters."""
    assert str(parse_workload(text)) == canonical


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("hotspot:k=4", r"unknown workload 'hotspot' \(known: all-to-one, bounded, hotspots, region, uniform\)"),
        ("", r"unknown workload ''"),
        ("hotspots", r"workload 'hotspots': missing 'k'"),
        ("region:lo=0,0", r"workload 'region': missing 'hi'"),
        ("hotspots:k=4;n=3", r"workload 'hotspots': unknown key 'n' \(known: fraction, k\)"),
        ("uniform:k=4", r"workload 'uniform': unknown key 'k' \(known: fraction\)"),
        ("hotspots:k=4;k=5", r"key 'k' given twice"),
        ("hotspots:k=four", r"'k' must be an integer >= 1, got 'four'"),
        ("hotspots:k=0", r"'k' must be an integer >= 1, got '0'"),
        ("bounded:r=-2", r"'r' must be an integer >= 1, got '-2'"),
        ("uniform:fraction=1.5", r"'fraction' must be a number in \(0, 1\], got '1.5'"),
        ("uniform:fraction=0", r"'fraction' must be a number in \(0, 1\], got '0'"),
        ("uniform:fraction=half", r"'fraction' must be a number in \(0, 1\], got 'half'"),
        ("all-to-one:node=3,a", r"'node' must be integer coordinates separated by ',', got '3,a'"),
        ("all-to-one:node=-1,2", r"'node' coordinates must be >= 0"),
        ("hotspots:k=4,7", r"'7' is not KEY=VALUE"),
        ("uniform:", r"nothing after ':'"),
        ("uniform:fraction=0.5;;", r"empty item"),
    ],
)
def test_parse_workload_errors(text, pattern):
    """Bad workload strings raise ValueError naming the workload and the key."""
    with pytest.raises(ValueError, match=pattern):
        parse_workload(text)


@pytest.mark.parametrize(
    ("text", "sides", "pattern"),
    [
        ("all-to-one:node=3,4", (4, 4), r"node coordinate 1 is 4, outside \[0, 4\)"),
        ("all-to-one:node=1", (4, 4), r"node \[1\] has 1 coordinate\(s\), the mesh has 2"),
        ("region:lo=2,2;hi=1,3", (4, 4), r"lo coordinate 0 \(2\) exceeds hi coordinate 0 \(1\)"),
        ("region:lo=0,0;hi=3,9", (4, 4), r"region hi coordinate 1 is 9"),
        ("hotspots:k=17", (4, 4), r"k must be an integer in \[1, 16\]"),
    ],
)
def test_workload_checked_against_the_mesh(text, sides, pattern):
    """Parameters that do not fit the mesh are reported with the workload and the mesh."""
    with pytest.raises(ValueError, match=pattern) as info:
        make_instance(text, sides, random.Random(1))
    assert "x".join(map(str, sides)) in str(info.value)


def test_workload_reaches_every_generator():
    """Workload strings give the same instances as calling the generators directly."""
    sides = (6, 5)
    assert make_instance("all-to-one:node=1,2", sides, random.Random(4)) == m2o.all_to_one(sides, random.Random(4), (1, 2))
    assert make_instance("hotspots:k=2;fraction=0.5", sides, random.Random(4)) == m2o.hotspots(sides, random.Random(4), 2, 0.5)
    assert make_instance("region:lo=1,1;hi=2,3", sides, random.Random(4)) == m2o.region(sides, random.Random(4), (1, 1), (2, 3))
    assert make_instance("bounded:r=2", sides, random.Random(4)) == m2o.bounded(sides, random.Random(4), 2)
    assert parse_workload("uniform").make(sides, random.Random(4)) == m2o.uniform(sides, random.Random(4))
