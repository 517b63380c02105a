"""A sharded run whose shard dies, hangs or loses the broker stops within seconds with one
clear error and a non-zero exit, and leaves no process behind (issue #10)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_ARGV = [sys.executable, "-m", "slotnet", "run", "deflection", "-t", "hypercube:8", "--offered", "1",
         "--slots", "100000", "--shards", "2", "--no-progress"]


def _children(pid: int) -> dict[int, str]:
    """The live child processes of ``pid``: pid -> command line."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out[int(d.name)] = cmd
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _connected(broker_cmd: str) -> set[int]:
    """The shards that have connected to the run's private mosquitto, from its log (a busy
    machine may take seconds to start a shard's Python: until it connects it cannot beat)."""
    log = Path(broker_cmd.split("-c ")[1].strip()).with_name("mosquitto.log")
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return set()
    return {i for i in (0, 1) if f"-shard-{i} " in text or text.rstrip().endswith(f"-shard-{i}")}


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[str], dict[int, int], int]:
    """The coordinator, its shards (index -> pid) once both have run a while, and its mosquitto."""
    co = subprocess.Popen(_ARGV, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = _children(co.pid)
        shards = {int(c.split("--shard ")[1].split("/")[0]): p for p, c in kids.items() if " shard " in c}
        broker = [p for p, c in kids.items() if "mosquitto" in c]
        if len(shards) == 2 and broker and _connected(kids[broker[0]]) >= {0, 1}:
            time.sleep(4.0)  # past start-up: the slot loop is running
            assert co.poll() is None, co.communicate()
            return co, shards, broker[0]
        time.sleep(0.1)
    co.kill()
    raise AssertionError("the shards did not start")


def _finish(co: subprocess.Popen[str], pids: list[int]) -> tuple[str, float]:
    t0 = time.monotonic()
    _, err = co.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert co.returncode == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    time.sleep(0.5)
    assert not [p for p in pids if _alive(p)], "a process was left behind"
    return err, elapsed


def test_a_killed_shard_stops_the_run_at_once():
    """SIGKILL on a shard: the coordinator names it within seconds; the other shard and the broker are gone."""
    co, shards, broker = _start({})
    os.kill(shards[0], signal.SIGKILL)
    err, elapsed = _finish(co, [*shards.values(), broker])
    assert "shard 0 exited with status -9" in err
    assert elapsed < 15


def test_a_hung_shard_is_detected_by_its_missing_heartbeat():
    """SIGSTOP on a shard: silent past SLOTNET_SHARD_TIMEOUT, it is named, then killed."""
    co, shards, broker = _start({"SLOTNET_SHARD_TIMEOUT": "3", "SLOTNET_SHARD_START_TIMEOUT": "120"})
    os.kill(shards[1], signal.SIGSTOP)
    err, elapsed = _finish(co, [*shards.values(), broker])
    assert "shard 1 sent nothing for 3 s (no frame, no heartbeat)" in err
    assert elapsed < 20


def test_losing_the_broker_stops_the_run():
    """The run's mosquitto killed mid-run: the coordinator says it lost the broker; the shards exit too."""
    co, shards, broker = _start({})
    os.kill(broker, signal.SIGKILL)
    err, elapsed = _finish(co, [*shards.values(), broker])
    assert "lost the MQTT broker" in err
    assert elapsed < 20
