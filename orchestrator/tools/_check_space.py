"""The fault space ``slotnet check`` enumerates: one fault (an :class:`Atom`) per kind, slot and
target, and every schedule of up to ``K`` of them.

The kinds (slots ``S``, ``A < B`` of the window; a fault that stays lasts to the end of the run):

* ``crash``: ``crash@S:NODE``, the node stays down;
* ``recover``: ``crash@A:NODE`` and ``recover@B:NODE``, the node down in slots ``A..B-1`` and
  restarted from scratch at ``B``;
* ``link-down``: ``link-down@S:NODE:PORT``, the link stays down (a link is named once, from
  its end of lower id);
* ``link-up``: ``link-down@A:NODE:PORT`` and ``link-up@B:NODE:PORT``, the link down in slots
  ``A..B-1``;
* ``stall``: ``stall@S:S:NODE``, the node sleeps through slot ``S``, its state kept;
* ``partition``: ``partition@S:S:SIDE``, every link between the two sides of a cut of the
  nodes down in slot ``S``: every cut once (named by its side without the last node), so
  ``2^(N-1) - 1`` per slot, enumerated on at most :data:`PARTITION_NODES` nodes;
* ``loss``, ``dup``, ``delay``, ``corrupt``: ``KIND=1@S-S+1`` (``delay=1:1@S-S+1``): every
  message sent in slot ``S`` is lost, duplicated, held back one slot, or corrupted (its
  checksum fails: lost). A rate below 1 is a random draw, not a point of an enumerable
  space (``explore --faults random`` samples those).

No two faults of a schedule hit one target: a node (``crash``, ``recover``, ``stall``), a
link (``link-down``, ``link-up``), the cut of a slot, a message kind in a slot. ``detect``
is a setting, not a fault, and a fault kind registered by a user has no enumeration here:
both are refused by :func:`check_kinds` with the reason.

Symmetries (:mod:`._symmetry`) move a fault's target and keep its kind and slots: a node to
its image, a link to its image named again from its end of lower id, a cut's side to its
image (named again by the side without the last node); a message fault has no target and
is its own image (every message of its slot is hit, whatever the node).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from slotnet.errors import SpecError
from slotnet.fabric import FAULT_KINDS

from ._symmetry import Symmetry

__all__ = ["KINDS", "PARTITION_NODES", "Atom", "atoms", "check_kinds", "schedules"]

#: The fault kinds ``slotnet check`` enumerates.
KINDS = ("crash", "recover", "link-down", "link-up", "stall", "partition", "loss", "dup", "delay", "corrupt")
#: The most nodes whose cuts ``partition`` enumerates (2^(N-1) - 1 cuts per slot: 511 at 10).
PARTITION_NODES = 10
#: The message kinds: no target, every message sent in the slot.
_MESSAGES = ("loss", "dup", "delay", "corrupt")
#: What each kind's schedule entries are, for the scheme's refusals (a pair is two kinds).
_RUNS_AS = {"recover": ("crash", "recover"), "link-up": ("link-down", "link-up")}


@dataclass(frozen=True, order=True)
class Atom:
    """One fault of a schedule: its kind, slot (``end``: the slot a ``recover``/``link-up`` pair
    ends it, else -1) and target (a node, ``(node, port)`` of a link, or a cut's ``side``)."""

    kind: str
    slot: int
    node: int = -1
    port: int = -1
    end: int = -1
    side: tuple[int, ...] = ()

    def target(self) -> tuple[Any, ...]:
        """What the fault hits: no two faults of a schedule hit one target."""
        if self.kind in ("link-down", "link-up"):
            return ("link", self.node, self.port)
        if self.kind == "partition":
            return ("cut", self.slot)
        if self.kind in _MESSAGES:
            return (self.kind, self.slot)
        return ("node", self.node)

    def entries(self) -> list[str]:
        """The fault in CLI syntax (two entries for a pair)."""
        k, s, v, p = self.kind, self.slot, self.node, self.port
        if k == "crash":
            return [f"crash@{s}:{v}"]
        if k == "recover":
            return [f"crash@{s}:{v}", f"recover@{self.end}:{v}"]
        if k == "link-down":
            return [f"link-down@{s}:{v}:{p}"]
        if k == "link-up":
            return [f"link-down@{s}:{v}:{p}", f"link-up@{self.end}:{v}:{p}"]
        if k == "stall":
            return [f"stall@{s}:{s}:{v}"]
        if k == "partition":
            return [f"partition@{s}:{s}:{','.join(map(str, self.side))}"]
        return [f"{k}=1{':1' if k == 'delay' else ''}@{s}-{s + 1}"]

    def objects(self) -> list[dict[str, Any]]:
        """The fault as ``--faults`` JSON objects (what the shrinker cuts)."""
        k, s, v = self.kind, self.slot, self.node
        if k in ("crash", "recover"):
            out: list[dict[str, Any]] = [{"kind": "crash", "slot": s, "node": v}]
            return out + ([{"kind": "recover", "slot": self.end, "node": v}] if k == "recover" else [])
        if k in ("link-down", "link-up"):
            out = [{"kind": "link-down", "slot": s, "node": v, "port": self.port}]
            return out + ([{"kind": "link-up", "slot": self.end, "node": v, "port": self.port}] if k == "link-up" else [])
        if k == "stall":
            return [{"kind": "stall", "from": s, "to": s, "node": v}]
        if k == "partition":
            return [{"kind": "partition", "from": s, "to": s, "nodes": list(self.side)}]
        return [{"kind": k, "rate": 1, **({"slots": 1} if k == "delay" else {}), "from": s, "until": s + 1}]

    def image(self, s: Symmetry, topology: Any) -> Atom:
        """The fault a symmetry maps this one to (see the module docstring)."""
        if self.kind in ("link-down", "link-up"):
            v, p = s.node(self.node), s.port(self.node, self.port)
            return _link_atom(self.kind, self.slot, v, p, topology, self.end)
        if self.kind == "partition":
            return replace(self, side=_side({s.node(v) for v in self.side}, topology.n_nodes))
        if self.kind in _MESSAGES:
            return self
        return replace(self, node=s.node(self.node))


def _link_atom(kind: str, slot: int, v: int, p: int, topology: Any, end: int = -1) -> Atom:
    u = topology.neighbour(v, p)
    if u < v:
        v, p = u, topology.reverse_port(v, p)
    return Atom(kind, slot, v, p, end)


def _side(nodes: set[int], n: int) -> tuple[int, ...]:
    """A cut's name: the side without node ``n - 1``."""
    return tuple(sorted(nodes if n - 1 not in nodes else set(range(n)) - nodes))


def check_kinds(kinds: Sequence[str], topology: Any, refuses: Any, scheme: str) -> None:
    """Refuse, with the reason, a kind that cannot be enumerated or that the scheme refuses.

    Raises:
        SpecError: naming the kind and why.
    """
    for kind in kinds:
        if kind == "detect":
            raise SpecError("--kinds: detect is a setting (how many slots late a node sees a dead port), not a fault "
                            "to enumerate: every schedule runs with the fabric's default")
        if kind not in KINDS:
            known = f" (it enumerates: {', '.join(KINDS)})"
            if kind in FAULT_KINDS:
                raise SpecError(f"--kinds: {kind!r} is a registered fault kind slotnet check has no enumeration of"
                                + known)
            raise SpecError(f"--kinds: {kind!r} is not a kind slotnet check enumerates{known}")
        if kind == "partition" and topology.n_nodes > PARTITION_NODES:
            n = topology.n_nodes
            raise SpecError(f"--kinds partition: every cut of the {n} nodes in two is 2^{n - 1} - 1 = {2 ** (n - 1) - 1} "
                            f"faults per slot; partitions are enumerated on at most {PARTITION_NODES} nodes "
                            f"(use a smaller topology, or explore --faults random)")
        for entry in _RUNS_AS.get(kind, (kind,)):
            why = refuses(entry)
            if why is not None:
                raise SpecError(f"--kinds: scheme {scheme!r} does not run under {entry} faults: {why}")


def atoms(topology: Any, kinds: Sequence[str], window: range) -> list[Atom]:
    """Every single fault of ``kinds`` with its slots in ``window``, in (slot, kind, target) order."""
    n = topology.n_nodes
    links: list[tuple[int, int]] = []
    for v in range(n):
        for port in topology.ports(v):
            a = _link_atom("link-down", 0, v, port.index, topology)
            if (a.node, a.port) not in links:
                links.append((a.node, a.port))
    cuts: list[tuple[int, ...]] = []
    if "partition" in kinds:
        for size in range(1, n):
            cuts += [c for c in itertools.combinations(range(n - 1), size)]
    out: list[Atom] = []
    for slot in window:
        later = [b for b in window if b > slot]
        for kind in kinds:
            if kind in ("crash", "stall"):
                out += [Atom(kind, slot, v) for v in range(n)]
            elif kind == "recover":
                out += [Atom(kind, slot, v, end=b) for v in range(n) for b in later]
            elif kind == "link-down":
                out += [Atom(kind, slot, v, p) for v, p in links]
            elif kind == "link-up":
                out += [Atom(kind, slot, v, p, end=b) for v, p in links for b in later]
            elif kind == "partition":
                out += [Atom(kind, slot, side=c) for c in cuts]
            else:
                out.append(Atom(kind, slot))
    return out


def schedules(singles: Sequence[Atom], most: int) -> Iterator[frozenset[Atom]]:
    """Every set of 1 to ``most`` faults of ``singles`` with no two on one target (a node
    crashes once; a stall of a crashed node, or a crash of a stalled one, is one target too)."""
    for k in range(1, most + 1):
        for combo in itertools.combinations(singles, k):
            if len({a.target() for a in combo}) == k:
                yield frozenset(combo)
