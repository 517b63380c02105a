"""Priority STAR broadcasting and routing on tori (Yeh, Varvarigos & Eshoul).

* :mod:`.scheme` -- the scheme ``star``: parameters, load, prepare, theory beside the run;
* :mod:`.node` -- the node rule, with the per-shape plans it consults in :mod:`._plans`;
* :mod:`.reporter` -- what the observer measures;
* :mod:`._rule` -- the local decisions of a node: the SDC order, the ending-dimension
  draw, the ring split, which (dimension, direction) transmissions a broadcast copy
  needs here and with which priority class (§3.1, §3.2, §4), and the unicast next hop;
* :mod:`.theory` -- the paper's analysis as pure functions of (sides, rates): the
  throughput factor (§2, §4), the ending-dimension probabilities of eq. (2)/(4),
  per-link loads, the high-priority share and the G/D/1 waits of §3.2; its parts are
  :mod:`._theory_checks` (input checks), :mod:`._theory_loads` (eq. (1), per-link loads),
  :mod:`._theory_ending` (eq. (2)/(4) and the infeasible case), :mod:`._theory_rates`
  (throughput factor and rates) and :mod:`._theory_waits` (the §3.2 waiting times);
* :mod:`.repro` -- ``slotnet repro yeh``.

Dimensions are 0-based in the rule functions and in returned lists; the paper's
(and the user's ``ending=l``) numbering 1..d is used only by ``theory_metrics``'s
``ending`` argument.
"""

from .repro import EXPERIMENTS
from .scheme import SCHEME

SCHEMES = (SCHEME,)

__all__ = ["EXPERIMENTS", "SCHEMES"]
