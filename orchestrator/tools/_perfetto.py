"""Export a trace to the Chrome/Perfetto trace-event format (``slotnet trace --perfetto``).

The export streams to a temporary file that replaces its target only once complete, so a
bad trace line never leaves a broken export behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ..engine._spec import SpecError
from ._trace_query import Hops

__all__ = ["perfetto_events", "to_perfetto", "write_perfetto"]

#: Trace events drawn as instants (a point in time), not slices.
_INSTANTS = ("fault", "lost")


def _perfetto_event(ev: Mapping[str, Any], ts: float = -1.0, dur: float = 1000.0) -> dict[str, Any]:
    args = {k: v for k, v in ev.items() if k not in ("slot", "node", "event")}
    ts = ev["slot"] * 1000 if ts < 0 else ts
    if ev["event"] in _INSTANTS:
        return {"name": _instant_name(ev), "ph": "i", "s": "t", "ts": ts, "pid": 0, "tid": ev["node"], "args": args}
    return {"name": ev["event"], "ph": "X", "ts": ts, "dur": dur, "pid": 0, "tid": ev["node"], "args": args}


def _instant_name(ev: Mapping[str, Any]) -> str:
    if ev["event"] == "fault":
        port = ev.get("port")
        return f"{ev.get('fault', 'fault')}" + ("" if port is None else f" port {port}")
    return f"lost ({ev.get('cause', '?')})"


def _thread_name(v: int) -> dict[str, Any]:
    return {"name": "thread_name", "ph": "M", "pid": 0, "tid": v, "args": {"name": f"node {v}"}}


def perfetto_events(events: Iterable[dict[str, Any]], topology: Any = None,
                    links: Mapping[tuple[int, int], int] | None = None) -> Iterator[dict[str, Any]]:
    """The Chrome/Perfetto trace events of a slotnet trace, streaming.

    One track (thread) per node; 1 slot = 1 ms, the events a node wrote in one slot
    side by side within it; ``fault`` and ``lost`` events are instants (``ph: "i"``);
    every hop :class:`Hops` pairs is a flow arrow from the ``sent`` slice to the
    ``received`` one (``ph: "s"`` / ``"f"``, one ``id`` per hop).
    """
    hops = Hops(topology, links)
    nodes: set[int] = set()
    group: list[dict[str, Any]] = []
    flow = 0

    def flush() -> Iterator[dict[str, Any]]:
        nonlocal flow
        width = 1000.0 / len(group)
        for i, ev in enumerate(group):
            ts = round(ev["slot"] * 1000 + i * width, 3)
            out = _perfetto_event(ev, ts, round(width, 3))
            yield out
            pair = hops.feed(ev, (ev["node"], round(ts + width / 2, 3)))
            if pair is not None and ev["event"] == "received":
                flow += 1
                (u, ts_u), (w, ts_w) = pair
                yield {"name": "hop", "cat": "hop", "ph": "s", "id": flow, "ts": ts_u, "pid": 0, "tid": u}
                yield {"name": "hop", "cat": "hop", "ph": "f", "bp": "e", "id": flow, "ts": ts_w, "pid": 0, "tid": w}
        group.clear()

    for ev in events:
        nodes.add(ev["node"])
        if group and (group[0]["slot"], group[0]["node"]) != (ev["slot"], ev["node"]):
            yield from flush()
        group.append(ev)
    if group:
        yield from flush()
    for v in sorted(nodes):
        yield _thread_name(v)


def to_perfetto(events: Iterable[dict[str, Any]], topology: Any = None,
                links: Mapping[tuple[int, int], int] | None = None) -> dict[str, Any]:
    """The Chrome/Perfetto trace-event format (in memory; :func:`write_perfetto` streams the same to a file)."""
    return {"traceEvents": list(perfetto_events(events, topology, links)), "displayTimeUnit": "ms"}


def write_perfetto(events: Iterable[dict[str, Any]], path: str | Path, topology: Any = None,
                   links: Mapping[tuple[int, int], int] | None = None) -> int:
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
                return _stream_perfetto(events, fh, topology, links)
        except OSError as exc:
            raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            count = _stream_perfetto(events, fh, topology, links)
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


def _stream_perfetto(events: Iterable[dict[str, Any]], fh: IO[str], topology: Any = None,
                     links: Mapping[tuple[int, int], int] | None = None) -> int:
    count = 0
    fh.write('{"traceEvents":[')
    for out in perfetto_events(events, topology, links):
        fh.write(("," if count else "") + json.dumps(out, separators=(",", ":"), allow_nan=False))
        count += 1
    fh.write('],"displayTimeUnit":"ms"}\n')
    return count


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
