"""``slotnet repro mansour``: rec_route against greedy as the mesh grows (Theorem 1.2 and §1).

The paper has no tables or plots of measurements: what is reproduced is the shape its
Theorem 1.2 predicts, beside greedy routing (§1: greedy needs buffers that grow with the
number of packets), so the ``paper`` column stays empty. Rows, per instance (seed
``--seed`` of the generators; all-to-centre and 4 hot spots on ``k x k`` meshes,
all-to-centre on ``k x k x k``):

* ``D``, ``W``, ``lower bound``: D_I, W_I (exact over all boxes) and Theorem 2.1's
  bound (model rows);
* ``T rec``: rec_route's T_loc, beside the pure reference execution
  (:func:`._rec_reference.reference_run`, judged with tolerance 0: the nodes must reproduce it);
  ``T rec / (D + W log D)``: stays bounded (Theorem 1.2);
* ``max_queue rec`` (the space complexity of §2) beside the reference, and
  ``max_queue rec / log2 D``: grows like log D (Theorem 1.2's O(log D));
* ``T greedy``, ``T greedy / (D + W log D)``, ``max_queue greedy`` and ``max_queue
  greedy / (packets / side)``: greedy's buffer grows with the packets (on all-to-centre
  the packets of a whole row or plane meet at one node), beside the bound of
  :func:`.theory.greedy_space_bound` (ours).

Beside them, meshes with a side that is not a power of two (§4 assumes one "to avoid
trivial complications"; the partition into halves ⌈s/2⌉ and ⌊s/2⌋ runs on a virtual mesh
of power-of-two sides, :mod:`._embed`): 12x12 (all-to-centre, 4 hot spots) and 3x5x6
quick, plus 24x24, 10x20 uniform, 5x5x5 and a line of 100 in full runs. Their rows are
judged from the run, one-sided: ``T rec`` at least Theorem 2.1's lower bound and at most
M times the virtual reference run's delivery step (M virtual nodes multiplexed per
node), the nodes' common return equal to the reference's, and the largest buffer within
M times the per-virtual-node bound; ``T rec / (D + W ⌈log D⌉)`` beside them.

Full runs add ``m2o-bfs`` (mean delay per distance class against the lower bound of
:func:`.theory.mean_delay_lower_bound`) on a uniform and a hot-spot 32x32 instance and
the CENTRALISED ``m2o-offline`` (``T offline / (D + W)``, Theorem 1.1) on the 2-D
instances up to 32x32. ``--plot FILE.png`` saves ``T/(D + W log D)`` and
``max_queue`` against the side (rec and greedy) in FILE, and the two panels apart as
``FILE_ratio.png`` and ``FILE_buffers.png``; matplotlib is the ``plot`` extra.
Wall times measured with 2 workers on a shared 2-core machine: quick 7 s, full 62 s;
the largest runs are rec on 64x64 (about 30 s each, 1.7-1.8 million messages) and on
16x16x16 (16 s). The rows of other sides, rec's run wall measured one at a time on the
same machine under a load of about 10 (other work beside it): 12x12 5 s, 3x5x6 5 s,
5x5x5 7 s, line of 100 13 s, 10x20 21 s, 24x24 72 s; the quick reproduction as a whole
took 100 s under that load, against 106 s for the tree before these rows, back to back.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from .._base import SchemeError
from .._plot_ticks import plain_log_ticks
from .._repro import Experiment, Row, Runner

__all__ = ["EXPERIMENTS", "mansour"]

_EXP = "mansour: rec_route vs greedy as the mesh grows (Thm 1.2)"
_BFS = "mansour: bfs_route mean delay per distance class (Thm 1.3)"
_OFF = "mansour: CENTRALISED offline schedule (Thm 1.1, §3)"
_ANY = "mansour: rec_route on meshes of any side (§4, halves ceil(s/2), floor(s/2))"


def _cases(quick: bool) -> list[tuple[str, str]]:
    """(topology, workload) of the growth experiment."""
    sides_2d = (16, 32) if quick else (16, 32, 64)
    sides_3d = (4, 8) if quick else (4, 8, 16)
    out = [(f"mesh:{k}x{k}", wl) for wl in ("all-to-one", "hotspots:k=4") for k in sides_2d]
    out += [(f"mesh:{k}x{k}x{k}", "all-to-one") for k in sides_3d]
    return out


def _any_cases(quick: bool) -> list[tuple[str, str]]:
    """(topology, workload) on meshes with a side that is not a power of two (§4's halves ⌈s/2⌉, ⌊s/2⌋)."""
    out = [("mesh:12x12", "all-to-one"), ("mesh:12x12", "hotspots:k=4"), ("mesh:3x5x6", "all-to-one")]
    if not quick:
        out += [("mesh:24x24", "all-to-one"), ("mesh:24x24", "hotspots:k=4"), ("mesh:10x20", "uniform"),
                ("mesh:5x5x5", "all-to-one"), ("mesh:100", "all-to-one")]
    return out


def _spec(scheme: str, topology: str, workload: str, seed: int) -> dict[str, Any]:
    return dict(scheme=scheme, topology=topology, params={"workload": workload, "seed": seed}, slots=10**7)


def _side(topology: str) -> int:
    return int(topology.partition(":")[2].split("x")[0])


def _case(topology: str, workload: str, res: dict[str, Any]) -> str:
    case = f"{topology.partition(':')[2]} {workload}"
    return case if res.get("_ok", True) else f"{case} [invariants VIOLATED]"


def _run_sorted(runner: Runner, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Largest runs first (nodes times side), so that the two workers finish together."""
    if not specs:
        return []
    order = sorted(range(len(specs)), key=lambda i: -(_nodes(specs[i]["topology"]) * _side(specs[i]["topology"])))
    done = runner([specs[i] for i in order])
    out: list[dict[str, Any]] = [{}] * len(specs)
    for i, res in zip(order, done):
        out[i] = res
    return out


def _nodes(topology: str) -> int:
    return math.prod(int(x) for x in topology.partition(":")[2].split("x"))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def mansour(runner: Runner, *, seed: int, quick: bool, plot: str | None = None, sweep_d: int | None = None,
            sweep_rho: Sequence[float] | None = None, sweep_only: bool = False, **options: Any) -> list[Row]:
    """rec_route (§4) against greedy routing as the mesh grows, 16x16 to 64x64 (all-to-centre, 4 hot
    spots) and 4^3 to 16^3 (all-to-centre): T/(D + W log D) stays bounded and the largest buffer grows
    like log D for rec_route (Theorem 1.2), while greedy's buffer grows with the packets; full runs add
    bfs_route's mean delay per distance class (Theorem 1.3) and the centralised offline schedule of §3."""
    if sweep_d is not None or sweep_rho or sweep_only:
        raise SchemeError("mansour takes none of --sweep-d, --sweep-rho, --sweep-only (the mesh sizes are fixed)")
    publish: Callable[[list[Row]], None] = getattr(runner, "publish", None) or (lambda rows: None)
    cases = _cases(quick)
    anys = _any_cases(quick)
    specs = [_spec(s, topo, wl, seed) for topo, wl in cases + anys for s in ("m2o-rec", "m2o-greedy")]
    res = _run_sorted(runner, specs)
    pairs = [(res[2 * i], res[2 * i + 1]) for i in range(len(cases) + len(anys))]
    rows = _growth_rows(cases, pairs[:len(cases)])
    rows += _any_rows(anys, pairs[len(cases):])
    publish(rows)
    if not quick:
        extra = _bfs_rows(runner, seed) + _offline_rows(runner, seed, [c for c in cases if _nodes(c[0]) <= 1024
                                                                     and c[0].count("x") == 1])
        publish(extra)
        rows += extra
    if plot:
        _plot(plot, cases, pairs[:len(cases)])
    return rows


def _growth_rows(cases: list[tuple[str, str]], pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Row]:
    rows: list[Row] = []
    for (topo, wl), (r, g) in zip(cases, pairs):
        th = r["_theory"]
        case = _case(topo, wl, r if not r.get("_ok", True) else g)
        d = th["dilation"]
        logd = math.log2(max(d, 2))
        side = _side(topo)
        rows += [
            Row(_EXP, case, "D", None, None, None, float(d)),
            Row(_EXP, case, "W", None, None, None, th["congestion"]),
            Row(_EXP, case, "lower bound (Thm 2.1)", None, None, None, float(th["lower_bound"])),
            Row(_EXP, case, "T rec (theory: reference run)", None, float(r["completion_time"]), None,
                float(th["completion_time"]), tolerance=0.0),
            Row(_EXP, case, "T rec / (D + W log D)", None, r["ratio_dw_log"], None, None),
            Row(_EXP, case, "max_queue rec (theory: reference run)", None, float(r["max_queue"]), None,
                float(th["max_queue"]), tolerance=0.0),
            Row(_EXP, case, "max_queue rec / log2 D", None, r["max_queue"] / logd, None, None),
            Row(_EXP, case, "T greedy", None, float(g["completion_time"]), None, None),
            Row(_EXP, case, "T greedy / (D + W log D)", None, g["ratio_dw_log"], None, None),
            Row(_EXP, case, "max_queue greedy (theory: our bound)", None, float(g["max_queue"]), None,
                float(g["_theory"]["greedy_space_bound"])),
            Row(_EXP, case, "max_queue greedy / (packets / side)", None,
                _ratio(g["max_queue"], g["packets"] / side), None, None),
        ]
    return rows


def _bound(exp: str, case: str, metric: str, sim: float | None, bound: float | None, side: int) -> Row:
    """A one-sided row: ``sim <= bound`` (side +1) or ``sim >= bound`` (side -1), judged.

    Its tolerance is the slack the inequality leaves when it holds and 0 when it does
    not, so the verdict reads ``within`` exactly when the bound holds and ``OUTSIDE``
    otherwise (computed from the run, as :func:`slotnet.schemes.pmnb.repro._bound`).
    """
    holds = sim is not None and bound is not None and (sim <= bound if side > 0 else sim >= bound)
    tol = abs(sim - bound) if holds and sim is not None and bound is not None else 0.0
    return Row(exp, case, metric, None, sim, None, bound, tolerance=tol)


def _any_rows(cases: list[tuple[str, str]], pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[Row]:
    """Meshes with a side that is not a power of two, beside the power-of-two rows: rec_route
    on the ⌈s/2⌉ / ⌊s/2⌋ partition (:mod:`._embed`), its bounds judged from the run."""
    rows: list[Row] = []
    for (topo, wl), (r, g) in zip(cases, pairs):
        th = r["_theory"]
        case = _case(topo, wl, r if not r.get("_ok", True) else g)
        d = th["dilation"]
        m = th.get("multiplex", 1)
        levels = math.ceil(math.log2(max(d, 2)))
        t = float(r["completion_time"])
        rows += [
            Row(_ANY, case, "D", None, None, None, float(d)),
            Row(_ANY, case, "W", None, None, None, th["congestion"]),
            Row(_ANY, case, "M (virtual nodes multiplexed per node)", None, None, None, float(m)),
            _bound(_ANY, case, "T rec >= lower bound (Thm 2.1)", t, float(th["lower_bound"]), -1),
            _bound(_ANY, case, "T rec <= M x virtual reference run", t, float(th["completion_time_bound"]), +1),
            Row(_ANY, case, "return step rec (theory: virtual reference run)", None, float(r["return_time"]), None,
                float(th["return_time"]), tolerance=0.0),
            Row(_ANY, case, "T rec / (D + W ceil(log D))", None, t / (d + th["congestion"] * levels), None, None),
            _bound(_ANY, case, "max_occupancy rec <= M x (sum_l C_l + 2)", float(r["max_occupancy"]),
                   float(th["occupancy_bound"]), +1),
            Row(_ANY, case, "max_queue rec / ceil(log2 D)", None, r["max_queue"] / max(1, levels), None, None),
            Row(_ANY, case, "T greedy", None, float(g["completion_time"]), None, None),
            Row(_ANY, case, "max_queue greedy (theory: our bound)", None, float(g["max_queue"]), None,
                float(g["_theory"]["greedy_space_bound"])),
        ]
    return rows


def _bfs_rows(runner: Runner, seed: int) -> list[Row]:
    cases = [("mesh:32x32", "uniform"), ("mesh:32x32", "hotspots:k=4")]
    res = runner([_spec("m2o-bfs", topo, wl, seed) for topo, wl in cases])
    rows: list[Row] = []
    for (topo, wl), r in zip(cases, res):
        case = _case(topo, wl, r)
        bounds = r["_theory"]["class_mean_delay_lower_bound"]
        for k, (sim, lb) in enumerate(zip(r["class_mean_delay"], bounds)):
            if sim is None:
                continue
            rows.append(Row(_BFS, case, f"class {k} (d in [{2**k}, {2**(k + 1)})) mean delay (theory: lower bound)",
                            None, sim, None, lb))
            rows.append(Row(_BFS, case, f"class {k} mean delay / lower bound", None, _ratio(sim, lb), None, None))
        rows.append(Row(_BFS, case, "max_queue bfs (theory: W log D scale)", None, float(r["max_queue"]), None,
                        r["_theory"]["bfs_space_scale"]))
    return rows


def _offline_rows(runner: Runner, seed: int, cases: list[tuple[str, str]]) -> list[Row]:
    res = _run_sorted(runner, [_spec("m2o-offline", topo, wl, seed) for topo, wl in cases])
    rows: list[Row] = []
    for (topo, wl), r in zip(cases, res):
        case = _case(topo, wl, r)
        rows.append(Row(_OFF, case, "T offline (theory: the plan)", None, float(r["completion_time"]), None,
                        float(r["_theory"]["completion_time"]), tolerance=0.0))
        rows.append(Row(_OFF, case, "T offline / (D + W)", None, r["ratio_dw"], None, None))
        rows.append(Row(_OFF, case, "max_queue offline", None, float(r["max_queue"]), None, None))
    return rows


def _plot(path: str, cases: list[tuple[str, str]], pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """Two panels against the side: T/(D + W log D) and max_queue (log scale), rec and greedy per family."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SchemeError("--plot needs matplotlib: pip install 'slotnet[plot]'") from None
    stem = os.path.splitext(path)[0]
    families = sorted({(topo.count("x") + 1, wl) for topo, wl in cases})
    overview, axes = plt.subplots(1, 2, figsize=(13, 5))
    try:
        panels = (("ratio_dw_log", "T / (D + W log D)", False, "ratio"), ("max_queue", "max_queue (packets)", True, "buffers"))
        for ax, (metric, label, log, suffix) in zip(axes, panels):
            _draw(ax, cases, pairs, families, metric, label, log)
            fig, one = plt.subplots(figsize=(6.4, 4.6))
            try:
                _draw(one, cases, pairs, families, metric, label, log)
                _save(fig, f"{stem}_{suffix}.png", path)
            finally:
                plt.close(fig)
        _save(overview, path, path)
    finally:
        plt.close(overview)


def _draw(ax: Any, cases: list[tuple[str, str]], pairs: list[tuple[dict[str, Any], dict[str, Any]]],
          families: list[tuple[int, str]], metric: str, label: str, log: bool) -> None:
    for dim, wl in families:
        pts = [(_side(topo), r, g) for (topo, w), (r, g) in zip(cases, pairs) if w == wl and topo.count("x") + 1 == dim]
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1][metric] for p in pts], marker="o", label=f"rec, {dim}-D {wl}")
        ax.plot(xs, [p[2][metric] for p in pts], marker="s", linestyle="--", label=f"greedy, {dim}-D {wl}")
    ax.set_xscale("log", base=2)
    plain_log_ticks(ax.xaxis, base=2)
    if log:
        ax.set_yscale("log", base=2)
        plain_log_ticks(ax.yaxis, base=2)
    ax.set_xlabel("mesh side s")
    ax.set_ylabel(label)
    ax.set_title(f"Mansour & Patt-Shamir: {label} against the side (slotnet runs)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _save(fig: Any, name: str, path: str) -> None:
    try:
        fig.tight_layout()
        fig.savefig(name, dpi=110)
    except OSError as exc:
        raise SchemeError(f"--plot {path!r}: cannot write {name}: {exc.strerror or exc}") from None


EXPERIMENTS = (Experiment("mansour", (mansour.__doc__ or "").strip(), mansour,
                          # measured (module docstring): quick 7 s, full 62 s with 2 workers
                          estimate=lambda quick, options: None if options else 7.0 if quick else 62.0,
                          citation="Mansour & Patt-Shamir, Many-to-one packet routing on grids",
                          claims=(
                              "Many packets may share a destination on a grid (hot spots). Every instance has two "
                              "lower bounds, the distance D a packet must travel and the bandwidth W (the packets "
                              "that must enter a region over the links into it); a centralised schedule delivers "
                              "all packets in Θ(D + W) time with O(1) buffers per node (Theorem 1.1, §3).",
                              "A local algorithm, rec_route (§4), delivers them in O(D + W log D) time with "
                              "O(log D) buffers per node (Theorem 1.2); greedy routing needs buffers that grow with "
                              "the number of packets (§1).",
                              "A third local algorithm, bfs_route, delivers the packets of each class of distance d "
                              "within an O(log d log D) factor of the best possible average time, with O(W log D) "
                              "buffers (Theorem 1.3).",
                          )),)
