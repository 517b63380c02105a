"""``slotnet explore --faults random``: random fault schedules, and the checks every random run gets.

:func:`random_schedule` draws one schedule for a topology, a run length and the fault
kinds a scheme runs under, from a :func:`sample_rng` fixed by the run's seed and the
sample's index (so sample ``i`` of a seed is always the same schedule). A schedule holds
1 to 8 entries of mixed kinds and is valid by construction: it satisfies
:meth:`~slotnet.fabric.FaultSchedule.validate` for that topology and run length.

* ``link-down`` (with its ``link-up`` if the scheme runs under it, often not), named from
  either end of the link;
* ``crash`` with or without a ``recover`` (a recover in the crash's own slot, or in the
  last slot, included), several crash/recover cycles of one node;
* ``stall`` of a node that is up throughout (one node's stalls never overlap);
* ``partition`` of a node set that is neither empty nor every node;
* ``loss``, ``dup``, ``delay``, ``corrupt`` windows with random rates (0 and 1 included),
  open or closed;
* every value of the detection delay (``detect``), unless the user fixed it.

Slots lean to slot 0 and the last slot, and faults lean to a few "hot" nodes, so outages
overlap: a partition holding a crashed node, a link down beside a stalled node, a crash
right after a stall. Each node's and link's outages are kept apart as the validator
demands (a crash of a node that is down, a recover in a crash's slot followed by a crash
in that same slot, a stall that overlaps a crash: none of these is ever drawn).

The checks beside explore's verdict (see :func:`book_failures`, :func:`canonical`) and
the ``slotnet run`` command that replays one run (:func:`run_command`) are here too.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from slotnet.fabric import Topology
from slotnet.nodes.runtime import DEFAULT_RNG

from ..engine._result import WALL_CLOCK_FIELDS

__all__ = [
    "DRAWN_KINDS",
    "book_failures",
    "canonical",
    "drawable_kinds",
    "fingerprint",
    "random_schedule",
    "run_command",
    "sample_rng",
]

#: The kinds the generator draws, each opening a fault (link-up and recover close one).
DRAWN_KINDS = ("link-down", "crash", "stall", "partition", "loss", "dup", "delay", "corrupt")
#: Detection delays drawn (None: the entry left out, the fabric's default).
_DETECTS: tuple[int | str | None, ...] = (None, None, 0, 1, 2, 3, "never")
#: Rates drawn half the time (the other half: uniform, three decimals).
_RATES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
_MAX_ENTRIES = 8


def sample_rng(seed: int, index: int) -> random.Random:
    """The generator of sample ``index`` under ``seed`` (independent of every other sample)."""
    return random.Random(f"slotnet explore random {seed} {index}")


def drawable_kinds(refuses: Any) -> list[str]:
    """The kinds of :data:`DRAWN_KINDS`, and the ``link-up``/``recover`` that close them, a scheme
    runs under (``refuses``: its ``refuses_fault``); empty if it runs under none of the former."""
    out = [k for k in DRAWN_KINDS if refuses(k) is None]
    return out + [k for k in ("link-up", "recover") if out and refuses(k) is None]


Interval = tuple[int, float]  # (first slot, last slot or math.inf), both included


def _gaps(taken: Sequence[Interval], slots: int) -> list[tuple[int, int]]:
    """The stretches of ``0 .. slots - 1`` that no interval of ``taken`` touches."""
    out = []
    at = 0
    for a, b in sorted(taken):
        if a > at:
            out.append((at, a - 1))
        at = max(at, int(b) + 1) if b != math.inf else slots
    if at <= slots - 1:
        out.append((at, slots - 1))
    return out


class _Draw:
    """One schedule being drawn: the random source, the run, and every node's and link's outages."""

    def __init__(self, topology: Topology, slots: int, kinds: Sequence[str], rng: random.Random) -> None:
        self.topology, self.slots, self.rng = topology, slots, rng
        self.kinds = list(kinds)
        n = topology.n_nodes
        self.hot = rng.sample(range(n), min(n, 3))
        self.links = [(v, p, w) for v, p, w in topology.links() if (v, p) <= (w, topology.reverse_port(v, p))]
        self.down: dict[int, list[Interval]] = {}     # node -> crash .. recover
        self.stalls: dict[int, list[Interval]] = {}   # node -> stall from .. to
        self.cut: dict[tuple[int, int], list[Interval]] = {}  # link (lower end) -> down .. up

    # -- draws that lean to the edges of the run and to the hot nodes ----------------------
    def slot_in(self, a: int, b: int) -> int:
        """A slot of ``a .. b``: one of the ends half the time."""
        r = self.rng.random()
        if r < 0.25:
            return a
        if r < 0.5:
            return b
        return self.rng.randint(a, b)

    def node(self) -> int:
        if self.rng.random() < 0.6:
            return self.rng.choice(self.hot)
        return self.rng.randrange(self.topology.n_nodes)

    def rate(self) -> float:
        if self.rng.random() < 0.5:
            return self.rng.choice(_RATES)
        return round(self.rng.random(), 3)

    def supports(self, kind: str) -> bool:
        return kind in self.kinds

    # -- one fault of each kind (None: none fits, or no room) ------------------------------
    def crash(self, room: int) -> list[dict[str, Any]] | None:
        v = self.node()
        recover = self.supports("recover") and room >= 2 and self.rng.random() < 0.65
        gaps = _gaps(self.down.get(v, []) + self.stalls.get(v, []), self.slots)
        if not recover:  # down to the end: only the last stretch will do
            gaps = [g for g in gaps if g[1] == self.slots - 1]
        if not gaps:
            return None
        a, b = self.rng.choice(gaps)
        c = self.slot_in(a, b)
        out = [{"kind": "crash", "slot": c, "node": v}]
        end: float = math.inf
        if recover:
            r = self.rng.choice([c, b, self.rng.randint(c, b)])  # the crash's own slot, the last free one, any
            out.append({"kind": "recover", "slot": r, "node": v})
            end = r
        self.down.setdefault(v, []).append((c, end))
        return out

    def link_down(self, room: int) -> list[dict[str, Any]] | None:
        if not self.links:
            return None
        at_hot = [ln for ln in self.links if ln[0] in self.hot or ln[2] in self.hot]
        v, p, w = self.rng.choice(at_hot if at_hot and self.rng.random() < 0.5 else self.links)
        up = self.supports("link-up") and room >= 2 and self.rng.random() < 0.6
        gaps = _gaps(self.cut.get((v, p), []), self.slots)
        if not up:
            gaps = [g for g in gaps if g[1] == self.slots - 1]
        if not gaps:
            return None
        a, b = self.rng.choice(gaps)
        d = self.slot_in(a, b)
        node, port = (v, p) if self.rng.random() < 0.5 else (w, self.topology.reverse_port(v, p))  # either end
        out = [{"kind": "link-down", "slot": d, "node": node, "port": port}]
        end: float = math.inf
        if up:
            u = self.rng.choice([d, b, self.rng.randint(d, b)])
            node, port = (v, p) if self.rng.random() < 0.5 else (w, self.topology.reverse_port(v, p))
            out.append({"kind": "link-up", "slot": u, "node": node, "port": port})
            end = u
        self.cut.setdefault((v, p), []).append((d, end))
        return out

    def stall(self, room: int) -> list[dict[str, Any]] | None:
        v = self.node()
        gaps = _gaps(self.down.get(v, []) + self.stalls.get(v, []), self.slots)
        if not gaps:
            return None
        a, b = self.rng.choice(gaps)
        f = self.slot_in(a, b)
        t = self.rng.choice([f, b, min(b, f + self.rng.randint(0, 5))])
        self.stalls.setdefault(v, []).append((f, t))
        return [{"kind": "stall", "from": f, "to": t, "node": v}]

    def partition(self, room: int) -> list[dict[str, Any]] | None:
        n = self.topology.n_nodes
        if n < 2:
            return None
        size = self.rng.randint(1, n - 1)
        rest = [v for v in range(n) if v not in self.hot]
        self.rng.shuffle(rest)
        pool = [*self.rng.sample(self.hot, len(self.hot)), *rest] if self.rng.random() < 0.6 else \
            self.rng.sample(range(n), n)
        nodes = sorted(pool[:size])
        f = self.slot_in(0, self.slots - 1)
        t = self.slot_in(f, self.slots - 1)
        text = ",".join(map(str, nodes))
        return [{"kind": "partition", "from": f, "to": t, "nodes": nodes if self.rng.random() < 0.5 else text}]

    def window(self, kind: str) -> list[dict[str, Any]]:
        obj: dict[str, Any] = {"kind": kind, "rate": self.rate()}
        if kind == "delay":
            obj["slots"] = self.rng.randint(1, 5)
        if kind == "corrupt" and self.rng.random() < 0.5:
            obj["undetected"] = True
        start = self.slot_in(0, self.slots - 1)
        if start or self.rng.random() < 0.5:
            obj["from"] = start
        if self.rng.random() < 0.6:
            obj["until"] = self.slot_in(start + 1, self.slots)
        return [obj]

    def one(self, kind: str, room: int) -> list[dict[str, Any]] | None:
        if kind == "crash":
            return self.crash(room)
        if kind == "link-down":
            return self.link_down(room)
        if kind == "stall":
            return self.stall(room)
        if kind == "partition":
            return self.partition(room)
        return self.window(kind)


def random_schedule(topology: Topology, slots: int, kinds: Sequence[str], rng: random.Random, *,
                    draw_detect: bool = True) -> list[dict[str, Any]]:
    """A valid schedule (``--faults`` JSON objects) of 1 to 8 entries of ``kinds``, drawn with ``rng``.

    ``kinds`` are fault kind names (:func:`drawable_kinds`); ``link-up`` and ``recover``
    close a ``link-down``/``crash`` only when they are among them. ``draw_detect``: add a
    ``detect`` entry (not counted among the 8) some of the time.

    Example:
        >>> from slotnet.fabric import FaultSchedule, parse_topology
        >>> from slotnet.orchestrator.tools._explore import faults_of
        >>> topo = parse_topology("hypercube:3")
        >>> objs = random_schedule(topo, 40, ["crash", "recover", "loss"], sample_rng(1, 0))
        >>> faults_of(objs).validate(topo, 40)  # never refused
        >>> objs == random_schedule(topo, 40, ["crash", "recover", "loss"], sample_rng(1, 0))
        True
    """
    if slots < 1:
        raise ValueError(f"a run of {slots} slots has no slot to fault")
    draw = _Draw(topology, slots, kinds, rng)
    openers = [k for k in kinds if k in DRAWN_KINDS]
    target = rng.randint(1, _MAX_ENTRIES)
    out: list[dict[str, Any]] = []
    for _ in range(8 * _MAX_ENTRIES):
        if len(out) >= target or not openers:
            break
        objs = draw.one(rng.choice(openers), target - len(out))
        if objs:
            out += objs
    if draw_detect:
        d = rng.choice(_DETECTS)
        if d is not None:
            out.append({"kind": "detect", "slots": d})
    return out


# -- the books, determinism, replay -----------------------------------------------------------
def book_failures(packets: Mapping[str, Any] | None) -> list[str]:
    """Every packet book of ``fault_impact.packets`` that does not close, one line each.

    Unicast: ``packets + dup_copies = delivered + second_deliveries + lost_to_faults +
    in_progress``; broadcast: ``broadcasts = completed + lost_to_faults + in_progress``.
    """
    bad = []
    for name, book in (packets or {}).items():
        try:
            if "broadcasts" in book:
                lhs = book["broadcasts"]
                rhs = book["completed"] + book["lost_to_faults"] + book["in_progress"]
                what = "broadcasts != completed + lost_to_faults + in_progress"
            else:
                lhs = book["packets"] + book.get("dup_copies", 0)
                rhs = book["delivered"] + book.get("second_deliveries", 0) + book["lost_to_faults"] + book["in_progress"]
                what = "packets + dup_copies != delivered + second_deliveries + lost_to_faults + in_progress"
        except (KeyError, TypeError) as exc:
            bad.append(f"book {name} cannot be read ({type(exc).__name__}: {exc}): {book}")
            continue
        if lhs != rhs:
            bad.append(f"book {name}: {what} ({lhs} != {rhs}): {json.dumps(book, sort_keys=True)}")
    return bad


def _jsonable(x: Any) -> Any:
    """What ``slotnet run --json`` prints for ``x`` (non-finite floats as text, sets sorted)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (set, frozenset)):
        return sorted(_jsonable(v) for v in x)
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    return x


def canonical(result: Mapping[str, Any]) -> str:
    """A run's ``--json`` object without its machine-dependent keys (``timing``, ``provenance``:
    ``WALL_CLOCK_FIELDS``), as one text (keys sorted): equal for equal results.

    ``result`` is ``Result.to_dict()`` or the object ``slotnet run --json`` printed; both
    give the same text.
    """
    data = {k: v for k, v in result.items() if k not in WALL_CLOCK_FIELDS}
    return json.dumps(_jsonable(data), sort_keys=True)


def fingerprint(result: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of :func:`canonical`."""
    return hashlib.sha256(canonical(result).encode()).hexdigest()[:16]


def run_command(request: Mapping[str, Any], texts: Sequence[str], file: str | None = None) -> str:
    """The ``slotnet run ... --json`` command of one run (``request``: RunSpec fields; ``texts``:
    its schedule in CLI syntax, ``FaultSchedule.to_list()``; or ``file``, a ``--faults`` file)."""
    parts = ["slotnet", "run", request["scheme"], "-t", request["topology"]]
    for k, v in (request.get("params") or {}).items():
        parts += ["--param", f"{k}={v}"]
    for k, v in (request.get("load") or {}).items():
        parts += [f"--{k}", repr(float(v))]
    parts += ["--slots", str(request["slots"]), "--warmup", str(request.get("warmup", 0)),
              "--seed", str(request["seed"]), "--rng", request.get("rng", DEFAULT_RNG)]
    if request.get("max_backlog_per_node") is not None:
        parts += ["--max-backlog", repr(float(request["max_backlog_per_node"]))]
    for text in texts:
        parts += ["--fault", text]
    if file is not None:
        parts += ["--faults", file]
    return " ".join(shlex.quote(p) for p in [*parts, "--json"])
