"""Per-node traces: JSON lines out, timelines and Perfetto export back in.

Events of one slot are buffered and written sorted by node; within a node, events the
node itself caused keep their order, and events the driver emitted about it (losses,
faults) come first in a canonical order. So a trace is identical whatever order Trio ran
the nodes in.

A trace path that cannot be written is refused before the first slot; a write that fails
mid-run (a full disk) stops the trace, not the run: the error goes to
``TraceSpec.on_error`` (the CLI reports it after the results) or becomes a
``RuntimeWarning``. Reading validates every line (``slot`` and ``node`` integers,
``event`` a string), and the Perfetto export streams to a temporary file that replaces
its target only once complete, so a bad line never leaves a broken export behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from slotnet.errors import SlotnetError

from ._spec import SpecError, TraceSpec

__all__ = ["Tracer", "read_trace", "timeline", "to_perfetto", "write_perfetto"]

#: Bytes that open a gzip file.
_GZIP_MAGIC = b"\x1f\x8b"


class Tracer:
    """Writes the chosen events of a run to ``spec.path``.

    Raises:
        SpecError: if the path cannot be opened or a first write to it fails (a full or
            read-only device), before any slot runs.
    """

    def __init__(self, spec: TraceSpec, schema: Mapping[str, tuple[str, ...]]) -> None:
        self.spec = spec
        self.schema = schema
        try:
            self._out: IO[str] | None = open(spec.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise SpecError(f"cannot write trace {spec.path!r}: {exc.strerror or exc}") from None
        self._probe()
        self._buf: list[tuple[int, tuple[int, Any], dict[str, Any]]] = []
        self._seq = 0
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

    def wants_node(self, node: int) -> bool:
        return self.spec.nodes is None or node in self.spec.nodes

    def _keep(self, slot: int, kind: str) -> bool:
        s = self.spec
        if self._out is None:
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
        """Add events buffered elsewhere (a shard's slot), as ``(node, order key, event)``."""
        if self._out is not None:
            self._buf.extend((node, tuple(key), dict(ev)) for node, key, ev in items)

    def end_slot(self) -> None:
        """Flush the slot's events in (node, sequence) order."""
        if not self._buf or self._out is None:
            self._buf.clear()
            return
        self._buf.sort(key=lambda e: (e[2]["slot"], e[0], e[1]))  # (slot, node, (phase, order))
        self._slot = self._buf[-1][2]["slot"]
        try:
            for _, _, ev in self._buf:
                self._out.write(json.dumps(ev, separators=(",", ":")) + "\n")
        except OSError as exc:
            self._fail(exc)
        else:
            self.written += len(self._buf)
        self._buf.clear()

    def _fail(self, exc: OSError) -> None:
        """Stop tracing (not the run) and report the write error once."""
        out, self._out = self._out, None
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


def read_trace(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the events of a trace file, each checked: ``slot``, ``node`` integers, ``event`` a string.

    Raises:
        SpecError: if the file is missing, compressed or binary, or a line is not a trace event.
    """
    name = str(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise SpecError(f"cannot read trace {name!r}: {exc.strerror or exc}") from None
    with fh:
        try:
            head = fh.read(4096)
        except OSError as exc:
            raise SpecError(f"cannot read trace {name!r}: {exc.strerror or exc}") from None
        if head.startswith(_GZIP_MAGIC):
            raise SpecError(f"trace {name!r} is gzip-compressed: decompress it first (gunzip)")
        if b"\0" in head:
            raise SpecError(f"trace {name!r} is a binary file, not JSON lines written by slotnet run --trace")
        fh.seek(0)
        i = 0
        try:
            for i, raw in enumerate(fh, 1):
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                yield _event(line, name, i)
        except UnicodeDecodeError:
            raise SpecError(f"trace {name!r} line {i} is not UTF-8 text: not a trace written by slotnet run") from None
        except OSError as exc:
            raise SpecError(f"cannot read trace {name!r}: {exc.strerror or exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _event(line: str, name: str, i: int) -> dict[str, Any]:
    """One checked trace event from line ``i`` of trace ``name``."""
    where = f"trace {name!r} line {i}"
    try:
        ev = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise SpecError(f"{where} is not JSON") from None
    if not isinstance(ev, dict) or not {"slot", "node", "event"} <= ev.keys():
        raise SpecError(f"{where} is not a trace event (needs slot, node and event)")
    for key in ("slot", "node"):
        v = ev[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise SpecError(f"{where}: {key!r} must be an integer >= 0, got {v!r}")
    if not isinstance(ev["event"], str) or not ev["event"]:
        raise SpecError(f"{where}: 'event' must be a non-empty string, got {ev['event']!r}")
    return ev


def _in_window(slot: int, slots: tuple[int, int] | None) -> bool:
    return slots is None or slots[0] <= slot < slots[1]


def timeline(events: Iterable[dict[str, Any]], node: int, kinds: set[str] | None = None,
             slots: tuple[int, int] | None = None) -> list[str]:
    """Human lines for one node: ``slot  event  field=value ...`` (``slots``: only ``A <= slot < B``)."""
    out = []
    for ev in events:
        if ev["node"] != node or (kinds and ev["event"] not in kinds) or not _in_window(ev["slot"], slots):
            continue
        rest = " ".join(f"{k}={json.dumps(v)}" for k, v in ev.items() if k not in ("slot", "node", "event"))
        out.append(f"{ev['slot']:>8}  {ev['event']:<10} {rest}")
    return out


def _perfetto_event(ev: Mapping[str, Any]) -> dict[str, Any]:
    args = {k: v for k, v in ev.items() if k not in ("slot", "node", "event")}
    return {"name": ev["event"], "ph": "X", "ts": ev["slot"] * 1000, "dur": 1000, "pid": 0, "tid": ev["node"], "args": args}


def _thread_name(v: int) -> dict[str, Any]:
    return {"name": "thread_name", "ph": "M", "pid": 0, "tid": v, "args": {"name": f"node {v}"}}


def to_perfetto(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The Chrome/Perfetto trace-event format: one track per node, 1 slot = 1 ms (in memory;
    :func:`write_perfetto` streams the same to a file)."""
    trace = []
    nodes = set()
    for ev in events:
        nodes.add(ev["node"])
        trace.append(_perfetto_event(ev))
    trace += [_thread_name(v) for v in sorted(nodes)]
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def write_perfetto(events: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Stream :func:`to_perfetto`'s JSON to ``path``, one event at a time; returns the events written.

    The file is written beside ``path`` under a temporary name and renamed over it only
    once complete: a bad event (or a full disk) leaves no partial file.

    Raises:
        SpecError: if ``path`` cannot be written, or ``events`` raises it (a bad trace line).
    """
    target = Path(path)
    if target.exists() and not target.is_file():  # a device or a pipe: no rename possible
        try:
            with open(target, "w", encoding="utf-8") as fh:
                return _stream_perfetto(events, fh)
        except OSError as exc:
            raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            count = _stream_perfetto(events, fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # what open() would have given it
        os.replace(tmp, target)
    except OSError as exc:
        _remove_quietly(tmp)
        raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    return count


def _stream_perfetto(events: Iterable[dict[str, Any]], fh: IO[str]) -> int:
    count = 0
    nodes: set[int] = set()
    fh.write('{"traceEvents":[')
    for ev in events:
        fh.write(("," if count else "") + json.dumps(_perfetto_event(ev), separators=(",", ":"), allow_nan=False))
        nodes.add(ev["node"])
        count += 1
    for v in sorted(nodes):
        fh.write(("," if count else "") + json.dumps(_thread_name(v), separators=(",", ":")))
        count += 1
    fh.write('],"displayTimeUnit":"ms"}\n')
    return count


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
