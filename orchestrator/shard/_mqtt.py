"""A small MQTT client for Trio: paho-mqtt's network thread bridged into a Trio channel.

paho-mqtt (the reference Python client, on which aiomqtt itself is built) runs its
network loop in a thread; received messages are handed to Trio without
blocking (``TrioToken.run_sync_soon``), and ``publish`` is thread-safe. This avoids an asyncio loop (and
trio-asyncio) inside every shard; measured here: ~7,000 QoS-1 round trips of 1 kB per
second through a loopback mosquitto, and a slot exchanges one frame per shard pair.
"""

from __future__ import annotations

import contextlib
import math
import socket
import ssl
from typing import Any

import trio

from slotnet.errors import SlotnetError

from ._broker import BrokerAddress

__all__ = ["DISCONNECTED", "MqttClient"]

#: The pseudo-topic under which paho's thread reports a lost connection to the Trio side.
DISCONNECTED = "\x00disconnected"
#: Why a connection closed before the broker answered is refused, and the likely cause for plain MQTT.
_CLOSED_EARLY = "it closed the connection before answering"
_TLS_HINT = " (a TLS listener? use mqtts:// with --broker-ca)"
_CERT_HINT = " (does it want a client certificate? --broker-cert and --broker-key)"


class MqttClient:
    """One connection to the broker; messages arrive through :meth:`receive`."""

    def __init__(self, broker: BrokerAddress, client_id: str) -> None:
        import paho.mqtt.client as paho

        self.broker = broker
        self._paho = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=True)
        if broker.user:
            self._paho.username_pw_set(broker.user, broker.password)
        if broker.tls:  # the CA given (else the system's), the client certificate when given; host names checked
            self._paho.tls_set(ca_certs=broker.ca, certfile=broker.cert, keyfile=broker.key)
        self._paho.max_inflight_messages_set(0)
        self._paho.max_queued_messages_set(0)
        self._send, self._recv = trio.open_memory_channel[tuple[str, bytes]](math.inf)
        self._token: trio.lowlevel.TrioToken | None = None
        self._connected = trio.Event()
        self._refused: str | None = None
        self._answered = False  # the broker answered the CONNECT (paho's thread sets it)
        self._closing = False

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        assert self._token is not None
        self._answered = True
        if reason.is_failure:
            self._refused = str(reason)
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._connected.set)

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        assert self._token is not None
        # Never block paho's thread on Trio: a blocking hand-over deadlocks when Trio is
        # itself waiting for that thread (``loop_stop``) while messages keep coming.
        with contextlib.suppress(trio.RunFinishedError):  # the run is over
            self._token.run_sync_soon(self._deliver, (msg.topic, bytes(msg.payload)))

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if self._closing or self._token is None:
            return
        if not self._answered:  # closed before its CONNACK: refused, not lost (e.g. plain MQTT to a TLS port)
            self._answered = True
            self._refused = _CLOSED_EARLY + (_CERT_HINT if self.broker.tls else _TLS_HINT)
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._connected.set)
            return
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._deliver, (DISCONNECTED, str(reason).encode()))

    def _deliver(self, item: tuple[str, bytes]) -> None:
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            self._send.send_nowait(item)

    async def connect(self, timeout: float = 10.0) -> None:
        """Connect and start the network thread.

        Raises:
            SlotnetError: the broker is unreachable or refused the credentials.
        """
        self._token = trio.lowlevel.current_trio_token()
        self._paho.on_connect = self._on_connect
        self._paho.on_message = self._on_message
        self._paho.on_disconnect = self._on_disconnect
        b = self.broker
        try:
            await trio.to_thread.run_sync(self._paho.connect, b.host, b.port, 60)
        except ssl.SSLError as exc:  # before OSError, of which it is one
            self._release()  # the socket of the failed handshake
            why = getattr(exc, "verify_message", None) or exc.reason or str(exc)
            raise SlotnetError(f"TLS with the MQTT broker {b.url} failed: {why}") from None
        except OSError as exc:
            self._release()
            raise SlotnetError(f"cannot reach the MQTT broker {b.url}: {exc.strerror or exc}") from None
        sock = self._paho.socket()
        if isinstance(sock, socket.socket):  # frames are small and latency-bound: no Nagle delay (see _broker)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._paho.loop_start()
        with trio.move_on_after(timeout):
            await self._connected.wait()
        if not self._connected.is_set():
            self.close()
            raise SlotnetError(f"the MQTT broker {b.url} did not answer within {timeout:g} s")
        if self._refused is not None:
            self.close()
            raise SlotnetError(f"the MQTT broker {b.url} refused the connection: {self._refused}")

    def subscribe(self, *topics: str) -> None:
        for t in topics:
            self._paho.subscribe(t, qos=1)

    def publish(self, topic: str, payload: bytes, retain: bool = False, wait: float = 0.0) -> None:
        """Publish with QoS 1 (``wait``: seconds to block until the broker has it, for last words)."""
        info = self._paho.publish(topic, payload, qos=1, retain=retain)
        if wait:
            with contextlib.suppress(RuntimeError, ValueError):
                info.wait_for_publish(timeout=wait)

    def pending(self) -> int:
        """How many messages have come and wait to be received."""
        return self._recv.statistics().current_buffer_used

    async def receive(self) -> tuple[str, bytes]:
        """The next message (topic, payload).

        Raises:
            SlotnetError: the connection to the broker was lost (a run cannot resume: its
                frames of the meantime are gone).
        """
        topic, payload = await self._recv.receive()
        if topic == DISCONNECTED:
            raise SlotnetError(f"lost the MQTT broker {self.broker.url} ({payload.decode(errors='replace')})")
        return topic, payload

    def close(self) -> None:
        self._closing = True
        try:
            self._paho.disconnect()
        finally:
            self._paho.loop_stop()
            self._release()

    def _release(self) -> None:
        """Close paho's sockets now: it closes them only when the client is collected, and in a
        reference cycle the sockets may be collected first, unclosed."""
        reset = getattr(self._paho, "_reset_sockets", None)
        if reset is not None:
            reset()
