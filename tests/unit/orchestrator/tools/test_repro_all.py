"""Unit tests of the report tools of ``slotnet repro``: the results cache, the report's
driver (``repro all``) and the HTML page, fed hand-made rows, runs and results (no run of
a paper). Each expectation is computed by hand from the modules' documented behaviour."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import slotnet
from slotnet.errors import SchemeError, SpecError
from slotnet.orchestrator.tools import _repro, report_html, repro_all, results_cache
from slotnet.orchestrator.tools._paper_run import PaperRun
from slotnet.orchestrator.tools.repro_all import ReportProgress
from slotnet.orchestrator.tools.results_cache import ResultsCache, Uncacheable, decode, encode, spec_key
from slotnet.schemes import EXPERIMENTS, Experiment, Row
from slotnet.schemes._verdict import Explanation

STYLE_SHA = "117ed52f6e9869e1"  # the style sheet as reviewed; a changed sheet changes this pin
REQ = {"scheme": "deflection", "topology": "hypercube:3", "slots": 100, "seed": 4}


# --- results_cache: module constants and the default directory -------------------------------


def test_cache_constants() -> None:
    assert results_cache.FORMAT == 1
    assert (results_cache._TUPLE, results_cache._DICT) == ("__tuple__", "__dict__")
    assert results_cache._STALE_TMP_S == 3600.0
    assert results_cache._NOT_IN_DIGEST == ("report_html.py", "repro_all.py", "results_cache.py")
    assert results_cache._NOT_IN_DIGEST_DIR == "cli"


def test_default_dir_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SLOTNET_CACHE_DIR", "~/explicit")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert results_cache.default_dir() == tmp_path / "home" / "explicit"
    monkeypatch.setenv("SLOTNET_CACHE_DIR", "")
    assert results_cache.default_dir() == tmp_path / "xdg" / "slotnet" / "runs"
    monkeypatch.delenv("SLOTNET_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert results_cache.default_dir() == tmp_path / "home" / ".cache" / "slotnet" / "runs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert results_cache.default_dir() == tmp_path / "home" / ".cache" / "slotnet" / "runs"


def test_file_mode_is_the_umask_complement(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results_cache, "_UMASK", [])
    old = os.umask(0o027)
    try:
        assert results_cache.file_mode() == 0o640
        assert os.umask(0o027) == 0o027  # the umask is left as it was
        assert results_cache._UMASK == [0o027]
        os.umask(0o002)
        assert results_cache.file_mode() == 0o640  # read once
    finally:
        os.umask(old)


def test_source_roots_are_the_five_packages() -> None:
    import slotnet.fabric
    import slotnet.nodes
    import slotnet.orchestrator
    import slotnet.schemes

    roots = results_cache._source_roots()
    want = [Path(p) for m in (slotnet, slotnet.fabric, slotnet.nodes, slotnet.schemes, slotnet.orchestrator)
            for p in m.__path__]
    assert roots == want


def _digest_tree(root: Path) -> str:
    h = hashlib.sha256()
    for rel in ("a.py", "b.pxd", "sub/c.py"):
        h.update(f"{root.name}/{rel}\0".encode())
        h.update((root / rel).read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:12]


def test_source_digest_files_and_memo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub" / "cli").mkdir(parents=True)
    (root / "cli").mkdir()
    (root / "__pycache__").mkdir()
    for rel, text in {"a.py": "A", "b.pxd": "B", "sub/c.py": "C", "cli/__init__.py": "x", "sub/cli/_main.py": "x",
                      "report_html.py": "x", "repro_all.py": "x", "sub/results_cache.py": "x", "notes.txt": "x", "d.pyx": "x",
                      "__pycache__/e.py": "x"}.items():
        (root / rel).write_text(text)
    monkeypatch.setattr(results_cache, "_source_roots", lambda: [root])
    monkeypatch.setattr(results_cache, "_DIGESTS", {})
    got = results_cache.source_digest()
    assert got == _digest_tree(root)
    assert len(got) == 12
    assert {(str(root),): got} == results_cache._DIGESTS
    (root / "a.py").write_text("changed")
    assert results_cache.source_digest() == got  # memoised per set of roots
    results_cache._DIGESTS.clear()
    assert results_cache.source_digest() == _digest_tree(root) != got
    monkeypatch.setattr(results_cache, "source_digest", lambda: "abc")
    monkeypatch.setattr(results_cache, "package_version", lambda: "1.2")
    assert results_cache.code_version() == "1.2+abc"


# --- results_cache: encode / decode ------------------------------------------------------


def test_encode_exact_forms() -> None:
    assert encode(None) is None
    assert encode(True) is True and encode(3) == 3 and encode(2.5) == 2.5 and encode("s") == "s"
    assert encode([1, (2, 3)]) == [1, {"__tuple__": [2, 3]}]
    assert encode({"a": (1,)}) == {"a": {"__tuple__": [1]}}
    assert encode({3: 1.5, "b": 2}) == {"__dict__": [[3, 1.5], ["b", 2]]}
    assert encode({"__tuple__": 1}) == {"__dict__": [["__tuple__", 1]]}
    assert encode({"__dict__": 1}) == {"__dict__": [["__dict__", 1]]}
    assert encode({(1, 2): "t"}) == {"__dict__": [[{"__tuple__": [1, 2]}, "t"]]}
    assert encode({}) == {}


class _Sub(int):
    pass


@pytest.mark.parametrize("value, name", [({1, 2}, "builtins.set"), (_Sub(1), f"{__name__}._Sub"),
                                         (b"x", "builtins.bytes")])
def test_encode_refuses_other_types(value: Any, name: str) -> None:
    with pytest.raises(Uncacheable, match=f"^cannot keep a value of type {re.escape(name)} exactly$"):
        encode(value)
    with pytest.raises(Uncacheable):
        encode({"k": [value]})


@pytest.mark.parametrize("value", [{"q": {3: 1.5}, "t": (1, 2)}, [(), {}, {"__tuple__": (1, [2])}],
                                   {(1, "a"): {None: [1.0, False]}}, (("x",),), {"__dict__": {"a": 1}, "b": 2}])
def test_encode_decode_round_trip(value: Any) -> None:
    back = decode(json.loads(json.dumps(encode(value))))
    assert back == value
    assert repr(back) == repr(value)  # the same types too


def test_decode_plain_and_unhashable() -> None:
    assert decode({"__tuple__": [1], "x": 2}) == {"__tuple__": [1], "x": 2}
    assert decode({"__dict__": [[1, 2]], "x": 2}) == {"__dict__": [[1, 2]], "x": 2}
    assert decode({"__tuple__": [[1]]}) == ([1],)
    assert decode({"__dict__": [[{"__tuple__": [1]}, 2]]}) == {(1,): 2}
    assert decode(5) == 5 and decode("s") == "s"
    with pytest.raises(ValueError, match="^an entry's dict key decodes to an unhashable value$"):
        decode({"__dict__": [[[1], 2]]})
    with pytest.raises(ValueError, match="unhashable"):
        decode({"__dict__": [[{"a": 1}, 2]]})


# --- results_cache: spec_key ---------------------------------------------------------------


def _defaults() -> dict[str, Any]:
    from dataclasses import MISSING, fields

    from slotnet.orchestrator import RunSpec

    out = {}
    for f in fields(RunSpec):
        if f.name in ("trace", "transport"):
            continue
        if f.default is not MISSING:
            out[f.name] = f.default
        elif f.default_factory is not MISSING:
            out[f.name] = f.default_factory()
    return out


def test_spec_key_fills_defaults() -> None:
    key = spec_key(REQ)
    want = {**_defaults(), **REQ, "faults": []}
    assert key == want
    assert "trace" not in key and "transport" not in key
    assert list(key) == [n for n in _field_names() if n not in ("trace", "transport")]


def _field_names() -> list[str]:
    from dataclasses import fields

    from slotnet.orchestrator import RunSpec

    return [f.name for f in fields(RunSpec)]


def test_spec_key_refusals() -> None:
    with pytest.raises(Uncacheable, match="^RunSpec has no field bogus, zzz$"):
        spec_key({**REQ, "zzz": 1, "bogus": 2})
    with pytest.raises(Uncacheable, match="^the request names no topology$"):
        spec_key({"scheme": "deflection"})
    with pytest.raises(Uncacheable, match="^a run with a trace is not cached$"):
        spec_key({**REQ, "trace": "t.jsonl"})
    with pytest.raises(Uncacheable, match="^a run with a transport is not cached$"):
        spec_key({**REQ, "transport": object()})
    assert "trace" not in spec_key({**REQ, "trace": None, "transport": None})


def test_spec_key_faults_and_mappings() -> None:
    from types import MappingProxyType

    from slotnet.fabric import FaultSchedule

    assert spec_key({**REQ, "faults": None})["faults"] == []
    assert spec_key({**REQ, "faults": "link:0-1@5"})["faults"] == ["link:0-1@5"]
    assert spec_key({**REQ, "faults": ("a", "b")})["faults"] == ["a", "b"]
    sched = FaultSchedule.parse(["crash@60:7", "recover@80:7"])
    assert spec_key({**REQ, "faults": sched})["faults"] == sched.to_list() == ["crash@60:7", "recover@80:7"]
    key = spec_key({**REQ, "params": MappingProxyType({"v": 1})})
    assert type(key["params"]) is dict and key["params"] == {"v": 1}


# --- results_cache: the cache ---------------------------------------------------------------


def _digest(request: dict[str, Any], version: str) -> str:
    text = json.dumps({"spec": encode(spec_key(request)), "version": version}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def test_cache_layout_and_entry(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path / "c", version="v1")
    assert cache.root == tmp_path / "c" and cache.version == "v1" and cache.dir == tmp_path / "c" / "v1"
    assert (cache.hits, cache.misses, cache.stored, cache.write_error) == (0, 0, 0, None)
    digest = _digest(REQ, "v1")
    assert cache.path(REQ) == tmp_path / "c" / "v1" / digest[:2] / f"{digest}.json"
    assert cache.get(REQ) is None and (cache.hits, cache.misses) == (0, 1)
    assert list(cache.entries()) == []
    result = {"mean": 1.5, "_theory": {"mean": (1.0, 2)}, "q": {3: [1]}}
    assert cache.put(REQ, result) is True and cache.stored == 1
    path = cache.path(REQ)
    data = {"format": 1, "version": "v1", "spec": encode(spec_key(REQ)), "result": encode(result)}
    assert path.read_text(encoding="utf-8") == json.dumps(data, separators=(",", ":"))
    assert path.stat().st_mode & 0o777 == results_cache.file_mode()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
    assert cache.get(REQ) == result and (cache.hits, cache.misses) == (1, 1)
    assert cache.get(dict(REQ)) == result and cache.hits == 2
    assert list(cache.entries()) == [path]
    other = ResultsCache(tmp_path / "c", version="v2")
    assert other.get(REQ) is None and other.misses == 1 and list(other.entries()) == []


def test_cache_version_with_separator(tmp_path: Path) -> None:
    cache = ResultsCache(str(tmp_path), version=f"a{os.sep}b")
    assert cache.dir == tmp_path / "a_b"
    assert cache.put(REQ, {"x": 1})
    assert cache.path(REQ).parent.parent == tmp_path / "a_b"


def test_cache_default_root_and_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLOTNET_CACHE_DIR", str(tmp_path / "d"))
    monkeypatch.setattr(results_cache, "code_version", lambda: "cv")
    cache = ResultsCache()
    assert cache.root == tmp_path / "d" and cache.version == "cv" and cache.dir == tmp_path / "d" / "cv"
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert ResultsCache("~/x", version="w").root == tmp_path / "h" / "x"


def test_cache_uncacheable_requests_and_results(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path, version="v")
    assert cache.get({**REQ, "trace": "t"}) is None and cache.misses == 1
    assert cache.put({**REQ, "trace": "t"}, {"x": 1}) is False
    assert cache.put(REQ, {"x": {1, 2}}) is False
    assert cache.stored == 0 and cache.write_error is None and list(cache.entries()) == []
    with pytest.raises(Uncacheable):
        cache.path({**REQ, "nope": 1})


@pytest.mark.parametrize("change", ["format", "version", "spec", "result", "list", "json", "key"])
def test_cache_unreadable_entries_are_misses(tmp_path: Path, change: str) -> None:
    cache = ResultsCache(tmp_path, version="v")
    assert cache.put(REQ, {"x": 1})
    path = cache.path(REQ)
    entry = json.loads(path.read_text())
    if change == "format":
        entry["format"] = 2
    elif change == "version":
        entry["version"] = "w"
    elif change == "spec":
        entry["spec"]["seed"] = 5
    elif change == "result":
        entry["result"] = [1]
    elif change == "list":
        entry = [entry]
    elif change == "key":
        entry["result"] = {"__dict__": [[[1], 2]]}
    path.write_text("{" if change == "json" else json.dumps(entry))
    assert cache.get(REQ) is None
    assert (cache.hits, cache.misses) == (0, 1)


def test_cache_each_field_checked_alone(tmp_path: Path) -> None:
    """An entry passes only with every check: the unchanged one is a hit."""
    cache = ResultsCache(tmp_path, version="v")
    cache.put(REQ, {"x": 1})
    assert cache.get(REQ) == {"x": 1}
    entry = json.loads(cache.path(REQ).read_text())
    del entry["format"]
    cache.path(REQ).write_text(json.dumps(entry))
    assert cache.get(REQ) is None


def test_cache_write_failure_is_kept_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResultsCache(tmp_path, version="v")

    def fail(folder: Path, digest: str, text: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache, "_store", fail)
    assert cache.put(REQ, {"x": 1}) is False
    assert cache.write_error == f"cannot write {tmp_path / 'v'}: Permission denied"
    assert cache.stored == 0
    monkeypatch.undo()
    assert cache.put(REQ, {"x": 1}) is False  # nothing more is written
    assert not cache.path(REQ).exists()


def test_cache_write_failure_without_strerror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResultsCache(tmp_path, version="v")
    monkeypatch.setattr(cache, "_store", lambda *a: (_ for _ in ()).throw(OSError("plain")))
    assert cache.put(REQ, {"x": 1}) is False
    assert cache.write_error == f"cannot write {tmp_path / 'v'}: plain"


def test_cache_temporary_file_and_kill_mid_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ResultsCache(tmp_path, version="v")
    seen: list[tuple[list[str], int]] = []

    def spy(fh: Any, text: str) -> None:
        names = sorted(os.listdir(cache.path(REQ).parent))
        seen.append((names, os.fstat(fh.fileno()).st_mode & 0o777))
        fh.write(text)

    monkeypatch.setattr(ResultsCache, "_write", staticmethod(spy))
    assert cache.put(REQ, {"x": 1})
    [(names, mode)] = seen
    assert len(names) == 1 and names[0].startswith(".tmp-") and names[0].endswith(".part")
    assert mode == results_cache.file_mode()

    def die(fh: Any, text: str) -> None:
        fh.write(text[:5])
        raise KeyboardInterrupt

    monkeypatch.setattr(ResultsCache, "_write", staticmethod(die))
    with pytest.raises(KeyboardInterrupt):
        cache.put({**REQ, "seed": 9}, {"x": 2})
    assert list(cache.entries()) == [cache.path(REQ)]
    assert not [p for p in tmp_path.rglob(".tmp-*")]
    assert cache.stored == 1


def test_cache_entries_skip_hidden_and_other_files(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path, version="v")
    for seed in (3, 1, 2):
        cache.put({**REQ, "seed": seed}, {"s": seed})
    (cache.dir / "ab").mkdir(exist_ok=True)
    (cache.dir / "ab" / ".hidden.json").write_text("{}")
    (cache.dir / "ab" / "x.txt").write_text("{}")
    (cache.dir / "abc").mkdir()
    (cache.dir / "abc" / "y.json").write_text("{}")
    (cache.dir / "top.json").write_text("{}")
    got = list(cache.entries())
    assert got == sorted(cache.path({**REQ, "seed": s}) for s in (1, 2, 3))


def test_cache_removes_only_stale_temporary_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "v" / "ab"
    folder.mkdir(parents=True)
    now = 2_000_000_000.0
    monkeypatch.setattr(results_cache, "time", argparse.Namespace(time=lambda: now))
    ages = {".tmp-old.part": 3600.5, ".tmp-edge.part": 3600.0, ".tmp-young.part": 3599.5, "keep.json": 9999.0}
    for name, age in ages.items():
        (folder / name).write_text("x")
        os.utime(folder / name, (now - age, now - age))
    (tmp_path / "v" / ".tmp-top").write_text("x")
    os.utime(tmp_path / "v" / ".tmp-top", (now - 9999, now - 9999))
    ResultsCache(tmp_path, version="v")
    assert sorted(os.listdir(folder)) == [".tmp-edge.part", ".tmp-young.part", "keep.json"]
    assert (tmp_path / "v" / ".tmp-top").exists()
    ResultsCache(tmp_path / "none", version="v")  # no folder yet: nothing to do
    assert not (tmp_path / "none").exists()


# --- repro_all: passes, estimates, progress ---------------------------------------------------


def _exp(paper: str, **kw: Any) -> Experiment:
    return Experiment(paper, f"{paper} doc.\n\nSecond  paragraph\n of {paper}.", lambda runner, **o: [], **kw)


def test_report_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-a", _exp("zz-a", report_pass=({"sweep_d": 4}, {"sweep_d": 6})))
    monkeypatch.setitem(EXPERIMENTS, "zz-b", _exp("zz-b"))
    assert repro_all.report_parts(["zz-a", "zz-b", "zz-none"], True) == [
        ("zz-a", {}), ("zz-a", {"sweep_d": 4}), ("zz-b", {}), ("zz-none", {})]
    assert repro_all.report_parts(["zz-a"], False, {}) == [("zz-a", {}), ("zz-a", {"sweep_d": 6})]
    opts = {"dims": 3}
    got = repro_all.report_parts(["zz-a", "zz-b"], False, opts)
    assert got == [("zz-a", {"dims": 3}), ("zz-b", {"dims": 3})]
    assert got[0][1] is not opts


def test_nominal_wall(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bool, Any]] = []

    def est(quick: bool, options: Any) -> Any:
        seen.append((quick, options))
        return options.get("v")

    monkeypatch.setitem(EXPERIMENTS, "zz-e", _exp("zz-e", estimate=est))
    monkeypatch.setitem(EXPERIMENTS, "zz-n", _exp("zz-n"))
    monkeypatch.setitem(EXPERIMENTS, "zz-x", _exp("zz-x", estimate=lambda q, o: 1 / 0))
    assert repro_all.nominal_wall("zz-e", True, {"v": 5}) == 5.0
    assert type(repro_all.nominal_wall("zz-e", False, {"v": 5})) is float
    assert seen == [(True, {"v": 5}), (False, {"v": 5})]
    assert repro_all.nominal_wall("zz-e", True, {"v": 0}) == 0.0
    for bad in (None, -0.5, float("nan"), float("inf")):
        assert repro_all.nominal_wall("zz-e", True, {"v": bad}) is None
    assert repro_all.nominal_wall("zz-n", True, {}) is None
    assert repro_all.nominal_wall("zz-x", True, {}) is None
    assert repro_all.nominal_wall("zz-unknown", True, {}) is None


def test_report_progress_heads_and_tails() -> None:
    s = io.StringIO()
    bar = ReportProgress(2, 3, "b", ["c"], {"c": 65.0}, stream=s, enabled=False)
    assert bar.head == "paper 2/3 b: " and bar.own is None
    assert bar.tail == "; then about 1:05 for 1 more paper"
    assert ReportProgress(1, 1, "b", [], {}, stream=s, enabled=False).head == "b: "
    assert ReportProgress(1, 1, "b", [], {}, stream=s, enabled=False).tail == ""
    bar = ReportProgress(1, 4, "a", ["b", "c", "d"], {}, stream=s, enabled=False, nominal={"b": 10.0, "c": 20.0})
    assert bar.tail == "; then about 0:30 for 2 more papers (2 from their experiment's estimate), 1 more paper not yet timed"
    bar = ReportProgress(1, 4, "a", ["b", "c", "d"], {"b": 3.0, "a": 7.0}, stream=s, enabled=False,
                         nominal={"c": 20.0, "a": 99.0})
    assert bar.own == 7.0
    assert bar.tail == "; then about 0:23 for 2 more papers (1 from its experiment's estimate), 1 more paper not yet timed"
    bar = ReportProgress(1, 4, "a", ["b", "c", "d"], {}, stream=s, enabled=False, nominal={"a": 99.0})
    assert bar.own == 99.0 and bar.tail == "; 3 more papers not yet timed"
    bar = ReportProgress(1, 4, "a", ["b", "c"], {"b": 1.0, "c": 2.0}, stream=s, enabled=False)
    assert bar.tail == "; then about 0:03 for 2 more papers"


def test_report_progress_line() -> None:
    s = io.StringIO()
    bar = ReportProgress(1, 2, "a", ["b"], {"a": 65.0, "b": 5.0}, stream=s, enabled=False)
    bar.start = time.monotonic() - 10.0
    assert bar.line() == ("paper 1/2 a: [                    ] runs 0/0, 0:10 elapsed, about 0:55 left (estimate); "
                          "then about 0:05 for 1 more paper")
    bar.own = 4.0
    assert bar.line().endswith("0:10 elapsed, about 0:00 left (estimate); then about 0:05 for 1 more paper")
    bar.total, bar.finished = 2, 1
    assert ", about" not in bar.line().split("elapsed")[1].split(";")[0] or "(estimate)" not in bar.line()
    assert "(estimate)" not in bar.line()
    bar = ReportProgress(1, 1, "a", [], {}, stream=s, enabled=False)
    assert bar.line().endswith("0:00 elapsed")


# --- repro_all: walls.json -------------------------------------------------------------------


def test_walls_read(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path, version="v")
    assert repro_all._walls(None, True) == {}
    assert repro_all._walls_path(None) is None
    assert repro_all._walls_path(cache) == tmp_path / "walls.json"
    assert repro_all._walls(cache, True) == {}
    (tmp_path / "walls.json").write_text(json.dumps({"quick": {"a": 3, "b": "2.5"}, "full": {"a": 30}}))
    assert repro_all._walls(cache, True) == {"a": 3.0, "b": 2.5}
    assert repro_all._walls(cache, False) == {"a": 30.0}
    (tmp_path / "walls.json").write_text(json.dumps({"full": {"a": 30}}))
    assert repro_all._walls(cache, True) == {}
    for bad in ("[1]", "{", json.dumps({"quick": 5}), json.dumps({"quick": {"a": "x"}}), json.dumps({"quick": {"a": None}})):
        (tmp_path / "walls.json").write_text(bad)
        assert repro_all._walls(cache, True) == {}


def test_remember_wall(tmp_path: Path) -> None:
    cache = ResultsCache(tmp_path / "c", version="v")
    repro_all._remember_wall(None, True, "a", 1.0)
    repro_all._remember_wall(cache, True, "a", 1.26)
    path = tmp_path / "c" / "walls.json"
    assert json.loads(path.read_text()) == {"quick": {"a": 1.3}}
    assert path.stat().st_mode & 0o777 == results_cache.file_mode()
    repro_all._remember_wall(cache, False, "b", 7.04)
    repro_all._remember_wall(cache, True, "a", 2.0)
    assert json.loads(path.read_text()) == {"quick": {"a": 2.0}, "full": {"b": 7.0}}
    assert sorted(os.listdir(tmp_path / "c")) == ["walls.json"]
    path.write_text(json.dumps({"quick": [1], "full": {"b": 1}}))
    repro_all._remember_wall(cache, True, "a", 3.0)
    assert json.loads(path.read_text()) == {"quick": {"a": 3.0}, "full": {"b": 1}}
    for bad in ("[1, 2]", "{"):
        path.write_text(bad)
        repro_all._remember_wall(cache, False, "z", 4.0)
        assert json.loads(path.read_text()) == {"full": {"z": 4.0}}


def test_remember_wall_unwritable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    cache = ResultsCache(tmp_path / "file" / "below", version="v")
    repro_all._remember_wall(cache, True, "a", 1.0)  # only an estimate is lost: no error
    assert (tmp_path / "file").read_text() == "x"


def test_figures(tmp_path: Path) -> None:
    assert repro_all._figures(str(tmp_path)) == []
    (tmp_path / "fig.png").write_bytes(b"one")
    (tmp_path / "other.png").write_bytes(b"x")
    (tmp_path / "fig_z.txt").write_bytes(b"x")
    assert repro_all._figures(str(tmp_path)) == [("", b"one")]
    (tmp_path / "fig_b.png").write_bytes(b"B")
    (tmp_path / "fig_a.png").write_bytes(b"A")
    assert repro_all._figures(str(tmp_path)) == [("a", b"A"), ("b", b"B")]


# --- repro_all: run_papers with a stand-in for one paper's reproduction --------------------------


def _row(exp: str = "T1", case: str = "d=3", metric: str = "m", paper: float | None = 1.0, sim: float | None = 1.0,
         ci: float | None = 0.1, theory: float | None = 1.0, note: str = "") -> Row:
    return Row(exp, case, metric, paper, sim, ci, theory, note=note)


class _Clock:
    """perf_counter advancing 10 s per reading; monotonic the real one."""

    def __init__(self) -> None:
        self.t = 0.0
        self.monotonic = time.monotonic
        self.strftime = time.strftime
        self.gmtime = time.gmtime

    def perf_counter(self) -> float:
        self.t += 10.0
        return self.t


def _fake_repro(monkeypatch: pytest.MonkeyPatch, behave: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    behave = behave or {}

    def repro(paper: str, **kw: Any) -> tuple[list[Row], float]:
        bar = kw["progress"]
        calls.append({"paper": paper, **kw, "head": bar.head, "tail": bar.tail, "own": bar.own})
        todo = behave.get(paper, "ok")
        if todo == "plot-refused" and kw["plot"] is not None:
            raise SpecError("no plot here")
        kw["on_run"]({"scheme": "s", "seed": kw["seed"]}, {"_wall_s": 0.25}, todo == "cached")
        if kw["plot"] is not None:
            Path(kw["plot"]).with_name("fig_p.png").write_bytes(paper.encode())
        if todo == "partial":
            raise _repro.PartialRepro("half done", [_row(case="partial")])
        if todo == "scheme":
            raise SchemeError("broken scheme")
        if todo == "spec-late":
            raise SpecError("refused late")
        return [_row(exp=paper)], 1.0

    monkeypatch.setattr(_repro, "repro", repro)
    monkeypatch.setattr(repro_all, "time", _Clock())
    return calls


def test_run_papers_basic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _fake_repro(monkeypatch)
    cache = ResultsCache(tmp_path, version="v")
    named: list[str] = []
    sink = []
    out = repro_all.run_papers(["zz-a", "zz-b"], seed=7, quick=True, jobs=3, cache=cache, figures=False,
                               progress=False, on_paper=named.append, on_rows=sink.append)
    assert named == ["zz-a", "zz-b"]
    assert [(r.paper, r.seed, r.quick, r.options, r.error, r.figures, r.wall_s) for r in out] == [
        ("zz-a", 7, True, {}, "", [], 10.0), ("zz-b", 7, True, {}, "", [], 10.0)]
    assert out[0].rows == [_row(exp="zz-a")]
    assert out[0].runs == [({"scheme": "s", "seed": 7}, 0.25, False)]
    assert [(c["paper"], c["seed"], c["jobs"], c["quick"], c["cache"], c["plot"], c["on_rows"]) for c in calls] == [
        ("zz-a", 7, 3, True, cache, None, sink.append), ("zz-b", 7, 3, True, cache, None, sink.append)]
    assert calls[0]["head"] == "paper 1/2 zz-a: " and calls[1]["head"] == "paper 2/2 zz-b: "
    assert calls[0]["tail"] == "; 1 more paper not yet timed" and calls[1]["tail"] == ""
    assert calls[0]["progress"].enabled is False
    assert json.loads((tmp_path / "walls.json").read_text()) == {"quick": {"zz-a": 10.0, "zz-b": 10.0}}


def test_run_papers_scale_from_estimates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, est in (("zz-a", 10.0), ("zz-b", 5.0), ("zz-c", 4.0), ("zz-z", 0.0)):
        monkeypatch.setitem(EXPERIMENTS, name, _exp(name, estimate=lambda q, o, est=est: est))
    (tmp_path / "walls.json").write_text(json.dumps({"full": {"zz-a": 20.0, "zz-z": 50.0}}))
    calls = _fake_repro(monkeypatch)
    cache = ResultsCache(tmp_path, version="v")
    repro_all.run_papers(["zz-a", "zz-b", "zz-c"], seed=1, quick=False, jobs=None, cache=cache, figures=False)
    assert [c["own"] for c in calls] == [20.0, 5.0, pytest.approx(4.0 * 20 / 15)]
    assert calls[0]["tail"] == "; then about 0:18 for 2 more papers (2 from their experiment's estimate)"
    assert calls[1]["tail"] == "; then about 0:04 for 1 more paper (1 from its experiment's estimate)"
    assert json.loads((tmp_path / "walls.json").read_text()) == {
        "full": {"zz-a": 10.0, "zz-z": 50.0, "zz-b": 10.0, "zz-c": 10.0}}


def test_run_papers_zero_estimate_gives_no_scale(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-z", _exp("zz-z", estimate=lambda q, o: 0.0))
    monkeypatch.setitem(EXPERIMENTS, "zz-b", _exp("zz-b", estimate=lambda q, o: 6.0))
    (tmp_path / "walls.json").write_text(json.dumps({"full": {"zz-z": 50.0}}))
    calls = _fake_repro(monkeypatch, {"zz-z": "cached"})
    repro_all.run_papers(["zz-z", "zz-b"], seed=1, quick=False, jobs=1, cache=ResultsCache(tmp_path, version="v"),
                         figures=False)
    assert calls[1]["own"] == 6.0


def test_run_papers_figures_and_failures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _fake_repro(monkeypatch, {"zz-r": "plot-refused", "zz-p": "partial", "zz-s": "scheme", "zz-c": "cached"})
    cache = ResultsCache(tmp_path, version="v")
    out = repro_all.run_papers(["zz-ok", "zz-r", "zz-p", "zz-s", "zz-c"], seed=2, quick=False, jobs=1, cache=cache,
                               figures=True)
    ok, refused, partial, scheme, cached = out
    assert ok.figures == [("p", b"zz-ok")] and ok.error == ""
    assert calls[0]["plot"].endswith(os.sep + "fig.png") and "slotnet-report-" in calls[0]["plot"]
    assert not os.path.exists(os.path.dirname(calls[0]["plot"]))  # the temporary folder is gone
    assert [c["plot"] is None for c in calls if c["paper"] == "zz-r"] == [False, True]
    assert refused.error == "" and refused.rows == [_row(exp="zz-r")] and refused.figures == []
    assert partial.error == "half done" and partial.rows == [_row(case="partial")] and partial.figures
    assert scheme.error == "broken scheme" and scheme.rows == []
    assert cached.error == "" and cached.runs[0][2] is True
    assert json.loads((tmp_path / "walls.json").read_text()) == {"full": {"zz-ok": 10.0, "zz-r": 10.0}}


def test_run_papers_keep_going_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_repro(monkeypatch, {"zz-l": "spec-late", "zz-s": "scheme"})
    out = repro_all.run_papers(["zz-s"], seed=2, quick=False, jobs=1, cache=None, figures=False, keep_going=False)
    assert out[0].error == "broken scheme"  # not a refusal of options: kept
    with pytest.raises(SpecError, match="^refused late$"):
        repro_all.run_papers(["zz-l"], seed=2, quick=False, jobs=1, cache=None, figures=False, keep_going=False)
    with pytest.raises(SpecError, match="^refused late$"):  # runs done before the refusal: not retried
        repro_all.run_papers(["zz-l"], seed=2, quick=False, jobs=1, cache=None, figures=True, keep_going=False)
    out = repro_all.run_papers(["zz-l"], seed=2, quick=False, jobs=1, cache=None, figures=True)
    assert out[0].error == "refused late"


def test_run_papers_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-a", _exp("zz-a", report_pass=({"sweep_d": 4}, {"sweep_d": 6})))
    calls = _fake_repro(monkeypatch)
    out = repro_all.run_papers(["zz-a"], seed=1, quick=True, jobs=1, cache=None, figures=False, extras=True)
    assert [r.label for r in out] == ["zz-a", "zz-a --sweep-d 4"]
    assert calls[1]["sweep_d"] == 4 and "sweep_d" not in calls[0]
    assert calls[0]["head"] == "paper 1/2 zz-a: " and calls[0]["tail"] == "; 1 more paper not yet timed"
    out = repro_all.run_papers(["zz-a"], seed=1, quick=True, jobs=1, cache=None, figures=False)
    assert [r.label for r in out] == ["zz-a"]
    out = repro_all.run_papers(["zz-a"], seed=1, quick=True, jobs=1, cache=None, figures=False,
                               options={"dims": 2}, extras=True)
    assert [r.label for r in out] == ["zz-a --dims 2"] and calls[-1]["dims"] == 2


# --- repro_all: metadata ------------------------------------------------------------------------


def test_git_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], dict[str, Any]]] = []
    answers: list[Any] = []

    def run(cmd: list[str], **kw: Any) -> Any:
        seen.append((cmd, kw))
        a = answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return subprocess.CompletedProcess(cmd, a[0], a[1], "")

    monkeypatch.setattr(repro_all.subprocess, "run", run)
    where = str(Path(slotnet.__file__).resolve().parent)
    answers[:] = [(0, "abc123\n"), (0, "")]
    assert repro_all.git_commit() == "abc123"
    assert seen == [(["git", "-C", where, "rev-parse", "HEAD"], {"capture_output": True, "text": True, "timeout": 10}),
                    (["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                     {"capture_output": True, "text": True, "timeout": 30})]
    answers[:] = [(0, "abc123\n"), (0, " M x.py\n")]
    assert repro_all.git_commit() == "abc123 + local changes"
    answers[:] = [(128, "")]
    assert repro_all.git_commit() == "unknown (not run from a git checkout)"
    answers[:] = [OSError("no git")]
    assert repro_all.git_commit() == "unknown (git is not available)"
    answers[:] = [(0, "abc\n"), subprocess.TimeoutExpired("git", 30)]
    assert repro_all.git_commit() == "unknown (git is not available)"


def test_cpu_model(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[Any, ...]] = []

    def fake_open(*a: Any, **kw: Any) -> io.StringIO:
        opened.append((a, kw))
        return io.StringIO("processor\t: 0\nmodel name\t: Fancy: CPU 9  \nmodel name\t: second\n")

    monkeypatch.setattr(repro_all, "open", fake_open, raising=False)
    assert repro_all._cpu_model() == "Fancy: CPU 9"
    assert opened == [(("/proc/cpuinfo",), {"encoding": "utf-8"})]
    monkeypatch.setattr(repro_all.platform, "processor", lambda: "proc")
    monkeypatch.setattr(repro_all.platform, "machine", lambda: "mach")
    monkeypatch.setattr(repro_all, "open", lambda *a, **k: io.StringIO("flags: x\n"), raising=False)
    assert repro_all._cpu_model() == "proc"

    def broken(*a: Any, **k: Any) -> Any:
        raise OSError

    monkeypatch.setattr(repro_all, "open", broken, raising=False)
    assert repro_all._cpu_model() == "proc"
    monkeypatch.setattr(repro_all.platform, "processor", lambda: "")
    assert repro_all._cpu_model() == "mach"


def _meta_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import slotnet._build

    monkeypatch.setattr(repro_all, "slotnet_version", lambda: "1.2.3")
    monkeypatch.setattr(slotnet._build, "build", lambda: "pure Python")
    monkeypatch.setattr(repro_all, "git_commit", lambda: "deadbeef")
    monkeypatch.setattr(results_cache, "code_version", lambda: "1.2.3+code")
    monkeypatch.setattr(repro_all, "_cpu_model", lambda: "CPU X")
    monkeypatch.setattr(repro_all.os, "cpu_count", lambda: 6)
    monkeypatch.setattr(repro_all.platform, "platform", lambda: "Linux-1")
    monkeypatch.setattr(repro_all.platform, "python_implementation", lambda: "CPython")
    monkeypatch.setattr(repro_all.platform, "python_version", lambda: "3.99.0")
    clock = _Clock()
    clock.gmtime = lambda: time.gmtime(0)  # type: ignore[method-assign]
    monkeypatch.setattr(repro_all, "time", clock)


def test_metadata(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _meta_env(monkeypatch)
    a = PaperRun("pa", 3, False, wall_s=1.25, runs=[({}, 1.0, True), ({}, 2.0, False)])
    b = PaperRun("pb", 1, True, wall_s=2.0, runs=[({}, 1.0, True)])
    cache = ResultsCache(tmp_path, version="cv")
    assert repro_all.metadata([a, b], jobs=4, cache=cache, wall_s=3725.0) == [
        ("slotnet", "1.2.3"), ("hot path", "pure Python"), ("git commit", "deadbeef"),
        ("code version (cache key)", "cv"),
        ("seeds", "1, 3 (every run's seed is fixed by it; the rerun commands name it)"),
        ("mode", "--quick (a subset of rows, shorter runs)"),
        ("machine", "CPU X, 6 cores; Linux-1"), ("python", "CPython 3.99.0"), ("worker processes", "4"),
        ("runs", f"3, of which 2 from the results cache ({tmp_path / 'cv'})"),
        ("wall time", "1:02:05 in all; pa 1.2 s, pb 2.0 s"), ("generated", "1970-01-01 00:00:00 UTC")]
    got = dict(repro_all.metadata([a], jobs=1, cache=None, wall_s=5.0))
    assert got["code version (cache key)"] == "1.2.3+code"
    assert got["mode"] == "full"
    assert got["runs"] == "2 (results cache off)"
    assert got["seeds"].startswith("3 (")


# --- repro_all: the command line ----------------------------------------------------------------


def test_open_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results_cache, "code_version", lambda: "cv")
    with pytest.raises(SpecError, match="^--cache and --no-cache contradict each other: give one$"):
        repro_all.open_cache(argparse.Namespace(no_cache=True, cache=str(tmp_path)))
    assert repro_all.open_cache(argparse.Namespace(no_cache=True, cache=None)) is None
    assert repro_all.open_cache(argparse.Namespace(no_cache=True)) is None
    got = repro_all.open_cache(argparse.Namespace(no_cache=False, cache=str(tmp_path)))
    assert isinstance(got, ResultsCache) and got.root == tmp_path
    monkeypatch.setenv("SLOTNET_CACHE_DIR", str(tmp_path / "env"))
    got = repro_all.open_cache(argparse.Namespace())
    assert got is not None and got.root == tmp_path / "env"


def test_check_figure_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    bad = str(tmp_path / "no" / "r.html")
    with pytest.raises(SpecError, match=re.escape(f"--x: cannot write {bad!r}: No such file or directory") + "$"):
        repro_all.check_figure_output("--x", bad, "m")
    new = tmp_path / "r.html"
    repro_all.check_figure_output("--x", str(new), "m")
    assert not new.exists()
    new.write_text("keep")
    repro_all.check_figure_output("--x", str(new), "m")
    assert new.read_text() == "keep"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "matplotlib" else real(name))
    with pytest.raises(SpecError, match="^--x needs matplotlib, which is not installed: do this$"):
        repro_all.check_figure_output("--x", str(new), "do this")
    seen = []
    monkeypatch.setattr(repro_all, "check_figure_output", lambda *a: seen.append(a))
    repro_all.check_html("p.html")
    assert seen == [("--html", "p.html", "pip install 'slotnet[report]'")]


def test_check_figure_output_without_strerror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a: Any, **k: Any) -> Any:
        raise OSError("odd")

    monkeypatch.setattr(repro_all, "open", refuse, raising=False)
    with pytest.raises(SpecError, match="^--x: cannot write 'p': odd$"):
        repro_all.check_figure_output("--x", "p", "m")


# --- report_html: the helpers -------------------------------------------------------------------


def test_num_and_sim() -> None:
    n = report_html._num
    assert n(None) == "-" and n(True) == "yes" and n(False) == "no"
    assert n(float("nan")) == "nan" and n(float("-inf")) == "-inf"
    assert n(1.23456789) == "1.2346" and n(1.23456789, 2) == "1.23"
    assert n(99999.5) == "99999.5000" and n(100000.0) == "1e+05" and n(-100000.0) == "-1e+05"
    assert n(123456.7, 3) == "1.23e+05" and n(-99999.0) == "-99999.0000"
    assert n(7) == "7"
    s = report_html._sim
    assert s(_row(sim=None)) == "-"
    assert s(_row(sim=2.5, ci=0.123456)) == "2.5000 ± 0.1235"
    assert s(_row(sim=2.5, ci=None)) == "2.5000"
    assert s(_row(sim=2.5, ci=float("nan"))) == "2.5000"
    assert s(Row("T", "c", "m", None, 2.5, 1, None)) == "2.5000"  # an int is no interval here


def test_anchor_and_experiments() -> None:
    a = report_html._anchor
    assert a("paper", "Greenberg & Hajek!") == "paper-greenberg-hajek"
    assert a("--x--") == "x"
    three = ("paper", "p", "Table 1")
    h = hashlib.sha1(chr(0).join(three).encode()).hexdigest()[:6]
    assert a(*three) == f"paper-p-table-1-{h}"
    assert a("paper", "p", "Table 1.") != a(*three)
    rows = [_row(exp="B"), _row(exp="A"), _row(exp="B")]
    assert report_html._experiments(rows) == ["B", "A"]


def test_tokens_x_variable_series() -> None:
    t = report_html._tokens
    assert t("d=6 rho=0.5") == {"d": (6.0, (0, 3)), "rho": (0.5, (4, 11))}
    assert t("slot 40, v=-1.5e-3") == {"slot": (40.0, (0, 7)), "v": (-0.0015, (9, 18))}
    assert t("xd=6a d=2;") == {"d": (2.0, (6, 9))}
    assert t("(d=6)") == {}
    x = report_html._x_variable
    assert x(["d=3 v=1", "d=4 v=1", "d=5 v=2"]) == "d"
    assert x(["d=3 v=1", "d=3 v=2", "d=4 v=3"]) == "v"
    assert x(["d=3 v=1", "d=4 v=2"]) == "v"  # a tie: the later of the common names
    assert x(["d=3", "d=3"]) is None and x(["a", "b"]) is None and x([]) is None
    assert x(["d=3 v=1", "d=4"]) == "d"
    s = report_html._series
    assert s("d=6 rho=0.5 long", "rho") == ("d=6 long", 0.5)
    assert s("d=6", None) == ("", None)
    f = report_html._finite
    assert f(1) and f(2.5) and not f(True) and not f(float("nan")) and not f(None) and not f("1")


def test_img_and_style() -> None:
    assert report_html._img(b"\x89PNG", 'a "b"') == '<img alt="a &quot;b&quot;" src="data:image/png;base64,iVBORw==">'
    assert report_html._e("<a & 'b'>") == "&lt;a &amp; &#x27;b&#x27;&gt;"
    assert report_html._CLASS == {"within": "within", "known": "known", "OUTSIDE": "outside", "not run": "notrun",
                                  "-": "unjudged"}
    assert report_html._STYLE.startswith("\nbody{font-family:system-ui,") and report_html._STYLE.endswith(
        "ol.notes{font-size:.88em}\n")
    assert hashlib.sha256(report_html._STYLE.encode()).hexdigest()[:16] == STYLE_SHA


# --- report_html: the page ----------------------------------------------------------------------


def _runs() -> list[PaperRun]:
    ok = PaperRun("zz-p", 3, False, rows=[
        _row(exp="T1", case="d=3", metric="delay", paper=4.0, sim=4.02, ci=0.05, theory=4.01),
        _row(exp="T1", case="d=4", metric="delay", paper=5.0, sim=6.0, ci=0.01, theory=5.0, note=Explanation("slip A", corrected=6.0)),
        _row(exp="T1", case="d=5", metric="delay", paper=None, sim=None, ci=None, theory=None, note="too long"),
        _row(exp="T2 <x>", case="v=1", metric="q", paper=1.0, sim=3.0, ci=0.01, theory=1.0),
        _row(exp="T2 <x>", case="v=2", metric="q", paper=None, sim=1.0, ci=None, theory=None),
        _row(exp="T1", case="d=6", metric="delay", paper=5.0, sim=7.0, ci=0.01, theory=5.0, note=Explanation("slip A", corrected=7.0))],
        wall_s=12.34, runs=[({"scheme": "deflection", "topology": "hypercube:3", "seed": 3}, 0.5, True),
                            ({"scheme": "deflection", "topology": "hypercube:4", "seed": 3}, 1.25, False)])
    bad = PaperRun("zz-q", 3, False, options={"sweep_d": 6}, error="it broke", wall_s=1.0,
                   figures=[("panel", b"PNG1"), ("", b"PNG2")])
    return [ok, bad]


META = [("slotnet", "1.0 <dev>"), ("seeds", "3")]


def test_render_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-p", _exp("zz-p"))
    runs = _runs()
    page = report_html.render(runs, META, figures=False)
    assert page.startswith('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
                           '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                           "<title>slotnet: 2 paper reproductions</title>\n<style>\nbody{")
    assert page.endswith("\n</body></html>\n")
    assert "<h1>slotnet: papers reproduced</h1>\n<ul><li>zz-p</li><li>zz-q</li></ul>" in page
    assert "<span class=within>within</span> = inside the paper's agreement" in page
    assert ('<div class="banner bad">1 row OUTSIDE the paper&#x27;s agreement; 1 paper failed: zz-q</div>') in page
    assert ("<table class=summary><tr><th>paper</th><th>rows</th><th>within</th><th>known</th><th>OUTSIDE</th>"
            "<th>not run</th><th>-</th><th>runs (from cache)</th><th>wall s</th><th>rerun</th></tr>") in page
    assert ('<tr><td><a href="#paper-zz-p">zz-p</a></td><td class=num>6</td><td class="num ">1</td>'
            '<td class="num known">2</td><td class="num outside">1</td><td class="num ">1</td><td class="num ">1</td>'
            "<td class=num>2 (1)</td><td class=num>12.3</td><td><code>slotnet repro zz-p --seed 3</code></td></tr>") in page
    assert ('<tr><td><a href="#paper-zz-q-sweep-d-6">zz-q (--sweep-d 6)</a> <span class=outside>FAILED: it broke</span></td>'
            '<td class=num>0</td><td class="num ">0</td><td class="num ">0</td><td class="num ">0</td><td class="num ">0</td>'
            '<td class="num ">0</td><td class=num>0 (0)</td><td class=num>1.0</td>'
            "<td><code>slotnet repro zz-q --seed 3 --sweep-d 6</code></td></tr>") in page
    assert ("<tr><th>all</th><td class=num>6</td><td class=num>1</td><td class=num>2</td><td class=num>1</td>"
            "<td class=num>1</td><td class=num>1</td><td class=num>2 (1)</td><td class=num>13.3</td><td></td></tr>") in page
    t2 = report_html._anchor("paper", "zz-p", "T2 <x>")
    t1 = report_html._anchor("paper", "zz-p", "T1")
    assert "<h3>Every OUTSIDE row (1)</h3>" in page
    assert ('<table><tr><th>paper</th><th>table</th><th>case</th><th>metric</th><th>verdict</th></tr>\n'
            f'<tr class=outside><td>zz-p</td><td><a href="#{t2}">T2 &lt;x&gt;</a></td><td>v=1</td><td>q</td>'
            "<td>OUTSIDE: off the paper by 2 &gt; 0.01419 allowed</td></tr>\n</table>") in page
    assert ("<h3>How this report was produced</h3><table class=meta>\n<tr><th>slotnet</th><td>1.0 &lt;dev&gt;</td></tr>\n"
            "<tr><th>seeds</th><td>3</td></tr>\n</table></section>") in page
    # the slips
    assert '<section id="slips"><h2>Where the papers slip</h2>' in page
    assert "(2 in all)" in page
    assert (f'<tr class=known><td>zz-p</td><td><a href="#{t1}">T1</a></td><td>d=4</td><td>delay</td>'
            "<td class=num>5.0000</td><td class=num>6.0000 ± 0.0100</td><td class=num>5.0000</td><td>slip A</td></tr>") in page
    # the paper's section
    assert '<section id="paper-zz-p"><h2>zz-p</h2>\n<p>zz-p doc.</p>\n<p>Second paragraph of zz-p.</p>' in page
    assert "<p>Rerun: <code>slotnet repro zz-p --seed 3</code> (2 runs, 1 from the results cache, 12.3 s)</p>" in page
    assert f'<h3 id="{t1}">T1</h3><div class=figrow>' in page
    assert ('<tr class="within"><td>d=3</td><td>delay</td><td class=num>4.0000</td><td class=num>4.0200 ± 0.0500</td>'
            '<td class=num>4.0100</td><td class="within">within</td><td><code>slotnet repro zz-p --seed 3</code></td></tr>'
            ) in page
    assert '<td class="known">known [1]</td>' in page and page.count('known [1]') == 2
    assert '<tr class="notrun"><td>d=5</td>' in page and '<td class="notrun">not run [2]</td>' in page
    assert "<ol class=notes><li>slip A</li><li>too long</li></ol>" in page
    assert '<tr class="unjudged"><td>v=2</td><td>q</td><td class=num>-</td><td class=num>1.0000</td>' in page
    assert ("<details><summary>The 2 runs behind these rows (each reruns alone)</summary>\n"
            "<table><tr><th>command</th><th>wall s</th><th>from cache</th></tr>\n"
            "<tr><td><code>slotnet run deflection --topology hypercube:3 --slots 1000 --warmup 0 --seed 3</code></td>"
            "<td class=num>0.50</td><td>yes</td></tr>\n") in page
    assert "<td class=num>1.25</td><td>no</td></tr>\n</table></details>\n</section>" in page
    # the failed second pass, with the experiment's own figures
    assert ('<section id="paper-zz-q-sweep-d-6"><h2>zz-q (--sweep-d 6)</h2>\n<p>The same paper again, with the '
            "options <code>--sweep-d 6</code>: what its default reproduction leaves out") in page
    assert "<p>Rerun: <code>slotnet repro zz-q --seed 3 --sweep-d 6</code> (0 runs, 0 from the results cache, 1.0 s)</p>" in page
    assert '<p class="error">This reproduction FAILED: it broke</p>' in page
    assert ("<h3>The reproduction's own figures: zz-q</h3><div class=figrow>"
            "<div class=claim><p><b>What the paper claims</b></p><p>(The reproduction declares no claims of the "
            "paper.)</p></div>") in page
    assert ('<figure><img alt="zz-q panel" src="data:image/png;base64,UE5HMQ=="><figcaption>panel</figcaption></figure>'
            ) in page
    assert ('<figure><img alt="zz-q " src="data:image/png;base64,UE5HMg=="><figcaption>zz-q</figcaption></figure>'
            ) in page
    assert "<details>" not in page.split('id="paper-zz-q-sweep-d-6"')[1]


def test_render_clean_single_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-p", _exp("zz-p", citation="Zed & Pea (1999), A <paper>",
                                                  claims=("It claims A.", "And B.")))
    run = PaperRun("zz-p", 1, True, rows=[_row()], error="late", wall_s=2.0,
                   figures=[("f", b"P")])
    page = report_html.render([run], [], figures=False)
    assert "<title>slotnet: 1 paper reproduction (quick)</title>" in page
    assert "<h1>slotnet: papers reproduced (a quick subset)</h1>\n<ul><li>Zed &amp; Pea (1999), A &lt;paper&gt;</li>" in page
    assert '<section id="paper-zz-p"><h2>Zed &amp; Pea (1999), A &lt;paper&gt;</h2>' in page
    assert '<div class="banner bad">1 paper failed: zz-p</div>' in page
    assert "<tr><th>all</th>" not in page
    assert "<h3>Every OUTSIDE row (0)</h3>\n<p>None.</p>" in page
    assert "(0 in all)" in page and "<p>None in these rows.</p></section>" in page
    assert "FAILED: late (the rows below were computed before the failure)</p>" in page
    assert ("<div class=claim><p><b>What the paper claims</b></p><ul><li>It claims A.</li><li>And B.</li></ul></div>"
            ) in page
    ok = report_html.render([PaperRun("zz-unknown", 1, False, rows=[_row()])], [], figures=False)
    assert ('<div class="banner ok">No row is OUTSIDE the paper\'s agreement and every paper ran to the end.</div>') in ok
    assert '<section id="paper-zz-unknown"><h2>zz-unknown</h2>\n<p>Rerun:' in ok
    assert "<details>" not in ok


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    return w, h


def test_row_figures_sizes_and_titles() -> None:
    pytest.importorskip("matplotlib")
    rows = [_row(exp="A", case=f"d={d}", metric=m, sim=float(d), theory=float(d) + 0.1)
            for d in (3, 4) for m in ("m1", "m2", "m3", "m4")]
    rows += [_row(exp="B", case=c, metric="x", sim=1.0, theory=None, paper=None, ci=None) for c in ("p", "q")]
    rows += [_row(exp="C", case="d=1", metric="x"), _row(exp="C", case="d=2", metric="x", sim=None, theory=None,
                                                          paper=None)]
    figs = report_html.row_figures(rows, max_panels=3)
    assert [t for t, _ in figs] == ["A (1)", "A (2)", "B"]
    # 80 dpi: width max(4.6 * columns, 8) in, height (3.3 [+ 1 for category names]) * rows + 1.2 in
    assert _png_size(figs[0][1]) == (round(4.6 * 3 * 80), round((3.3 + 1.2) * 80))
    assert _png_size(figs[1][1]) == (round(8.0 * 80), round((3.3 + 1.2) * 80))
    assert _png_size(figs[2][1]) == (round(8.0 * 80), round((4.3 + 1.2) * 80))
    figs = report_html.row_figures(rows[:8])
    assert [t for t, _ in figs] == ["A"]
    assert _png_size(figs[0][1]) == (round(4.6 * 3 * 80), round((3.3 * 2 + 1.2) * 80))


# ------------------------------------------------------------------ repro_many, and survivors of a sampled mutation run


def _many_args(**kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = dict(paper="all", sweep_d=None, sweep_only=False, dims=None, plot=None, html=None, json=False,
                                seed=1, quick=True, jobs=1, no_cache=True, cache=None)
    base.update(kw)
    return argparse.Namespace(**base)


def _fake_papers(monkeypatch: pytest.MonkeyPatch, calls: list[dict[str, Any]], error: str = "") -> None:
    def run_papers(names: list[str], **kw: Any) -> list[PaperRun]:
        calls.append({"names": list(names), **kw})
        runs = []
        for name in names:
            if kw["on_paper"] is not None:
                kw["on_paper"](name)
            rows = [_row(exp="T1", case="d=3", metric="m", sim=1.0, theory=1.0, paper=1.0, ci=0.1)]
            if kw["on_rows"] is not None:
                kw["on_rows"](rows[:1])
            runs.append(PaperRun(name, 1, True, rows=rows, wall_s=2.0, error=error))
        return runs

    monkeypatch.setattr(repro_all, "run_papers", run_papers)
    monkeypatch.setattr(_repro, "papers", lambda: ["pa", "pb"])


def test_repro_all_refuses_per_paper_options_by_their_flags() -> None:
    with pytest.raises(SpecError) as e:
        repro_all.repro_many(_many_args(plot="x.png"), None)
    assert str(e.value) == "repro all takes no --plot (give one paper for those)"
    with pytest.raises(SpecError) as e:
        repro_all.repro_many(_many_args(sweep_d=8, sweep_only=True, dims="2-4"), [0.1])
    assert str(e.value) == ("repro all takes no --sweep-d, --sweep-rho, --sweep-only, --dims "
                            "(give one paper for those)")
    with pytest.raises(SpecError) as e:
        repro_all.repro_many(_many_args(paper="yeh", html="r.html", plot="x.png"), None)
    assert str(e.value) == "--html draws the figures into the report: leave out --plot"


def test_repro_all_prints_each_paper_under_its_heading(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    _fake_papers(monkeypatch, calls)
    assert repro_all.repro_many(_many_args(), None) == 0
    out = capsys.readouterr().out
    assert out.startswith("=== pa ===\n")
    assert out.index("=== pa ===") < out.index("=== pb ===")
    assert "pa: 1 rows (1 within) in 2.0 s, 0 runs (0 from the cache)" in out
    assert calls[0]["names"] == ["pa", "pb"] and calls[0]["keep_going"] is True and calls[0]["jobs"] == 1


def test_repro_all_json_has_no_headings(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[dict[str, Any]] = []
    _fake_papers(monkeypatch, calls)
    assert repro_all.repro_many(_many_args(json=True), None) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["paper"] for p in doc["papers"]] == ["pa", "pb"] and doc["seed"] == 1 and doc["quick"] is True
    assert [len(p["rows"]) for p in doc["papers"]] == [1, 1] and doc["papers"][0]["rows"][0]["case"] == "d=3"
    assert [p["provenance"]["command"].split()[:3] for p in doc["papers"]] == [["slotnet", "repro", "pa"],
                                                                               ["slotnet", "repro", "pb"]]
    assert calls[0]["on_rows"] is None  # the headings are called, and print nothing under --json


def test_repro_all_fails_when_a_paper_failed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _fake_papers(monkeypatch, [], error="boom")
    with pytest.raises(repro_all.ReportError) as e:
        repro_all.repro_many(_many_args(), None)
    assert str(e.value) == "pa: boom; pb: boom"


def test_slips_without_slips_says_none() -> None:
    out = report_html._slips([])
    assert out[-1] == "<p>None in these rows.</p></section>"
    assert out[0] == '<section id="slips"><h2>Where the papers slip</h2>'


def _panel_axes(rows: list[Row], var: str | None) -> Any:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        report_html._panel(ax, rows, rows[0].metric, var, sorted({r.case for r in rows}), [])
    finally:
        plt.close(fig)
    return ax


def test_panel_circles_rows_outside_the_agreement() -> None:
    # paper 1.0 with a tiny interval: a simulation of 5.0 is OUTSIDE; the circle sits on the simulated value
    rows = [_row(case="d=3", sim=5.0, theory=1.0, paper=1.0, ci=0.001), _row(case="d=4", sim=1.0, theory=1.0, paper=1.0)]
    ax = _panel_axes(rows, "d")
    red = [c for c in ax.collections if len(c.get_edgecolor()) and tuple(c.get_edgecolor()[0][:3]) == (0xd0 / 255, 0.0, 0.0)]
    assert len(red) == 1 and [tuple(p) for p in red[0].get_offsets()] == [(3.0, 5.0)]


def test_panel_uses_a_log_scale_past_fifty_fold() -> None:
    wide = [_row(case=f"d={d}", sim=v, theory=v, paper=None, ci=None) for d, v in ((3, 1.0), (4, 60.0))]
    assert _panel_axes(wide, "d").get_yscale() == "log"
    narrow = [_row(case=f"d={d}", sim=v, theory=v, paper=None, ci=None) for d, v in ((3, 1.0), (4, 40.0))]
    assert _panel_axes(narrow, "d").get_yscale() == "linear"
    mixed = [_row(case=f"d={d}", sim=v, theory=v, paper=None, ci=None) for d, v in ((3, -1.0), (4, 60.0))]
    assert _panel_axes(mixed, "d").get_yscale() == "linear"


def test_run_papers_scale_from_an_estimate_under_a_second(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(EXPERIMENTS, "zz-h", _exp("zz-h", estimate=lambda q, o: 0.5))
    monkeypatch.setitem(EXPERIMENTS, "zz-b", _exp("zz-b", estimate=lambda q, o: 6.0))
    (tmp_path / "walls.json").write_text(json.dumps({"full": {"zz-h": 2.0}}))
    calls = _fake_repro(monkeypatch, {"zz-h": "cached"})
    repro_all.run_papers(["zz-h", "zz-b"], seed=1, quick=False, jobs=1, cache=ResultsCache(tmp_path, version="v"),
                         figures=False)
    assert calls[1]["own"] == 24.0  # this machine took 4 times zz-h's estimate


def test_repro_html_says_where_the_report_went(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    _fake_papers(monkeypatch, [])
    monkeypatch.setattr(repro_all, "check_html", lambda path: None)
    monkeypatch.setattr(repro_all, "metadata", lambda runs, **kw: [])
    written: list[str] = []
    monkeypatch.setattr(report_html, "write", lambda path, runs, meta: written.append(path))
    target = str(tmp_path / "r.html")
    assert repro_all.repro_many(_many_args(paper="pa", html=target), None) == 0
    assert written == [target] and capsys.readouterr().out.splitlines()[-1] == f"report written to {target}"


def test_figure_legend_names_each_mark(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    seen: list[list[str]] = []
    real = Figure.legend

    def legend(self: Any, *a: Any, **kw: Any) -> Any:
        seen.append([h.get_label() for h in kw["handles"]])
        return real(self, *a, **kw)

    monkeypatch.setattr(Figure, "legend", legend)
    report_html.row_figures([_row(exp="A", case=f"d={d}", metric="m", sim=float(d), theory=float(d)) for d in (3, 4)])
    assert seen == [["simulation (bar: 95% half-width)", "model", "paper", "OUTSIDE", "known slip"]]
