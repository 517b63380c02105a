"""The trace writer: the chosen events of a run, as JSON lines.

The first line is a header naming the run (``slotnet_trace``, the version, scheme,
topology, seed and the command that reruns it: :func:`._provenance.trace_header`).
Events of one slot are kept in a :class:`TraceBuffer` and written sorted by node; within
a node, events the node itself caused keep their order, and events the driver emitted
about it (losses, faults) come first in a canonical order. So a trace is identical
whatever order Trio ran the nodes in, and whatever number of shards the nodes were spread
over: a shard keeps its nodes' events in a buffer of its own and hands each slot's to the
coordinator, whose :class:`Tracer` writes them.

A trace path that cannot be written is refused before the first slot; a write that fails
mid-run (a full disk) stops the trace, not the run: the error goes to
``TraceSpec.on_error`` (the CLI reports it after the results) or becomes a
``RuntimeWarning``. Reading traces back (queries, Perfetto, diagrams) is the tools'
business (``slotnet.orchestrator.tools``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from slotnet.errors import SlotnetError

from ._spec import SpecError, TraceSpec

__all__ = ["TraceBuffer", "Tracer", "fingerprint"]

#: One kept event: (node, order key within the node, the event).
Kept = tuple[int, tuple[Any, ...], dict[str, Any]]


class TraceBuffer:
    """The chosen events of the current slot, kept until the slot closes.

    The node contexts and the network write here (:meth:`tap`, :meth:`driver_tap`,
    :meth:`record`); :meth:`take` hands the slot's events over, in the order they came.
    """

    def __init__(self, spec: TraceSpec, schema: Mapping[str, tuple[str, ...]]) -> None:
        self.spec = spec
        self.schema = schema
        #: False once the trace stopped (its file failed): nothing more is kept
        self.on = True
        self._buf: list[Kept] = []
        self._seq = 0

    def wants_node(self, node: int) -> bool:
        return self.spec.nodes is None or node in self.spec.nodes

    def _keep(self, slot: int, kind: str) -> bool:
        s = self.spec
        if not self.on:
            return False
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

    def extend(self, items: Iterable[Any]) -> None:
        """Add events kept elsewhere (a shard's slot), as ``(node, order key, event)``."""
        if self.on:
            self._buf.extend((node, tuple(key), dict(ev)) for node, key, ev in items)

    def take(self) -> list[Kept]:
        """The events kept since the last call; the buffer is emptied."""
        out, self._buf = self._buf, []
        return out


class Tracer:
    """Writes the chosen events of a run to ``spec.path``, slot by slot, from its :attr:`buffer`.

    Raises:
        SpecError: if the path cannot be opened or a first write to it fails (a full or
            read-only device), before any slot runs.
    """

    def __init__(self, spec: TraceSpec, schema: Mapping[str, tuple[str, ...]],
                 header: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        try:
            self._out: IO[str] | None = open(spec.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise SpecError(f"cannot write trace {spec.path!r}: {exc.strerror or exc}") from None
        self._probe()
        if header is not None:  # the run that wrote the trace (:func:`._provenance.trace_header`)
            try:
                self._out.write(json.dumps(dict(header), separators=(",", ":")) + "\n")
            except OSError as exc:
                self._fail_early(exc)
        #: where the run's events are kept until their slot closes
        self.buffer = TraceBuffer(spec, schema)
        self._slot = 0
        self.written = 0
        self.error: str | None = None

    def _probe(self) -> None:
        """Write (and take back) one byte now, so a full device is found before the run."""
        out = self._out
        assert out is not None
        try:
            out.write("\n")
            out.flush()
        except OSError as exc:
            self._out = None
            _close_quietly(out)
            raise SpecError(f"cannot write trace {self.spec.path!r}: {exc.strerror or exc}") from None
        with contextlib.suppress(OSError):  # not a regular file: readers skip the blank line
            out.seek(0)
            out.truncate()

    def _fail_early(self, exc: OSError) -> None:
        out, self._out = self._out, None
        if out is not None:
            _close_quietly(out)
        raise SpecError(f"cannot write trace {self.spec.path!r}: {exc.strerror or exc}") from None

    def end_slot(self) -> None:
        """Write the slot's events in (node, sequence) order."""
        events = self.buffer.take()
        if not events or self._out is None:
            return
        events.sort(key=lambda e: (e[2]["slot"], e[0], e[1]))  # (slot, node, (phase, order))
        self._slot = events[-1][2]["slot"]
        try:
            for _, _, ev in events:
                self._out.write(json.dumps(ev, separators=(",", ":")) + "\n")
        except OSError as exc:
            self._fail(exc)
        else:
            self.written += len(events)

    def close_slot(self, slot: int) -> bool:
        """As a slot observer: write the slot; never stops the run."""
        self.end_slot()
        return True

    def _fail(self, exc: OSError) -> None:
        """Stop tracing (not the run) and report the write error once."""
        out, self._out = self._out, None
        self.buffer.on = False
        if out is not None:
            _close_quietly(out)
        self.error = (f"cannot write trace {self.spec.path!r}: {exc.strerror or exc} (from slot {self._slot}); "
                      "the run went on without its trace")
        if self.spec.on_error is not None:
            self.spec.on_error(self.error)
        else:
            warnings.warn(self.error, RuntimeWarning, stacklevel=2)

    def close(self) -> None:
        self.end_slot()
        self.buffer.on = False
        if self._out is None:
            return
        try:
            self._out.close()
        except OSError as exc:
            self._fail(exc)
        self._out = None


def _close_quietly(fh: IO[str]) -> None:
    with contextlib.suppress(OSError):
        fh.close()


def fingerprint(path: str | Path) -> str | None:
    """The SHA-256 of a trace file (what ``sha256sum FILE`` prints), None if it is not a readable regular file."""
    try:
        file = Path(path)
        if not file.is_file():
            return None
        h = hashlib.sha256()
        with file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
