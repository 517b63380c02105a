"""Combinatorial helpers for the broadcast schemes of Stamoulis & Tsitsiklis.

Source: G. D. Stamoulis and J. N. Tsitsiklis, "Efficient routing schemes for multiple
broadcasts in hypercubes" (cited as "the paper", sections as §x.y).  Pure Python plus
numpy (for whole-table views only); every per-packet lookup is a few bit operations on the
*relative address* ``rel = node ^ origin`` (or ``node ^ root``) with small ``lru_cache``s,
so a node can call them inside its per-slot rule.

Conventions: node ids ``0 .. 2**d - 1``; code dimension ``k`` (0-based) is the paper's
``k + 1`` and flips bit ``k``; code tree index ``j`` (0-based) is the paper's ``j + 1``.
Slots are ``t = 0, 1, 2, ...``; a packet sent in slot ``t`` is at the receiver at the end
of ``t`` and can leave it in slot ``t + 1`` at the earliest; a packet generated during
slot ``t`` (arrivals occur just before the end of a slot, §2.1.1(b)) can leave in slot
``t + 1`` at the earliest.

Contents:

* §2.2.2 completely unbalanced trees (any order): :func:`unbalanced_children`,
  :func:`unbalanced_parent_dim`; the ``j``-th tree of §4.2.2 (order ``j, ..., d-1, 0, ...,
  j-1``): :func:`dtree_order`, :func:`dtree_children`, :func:`dtree_parent_dim`.
* §4.2.2 periodic schedule, period ``2**d - 1`` (exactly ``Δ``, every arc busy every
  slot): :func:`dtree_sends`, :func:`dtree_crossing_slot`, :func:`periodic_schedule`.
* §4.3.1 labels and label priority: :func:`first_label`, :func:`next_label`,
  :func:`label_sequence`, :func:`period_start_slot`, :func:`dtree_priority`,
  :func:`balanced_priority`.
* §4.3.1 balanced prototype tree and its schedule of length ``⌈(2^d - 1)/d⌉``:
  ``balanced_*`` (see ``_balanced.py`` for how it relates to [BOSTT89]).
* §5.1 Johnsson & Ho trees and the pure parts of Rules A-F: ``esbt_*``,
  :func:`upward_tree`, :func:`up_port`, :func:`down_ports`, :func:`port_plan`,
  :func:`slot_class`, :func:`root_buffer`, :func:`virtual_arcs`,
  :func:`rule_f_start_slots`, :func:`broadcast_hop_slots`, :func:`reoriented_ports`.

Direct schemes in local terms (§4.3)
------------------------------------
Node ``x`` holding a packet with origin ``o`` (and, for §4.3.2, tree ``j`` drawn uniformly
at ``o`` when the packet is generated) must send it once on each dimension of
``dtree_children(x ^ o, j, d)`` (§4.3.2) or ``balanced_children(x ^ o, d)`` (§4.3.1).
The origin stamps the label ``l = next_label(l_prev, tau, P)`` (``first_label`` for the
stream's first packet), where the stream is the origin's packets (§4.3.1, ``P =
balanced_period(d)``) or the origin's packets of tree ``j`` (§4.3.2, ``P = 2**d - 1``), and
``tau = t + 1`` for a packet generated in slot ``t``.  In every slot each output port
sends, among the packets at the node that still need it, the one with the smallest
``balanced_priority(l, x ^ o, k, d)`` or ``dtree_priority(l, x ^ o, j, k, d)``; it idles
only if none needs it.  The periodic versions (§§4.2.1, 4.2.2) instead send exactly what
``balanced_sends(x, t, d)`` / ``dtree_sends(x, t, d)`` prescribe, the packet of label
``l`` in the slots of period ``l`` (null packets for missing ones).

Rules A-F in local terms (§§5.2, 5.4, 5.5.2, 5.6)
-------------------------------------------------
Notation: node ``z``; tree ``j`` (paper ``T^(j+1)``), root ``r_j = 1 << j``; port ``i`` is
the arc ``(z, z ^ (1 << i))``; ``k = popcount(origin ^ r_j)`` is the Hamming distance of
a packet's origin from its root.  Slot ``t`` is in class ``slot_class(t) = t mod 3``:
``C0`` carries root-bound traffic, ``C1 ∪ C2`` carry broadcasts (Rule C).

Static tables, computed once per node from ``z`` alone:

* ``DOWN[i], UP[i] = port_plan(z, d)[i]``: ``DOWN[i]`` is the tree containing arc
  ``(z, z ^ e_i)``, whose *broadcasts* use port ``i`` in ``C1 ∪ C2`` (``None`` iff
  ``z == 0``: arcs ``(0, e_i)`` are in no tree); ``UP[i]`` is the tree containing the
  reverse arc, whose *root-bound* packets use port ``i`` in ``C0`` (``None`` iff
  ``z == r_i``).
* per tree ``j``: ``up_port(z, j, d)`` (``None`` iff ``z == r_j``) and
  ``down_ports(z, j, d)`` (all ``d`` ports iff ``z == r_j``; empty for a leaf of tree
  ``j``).  For ``z`` not a root, ``j -> up_port`` is a bijection onto the ports; the down
  ports of different trees are disjoint.  So in each slot class each port belongs to at
  most one tree, and packets of different trees never compete (§5.4).

State: per tree ``j``, a FIFO ``V[j]`` of own packets before their virtual arcs and the
packets in transit on them; per tree ``j`` with ``z != r_j``, a FIFO ``U[j]`` of root-bound
packets waiting for port ``up_port(z, j, d)``; per tree ``j``, at most one broadcast packet
``H[j]`` waiting to be forwarded.  At a root ``z = r_j`` also FIFOs ``L1``, ``L2`` (before
virtual arcs ``l1``, ``l2``) and unit buffers ``B1``, ``B2`` (Rule E).

* **Rule A (choose a tree).**  A packet generated at ``z`` in slot ``t`` draws ``j``
  uniformly from ``0 .. d-1``, independently of everything else, and carries
  ``(origin=z, tree=j)``.  With ``v = virtual_arcs(z, j, d, rule)`` it is appended to
  ``V[j]`` if ``v > 0``, else (only when ``k == d``, so ``z != r_j``) to ``U[j]``,
  eligible from slot ``t + 1`` (i.e. from the first ``C0`` slot after ``t``).  Roots
  obey the same rules; a root's packet may be sent to another root.
* **Rule D (virtual arcs; C0 only).**  In each ``C0`` slot ``c`` the head of ``V[j]``
  (if any, and generated before slot ``c``) enters the tandem of ``v`` virtual arcs of
  ``(z, j)``: it crosses one per ``C0`` slot, in slots ``c, c+3, ..., c+3(v-1)``, never
  waiting (one packet enters per ``C0`` slot); at the end of slot ``c + 3(v-1)`` it is
  appended to ``U[j]``, or to ``L2`` if ``z == r_j``, eligible from slot ``c + 3v``.
  Rule D: ``v = d - k``, so every
  root-bound path has exactly ``d`` arcs, actual plus virtual.  **Rule D′** (§5.5.2):
  ``v = 1`` if ``k < d`` and ``v = 0`` if ``k == d``; everything else is unchanged
  (``l1``, ``l2`` stay).  Tandems of different trees are distinct, even at one node.
* **Rules B and C (root-bound hops; C0 only).**  In each ``C0`` slot, for each port ``i``
  with ``m = UP[i]`` not ``None`` and ``U[m]`` non-empty, ``z`` sends the head of ``U[m]``
  on port ``i`` (the reverse of the ``T^(m)`` arc into ``z``).  The receiver
  ``w = z ^ e_i`` appends it to its ``U[m]`` if ``w != r_m``; if ``w == r_m`` it appends
  it to ``L1`` when ``root_buffer(origin, m, d) == 1`` and to ``L2`` otherwise.  A packet
  appended at the end of slot ``c`` is eligible from slot ``c + 3``.  The paper requires
  only forwarding "as soon as possible" (its analysis, via Lemma 3, holds for any
  work-conserving order); we fix FIFO, same-slot arrivals ordered by ascending incoming
  port, then packets leaving the node's own tandem (or fresh ones) last.  In ``C0`` a
  port idles iff ``UP[i]`` is ``None`` or ``U[UP[i]]`` is empty; no broadcast moves.
* **Rule E (root buffers; C0 only).**  At ``r_j`` in each ``C0`` slot ``c``: the head of
  ``L1`` (if any) crosses ``l1`` and is in ``B1`` at the end of ``c``; independently the
  head of ``L2`` crosses ``l2`` into ``B2``.  ``L1`` is fed only through port
  ``(j+1) mod d`` (subtree ``T_1^(j)``, half of all origins), ``L2`` by the other
  ``d - 1`` ports and by ``r_j``'s own tandem (the other half).
* **Rule F (start broadcasts).**  At the end of ``C0`` slot ``c`` the root tosses a fair
  coin ``b``; ``rule_f_start_slots(c, B1 full, B2 full, b)`` gives the start slot
  (``c + 1`` or ``c + 2``) of each buffered packet: if both are full they take one slot
  each in coin order, a lone packet starts in the coin's slot.  Starting = sending on all
  ``d`` ports (``down_ports(r_j, j, d)``) and emptying the buffer.
* **Rule C (broadcast hops; C1 ∪ C2 only).**  A tree-``j`` broadcast packet received at
  the end of slot ``b`` is delivered and sent in slot ``next_broadcast_slot(b + 1)`` on
  every port of ``down_ports(z, j, d)`` (leaves send nothing).  Broadcasts never queue:
  at most one tree-``j`` broadcast is held per node (§5.4).  The node at depth ``h`` sends
  in ``broadcast_hop_slots(start, d)[h]``; the broadcast ends with the last of them.  In
  ``C1 ∪ C2`` port ``i`` idles iff no broadcast of tree ``DOWN[i]`` is due at ``z`` in
  this slot; node 0 never sends in ``C1 ∪ C2``.  (A node on the root-bound path sees the packet twice; only the
  first sighting is a delivery, but the broadcast copy is still forwarded.)

**Non-idling version (§5.6).**  The paper simulates a non-idling scheme "without any
redundant transmissions" (§5.5.1): Rule A is kept; Rules C, D/D′, E, F and the detour to
the root are dropped (no slot classes, virtual arcs, ``l1``/``l2``, ``B1``/``B2`` or
coin).  The packet of ``y`` on tree ``j`` is broadcast along ``T^(j)`` re-rooted at
``y``: every node ``z`` holding it sends it once on each port of
``reoriented_ports(z, y, j, d)`` (reversed tree arcs up to ``r_j``, tree arcs
elsewhere; ``2**d - 1`` transmissions).  Every port sends one waiting packet in every slot
and idles only if none waits; packets of the tree ``DOWN[i]`` (downwards) and of ``UP[i]``
(upwards) now compete for port ``i``.  The paper gives no contention rule; we choose FIFO
per port by slot of arrival at ``z``, ties by generation slot, then origin, then tree.
§5.6 also mentions merely "relaxing Rule C" (Rule B kept, root broadcasts at once, no
virtual arcs; zero-load delay ``3d/2``): the same rules as above without slot classes,
virtual arcs or buffers: root-bound hops as in Rule B, the root sending each arriving
packet on all ``d`` ports from the first slot after arrival (FIFO), every node forwarding
broadcasts as soon as the port is free, with the port contention rule just given.
"""

from __future__ import annotations

from ._balanced import (
    balanced_children,
    balanced_crossing_slot,
    balanced_dimension_counts,
    balanced_parent_dim,
    balanced_period,
    balanced_priority,
    balanced_schedule,
    balanced_sends,
)
from ._binomial import (
    SlotClass,
    broadcast_hop_slots,
    down_ports,
    esbt_arc_tree,
    esbt_children,
    esbt_order,
    esbt_parent_dim,
    esbt_root,
    esbt_subtree,
    next_broadcast_slot,
    next_c0_slot,
    port_plan,
    reoriented_ports,
    root_buffer,
    rule_f_start_slots,
    slot_class,
    up_port,
    upward_tree,
    virtual_arcs,
)
from ._unbalanced import (
    dtree_children,
    dtree_crossing_slot,
    dtree_order,
    dtree_parent_dim,
    dtree_period,
    dtree_priority,
    dtree_sends,
    first_label,
    label_sequence,
    next_label,
    period_start_slot,
    periodic_schedule,
    unbalanced_children,
    unbalanced_parent_dim,
)

__all__ = [
    # §2.2.2, §4.2.2
    "unbalanced_children",
    "unbalanced_parent_dim",
    "dtree_order",
    "dtree_children",
    "dtree_parent_dim",
    "dtree_period",
    "dtree_crossing_slot",
    "dtree_sends",
    "periodic_schedule",
    # §4.3.1 labels
    "first_label",
    "next_label",
    "label_sequence",
    "period_start_slot",
    "dtree_priority",
    "balanced_priority",
    # §4.3.1 balanced tree
    "balanced_period",
    "balanced_parent_dim",
    "balanced_children",
    "balanced_crossing_slot",
    "balanced_sends",
    "balanced_dimension_counts",
    "balanced_schedule",
    # §5
    "esbt_root",
    "esbt_order",
    "esbt_children",
    "esbt_parent_dim",
    "esbt_subtree",
    "esbt_arc_tree",
    "upward_tree",
    "up_port",
    "down_ports",
    "port_plan",
    "SlotClass",
    "slot_class",
    "next_c0_slot",
    "next_broadcast_slot",
    "broadcast_hop_slots",
    "root_buffer",
    "virtual_arcs",
    "rule_f_start_slots",
    "reoriented_ports",
]
