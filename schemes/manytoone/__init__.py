"""Many-to-one packet routing on meshes (Mansour & Patt-Shamir).

Source: Y. Mansour and B. Patt-Shamir, "Many-to-one packet routing on grids" (the seed
paper). Pure, network-free parts:

* :mod:`.instances` -- the instance record (§2: at most one packet per source), JSON
  instance files, the workload generators and their ``--param workload=`` strings;
* :mod:`.theory` -- D_I, W_I (exact over all boxes), the lower bound of Theorem 2.1 in
  exact form, the time and space bounds of Theorems 1.1-1.3, Theorem 5.1 and §5's
  average-delay lower bound;
* :mod:`._rec` -- §4's rec_route: the hierarchical partition, the linearised address of
  Definition 4.1, h(l), the fixed phase durations, every node's local rules, and a pure
  step-by-step reference execution that checks Lemma 4.3;
* :mod:`._bfs` -- §5's bfs_route: distance classes, line balancing (Theorem 5.1) and
  the phase windows;
* :mod:`._offline` -- centralised: the offline schedule of §3 (paths from a max-flow,
  Theorem 3.1), timed greedily and verified.

Schemes (node rules): :mod:`.routing` (``m2o-greedy``, ``m2o-rec``, ``m2o-bfs``,
``m2o-offline``); ``slotnet repro mansour`` is :mod:`.repro`.
"""

from __future__ import annotations

from .repro import EXPERIMENTS
from .routing import SCHEMES

__all__ = ["EXPERIMENTS", "SCHEMES"]
