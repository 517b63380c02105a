"""Progress lines on stderr for long runs and reproductions attached to a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "RunsProgress"]


class Progress:
    """Shows ``slot i/N``, the time elapsed and about how long is left, once a run has taken
    more than ``after`` seconds (the estimate: the mean time per slot so far times the slots left;
    a one-shot task may end before its last slot)."""

    def __init__(self, total: int, stream: TextIO | None = None, after: float = 2.0, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.after = after
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False
        #: the user asked the run to stop (Ctrl-C): it ends after the slot it is in, with its result
        self.stop_requested = False

    def request_stop(self) -> None:
        """End the run after the slot it is in; the result covers the slots run."""
        self.stop_requested = True

    def update(self, slot: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.after or now - self._last < 0.25:
            return
        self._last = now
        self._shown = True
        self.stream.write("\r" + self.line(slot, now - self.start))
        self.stream.flush()

    def line(self, slot: int, elapsed: float) -> str:
        """The progress line after ``slot`` closed, ``elapsed`` seconds into the run.

        Example:
            >>> Progress(100, enabled=False).line(24, 10.0)
            '[#######                       ] slot 25/100, 0:10 elapsed, about 0:30 left'
        """
        done = slot + 1
        width = 30
        bar = "#" * int(done / self.total * width)
        left = f", about {_clock(elapsed / done * (self.total - done))} left" if done < self.total else ""
        return f"[{bar:<{width}}] slot {done}/{self.total}, {_clock(elapsed)} elapsed{left}"


    def close(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class RunsProgress:
    """``runs done/total, elapsed, about T left`` on stderr for a batch of runs (``slotnet repro``).

    Drawn only on a terminal (or when ``enabled``), redrawn as each run finishes; runs are
    added as an experiment submits them, so the total can grow. The estimate is the mean
    time per finished run times the runs left (runs differ in length: a guide, not a promise).
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.total = 0
        self.finished = 0
        self._width = 0

    def add(self, n: int) -> None:
        """``n`` more runs were submitted."""
        self.total += n
        self._draw()

    def done(self) -> None:
        """One more run finished."""
        self.finished += 1
        self._draw()

    def line(self) -> str:
        """The progress line as it is drawn now."""
        elapsed = time.monotonic() - self.start
        left = ""
        if 0 < self.finished < self.total:
            left = f", about {_clock(elapsed / self.finished * (self.total - self.finished))} left"
        width = 20
        bar = "#" * int(width * self.finished / self.total) if self.total else ""
        return f"[{bar:<{width}}] runs {self.finished}/{self.total}, {_clock(elapsed)} elapsed{left}"

    def _draw(self) -> None:
        if not self.enabled:
            return
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        """Erase the line (before other output); the next update draws it again."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def close(self) -> None:
        self.clear()
