"""The kit's message properties that are the kit's own checks, fed from the observer's record.

Where a stated property is the same check as one the built-in reporters run, one class
judges both: the property feeds the check what the observer saw of each message, and
reports the check's violations as its own. :class:`ShortestPaths` is :class:`~._checks.PathCheck`'s
``shortest_paths`` (a delivered packet's hops against the topology distance), which the
built-in unicast schemes run from their delivery events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._properties import EndView, MessageProperty, Sent, Violation, arrivals
from ._checks import PathCheck, _as_packet

__all__ = ["ShortestPaths"]


@dataclass
class ShortestPaths(MessageProperty):
    """Every message (by ``key``) that reached its destination was sent exactly the topology
    distance from its first sender to it times (a shortest path). Needs ``dest``.

    Judged by the kit's :class:`~slotnet.schemes.kit.PathCheck` (``shortest_paths``), fed for
    each message: its first sender, its destination, the slot of its first arrival there,
    and the sends before that slot (its hops).
    """

    def check_end(self, view: EndView) -> list[Violation]:
        assert self.dest is not None, f"{self.name}: ShortestPaths needs dest"
        check = PathCheck(view.topology, shortest=True, keep=True)
        shown: dict[tuple[Any, ...], tuple[int, list[Sent]]] = {}
        for k, j in self.journeys(view).items():
            sends = [r for r in j if isinstance(r, Sent)]
            if not sends:
                continue
            dest = self.dest(j[0].message)
            got = arrivals(j, dest)
            if not got:
                continue
            slot = got[0].slot
            before = [s for s in sends if s.slot < slot]
            packet = _as_packet(k)
            check.delivered(dest, slot, sends[0].slot, len(before), packet, sends[0].sender, dest)
            shown[packet] = (sends[0].sender, before)
        found = check.paths.found or []
        out = []
        for slot, node, packet, problem in found:
            source, before = shown[packet]
            dist = view.topology.distance(source, node)
            out.append(self.violation(slot, [source, node], problem, before[:dist + 1][-3:]))
        return out
