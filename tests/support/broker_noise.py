"""A sharded CLI run over a private mosquitto while another client publishes on the run's topics.

Shared by the tests that check a sharded run refuses frames it must not admit (junk,
frames from a shard outside the run) and still gives the one-process result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from slotnet.orchestrator.shard import _broker


def sharded_run_with_noise(argv: list[str], run_id: str, frames: Callable[[int], Iterable[tuple[str, bytes]]],
                           period: float) -> dict[str, Any]:
    """Run ``slotnet ARGV --broker URL --run-id RUN_ID`` while a client publishes, every
    ``period`` seconds, ``frames(i)`` (topic under ``slotnet/RUN_ID/``, payload) for
    i = 0, 1, ...; the run must exit 0, and its JSON result is returned."""
    import paho.mqtt.client as paho

    with _broker.private_broker(run_id) as b:
        env = {**os.environ, _broker.PASSWORD_ENV: b.password or ""}
        stop = threading.Event()

        def publish() -> None:
            c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=run_id)
            c.username_pw_set(b.user, b.password)
            c.connect(b.host, b.port)
            c.loop_start()
            i = 0
            while not stop.is_set():
                for topic, payload in frames(i):
                    c.publish(f"slotnet/{run_id}/{topic}", payload, qos=1)
                i += 1
                time.sleep(period)
            c.loop_stop()
            c.disconnect()

        t = threading.Thread(target=publish, daemon=True)
        t.start()
        try:
            out = subprocess.run([sys.executable, "-m", "slotnet", *argv, "--broker", b.url, "--run-id", run_id],
                                 env=env, capture_output=True, text=True, timeout=120)
        finally:
            stop.set()
            t.join(timeout=5)
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result
