"""mutmut's hook (found on ``PYTHONPATH=devtools/mutation``): each mutant runs the tests of its own module.

mutmut calls :func:`pre_mutation` before it runs the tests of a mutant; the test command it
was given (``devtools/mutation/run_tests.py``) gets the mutated file's path, so the runner
picks that module's selection (``run_tests.selection``).
"""

from __future__ import annotations

from typing import Any


def pre_mutation(context: Any) -> None:
    context.config.test_command = f"{context.config.test_command} {context.filename}"
