"""Many-to-one packet routing on meshes (Mansour & Patt-Shamir).

Source: Y. Mansour and B. Patt-Shamir, "Many-to-one packet routing on grids" (the seed
paper). All four schemes run on ``mesh:`` topologies of dimension 1 to 3, any sides
(rec_route and bfs_route split a side s into ⌈s/2⌉ and ⌊s/2⌋: :mod:`._embed`), until
quiescence, with the instance from ``--param instance=FILE`` or ``--param workload=...
seed=S``.

Schemes, one module each (record, node rule, prepare, theory beside the run):

* :mod:`.greedy` -- ``m2o-greedy``, the baseline: dimension-order shortest paths, one
  FIFO (or farthest-first) queue per out-port;
* :mod:`.rec` -- ``m2o-rec``, rec_route of §4 carried out locally, reproducing the pure
  reference :func:`._rec_reference.reference_run` step for step;
* :mod:`.bfs` -- ``m2o-bfs``, §5's bfs_route with load balancing (Theorem 5.1) and time
  multiplexing over the distance classes;
* :mod:`.offline` -- ``m2o-offline``, CENTRALISED: the §3 schedule computed in
  ``prepare`` and replayed by the nodes as a precomputed plan.

All four run under every fault kind: a node that misses what its schedule expects, or
gets what it does not, handles it locally and goes on; the reporter accounts for every
packet and reports the damage beside the books.

Shared by them: :mod:`.reporter` (metrics and invariants, fault books); :mod:`._inputs`
(params, instance parsing, mesh checks, the record fields and safety caps); :mod:`._embed`
(§4's partition of any side, as a virtual mesh of power-of-two sides); :mod:`._engine` (the node base: buffer
accounting, and the engine that runs local programs written as generators,
time-multiplexed, and handles what faults do to their schedules).

Pure, network-free parts:

* :mod:`.instances` -- the instance record (§2: at most one packet per source), JSON
  instance files, the workload generators and their ``--param workload=`` strings;
* :mod:`.theory` -- D_I, W_I (exact over all boxes), the lower bound of Theorem 2.1 in
  exact form, the time and space bounds of Theorems 1.1-1.3, Theorem 5.1 and §5's
  average-delay lower bound;
* :mod:`._rec_route` -- §4's rec_route: the hierarchical partition, the linearised
  address of Definition 4.1, h(l), the fixed phase durations and every node's local rules;
* :mod:`._rec_reference` -- a pure step-by-step reference execution of rec_route that
  checks Lemma 4.3;
* :mod:`._bfs_route` -- §5's bfs_route: distance classes, line balancing (Theorem 5.1)
  and the phase windows;
* :mod:`._offline_schedule` -- centralised: the offline schedule of §3 (paths from a
  max-flow, Theorem 3.1), timed greedily and verified.

``slotnet repro mansour`` is :mod:`.repro`.
"""

from __future__ import annotations

from .bfs import SCHEME as BFS
from .greedy import SCHEME as GREEDY
from .offline import SCHEME as OFFLINE
from .rec import SCHEME as REC
from .repro import EXPERIMENTS

__all__ = ["EXPERIMENTS", "SCHEMES"]

SCHEMES = (GREEDY, REC, BFS, OFFLINE)
