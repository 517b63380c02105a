"""Scheme parameters given through the API or the CLI: any bad value is one SchemeError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import slotnet
from slotnet.errors import SchemeError

#: values the API lets a user pass where the CLI would pass text
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8),
    st.tuples(st.floats(), st.integers()), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.binary(max_size=4),
)
PARAMS = [(s.name, p) for s in slotnet.SCHEMES.values() for p in s.params]


@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("scheme, param", PARAMS, ids=[f"{s}:{p.name}" for s, p in PARAMS])
@given(value=ODD_VALUES)
def test_any_value_is_accepted_or_refused_with_a_scheme_error(scheme, param, value):
    """Param.parse either returns a value or raises SchemeError naming the parameter, never anything else."""
    try:
        param.parse(value)
    except SchemeError as exc:
        assert str(exc).startswith(f"--param {param.name}="), exc
        assert str(exc).count(f"--param {param.name}=") == 1, exc


def test_a_tuple_where_text_is_expected_is_a_spec_error():
    """The review's reproduction: a schedule given as a tuple is refused before the run, naming the text form."""
    spec = slotnet.RunSpec("deflection", "hypercube:4", params={"schedule": ((6.0, 1),)}, slots=5)
    with pytest.raises(slotnet.SpecError, match=r"--param schedule=.*expected the text form"):
        slotnet.run(spec)
