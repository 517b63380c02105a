"""Running a ``benchmarks/`` script from a test, and reading its printed table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def bench(script: str, *args: str) -> list[str]:
    """The lines ``benchmarks/script`` prints with ``args`` (it must exit 0)."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def row(lines: list[str], first: str) -> list[str]:
    """The fields of the one printed row whose first field is ``first``."""
    rows = [line.split() for line in lines if line.split()[:1] == [first]]
    assert len(rows) == 1, lines
    return rows[0]
