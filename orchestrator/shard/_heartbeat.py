"""Heartbeats from a thread of their own, carrying a progress count.

A shard's Trio loop cannot beat while it runs a slot: a slot of half a million nodes, on a
busy machine, holds it for longer than any silence a run should allow. So every process
of a sharded run beats from a thread (:class:`Heartbeat`), which keeps beating whatever
the loop is doing, and each beat carries a progress count -- a shard's node steps, nodes
built and slot phases done so far. The coordinator then tells the cases apart
(``_mqtt_link``): a process that stops beating is frozen or lost the broker; a shard that
beats while its count stands still, as the coordinator waits for its slot, is stuck (a
node rule that never awaits); a shard whose count moves is working, however long its slot.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from slotnet.fabric import encode

__all__ = ["Heartbeat", "Publisher"]


class Publisher(Protocol):
    """What a heartbeat publishes through (``MqttClient.publish``: safe from any thread)."""

    def publish(self, topic: str, payload: bytes, retain: bool = False, wait: float = 0.0) -> None: ...


def _nothing() -> int:
    return 0


class Heartbeat:
    """Publish ``(sender, n, progress())`` on ``topic`` every ``every`` seconds, n = 0, 1, ...,
    from a daemon thread, between :meth:`start` and :meth:`stop`.

    ``progress`` may be replaced while it runs (:attr:`progress`): a shard knows what to
    count only once it has built its network.
    """

    def __init__(self, client: Publisher, topic: str, sender: int, every: float,
                 progress: Callable[[], int] = _nothing) -> None:
        self.client = client
        self.topic = topic
        self.sender = sender
        self.every = every
        self.progress = progress
        self.beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"slotnet-heartbeat-{sender}", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating (returns once the thread has ended)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def beat(self) -> None:
        """Publish one beat now (the thread's step)."""
        self.client.publish(self.topic, encode((self.sender, self.beats, self.progress())))
        self.beats += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.beat()
            except Exception:  # a closed client at the end: the run is over, stop beating
                return
            self._stop.wait(self.every)
