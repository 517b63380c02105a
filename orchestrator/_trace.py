"""Per-node traces: JSON lines out, timelines and Perfetto export back in.

Events of one slot are buffered and written sorted by node; within a node, events the
node itself caused keep their order, and events the driver emitted about it (losses,
faults) come first in a canonical order. So a trace is identical whatever order Trio ran
the nodes in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from slotnet.errors import SlotnetError

from ._spec import SpecError, TraceSpec

__all__ = ["Tracer", "read_trace", "timeline", "to_perfetto"]


class Tracer:
    """Writes the chosen events of a run to ``spec.path``."""

    def __init__(self, spec: TraceSpec, schema: Mapping[str, tuple[str, ...]]) -> None:
        self.spec = spec
        self.schema = schema
        try:
            self._out: IO[str] = open(spec.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise SpecError(f"cannot write trace {spec.path!r}: {exc.strerror or exc}") from None
        self._buf: list[tuple[int, tuple[int, Any], dict[str, Any]]] = []
        self._seq = 0
        self.written = 0

    def wants_node(self, node: int) -> bool:
        return self.spec.nodes is None or node in self.spec.nodes

    def _keep(self, slot: int, kind: str) -> bool:
        s = self.spec
        if s.slots is not None and not s.slots[0] <= slot < s.slots[1]:
            return False
        return s.kinds is None or kind in s.kinds

    def tap(self, node: int, slot: int, kind: str, fields: dict[str, Any]) -> None:
        """An event the node caused (sent, received, or a scheme event)."""
        if self._keep(slot, kind):
            self._seq += 1
            self._buf.append((node, (1, self._seq), {"slot": slot, "node": node, "event": kind, **fields}))

    def driver_tap(self, node: int, slot: int, kind: str, fields: dict[str, Any]) -> None:
        """An event the driver emitted about ``node`` (lost, fault): ordered canonically."""
        if self._keep(slot, kind):
            ev = {"slot": slot, "node": node, "event": kind, **fields}
            self._buf.append((node, (0, json.dumps(ev, sort_keys=True)), ev))

    def record(self, node: int, slot: int, kind: str, values: tuple[Any, ...]) -> None:
        """A scheme event, its values named by the scheme's event schema."""
        if self._keep(slot, kind):
            names = self.schema.get(kind)
            if names is None or len(names) != len(values):
                raise SlotnetError(f"node {node} recorded {kind!r} with {len(values)} values in slot {slot}; "
                                   f"the reporter declares {list(names or ())}")
            self.tap(node, slot, kind, dict(zip(names, values)))

    def end_slot(self) -> None:
        """Flush the slot's events in (node, sequence) order."""
        if not self._buf:
            return
        self._buf.sort(key=lambda e: (e[2]["slot"], e[0], e[1]))  # (slot, node, (phase, order))
        for _, _, ev in self._buf:
            self._out.write(json.dumps(ev, separators=(",", ":")) + "\n")
        self.written += len(self._buf)
        self._buf.clear()

    def close(self) -> None:
        self.end_slot()
        self._out.close()


def read_trace(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the events of a trace file.

    Raises:
        SpecError: if the file is missing or a line is not a trace event.
    """
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise SpecError(f"cannot read trace {str(path)!r}: {exc.strerror or exc}") from None
    with fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                raise SpecError(f"trace {str(path)!r} line {i} is not JSON") from None
            if not isinstance(ev, dict) or not {"slot", "node", "event"} <= ev.keys():
                raise SpecError(f"trace {str(path)!r} line {i} is not a trace event")
            yield ev


def timeline(events: Iterator[dict[str, Any]], node: int, kinds: set[str] | None = None) -> list[str]:
    """Human lines for one node: ``slot  event  field=value ...``."""
    out = []
    for ev in events:
        if ev["node"] != node or (kinds and ev["event"] not in kinds):
            continue
        rest = " ".join(f"{k}={json.dumps(v)}" for k, v in ev.items() if k not in ("slot", "node", "event"))
        out.append(f"{ev['slot']:>8}  {ev['event']:<10} {rest}")
    return out


def to_perfetto(events: Iterator[dict[str, Any]]) -> dict[str, Any]:
    """The Chrome/Perfetto trace-event format: one track per node, 1 slot = 1 ms."""
    trace = []
    nodes = set()
    for ev in events:
        nodes.add(ev["node"])
        args = {k: v for k, v in ev.items() if k not in ("slot", "node", "event")}
        trace.append({"name": ev["event"], "ph": "X", "ts": ev["slot"] * 1000, "dur": 1000,
                      "pid": 0, "tid": ev["node"], "args": args})
    for v in sorted(nodes):
        trace.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": v, "args": {"name": f"node {v}"}})
    return {"traceEvents": trace, "displayTimeUnit": "ms"}
