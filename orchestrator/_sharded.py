"""Sharded runs: the nodes of one run spread over worker processes that talk through MQTT.

The coordinator (the ``slotnet run --shards K`` process) owns the reporter, the tracer,
the stability monitor and the slot clock's decisions; it starts a private broker (or
uses ``--broker``), starts K shard processes (or waits for K started by hand with
``slotnet shard``), and then, slot after slot:

0. each shard subscribes, reads the spec and says hello; once all have, the
   coordinator says go (no frame can be published to a shard not yet listening);
1. each shard runs the slot for its own nodes (``Network.step``), then publishes one
   frame of cross-shard messages to every other shard and one ``done`` frame (the
   slot's events, trace events, whether it is idle) to the coordinator;
2. the coordinator replays every shard's events in node order into the reporter
   (``SlotBatch``), writes the trace, samples the stability monitor, and publishes
   ``go`` (next slot) or ``stop``;
3. before the next slot each shard takes the other shards' frames of the slot.

Frames are keyed by (slot, shard), so duplicates (MQTT QoS 1 may redeliver) are
ignored. At the end every shard publishes its end-of-run state (fault ledger, messages
in flight, holdings, counters), which the coordinator merges. A shard that exits or
stops answering ends the run with an error naming it, never a hang. Topics, under the
run's namespace ``slotnet/<run>``: ``spec`` (retained), ``hello``, ``data/<shard>``,
``done``, ``go``, ``final``, ``error``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import trio

from slotnet.errors import SlotnetError, SpecError
from slotnet.fabric import FaultLedger, FaultSchedule, ShardMap, ShardTransport, decode, encode, parse_topology

from ._broker import PASSWORD_ENV, BrokerAddress, parse_broker, private_broker, topic_root
from ._gc import quiet_gc
from ._mqtt import MqttClient
from ._network import Network, checked_handlers
from ._observer import SlotBatch
from ._progress import Progress
from ._result import Result
from ._spec import Prepared, RunSpec, TraceSpec
from ._stability import StabilityMonitor
from ._trace import Tracer

__all__ = ["run_shard", "run_sharded", "spec_from_wire", "spec_to_wire"]

_TIMEOUT = os.environ.get("SLOTNET_SHARD_TIMEOUT")
#: Seconds a running shard (or the coordinator) may stay silent -- no frame, no heartbeat
#: -- before the run gives up on it: it hangs, or lost the broker (``SLOTNET_SHARD_TIMEOUT``
#: overrides it).
SILENCE = float(_TIMEOUT or "10")
#: Seconds to wait, with nothing coming at all, for shards to start (build their nodes)
#: and say hello (``SLOTNET_SHARD_START_TIMEOUT``, else ``SLOTNET_SHARD_TIMEOUT``, overrides it).
START_SILENCE = float(os.environ.get("SLOTNET_SHARD_START_TIMEOUT") or _TIMEOUT or "120")
#: Seconds between heartbeats, which every running shard and the coordinator publish
#: from their Trio loop (so a loop stuck in a node rule stops beating).
HEARTBEAT = 1.0
#: Who a heartbeat or frame came from, besides the shards 0..K-1.
COORDINATOR = -1
#: The topics only the coordinator publishes on.
_FROM_COORDINATOR = ("go", "alive", "abort")


def spec_to_wire(spec: RunSpec) -> bytes:
    """What shards need of the spec, as one msgpack frame."""
    return encode({"scheme": spec.scheme, "topology": spec.topology, "params": dict(spec.params),
                   "load": dict(spec.load), "slots": spec.slots, "warmup": spec.warmup, "seed": spec.seed,
                   "faults": spec.faults.to_list(), "max_backlog_per_node": spec.max_backlog_per_node,
                   "trace": None if spec.trace is None else {
                       "nodes": None if spec.trace.nodes is None else sorted(spec.trace.nodes),
                       "slots": spec.trace.slots,
                       "kinds": None if spec.trace.kinds is None else sorted(spec.trace.kinds)}})


def spec_from_wire(d: dict[str, Any]) -> RunSpec:
    """The spec a shard runs (one process's share; ``shards`` stays 1 inside it)."""
    return RunSpec(scheme=d["scheme"], topology=d["topology"], params=dict(d["params"]), load=dict(d["load"]),
                   slots=d["slots"], warmup=d["warmup"], seed=d["seed"], faults=FaultSchedule.parse(list(d["faults"])),
                   max_backlog_per_node=d["max_backlog_per_node"])


class ShardTracer(Tracer):
    """A shard's tracer: it writes nothing, the coordinator does (``take`` hands over a slot's events)."""

    def __init__(self, wire: dict[str, Any], schema: Any) -> None:  # no file: Tracer.__init__ is not called
        self.spec = TraceSpec("", None if wire["nodes"] is None else frozenset(wire["nodes"]),
                              None if wire["slots"] is None else (wire["slots"][0], wire["slots"][1]),
                              None if wire["kinds"] is None else frozenset(wire["kinds"]))
        self.schema = schema
        self._buf = []
        self._seq = 0

    def _keep(self, slot: int, kind: str) -> bool:
        s = self.spec
        if s.slots is not None and not s.slots[0] <= slot < s.slots[1]:
            return False
        return s.kinds is None or kind in s.kinds

    def take(self) -> list[Any]:
        out, self._buf = self._buf, []
        return out


class _Inbox:
    """Messages of one client by topic (the part after the run's root), deduplicated by (slot, shard)."""

    #: (topic, number of fields) of every frame a client may receive
    SHAPES = {"spec": None, "hello": 2, "done": 6, "go": 3, "final": 3, "error": 3, "abort": 3, "beat": 2, "alive": 2}

    def __init__(self, client: MqttClient, root: str, shards: int, procs: list[subprocess.Popen[bytes]] | None = None) -> None:
        self.client = client
        self.prefix = root + "/"
        self.shards = shards
        self.procs = procs or []
        self.seen: set[tuple[str, int, int]] = set()
        self.pools: dict[str, list[Any]] = {}
        self.slot = -1  # frames for slots already closed are stale
        #: frames refused, by reason (undecodable, malformed, unknown shard, stale slot, duplicate)
        self.rejected: dict[str, int] = {}
        #: when each watched peer (a shard, or COORDINATOR) was last heard from
        self.heard: dict[int, float] = {}

    def watch(self, peer: int) -> None:
        """From now on, ``peer`` must be heard from (a frame or a heartbeat) every SILENCE seconds."""
        self.heard[peer] = time.monotonic()

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
            if sub not in _FROM_COORDINATOR and not (origin is not None and 0 <= origin < self.shards):
                why = "unknown shard"
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

        Raises:
            SlotnetError: a shard reported an error or exited, a watched peer was silent for
                SILENCE seconds, nothing at all came for START_SILENCE seconds, or the broker
                connection was lost.
        """
        got: list[Any] = []
        pool = self.pools.setdefault(name, [])
        last = time.monotonic()
        while True:
            keep: list[Any] = []
            for item in pool:
                (got if slot is None or item[0] == slot else keep).append(item)
            pool[:] = keep
            if len(got) >= count:
                return got
            with trio.move_on_after(HEARTBEAT):
                topic, payload = await self.client.receive()
                last = time.monotonic()
                sub = topic.removeprefix(self.prefix)
                body = self._admit(sub, payload) if payload else None  # b"": a cleared retained message
                if body is not None:
                    sender = self._sender(sub, body)
                    if sender in self.heard:
                        self.heard[sender] = last
                    if sub == "error":
                        raise SlotnetError(f"shard {body[0]} failed: {body[2]}")
                    if sub == "abort":
                        raise SlotnetError(f"the coordinator stopped the run: {body[2]}")
                    if sub not in ("beat", "alive"):
                        self.pools.setdefault(sub, []).append(body)
            self._check(last, what)

    def _check(self, last: float, what: str) -> None:
        """Raise if a spawned shard exited, a watched peer fell silent, or everything did."""
        for i, p in enumerate(self.procs):
            if p.poll() is not None:
                err = p.stderr.read().decode(errors="replace").strip().splitlines() if p.stderr else []
                raise SlotnetError(f"shard {i} exited with status {p.returncode} while the run waited for {what}"
                                   + (f": {err[-1]}" if err else ""))
        now = time.monotonic()
        for peer, heard in sorted(self.heard.items()):
            if now - heard > SILENCE:
                who = "the coordinator" if peer == COORDINATOR else f"shard {peer}"
                raise SlotnetError(f"{who} sent nothing for {SILENCE:g} s (no frame, no heartbeat) while the run "
                                   f"waited for {what}: it hangs, or lost the broker")
        if now - last > START_SILENCE:
            raise SlotnetError(f"nothing came for {START_SILENCE:g} s while the run waited for {what}: "
                               "a shard or the broker stopped answering")


async def _heartbeat(client: MqttClient, topic: str, sender: int) -> None:
    """Publish ``(sender, n)`` on ``topic`` every HEARTBEAT seconds, from this Trio loop."""
    n = 0
    while True:
        client.publish(topic, encode((sender, n)))
        n += 1
        await trio.sleep(HEARTBEAT)


async def run_sharded(prep: Prepared, *, progress: Progress | None = None,
                      on_slot: Callable[[int], None] | None = None, spawn: bool = True,
                      run_id: str | None = None) -> Result:
    """The coordinator of a run over ``prep.spec.shards`` shard processes."""
    from ._driver import collect

    spec = prep.spec
    k = spec.shards
    smap = ShardMap(prep.topology.n_nodes, k)
    run_id = run_id or secrets.token_hex(6)
    root = topic_root(run_id)
    reporter = prep.scheme.reporter(prep.setup)
    handlers = checked_handlers(reporter)
    batch = SlotBatch(handlers, on_lost=reporter.on_lost)
    tracer = Tracer(spec.trace, reporter.events) if spec.trace else None
    monitor = StabilityMonitor(prep.topology.n_nodes, spec.warmup, spec.slots, prep.max_backlog_per_node)
    one_shot = prep.scheme.until == "quiescent"
    async with AsyncExitStack() as stack:
        broker = parse_broker(spec.broker) if spec.broker else stack.enter_context(private_broker(run_id))
        client = MqttClient(broker, f"slotnet-{run_id}-coordinator")
        await client.connect()
        stack.callback(client.close)
        client.subscribe(f"{root}/hello", f"{root}/done", f"{root}/final", f"{root}/error", f"{root}/beat")
        client.publish(f"{root}/spec", spec_to_wire(spec), retain=True)
        procs: list[subprocess.Popen[bytes]] = []
        if spawn:
            env = dict(os.environ)
            if broker.password:
                env[PASSWORD_ENV] = broker.password
            for i in range(k):
                # -P: not the working directory first on sys.path, where a clone's slotnet/ would shadow the install
                cmd = [sys.executable, "-P", "-m", "slotnet", "shard", "--broker", broker.url, "--run", run_id,
                       "--shard", f"{i}/{k}"]
                procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            stack.callback(_stop, procs)
        inbox = _Inbox(client, root, k, procs)

        def abort(exc_type: Any, exc: Any, tb: Any) -> None:
            if exc is not None:  # tell shards started by hand to stop too
                client.publish(f"{root}/abort", encode((0, 0, str(exc) or type(exc).__name__)), wait=2.0)

        stack.push(abort)
        await inbox.take("hello", k, None, "the shards to start")
        for i in range(k):
            inbox.watch(i)  # from now on each shard beats
        client.publish(f"{root}/go", encode((-1, 0, True)))  # every shard has subscribed: begin
        beats = await stack.enter_async_context(_beating(client, f"{root}/alive", COORDINATOR))
        t0 = time.perf_counter()
        slots_run, complete, last_active = 0, False, 0
        for slot in range(spec.slots):
            inbox.slot = slot
            done = await inbox.take("done", k, slot, f"the shards to finish slot {slot}")
            done.sort(key=lambda d: d[1])
            batch.replay([d[2] for d in done])
            slots_run = slot + 1
            reporter.end_slot(slot)
            if tracer is not None:
                tracer.extend(ev for d in done for ev in d[3])
                tracer.end_slot()
            last_active = max(last_active, max(d[5] for d in done))
            if progress is not None:
                progress.update(slot)
            if on_slot is not None:
                on_slot(slot)
            go = monitor.sample(slot, reporter.backlog()) and slot + 1 < spec.slots
            if go and one_shot and all(d[4] for d in done):
                complete, go = True, False
            client.publish(f"{root}/go", encode((slot, 0, go)))
            if not go:
                break
        finals = await inbox.take("final", k, None, "the shards' final state")
        wall = time.perf_counter() - t0
        beats.cancel()
        client.publish(f"{root}/spec", b"", retain=True)  # clear the retained spec
    if tracer is not None:
        tracer.close()
    if progress is not None:
        progress.close()
    return _merge(prep, reporter, monitor, slots_run, wall, finals, smap, broker, collect, one_shot, complete,
                  last_active, inbox.rejected)


@asynccontextmanager
async def _beating(client: MqttClient, topic: str, sender: int) -> AsyncIterator[trio.CancelScope]:
    """Heartbeats on ``topic`` while the body runs (yields the scope that stops them)."""
    from ._driver import _single

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_heartbeat, client, topic, sender)
            yield nursery.cancel_scope
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # the body's own error, not a group around it
        raise _single(group) from None


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Wait for the shards to exit (they do once they sent their final state); kill stragglers."""
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stderr is not None:
            p.stderr.close()


def _merge(prep: Prepared, reporter: Any, monitor: StabilityMonitor, slots_run: int, wall: float, finals: list[Any],
           smap: ShardMap, broker: BrokerAddress, collect: Any, one_shot: bool, complete: bool, last_active: int,
           rejected: dict[str, int]) -> Result:
    n = prep.topology.n_nodes
    ledger = FaultLedger()
    in_flight: list[tuple[int, int, Any]] = []
    held = [0] * n
    held_packets: list[Any] = [()] * n
    delivered = wakeups = sent_local = sent_cross = 0
    for f in sorted(finals, key=lambda f: f[0]):
        _, _, state = f
        for book, counts in state["ledger"].items():
            for cause, c in counts.items():
                ledger.add(book, cause, c)
        in_flight += [tuple(x) for x in state["in_flight"]]
        for v, h, items in zip(smap.nodes(f[0]), state["held"], state["held_packets"]):
            held[v] = h
            held_packets[v] = items
        delivered += state["delivered"]
        wakeups += state["wakeups"]
        sent_local += state["sent_local"]
        sent_cross += state["sent_cross"]
        for why, c in state["rejected"].items():
            rejected[why] = rejected.get(why, 0) + c
    cross_links, links = smap.cross_links(prep.topology)
    sent = sent_local + sent_cross
    transport = {"kind": "mqtt", "shards": smap.shards, "broker": broker.url,
                 "cross_shard_fraction": sent_cross / sent if sent else 0.0,
                 "cross_shard_links": cross_links / links if links else 0.0, "frames_rejected": dict(sorted(rejected.items()))}
    result: Result = collect(prep, reporter, monitor, slots_run, wall, ledger=ledger, in_flight=sorted(in_flight, key=repr),
                             held=held, held_packets=held_packets, delivered=delivered, wakeups=wakeups,
                             transport=transport)
    if one_shot:
        result.completion = {"complete": complete, "slot": last_active if complete else None,
                             "time": last_active / prep.quantum if complete else None}
        result.metrics.setdefault("completion_time", result.completion["time"])
    return result


async def run_shard(broker_url: str, run_id: str, shard: int, shards: int) -> None:
    """One shard: host its block of nodes and follow the coordinator slot by slot."""
    root = topic_root(run_id)
    client = MqttClient(parse_broker(broker_url), f"slotnet-{run_id}-shard-{shard}")
    await client.connect()
    try:
        client.subscribe(f"{root}/spec", f"{root}/data/{shard}", f"{root}/go", f"{root}/abort", f"{root}/alive")
        try:
            async with _beating(client, f"{root}/beat", shard):
                await _shard_body(client, root, shard, shards)
        except SlotnetError as exc:
            client.publish(f"{root}/error", encode((shard, 0, str(exc))), wait=2.0)
            raise
    finally:
        await trio.sleep(0.2)  # let paho flush the last publishes
        client.close()


async def _shard_body(client: MqttClient, root: str, shard: int, shards: int) -> None:
    inbox = _Inbox(client, root, shards)
    (wire,) = await inbox.take("spec", 1, None, "the run spec")
    spec = spec_from_wire(wire)
    tracer = None
    smap = ShardMap(parse_topology(spec.topology).n_nodes, shards)
    prep = spec.prepare(hosted=len(smap.nodes(shard)))
    if spec.shards != 1 or smap.shards != shards:
        raise SpecError("inconsistent shard count")
    reporter = prep.scheme.reporter(prep.setup)
    if wire.get("trace") is not None:
        tracer = ShardTracer(wire["trace"], reporter.events)
    kinds = {kind: _never for kind in reporter.events}
    batch = SlotBatch(kinds)
    holder: list[ShardTransport] = []

    def factory(clock: Any, lost: Any) -> ShardTransport:
        t = ShardTransport(prep.topology, clock, smap, shard, spec.faults, spec.seed, on_lost=lost, quantum=prep.quantum)
        holder.append(t)
        return t

    net = Network(prep, factory, handlers=None, batch=batch, on_lost=batch.lost, tracer=tracer, local=smap.nodes(shard))
    transport = holder[0]
    client.publish(f"{root}/hello", encode((shard, 0)))  # after its subscriptions: the broker keeps the order
    await inbox.take("go", 1, -1, "the coordinator's start")
    inbox.watch(COORDINATOR)  # from now on the coordinator beats
    async with trio.open_nursery() as nursery:
        await net.start(nursery)
        with quiet_gc():  # as in one process: the cyclic GC stays off the long-lived network
            slot = 0
            while True:
                frames = transport.frames()
                for j in range(shards):
                    if j != shard:
                        client.publish(f"{root}/data/{j}", encode((slot, shard, frames[j])))
                idle = net.quiescent() and not any(len(f) > 1 for f in frames)
                traced = tracer.take() if tracer is not None else []
                client.publish(f"{root}/done", encode((slot, shard, batch.frame(), traced, idle, net.last_active)))
                inbox.slot = slot
                (go,) = await inbox.take("go", 1, slot, f"the coordinator's go for slot {slot}")
                for data in await inbox.take(f"data/{shard}", shards - 1, slot, f"the other shards' slot {slot}"):
                    transport.accept(data[2])  # after the last slot too: they are the messages still in flight
                if not go[2]:
                    break
                slot += 1
                await net.step(slot, nursery)
            await net.stop()
        nursery.cancel_scope.cancel()
    held, held_packets = net.held(), net.held_packets()
    state = {"ledger": {b: dict(getattr(transport.ledger, b)) for b in ("lost", "duplicated", "delayed", "corrupted")},
             "in_flight": transport.in_flight(), "held": [held[v] for v in net.local],
             "held_packets": [list(held_packets[v]) for v in net.local], "delivered": transport.delivered,
             "wakeups": net.runtime.wakeups, "sent_local": transport.sent_local, "sent_cross": transport.sent_cross,
             "rejected": inbox.rejected}
    client.publish(f"{root}/final", encode((shard, 0, state)))


def _never(*_: Any) -> None:  # pragma: no cover - shards only record, the coordinator replays
    raise AssertionError("a shard never replays events")
