"""Priority STAR broadcasting and routing on tori (Yeh, Varvarigos & Eshoul).

The scheme ``star`` (:mod:`.scheme`: parameters, load, theory beside the run), its node
rule (:mod:`.node`), its observer (:mod:`.reporter`) and ``slotnet repro yeh``
(:mod:`.repro`). The network-free parts of the scheme:

* :mod:`.theory` -- the paper's analysis as pure functions of (sides, rates): the
  throughput factor (§2, §4), the ending-dimension probabilities of eq. (2)/(4),
  per-link loads, the high-priority share and the G/D/1 waits of §3.2;
* :mod:`._rule` -- the local decisions of a node: the SDC order, the ending-dimension
  draw, the ring split, which (dimension, direction) transmissions a broadcast copy
  needs here and with which priority class (§3.1, §3.2, §4), and the unicast next hop.

Dimensions are 0-based in the rule functions and in returned lists; the paper's
(and the user's ``ending=l``) numbering 1..d is used only by ``theory_metrics``'s
``ending`` argument.
"""

from __future__ import annotations

from ._rule import (
    broadcast_class,
    pick_ending,
    pick_split,
    pick_tie,
    ring_split,
    sdc_order,
    star_forward,
    unicast_class,
    unicast_next_hop,
)
from .repro import EXPERIMENTS
from .scheme import SCHEME as STAR
from .theory import (
    class_waits,
    delay_lower_bound,
    ending_dimension_probs,
    gd1_wait,
    high_priority_share,
    lam_from_rho,
    link_loads,
    max_stable_rho,
    rates_from_rho,
    reception_delay_order,
    rho_from_lam,
    theory_metrics,
    throughput_factor,
    transmissions_matrix,
    unicast_hops,
)

SCHEMES = (STAR,)

__all__ = [
    "EXPERIMENTS",
    "SCHEMES",
    "broadcast_class",
    "class_waits",
    "delay_lower_bound",
    "ending_dimension_probs",
    "gd1_wait",
    "high_priority_share",
    "lam_from_rho",
    "link_loads",
    "max_stable_rho",
    "pick_ending",
    "pick_split",
    "pick_tie",
    "rates_from_rho",
    "reception_delay_order",
    "rho_from_lam",
    "ring_split",
    "sdc_order",
    "star_forward",
    "theory_metrics",
    "throughput_factor",
    "transmissions_matrix",
    "unicast_class",
    "unicast_hops",
    "unicast_next_hop",
]
