"""``slotnet trace``: query a trace file, follow a packet, export to Perfetto or a slot diagram."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slotnet.errors import SlotnetError
from slotnet.fabric import parse_topology
from slotnet.schemes import get_scheme

from ..engine._spec import TRACE_DRIVER_EVENTS, SpecError
from ..tools._perfetto import write_perfetto
from ..tools._trace_query import (
    describe_follow,
    follow,
    format_event,
    learn_links,
    parse_packet,
    read_header,
    read_trace,
    timeline,
    trace_census,
)
from ._common import slot_window

__all__ = ["cmd_trace"]


def cmd_trace(args: argparse.Namespace) -> int:
    """``slotnet trace``."""
    from ..tools._diagram import MAX_NODES, MAX_SLOTS, write_diagram

    window = slot_window(args.slots, "--slots") if args.slots else None
    kinds = set(args.event) or None
    nodes = set(args.node) or None
    packet = parse_packet(args.packet) if args.packet is not None else None
    topology = _topology(args.file, args.topology)
    if kinds or nodes or packet is not None:
        _check_filters(args.file, kinds, nodes, packet, topology)
    for flag, out in (("--perfetto", args.perfetto), ("--diagram", args.diagram)):
        if out and Path(out).resolve() == Path(args.file).resolve():
            raise SpecError(f"{flag} {out!r} would overwrite the trace it reads")
    if args.diagram and window is not None and window[1] - window[0] > MAX_SLOTS:
        raise SpecError(f"--diagram draws at most {MAX_SLOTS} slots, --slots asks for {window[1] - window[0]}")
    if args.diagram and nodes is not None and len(nodes) > MAX_NODES:
        raise SpecError(f"--diagram draws at most {MAX_NODES} nodes, --node names {len(nodes)}")

    def selected() -> Iterator[dict[str, Any]]:
        events = (ev for ev in read_trace(args.file)
                  if (nodes is None or ev["node"] in nodes) and (not kinds or ev["event"] in kinds)
                  and (window is None or window[0] <= ev["slot"] < window[1]))
        return follow(events, packet)[0].__iter__() if packet is not None else events

    # without the topology, learn who sends to each in-port from the whole trace, not just the selection
    links = None if topology is not None or not (args.perfetto or args.diagram) else learn_links(read_trace(args.file))
    if args.perfetto:
        count = write_perfetto(selected(), args.perfetto, topology, links)
        print(f"wrote {count} events to {args.perfetto}")
    if args.diagram:
        drawn = write_diagram(selected(), args.diagram, topology=topology, links=links, window=window)
        print(f"wrote a diagram of {drawn['nodes']} nodes x {drawn['slots']} slots (slots {drawn['first']}.."
              f"{drawn['last']}, {drawn['hops']} messages) to {args.diagram}" + drawn["note"])
    if args.perfetto or args.diagram:
        return 0
    if packet is not None:
        mine, summary = follow(selected(), packet)
        for ev in mine:
            print(format_event(ev))
        print(describe_follow(summary))
        return 0
    if nodes is not None and len(nodes) == 1:
        (node,) = nodes
        lines = timeline(read_trace(args.file), node, kinds, window)
        if not lines:
            print(f"no events for node {node} in {args.file}")
        for line in lines:
            print(line)
        return 0
    count = 0
    for ev in selected():
        print(format_event(ev))
        count += 1
    if not count:
        print(f"no events match in {args.file}")
    return 0


def _topology(path: str, given: str | None) -> Any:
    """The run's topology: from the trace's header; a ``-t`` that disagrees with it is refused
    (it would pair the hops wrongly); ``-t`` alone for a trace without a header."""
    header = read_header(path)
    mine = parse_topology(header["topology"]) if header is not None else None
    if given is None:
        return mine
    topology = parse_topology(given)
    if mine is not None and topology.spec != mine.spec:
        raise SpecError(f"-t {given} disagrees with the trace: {path!r} was written by a run on {mine.spec} "
                        f"(its header); leave -t out")
    return topology


def _known_kinds(path: str, present: set[str]) -> set[str]:
    """The event kinds the trace's run can write: the driver's, its scheme's (named by the header), those present."""
    header = read_header(path)
    kinds = set(present) | set(TRACE_DRIVER_EVENTS)
    if header is not None:
        with contextlib.suppress(SlotnetError):  # a scheme not registered here: the kinds present
            kinds |= set(getattr(get_scheme(str(header.get("scheme"))).reporter, "events", {}))
    return kinds


def _check_filters(path: str, kinds: set[str] | None, nodes: set[int] | None, packet: tuple[Any, ...] | None,
                   topology: Any) -> None:
    """Refuse an event kind, a node or a packet the trace's run cannot have, naming the known values."""
    census = trace_census(read_trace(path), packet)
    known_kinds = _known_kinds(path, census["kinds"])
    for kind in sorted(kinds or ()):
        if kind not in known_kinds:
            raise SpecError(f"--event {kind!r}: no such event in {path!r}; its kinds: "
                            f"{', '.join(k if k.isprintable() else ascii(k) for k in sorted(known_kinds))}")
    known = set(range(topology.n_nodes)) if topology is not None else census["nodes"]
    for node in sorted(nodes or ()):
        if node not in known:
            span = f"{min(known)}..{max(known)}" if known and len(known) == max(known) - min(known) + 1 else (
                ", ".join(map(str, sorted(known)[:20])) + (" ..." if len(known) > 20 else ""))
            raise SpecError(f"--node {node}: no node {node} in {path!r}; its nodes: {span or 'none'}")
    if packet is not None and not census["packet_seen"]:
        ids = "; ".join(ascii(",".join(map(str, i)))[1:-1] for i in census["packets"]) or "none"
        raise SpecError(f"--packet {','.join(map(str, packet))!r}: no message of that packet in {path!r}; a packet's id "
                        f"is the leading fields of its messages, e.g. {ids}")
