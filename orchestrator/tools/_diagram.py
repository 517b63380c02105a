"""Slot diagrams: nodes as columns, slots as rows, messages as arrows (SVG written by hand).

The Lamport (space-time) diagram Maelstrom draws, for small runs: at most
:data:`MAX_NODES` nodes and :data:`MAX_SLOTS` slots. A message sent in slot ``t`` and
read in slot ``t + 1`` is an arrow from the sender's column at row ``t`` to the
receiver's at row ``t + 1``, coloured by its packet (the first two fields of the
message), with the message as its tooltip. A message lost (to a fault, or to a node that had returned from ``run()``) is a dashed red
arrow ending in a cross; a fault is a red diamond on its node; a birth (the broadcast
kit's ``step`` births, the unicast kit's ``born``) is a green ring. Messages to or from
a node outside the diagram are short stubs naming the other end where it is known.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from slotnet.errors import SpecError

from ._trace_query import Hops, learn_links, message_key, peer

__all__ = ["MAX_NODES", "MAX_SLOTS", "diagram_svg", "write_diagram"]

MAX_NODES = 16
MAX_SLOTS = 40

_CW, _RH = 56, 30             # column width, row height
_LEFT, _TOP, _BOTTOM = 64, 84, 56
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
            "#393b79", "#637939", "#8c6d31")
_RED = "#d62728"


def _colour(message: Any) -> str:
    head = message[:2] if isinstance(message, (list, tuple)) else message
    return _PALETTE[zlib.crc32(message_key(head).encode()) % len(_PALETTE)]


def _select(events: Iterable[dict[str, Any]], window: tuple[int, int] | None) -> tuple[list[dict[str, Any]], int, int, str]:
    """The events to draw, the first and last slot drawn, and a note when the slots were cut."""
    if window is not None and not 0 < window[1] - window[0] <= MAX_SLOTS:
        raise SpecError(f"--diagram draws at most {MAX_SLOTS} slots, the window {window[0]}:{window[1]} has "
                        f"{window[1] - window[0]}")
    kept: list[dict[str, Any]] = []
    first = window[0] if window is not None else None
    later = False
    for ev in events:
        if first is None:
            first = ev["slot"]
        if window is not None or first <= ev["slot"] < first + MAX_SLOTS:
            kept.append(ev)
        elif ev["slot"] >= first + MAX_SLOTS:
            later = True
    if first is None:
        raise SpecError("--diagram: no events match: nothing to draw")
    if window is not None:
        last = window[1] - 1
    else:
        last = max(ev["slot"] for ev in kept)
    note = f" (the first {MAX_SLOTS} slots: choose others with --slots A:B)" if later else ""
    return kept, first, max(last, first), note


def diagram_svg(events: Iterable[dict[str, Any]], *, topology: Any = None,
                links: Mapping[tuple[int, int], int] | None = None, window: tuple[int, int] | None = None,
                title: str = "slotnet trace") -> tuple[str, dict[str, Any]]:
    """The SVG text of the slot diagram and what it shows (nodes, slots, hops, a note).

    Raises:
        SpecError: more than :data:`MAX_NODES` nodes, or no event to draw.
    """
    kept, first, last, note = _select(events, window)
    if topology is None and links is None:
        links = learn_links(kept)
    nodes = sorted({ev["node"] for ev in kept})
    if len(nodes) > MAX_NODES:
        raise SpecError(f"--diagram draws at most {MAX_NODES} nodes and this selection has {len(nodes)}: "
                        f"choose some with --node N (repeatable)")
    col = {v: i for i, v in enumerate(nodes)}
    rows = last - first + 1
    width, height = max(_LEFT + _CW * len(nodes) + 24, 760), _TOP + _RH * rows + _BOTTOM

    def x(v: int) -> float:
        return _LEFT + (col[v] + 0.5) * _CW

    def y(slot: int) -> float:
        return _TOP + (slot - first + 0.5) * _RH

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="11">',
           '<defs>' + "".join(
               f'<marker id="a{i}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
               for i, c in enumerate((*_PALETTE, _RED))) + '</defs>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{_LEFT}" y="20" font-size="13" font-weight="bold">{escape(title)}: nodes '
           f'{", ".join(map(str, nodes))}; slots {first}..{last}</text>']
    for r in range(rows):  # zebra rows and slot labels
        top = _TOP + r * _RH
        if r % 2 == 0:
            out.append(f'<rect x="{_LEFT}" y="{top}" width="{_CW * len(nodes)}" height="{_RH}" fill="#f4f4f4"/>')
        out.append(f'<text x="{_LEFT - 8}" y="{top + _RH / 2 + 4}" text-anchor="end" fill="#555">{first + r}</text>')
    out.append(f'<text x="{_LEFT - 8}" y="{_TOP - 24}" text-anchor="end" fill="#555" font-style="italic">slot</text>')
    for v in nodes:  # lifelines, red while the node is down
        out.append(f'<line x1="{x(v)}" y1="{_TOP}" x2="{x(v)}" y2="{_TOP + rows * _RH}" stroke="#bbb"/>')
        for a, b in _down_spans(kept, v, first, last + 1):
            out.append(f'<line x1="{x(v)}" y1="{y(a)}" x2="{x(v)}" y2="{_TOP + (b - first) * _RH}" stroke="{_RED}" '
                       f'stroke-width="3" stroke-opacity="0.35"/>')
        out.append(f'<text x="{x(v)}" y="{_TOP - 24}" text-anchor="middle" font-weight="bold">n{v}</text>')
    hops = Hops(topology, links)
    answered: set[int] = set()
    arrows: list[str] = []
    marks: list[str] = []
    count = 0
    for i, ev in enumerate(kept):
        kind, v, slot = ev["event"], ev["node"], ev["slot"]
        pair = hops.feed(ev, i)
        if kind in ("received", "lost") and pair is not None:
            src = kept[pair[0]]
            answered.add(pair[0])
            if kind == "received":
                count += 1
                arrows.append(_arrow(x(src["node"]), y(src["slot"]), x(v), y(slot), ev.get("message"),
                                     f"slot {src['slot']}: n{src['node']} → n{v}"))
            else:
                to = ev.get("to")
                right = isinstance(to, int) and not isinstance(to, bool) and to > v
                tx = x(to) if isinstance(to, int) and to in col else x(v) + (_CW * 0.8 if right else -_CW * 0.8)
                arrows.append(_lost(x(v), y(src["slot"]), tx, y(src["slot"] + 1), ev))
        elif kind == "received":
            sender = hops.sender_of(v, ev.get("port"))
            label = f"n{sender}" if sender is not None and sender >= 0 else ""
            arrows.append(_stub(x(v), y(slot), -1, ev.get("message"), f"slot {slot}: from {label or 'port ' + str(ev.get('port'))} → n{v}",
                                incoming=True, label=label))
        elif kind == "lost" and ev.get("from") not in col:
            arrows.append(_lost(x(v) - _CW * 0.8, y(slot - 1), x(v), y(slot), ev))
        elif kind == "fault":
            marks.append(_fault(x(v), y(slot), ev))
        elif _born(ev):
            marks.append(f'<circle cx="{x(v)}" cy="{y(slot)}" r="5" fill="none" stroke="#2ca02c" stroke-width="2">'
                         f'<title>{escape(f"slot {slot}: birth at n{v}")}</title></circle>')
    for i, ev in enumerate(kept):  # sends nobody in the diagram answered
        if ev["event"] == "sent" and i not in answered:
            to = peer(topology, ev["node"], ev.get("port")) if topology is not None else None
            label = f"n{to}" if to is not None else ""
            what = f"slot {ev['slot']}: n{ev['node']} → {label or 'port ' + str(ev.get('port'))}"
            arrows.append(_stub(x(ev["node"]), y(ev["slot"]), 1, ev.get("message"), what, incoming=False, label=label))
    out += arrows + marks
    ly = _TOP + rows * _RH + 22
    out.append(f'<text x="{_LEFT}" y="{ly}" fill="#333">arrow: a message, sent in one slot and read in the next '
               f'(colour: its packet; hover for the message)</text>')
    out.append(f'<text x="{_LEFT}" y="{ly + 16}" fill="#333"><tspan fill="{_RED}">'
               f'dashed ×: a message lost (hover: to which fault, or to a finished node) · '
               f'◆: fault · red lifeline: node down</tspan> · <tspan fill="#2ca02c">○: birth</tspan> · '
               f'dotted stub: the other end is not drawn</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n", {"nodes": len(nodes), "slots": rows, "first": first, "last": last, "hops": count,
                                   "note": note}


def _down_spans(events: list[dict[str, Any]], v: int, first: int, end: int) -> list[tuple[int, int]]:
    """Slots ``[a, b)`` in which node ``v`` was crashed, from its traced crash and recover faults."""
    spans, since = [], None
    for ev in events:
        if ev["event"] == "fault" and ev["node"] == v:
            if ev.get("fault") == "crash" and since is None:
                since = ev["slot"]
            elif ev.get("fault") == "recover" and since is not None:
                spans.append((since, ev["slot"]))
                since = None
    if since is not None:
        spans.append((since, end))
    return [(max(a, first), min(b, end)) for a, b in spans if b > first and a < end]


def _born(ev: Mapping[str, Any]) -> bool:
    return (ev["event"] == "step" and bool(ev.get("births"))) or (ev["event"] == "born" and bool(ev.get("count")))


def _arrow(x1: float, y1: float, x2: float, y2: float, message: Any, what: str) -> str:
    c = _colour(message)
    i = _PALETTE.index(c)
    tip = escape(f"{what}: {message_key(message)}")
    return (f'<g><title>{tip}</title><circle cx="{x1}" cy="{y1}" r="2.5" fill="{c}"/>'
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{c}" stroke-width="1.4" marker-end="url(#a{i})"/></g>')


def _stub(x0: float, y0: float, side: int, message: Any, what: str, *, incoming: bool, label: str) -> str:
    """A short arrow to (``incoming``) or from the point, toward the other end's side."""
    c = _colour(message)
    i = _PALETTE.index(c)
    dx, dy = _CW * 0.35, _RH * 0.5
    if incoming:
        x1, y1, x2, y2 = x0 - dx, y0 - dy, x0, y0
    else:
        x1, y1, x2, y2 = x0, y0, x0 + dx * side, y0 + dy
    tx, anchor = (x1 - 2, "end") if incoming else (x2 + 2, "start")
    text = "" if not label else (f'<text x="{tx}" y="{(y1 if incoming else y2) + 3}" font-size="8" fill="{c}" '
                                 f'text-anchor="{anchor}">{escape(label)}</text>')
    return (f'<g><title>{escape(what + ": " + message_key(message))}</title>'
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{c}" stroke-width="1.2" stroke-dasharray="2,2" '
            f'marker-end="url(#a{i})"/>{text}</g>')


def _lost(x1: float, y1: float, x2: float, y2: float, ev: Mapping[str, Any]) -> str:
    mx, my = x1 + (x2 - x1) * 0.6, y1 + (y2 - y1) * 0.6
    cause = ev.get("cause")
    why = (f"lost: n{ev.get('to')} had returned from run() (the scheme's doing, not a fault)" if cause == "node_finished"
           else f"lost to a fault ({cause})")
    tip = escape(f"slot {ev['slot']}: {why} n{ev.get('from')} → n{ev.get('to')}: {message_key(ev.get('message'))}")
    return (f'<g><title>{tip}</title><line x1="{x1}" y1="{y1}" x2="{mx}" y2="{my}" stroke="{_RED}" '
            f'stroke-width="1.4" stroke-dasharray="4,2"/>'
            f'<path d="M{mx - 4},{my - 4} L{mx + 4},{my + 4} M{mx - 4},{my + 4} L{mx + 4},{my - 4}" '
            f'stroke="{_RED}" stroke-width="2"/></g>')


def _fault(cx: float, cy: float, ev: Mapping[str, Any]) -> str:
    name = str(ev.get("fault", "fault")) + ("" if ev.get("port") is None else f" p{ev.get('port')}")
    tip = escape(f"slot {ev['slot']}: {name} at n{ev['node']}")
    return (f'<g><title>{tip}</title>'
            f'<path d="M{cx},{cy - 7} L{cx + 7},{cy} L{cx},{cy + 7} L{cx - 7},{cy} z" fill="{_RED}"/>'
            f'<text x="{cx + 9}" y="{cy + 4}" font-size="9" fill="{_RED}">{escape(name)}</text></g>')


def write_diagram(events: Iterable[dict[str, Any]], path: str | Path, *, topology: Any = None,
                  links: Mapping[tuple[int, int], int] | None = None, window: tuple[int, int] | None = None) -> dict[str, Any]:
    """Write :func:`diagram_svg` to ``path``; returns what it shows.

    Raises:
        SpecError: nothing to draw, too many nodes, or ``path`` cannot be written.
    """
    svg, shown = diagram_svg(events, topology=topology, links=links, window=window, title=f"slotnet trace {Path(path).stem}")
    try:
        Path(path).write_text(svg, encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"--diagram: cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return shown



