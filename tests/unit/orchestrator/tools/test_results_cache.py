"""The results cache of `slotnet repro`: exact round trips, atomic entries, versions, resuming."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slotnet.orchestrator import cli as cli_mod
from slotnet.orchestrator.tools import _repro
from slotnet.orchestrator.tools import results_cache as rc
from slotnet.orchestrator.tools.results_cache import ResultsCache
from slotnet.schemes import Experiment, Row

REQ = dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=1)
RESULT = {"mean_delay": 1.25, "mean_delay_ci95": float("nan"), "hist": {0: 3, 2: 1}, "pair": (1, 2.5),
          "series": [{"slot": 1, "v": None}], "_ok": True, "_theory": {"mean_delay": 1.2}, "_wall_s": 0.01,
          "flag": False, "tagged": {"__tuple__": [1]}, "inf": -math.inf}


def _same(a, b) -> bool:
    """Equal, of the same types all the way down (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) and type(k) is type(k2) for k, k2 in zip(a, b))
    return a == b


def test_encode_round_trip_keeps_types():
    """Tuples, non-string keys, a dict that looks like a tag, nan and inf read back as they were."""
    assert _same(rc.decode(json.loads(json.dumps(rc.encode(RESULT)))), RESULT)
    with pytest.raises(rc.Uncacheable):
        rc.encode({"x": {1, 2}})


def test_put_then_get(tmp_path):
    """A kept result comes back exactly; another seed, scheme or load is a miss; defaults are filled in."""
    cache = ResultsCache(tmp_path, version="v1")
    assert cache.get(REQ) is None
    assert cache.put(REQ, RESULT)
    assert _same(cache.get(REQ), RESULT)
    assert _same(cache.get({**REQ, "warmup": 0, "params": {}}), RESULT)  # the same run, spelt out
    for other in ({**REQ, "seed": 2}, {**REQ, "load": {"offered": 0.6}}, {**REQ, "slots": 6}):
        assert cache.get(other) is None
    (entry,) = cache.entries()
    data = json.loads(entry.read_text())
    assert data["version"] == "v1" and data["spec"]["seed"] == 1 and entry.parent.parent == tmp_path / "v1"
    assert (cache.hits, cache.stored) == (2, 1)


def test_a_version_change_invalidates(tmp_path, monkeypatch):
    """Entries of one version are never seen by another: a new slotnet version or changed source."""
    ResultsCache(tmp_path, version="0.1.0+aaa").put(REQ, RESULT)
    assert ResultsCache(tmp_path, version="0.1.0+bbb").get(REQ) is None
    assert ResultsCache(tmp_path, version="0.1.0+aaa").get(REQ) is not None
    import slotnet

    before = rc.code_version()
    monkeypatch.setattr(slotnet, "__version__", "9.9.9")
    assert rc.code_version() != before and rc.code_version().startswith("9.9.9+")
    ResultsCache(tmp_path).put(REQ, RESULT)
    monkeypatch.setattr(slotnet, "__version__", "9.9.10")
    assert ResultsCache(tmp_path).get(REQ) is None


def test_damaged_or_foreign_entries_are_misses(tmp_path):
    """An entry cut short, not JSON, or holding another spec is a miss, and a put replaces it."""
    cache = ResultsCache(tmp_path, version="v")
    path = cache.path(REQ)
    path.parent.mkdir(parents=True)
    def entry(request) -> str:
        return json.dumps({"format": rc.FORMAT, "version": "v", "spec": rc.encode(rc.spec_key(request)), "result": {"a": 1}})

    full = entry(REQ)
    path.write_text(full)
    assert cache.get(REQ) == {"a": 1}  # the test's entry is well formed
    for text in (full[: len(full) // 2], "not json", entry({**REQ, "seed": 7}), full.replace('"v"', '"w"'), "[]"):
        path.write_text(text)
        assert cache.get(REQ) is None
    assert cache.put(REQ, RESULT) and _same(cache.get(REQ), RESULT)


def test_what_cannot_be_kept_exactly_is_not_kept(tmp_path):
    """A traced run, an unknown field or a result of a foreign type: not kept, and no error."""
    from slotnet.orchestrator import TraceSpec

    cache = ResultsCache(tmp_path, version="v")
    traced = {**REQ, "trace": TraceSpec(str(tmp_path / "t.jsonl"))}
    assert not cache.put(traced, RESULT) and cache.get(traced) is None
    assert not cache.put({**REQ, "colour": "red"}, RESULT)
    assert not cache.put(REQ, {"x": object()})
    assert list(cache.entries()) == []


def test_an_unwritable_cache_is_noted_not_fatal(tmp_path):
    """A cache directory that cannot be made: put says False, write_error says why, once."""
    (tmp_path / "file").write_text("")
    cache = ResultsCache(tmp_path / "file" / "runs", version="v")
    assert not cache.put(REQ, RESULT) and cache.write_error and "cannot write" in cache.write_error
    assert cache.get(REQ) is None


_KILL_MID_WRITE = """
import os, signal, sys
from slotnet.orchestrator.tools.results_cache import ResultsCache
cache = ResultsCache(sys.argv[1], version="v")
def half(fh, text):
    fh.write(text[: len(text) // 2])
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)
cache._write = half
cache.put(dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=1), {"x": 1.0})
"""


def test_a_kill_mid_write_leaves_no_half_entry(tmp_path):
    """SIGKILL halfway through an entry's write: no entry (only an ignored temporary file), then a clean put."""
    proc = subprocess.run([sys.executable, "-c", _KILL_MID_WRITE, str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr
    cache = ResultsCache(tmp_path, version="v")
    assert list(cache.entries()) == [] and cache.get(REQ) is None
    leftovers = list((tmp_path / "v").glob("??/.tmp-*"))
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0
    assert cache.put(REQ, RESULT) and _same(cache.get(REQ), RESULT)
    old = time.time() - 2 * rc._STALE_TMP_S  # a later cache sweeps a left-over that is surely dead
    os.utime(leftovers[0], (old, old))
    ResultsCache(tmp_path, version="v")
    assert not leftovers[0].exists()


_WRITER = """
import sys
from slotnet.orchestrator.tools.results_cache import ResultsCache
root, who, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cache = ResultsCache(root, version="v")
for r in range(rounds):
    for seed in range(20):  # shared with the other writer
        req = dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=seed)
        cache.put(req, {"seed": seed, "payload": [float(seed)] * 2000})
        got = cache.get(req)
        assert got is not None and got["seed"] == seed and len(got["payload"]) == 2000, (who, seed, got)
    req = dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=1000 + r,
               params={"who": who})
    cache.put(req, {"who": who})
print("ok")
"""


def test_two_processes_write_at_once(tmp_path):
    """Two processes putting the same entries at once: every read, theirs and ours after, is whole and right."""
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), who, "8"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for who in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    cache = ResultsCache(tmp_path, version="v")
    for seed in range(20):
        got = cache.get(dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=seed))
        assert got == {"seed": seed, "payload": [float(seed)] * 2000}
    assert len(list(cache.entries())) == 20 + 2 * 8
    assert list((tmp_path / "v").glob("??/.tmp-*")) == []


def test_runner_resumes_from_the_cache(tmp_path, monkeypatch):
    """A batch interrupted after two runs: the rerun runs only the rest and returns what an uncached run does."""
    requests = [dict(REQ, seed=s) for s in range(4)]
    plain = _repro._Runner(1)(requests)
    cache = ResultsCache(tmp_path, version="v")
    ran: list[int] = []
    real = _repro._run_metrics

    def counting(request):
        ran.append(request["seed"])
        if len(ran) == 3:
            raise KeyboardInterrupt  # the user stops it during the third run
        return real(request)

    monkeypatch.setattr(_repro, "_run_metrics", counting)
    with pytest.raises(KeyboardInterrupt):
        _repro._Runner(1, cache=cache)(requests)
    assert len(list(cache.entries())) == 2
    ran.clear()
    monkeypatch.setattr(_repro, "_run_metrics", lambda request: (ran.append(request["seed"]), real(request))[1])
    seen: list[tuple[int, bool]] = []
    resumed = _repro._Runner(1, cache=cache, on_run=lambda req, res, hit: seen.append((req["seed"], hit)))(requests)
    assert ran == [2, 3] and sorted(seen) == [(0, True), (1, True), (2, False), (3, False)]
    strip = [{k: v for k, v in r.items() if k != "_wall_s"} for r in resumed]
    assert strip == [{k: v for k, v in r.items() if k != "_wall_s"} for r in plain]
    ran.clear()
    assert _repro._Runner(2, cache=cache)(requests) == resumed and ran == []  # all kept now: nothing runs


def _fake_paper(monkeypatch, ran: list[int]):
    real = _repro._run_metrics

    def run_it(runner, *, seed, quick, **options):
        (res,) = runner([dict(REQ, seed=seed)])
        return [Row("E", "c", "mean_delay", None, res["mean_delay"], res.get("mean_delay_ci95"), None)]

    monkeypatch.setattr(_repro, "get_experiment", lambda paper: Experiment("fake", "doc", run_it))
    monkeypatch.setattr(_repro, "_run_metrics", lambda request: (ran.append(1), real(request))[1])


def test_cli_repro_uses_the_cache_unless_told_not_to(capsys, monkeypatch, tmp_path):
    """Second `slotnet repro` of the same code: nothing runs; --no-cache runs again; --cache DIR is honoured."""
    ran: list[int] = []
    _fake_paper(monkeypatch, ran)
    outs = []
    for argv in ([], [], ["--no-cache"], ["--cache", str(tmp_path / "mine")], ["--cache", str(tmp_path / "mine")]):
        assert cli_mod.main(["repro", "fake", "--jobs", "1", "--json", *argv]) == 0
        outs.append(json.loads(capsys.readouterr().out)["rows"])
    assert ran == [1, 1, 1] and all(o == outs[0] for o in outs)
    assert list((tmp_path / "mine").glob("*/??/*.json"))
    assert Path(os.environ["SLOTNET_CACHE_DIR"]).is_dir()
    code = cli_mod.main(["repro", "fake", "--no-cache", "--cache", str(tmp_path)])
    assert code == 2 and "contradict" in capsys.readouterr().err
