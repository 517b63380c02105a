"""Partial multinode broadcast and partial exchange on d-dimensional meshes.

Source: E. A. Varvarigos and D. P. Bertsekas, "Partial multinode broadcast and partial
exchange algorithms for d-dimensional meshes" (the seed paper). This package holds the
pure, network-free parts; node rules call them directly:

* :mod:`.theory` -- every bound of the paper (lower bounds (3), (4); Theorems 1-4 and 6;
  (5), (6), (5'), (6'); the partial exchange bounds of §5 and bounds for a given
  placement; the dynamic scheme's (9)-(14)) and :func:`.theory.bounds_for`;
* :mod:`._prefix` -- the embedded prefix tree P of §4 (Fig. 2) and the median-rooted
  row/column prefix of §5, as local schedules and node state machines;
* :mod:`._packing` -- greedy packing (Theorem 3) and monotone routing (Theorem 4): the
  destination of a rank, the per-step port rule and a step-by-step reference;
* :mod:`._placement` -- sets of active nodes: random, corner (Fig. 3), spread.

Schemes (node rules): :mod:`.static` (prefix-scan, packing, monotone, array-broadcast,
pmnb) and :mod:`.exchange` (partial-exchange, dynamic-broadcast); ``slotnet repro
varvarigos`` is :mod:`.repro`.
"""

from __future__ import annotations

from .exchange import SCHEMES as _EXCHANGE
from .repro import EXPERIMENTS
from .static import SCHEMES as _STATIC

__all__ = ["EXPERIMENTS", "SCHEMES"]

SCHEMES = (*_STATIC, *_EXCHANGE)
