"""A sharded run stopped by SIGTERM or SIGINT stops its shard processes and its private
mosquitto first: nothing it started is left running (issue #33, clean stops)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_ARGV = [sys.executable, "-m", "slotnet", "run", "deflection", "-t", "hypercube:8", "--offered", "1",
         "--slots", "100000", "--shards", "2", "--no-progress"]


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _children(pid: int) -> dict[int, str]:
    """The live child processes of ``pid``: pid -> command line (a /proc scan)."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        fields = _stat(int(d.name))
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields is not None and int(fields[1]) == pid and fields[0] != "Z":
            out[int(d.name)] = cmd
    return out


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _start(settle: float) -> tuple[subprocess.Popen[str], list[int], int]:
    """The coordinator, its two shards' pids and its mosquitto's pid, ``settle`` s after all are up."""
    co = subprocess.Popen(_ARGV, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = _children(co.pid)
        shards = [p for p, c in kids.items() if " shard " in c]
        broker = [p for p, c in kids.items() if "mosquitto" in c]
        if len(shards) == 2 and broker:
            time.sleep(settle)
            assert co.poll() is None, co.communicate()
            return co, shards, broker[0]
        time.sleep(0.05)
    co.kill()
    raise AssertionError("the shards did not start")


@pytest.mark.parametrize(("signum", "settle", "code", "says"), [
    (signal.SIGTERM, 4.0, 143, "slotnet run: stopped by SIGTERM: the run's shards and broker were stopped"),
    (signal.SIGINT, 4.0, 130, "slotnet run: interrupted"),
    (signal.SIGTERM, 0.0, 143, "slotnet run: stopped by SIGTERM: the run's shards and broker were stopped"),
], ids=["sigterm-mid-run", "sigint-mid-run", "sigterm-at-start"])
def test_a_signalled_sharded_run_leaves_nothing_running(signum, settle, code, says):
    """SIGTERM or SIGINT to the coordinator, mid-run or while its shards start: it exits with one
    line and the shell's status for the signal (143, 130), and its shards and its mosquitto are
    gone within a few seconds."""
    co, shards, broker = _start(settle)
    os.kill(co.pid, signum)
    _, err = co.communicate(timeout=30)
    assert co.returncode == code, err
    assert err.strip() == says, err
    deadline = time.monotonic() + 5
    while [p for p in [*shards, broker] if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in [*shards, broker] if _alive(p)], "a process the run started is still running"
