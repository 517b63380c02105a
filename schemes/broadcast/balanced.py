"""``bcast-balanced``: the non-idling balanced-tree scheme of Stamoulis & Tsitsiklis §4.3.1.

Every packet of origin ``o`` is broadcast on ``o``'s own spanning tree: the translation by
``o`` of one prototype tree rooted at 0 (2^d trees, one per node, §2.2.1). A node ``x``
holding the packet sends it once on each dimension of ``trees.balanced_children(x ^ o,
d)``. Non-idling (§4.3): every out-port sends a waiting packet in every slot it has one.

Contention (§4.3.1): the origin stamps each packet with the label of the period in which
the periodic scheme of §4.2.1 would have broadcast it — ``l_1 = ⌈τ_1/P⌉ + 1``,
``l_{n+1} = max{l_n + 1, ⌈τ_{n+1}/P⌉ + 1}`` with ``P = trees.balanced_period(d)`` and
``τ`` the first slot the packet may be sent (``trees.first_label`` / ``next_label``) — so
the message is ``(origin, seq, label)``. Each port sends the waiting packet of smallest
``trees.balanced_priority(label, x ^ o, k, d)``: smallest label, ties broken by the slot in
which the packet would have crossed that arc in the periodic multinode broadcast. Order
is then preserved from the periodic version, every packet completes no later than there,
and the scheme is stable under (12), ρ < ((2^d − 1)/d)/P (0.9932 for d = 10).
``--param discipline=fifo`` replaces the priority by per-port FIFO for comparison (own
births after the copies arriving in the same slot, which are ordered by ``--param ties=``,
``hops`` or ``inport``, as in ``bcast-dtree``); the label is then not carried and the
message is ``(origin, seq)``.

Relation to [BOSTT89]. The paper broadcasts along "that tree used by x in the optimal
multinode broadcast algorithm of [BOSTT89]" but never gives the tree ("it cannot be
described in a concise way", §4.3.3). It uses only that the trees are translations of one
prototype (§2.2.1), have depth d (§4.3.1), share each arc among at most
``⌈(2^d − 1)/d⌉`` trees (§4.1), and admit a multinode broadcast of ``⌈(2^d − 1)/d⌉`` slots
(§4.2.1). ``trees.balanced_*`` *constructs* a prototype with exactly these properties — a
shortest-path tree (node ``y`` at depth ``popcount(y)``) scheduled slot by slot by maximum
matchings, achieving ``P = ⌈(2^d − 1)/d⌉`` for every d checked (2..13) — rather than
reproducing [BOSTT89]'s own tree (see ``schemes/broadcast/_balanced.py``). Its schedule is
the "periodic version" whose order breaks label ties. Delays measured here are therefore
those of *a* balanced translation-invariant tree family with [BOSTT89]'s parameters; they
may differ in detail from the paper's Figs. 2, 4, 6–9.

Theory (``slotnet theory bcast-balanced``): stability limit (12) and the conjectured
zero-load delay d + 1/2 (§4.3.1, §4.3.3); the paper has no formula for D at ρ > 0.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from slotnet.nodes import NodeContext

from .._base import Setup
from ..kit import StreamLabels
from . import theory
from ._direct import DirectNode, discipline_params
from ._inputs import delay_bound_claims, make_scheme
from .trees import balanced_children, balanced_period, balanced_priority

__all__ = ["SCHEME", "BalancedNode", "balanced_plan"]


@lru_cache(maxsize=1 << 16)
def balanced_plan(rel: int, d: int) -> tuple[tuple[int, int], ...]:
    """``(port, slot_in_period)`` for each child dimension of ``rel`` in the prototype tree.

    The slot is the tie-break half of ``trees.balanced_priority`` (§4.3.1), so that a node
    adds the label at run time and never recomputes the rest.
    """
    return tuple((k, balanced_priority(0, rel, k, d)[1]) for k in balanced_children(rel, d))


class BalancedNode(DirectNode):
    """One node of the non-idling balanced-tree scheme (§4.3.1)."""

    def __init__(self, ctx: NodeContext) -> None:
        super().__init__(ctx)
        self.labels = StreamLabels(1, balanced_period(self.d))

    def forward(self, message: Any) -> None:
        rel = self.ctx.node ^ message[0]
        if self.by_label:
            self.prio.add(message, message[2], balanced_plan(rel, self.d))
        else:
            self.fifo.add(message, balanced_children(rel, self.d))

    def originate(self, seq: int, slot: int) -> None:
        d, me = self.d, self.ctx.node
        if self.by_label:
            label = self.labels.next(0, slot)
            self.prio.add((me, seq, label), label, balanced_plan(0, d))
        else:
            self.fifo.add((me, seq), balanced_children(0, d))


def balanced_theory(setup: Setup) -> dict[str, Any]:
    """§4.3.1 beside the run: (12), the light-traffic D and Proposition 2's bound
    (:func:`.theory.balanced_metrics`)."""
    return theory.balanced_metrics(setup.topology.d, setup.params.rho)


SCHEME = make_scheme(
    "bcast-balanced",
    "non-idling direct broadcast on 2^d translations of a balanced tree, label priority (§4.3.1)",
    BalancedNode,
    params=discipline_params("label", "per-port queue: label (§4.3.1 priority) or fifo (for comparison)",
                             "fifo only: order of one slot's arrivals, hops (more hops first) or inport"),
    theory=balanced_theory,
    claims=lambda setup, th: delay_bound_claims(th),
    stability="stable for ρ below (12), ((2^d−1)/d)/⌈(2^d−1)/d⌉ (0.9932 at d = 10) under the label priority (§4.3.1)",
)
