"""What Rules A-F give, slot by slot, next to Propositions 5-6 and Corollary 8 (§5.4, §5.5.2).

The paper's analysis collapses the ``d + 1`` root-bound servers of a tree (``d`` arcs,
actual or virtual, then ``l1``/``l2``) into an M/D/1 queue with synchronisation and
service time ``Δ = 3`` followed by ``d`` deterministic servers that each "last" 3 slots
(proof of Propositions 4 and 5, (29)-(30)), so ``R = W + 3d`` runs until 3 slots after
the ``l1``/``l2`` crossing *starts*.  Under Rules E and F as stated, the crossing takes
one ``C0`` slot ``t``, the packet is in ``B1``/``B2`` at the end of ``t`` and its broadcast
starts in slot ``t + 1`` or ``t + 2`` (fair coin), i.e. on average 1.5 slots *before*
``t + 3``.  V is the broadcast's duration from its start slot.  Hence, exactly (the
queueing term is the paper's, by Lemma 3):

* Rule D:  ``D = 1.5 + X + 3d + 1.5 + (3d - 1)/2 = (9/2) d + 5/2 + X``,
  Proposition 5 minus 3/2;
* Rule D′: ``D = 3d + 11/2 - 3/2^d + X``, Corollary 8 minus 3/2,

with ``X = 3ρ / (2[(2/3)(1 - 2^-d) - ρ])``.  The observer's D ends at the last *first*
reception (metrics, §1): for the ``1/2^d`` of packets whose origin is the tree's
depth-``d`` node (``k = d``), that node is the origin, so the broadcast is over for the
observer one hop (1 or 2 slots, 3/2 on average) before the tree's last hop; the mean D
measured is therefore lower by a further ``(3/2) 2^-d``.

Q (§4.3.3) is sampled at the start of every slot (a packet about to be sent counts).  A
packet born at ``τ`` is counted at one node in every slot from ``⌈τ⌉`` to the slot of its
``l1``/``l2`` crossing (mean ``E[t - τ] + 1/2 = 3d + 2 + X`` slot-counts), then by the root
until its start slot (mean 3/2) and by each of the ``2^(d-1) - 1`` other non-leaf nodes
of ``T^(j)`` for 1 or 2 slots (mean 3/2), so with ``λ = ρ d / (2^d - 1)`` per node:

* ``Q_r = λ (3d + 2 + X)`` (packets heading to the root, Rules B, D, E: virtual arcs,
  root-bound queues, ``L1``/``L2``);
* ``Q_b = λ (3/4) 2^d`` (packets under broadcast, ``B1``/``B2`` included) — exactly the
  paper's ``d N_b / 2^d`` of (33);
* Proposition 6 prints ``d N_r / 2^d = 3 λ R`` with ``R = 3d + 9/2 + X``: Little's law
  with the per-3-slot arrival probability ``3 (λ/d) 2^(d-1)`` used as a per-slot rate (see
  :func:`.theory.indirect_analysis`); the per-slot rate gives ``λ R``, and the slot model
  gives ``λ (R - 5/2)`` (2 slots of the last 3-slot server, 1/2 for sampling at slot
  starts).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._theory_indirect import indirect_delay, indirect_delay_rule_d_prime, indirect_excess

__all__ = ["QueuePieces", "queue_pieces", "slot_delay", "slot_queue"]

#: Prop. 5 / Cor. 8 count the l1/l2 crossing as a 3-slot service; the broadcast starts
#: on average 1.5 slots after the crossing slot begins instead of 3.
LAST_SERVER_OFFSET = 1.5


def slot_delay(d: int, rho: float, rule: str = "D") -> float:
    """Mean D the observer measures under Rules A-F (Rule ``"D"`` or ``"D'"``); see module doc.

    Returns:
        ``Prop. 5 (or Cor. 8) - 3/2 - (3/2) 2^-d``; ``math.inf`` at or above (28).
    """
    paper = indirect_delay(d, rho) if rule == "D" else indirect_delay_rule_d_prime(d, rho)
    return paper - LAST_SERVER_OFFSET - 1.5 * 2.0**-d


@dataclass(frozen=True)
class QueuePieces:
    """Q per node split as in (32): heading to the root (``r``) and under broadcast (``b``).

    Attributes:
        r_slot: ``λ (3d + 2 + X)``, what Rules B, D, E give in the slot model.
        r_paper_per_slot: ``λ R``, (34) with the per-slot arrival rate.
        r_paper_printed: ``3 λ R``, (34) as printed.
        b: ``λ (3/4) 2^d``, (33) (the slot model gives the same).
    """

    r_slot: float
    r_paper_per_slot: float
    r_paper_printed: float
    b: float


def queue_pieces(d: int, rho: float) -> QueuePieces:
    """The pieces of Q per node under Rule D (Prop. 6 and the slot model); see module doc."""
    n = (1 << d) - 1
    lam = rho * d / n
    x = indirect_excess(d, rho)
    r = 3.0 * d + 4.5 + x
    return QueuePieces(r_slot=lam * (3.0 * d + 2.0 + x), r_paper_per_slot=lam * r, r_paper_printed=3.0 * lam * r,
                       b=lam * 0.75 * 2.0**d)


def slot_queue(d: int, rho: float) -> float:
    """Mean Q per node under Rule D in the slot model: ``Q_r + Q_b`` (module doc)."""
    p = queue_pieces(d, rho)
    return p.r_slot + p.b
