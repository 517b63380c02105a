"""The kit's label priorities (``schemes/kit/_labels.py``, Stamoulis & Tsitsiklis §4.3.1) unit by unit.

Each test kills mutants that change behaviour and that no other fast test noticed
(``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from slotnet.schemes.kit._labels import StreamLabels, first_label, next_label

# ------------------------------------------------------------------ label priorities (§4.3.1)


def test_first_label_is_the_first_period_starting_at_or_after_tau():
    assert [first_label(t, 3) for t in (0, 1, 3, 4, 6, 7)] == [1, 2, 2, 3, 3, 4]
    assert [first_label(t, 3) for t in (0.5, 3.0, 3.5, Fraction(10, 3))] == [2, 2, 3, 3]
    assert first_label(Fraction(0), 5) == 1
    with pytest.raises(ValueError, match="tau must be >= 0, got -1"):
        first_label(-1, 3)


def test_next_label_is_the_later_of_the_next_and_the_first():
    assert next_label(2, 1, 3) == 3  # l + 1
    assert next_label(2, 9, 3) == 4  # ceil(9/3) + 1
    assert next_label(4, 9, 3) == 5


def test_stream_labels_run_one_recursion_per_stream():
    s = StreamLabels(2, period=3)
    assert [s.next(0, t) for t in (1, 1, 1, 9)] == [2, 3, 4, 5]
    assert [s.next(1, t) for t in (0, 0)] == [1, 2]  # stream 1 has its own
    assert s.period == 3
    for streams, period in ((0, 3), (1, 0)):
        with pytest.raises(ValueError, match="need streams >= 1 and period >= 1"):
            StreamLabels(streams, period)
    StreamLabels(1, 1)
