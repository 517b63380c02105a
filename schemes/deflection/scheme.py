"""The deflection scheme's record (:data:`SCHEME`): its parameters and loads, ``prepare``
(the hypercube, the load or the schedule of Table I) and the theory adapter (the §III
fixed point, the §III-B transient, §IV input queueing, from :mod:`.theory`)."""

from __future__ import annotations

import math
from dataclasses import asdict
from operator import itemgetter
from typing import Any

from .._base import Column, Load, Param, Scheme, SchemeError, Setup
from . import theory
from .node import DeflectionNode
from .reporter import DeflectionReporter

__all__ = ["SCHEME", "parse_schedule"]


def parse_schedule(text: str) -> tuple[tuple[float, int | None], ...]:
    """Parse ``v:slots,v:slots,...`` (the last ``slots`` may be omitted: forever).

    Example:
        >>> parse_schedule("6:1,0")
        ((6.0, 1), (0.0, None))
    """
    out: list[tuple[float, int | None]] = []
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise ValueError("empty schedule")
    for i, part in enumerate(parts):
        v_text, _, n_text = part.partition(":")
        v = float(v_text)
        if n_text.strip():
            n = int(n_text)
            if n < 1:
                raise ValueError(f"segment {part!r}: slot count must be >= 1")
        elif i == len(parts) - 1:
            n = None
        else:
            raise ValueError(f"segment {part!r}: only the last segment may omit its slot count")
        out.append((v, n))
    return tuple(out)


def _prepare(topology: Any, params: dict[str, Any], load: dict[str, float]) -> dict[str, Any]:
    if topology.kind != "hypercube":
        raise SchemeError(f"deflection runs on hypercubes (this is the paper's model), not {topology.spec}")
    d = topology.d
    schedule = params.get("schedule")
    given = [k for k in ("offered", "lam") if k in load]
    if schedule is not None:
        if given:
            raise SchemeError("--param schedule=... replaces --offered/--lam; give only one")
        segs, start = [], 0
        for v, n in schedule:
            if not 0.0 <= v <= d:
                raise SchemeError(f"schedule offered load v={v:g} must be in [0, d={d}]")
            segs.append((start, v))
            start += n if n is not None else 0
        return {"mode": "blocking", "schedule": tuple(segs), "d": d, "order": params["order"]}
    if len(given) != 1:
        raise SchemeError("deflection needs exactly one load: --offered v (blocking, §II-B) or --lam λ (input queueing, §IV)")
    if "offered" in load:
        v = load["offered"]
        if not 0.0 <= v <= d:
            raise SchemeError(f"--offered v must be in [0, d={d}], got {v:g}")
        return {"mode": "blocking", "schedule": ((0, v),), "d": d, "order": params["order"]}
    lam = load["lam"]
    if not lam > 0.0 or not math.isfinite(lam):
        raise SchemeError(f"--lam must be a positive number, got {lam:g}")
    return {"mode": "queue", "lam": lam, "d": d, "order": params["order"]}


def _theory(setup: Setup) -> dict[str, Any]:
    d = setup.topology.d
    p = setup.params
    if p["mode"] == "queue":
        try:
            return theory.input_queue_metrics(d, p["lam"])
        except ValueError as exc:
            return {"note": str(exc)}
    schedule = p["schedule"]
    if len(schedule) > 1:
        offered = []
        for i, (start, v) in enumerate(schedule):
            end = schedule[i + 1][0] if i + 1 < len(schedule) else setup.slots
            offered += [v] * (end - start)
        return {"series": _transient_rows(d, offered)}
    return theory.steady_state_metrics(d, schedule[0][1])


def _transient_rows(d: int, offered: list[float]) -> list[dict[str, Any]]:
    return [asdict(s) for s in theory.transient(d, offered)]


#: What the validator needs of each send (``follow``): the packet's destination (its first
#: field, twice: ``(dest, dest)``), for :class:`~.reporter.ForcedDeflections` to tell a
#: deflection from a preferred link. A C-level getter: it runs once per hop.
packet_destination = itemgetter(0, 0)


SCHEME = Scheme(
    name="deflection",
    summary="one-pass deflection routing on the d-cube, blocking (§II) or input queueing (§IV)",
    source="Greenberg & Hajek, Deflection Routing in Hypercube Networks, IEEE Trans. Commun. 40(6), 1992",
    node=DeflectionNode,
    reporter=DeflectionReporter,
    prepare=_prepare,
    theory=_theory,
    params=(
        Param("schedule", parse_schedule, None,
              "time-varying offered load 'v:slots,v:slots,...' (Table I: 6:1,0); replaces --offered"),
        Param("order", str, "random",
              "one-pass consideration order: 'random' (the paper's rule, §II-A) or 'continuing-first' "
              "(a variant: continuing packets considered before new ones)", ("random", "continuing-first")),
    ),
    loads=(
        Load("offered", "offered packets per node per slot, B(d, V/d) (blocking, §II-B)", "V"),
        Load("lam", "Poisson arrival rate per node per slot (input queueing, §IV)", "λ"),
    ),
    topologies=("hypercube",),
    must_forward=True,  # §II: a node has no buffer for packets in transit; each leaves every slot
    follow=packet_destination,
    columns=(Column("link_utilization", "util"), Column("accept_fraction", "accept"),
             Column("deflection_fraction", "deflect"), Column("mean_distance", "dist")),
)
