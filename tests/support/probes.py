"""Tiny schemes used to pin down the fabric and runtime (not shipped)."""

from __future__ import annotations

from typing import Any

from slotnet.nodes import Node
from slotnet.schemes import SCHEMES, Param, Scheme
from slotnet.schemes.kit import BaseReporter


def _same(value: Any) -> Any:
    return value


class LogReporter(BaseReporter):
    """Keeps every event (fine for tests: a few hundred events)."""

    events = {"log": ("what",)}

    def __init__(self, setup: Any) -> None:
        super().__init__(setup)
        self.log: list[tuple[int, int, Any]] = []
        self.lost: list[tuple[Any, str]] = []

    def handlers(self):
        return {"log": lambda node, slot, what: self.log.append((node, slot, what))}

    def on_lost(self, slot, sender, port, receiver, message, cause):
        self.lost.append((message, cause))

    def backlog(self) -> int:
        return 0

    def metrics(self):
        return {"log": sorted(self.log, key=lambda e: (e[0], e[1])), "lost": sorted(self.lost, key=repr)}

    def per_node(self):
        return {}

    def series(self):
        return []

    def invariants(self, lost, in_flight, held):
        return {"probe": {"ok": True, "lost": dict(lost), "in_flight": len(in_flight)}}


def register(name: str, node_cls: type[Node], monkeypatch, params=("sizes", "wake"),
             topologies=("hypercube", "torus", "mesh"), **fields: Any) -> None:
    """Register a probe scheme for the duration of one test (``fields``: more Scheme fields)."""
    scheme = Scheme(name=name, summary="probe", source="tests", node=node_cls, reporter=LogReporter,
                    prepare=lambda topo, params, load: dict(params), topologies=topologies,
                    params=tuple(Param(p, _same, None, "probe parameter") for p in params), **fields)
    monkeypatch.setitem(SCHEMES, name, scheme)
