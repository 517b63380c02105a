"""Partial multinode broadcast and partial exchange on d-dimensional meshes.

Source: E. A. Varvarigos and D. P. Bertsekas, "Partial multinode broadcast and partial
exchange algorithms for d-dimensional meshes" (the seed paper).

One module per scheme, each its node rule, reporter, ``prepare`` and theory adapter:

* :mod:`.prefix_scan` -- ``prefix-scan``, the parallel prefix of §4.1 Phase 1 (Fig. 2)
  or §5 Phase 1;
* :mod:`.packing` -- ``packing``, greedy packing (Theorem 3);
* :mod:`.monotone` -- ``monotone``, monotone routing (Theorem 4);
* :mod:`.array_broadcast` -- ``array-broadcast``, Theorem 2's greedy rule on a linear
  array or ring;
* :mod:`.pmnb` -- ``pmnb``, the partial multinode broadcast (§4.1 Theorem 6, §4.2);
* :mod:`.partial_exchange` -- ``partial-exchange`` (§5);
* :mod:`.dynamic_broadcast` -- ``dynamic-broadcast``, successive PMNB intervals (§6).

Shared: :mod:`._inputs` (parameters, t_p and the quantum, the active set),
:mod:`.node`, :mod:`._routing_node` and :mod:`.reporter` (packing and monotone), :mod:`._scan` (a
node's prefix scans over the network), :mod:`._offschedule` (how the fixed schedules
meet faults, node side and reporter side).

The paper's algorithms, pure and network-free, which the node rules call:

* :mod:`._prefix` -- the embedded prefix tree P of §4 (Fig. 2) and the median-rooted
  row/column prefix of §5, as local schedules and node state machines;
* :mod:`._packing` -- greedy packing (Theorem 3) and monotone routing (Theorem 4): the
  destination of a rank, the per-step port rule and a step-by-step reference;
* :mod:`._line` -- Theorem 2's greedy line broadcast and the §4.1 Phase 3 windows;
* :mod:`._exchange_rule` -- §5 Phase 2: the sets R and C, routes and priorities;
* :mod:`._dynamic_interval`, :mod:`._dynamic_schedule` -- one PMNB interval of §6;
* :mod:`._placement` -- sets of active nodes: random, corner (Fig. 3), spread.

The analysis: :mod:`.theory` -- every bound of the paper (lower bounds (3), (4);
Theorems 1-4 and 6; (5), (6), (5'), (6'); the partial exchange bounds of §5 and bounds
for a given placement; the dynamic scheme's (9)-(14)) and one function per scheme that
frames a run, over :mod:`._theory_static`, :mod:`._theory_exchange`,
:mod:`._theory_dynamic` and :mod:`._theory_shape`. ``slotnet repro varvarigos`` is
:mod:`.repro`.
"""

from __future__ import annotations

from .array_broadcast import SCHEME as ARRAY_BROADCAST
from .dynamic_broadcast import SCHEME as DYNAMIC_BROADCAST
from .monotone import SCHEME as MONOTONE
from .packing import SCHEME as PACKING
from .partial_exchange import SCHEME as PARTIAL_EXCHANGE
from .pmnb import SCHEME as PMNB
from .prefix_scan import SCHEME as PREFIX_SCAN
from .repro import EXPERIMENTS

__all__ = ["EXPERIMENTS", "SCHEMES"]

SCHEMES = (PREFIX_SCAN, PACKING, MONOTONE, ARRAY_BROADCAST, PMNB, PARTIAL_EXCHANGE, DYNAMIC_BROADCAST)
