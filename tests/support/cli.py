"""Calling the command line from a test: one helper for every test file that needs it."""

from __future__ import annotations

import pytest

from slotnet.orchestrator.cli import main


def call_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[object, str, str]:
    """Run ``slotnet ARGV`` in-process; return (exit code, stdout, stderr).

    A ``SystemExit`` (argparse's refusals) gives its code like a return would; whatever
    happens, stderr must not hold a traceback: a user never sees one.
    """
    try:
        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err
