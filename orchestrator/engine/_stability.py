"""Detecting runs whose queues grow without bound.

Two checks, both on the total backlog the scheme reports (packets waiting in node queues):

* a hard cap, checked every slot: past ``max_backlog_per_node * n_nodes`` the run is
  stopped at once (before it can exhaust memory) and reported unstable;
* a trend test over the measured window: the window is cut into 10 batches; the run is
  called unstable when the backlog grew in at least 8 of the 9 steps between batch
  means *and* the last batch mean exceeds the first by more than half a packet per
  node and by more than 50%. A stable queue fluctuates around a level; an unstable one
  climbs steadily, which this catches within a few hundred slots at loads past capacity.
  Over a window shorter than ``MIN_TREND_SLOTS`` a rising backlog cannot be told from the
  start-up transient of a network that began empty (a broadcast scheme fills for a few
  multiples of its delay), so there the verdict is ``None`` (undetermined), never
  "unstable"; the hard cap still applies.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MIN_TREND_SLOTS", "StabilityMonitor"]

#: measured slots below which a rising backlog is "undetermined" rather than "unstable"
MIN_TREND_SLOTS = 200


class StabilityMonitor:
    """Samples the backlog once per slot and judges stability."""

    def __init__(self, n_nodes: int, warmup: int, slots: int, max_per_node: float) -> None:
        self.n_nodes = n_nodes
        self.warmup = warmup
        self.slots = slots
        self.cap = max_per_node * n_nodes
        self.samples: list[int] = []
        self.stopped_at: int | None = None

    def sample(self, slot: int, backlog: int) -> bool:
        """Record the backlog at the end of ``slot``; False means stop now."""
        if slot >= self.warmup:
            self.samples.append(backlog)
        if backlog > self.cap:
            self.stopped_at = slot
            return False
        return True

    def verdict(self) -> dict[str, Any]:
        """``stable`` and the evidence for it."""
        n = self.n_nodes
        if self.stopped_at is not None:
            return {"stable": False, "reason": f"backlog exceeded {self.cap / n:g} packets per node",
                    "stopped_at_slot": self.stopped_at,
                    "final_backlog_per_node": (self.samples[-1] / n) if self.samples else None}
        s = self.samples
        k = 10
        if len(s) < 2 * k:
            return {"stable": True, "reason": "too few measured slots for a trend test", "batches": []}
        w = len(s) / k
        means = [sum(s[int(i * w):int((i + 1) * w)]) / max(1, int((i + 1) * w) - int(i * w)) / n for i in range(k)]
        ups = sum(1 for a, b in zip(means, means[1:]) if b > a)
        growth = means[-1] - means[0]
        unstable = ups >= 8 and growth > 0.5 and means[-1] > 1.5 * means[0]
        if unstable and len(s) < MIN_TREND_SLOTS:
            return {
                "stable": None,
                "reason": (f"undetermined: the backlog rose over {len(s)} measured slots, too few to tell "
                           f"growth from the start-up transient (at least {MIN_TREND_SLOTS} are needed)"),
                "batch_backlog_per_node": [round(m, 4) for m in means],
                "increasing_steps": ups,
            }
        return {
            "stable": not unstable,
            "reason": ("backlog grows steadily" if unstable else "backlog does not grow steadily"),
            "batch_backlog_per_node": [round(m, 4) for m in means],
            "increasing_steps": ups,
        }
