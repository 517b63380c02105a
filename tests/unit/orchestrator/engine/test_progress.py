"""The progress lines (``orchestrator/engine/_progress.py``) unit by unit.

Each test pins a behaviour exactly (messages, keys, boundaries on both sides), so that a
changed line fails here in seconds (``docs/development.md``, "Mutation testing").
"""

from __future__ import annotations

import io

import pytest

from slotnet.orchestrator.engine import _progress
from slotnet.orchestrator.engine._progress import Progress, RunsProgress, _clock

# ------------------------------------------------------------------ progress lines


class _Clock:
    def __init__(self, t: float = 100.0) -> None:
        self.t = t

    def monotonic(self) -> float:
        return self.t


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(_progress, "time", c)
    return c


def test_progress_enabled_follows_the_terminal(clock):
    assert Progress(10, stream=_Tty()).enabled is True
    assert Progress(10, stream=io.StringIO()).enabled is False
    assert Progress(10, stream=io.StringIO(), enabled=True).enabled is True
    assert Progress(10, stream=_Tty(), enabled=False).enabled is False
    p = Progress(10, stream=io.StringIO())
    assert (p.total, p.after, p.start, p._last, p._shown) == (10, 2.0, 100.0, 0.0, False)


def test_progress_default_stream_is_stderr(clock, monkeypatch):
    err = _Tty()
    monkeypatch.setattr(_progress.sys, "stderr", err)
    p = Progress(4)
    assert p.stream is err and p.enabled is True
    r = RunsProgress()
    assert r.stream is err and r.enabled is True


def test_progress_draws_after_the_delay(clock):
    out = io.StringIO()
    p = Progress(10, stream=out, enabled=True)
    clock.t = 101.99
    p.update(0)
    assert out.getvalue() == "" and p._shown is False
    clock.t = 102.0
    p.update(2)
    assert out.getvalue() == "\r[#########                     ] slot 3/10, 0:02 elapsed, about 0:05 left"
    assert p._shown is True and p._last == 102.0
    clock.t = 102.24
    p.update(3)
    assert out.getvalue().count("\r") == 1
    clock.t = 102.25
    p.update(9)
    assert out.getvalue().endswith("\r[##############################] slot 10/10, 0:02 elapsed")
    p.close()
    assert out.getvalue().endswith("\r" + " " * 80 + "\r")


def test_progress_custom_delay_and_disabled(clock):
    out = io.StringIO()
    p = Progress(3, stream=out, after=0.5, enabled=True)
    clock.t = 100.5
    p.update(0)
    assert out.getvalue() == "\r[##########                    ] slot 1/3, 0:01 elapsed, about 0:01 left"
    out = io.StringIO()
    p = Progress(3, stream=out, enabled=False)
    clock.t = 200.0
    p.update(1)
    p.close()
    assert out.getvalue() == ""


def test_progress_close_without_drawing_writes_nothing(clock):
    out = io.StringIO()
    Progress(3, stream=out, enabled=True).close()
    assert out.getvalue() == ""


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0:00"), (0.49, "0:00"), (0.5, "0:01"), (59.4, "0:59"), (59.5, "1:00"), (61, "1:01"),
    (3599, "59:59"), (3599.5, "1:00:00"), (3600, "1:00:00"), (3661, "1:01:01"), (36000 + 600 + 5, "10:10:05"),
])
def test_clock(seconds, text):
    assert _clock(seconds) == text


def test_runs_progress_line(clock):
    r = RunsProgress(stream=io.StringIO())
    assert (r.total, r.finished, r._width, r.start, r.enabled) == (0, 0, 0, 100.0, False)
    assert r.line() == "[                    ] runs 0/0, 0:00 elapsed"
    r.add(4)
    clock.t = 110.0
    assert r.line() == "[                    ] runs 0/4, 0:10 elapsed"
    r.done()
    assert r.line() == "[#####               ] runs 1/4, 0:10 elapsed, about 0:30 left"
    r.done()
    r.done()
    clock.t = 130.0
    assert r.line() == "[###############     ] runs 3/4, 0:30 elapsed, about 0:10 left"
    r.done()
    assert r.line() == "[####################] runs 4/4, 0:30 elapsed"
    r.add(1)
    assert r.line() == "[################    ] runs 4/5, 0:30 elapsed, about 0:08 left"


def test_runs_progress_draws_and_clears(clock):
    out = io.StringIO()
    r = RunsProgress(stream=out, enabled=True)
    r.clear()
    assert out.getvalue() == ""
    r.add(2)
    first = "[                    ] runs 0/2, 0:00 elapsed"
    assert out.getvalue() == "\r" + first and r._width == len(first)
    clock.t = 170.0
    r.done()
    second = "[##########          ] runs 1/2, 1:10 elapsed, about 1:10 left"
    assert out.getvalue() == "\r" + first + "\r" + second and r._width == len(second)
    r.done()
    third = "[####################] runs 2/2, 1:10 elapsed"
    assert out.getvalue().endswith("\r" + third.ljust(len(second)))
    out.seek(0)
    out.truncate()
    r.close()
    assert out.getvalue() == "\r" + " " * len(third) + "\r" and r._width == 0
    r.clear()
    assert out.getvalue() == "\r" + " " * len(third) + "\r"


def test_runs_progress_disabled_writes_nothing(clock):
    out = io.StringIO()
    r = RunsProgress(stream=out, enabled=False)
    r.add(3)
    r.done()
    r._width = 5
    r.clear()
    r.close()
    assert out.getvalue() == "" and r.total == 3 and r.finished == 1
