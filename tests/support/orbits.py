"""Fault schedules under a topology's symmetries (shared by the ``slotnet check`` reduction tests)."""

from __future__ import annotations

from typing import Any

from slotnet.orchestrator.tools._symmetry import Symmetry, classes

__all__ = ["classes_as_orbits", "image", "orbit_key"]


def image(topo: Any, sched: frozenset, s: Symmetry) -> frozenset:
    """The schedule ``sched`` (a set of atoms) moved by the symmetry ``s`` of ``topo``."""
    return frozenset(a.image(s, topo) for a in sched)


def orbit_key(topo: Any, group: list[Symmetry], sched: frozenset) -> tuple:
    """One name for the whole orbit of ``sched``: its least image under ``group``, atoms sorted."""
    return min(tuple(sorted(image(topo, sched, s))) for s in group)


def classes_as_orbits(topo: Any, every: list[frozenset], group: list[Symmetry]) -> list[tuple[set, int]]:
    """The classes ``classes`` splits ``every`` schedule into, each as ``(orbit of its representative, members)``.

    Asserts what holds for every enumeration: the class sizes add up to ``every``, each class has as many
    members as its representative's orbit has schedules, and there are at least ``len(every) / len(group)``
    classes. What else an orbit must satisfy is the caller's to assert.
    """
    reps = classes(every, lambda sched, s: image(topo, sched, s), group)
    assert sum(m for _, m in reps) == len(every)
    out = [({image(topo, rep, s) for s in group}, members) for rep, members in reps]
    for orbit, members in out:
        assert len(orbit) == members
    assert len(reps) * len(group) >= len(every)
    return out
