"""pmnb's placement bounds at scale: the slab cut bound from prefix sums equals the box bound."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from slotnet.schemes.pmnb._theory_exchange import _active_array, _box_bound, _slab_bound, cut_bound


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_slab_cut_bound_equals_the_box_bound_over_slabs(data):
    """The prefix-sum slab bound (used past ``max_boxes``) gives exactly the box bound restricted to slabs."""
    wrap = data.draw(st.booleans())
    sides = tuple(data.draw(st.lists(st.integers(3 if wrap else 2, 7), min_size=1, max_size=3)))
    n = math.prod(sides)
    ids = data.draw(st.sets(st.integers(0, n - 1), max_size=n))
    task = data.draw(st.sampled_from(["broadcast", "personalised"]))
    integral = data.draw(st.booleans())
    k = data.draw(st.integers(0, len(sides) - 1))
    a = _active_array(ids, sides)
    assert _slab_bound(a, sides, wrap, task, integral, k) == _box_bound(
        a, sides, wrap, task, integral, [j == k for j in range(len(sides))])


def test_the_slab_fallback_is_a_lower_bound_of_the_full_box_search():
    """Past max_boxes only nodes and slabs are tried: never more than the full search, and equal to it
    on the half-plane placement, whose bisection is the worst box."""
    sides, wrap = (6, 6), False
    half = [v for v in range(36) if v % 6 < 3]
    for task in ("broadcast", "personalised"):
        full = cut_bound(half, sides, wrap, task, integral=True)
        slabs = cut_bound(half, sides, wrap, task, integral=True, max_boxes=1)
        assert slabs <= full
    assert cut_bound(half, sides, wrap, "personalised", integral=True, max_boxes=1) == cut_bound(
        half, sides, wrap, "personalised", integral=True)
