"""Fault schedules at the link and node layer.

A :class:`FaultSchedule` is part of a run spec. It is static data (validated against the
topology before the run) plus deterministic decisions: random message loss is decided by
hashing ``(seed, slot, receiver, in_port, k)``, so it does not depend on the order in
which nodes happen to run or on how nodes are spread over processes.

Entry syntax (CLI ``--fault`` or a JSON list in ``--faults FILE``)::

    link-down@SLOT:NODE:PORT    both directions of the link leave service at SLOT
    link-up@SLOT:NODE:PORT      ... and return at SLOT
    crash@SLOT:NODE             the node loses its state and stops at SLOT
    recover@SLOT:NODE           the node restarts from scratch at SLOT
    loss=RATE[@FROM[-UNTIL]]    each message is lost with probability RATE

JSON form: ``{"kind": "link-down", "slot": 5, "node": 3, "port": 1}``,
``{"kind": "loss", "rate": 0.01, "from": 0, "until": 100}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import FaultSpecError
from ._topology import Topology

__all__ = ["FaultEvent", "FaultSchedule", "LossWindow", "loss_draw"]

_MASK = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64 finaliser: a fast, well-spread 64-bit hash step."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def loss_draw(seed: int, slot: int, receiver: int, in_port: int, k: int) -> float:
    """A uniform draw in [0, 1) fixed by its arguments alone."""
    h = _mix(seed & _MASK)
    for v in (slot, receiver, in_port, k):
        h = _mix(h ^ (v & _MASK))
    return (h >> 11) / float(1 << 53)


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """A scheduled change: ``kind`` in link-down, link-up, crash, recover."""

    kind: str
    slot: int
    node: int
    port: int | None = None

    def describe(self) -> str:
        where = f"{self.node}:{self.port}" if self.port is not None else f"{self.node}"
        return f"{self.kind}@{self.slot}:{where}"


@dataclass(frozen=True, slots=True)
class LossWindow:
    """Random message loss with probability ``rate`` in slots ``[start, until)``."""

    rate: float
    start: int = 0
    until: int | None = None

    def active(self, slot: int) -> bool:
        return slot >= self.start and (self.until is None or slot < self.until)


_EVENT = re.compile(r"^(link-down|link-up|crash|recover)@(\d+):(\d+)(?::(\d+))?$")
_LOSS = re.compile(r"^loss=([0-9.eE+-]+)(?:@(\d+)(?:-(\d+))?)?$")
_KINDS = ("link-down", "link-up", "crash", "recover")


@dataclass(frozen=True)
class FaultSchedule:
    """Every fault of a run: timed events and loss windows."""

    events: tuple[FaultEvent, ...] = ()
    loss: tuple[LossWindow, ...] = ()
    by_slot: dict[int, tuple[FaultEvent, ...]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        grouped: dict[int, list[FaultEvent]] = {}
        for ev in sorted(self.events, key=lambda e: (e.slot, _KINDS.index(e.kind), e.node, e.port or 0)):
            grouped.setdefault(ev.slot, []).append(ev)
        object.__setattr__(self, "by_slot", {s: tuple(v) for s, v in grouped.items()})

    @property
    def empty(self) -> bool:
        return not self.events and not self.loss

    @classmethod
    def parse(cls, entries: list[str] | tuple[str, ...] = (), file: str | Path | None = None) -> FaultSchedule:
        """Build a schedule from CLI strings and/or a JSON file.

        Raises:
            FaultSpecError: naming the malformed entry.
        """
        events: list[FaultEvent] = []
        loss: list[LossWindow] = []
        for text in entries:
            text = text.strip()
            m = _EVENT.match(text)
            if m:
                kind, slot, node, port = m.groups()
                if kind.startswith("link") and port is None:
                    raise FaultSpecError(f"fault {text!r}: {kind} needs SLOT:NODE:PORT")
                if not kind.startswith("link") and port is not None:
                    raise FaultSpecError(f"fault {text!r}: {kind} takes SLOT:NODE, not a port")
                events.append(FaultEvent(kind, int(slot), int(node), None if port is None else int(port)))
                continue
            m = _LOSS.match(text)
            if m:
                loss.append(_loss_window(text, m.group(1), m.group(2), m.group(3)))
                continue
            raise FaultSpecError(
                f"fault {text!r} not understood (expected link-down@SLOT:NODE:PORT, link-up@..., "
                "crash@SLOT:NODE, recover@SLOT:NODE or loss=RATE[@FROM[-UNTIL]])"
            )
        if file is not None:
            fe, fl = _parse_file(Path(file))
            events += fe
            loss += fl
        return cls(tuple(events), tuple(loss))

    def validate(self, topology: Topology, slots: int) -> None:
        """Check every entry names a real node/port and a slot inside the run.

        Raises:
            FaultSpecError: naming the first bad entry.
        """
        for ev in self.events:
            if not 0 <= ev.node < topology.n_nodes:
                raise FaultSpecError(f"fault {ev.describe()}: node {ev.node} not in 0..{topology.n_nodes - 1}")
            if ev.port is not None and topology.neighbour(ev.node, ev.port) is None:
                raise FaultSpecError(f"fault {ev.describe()}: node {ev.node} has no port {ev.port}")
            if ev.slot >= slots:
                raise FaultSpecError(f"fault {ev.describe()}: slot {ev.slot} is past the run's {slots} slots")

    def loss_rate(self, slot: int) -> float:
        """Total loss probability in force at ``slot`` (windows combine independently)."""
        keep = 1.0
        for w in self.loss:
            if w.active(slot):
                keep *= 1.0 - w.rate
        return 1.0 - keep

    def to_list(self) -> list[str]:
        """The schedule in CLI syntax (for reports and traces)."""
        out = [ev.describe() for ev in sorted(self.events, key=lambda e: e.slot)]
        for w in self.loss:
            span = "" if w.start == 0 and w.until is None else f"@{w.start}" + ("" if w.until is None else f"-{w.until}")
            out.append(f"loss={w.rate:g}{span}")
        return out


def _loss_window(text: str, rate: Any, start: Any, until: Any) -> LossWindow:
    try:
        r = float(rate)
    except (TypeError, ValueError):
        raise FaultSpecError(f"fault {text!r}: loss rate {rate!r} is not a number") from None
    if not 0.0 <= r <= 1.0:
        raise FaultSpecError(f"fault {text!r}: loss rate must be in [0, 1], got {r:g}")
    s = int(start) if start is not None else 0
    u = int(until) if until is not None else None
    if u is not None and u <= s:
        raise FaultSpecError(f"fault {text!r}: loss window end {u} must be after its start {s}")
    return LossWindow(r, s, u)


def _parse_file(path: Path) -> tuple[list[FaultEvent], list[LossWindow]]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise FaultSpecError(f"fault file {str(path)!r}: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, list):
        raise FaultSpecError(f"fault file {str(path)!r}: expected a JSON list of fault objects")
    events: list[FaultEvent] = []
    loss: list[LossWindow] = []
    for i, item in enumerate(data):
        where = f"fault file {str(path)!r} entry {i}"
        if not isinstance(item, dict) or "kind" not in item:
            raise FaultSpecError(f"{where}: expected an object with a 'kind'")
        kind = item["kind"]
        if kind == "loss":
            loss.append(_loss_window(where, item.get("rate"), item.get("from"), item.get("until")))
            continue
        if kind not in _KINDS:
            raise FaultSpecError(f"{where}: unknown kind {kind!r} (known: {', '.join(_KINDS)}, loss)")
        try:
            slot, node = int(item["slot"]), int(item["node"])
            port = item.get("port")
            port = None if port is None else int(port)
        except (KeyError, TypeError, ValueError):
            raise FaultSpecError(f"{where}: needs integer 'slot' and 'node'" + (" and 'port'" if kind.startswith("link") else "")) from None
        if kind.startswith("link") and port is None:
            raise FaultSpecError(f"{where}: {kind} needs a 'port'")
        if slot < 0 or node < 0:
            raise FaultSpecError(f"{where}: slot and node must be >= 0")
        events.append(FaultEvent(kind, slot, node, port))
    return events, loss
