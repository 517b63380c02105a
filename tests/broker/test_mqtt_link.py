"""The MQTT link and the private broker against a real mosquitto (``orchestrator/shard/_broker.py``,
``_mqtt.py``, ``_mqtt_link.py``); their pieces against stand-ins are in
tests/unit/orchestrator/shard/test_shard_parts.py.
"""

from __future__ import annotations

import socket

import pytest
import trio

from slotnet import RunSpec
from slotnet.errors import SlotnetError
from slotnet.fabric import decode
from slotnet.orchestrator.shard import _mqtt_link
from slotnet.orchestrator.shard._broker import BrokerAddress, parse_broker, private_broker
from slotnet.orchestrator.shard._link import Done
from slotnet.orchestrator.shard._mqtt import MqttClient
from tests.support.mosquitto import needs_mosquitto


@needs_mosquitto
def test_a_private_broker_admits_its_run_only():
    """A private broker lets its run's user publish and receive, refuses anyone else, and is gone after."""
    async def main(addr):
        c = MqttClient(addr, "t1")
        await c.connect()
        try:
            c.subscribe("slotnet/abc/x")
            await trio.sleep(0.2)
            c.publish("slotnet/abc/x", b"hi", wait=2.0)
            with trio.fail_after(5):
                assert await c.receive() == ("slotnet/abc/x", b"hi")
        finally:
            c.close()
        anon = MqttClient(BrokerAddress(addr.host, addr.port), "t2")
        with pytest.raises(SlotnetError, match=rf"^the MQTT broker mqtt://127.0.0.1:{addr.port} refused the connection: "):
            await anon.connect()
        wrong = MqttClient(BrokerAddress(addr.host, addr.port, addr.user, "nope"), "t3")
        with pytest.raises(SlotnetError, match="refused the connection"):
            await wrong.connect()

    with private_broker("abc") as addr:
        assert addr.host == "127.0.0.1" and addr.user == "run-abc" and len(addr.password) == 24
        trio.run(main, addr)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", addr.port), timeout=1).close()



@needs_mosquitto
def test_both_ends_of_the_mqtt_link_through_a_real_broker():
    """coordinator_link and shard_link on one private broker: the spec, hello and go, a slot's
    frames and reports, the finals; a shard's error is published for the coordinator."""

    async def main(url):
        spec = RunSpec("deflection", "hypercube:2", load={"offered": 1.0}, slots=2, shards=1, broker=url)

        async def shard():
            async with _mqtt_link.shard_link(url, "e2e", 0, 1) as link:
                assert await link.spec() == {"x": 1}
                await link.ready()
                link.done(Done(0, 0, b"e", [], True, 0))
                assert await link.go(0) is False
                link.final({"n": 0})
                raise SlotnetError("late trouble")

        async with trio.open_nursery() as n:
            n.start_soon(lambda: _expect_error(shard()))
            async with _mqtt_link.coordinator_link(spec, "e2e", spawn=False) as coord:
                assert coord.describe() == {"kind": "mqtt", "broker": parse_broker(url).url} and coord.spawn is False
                coord.client.subscribe("slotnet/e2e/error")
                await coord.start({"x": 1})
                assert await coord.done(0) == [Done(0, 0, b"e", (), True, 0)]
                coord.go(0, False)
                assert await coord.finals() == [{"n": 0}]
                with trio.fail_after(15):  # the shard's last words, published as it fails
                    while True:
                        topic, payload = await coord.client.receive()
                        if topic == "slotnet/e2e/error":
                            break
                assert decode(payload) == (0, 0, "late trouble")

    async def _expect_error(coro):
        with pytest.raises(SlotnetError, match="^late trouble$"):
            await coro

    with private_broker("e2e") as addr:
        trio.run(main, f"mqtt://{addr.user}:{addr.password}@127.0.0.1:{addr.port}")
