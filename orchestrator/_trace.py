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
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from slotnet.errors import SlotnetError

from ._spec import SpecError, TraceSpec

__all__ = ["Hops", "Tracer", "carries", "describe_follow", "fingerprint", "follow", "format_event", "learn_links",
           "message_key", "parse_packet", "peer", "perfetto_events", "read_trace", "timeline", "to_perfetto", "write_perfetto"]

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
        out.append(format_event(ev, node=False))
    return out


def format_event(ev: Mapping[str, Any], *, node: bool = True) -> str:
    """One event as a line: ``slot [node N] event field=value ...``."""
    rest = " ".join(f"{k}={json.dumps(v)}" for k, v in ev.items() if k not in ("slot", "node", "event"))
    where = f"  node {ev['node']:<4}" if node else ""
    return f"{ev['slot']:>8}{where}  {ev['event']:<10} {rest}"


# -- packets ---------------------------------------------------------------------------------
def parse_packet(text: str) -> tuple[Any, ...]:
    """A packet id from ``A,B,...``: integers, or any other text as a string (``p,0,3``).

    Raises:
        SpecError: for an empty id.
    """
    out: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise SpecError(f"--packet must be comma-separated values such as 6,1 (origin,seq), got {text!r}")
        try:
            out.append(int(part))
        except ValueError:
            out.append(part)
    return tuple(out)


def carries(message: Any, packet: tuple[Any, ...]) -> bool:
    """Whether ``message`` belongs to ``packet``: its leading fields are the packet id.

    A broadcast's messages begin with ``(origin, seq)``; a deflection packet is
    ``(dest, birth slot, origin)`` all the way; a scalar message is its own id.
    """
    if isinstance(message, (list, tuple)):
        return len(message) >= len(packet) and tuple(message[:len(packet)]) == packet
    return len(packet) == 1 and message == packet[0]


def _mentions(ev: Mapping[str, Any], packet: tuple[Any, ...]) -> str | None:
    """``"birth"``, ``"reception"``, ``"message"`` when the event concerns ``packet``, else None.

    Broadcast schemes record the kit's ``step`` event: ``births`` lists ``(seq, tau)``
    of the node's new packets, ``received`` the ``(origin, seq)`` it got for the first time.
    """
    if "message" in ev and carries(ev["message"], packet):
        return "message"
    if len(packet) == 2:
        births, received = ev.get("births"), ev.get("received")
        if isinstance(births, list) and ev["node"] == packet[0] and any(
                isinstance(b, list) and b[:1] == [packet[1]] for b in births):
            return "birth"
        if isinstance(received, list) and list(packet) in received:
            return "reception"
    return None


def follow(events: Iterable[dict[str, Any]], packet: tuple[Any, ...]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every event of one packet (or broadcast), from its birth to its last reception, and a summary."""
    mine: list[dict[str, Any]] = []
    birth: dict[str, Any] | None = None
    receptions: dict[int, int] = {}
    lost = 0
    for ev in events:
        what = _mentions(ev, packet)
        if what is None:
            continue
        mine.append(ev)
        if what == "birth" and (birth is None or birth["time"] is None):  # a recorded birth beats a first send
            tau = next((b[1] for b in ev["births"] if isinstance(b, list) and b[:1] == [packet[1]] and len(b) > 1
                        and isinstance(b[1], (int, float)) and not isinstance(b[1], bool)), None)
            birth = {"slot": ev["slot"], "node": ev["node"], "time": tau}
        elif what == "message" and ev["event"] == "sent" and birth is None:
            birth = {"slot": ev["slot"], "node": ev["node"], "time": None}
        elif ev["event"] in ("received", "step") and what in ("message", "reception"):
            receptions.setdefault(ev["node"], ev["slot"])
            receptions[ev["node"]] = max(receptions[ev["node"]], ev["slot"])
        elif ev["event"] == "lost" and ev["node"] == ev.get("from", ev["node"]):
            lost += 1
    last = max(receptions.values(), default=None)
    if last is not None:
        mine = [ev for ev in mine if ev["slot"] <= last or ev["event"] == "lost"]
    summary = {"packet": list(packet), "birth": birth, "nodes_reached": len(receptions), "last_reception": last,
               "copies_lost": lost, "events": len(mine)}
    return mine, summary


def describe_follow(summary: Mapping[str, Any]) -> str:
    """The summary line of :func:`follow`."""
    pid = ",".join(map(str, summary["packet"]))
    b = summary["birth"]
    born = "birth not in the trace" if b is None else (
        f"born at node {b['node']} in slot {b['slot']}" + ("" if b["time"] is None else f" (time {b['time']:.3f})"))
    last = summary["last_reception"]
    return (f"packet {pid}: {born}; reached {summary['nodes_reached']} nodes"
            + ("" if last is None else f", the last in slot {last}") + f"; {summary['copies_lost']} copies lost")


# -- hops: which sent event each received event answers --------------------------------------
def message_key(message: Any) -> str:
    return json.dumps(message, sort_keys=True, separators=(",", ":"))


class Hops:
    """Pairs each ``received`` event with the ``sent`` event it answers, streaming.

    With the run's topology the sender of a message read on in-port ``p`` of node ``w``
    is ``topology.neighbour(w, p)``: exact. Without it, the sender is inferred: the one
    node that sent the same message in the slot before (a message is read in the slot
    after it was sent), and each in-port learnt that way (``links``) names its sender
    from then on. A reception no rule settles gets no hop. Sends never answered (the
    receiver not traced) are forgotten after ``horizon`` slots (a message a ``delay`` fault
    holds back longer gets no hop).
    """

    def __init__(self, topology: Any = None, links: Mapping[tuple[int, int], int] | None = None,
                 horizon: int = 16) -> None:
        self.topology = topology
        self.links: dict[tuple[int, int], int] = dict(links or {})
        self.conflicts: set[tuple[int, int]] = set()
        self.horizon = horizon
        self._pending: dict[str, list[tuple[int, int, Any]]] = {}  # message -> [(slot, node, tag)]
        self._slot = -1

    def feed(self, ev: Mapping[str, Any], tag: Any = None) -> tuple[Any, Any] | None:
        """Take one event (in trace order).

        Returns:
            for a ``received`` event (or a ``lost`` one, at its sender), ``(tag of the sent event it
            answers, tag)``; None otherwise or when no sent event could be found.
        """
        slot, kind = ev["slot"], ev["event"]
        if slot > self._slot:
            self._slot = slot
            if slot % 4 == 0:
                self._prune(slot - self.horizon)
        if kind == "sent" and "message" in ev:
            self._pending.setdefault(message_key(ev["message"]), []).append((slot, ev["node"], tag))
        elif kind == "lost" and ev["node"] == ev.get("from"):
            got = self._take(message_key(ev.get("message")), lambda s, v: v == ev["node"] and s <= slot)
            return None if got is None else (got, tag)
        elif kind == "received" and "message" in ev:
            return self._receive(ev, tag)
        return None

    def _receive(self, ev: Mapping[str, Any], tag: Any) -> tuple[Any, Any] | None:
        w, slot, port = ev["node"], ev["slot"], ev.get("port")
        key = message_key(ev["message"])
        sender = self.sender_of(w, port)
        if sender is not None:
            got = self._take(key, lambda s, v: v == sender and s < slot)
            return None if got is None else (got, tag)
        nodes = {v for s, v, _ in self._pending.get(key, ()) if s == slot - 1 and v != w}
        if len(nodes) != 1:
            return None
        (u,) = nodes
        if isinstance(port, int) and not isinstance(port, bool):
            self._learn((w, port), u)
        got = self._take(key, lambda s, v: v == u and s == slot - 1)
        return None if got is None else (got, tag)

    def sender_of(self, w: int, port: Any) -> int | None:
        """The node that sends to ``w``'s in-port ``port``, if known (-1: no such port)."""
        if not isinstance(port, int) or isinstance(port, bool):
            return None
        if self.topology is not None:
            nb = peer(self.topology, w, port)
            return -1 if nb is None else nb  # -1: no such port, nothing matches
        return self.links.get((w, port))

    def _learn(self, link: tuple[int, int], sender: int) -> None:
        if link in self.conflicts:
            return
        if self.links.setdefault(link, sender) != sender:  # two senders for one in-port: trust neither
            del self.links[link]
            self.conflicts.add(link)

    def _take(self, key: str, ok: Any) -> Any:
        pend = self._pending.get(key)
        if not pend:
            return None
        for i, (s, v, tag) in enumerate(pend):
            if ok(s, v):
                del pend[i]
                if not pend:
                    del self._pending[key]
                return tag
        return None

    def _prune(self, before: int) -> None:
        for key in list(self._pending):
            kept = [x for x in self._pending[key] if x[0] >= before]
            if kept:
                self._pending[key] = kept
            else:
                del self._pending[key]


def peer(topology: Any, node: Any, port: Any) -> int | None:
    """The node ``topology`` connects to ``node``'s ``port``, None if there is none (or the values are junk)."""
    ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (node, port))
    if not ints or not (0 <= node < topology.n_nodes and 0 <= port < topology.n_ports):
        return None
    nb = topology.neighbour(node, port)
    return nb if isinstance(nb, int) else None


def learn_links(events: Iterable[dict[str, Any]]) -> dict[tuple[int, int], int]:
    """In-port -> sender, inferred from a whole trace (a first pass before :class:`Hops` pairs it)."""
    hops = Hops()
    for ev in events:
        hops.feed(ev)
    return hops.links


# -- Perfetto ---------------------------------------------------------------------------------
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
