"""Unit tests of ``explore --faults random`` (``orchestrator/tools/_fuzz.py``): the generator's exact
draws under a seed, its gaps and edge cases, the packet books, the canonical result text and the replay
command, against hand-computed answers."""

from __future__ import annotations

import hashlib
import json
import math
import random
import shlex

import pytest

from slotnet.errors import FaultSpecError
from slotnet.fabric import parse_topology
from slotnet.orchestrator.tools import _fuzz
from slotnet.orchestrator.tools._explore import faults_of
from slotnet.orchestrator.tools._fuzz import (
    DRAWN_KINDS,
    book_failures,
    canonical,
    drawable_kinds,
    fingerprint,
    random_schedule,
    run_command,
    sample_rng,
)

ALL = [*DRAWN_KINDS, "link-up", "recover"]


def _digest(x: object) -> str:
    return hashlib.sha256(json.dumps(x, sort_keys=True).encode()).hexdigest()[:16]


def test_the_tables():
    assert DRAWN_KINDS == ("link-down", "crash", "stall", "partition", "loss", "dup", "delay", "corrupt")
    assert _fuzz._DETECTS == (None, None, 0, 1, 2, 3, "never")
    assert _fuzz._RATES == (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
    assert _fuzz._MAX_ENTRIES == 8


def test_sample_rng_is_fixed_by_seed_and_index_alone():
    assert sample_rng(3, 4).random() == random.Random("slotnet explore random 3 4").random() == 0.4234279416586102
    assert sample_rng(3, 4).random() != sample_rng(4, 3).random()


def test_drawable_kinds():
    assert drawable_kinds(lambda k: None) == ALL
    assert drawable_kinds(lambda k: "no" if k in ("link-up", "stall") else None) == \
        ["link-down", "crash", "partition", "loss", "dup", "delay", "corrupt", "recover"]
    # closers alone are nothing to draw
    assert drawable_kinds(lambda k: None if k in ("link-up", "recover") else "no") == []
    assert drawable_kinds(lambda k: None if k in ("loss", "recover") else "no") == ["loss", "recover"]


@pytest.mark.parametrize("taken, slots, gaps", [
    ([], 5, [(0, 4)]),
    ([(2, 4), (3, 7), (10, math.inf)], 20, [(0, 1), (8, 9)]),
    ([(0, 2)], 3, []),
    ([(0, 1)], 3, [(2, 2)]),
    ([(1, 1)], 3, [(0, 0), (2, 2)]),
    ([(4, 6), (0, 1)], 8, [(2, 3), (7, 7)]),
    ([(0, math.inf)], 4, []),
    ([(2, 2), (2, 5)], 6, [(0, 1)]),
    ([(3, 5), (4, 4)], 7, [(0, 2), (6, 6)]),  # an interval inside another does not move the end back
])
def test_gaps(taken, slots, gaps):
    assert _fuzz._gaps(taken, slots) == gaps


# -- the generator: exact draws ----------------------------------------------------------
def test_the_first_samples_of_seed_1_on_a_square():
    sq = parse_topology("hypercube:2")
    got = [random_schedule(sq, 12, ALL, sample_rng(1, i)) for i in range(4)]
    assert got == [
        [{"kind": "corrupt", "rate": 0.5}, {"kind": "partition", "from": 0, "to": 1, "nodes": [3]}],
        [{"kind": "dup", "rate": 0.1, "from": 9, "until": 10}, {"kind": "dup", "rate": 0.1, "from": 2, "until": 3},
         {"kind": "corrupt", "rate": 1.0, "from": 7, "until": 8}, {"kind": "link-down", "slot": 0, "node": 2, "port": 1},
         {"kind": "detect", "slots": 3}],
        [{"kind": "loss", "rate": 0.221, "from": 11}, {"kind": "stall", "from": 0, "to": 0, "node": 3},
         {"kind": "dup", "rate": 0.86, "from": 0}, {"kind": "link-down", "slot": 0, "node": 1, "port": 0},
         {"kind": "detect", "slots": 2}],
        [{"kind": "partition", "from": 0, "to": 0, "nodes": [0, 3]},
         {"kind": "partition", "from": 0, "to": 3, "nodes": [0, 1, 3]}, {"kind": "dup", "rate": 0.01},
         {"kind": "corrupt", "rate": 1.0, "undetected": True, "from": 11}, {"kind": "detect", "slots": 3}],
    ]


#: (topology, slots, kinds): every kind together, each opener alone, with and without its closer
CASES = [
    ("hypercube:3", 30, ALL),
    ("torus:3x3", 9, ALL),
    ("mesh:2", 3, ALL),
    ("hypercube:2", 1, ALL),
    ("hypercube:3", 20, ["crash", "recover"]),
    ("hypercube:3", 20, ["crash"]),
    ("torus:4x4", 25, ["link-down", "link-up"]),
    ("torus:4x4", 25, ["link-down"]),
    ("hypercube:2", 15, ["stall", "crash", "recover"]),
    ("mesh:3x5", 40, ["partition"]),
    ("hypercube:3", 10, ["loss", "dup", "delay", "corrupt"]),
    ("mesh:4x4", 50, ["crash", "recover", "stall", "link-down", "link-up"]),
]

#: the digest of 30 samples of each case under seed 5 (the exact schedules drawn today)
DIGESTS = {
    0: "7891b63f700e6016",
    1: "685b02a2106b769c",
    2: "9a09e980f499f8b9",
    3: "26d3bbef62426244",
    4: "2628a917ce38733f",
    5: "d26c07665d4f817b",
    6: "aac62901fd8708e8",
    7: "8444b788ba29e899",
    8: "5fea3f0c0da7e127",
    9: "893f38519ec3a7c3",
    10: "2eaea355bb5c6e6b",
    11: "7263644eae2c4193",
}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_samples_are_pinned_and_valid(case):
    spec, slots, kinds = CASES[case]
    topo = parse_topology(spec)
    samples = [random_schedule(topo, slots, kinds, sample_rng(5, i)) for i in range(30)]
    for objs in samples:
        entries = [o for o in objs if o["kind"] != "detect"]
        assert 1 <= len(entries) <= 8
        assert {o["kind"] for o in entries} <= set(kinds)
        faults_of(objs).validate(topo, slots)  # never refused
    assert _digest(samples) == DIGESTS[case]


def test_samples_without_detect_and_without_openers():
    topo = parse_topology("hypercube:2")
    for i in range(10):
        objs = random_schedule(topo, 8, ALL, sample_rng(2, i), draw_detect=False)
        assert all(o["kind"] != "detect" for o in objs)
        assert objs == [o for o in random_schedule(topo, 8, ALL, sample_rng(2, i)) if o["kind"] != "detect"]
    # closers alone: nothing to open, only the detect setting
    assert random_schedule(topo, 8, ["recover", "link-up"], sample_rng(0, 0), draw_detect=False) == []


def test_a_run_without_slots_is_refused():
    topo = parse_topology("hypercube:2")
    with pytest.raises(ValueError, match=r"^a run of 0 slots has no slot to fault$"):
        random_schedule(topo, 0, ALL, sample_rng(0, 0))
    assert random_schedule(topo, 1, ["loss"], sample_rng(0, 0))  # one slot is enough


class _Lonely:
    """A topology of one node and no link."""

    n_nodes = 1

    def links(self):
        return []

    def reverse_port(self, v, p):  # pragma: no cover - no link to reverse
        raise AssertionError


def test_one_node_has_no_link_to_cut_and_no_partition():
    draw = _fuzz._Draw(_Lonely(), 10, ALL, random.Random(0))
    assert draw.hot == [0] and draw.links == []
    assert draw.link_down(8) is None and draw.partition(8) is None
    assert random_schedule(_Lonely(), 10, ["link-down", "partition"], sample_rng(0, 0), draw_detect=False) == []


def test_draw_edges():
    topo = parse_topology("hypercube:3")
    draw = _fuzz._Draw(topo, 10, ["crash", "stall"], random.Random(1))
    assert draw.supports("crash") and not draw.supports("recover")
    assert len(draw.hot) == 3 and len(set(draw.hot)) == 3
    assert len(draw.links) == 12 and all((v, p) < (w, topo.reverse_port(v, p)) for v, p, w in draw.links)
    # a node down to the end has no room left for a stall or another crash
    draw.down[5] = [(0, math.inf)]
    draw.hot = [5]
    draw.rng = random.Random(0)
    for _ in range(20):
        v = draw.node()
        assert v == 5 or v in range(8)
    draw.rng = _Always(0.0)  # every lean taken: the hot node, the first end
    assert draw.node() == 5
    assert draw.stall(3) is None and draw.crash(3) is None
    assert draw.slot_in(2, 7) == 2
    draw.rng = _Always(0.3)
    assert draw.slot_in(2, 7) == 7
    draw.rng = _Always(0.25)
    assert draw.slot_in(2, 7) == 7
    draw.rng = _Always(0.5)
    assert draw.slot_in(2, 7) == 4  # randint (a + b) // 2 under _Always
    draw.rng = _Always(0.49)
    assert draw.rate() == 1.0  # a rate of the table
    draw.rng = _Always(0.5)
    assert draw.rate() == 0.5  # round(random(), 3)


class _Always(random.Random):
    """random() always ``x``; choice the middle item, randint the middle, sample the first k."""

    def __init__(self, x: float) -> None:
        super().__init__(0)
        self.x = x

    def random(self) -> float:
        return self.x

    def randint(self, a: int, b: int) -> int:
        return (a + b) // 2

    def randrange(self, n: int) -> int:  # type: ignore[override]
        return n // 2

    def choice(self, seq):  # type: ignore[override]
        return seq[-1]


# -- the books ----------------------------------------------------------------------------
def test_closed_books_are_no_failure():
    assert book_failures(None) == [] and book_failures({}) == []
    assert book_failures({"u": {"packets": 5, "delivered": 3, "lost_to_faults": 1, "in_progress": 1}}) == []
    assert book_failures({"u": {"packets": 5, "dup_copies": 2, "delivered": 5, "second_deliveries": 1,
                                "lost_to_faults": 0, "in_progress": 1}}) == []
    assert book_failures({"b": {"broadcasts": 4, "completed": 2, "lost_to_faults": 1, "in_progress": 1}}) == []


def test_open_books_name_the_book_and_both_sides():
    u = {"packets": 5, "dup_copies": 1, "delivered": 5, "second_deliveries": 1, "lost_to_faults": 1, "in_progress": 1}
    assert book_failures({"u": u}) == [
        "book u: packets + dup_copies != delivered + second_deliveries + lost_to_faults + in_progress (6 != 8): "
        + json.dumps(u, sort_keys=True)]
    b = {"broadcasts": 4, "completed": 2, "lost_to_faults": 0, "in_progress": 1}
    assert book_failures({"b": b}) == [
        'book b: broadcasts != completed + lost_to_faults + in_progress (4 != 3): '
        '{"broadcasts": 4, "completed": 2, "in_progress": 1, "lost_to_faults": 0}']
    # each missing or non-numeric term is its own failure, and the other books are still read
    assert book_failures({"x": {"packets": 1}, "y": {"packets": None, "delivered": 0, "lost_to_faults": 0,
                                                      "in_progress": 0}, "z": b}) == [
        "book x cannot be read (KeyError: 'delivered'): {'packets': 1}",
        "book y cannot be read (TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'): "
        "{'packets': None, 'delivered': 0, 'lost_to_faults': 0, 'in_progress': 0}",
        'book z: broadcasts != completed + lost_to_faults + in_progress (4 != 3): '
        '{"broadcasts": 4, "completed": 2, "in_progress": 1, "lost_to_faults": 0}']
    # the optional terms count when present, on both sides
    assert book_failures({"u": {"packets": 3, "dup_copies": 1, "delivered": 3, "lost_to_faults": 0,
                                "in_progress": 0}}) != []
    assert book_failures({"u": {"packets": 3, "delivered": 2, "second_deliveries": 1, "lost_to_faults": 0,
                                "in_progress": 0}}) == []
    assert book_failures({"u": {"packets": 3, "delivered": 2, "second_deliveries": 2, "lost_to_faults": 0,
                                "in_progress": 0}}) != []


def test_every_term_of_each_book_counts():
    closed_u = {"packets": 4, "dup_copies": 1, "delivered": 2, "second_deliveries": 1, "lost_to_faults": 1,
                "in_progress": 1}
    closed_b = {"broadcasts": 6, "completed": 3, "lost_to_faults": 2, "in_progress": 1}
    assert book_failures({"u": closed_u, "b": closed_b}) == []
    for book, closed in (("u", closed_u), ("b", closed_b)):
        for term in closed:
            bad = book_failures({book: {**closed, term: closed[term] + 1}})
            assert len(bad) == 1 and bad[0].startswith(f"book {book}: "), (book, term)


# -- the canonical text, the fingerprint -----------------------------------------------------
def test_jsonable():
    class Scalar:
        def item(self):
            return 7

    assert _fuzz._jsonable(math.inf) == "inf" and _fuzz._jsonable(-math.inf) == "-inf"
    assert _fuzz._jsonable(math.nan) is None and _fuzz._jsonable(1.5) == 1.5
    assert _fuzz._jsonable({1: (2, {3}), "a": [frozenset({"y", "x"})]}) == {"1": [2, [3]], "a": [["x", "y"]]}
    assert _fuzz._jsonable(Scalar()) == 7 and _fuzz._jsonable("s") == "s" and _fuzz._jsonable(None) is None


def test_canonical_drops_only_the_timing_and_sorts_keys():
    result = {"timing": {"wall_s": 3}, "b": math.inf, "a": {"z": 1, "y": (1, 2)}, "timings": 1}
    assert canonical(result) == '{"a": {"y": [1, 2], "z": 1}, "b": "inf", "timings": 1}'
    assert canonical({**result, "timing": {"wall_s": 4}}) == canonical(result)
    assert fingerprint(result) == hashlib.sha256(canonical(result).encode()).hexdigest()[:16]
    assert fingerprint(result) == "f4aa587da3d32011"
    assert len(fingerprint({})) == 16 and fingerprint({}) == hashlib.sha256(b"{}").hexdigest()[:16]


# -- the replay command ------------------------------------------------------------------------
def test_run_command():
    request = {"scheme": "deflection", "topology": "hypercube:3", "params": {"k": 2, "mode": "a b"},
               "load": {"lam": 0.3, "rho": 1}, "slots": 30, "warmup": 5, "seed": 7, "rng": "mt",
               "max_backlog_per_node": 40}
    assert run_command(request, ["crash@3:1", "loss@0-:0.5"]) == (
        "slotnet run deflection -t hypercube:3 --param k=2 --param 'mode=a b' --lam 0.3 --rho 1.0 --slots 30 "
        "--warmup 5 --seed 7 --rng mt --max-backlog 40.0 --fault crash@3:1 --fault loss@0-:0.5 --json")
    minimal = {"scheme": "s", "topology": "mesh:2", "slots": 3, "seed": 0}  # no rng: the default generator's
    assert run_command(minimal, []) == "slotnet run s -t mesh:2 --slots 3 --warmup 0 --seed 0 --rng philox --json"
    assert run_command({**minimal, "params": None, "load": None, "max_backlog_per_node": None}, [], "my faults.json") \
        == "slotnet run s -t mesh:2 --slots 3 --warmup 0 --seed 0 --rng philox --faults 'my faults.json' --json"
    assert run_command({**minimal, "max_backlog_per_node": 0}, []) == \
        "slotnet run s -t mesh:2 --slots 3 --warmup 0 --seed 0 --rng philox --max-backlog 0.0 --json"
    assert shlex.split(run_command(request, []))[:2] == ["slotnet", "run"]


def test_a_drawn_schedule_parses_as_the_cli_would():
    with pytest.raises(FaultSpecError):
        faults_of([{"kind": "crash", "slot": -1, "node": 0}])
