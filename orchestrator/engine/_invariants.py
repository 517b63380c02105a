"""Invariants checked on every run, gathered into the result's ``invariants`` object.

* ``link_capacity``: no directed link carried more than one unit in a slot. The fabric
  refuses an oversend on the spot (a run with a violation ends with CapacityError), so
  a finished run has held it in every slot.
* the scheme's own invariants (conservation for unicast, exactly-once reception for
  broadcasts), each a dict with ``ok``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_invariants"]


def check_invariants(scheme_invariants: dict[str, Any]) -> dict[str, Any]:
    """Combine the fabric's and the scheme's invariants; ``ok`` is their conjunction."""
    out: dict[str, Any] = {"link_capacity": {"ok": True, "enforced": "every send"}}
    out.update(scheme_invariants)
    out["ok"] = all(v.get("ok", False) for k, v in out.items() if isinstance(v, dict))
    return out
