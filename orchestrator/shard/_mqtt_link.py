"""The shard link over MQTT: one process per shard, a broker between them.

The coordinator's end (:func:`coordinator_link`) starts a private broker (or uses
``--broker``), starts K shard processes (or waits for K started by hand with ``slotnet
shard``) once the spec is published, and tells them to stop if the run fails. A shard's
end (:func:`shard_link`) connects to the broker it is given. Both ends publish a
heartbeat every :data:`HEARTBEAT` seconds from a thread (``_heartbeat``), carrying a
progress count, so a process that is frozen (or lost the broker) is named within
:data:`SILENCE` seconds, a shard stuck in a node rule within :data:`STALL` seconds, and a
shard whose slot is long but moving is waited for.

Frames are msgpack tuples keyed by (slot, shard), so duplicates (MQTT QoS 1 may redeliver)
are ignored; malformed, foreign and stale frames are refused and counted (``rejected``,
reported as the result's ``frames_rejected``). Topics, under the run's namespace
``slotnet/<run>``: ``spec`` (retained), ``hello``, ``data/<shard>``, ``done``, ``go``,
``final``, ``error``, ``abort``, and the heartbeats ``beat`` (shards) and ``alive`` (the
coordinator).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any

import trio

from slotnet.errors import SlotnetError
from slotnet.fabric import decode, encode

from ..engine._spec import RunSpec
from ._broker import PASSWORD_ENV, BrokerAddress, parse_broker, private_broker, topic_root
from ._heartbeat import Heartbeat
from ._link import UNKNOWN_SHARD, Done, is_shard
from ._mqtt import MqttClient

__all__ = ["COORDINATOR", "HEARTBEAT", "SILENCE", "STALL", "START_SILENCE", "MqttCoordinatorLink", "MqttShardLink",
           "coordinator_link", "shard_link"]

_TIMEOUT = os.environ.get("SLOTNET_SHARD_TIMEOUT")
#: Seconds a shard (or the coordinator) may stay silent -- no frame, no heartbeat -- before
#: the run gives up on it: it is frozen, or lost the broker (``SLOTNET_SHARD_TIMEOUT``
#: overrides it). Heartbeats come from a thread, so a long slot does not silence them.
SILENCE = float(_TIMEOUT or "10")
#: Seconds a shard may beat without progress -- no node step, node built or slot phase --
#: while the run waits for its slot, before the run names it stuck (a node rule that never
#: awaits, or one step that long); ``SLOTNET_SHARD_TIMEOUT`` overrides it too.
STALL = float(_TIMEOUT or "30")
#: Seconds to wait, with nothing coming at all, for shards to start (build their nodes)
#: and say hello (``SLOTNET_SHARD_START_TIMEOUT``, else ``SLOTNET_SHARD_TIMEOUT``, overrides it).
START_SILENCE = float(os.environ.get("SLOTNET_SHARD_START_TIMEOUT") or _TIMEOUT or "120")
#: Seconds between heartbeats, which every shard and the coordinator publish from a thread
#: of their own (``_heartbeat``), with a progress count.
HEARTBEAT = 1.0
#: Who a heartbeat or frame came from, besides the shards 0..K-1.
COORDINATOR = -1
#: The topics only the coordinator publishes on.
_FROM_COORDINATOR = ("go", "alive", "abort")


class _Inbox:
    """Messages of one client by topic (the part after the run's root), deduplicated by (slot, shard)."""

    #: (topic, number of fields) of every frame a client may receive
    SHAPES = {"spec": None, "hello": 2, "done": len(Done._fields), "go": 3, "final": 3, "error": 3, "abort": 3, "beat": 3, "alive": 3}

    def __init__(self, client: MqttClient, root: str, shards: int, procs: list[subprocess.Popen[bytes]] | None = None,
                 *, watch_shards: bool = False) -> None:
        self.client = client
        self.prefix = root + "/"
        self.shards = shards
        self.procs = procs if procs is not None else []
        self.seen: set[tuple[str, int, int]] = set()
        self.pools: dict[str, list[Any]] = {}
        self.slot = -1  # frames for slots already closed are stale
        #: frames refused, by reason (undecodable, malformed, unknown shard, stale slot, duplicate)
        self.rejected: dict[str, int] = {}
        #: when each watched peer (a shard, or COORDINATOR) was last heard from
        self.heard: dict[int, float] = {}
        #: each shard's last progress count (from its heartbeats) and when it last changed
        self.progress: dict[int, tuple[int, float]] = {}
        #: watch every shard from its first word (the coordinator's inbox), not from watch()
        self.watch_shards = watch_shards
        #: seconds this inbox's loop spent handling messages (decoding a shard's final state of
        #: tens of MB takes a while): the clock peers are judged by stops meanwhile (``_now``)
        self._busy = 0.0

    def _now(self) -> float:
        """The clock silences and stalls are measured on: monotonic time, less the time this
        loop spent handling messages, so that a peer whose beats wait behind a long handling
        (delivered only once it ends) is not judged silent for this loop's own delay."""
        return time.monotonic() - self._busy

    def watch(self, peer: int) -> None:
        """From now on, ``peer`` must be heard from (a frame or a heartbeat) every SILENCE seconds."""
        self.heard[peer] = self._now()

    @staticmethod
    def _sender(sub: str, body: Any) -> int | None:
        """Who sent a (well-formed) frame: COORDINATOR, a shard's index as the frame says, or
        None for the spec (the coordinator's, retained)."""
        if sub == "spec":
            return None
        if sub in _FROM_COORDINATOR:
            return COORDINATOR
        return int(body[1] if sub == "done" or sub.startswith("data/") else body[0])

    def _reject(self, why: str) -> None:
        """Count a refused frame."""
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def _admit(self, sub: str, payload: bytes) -> Any | None:
        """The decoded frame, or None (counted) when it is malformed, foreign, stale or a duplicate."""
        why = None
        try:
            body = decode(payload)
        except Exception:
            body, why = None, "undecodable"
        want = self.SHAPES.get(sub, 3)  # data/<shard> frames have 3 fields
        if why is None and sub == "spec":
            if isinstance(body, dict):
                return body
            why = "malformed"
        elif why is None and (not isinstance(body, tuple) or len(body) != want
                              or not all(isinstance(x, int) and not isinstance(x, bool) for x in body[:2])):
            why = "malformed"
        if why is None:
            origin = self._sender(sub, body)
            timed = sub in ("done", "go") or sub.startswith("data/")
            if sub not in _FROM_COORDINATOR and not is_shard(origin, self.shards):
                why = UNKNOWN_SHARD
            elif timed and body[0] < self.slot:
                why = "stale slot"
            elif (sub, body[0], body[1]) in self.seen:
                why = "duplicate"
        if why is not None:
            self._reject(why)
            return None
        self.seen.add((sub, body[0], body[1]))
        return body

    async def take(self, name: str, count: int, slot: int | None, what: str) -> list[Any]:
        """``count`` distinct messages of topic ``name`` (for ``slot``), decoded.

        Every message already come is read before any peer is judged, so a loop that was
        busy for a while (a long slot) does not take its own delay for a peer's silence.
        While it waits for the shards' ``done``, a shard that has not reported and whose
        progress count stands still for STALL seconds is named stuck.

        Raises:
            SlotnetError: a shard reported an error or exited, a watched peer was silent for
                SILENCE seconds, a shard made no progress for STALL seconds, nothing at all
                came for START_SILENCE seconds, or the broker connection was lost.
        """
        got: list[Any] = []
        pool = self.pools.setdefault(name, [])
        last = since = self._now()
        while True:
            keep: list[Any] = []
            for item in pool:
                (got if slot is None or item[0] == slot else keep).append(item)
            pool[:] = keep
            if len(got) >= count:
                return got
            with trio.move_on_after(HEARTBEAT):
                topic, payload = await self.client.receive()
                last = self._now()
                began = time.monotonic()
                try:
                    self._handle(topic.removeprefix(self.prefix), payload, last)
                finally:
                    self._busy += time.monotonic() - began
                if _pending(self.client):
                    continue  # read everything already here before judging anyone
            busy = sorted(set(range(self.shards)) - {d[1] for d in got}) if name == "done" else []
            self._check(last, what, busy, since)
            if name == "hello" and self._now() - since > START_SILENCE:
                absent = [i for i in range(self.shards) if i not in self.heard]
                if absent:
                    raise SlotnetError(f"shard {absent[0]} did not connect within {START_SILENCE:g} s while the run "
                                       f"waited for {what}")

    def _handle(self, sub: str, payload: bytes, now: float) -> None:
        """Admit one message: note its sender as heard (and a beat's progress), raise a
        shard's error or the coordinator's abort, pool the rest by topic."""
        body = self._admit(sub, payload) if payload else None  # b"": a cleared retained message
        if body is None:
            return
        sender = self._sender(sub, body)
        if sender in self.heard or (self.watch_shards and is_shard(sender, self.shards)):
            assert sender is not None
            self.heard[sender] = now
        if sub == "beat":
            value = body[2]
            if self.progress.get(body[0], (None,))[0] != value:
                self.progress[body[0]] = (value, now)
        if sub == "error":
            raise SlotnetError(f"shard {body[0]} failed: {body[2]}")
        if sub == "abort":
            raise SlotnetError(f"the coordinator stopped the run: {body[2]}")
        if sub not in ("beat", "alive"):
            self.pools.setdefault(sub, []).append(body)

    def _check(self, last: float, what: str, busy: Sequence[int] = (), since: float = 0.0) -> None:
        """Raise if a spawned shard exited, a watched peer fell silent, a ``busy`` shard's
        progress stood still since ``since`` or its last change, or everything fell silent."""
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                err = p.stderr.read().decode(errors="replace").strip().splitlines() if p.stderr else []
                raise SlotnetError(f"shard {i} exited with status {p.returncode} while the run waited for {what}"
                                   + (f": {err[-1]}" if err else ""))
        now = self._now()
        for peer, heard in sorted(self.heard.items()):
            if now - heard > SILENCE:
                who = "the coordinator" if peer == COORDINATOR else f"shard {peer}"
                raise SlotnetError(f"{who} sent nothing for {SILENCE:g} s (no frame, no heartbeat) while the run "
                                   f"waited for {what}: it is frozen, or lost the broker")
        for peer in busy:
            value, changed = self.progress.get(peer, (None, since))
            if now - max(changed, since) > STALL:
                raise SlotnetError(f"shard {peer} made no progress for {STALL:g} s (no node step, its heartbeat "
                                   f"goes on) while the run waited for {what}: a node rule that never awaits, "
                                   f"or one step that long")
        if now - last > START_SILENCE:
            raise SlotnetError(f"nothing came for {START_SILENCE:g} s while the run waited for {what}: "
                               "a shard or the broker stopped answering")


def _pending(client: Any) -> bool:
    """Whether messages are already waiting to be received (a stand-in client may not say)."""
    pending = getattr(client, "pending", None)
    return bool(pending()) if pending is not None else False


@contextmanager
def _beating(client: MqttClient, topic: str, sender: int) -> Iterator[Heartbeat]:
    """Heartbeats on ``topic``, from a thread, while the body runs (yields the heartbeat:
    set its ``progress``, or ``stop()`` it early)."""
    beat = Heartbeat(client, topic, sender, HEARTBEAT).start()
    try:
        yield beat
    finally:
        beat.stop()


def _stop(procs: list[subprocess.Popen[bytes]], failed: bool) -> None:
    """Wait for the shards to exit (they do once they sent their final state); kill stragglers.
    A run that ``failed`` (or was stopped) terminates them first: their work is void."""
    if failed:
        for p in procs:
            if p.poll() is None:
                p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stderr is not None:
            p.stderr.close()


class MqttCoordinatorLink:
    """The coordinator's end over MQTT (see :class:`~._link.CoordinatorLink`)."""

    def __init__(self, stack: AsyncExitStack, client: MqttClient, broker: BrokerAddress, run_id: str, shards: int,
                 spawn: bool) -> None:
        self._stack = stack
        self.client = client
        self.broker = broker
        self.run_id = run_id
        self.root = topic_root(run_id)
        self.shards = shards
        self.spawn = spawn
        self.procs: list[subprocess.Popen[bytes]] = []  # the shards started here, watched by the inbox
        self.inbox = _Inbox(client, self.root, shards, self.procs, watch_shards=True)
        self.rejected = self.inbox.rejected
        self._beats: Heartbeat | None = None

    async def start(self, spec: dict[str, Any]) -> None:
        root, k = self.root, self.shards
        self.client.publish(f"{root}/spec", encode(spec), retain=True)
        if self.spawn:
            env = dict(os.environ)
            if self.broker.password:
                env[PASSWORD_ENV] = self.broker.password
            for i in range(k):
                # -P: not the working directory first on sys.path, where a clone's slotnet/ would shadow the install
                cmd = [sys.executable, "-P", "-m", "slotnet", "shard", "--broker", self.broker.full_url, "--run", self.run_id,
                       "--shard", f"{i}/{k}"]
                # a process group of its own: a terminal's Ctrl-C reaches the coordinator alone, which stops the shards
                self.procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                   process_group=0))
            self._stack.push(lambda exc_type, exc, tb: _stop(self.procs, exc is not None))
        self._stack.push(self._abort)
        self._beats = self._stack.enter_context(_beating(self.client, f"{root}/alive", COORDINATOR))
        await self.inbox.take("hello", k, None, "the shards to start")
        for i in range(k):
            if i not in self.inbox.heard:
                self.inbox.watch(i)  # from now on each shard beats
        self.client.publish(f"{root}/go", encode((-1, 0, True)))  # every shard has subscribed: begin

    def _abort(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is not None:  # tell shards started by hand to stop too
            self.client.publish(f"{self.root}/abort", encode((0, 0, str(exc) or type(exc).__name__)), wait=2.0)

    async def done(self, slot: int) -> list[Done]:
        self.inbox.slot = slot
        got = await self.inbox.take("done", self.shards, slot, f"the shards to finish slot {slot}")
        return [Done(*d) for d in sorted(got, key=lambda d: d[1])]

    def go(self, slot: int, go: bool) -> None:
        self.client.publish(f"{self.root}/go", encode((slot, 0, go)))

    async def finals(self) -> list[dict[str, Any]]:
        finals = await self.inbox.take("final", self.shards, None, "the shards' final state")
        if self._beats is not None:
            self._beats.stop()
        self.client.publish(f"{self.root}/spec", b"", retain=True)  # clear the retained spec
        return [f[2] for f in sorted(finals, key=lambda f: f[0])]

    def describe(self) -> dict[str, Any]:
        return {"kind": "mqtt", "broker": self.broker.url}


@asynccontextmanager
async def coordinator_link(spec: RunSpec, run_id: str, *, spawn: bool = True) -> AsyncIterator[MqttCoordinatorLink]:
    """The coordinator's end of run ``run_id``: connected to its broker (a private one unless
    ``spec.broker`` names one); shards are started (``spawn``) once the spec is published.

    Raises:
        SpecError: mosquitto is not installed, or the broker URL is malformed.
        SlotnetError: the broker cannot be reached or started.
    """
    async with AsyncExitStack() as stack:
        broker = parse_broker(spec.broker) if spec.broker else stack.enter_context(private_broker(run_id))
        client = MqttClient(broker, f"slotnet-{run_id}-coordinator")
        await client.connect()
        stack.callback(client.close)
        root = topic_root(run_id)
        client.subscribe(f"{root}/hello", f"{root}/done", f"{root}/final", f"{root}/error", f"{root}/beat")
        yield MqttCoordinatorLink(stack, client, broker, run_id, spec.shards, spawn)


class MqttShardLink:
    """A shard's end over MQTT (see :class:`~._link.ShardLink`)."""

    def __init__(self, client: MqttClient, root: str, shard: int, shards: int) -> None:
        self.client = client
        self.root = root
        self.shard = shard
        self.shards = shards
        self.inbox = _Inbox(client, root, shards)
        self.rejected = self.inbox.rejected
        self.heartbeat: Heartbeat | None = None

    def report_progress(self, progress: Callable[[], int]) -> None:
        """What this shard's heartbeat reports as its progress from now on."""
        if self.heartbeat is not None:
            self.heartbeat.progress = progress

    async def spec(self) -> dict[str, Any]:
        (wire,) = await self.inbox.take("spec", 1, None, "the run spec")
        return dict(wire)

    async def ready(self) -> None:
        self.client.publish(f"{self.root}/hello", encode((self.shard, 0)))  # after its subscriptions: the broker keeps the order
        await self.inbox.take("go", 1, -1, "the coordinator's start")
        self.inbox.watch(COORDINATOR)  # from now on the coordinator beats

    def send(self, slot: int, to: int, frame: bytes) -> None:
        self.client.publish(f"{self.root}/data/{to}", encode((slot, self.shard, frame)))

    def done(self, report: Done) -> None:
        self.client.publish(f"{self.root}/done", encode(tuple(report)))

    async def go(self, slot: int) -> bool:
        self.inbox.slot = slot
        (go,) = await self.inbox.take("go", 1, slot, f"the coordinator's go for slot {slot}")
        return bool(go[2])

    async def frames(self, slot: int) -> list[bytes]:
        self.inbox.slot = slot
        got = await self.inbox.take(f"data/{self.shard}", self.shards - 1, slot, f"the other shards' slot {slot}")
        return [d[2] for d in sorted(got, key=lambda d: d[1])]

    def final(self, state: dict[str, Any]) -> None:
        self.client.publish(f"{self.root}/final", encode((self.shard, 0, state)))


@asynccontextmanager
async def shard_link(broker_url: str, run_id: str, shard: int, shards: int) -> AsyncIterator[MqttShardLink]:
    """Shard ``shard`` of ``shards``'s end of run ``run_id``, heartbeats running; an error in the
    body is published for the coordinator before it propagates."""
    root = topic_root(run_id)
    client = MqttClient(parse_broker(broker_url), f"slotnet-{run_id}-shard-{shard}")
    await client.connect()
    try:
        client.subscribe(f"{root}/spec", f"{root}/data/{shard}", f"{root}/go", f"{root}/abort", f"{root}/alive")
        try:
            with _beating(client, f"{root}/beat", shard) as beat:
                link = MqttShardLink(client, root, shard, shards)
                link.heartbeat = beat
                yield link
        except SlotnetError as exc:
            client.publish(f"{root}/error", encode((shard, 0, str(exc))), wait=2.0)
            raise
    finally:
        await trio.sleep(0.2)  # let paho flush the last publishes
        client.close()
