"""One-pass deflection routing on hypercubes (Greenberg & Hajek, IEEE Trans. Commun. 1992).

* :mod:`.scheme` — the scheme's record: parameters, loads, prepare, theory adapter;
* :mod:`.node` — the node rule (§II-A, §II-B, §IV);
* :mod:`._rule` — the one-pass assignment, and a slot's absorb and transmit steps, as pure functions;
* :mod:`._arrivals` — the arrival processes (binomial, §II-B; Poisson, §IV);
* :mod:`.reporter` — what the observer measures;
* :mod:`.theory` — the approximate analysis (§III, eqs. 3.1–3.29, 4.1, 5.16), with the walks
  and numerics in :mod:`._theory_chain`;
* :mod:`.paper` — the paper's printed tables;
* :mod:`.repro` — ``slotnet repro greenberg-hajek``.
"""

from .repro import EXPERIMENTS
from .scheme import SCHEME

SCHEMES = (SCHEME,)

__all__ = ["EXPERIMENTS", "SCHEMES"]
