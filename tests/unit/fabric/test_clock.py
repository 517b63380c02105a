"""The slot clock (``fabric/_clock.py``) unit by unit.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

from slotnet.fabric import SlotClock

# ------------------------------------------------------------------ the clock


def test_the_clock_starts_at_slot_0():
    clock = SlotClock()
    assert clock.slot == 0
    clock.slot = 7
    assert clock.slot == 7
