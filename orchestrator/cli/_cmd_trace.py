"""``slotnet trace``: query a trace file, follow a packet, export to Perfetto or a slot diagram."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slotnet.fabric import parse_topology

from ..engine._spec import SpecError
from ..tools._perfetto import write_perfetto
from ..tools._trace_query import describe_follow, follow, format_event, learn_links, parse_packet, read_trace, timeline
from ._common import slot_window

__all__ = ["cmd_trace"]


def cmd_trace(args: argparse.Namespace) -> int:
    """``slotnet trace``."""
    from ..tools._diagram import MAX_NODES, MAX_SLOTS, write_diagram

    window = slot_window(args.slots, "--slots") if args.slots else None
    kinds = set(args.event) or None
    nodes = set(args.node) or None
    packet = parse_packet(args.packet) if args.packet is not None else None
    topology = parse_topology(args.topology) if args.topology else None
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
