"""Multiple broadcasts on hypercubes (Stamoulis & Tsitsiklis, IEEE TPDS 1993).

One module per scheme, each its node rule with the section it implements:

* :mod:`.simple` — ``bcast-simple``, the simple direct scheme (§4.1);
* :mod:`.periodic` — ``bcast-periodic``, the periodic schemes (§4.2.2);
* :mod:`.dtree` — ``bcast-dtree``, the non-idling d-tree scheme (§4.3.2);
* :mod:`.balanced` — ``bcast-balanced``, non-idling balanced trees (§4.3.1);
* :mod:`.indirect` — ``bcast-indirect``, the indirect scheme (§5).

Each module holds its scheme's record (``SCHEME``), node, theory adapter and (periodic)
reporter. Shared: :mod:`._inputs` (the load, ``prepare``, the record's common fields),
:mod:`._cube_node` (the node base class), :mod:`._direct` (the node loop of the two
non-idling direct schemes), :mod:`.theory` (the paper's analysis, one ``*_metrics``
function per scheme, in :mod:`._theory_dtree`, :mod:`._theory_periodic`,
:mod:`._theory_indirect`, :mod:`._theory_limits`, :mod:`._theory_load`, and the indirect
scheme's Rules E-F slot by slot in :mod:`._theory_indirect_slots`), :mod:`.trees` (trees and
schedules, with :mod:`._balanced`, :mod:`._binomial`, :mod:`._unbalanced`), :mod:`.paper`
(Table 1) and :mod:`.repro` (``slotnet repro stamoulis``); the broadcast reporter (D,
reception delay, Q, M, exactly-once) is the kit's.
"""

from __future__ import annotations

from .balanced import SCHEME as BALANCED
from .dtree import SCHEME as DTREE
from .indirect import SCHEME as INDIRECT
from .periodic import SCHEME as PERIODIC
from .repro import EXPERIMENTS
from .simple import SCHEME as SIMPLE

__all__ = ["EXPERIMENTS", "SCHEMES"]

SCHEMES = (SIMPLE, PERIODIC, DTREE, BALANCED, INDIRECT)
