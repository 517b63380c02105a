"""Multiple broadcasts on hypercubes (Stamoulis & Tsitsiklis, IEEE TPDS 1993).

One module per scheme, each its node rule with the section it implements:

* :mod:`.simple` — ``bcast-simple``, the simple direct scheme (§4.1);
* :mod:`.periodic` — ``bcast-periodic``, the periodic schemes (§4.2.2);
* :mod:`.dtree` — ``bcast-dtree``, the non-idling d-tree scheme (§4.3.2);
* :mod:`.balanced` — ``bcast-balanced``, non-idling balanced trees (§4.3.1);
* :mod:`.indirect` — ``bcast-indirect``, the indirect scheme (§5).

Shared: :mod:`.theory` (the paper's analysis), :mod:`.trees` (trees and schedules),
:mod:`.repro` (``slotnet repro stamoulis``), :mod:`._common`; the broadcast reporter
(D, reception delay, Q, M, exactly-once) is the kit's.
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
