"""A progress line on stderr for long runs attached to a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Shows ``slot i/N`` once a run has taken more than ``after`` seconds."""

    def __init__(self, total: int, stream: TextIO | None = None, after: float = 2.0, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.after = after
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def update(self, slot: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.after or now - self._last < 0.25:
            return
        self._last = now
        self._shown = True
        frac = (slot + 1) / self.total
        width = 30
        bar = "#" * int(frac * width)
        self.stream.write(f"\r[{bar:<{width}}] slot {slot + 1}/{self.total} {now - self.start:6.1f}s")
        self.stream.flush()

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * 70 + "\r")
            self.stream.flush()
