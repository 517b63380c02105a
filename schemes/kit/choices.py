"""Random choices a scheme declares, and the goodness-of-fit test the observer puts them to.

A node that makes a random choice the scheme's analysis rests on (which of the d trees a
broadcast takes, a packet's destination, how many packets arrive in a slot) records the
outcome with ``ctx.record_choice(name, value)`` -- after drawing it: recording draws nothing
from the node's random stream, so a seeded run is the same with or without it. The scheme
declares each choice's distribution in its record (``Scheme.choices``: ``setup -> {name:
Distribution}``).

The observer counts the outcomes of each choice over every node and, in a fault-free run
with enough of them, tests the counts against the declared distribution with Pearson's
chi-square test: cells whose expected count is below :data:`MIN_EXPECTED` are pooled (a
discrete distribution's tail into one cell), and the test needs at least two cells and
:data:`MIN_EXPECTED` expected outcomes in each. A run with too few outcomes, or with a fault
in its schedule (a crash changes who draws), reports the counts, not judged.

Significance: the run fails when the p-value is below :data:`SIGNIFICANCE` (1e-6). A rule
that draws from the declared distribution therefore fails a run with probability at most
1e-6 per declared choice (the false-alarm rate: about one run in a million, per choice); a
rule that draws from another distribution is caught once the run holds enough outcomes for
the difference to show (e.g. always taking one of 4 trees: 100 outcomes give chi-square 300,
p ~ 1e-64).

Example:
    >>> round(chi_square_sf(3.84, 1), 3)
    0.05
    >>> Uniform(range(4)).cells(100)
    [(0, 25.0), (1, 25.0), (2, 25.0), (3, 25.0)]
"""

from .._choices import (
    MIN_EXPECTED,
    SIGNIFICANCE,
    Binomial,
    Categorical,
    Distribution,
    Poisson,
    Uniform,
    chi_square_sf,
    goodness_of_fit,
)

__all__ = [
    "MIN_EXPECTED",
    "SIGNIFICANCE",
    "Binomial",
    "Categorical",
    "Distribution",
    "Poisson",
    "Uniform",
    "chi_square_sf",
    "goodness_of_fit",
]
