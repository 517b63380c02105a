"""``slotnet repro varvarigos``: the rows it assembles, its one-sided verdicts, its plots and refusals."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from slotnet.errors import SchemeError
from slotnet.schemes import EXPERIMENTS
from slotnet.schemes.pmnb import theory as th
from slotnet.schemes.pmnb.repro import EXP_DYN, EXP_PE, EXP_PMNB, EXP_T1, EXP_T3, varvarigos


class FakeRunner:
    """Answers every request with metrics placed at a chosen side of the bounds."""

    def __init__(self, pmnb_over: float = 0.0) -> None:
        self.requests: list[Mapping[str, Any]] = []
        self.pmnb_over = pmnb_over

    def __call__(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        self.requests += list(requests)
        out = []
        for r in requests:
            kind, _, s = r["topology"].partition(":")
            sides, wrap = tuple(int(x) for x in s.split("x")), kind == "torus"
            if r["scheme"] == "pmnb":
                m = int(r["params"]["active"])
                split = r["params"]["split"] == "true"
                up = th.pmnb_split_bound(sides, wrap, m, 0.125) if split else th.pmnb_unsplit_bound(sides, wrap, m, 0.125)
                out.append({"completion_time": up + self.pmnb_over, "_theory": {}, "_ok": True})
            elif r["scheme"] == "packing":  # what the packing run of the Theorem 3 rows measures
                out.append({"max_at_node": 2, "meetings": 1, "boundary_collisions": 0, "link_conflicts": 0, "_ok": True,
                            "_theory": {}})
            elif r["scheme"] == "partial-exchange":
                m = int(r["params"]["active"])
                out.append({"completion_time": th.pe_upper_bound(sides, wrap, m, 0.125) - 1.0, "phase1_time": 2 * (sides[0] // 2) / 8,
                            "_theory": {"completion_time_lower_bound": 1.0}, "_ok": True})
            else:
                rho = r["load"]["rho"]
                bound = th.delay_bound(rho, sides, wrap, 0.125)
                stable = rho < 0.6
                out.append({"mean_delay": bound / 2 if stable else None, "mean_delay_ci95": 0.5, "mean_queue_per_node": 1.0,
                            "mean_queue_per_node_ci95": 0.1, "stable": stable, "_theory": {}, "_ok": True})
        return out


def test_experiment_is_registered() -> None:
    """The package brings one reproduction, `varvarigos`."""
    assert "varvarigos" in EXPERIMENTS


def test_quick_rows_and_verdicts_from_a_fake_runner() -> None:
    """Every run becomes its bound rows; a value inside its bounds reads `within`, the mN/4 row stays unjudged."""
    runner = FakeRunner()
    rows = varvarigos(runner, seed=3, quick=True)
    schemes = [r["scheme"] for r in runner.requests]
    assert schemes.count("pmnb") == 2 * 3 * 2 and schemes.count("partial-exchange") == 2 * 3
    assert schemes.count("dynamic-broadcast") == 3
    assert schemes.count("packing") == 1
    assert {r.experiment for r in rows} == {EXP_PMNB, EXP_PE, EXP_DYN, EXP_T1, EXP_T3}
    slips = [r for r in rows if r.experiment in (EXP_T1, EXP_T3)]
    known = sorted((r.case, r.metric) for r in slips if r.verdict().startswith("known: Theorem"))
    assert len(known) == 4 and {c for c, _ in known} >= {"mesh:5x5 p=5", "mesh:7x7 p=7"}, known
    assert all(r.verdict() == "within" for r in slips if (r.case, r.metric) not in known)  # p = 6, and the harmless counts
    judged = [r for r in rows if "mN/4" not in r.metric and r.theory is not None and r.experiment not in (EXP_T1, EXP_T3)]
    assert judged and all(r.verdict() == "within" for r in judged), [(r.case, r.metric, r.verdict()) for r in judged]
    assert all(r.verdict() == "-" for r in rows if "mN/4" in r.metric)
    assert all(r["params"]["placement_seed"] == "3" for r in runner.requests if r["scheme"] == "partial-exchange")


def test_a_time_above_its_upper_bound_is_outside() -> None:
    """The one-sided rows can fail: a PMNB time 0.5 above (5)/(6)/(5')/(6') reads OUTSIDE."""
    rows = varvarigos(FakeRunner(pmnb_over=0.5), seed=1, quick=True)
    upper = [r for r in rows if r.experiment == EXP_PMNB and "<=" in r.metric]
    assert upper and all(r.verdict().startswith("OUTSIDE") for r in upper)


def test_full_plan_includes_3d_shapes_and_a_load_past_saturation() -> None:
    """The full run sweeps 3-D meshes, p odd and even for §5, and checks `stable` past saturation."""
    runner = FakeRunner()
    rows = varvarigos(runner, seed=1, quick=False)
    topos = {r["topology"] for r in runner.requests}
    assert {"torus:4x4x4", "mesh:4x4x4", "mesh:7x7", "mesh:8x8"} <= topos
    unstable = [r for r in rows if r.metric.startswith("stable")]
    assert len(unstable) == 1 and unstable[0].sim == 0.0 and unstable[0].verdict() == "within"


def test_sweep_options() -> None:
    """--sweep-rho sets the loads (those below (14) are run), --sweep-only skips the static tasks, --sweep-d is refused."""
    runner = FakeRunner()
    varvarigos(runner, seed=1, quick=True, sweep_rho=[0.2, 0.45, 0.9], sweep_only=True)
    assert {r["scheme"] for r in runner.requests} == {"dynamic-broadcast"}
    assert sorted(r["load"]["rho"] for r in runner.requests) == [0.2, 0.45]  # 0.9 is past (14) = 0.529
    with pytest.raises(SchemeError, match="sweep-d"):
        varvarigos(FakeRunner(), seed=1, quick=True, sweep_d=6)


def test_plot_without_matplotlib_is_refused_before_running(monkeypatch: pytest.MonkeyPatch) -> None:
    """With matplotlib missing, --plot fails with a SchemeError and nothing is run."""
    real = builtins.__import__

    def no_mpl(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)

    def never(requests: Any) -> Any:
        raise AssertionError("ran before refusing")

    with pytest.raises(SchemeError, match="matplotlib"):
        varvarigos(never, seed=1, quick=True, plot="x.png")


def test_plot_writes_three_pngs(tmp_path) -> None:
    """--plot FILE.png saves FILE_pmnb.png, FILE_exchange.png and FILE_dynamic.png."""
    pytest.importorskip("matplotlib")
    varvarigos(FakeRunner(), seed=1, quick=True, plot=str(tmp_path / "vb.png"))
    for name in ("vb_pmnb.png", "vb_exchange.png", "vb_dynamic.png"):
        assert (tmp_path / name).stat().st_size > 1000


@pytest.mark.slow
def test_quick_repro_runs_every_scheme_inside_its_bounds() -> None:
    """The real quick reproduction (pmnb, partial-exchange, dynamic-broadcast runs): every judged row is within."""
    from slotnet.orchestrator.tools._repro import repro

    rows, _wall = repro("varvarigos", seed=1, jobs=1, quick=True)
    bad = [(r.case, r.metric, r.verdict()) for r in rows if r.verdict() not in ("within", "-")
           and not (r.experiment in (EXP_T1, EXP_T3) and r.verdict().startswith("known: Theorem"))]
    assert not bad, bad
    # the slips: Theorem 1 for odd p (5 and 7), Theorem 3's meetings inside a phase (run and reference agree)
    assert sum(r.verdict().startswith("known: Theorem 1") for r in rows) == 2
    meet = [r for r in rows if r.experiment == EXP_T3 and r.verdict().startswith("known")]
    assert len(meet) == 2 and all(r.sim == r.theory and r.sim != r.paper for r in meet)
