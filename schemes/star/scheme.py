"""The ``star`` scheme record: parameters, load, preparation and theory of priority STAR.

Yeh, Varvarigos & Eshoul, "A priority-based balanced routing scheme for random
broadcasting and routing in tori".

Load (exactly one of):

* ``--rho ρ``: the throughput factor of §2/§4. On a torus (every side >= 2; a side of
  2 has two parallel links, so every node has 2d out-links) ``ρ = λ_B (N−1)/(2d) +
  λ_R D_ave/(2d)``; on a hypercube (one link per dimension, §2)
  ``ρ = λ_B (2^d−1)/d + λ_R D_ave/d``. Either way ρ is the mean utilisation of the
  network's directed links, which the run measures as ``link_utilization``. With
  ``--param lam_unicast=λ_R`` the broadcast rate is what is left of ρ
  (an error if the unicasts alone exceed it).
* ``--lam λ_B``: the broadcast birth rate per node and slot directly.

Parameters: ``discipline`` (``priority``: §3.2's two classes; ``fcfs``: one FIFO per
port, the "FCFS generalisation of the direct scheme of [12]" of Figs. 2-7), ``classes``
(2, or 3 for the three-class variant at the end of §4; needs ``priority``), ``ending``
(0: x from eq. (2)/(4); ``l`` in 1..d: every broadcast ends on dimension l, paper
numbering), ``lam_unicast`` (§4 unicast rate per node; destinations uniform over the
other nodes, shortest paths in dimension order 1..d, see :mod:`._rule`), ``hops``
(``exact`` mean ring distances or the paper's literal ``floor(n_i/4)`` in eq. (4) and
in ρ; the simulated unicasts always take true shortest paths, so ``paper`` changes x
and the ρ <-> λ conversion, not the routing).

Topologies: ``torus`` (any sides >= 2, unequal ones included) and ``hypercube``, the
torus with all sides 2 and a single link per dimension (§3.2: "hypercubes are a special
case of tori"). On the hypercube the rule is unchanged (a ring of 2 needs one
transmission); its per-link loads are twice the torus formulas' (one link, not two,
per dimension), which is how :func:`star_theory` evaluates them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._base import Claim, Inputs, Load, Param, Scheme, SchemeError, Setup
from ..kit import births_choice
from ..kit.choices import Categorical, Distribution, Poisson, Uniform
from ._inputs import Given, StarInputs
from ._theory_loads import HOPS_RULES, unicast_hops
from .node import StarNode
from .reporter import StarReporter
from .theory import ending_dimension_probs, lam_from_rho, rho_from_lam, theory_metrics

__all__ = ["LOADS", "PARAMS", "SCHEME", "SOURCE", "link_scale", "prepare", "star_theory", "unicast_identity"]

SOURCE = ("Yeh, Varvarigos & Eshoul, A priority-based balanced routing scheme for random broadcasting "
          "and routing in tori (priority STAR)")

PARAMS = (
    Param("discipline", str, "priority",
          "per-port queue: priority (§3.2: ending-dimension transmissions low, others high) or fcfs (one FIFO)",
          ("priority", "fcfs")),
    Param("ending", int, 0, "0: ending dimension drawn with x_l of eq. (2)/(4); 1..d: always that dimension"),
    Param("classes", int, 2, "priority classes: 2 (§3.2/§4, unicast high) or 3 (end of §4, unicast medium)", (2, 3)),
    Param("lam_unicast", float, 0.0, "unicast birth rate per node and slot (§4; 0: broadcast only)"),
    Param("hops", str, "exact", "unicast hops per ring in eq. (4) and ρ: exact mean distance or paper (floor(n/4))",
          HOPS_RULES),
)

LOADS = (
    Load("rho", "throughput factor ρ (§2, §4): λ_B(N−1)/(2d) + λ_R·D_ave/(2d) on a torus; "
                "λ_B(N−1)/d + λ_R·D_ave/d on a hypercube", "ρ"),
    Load("lam", "broadcast birth rate λ_B per node per slot", "λ"),
)


def link_scale(kind: str) -> int:
    """Per-link load of a hypercube relative to the torus formulas (1 link per dimension, not 2)."""
    return 2 if kind == "hypercube" else 1


def prepare(topology: Any, params: Mapping[str, Any], load: dict[str, float]) -> Inputs[StarInputs]:
    """Validate the run and compute x once; returns every node's parameters.

    Raises:
        SchemeError: naming the bad parameter, load or topology.
    """
    if topology.kind not in ("torus", "hypercube"):
        raise SchemeError(f"star runs on tori and hypercubes, not {topology.spec}")
    sides = tuple(topology.sides)
    if any(n < 2 for n in sides):
        raise SchemeError(f"star needs every torus side >= 2, got {topology.spec}")
    d = len(sides)
    p = Given.of(params)
    ending = p.ending
    if isinstance(ending, bool) or not 0 <= ending <= d:
        raise SchemeError(f"--param ending={ending!r}: expected 0 (balanced, eq. (2)/(4)) or a dimension 1..{d}")
    discipline, classes = p.discipline, p.classes
    if discipline == "fcfs" and classes == 3:
        raise SchemeError("--param classes=3 (end of §4) needs discipline=priority; fcfs has one class")
    lam_u = p.lam_unicast
    if not (math.isfinite(lam_u) and lam_u >= 0):
        raise SchemeError(f"--param lam_unicast={lam_u!r}: expected a finite rate >= 0")
    if ("rho" in load) == ("lam" in load):
        raise SchemeError("star needs exactly one load: --rho ρ (throughput factor, §2) or --lam λ_B")
    hops = p.hops
    scale = link_scale(topology.kind)
    if "rho" in load:
        rho = load["rho"]
        try:
            lam = lam_from_rho(sides, rho / scale, lam_u, hops=hops)
        except ValueError as exc:
            raise SchemeError(f"--rho {rho:g}: {exc}") from None
    else:
        lam = load["lam"]
        rho = scale * rho_from_lam(sides, lam, lam_u, hops=hops)
    if ending:
        x = [float(k == ending - 1) for k in range(d)]
    else:
        x = [float(v) for v in ending_dimension_probs(sides, lam, lam_u, hops=hops)]
    return Inputs(StarInputs(lam=lam, rho=rho, lam_unicast=lam_u, x=x, ending=ending, discipline=discipline,
                             classes=classes, n_classes=1 if discipline == "fcfs" else classes, hops=hops))


def star_theory(setup: Setup) -> dict[str, Any]:
    """The paper's analysis beside the run (:func:`.theory.theory_metrics`), under the run's names.

    Adds ``link_utilization`` / ``link_utilization_max`` / ``link_imbalance`` /
    ``link_utilization_per_dim`` (the expected link loads: the same quantities the run measures) and the exact zero-load
    limits ``mean_reception_delay_zero_load`` (mean distance + 1/2) and
    ``mean_broadcast_delay_zero_load`` (diameter + 1/2): every STAR path is a shortest
    path and a packet born at a uniform time in a slot waits 1/2 on average for the next
    slot boundary (our derivation; the paper gives no delay formula).
    """
    p: StarInputs = setup.params
    top = setup.topology
    sides = tuple(top.sides)
    scale = link_scale(top.kind)
    out: dict[str, Any] = dict(theory_metrics(sides, scale * p.lam, scale * p.lam_unicast,
                                              p.ending or None, p.n_classes, hops=p.hops))
    out["link_utilization"] = out["link_load_mean"]
    out["link_utilization_max"] = out["link_load_max"]
    out["link_utilization_per_dim"] = out["link_load_per_dim"]
    mean = out["link_load_mean"]
    out["link_imbalance"] = out["link_load_max"] / mean if mean else None
    out["mean_reception_delay_zero_load"] = float(sum(unicast_hops(sides))) + 0.5
    out["mean_broadcast_delay_zero_load"] = sum(n // 2 for n in sides) + 0.5
    return out


#: The §3.2 G/D/1 waits with ``V = rho`` are an estimate (the paper gives ``V = O(rho)``
#: only): ``slotnet repro star`` judges them to this share of the model (its
#: ``WAIT_AGREEMENT``); the 8x8 runs of Figs. 2 and 5 measure them below the model, a 4x4
#: torus at rho = 0.5 by 9-10%.
WAIT_ERROR = 0.10
#: The expected link loads are exact in expectation; a run measures them from a sample
#: with no interval, off by its noise: this share of the expectation (4x4, rho = 0.5, 500
#: slots: the mean 0.2% off; the busiest link 13% above the expected maximum, a maximum
#: over noisy loads being biased upward).
LOAD_NOISE = 0.03
LOAD_MAX_NOISE = 0.15


def star_claims(setup: Setup, th: Mapping[str, Any]) -> list[Claim]:
    """What :func:`star_theory` is to the run (``theory_agreement``).

    The zero-load delays are lower bounds (every STAR path is a shortest path, so no copy
    arrives sooner than its distance plus the wait for the slot boundary); the §3.2 G/D/1
    waits approximations within :data:`WAIT_ERROR` of themselves; the expected link loads
    approximations within the run's sampling noise (:data:`LOAD_NOISE`,
    :data:`LOAD_MAX_NOISE`). ``delay_lower_bound`` and ``reception_delay_order`` are orders
    (bounds up to constants, §2 and §3.2) and stand beside no metric of their own.
    """
    out = [
        Claim("mean_broadcast_delay_zero_load", "mean_broadcast_delay", "lower-bound",
              why="diameter + 1/2: shortest paths, births uniform in the slot (derived; the paper gives no formula)"),
        Claim("mean_reception_delay_zero_load", "mean_reception_delay", "lower-bound",
              why="mean distance + 1/2: shortest paths, births uniform in the slot (derived)"),
    ]
    for key in sorted(k for k in th if k.startswith("mean_wait")):
        if isinstance(th[key], (int, float)):
            out.append(Claim(key, key, "approximation", WAIT_ERROR * float(th[key]),
                             why="§3.2: G/D/1 waits per priority class with V = rho (the paper: V = O(rho))"))
    for key, noise in (("link_utilization", LOAD_NOISE), ("link_utilization_max", LOAD_MAX_NOISE),
                       ("link_imbalance", LOAD_MAX_NOISE)):
        if isinstance(th.get(key), (int, float)):
            out.append(Claim(key, key, "approximation", noise * float(th[key]),
                             why="§3.1 / §4: the expected link load of the ending-dimension rule (exact in "
                                 "expectation; the run's sample noise)"))
    return out


def unicast_identity(message: Any) -> tuple[int, int] | None:
    """A unicast's ``(source, seq)`` from its header ``(-(source + 1), seq, ...)`` (see :mod:`.node`);
    None for a broadcast copy (its header starts with the origin, >= 0). The scheme's ``follow``:
    every unicast is followed from send to send by the validator."""
    head = message[0]
    return (-head - 1, message[1]) if head < 0 else None


def star_choices(setup: Setup) -> dict[str, Distribution]:
    """The random choices of priority STAR, judged by the observer.

    * ``births`` and ``unicast_births``: broadcast and unicast requests born at a node in a
      slot, Poisson(λ_B) and Poisson(λ_R) (§2's arrival rates λ_i per node, as Poisson
      processes, the random broadcasting of Stamoulis & Tsitsiklis [12]); each only where
      its rate is positive.
    * ``ending``: a broadcast's ending dimension l, drawn with probability x_l (§3.1, eq. (2)
      and (3); §4, eq. (4) with unicasts).
    * ``split``: on each ring of even side, which way the longer side of a broadcast's ring
      goes, one fair coin per even dimension (§3.1): the mask is uniform over the masks of
      the even dimensions (always 0 where every side is odd).
    * ``destination``: a unicast's destination is uniform over the other nodes (§4); recorded
      as its offset ``(destination - source) mod n`` from the node where it is born,
      uniform over 1..n-1.
    * ``tie``: on a ring of even side n where a unicast's destination is n/2 away, both ways
      round are shortest, and the packet's tie bit picks one (1: +1), a fair coin per such
      ring, recorded once per tied ring: 0 or 1, each with probability 1/2. §4 sends unicasts
      on shortest paths with "the transmissions [...] uniformly distributed over all network
      nodes and links" (the paragraph that gives its ρ); it does not state the tie rule in
      words, and a fair coin is the one that loads both directions of a ring alike. Declared
      where unicasts are born and some side is even.
    """
    p: StarInputs = setup.params
    out: dict[str, Distribution] = {"destination": Uniform(range(1, setup.topology.n_nodes))}
    out.update(births_choice(p.lam))
    if p.lam_unicast > 0:
        out["unicast_births"] = Poisson(p.lam_unicast)
        if any(n % 2 == 0 for n in setup.topology.sides):
            out["tie"] = Uniform((0, 1))
    if p.lam > 0:
        total = sum(p.x)
        out["ending"] = Categorical({k: x / total for k, x in enumerate(p.x) if x > 0})
        even = [k for k, n in enumerate(setup.topology.sides) if n % 2 == 0]  # none: the mask is always 0
        out["split"] = Uniform(sum(1 << k for i, k in enumerate(even) if m >> i & 1) for m in range(1 << len(even)))
    return out


SCHEME = Scheme(
    name="star",
    summary="priority STAR broadcasting (and §4 unicast routing) on tori: balanced ending dimensions, priority classes",
    source=SOURCE,
    node=StarNode,
    reporter=StarReporter,
    prepare=prepare,
    theory=star_theory,
    params=PARAMS,
    loads=LOADS,
    topologies=("torus", "hypercube"),
    follow=unicast_identity,
    claims=star_claims,
    choices=star_choices,
)
