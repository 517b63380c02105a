"""``slotnet explore --shrink``: a minimal failing fault schedule, by deterministic delta debugging.

A schedule is cut into *faults*: a ``link-down`` with the ``link-up`` of the same link
that follows it, a ``crash`` with the ``recover`` of the node that follows it, a message
window (``loss``, ``dup``, ``delay``, ``corrupt``: ``from``/``until``), a span
(``partition``, ``stall``: ``from``/``to``, both included); any other entry is a fault on
its own, and the ``detect`` setting is no fault: it is kept as it is. Shrinking then

1. keeps the fewest faults that still fail (``ddmin``, Zeller & Hildebrandt 2002: try
   halves, then complements, then finer splits; the empty schedule is tried first), and
2. shortens each remaining fault's window, one fault at a time in schedule order: the
   earliest end that still fails (binary search; a fault lasting to the end of the run
   gains a ``link-up``/``recover``), then the latest start, until neither moves.

Every candidate is a full run judged by :func:`~slotnet.orchestrator.tools._explore.judge`;
runs are memoised, and everything is deterministic under the spec's seed, so the
schedule written replays the same failure (``slotnet explore ... --faults FILE``).
Binary search assumes that a failure persists when the window grows; where it does not,
the result is still a failing schedule, only perhaps not the shortest one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Fault", "ddmin", "faults", "objects", "shrink"]

_PAIRS = {"link-down": ("link", "link-up"), "crash": ("node", "recover")}
_WINDOWS = ("loss", "dup", "delay", "corrupt")
_SPANS = ("partition", "stall")
_SETTINGS = ("detect",)


def _first_slot(obj: Mapping[str, Any]) -> int:
    v = obj.get("slot", obj.get("from", 0))
    return v if isinstance(v, int) else 0


@dataclass(frozen=True)
class Fault:
    """One fault of a schedule: what, and its window ``[start, end)`` (``end`` None: to the end of the run)."""

    what: str                    # "link", "node", "window", "span" or "other"
    start: int
    end: int | None
    entry: tuple[tuple[str, Any], ...]  # the opening JSON object's fields

    def objects(self) -> list[dict[str, Any]]:
        """The ``--faults`` JSON objects of this fault."""
        first = dict(self.entry)
        if self.what == "other":
            return [first]
        if self.what == "window":
            first["from"] = self.start
            if self.end is None:
                first.pop("until", None)
            else:
                first["until"] = self.end
            return [first]
        if self.what == "span":
            first["from"], first["to"] = self.start, (self.end or self.start + 1) - 1
            return [first]
        first["slot"] = self.start
        out = [first]
        if self.end is not None:
            closing = {"kind": _PAIRS[first["kind"]][1], "slot": self.end, "node": first["node"]}
            if "port" in first:
                closing["port"] = first["port"]
            out.append(closing)
        return out


def _component(obj: Mapping[str, Any], link_key: Callable[[int, int], Any]) -> Any:
    if obj.get("kind") in ("link-down", "link-up"):
        return ("link", link_key(obj["node"], obj["port"]))
    return ("node", obj.get("node"))


def faults(schedule: Sequence[Mapping[str, Any]], link_key: Callable[[int, int], Any]) -> list[Fault]:
    """Cut a (valid) schedule of JSON objects into faults, in schedule order of their opening entry.

    ``link_key(node, port)`` names a link the same from either end. Settings are left out.
    """
    out: list[Fault] = []
    open_: dict[Any, int] = {}  # component -> index in out of its open fault
    for obj in sorted(schedule, key=_first_slot):
        kind = obj.get("kind")
        if kind in _SETTINGS:
            continue
        if kind in _PAIRS:
            out.append(Fault(_PAIRS[kind][0], obj["slot"], None, tuple(obj.items())))
            open_[_component(obj, link_key)] = len(out) - 1
        elif kind in ("link-up", "recover"):
            i = open_.pop(_component(obj, link_key), None)
            if i is not None:
                out[i] = replace(out[i], end=obj["slot"])
            else:  # not pairable: keep it as it is
                out.append(Fault("other", _first_slot(obj), None, tuple(obj.items())))
        elif kind in _WINDOWS:
            out.append(Fault("window", obj.get("from") or 0, obj.get("until"), tuple(obj.items())))
        elif kind in _SPANS:
            out.append(Fault("span", obj["from"], obj["to"] + 1, tuple(obj.items())))
        else:
            out.append(Fault("other", _first_slot(obj), None, tuple(obj.items())))
    return out


def objects(fs: Sequence[Fault]) -> list[dict[str, Any]]:
    """The schedule of ``fs`` as ``--faults`` JSON objects, sorted by slot."""
    objs = [o for f in fs for o in f.objects()]
    return sorted(objs, key=_first_slot)


def ddmin(items: list[Any], fails: Callable[[list[Any]], bool]) -> list[Any]:
    """The classic ddmin: a 1-minimal sublist of ``items`` (which fails) that still fails."""
    n = 2
    while len(items) >= 2:
        size = len(items)
        chunks = [items[i * size // n:(i + 1) * size // n] for i in range(n)]
        for c in chunks:
            if c and fails(c):
                items, n = c, 2
                break
        else:
            for i in range(len(chunks)):
                rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                if len(rest) < size and fails(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= size:
                    break
                n = min(size, 2 * n)
    return items


def _shorten(fs: list[Fault], i: int, slots: int, fails: Callable[[list[Fault]], bool]) -> list[Fault]:
    """The window of fault ``i``: earliest end, then latest start, that still fail."""
    f = fs[i]

    def at(start: int, end: int | None) -> list[Fault]:
        return [*fs[:i], replace(f, start=start, end=end), *fs[i + 1:]]

    while True:
        start, end = f.start, f.end
        lo, hi = start + 1, slots if end is None else end  # hi: an end known to fail (slots: none)
        while lo < hi:
            mid = (lo + hi) // 2
            if fails(at(start, mid)):
                hi = mid
            else:
                lo = mid + 1
        new_end = None if hi >= slots and f.what != "span" else hi
        lo, top = start, (slots if new_end is None else new_end) - 1  # lo: a start known to fail
        while lo < top:
            mid = (lo + top + 1) // 2
            if fails(at(mid, new_end)):
                lo = mid
            else:
                top = mid - 1
        fs = at(lo, new_end)
        if (lo, new_end) == (f.start, f.end):
            return fs
        f = fs[i]


def shrink(schedule: Sequence[Mapping[str, Any]], fails_objects: Callable[[list[dict[str, Any]]], bool], *,
           slots: int, link_key: Callable[[int, int], Any]) -> tuple[list[dict[str, Any]], int]:
    """A minimal failing schedule from a failing one; returns it and the number of runs it took.

    ``fails_objects(objects)`` runs the schedule and says whether it fails.
    """
    memo: dict[str, bool] = {}
    settings = [dict(o) for o in schedule if o.get("kind") in _SETTINGS]

    def fails(fs: list[Fault]) -> bool:
        objs = objects(fs) + settings
        key = json.dumps(objs, sort_keys=True)
        if key not in memo:
            memo[key] = fails_objects(objs)
        return memo[key]

    fs = faults(schedule, link_key)
    if fails([]):
        return settings, len(memo)
    fs = ddmin(fs, fails)
    for i in range(len(fs)):
        if fs[i].what != "other":
            fs = _shorten(fs, i, slots, fails)
    return objects(fs) + settings, len(memo)
