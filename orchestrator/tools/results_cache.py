"""The results cache of ``slotnet repro``: every finished run kept, one file per run.

A run is fully fixed by its :class:`~slotnet.orchestrator.RunSpec` (its seed included),
so a run finished once need never be run again by the same code. The cache keeps each
run's result (the metrics a reproduction reads, with ``_theory``, ``_series``, ``_ok``
and ``_wall_s``) under a key made of the whole specification and :func:`code_version`:
slotnet's version and a digest of its source files, so that a changed checkout never
reuses results of other code (the command line and the report aside: they change no
run). ``slotnet repro`` uses it unless told ``--no-cache``; an interrupted reproduction
resumes where it stopped, and a second one of the same code is nearly instant.

Layout: ``DIR/<code version>/<2 hex digits>/<sha-256 of the key>.json``, where ``DIR``
is ``--cache DIR``, else ``$SLOTNET_CACHE_DIR``, else ``$XDG_CACHE_HOME/slotnet/runs``,
else ``~/.cache/slotnet/runs``. Each file is one JSON object: ``format``, ``version``,
``spec`` (the specification, for a reader and as a check against collisions) and
``result``. Tuples and dicts with non-string keys are tagged (``{"__tuple__": [...]}``,
``{"__dict__": [[key, value], ...]}``) so that a result reads back exactly as it was
computed; a result holding any other type is not cached (the run is simply not kept).
Removing a version's folder, or the whole directory, is always safe.

Writes are atomic: a temporary file in the entry's folder, flushed to disk, then
``os.replace``. A process killed mid-write leaves at most a ``.tmp-*`` file, which no
reader ever takes for an entry (and which a later cache removes after an hour); two
processes writing the same entry at once each replace it whole with the same result.
An entry that cannot be read back (damaged by hand, written by another format, its
specification not the one asked for) is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from slotnet._version import package_version

__all__ = ["FORMAT", "ResultsCache", "Uncacheable", "code_version", "decode", "default_dir", "encode", "file_mode", "spec_key"]

#: The entry format; a different number is a miss (bump it when :func:`encode` changes).
FORMAT = 1

#: Tags of :func:`encode` for the values JSON has no form of.
_TUPLE, _DICT = "__tuple__", "__dict__"

#: Left-over temporary files older than this (seconds) are removed when a cache opens.
_STALE_TMP_S = 3600.0

#: Files whose source does not enter :func:`code_version`: the command line (every file of a
#: ``cli`` folder) and the report never change what a run computes (this module's own format
#: is :data:`FORMAT`).
_NOT_IN_DIGEST = ("report_html.py", "repro_all.py", "results_cache.py")
_NOT_IN_DIGEST_DIR = "cli"


class Uncacheable(ValueError):
    """A run request or result that this cache cannot keep exactly."""


def default_dir() -> Path:
    """``$SLOTNET_CACHE_DIR``, else ``$XDG_CACHE_HOME/slotnet/runs``, else ``~/.cache/slotnet/runs``."""
    explicit = os.environ.get("SLOTNET_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "slotnet" / "runs"


_UMASK: list[int] = []


def file_mode() -> int:
    """The mode an ordinary new file gets here (0o666 less the umask): temporary files
    are made 0o600, and a file renamed into place should not stay so."""
    if not _UMASK:
        mask = os.umask(0o022)  # read once: os.umask can only be read by setting it
        os.umask(mask)
        _UMASK.append(mask)
    return 0o666 & ~_UMASK[0]


def _source_roots() -> list[Path]:
    """The folders of slotnet's import packages (pyproject's ``package-dir``)."""
    import importlib

    roots: list[Path] = []
    for name in ("slotnet", "slotnet.fabric", "slotnet.nodes", "slotnet.schemes", "slotnet.orchestrator"):
        module = importlib.import_module(name)
        roots += [Path(p) for p in getattr(module, "__path__", [])]
    return roots


_DIGESTS: dict[tuple[str, ...], str] = {}


def source_digest() -> str:
    """sha-256 (first 12 hex digits) of every ``.py`` and ``.pxd`` file of slotnet's packages
    (their relative paths and contents), the files of :data:`_NOT_IN_DIGEST` and :data:`_NOT_IN_DIGEST_DIR` aside."""
    roots = _source_roots()
    cache_key = tuple(str(r) for r in roots)
    if cache_key in _DIGESTS:
        return _DIGESTS[cache_key]
    h = hashlib.sha256()
    for root in roots:
        files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".pxd") and p.name not in _NOT_IN_DIGEST
                       and "__pycache__" not in p.parts and _NOT_IN_DIGEST_DIR not in p.relative_to(root).parts[:-1])
        for p in files:
            h.update(f"{root.name}/{p.relative_to(root).as_posix()}\0".encode())
            h.update(p.read_bytes())
            h.update(b"\0")
    _DIGESTS[cache_key] = digest = h.hexdigest()[:12]
    return digest


def code_version() -> str:
    """``<slotnet version>+<source digest>``: what a cached result must have been computed by."""
    return f"{package_version()}+{source_digest()}"


def encode(value: Any) -> Any:
    """``value`` as JSON data that :func:`decode` turns back into an equal value of the same types.

    Raises:
        Uncacheable: for a type other than None, bool, int, float, str, list, tuple, dict.

    Example:
        >>> encode({"q": {3: 1.5}, "t": (1, 2)})
        {'q': {'__dict__': [[3, 1.5]]}, 't': {'__tuple__': [1, 2]}}
        >>> decode(encode({"q": {3: 1.5}, "t": (1, 2)}))
        {'q': {3: 1.5}, 't': (1, 2)}
    """
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [encode(v) for v in value]
    if t is tuple:
        return {_TUPLE: [encode(v) for v in value]}
    if t is dict:
        if all(type(k) is str for k in value) and _TUPLE not in value and _DICT not in value:
            return {k: encode(v) for k, v in value.items()}
        return {_DICT: [[encode(k), encode(v)] for k, v in value.items()]}
    raise Uncacheable(f"cannot keep a value of type {t.__module__}.{t.__qualname__} exactly")


def decode(data: Any) -> Any:
    """The value :func:`encode` was given."""
    if type(data) is list:
        return [decode(v) for v in data]
    if type(data) is dict:
        if len(data) == 1 and _TUPLE in data:
            return tuple(decode(v) for v in data[_TUPLE])
        if len(data) == 1 and _DICT in data:
            return {_hashable(decode(k)): decode(v) for k, v in data[_DICT]}
        return {k: decode(v) for k, v in data.items()}
    return data


def _hashable(key: Any) -> Any:
    if isinstance(key, (list, dict)):
        raise ValueError("an entry's dict key decodes to an unhashable value")
    return key


def spec_key(request: Mapping[str, Any]) -> dict[str, Any]:
    """The whole specification of a run request (a mapping of RunSpec fields), defaults filled in.

    Raises:
        Uncacheable: a request with a trace or a transport (its effects reach beyond the
            result), a field RunSpec does not have, or a value :func:`encode` cannot keep.
    """
    from slotnet.fabric import FaultSchedule
    from slotnet.orchestrator import RunSpec

    known = {f.name: f for f in fields(RunSpec)}
    unknown = sorted(set(request) - set(known))
    if unknown:
        raise Uncacheable(f"RunSpec has no field {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for name, f in known.items():
        if name in request:
            value = request[name]
        elif f.default is not MISSING:
            value = f.default
        elif f.default_factory is not MISSING:
            value = f.default_factory()
        else:
            raise Uncacheable(f"the request names no {name}")
        if name in ("trace", "transport"):
            if value is not None:
                raise Uncacheable(f"a run with a {name} is not cached")
            continue
        if name == "faults":
            if value is None:
                value = []
            elif isinstance(value, FaultSchedule):
                value = value.to_list()
            elif isinstance(value, str):
                value = [value]
            else:
                value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


class ResultsCache:
    """Run results kept under ``root/<version>/``, one JSON file per run.

    Args:
        root: the cache directory (None: :func:`default_dir`).
        version: what the results were computed by (None: :func:`code_version`); a
            different version never sees them.

    Attributes:
        hits, misses, stored: counts since the cache was opened.
        write_error: why the first write that failed failed (None: none did); after it,
            nothing more is written (the runs go on without being kept).
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, version: str | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_dir()
        self.version = version if version is not None else code_version()
        self.dir = self.root / self.version.replace(os.sep, "_")
        self.hits = self.misses = self.stored = 0
        self.write_error: str | None = None
        self._remove_stale_tmp()

    def _key(self, request: Mapping[str, Any]) -> tuple[str, Any]:
        """(file name stem, encoded specification)."""
        spec = encode(spec_key(request))
        text = json.dumps({"spec": spec, "version": self.version}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest(), spec

    def path(self, request: Mapping[str, Any]) -> Path:
        """Where ``request``'s entry is (or would be).

        Raises:
            Uncacheable: see :func:`spec_key`.
        """
        digest, _ = self._key(request)
        return self.dir / digest[:2] / f"{digest}.json"

    def get(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The kept result of ``request``, or None (not kept, not cacheable, or unreadable)."""
        try:
            digest, spec = self._key(request)
        except Uncacheable:
            self.misses += 1
            return None
        try:
            with open(self.dir / digest[:2] / f"{digest}.json", encoding="utf-8") as fh:
                entry = json.load(fh)
            ok = (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("version") == self.version
                  and entry.get("spec") == spec and isinstance(entry.get("result"), dict))
            result = decode(entry["result"]) if ok else None
        except (OSError, ValueError, KeyError, TypeError):  # absent, half-copied by hand, not ours
            result = None
        if result is None:
            self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, request: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
        """Keep ``result`` for ``request`` (atomically); False if it was not kept.

        Not kept: a request or result that cannot be kept exactly (:class:`Uncacheable`),
        or a cache that cannot be written (the reason goes to :attr:`write_error`; the
        caller's runs go on, only unkept). Never raises for either.
        """
        if self.write_error is not None:
            return False
        try:
            digest, spec = self._key(request)
            data = {"format": FORMAT, "version": self.version, "spec": spec, "result": encode(dict(result))}
        except Uncacheable:
            return False
        try:
            self._store(self.dir / digest[:2], digest, json.dumps(data, separators=(",", ":")))
        except OSError as exc:
            self.write_error = f"cannot write {self.dir}: {exc.strerror or exc}"
            return False
        self.stored += 1
        return True

    def _store(self, folder: Path, digest: str, text: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=folder)
        try:
            os.chmod(tmp, file_mode())
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                self._write(fh, text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, folder / f"{digest}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @staticmethod
    def _write(fh: Any, text: str) -> None:
        """Write the entry's text to its temporary file (a seam for the tests' kill mid-write)."""
        fh.write(text)

    def entries(self) -> Iterable[Path]:
        """Every entry file of this version."""
        if not self.dir.is_dir():
            return []
        return sorted(p for p in self.dir.glob("??/*.json") if not p.name.startswith("."))

    def _remove_stale_tmp(self) -> None:
        if not self.dir.is_dir():
            return
        now = time.time()
        for tmp in self.dir.glob("??/.tmp-*"):
            try:
                if now - tmp.stat().st_mtime > _STALE_TMP_S:
                    tmp.unlink()
            except OSError:
                pass
