"""The engine: what one run needs, in one process or as the coordinator of shards.

``_spec`` (run specs, validated), ``_driver`` (the one-process slot loop), ``_network``
(the nodes, contexts and transport of a run or of one shard), ``_observer`` (how events
reach the reporter; the slot-close sequence), ``_collect`` (the result from the end-of-run
state), ``_completion`` (a one-shot task's termination), ``_verdict`` (the one verdict
on a run), ``_invariants``, ``_stability``, ``_result``, ``_trace`` (the trace
writer), ``_memory``, ``_gc``, ``_progress``. The engine imports nothing of the shard
room or the tools.
"""

from ._verdict import Verdict, verdict

__all__ = ["Verdict", "verdict"]
