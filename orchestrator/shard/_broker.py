"""The MQTT broker of a sharded run: a private mosquitto, or one the user names.

By default a run gets its own mosquitto on a free loopback port, with credentials made
for the run and an ACL that confines them to the run's topic namespace
(``slotnet/<run>/#``); it is stopped when the run ends. ``--broker mqtt://host:port``
uses an existing broker instead (user and password in the URL, or the password in
``SLOTNET_MQTT_PASSWORD``); ``mqtts://`` speaks TLS to it, trusting the CA of
``--broker-ca`` (else the system's) and showing the client certificate of
``--broker-cert``/``--broker-key`` when given. Those files travel in the URL's query
(``mqtts://user@host:8883?ca=ca.pem&cert=client.pem&key=client.key``), which is how
``RunSpec.broker`` and spawned shards take them.
"""

from __future__ import annotations

import getpass
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from slotnet.errors import SlotnetError, SpecError

__all__ = ["TLS_FILES", "BrokerAddress", "parse_broker", "private_broker", "topic_root", "with_tls_files"]

PASSWORD_ENV = "SLOTNET_MQTT_PASSWORD"
#: The TLS files a broker URL's query may name, and the option that sets each.
TLS_FILES = {"ca": "--broker-ca", "cert": "--broker-cert", "key": "--broker-key"}
_SHAPE = "--broker must look like mqtt[s]://[user[:password]@]host:port"
INSTALL_HINT = "mosquitto not found: install it (Debian/Ubuntu: apt-get install mosquitto) or pass --broker mqtt://HOST:PORT"


@dataclass(frozen=True)
class BrokerAddress:
    """Where a broker listens and how to log in."""

    host: str
    port: int
    user: str | None = None
    password: str | None = None
    #: TLS (``mqtts://``), with the CA to trust (None: the system's) and a client
    #: certificate and its key (both or neither)
    tls: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    @property
    def url(self) -> str:
        """The URL without the password or the TLS files (what results and logs show)."""
        who = f"{quote(self.user, safe='')}@" if self.user else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{who}{self.host}:{self.port}"

    @property
    def full_url(self) -> str:
        """The URL with the TLS files, absolute (what a spawned shard is given), without the password."""
        files = {k: str(Path(v).resolve()) for k, v in (("ca", self.ca), ("cert", self.cert), ("key", self.key)) if v}
        return self.url + (f"?{urlencode(files)}" if files else "")


def topic_root(run_id: str) -> str:
    """The topic namespace of one run."""
    return f"slotnet/{run_id}"


def parse_broker(url: str) -> BrokerAddress:
    """``mqtt[s]://[user[:password]@]host:port[?ca=FILE&cert=FILE&key=FILE]`` (the password may
    come from ``SLOTNET_MQTT_PASSWORD``; ``mqtts`` defaults to port 8883, ``mqtt`` to 1883).

    Raises:
        SpecError: naming what is wrong with ``url``: its shape, its port, TLS files without
            ``mqtts``, a certificate without its key (or the reverse), a file that is not there.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        raise SpecError(f"{_SHAPE}, got {url!r}")
    tls = parts.scheme == "mqtts"
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError:
        raise SpecError(f"--broker {url!r}: bad port") from None
    files: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name not in TLS_FILES:
            raise SpecError(f"--broker {url!r}: unknown setting {name!r} (known: {', '.join(TLS_FILES)})")
        files[name] = value
    if files and not tls:
        given = ", ".join(TLS_FILES[k] for k in files)
        raise SpecError(f"{given} need a TLS broker: --broker mqtts://..., not {parts.scheme}://")
    if ("cert" in files) != ("key" in files):
        raise SpecError("--broker-cert and --broker-key go together: a client certificate and its private key")
    for name, path in files.items():
        if not Path(path).is_file():
            raise SpecError(f"{TLS_FILES[name]} {path}: no such file")
    password = parts.password or os.environ.get(PASSWORD_ENV)
    return BrokerAddress(parts.hostname, port, parts.username, password, tls, files.get("ca"), files.get("cert"),
                         files.get("key"))


def with_tls_files(url: str, ca: str | None = None, cert: str | None = None, key: str | None = None) -> str:
    """``url`` with the TLS files of ``--broker-ca``/``--broker-cert``/``--broker-key`` added to its query."""
    files = {k: v for k, v in (("ca", ca), ("cert", cert), ("key", key)) if v}
    if not files:
        return url
    return url + ("&" if urlsplit(url).query else "?") + urlencode(files)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise SlotnetError(f"mosquitto exited at start (status {proc.returncode}): {tail[0]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SlotnetError(f"mosquitto did not listen on 127.0.0.1:{port} within {timeout:g} s")


@contextmanager
def private_broker(run_id: str) -> Iterator[BrokerAddress]:
    """Start a mosquitto private to ``run_id`` on loopback; stop it on exit.

    Raises:
        SpecError: mosquitto (or mosquitto_passwd) is not installed.
        SlotnetError: it failed to start.
    """
    exe = shutil.which("mosquitto") or ("/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None)
    passwd = shutil.which("mosquitto_passwd")
    if exe is None or passwd is None:
        raise SpecError(INSTALL_HINT)
    user, password = f"run-{run_id}", secrets.token_urlsafe(18)
    with tempfile.TemporaryDirectory(prefix="slotnet-broker-") as tmp:
        d = Path(tmp)
        (d / "passwd").touch(mode=0o600)
        subprocess.run([passwd, "-b", str(d / "passwd"), user, password], check=True, capture_output=True)
        (d / "acl").write_text(f"user {user}\ntopic readwrite {topic_root(run_id)}/#\n")
        port = _free_port()
        conf = [f"listener {port} 127.0.0.1", "allow_anonymous false", f"password_file {d / 'passwd'}",
                f"acl_file {d / 'acl'}", "persistence false", f"user {getpass.getuser()}",
                "max_queued_messages 0", "message_size_limit 0",
                # a slot waits on small frames: without this, Nagle's algorithm and delayed
                # ACKs hold each one back ~40 ms (measured: 70 ms per slot at d = 10, 2 shards)
                "set_tcp_nodelay true"]
        (d / "mosquitto.conf").write_text("\n".join(conf) + "\n")
        log = d / "mosquitto.log"
        with open(log, "wb") as out:
            # its own process group: a terminal's Ctrl-C reaches the run, which stops the broker last
            proc = subprocess.Popen([exe, "-c", str(d / "mosquitto.conf")], stdout=out, stderr=subprocess.STDOUT,
                                    process_group=0)
        try:
            _wait_listening(port, proc, log)
            yield BrokerAddress("127.0.0.1", port, user, password)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
