"""``prefix-scan``: the parallel prefix of §4.1 Phase 1 (Fig. 2) or of §5 Phase 1.

``variant=tree``: the forward and reverse parallel prefix on the embedded tree P, d
subphases of ``p_k - 1`` steps each way (:class:`._prefix.ScanNode`); every node ends
with its inclusive prefix in node-id order (the paper's linear order) and the total.
``variant=line``: §5's row/column prefix, one median-rooted line scan per dimension, all
at once on distinct dimensions (:class:`._prefix.LineScanNode`); every node ends with,
per dimension, its prefix along its line and the line's total.

Each step is one message of size t_p on every link the schedule uses; at the run's
quantum q it holds its link for ``t_p q`` ticks (a whole number, see ``_inputs``).
Inputs: ``values=random`` draws each node's value from its own RNG (0..999);
``values=rank`` is 1 on active nodes and 0 elsewhere, so an active node's rank is its
inclusive prefix minus one (§4.1's ``r_s``). The run is a one-shot collective
(``until="quiescent"``); the reporter checks every node's result against a sequential
prefix and times the two halves. ``slotnet theory prefix-scan`` prints the exact
schedule beside :func:`.theory.prefix_scan_bounds`. Under faults see :mod:`._offschedule`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from slotnet.nodes import Inbox, Node

from .._base import Claim, Inputs, Param, Scheme, Setup
from ..kit import BaseReporter
from ..kit._completion import parked_when_done
from . import theory as th
from ._inputs import (
    ACTIVE,
    PLACEMENT,
    PLACEMENT_SEED,
    SOURCE,
    TP,
    Given,
    ScanInputs,
    active_ids,
    check_grid,
    completion_claims,
    is_active,
    quantum_for,
    safety_cap,
)
from ._offschedule import FAULT_EVENTS, FaultNotes, sleep
from ._prefix import LineScanNode, ScanNode, line_scan_steps, scan_steps
from ._scan import LineAdapter, ScanLike, ScanPhase

__all__ = ["SCHEME", "VALUE_RANGE", "PrefixScanNode", "PrefixScanReporter", "prepare_prefix_scan", "sequential_prefix",
           "theory_prefix_scan"]

#: ``values=random`` draws integers in ``0..VALUE_RANGE-1``.
VALUE_RANGE = 1000


class PrefixScanNode(Node):
    """One node of the scan: its value, its schedule from its coordinates, its inbox."""

    async def run(self) -> None:
        ctx = self.ctx
        prm: ScanInputs = ctx.params
        sides = ctx.geometry.sides
        if ctx.incarnation:  # restarted: its partial sums and its place in the scan are gone
            ctx.record("stopped", "scan", "restarted")
            await sleep(ctx, "scan")
        value = ctx.rng.randrange(VALUE_RANGE) if prm.values == "random" else int(is_active(ctx.node, prm.active))
        ctx.record("input", value)
        u = round(prm.tp * ctx.quantum)
        scans: dict[int, ScanLike]
        if prm.variant == "tree":
            scans = {0: ScanNode(ctx.coords, sides, value)}
            ups, n_steps = {0: scan_steps(sides)}, 2 * scan_steps(sides)
        else:
            scans = {k: LineAdapter(k, LineScanNode(ctx.coords[k], p, value)) for k, p in enumerate(sides)}
            ups = {k: p // 2 for k, p in enumerate(sides)}
            n_steps = max(line_scan_steps(p) for p in sides)
        phase = ScanPhase(ctx, scans, 0, u, n_steps, prm.tp, ups)
        inbox: Inbox = ()
        while True:
            tick = ctx.slot
            for port, msg in inbox:
                phase.receive(tick, port, msg[1], msg[2])
            phase.send_due(tick)
            if phase.done:
                break
            nxt = phase.next_tick(tick)
            inbox = await (ctx.idle(until=nxt) if nxt is not None else ctx.idle())
        if prm.variant == "tree":
            tree = scans[0]
            assert isinstance(tree, ScanNode)
            ctx.record("result", tree.inclusive, tree.total, phase.last_up, phase.last_down)
        else:
            lines = [s.scan for s in scans.values() if isinstance(s, LineAdapter)]
            ctx.record("result", [s.inclusive for s in lines], [s.total for s in lines], phase.last_up, phase.last_down)
        await sleep(ctx, "scan")


def sequential_prefix(values: Sequence[int], sides: Sequence[int], variant: str) -> list[tuple[Any, Any]]:
    """The expected ``(inclusive, total)`` of every node id, computed sequentially.

    ``tree``: running sums in node-id order. ``line``: per dimension k, the running sum
    along the node's line of dimension k and that line's total (lists over k).
    """
    n = len(values)
    if variant == "tree":
        out, acc = [], 0
        for v in values:
            acc += v
            out.append((acc, 0))
        return [(inc, acc) for inc, _ in out]
    strides = [1]
    for p in sides[:-1]:
        strides.append(strides[-1] * p)
    result: list[tuple[Any, Any]] = []
    for v in range(n):
        incs, tots = [], []
        for st, p in zip(strides, sides):
            x = (v // st) % p
            base = v - x * st
            line = [values[base + j * st] for j in range(p)]
            incs.append(sum(line[: x + 1]))
            tots.append(sum(line))
        result.append((incs, tots))
    return result


class PrefixScanReporter(BaseReporter):
    """Checks every node's result against a sequential prefix; times the two halves."""

    events: Mapping[str, tuple[str, ...]] = {
        "input": ("value",),
        "result": ("inclusive", "total", "up_tick", "down_tick"),
        **FAULT_EVENTS,
    }

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.inputs: dict[int, int] = {}
        self.results: dict[int, tuple[Any, Any, int, int]] = {}
        self.notes = FaultNotes(bool(getattr(setup, "faults", False)))

    def handlers(self) -> Mapping[str, Callable[..., None]]:
        return {"input": self._input, "result": self._result, **self.notes.handlers()}

    def _input(self, node: int, slot: int, value: int) -> None:
        self.inputs[node] = value

    def _result(self, node: int, slot: int, inclusive: Any, total: Any, up_tick: int, down_tick: int) -> None:
        self.results[node] = (inclusive, total, up_tick, down_tick)

    def _check(self) -> tuple[int, int]:
        n = self.setup.topology.n_nodes
        if len(self.inputs) != n:
            return 0, n - len(self.results)
        expected = sequential_prefix([self.inputs[v] for v in range(n)], self.setup.topology.sides, self.setup.params.variant)
        wrong = 0
        for v, (inc, tot, _, _) in self.results.items():
            if (_plain(inc), _plain(tot)) != (_plain(expected[v][0]), _plain(expected[v][1])):
                wrong += 1
        return wrong, n - len(self.results)

    def metrics(self) -> dict[str, Any]:
        q = self.setup.quantum
        wrong, missing = self._check()
        up = max((r[2] for r in self.results.values()), default=-1)
        down = max((r[3] for r in self.results.values()), default=-1)
        return {
            "nodes_correct": len(self.results) - wrong,
            "forward_time": up / q if up >= 0 else None,
            "reverse_time": (down - up) / q if down >= 0 and up >= 0 else None,
            "total": sum(self.inputs.values()),
        }

    def per_node(self) -> dict[str, list[Any]]:
        n = self.setup.topology.n_nodes
        res = [self.results.get(v) for v in range(n)]
        return {
            "input": [self.inputs.get(v) for v in range(n)],
            "inclusive": [r[0] if r else None for r in res],
            "total": [r[1] if r else None for r in res],
        }

    def scan_end(self) -> int:
        """The tick by which every node has its result: the schedule's last step ends."""
        sides = tuple(self.setup.topology.sides)
        prm: ScanInputs = self.setup.params
        n_steps = 2 * scan_steps(sides) if prm.variant == "tree" else max(line_scan_steps(p) for p in sides)
        return n_steps * round(prm.tp * self.setup.quantum)

    def invariants(self, lost: Mapping[str, int], in_flight: Sequence[tuple[int, int, Any]], held: list[int]) -> dict[str, Any]:
        """Every node's result is the sequential prefix; a run cut short before the scan's
        end owes only the results given so far (the others ``pending``, with ``due_at_slot``)."""
        wrong, missing = self._check()
        end = self.scan_end()
        check: dict[str, Any] = {"ok": wrong == 0 and missing == 0, "wrong": wrong, "missing": missing}
        if self.notes.faulted(lost):  # the result is damage to report, beside the books
            check = {"ok": True, "correctness": self.correctness(end)}
        elif not self.due(end):
            check = {"ok": wrong == 0, "wrong": wrong, "pending": missing, "due_at_slot": end}
        if self.notes.scheme_error(lost):
            check |= {"ok": False, **self.notes.report()}
        return {
            "prefix_matches_sequential": check,
            "no_message_lost": self.notes.no_message_lost(self.lost_messages, lost),
        }

    def correctness(self, end: int) -> dict[str, Any]:
        """Under faults: which nodes hold a wrong prefix or none, the first of them, when the
        scan ended, and the nodes' own account (:class:`._offschedule.FaultNotes`).

        With ``values=random`` a node whose input is unknown (it crashed before its first
        step) makes the expected results unknown (every total needs every input): those are counted ``unknown``, not wrong.
        """
        n = self.setup.topology.n_nodes
        prm: ScanInputs = self.setup.params
        variant = prm.variant
        values = [self.inputs.get(v) for v in range(n)]
        if prm.values == "rank":  # the inputs are the active set's: known without the nodes
            values = [int(is_active(v, prm.active)) for v in range(n)]
        known = [v is not None for v in values]
        expected = sequential_prefix([v or 0 for v in values], self.setup.topology.sides, variant)
        wrong, unknown, first = 0, 0, None
        for v in range(n):
            res = self.results.get(v)
            if res is None:
                first = first or {"node": v, "problem": "no result"}
                continue
            if not all(known):
                unknown += 1
                continue
            if (_plain(res[0]), _plain(res[1])) != (_plain(expected[v][0]), _plain(expected[v][1])):
                wrong += 1
                first = first or {"node": v, "problem": "wrong prefix", "inclusive": _plain(res[0]),
                                  "total": _plain(res[1]), "expected_inclusive": _plain(expected[v][0]),
                                  "expected_total": _plain(expected[v][1])}
        missing = n - len(self.results)
        out: dict[str, Any] = {"result_correct": wrong == 0 and missing == 0 and unknown == 0, "wrong": wrong,
                               "no_result": missing, "unknown": unknown,
                               "finished_nodes": len(self.results), "scan_end": end,
                               "last_result": max((r[3] for r in self.results.values()), default=None)}
        if first is not None:
            out["first_wrong"] = first
        return out | self.notes.report()


def _plain(x: Any) -> Any:
    """Lists and tuples compare equal after a msgpack round trip."""
    if isinstance(x, (list, tuple)):
        return [_plain(y) for y in x]
    return x


def prepare_prefix_scan(topology: Any, params: dict[str, Any], load: dict[str, float]) -> Inputs[ScanInputs]:
    """Node parameters of ``prefix-scan``; the quantum makes t_p whole ticks.

    Raises:
        SchemeError: on a topology other than mesh/torus, or a bad M or t_p.
    """
    sides, _wrap = check_grid(topology, "prefix-scan")
    given = Given.of(params)
    active = active_ids(sides, given) if given.values == "rank" else ()
    return Inputs(ScanInputs(given.tp, given.values, given.variant, active), quantum=quantum_for(given.tp))


def theory_prefix_scan(setup: Setup) -> dict[str, Any]:
    """§4.1 Phase 1 (tree: ``2 sum (p_k - 1) t_p``, exact) or §5 Phase 1 (line: ``p t_p``)."""
    sides, wrap = tuple(setup.topology.sides), setup.topology.kind == "torus"
    prm: ScanInputs = setup.params
    b = th.prefix_scan_bounds(sides, wrap, prm.tp)
    tp = prm.tp
    if prm.variant == "tree":
        half = sum(p - 1 for p in sides) * tp
        return {"upper_bound": b["upper_bound"], "which": b["which"], "lower_bound": b["lower_bound"],
                "lower_which": b["lower_which"], "forward_time": half, "reverse_time": half}
    half = max(p // 2 for p in sides) * tp
    return {"upper_bound": b["row_column_upper_bound"], "which": "§5 Phase 1: p t_p (median-rooted line trees)",
            "lower_bound": b["row_column_lower_bound"], "lower_which": "a line's total must reach both ends",
            "exact_schedule": 2 * half, "forward_time": half, "reverse_time": half}


def prefix_scan_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`theory_prefix_scan` is to the run: §4.1's / §5's bounds on the completion
    time, and each half's time (and the line variant's whole schedule) exact: the scan is
    a fixed schedule of ``t_p`` steps."""
    out = completion_claims(th, exact=("forward_time", "reverse_time"))
    if "exact_schedule" in th:
        out.append(Claim("exact_schedule", "completion_time", "exact",
                         why="§5 Phase 1: 2 max floor(p_k / 2) steps of t_p"))
    return out


SCHEME = Scheme(
    name="prefix-scan",
    summary="parallel prefix on the embedded tree P (§4.1 Fig. 2) or median-rooted line trees (§5)",
    source=SOURCE,
    node=PrefixScanNode,
    reporter=PrefixScanReporter,
    prepare=prepare_prefix_scan,
    theory=theory_prefix_scan,
    params=(
        TP,
        Param("values", str, "random", "inputs: random (each node's own RNG, 0..999) or rank (1 on active nodes)",
              ("random", "rank")),
        Param("variant", str, "tree", "tree: prefix tree P of §4.1; line: §5's row/column prefix on every dimension",
              ("tree", "line")),
        ACTIVE, PLACEMENT, PLACEMENT_SEED,
    ),
    topologies=("torus", "mesh"),
    until="quiescent",
    done=parked_when_done,  # its nodes park idle once their part is done; the reporter judges the work
    max_slots=safety_cap(theory_prefix_scan, "upper_bound"),
    faults=None,  # every kind: see ._offschedule
    claims=prefix_scan_claims,
)
