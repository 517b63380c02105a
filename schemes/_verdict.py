"""When a row outside the paper's agreement is ``known``: its explanation must account for the gap.

A row's note may explain why the simulation (or the model) sits outside the paper's
agreement: a slip in the paper, a model that does not hold there. Such a note is an
:class:`Explanation`: its text, and the value range the explanation predicts (the
corrected value, or a one-sided bound where the explanation gives a direction only).
:func:`judge_gap` calls the row ``known`` only when its value lies within the row's own
agreement of that range; otherwise, or when the note names no range, the row is
``OUTSIDE``, with how far it is from the corrected value.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

__all__ = ["Explanation", "judge_gap"]


class Explanation(str):
    """A row's note that explains a gap, with the range of values the explanation predicts.

    A ``str`` (the note's text, as the reports print it) that also carries ``low`` and
    ``high``: the explanation accounts for the row's value when it lies in
    ``[low, high]`` (give ``corrected`` for a single value; ``-inf``/``inf`` for a
    direction only).

    Example:
        >>> e = Explanation("Prop. 5 counts 3 slots for one", corrected=26.0)
        >>> str(e), e.low, e.high
        ('Prop. 5 counts 3 slots for one', 26.0, 26.0)
        >>> Explanation("the model is low here", low=9.5).high
        inf
    """

    low: float
    high: float

    def __new__(cls, text: str, *, corrected: float | None = None, low: float | None = None,
                high: float | None = None) -> Explanation:
        self = super().__new__(cls, text)
        if corrected is not None:
            low = high = corrected
        self.low = -math.inf if low is None else float(low)
        self.high = math.inf if high is None else float(high)
        if math.isnan(self.low) or math.isnan(self.high) or self.low > self.high:
            raise ValueError(f"an explanation's range must be low <= high, got [{self.low}, {self.high}]")
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (str(self), self.low, self.high))

    def with_text(self, text: str) -> Explanation:
        """The same range with another text (e.g. a sentence added)."""
        return Explanation(text, low=self.low, high=self.high)

    def distance(self, value: float) -> float:
        """How far ``value`` lies outside ``[low, high]`` (0 inside)."""
        return max(self.low - value, value - self.high, 0.0)

    def describe(self) -> str:
        """The range in words: ``26``, ``at least 9.5``, ``between 1 and 2``."""
        if self.low == self.high:
            return f"{self.low:.4g}"
        if self.high == math.inf:
            return f"at least {self.low:.4g}"
        if self.low == -math.inf:
            return f"at most {self.high:.4g}"
        return f"between {self.low:.4g} and {self.high:.4g}"


def _rebuild(text: str, low: float, high: float) -> Explanation:
    return Explanation(text, low=low, high=high)


class _Judged(Protocol):
    sim: float | None
    theory: float | None
    note: str


def judge_gap(row: _Judged, reference: str, off: float, allowed: float) -> str:
    """The verdict of a row ``off`` from its ``reference`` ("paper" or "theory"), more than ``allowed``.

    ``known: <note>`` when the note is an :class:`Explanation` whose range holds the
    row's value (the simulation, or the model in a model row) within ``allowed``;
    otherwise ``OUTSIDE: <by how much>``, naming the explanation's corrected value and
    how far the row is from it when there is one.

    Example:
        >>> class R:
        ...     sim, theory = 26.0, 27.5
        ...     note = Explanation("Prop. 5 over-counts", corrected=26.05)
        >>> judge_gap(R(), "theory", 1.5, 0.1)
        'known: Prop. 5 over-counts'
        >>> R.note = Explanation("Prop. 5 over-counts", corrected=24.0)
        >>> judge_gap(R(), "theory", 1.5, 0.1)
        'OUTSIDE: off the theory by 1.5 > 0.1 allowed; the note explains only the gap to 24, and the row is 2 from that'
    """
    outside = f"OUTSIDE: off the {reference} by {off:.4g} > {allowed:.4g} allowed"
    note = row.note
    if not note:
        return outside
    if not isinstance(note, Explanation) and not (hasattr(note, "distance") and hasattr(note, "describe")):
        # (by its methods too: the same class imported under another module name is still an explanation)
        return f"{outside}; its note names no corrected value"
    value = row.sim if row.sim is not None else row.theory
    if value is None:
        return outside
    gap = note.distance(value)
    if gap <= allowed:
        return f"known: {note}"
    return f"{outside}; the note explains only the gap to {note.describe()}, and the row is {gap:.4g} from that"
