"""Reading traces back: checked events, per-node timelines, one packet's journey, hops.

A trace is the JSON lines a run writes (``slotnet.orchestrator.engine._trace``): a header
naming the run (:func:`read_header`), then its events (:func:`read_trace`). Reading
validates every line (``slot`` and ``node`` integers, ``event`` a string). :class:`Hops`
pairs each ``received`` event with the ``sent`` event it answers, for the Perfetto export
(``_perfetto``) and the diagram (``_diagram``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..engine._spec import SpecError

__all__ = ["Hops", "carries", "describe_follow", "follow", "format_event", "learn_links", "message_key", "parse_packet",
           "peer", "read_header", "read_trace", "timeline", "trace_census"]

#: Bytes that open a gzip file.
_GZIP_MAGIC = b"\x1f\x8b"


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
                if i == 1 and line.startswith('{"slotnet_trace"'):  # the header: read_header's
                    _header(line, name)
                    continue
                yield _event(line, name, i)
        except UnicodeDecodeError:
            raise SpecError(f"trace {name!r} line {i} is not UTF-8 text: not a trace written by slotnet run") from None
        except OSError as exc:
            raise SpecError(f"cannot read trace {name!r}: {exc.strerror or exc}") from None


def read_header(path: str | Path) -> dict[str, Any] | None:
    """The header a trace starts with (the run that wrote it: ``slotnet_trace``, ``slotnet``,
    ``scheme``, ``topology``, ``seed``, ``command``), or None for a trace without one.

    Raises:
        SpecError: if the file cannot be read, or its header is malformed or of a later format.
    """
    name = str(path)
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 16)
    except OSError as exc:
        raise SpecError(f"cannot read trace {name!r}: {exc.strerror or exc}") from None
    try:
        line = first.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return _header(line, name) if line.startswith('{"slotnet_trace"') else None


def _header(line: str, name: str) -> dict[str, Any]:
    from ..engine._provenance import TRACE_FORMAT

    try:
        head = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise SpecError(f"trace {name!r} line 1 is not a JSON header") from None
    fmt = head.get("slotnet_trace") if isinstance(head, dict) else None
    if not isinstance(fmt, int) or isinstance(fmt, bool) or not isinstance(head.get("topology"), str):
        raise SpecError(f"trace {name!r} line 1 is not a slotnet trace header (needs slotnet_trace and topology)")
    if fmt > TRACE_FORMAT:
        raise SpecError(f"trace {name!r} is of trace format {fmt}, newer than this slotnet reads ({TRACE_FORMAT}): "
                        f"it was written by slotnet {head.get('slotnet')}")
    return head


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
        elif ev["event"] == "lost":  # each lost copy is written once (at its sender when traced)
            lost += 1
    last = max(receptions.values(), default=None)
    if last is not None:
        mine = [ev for ev in mine if ev["slot"] <= last or ev["event"] == "lost"]
    summary = {"packet": list(packet), "birth": birth, "nodes_reached": len(receptions), "last_reception": last,
               "copies_lost": lost, "events": len(mine)}
    return mine, summary


def trace_census(events: Iterable[dict[str, Any]], packet: tuple[Any, ...] | None = None) -> dict[str, Any]:
    """What a trace holds, for refusing filters it cannot match: its event ``kinds``, its
    ``nodes``, the first few packet ids of its messages (``packets``: their first two fields)
    and whether any event concerns ``packet`` (``packet_seen``)."""
    kinds: set[str] = set()
    nodes: set[int] = set()
    ids: list[tuple[Any, ...]] = []
    seen = False
    for ev in events:
        kinds.add(ev["event"])
        nodes.add(ev["node"])
        msg = ev.get("message")
        if ev["event"] == "sent" and isinstance(msg, (list, tuple)) and len(ids) < 3:
            pid = tuple(msg[:2])
            if pid not in ids and all(isinstance(x, (int, str)) for x in pid):
                ids.append(pid)
        if packet is not None and not seen and _mentions(ev, packet) is not None:
            seen = True
    return {"kinds": kinds, "nodes": nodes, "packets": ids, "packet_seen": seen}


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
