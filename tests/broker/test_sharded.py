"""Sharded runs through a real mosquitto: the transport it reports, shards started by hand, a silent
shard, junk on the run's topics, bad shard options. (That a sharded run gives the one-process
result, over MQTT and in memory alike, is tests/contract/test_shard_links.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from slotnet import RunSpec, SpecError, run
from slotnet.fabric import ShardMap, ShardTransport, SlotClock, parse_topology
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.shard import _broker
from tests.support.broker_noise import sharded_run_with_noise
from tests.support.deliver import deliver


def test_a_shard_counts_each_message_once_whatever_its_duration():
    """sent_local + sent_cross == messages sent, also for messages that hold a link for several
    ticks (quantum 2) and are handed over later: the fraction of cross-shard traffic rests on it."""
    topo = parse_topology("torus:4")  # a ring: node 1 is local to shard 0, node 3 is on shard 1
    clock = SlotClock()
    shard = ShardTransport(topo, clock, ShardMap(4, 2), 0, quantum=2)
    out = shard.outlet(0)
    to_local = next(p.index for p in topo.ports(0) if p.neighbour == 1)
    to_cross = next(p.index for p in topo.ports(0) if p.neighbour == 3)
    out.send(to_local, "one tick", 0.5)
    out.send(to_cross, "one tick", 0.5)
    clock.slot = 1
    out.send(to_local, "two ticks", 1.0)
    out.send(to_cross, "two ticks", 1.0)
    for slot in range(2, 5):
        clock.slot = slot
        deliver(shard, slot)
    assert (shard.sent_local, shard.sent_cross) == (2, 2)
    assert shard.delivered == 2  # both local messages; the cross ones left in frames
    assert len(shard.frames()[1]) > 1


def test_shards_import_the_installed_slotnet_from_a_source_checkout(tmp_path, monkeypatch):
    """Run from a directory holding a ``slotnet/`` folder (a clone of this repository), the
    shards it starts still import the installed package, not the folder."""
    decoy = tmp_path / "slotnet"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the source folder, not the installed slotnet')\n")
    monkeypatch.chdir(tmp_path)
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=20, seed=1)
    assert run(RunSpec(**{**spec.__dict__, "shards": 2})).metrics == run(spec).metrics


def test_cross_shard_fraction_is_reported():
    """The result names the transport and the share of messages that crossed shards."""
    r = run(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=30, shards=2))
    t = r.transport
    assert t["kind"] == "mqtt" and t["broker"].startswith("mqtt://run-") and "@127.0.0.1:" in t["broker"]
    assert 0.0 < t["cross_shard_fraction"] < 1.0 and t["cross_shard_links"] == pytest.approx(0.25)


def test_shard_map_keeps_blocks_of_node_ids():
    """Shards are contiguous id blocks (high bits of a hypercube address); none is empty."""
    m = ShardMap(16, 4)
    assert [list(m.nodes(i)) for i in range(4)] == [list(range(4 * i, 4 * i + 4)) for i in range(4)]
    assert [len(ShardMap(10, 4).nodes(i)) for i in range(4)] == [3, 3, 3, 1]
    with pytest.raises(Exception, match="last one empty"):
        ShardMap(9, 4)  # blocks of 3 leave nothing for the fourth shard


def test_missing_mosquitto_is_one_line_with_the_install_command(monkeypatch):
    """Without mosquitto a sharded run says so, with the install command."""
    monkeypatch.setattr(_broker.shutil, "which", lambda name: None)
    monkeypatch.setattr(_broker, "Path", lambda p: type("P", (), {"exists": lambda self: False})())
    with pytest.raises(SpecError, match="apt-get install mosquitto"):
        run(RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=5, shards=2))


def test_shards_started_by_hand_on_loopback(tmp_path):
    """`slotnet run --no-spawn` waits for `slotnet shard` processes; the result equals the one-process run."""
    argv = ["run", "bcast-dtree", "-t", "hypercube:4", "--rho", "0.4", "--slots", "80", "--warmup", "10",
            "--seed", "5", "--json", "--no-progress"]
    with _broker.private_broker("byhand") as b:
        env = {**os.environ, _broker.PASSWORD_ENV: b.password or ""}
        co = subprocess.Popen([sys.executable, "-m", "slotnet", *argv, "--shards", "2", "--no-spawn",
                               "--broker", b.url, "--run-id", "byhand"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        shards = [subprocess.Popen([sys.executable, "-m", "slotnet", "shard", "--broker", b.url, "--run", "byhand",
                                    "--shard", f"{i}/2"], env=env, stderr=subprocess.PIPE, text=True)
                  for i in range(2)]
        out, err = co.communicate(timeout=120)
        for s in shards:
            _, shard_err = s.communicate(timeout=30)
            assert s.returncode == 0, shard_err
    assert co.returncode == 0, err
    import json

    sharded = json.loads(out)
    alone = run(RunSpec("bcast-dtree", "hypercube:4", load={"rho": 0.4}, slots=80, warmup=10, seed=5))
    assert sharded["metrics"] == alone.to_dict()["metrics"]
    assert sharded["transport"]["shards"] == 2


def test_a_silent_shard_stops_the_run_with_an_error(tmp_path):
    """With one of two shards never started, the coordinator gives up with a clear error, not a hang."""
    with _broker.private_broker("silent") as b:
        env = {**os.environ, _broker.PASSWORD_ENV: b.password or "", "SLOTNET_SHARD_TIMEOUT": "3"}
        co = subprocess.run([sys.executable, "-m", "slotnet", "run", "deflection", "-t", "hypercube:3", "--offered", "1",
                             "--slots", "10", "--shards", "2", "--no-spawn", "--broker", b.url, "--run-id", "silent"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert co.returncode == 1
    assert "nothing came for 3 s while the run waited for the shards to start" in co.stderr
    assert "Traceback" not in co.stderr


@pytest.mark.parametrize(("argv", "fragment"), [
    (["shard", "--broker", "mqtt://127.0.0.1:1", "--run", "x", "--shard", "2/2"], "I/K with 0 <= I < K"),
    (["shard", "--broker", "http://x", "--run", "x", "--shard", "0/2"], "--broker must look like mqtt[s]://"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--no-spawn"], "need --shards K"),
    (["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--shards", "0"], "shards must be an integer >= 1"),
])
def test_bad_shard_options_exit_2(capsys, argv, fragment):
    """Malformed shard options give exit 2 and one line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_foreign_and_broken_frames_are_rejected_and_counted():
    """Junk on the run's topics (undecodable, unknown shard, stale slot) is refused and counted; the result is unchanged."""
    from slotnet.fabric import encode

    argv = ["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "150", "--seed", "2", "--json",
            "--no-progress", "--shards", "2"]
    junk = [("data/0", b"\xc1\xc1"), ("data/1", encode((0, 7, b""))), ("done", encode((0, 9, b"", [], True, 0, None))),
            ("go", b"not msgpack \xc1"), ("done", encode(("x", 0)))]
    sharded = sharded_run_with_noise(argv, "junk", lambda _: junk, period=0.05)
    alone = run(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=150, seed=2))
    assert sharded["metrics"] == alone.to_dict()["metrics"]
    rejected = sharded["transport"]["frames_rejected"]
    assert rejected.get("undecodable", 0) > 0 and rejected.get("unknown shard", 0) > 0
