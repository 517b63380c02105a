"""A sharded run through an existing broker over TLS (issue #33, across machines securely):
``--broker mqtts://user@host:port --broker-ca FILE`` (and a client certificate when the broker
asks for one), the password only in the environment; plain ``mqtt://`` to the TLS listener fails
in one line. Against a real mosquitto with a TLS listener on loopback, its CA and certificates
made here with the ``openssl`` command."""

from __future__ import annotations

import gc
import getpass
import json
import shutil
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from slotnet import RunSpec, SlotnetError, SpecError, run
from slotnet.orchestrator.cli import main
from slotnet.orchestrator.shard._broker import PASSWORD_ENV, BrokerAddress, parse_broker, with_tls_files
from slotnet.orchestrator.shard._mqtt import MqttClient

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
USER, PASSWORD = "alice", "s3cret-tls-test"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(d: Path) -> None:
    """A CA, a server certificate for localhost and 127.0.0.1, and a client certificate, all signed by the CA."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=slotnet test CA", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                 f"/CN={'localhost' if name == 'server' else 'slotnet-client'}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", *(["-extfile", "san.cnf"] if name == "server" else []), cwd=d)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mosquitto(d: Path, require_certificate: bool) -> Iterator[int]:
    """A mosquitto with one TLS listener on loopback and a password file; yields its port."""
    (d / "passwd").touch(mode=0o600)
    subprocess.run(["mosquitto_passwd", "-b", str(d / "passwd"), USER, PASSWORD], check=True, capture_output=True)
    port = _free_port()
    conf = [f"listener {port} 127.0.0.1", f"cafile {d / 'ca.pem'}", f"certfile {d / 'server.pem'}",
            f"keyfile {d / 'server.key'}", f"require_certificate {'true' if require_certificate else 'false'}",
            "allow_anonymous false", f"password_file {d / 'passwd'}", "persistence false",
            f"user {getpass.getuser()}", "set_tcp_nodelay true"]
    (d / "mosquitto.conf").write_text("\n".join(conf) + "\n")
    proc = subprocess.Popen([MOSQUITTO, "-c", str(d / "mosquitto.conf")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "mosquitto did not start"
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (Debian: apt-get install openssl)")
    d = tmp_path_factory.mktemp("tls")
    _certificates(d)
    return d


@pytest.fixture
def tls_broker(certs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    yield from _mosquitto(certs, require_certificate=False)


@pytest.fixture
def mutual_tls_broker(certs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
    yield from _mosquitto(certs, require_certificate=True)


ARGS = ["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "40", "--seed", "3", "--json",
        "--no-progress"]


def test_a_sharded_run_over_tls_gives_the_one_process_result(tls_broker, certs, capsys):
    """`--broker mqtts://alice@127.0.0.1:PORT --broker-ca ca.pem`, the password in the environment:
    two spawned shards reach the TLS broker and the result is the one-process result."""
    code = main([*ARGS, "--shards", "2", "--broker", f"mqtts://{USER}@127.0.0.1:{tls_broker}",
                 "--broker-ca", str(certs / "ca.pem")])
    out = capsys.readouterr()
    assert code == 0, out.err
    many = json.loads(out.out)
    one = run(RunSpec("deflection", "hypercube:4", load={"offered": 1.0}, slots=40, seed=3)).to_dict()
    assert many["transport"]["broker"] == f"mqtts://{USER}@127.0.0.1:{tls_broker}"
    for key in ("metrics", "invariants", "slots_run"):
        assert many[key] == one[key], key


def test_plain_mqtt_to_a_tls_listener_fails_in_one_line(tls_broker, capsys):
    """`--broker mqtt://` to the TLS port: exit status 1 and one line saying so, no traceback."""
    code = main([*ARGS, "--shards", "2", "--broker", f"mqtt://{USER}@127.0.0.1:{tls_broker}"])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (f"slotnet run: error: the MQTT broker mqtt://{USER}@127.0.0.1:{tls_broker} refused the connection: "
                   "it closed the connection before answering (a TLS listener? use mqtts:// with --broker-ca)\n")


def test_a_server_certificate_from_another_ca_is_refused(tls_broker, certs, tmp_path):
    """Trusting a CA that did not sign the broker's certificate: TLS fails, named in one line."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-days",
             "2", "-subj", "/CN=another CA", cwd=tmp_path)
    broker = parse_broker(f"mqtts://{USER}@127.0.0.1:{tls_broker}?ca={tmp_path / 'other.pem'}")
    with pytest.raises(SlotnetError) as e:
        trio.run(MqttClient(broker, "t").connect)
    msg = str(e.value)
    # paho leaves the socket of a failed handshake unclosed (reachable from the error's context
    # until here): collect it now, so that its ResourceWarning does not land in a later test
    del e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    assert msg.startswith(f"TLS with the MQTT broker mqtts://{USER}@127.0.0.1:{tls_broker} failed: ")
    assert "certificate" in msg and "\n" not in msg


def _connects(broker: BrokerAddress) -> None:
    async def go() -> None:
        client = MqttClient(broker, "t")
        await client.connect()
        client.close()

    trio.run(go)


def test_a_broker_that_asks_for_a_client_certificate_gets_it(mutual_tls_broker, certs):
    """With `require_certificate true`, a client without a certificate is refused in one line;
    with `--broker-cert`/`--broker-key` it connects."""
    base = f"mqtts://{USER}@127.0.0.1:{mutual_tls_broker}"
    with pytest.raises(SlotnetError) as e:
        _connects(parse_broker(with_tls_files(base, str(certs / "ca.pem"))))
    # TLS 1.3 refuses after the handshake (the broker closes), TLS 1.2 within it
    assert str(e.value) == (f"the MQTT broker {base} refused the connection: it closed the connection before "
                            "answering (does it want a client certificate? --broker-cert and --broker-key)") or (
        str(e.value).startswith(f"TLS with the MQTT broker {base} failed: ") and "\n" not in str(e.value))
    _connects(parse_broker(with_tls_files(base, str(certs / "ca.pem"), str(certs / "client.pem"),
                                          str(certs / "client.key"))))


def test_broker_urls_with_tls_files(tmp_path):
    """mqtts defaults to port 8883 and takes ca/cert/key from its query; the files must exist, go
    with mqtts only, and a certificate needs its key; the URL shown names neither files nor password."""
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "c.pem", "c.key"))
    for f in (ca, cert, key):
        f.write_text("x")
    b = parse_broker(with_tls_files("mqtts://bob:pw@h", str(ca), str(cert), str(key)))
    assert (b.host, b.port, b.user, b.password, b.tls, b.ca, b.cert, b.key) == ("h", 8883, "bob", "pw", True,
                                                                                  str(ca), str(cert), str(key))
    assert b.url == "mqtts://bob@h:8883" and parse_broker(b.full_url).ca == str(ca)
    assert parse_broker("mqtt://h").port == 1883 and not parse_broker("mqtt://h").tls
    for url, why in [
        (with_tls_files("mqtt://h:1", str(ca)), "--broker-ca need a TLS broker: --broker mqtts://..., not mqtt://"),
        (with_tls_files("mqtts://h:1", None, str(cert)), "--broker-cert and --broker-key go together"),
        (with_tls_files("mqtts://h:1", str(tmp_path / "none.pem")), f"--broker-ca {tmp_path / 'none.pem'}: no such file"),
        ("mqtts://h:1?verify=no", "unknown setting 'verify'"),
        ("tcp://h:1", "--broker must look like mqtt[s]://"),
    ]:
        with pytest.raises(SpecError, match=None) as e:
            parse_broker(url)
        assert why in str(e.value), (url, str(e.value))


def test_tls_files_without_a_broker_are_refused(capsys):
    """`--broker-ca` without `--broker`: exit status 2 and one line, before anything starts."""
    code = main([*ARGS, "--shards", "2", "--broker-ca", "ca.pem"])
    assert code == 2
    assert capsys.readouterr().err == ("slotnet run: error: --broker-ca/--broker-cert/--broker-key need "
                                       "--broker mqtts://USER@HOST:PORT\n")
