"""Which faults the Varvarigos & Bertsekas schemes run under, and why the others refuse (issue #11).

``array-broadcast`` runs under every fault kind: Theorem 2's greedy rule has no
schedule (a node forwards what comes and inserts its own when nothing comes), so its
reporter charges each lost reception to the fault that destroyed it
(:mod:`._static_array_report`). Every other scheme of this package is a *fixed
schedule* in the sense of the paper's §2 model: links are reliable and synchronous, and a step of ``t_p`` (a prefix step) or of one
packet time (a routing or broadcast step) moves exactly the messages the schedule
names. No node acknowledges, times out or retransmits; each node waits for *the*
message of a precomputed step and acts on it. A fault that destroys a message (``loss``,
``corrupt``, a down link, a partition, a stalled or crashed receiver), copies it
(``dup``) or moves it to another step (``delay``, ``dup``'s late copy) therefore leaves a
node without an operand it cannot do without (a partial sum of the scan, its rank, the
number M that fixes every window) or hands it one at a step where the schedule has no
place for it. Tolerating that is not a reading of these algorithms but a different one
(a reliable-delivery layer under them, or timeouts that change every bound of
Theorems 3-7), so each of them declares no fault kind supported and a faulted run is
refused before its first slot with the reason below, instead of stopping inside a node
rule (a ``KeyError`` in the packing step, "no scan receive scheduled").
"""

from __future__ import annotations

__all__ = ["NO_FAULTS", "WHY_DYNAMIC", "WHY_EXCHANGE", "WHY_PMNB", "WHY_PREFIX", "WHY_ROUTING"]

#: The fault kinds the fixed-schedule schemes declare supported: none.
NO_FAULTS: frozenset[str] = frozenset()

_NO_RETRY = "no acknowledgement or retransmission exists to replace a message a fault destroys, copies or moves"

WHY_PREFIX = (f"the scans of §4.1 Phase 1 (Fig. 2) and §5 Phase 1 wait for each partial sum in one precomputed "
              f"t_p step; {_NO_RETRY}")
WHY_ROUTING = (f"Theorems 3-4 route from ranks the §4.1 scan computes in fixed t_p steps, and §3 greedy packing "
               f"assumes every packet reaches its rank's node; {_NO_RETRY}")
WHY_PMNB = (f"§4.1/§4.2 rank by a fixed-step prefix scan and give every broadcast subphase a window computed "
            f"from M alone (Theorem 6); {_NO_RETRY}")
WHY_EXCHANGE = (f"§5 Phase 1's row/column sums are fixed t_p steps and Phase 2 routes on the sets R and C they "
                f"give; {_NO_RETRY}")
WHY_DYNAMIC = (f"§6 serves requests by successive Theorem 6 PMNB intervals whose rank scan and subphase windows "
               f"are fixed steps every node computes alike; {_NO_RETRY}")
