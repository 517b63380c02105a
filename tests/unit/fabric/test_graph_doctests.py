"""The examples in the graph modules' docstrings run as printed."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["slotnet.fabric._graph", "slotnet.fabric._graph_python", "slotnet.fabric._topology"])
def test_docstring_examples_run(module):
    """Every >>> example of the module gives the output its docstring shows."""
    failed, tried = doctest.testmod(importlib.import_module(module), verbose=False, report=False)
    assert tried > 0 and failed == 0
