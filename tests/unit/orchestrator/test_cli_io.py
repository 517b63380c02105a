"""Realistic I/O mistakes end in exit 2 (bad input) or one clear line (exit 1), never a traceback."""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slotnet import FaultSchedule, RunSpec, SpecError, TraceSpec, run
from slotnet.errors import FaultSpecError
from slotnet.orchestrator.engine import _trace
from slotnet.orchestrator.tools import _perfetto, _trace_query
from tests.support.cli import call_main as _main

RUN = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "30", "--seed", "1"]



def _one_line_error(err: str, fragment: str) -> None:
    assert len(err.strip().splitlines()) == 1, err
    assert fragment in err, err


@pytest.fixture
def trace_file(tmp_path, capsys) -> Path:
    path = tmp_path / "t.jsonl"
    code, _, _ = _main(capsys, *RUN, "--trace", str(path), "--trace-nodes", "5")
    assert code == 0 and path.stat().st_size > 0
    return path


def test_gzipped_trace_is_named_as_such(capsys, trace_file):
    """A gzipped trace gives exit 2 and says to decompress it."""
    gz = trace_file.with_suffix(".jsonl.gz")
    gz.write_bytes(gzip.compress(trace_file.read_bytes()))
    code, _, err = _main(capsys, "trace", str(gz), "--node", "5")
    assert code == 2
    _one_line_error(err, "gzip-compressed")


def test_binary_file_given_to_trace(capsys, tmp_path):
    """A binary file gives exit 2 and one line, for the timeline and for the Perfetto export."""
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 4)
    for argv in (["--node", "1"], ["--perfetto", str(tmp_path / "p.json")]):
        code, _, err = _main(capsys, "trace", str(path), *argv)
        assert code == 2
        _one_line_error(err, "binary file")
    assert not (tmp_path / "p.json").exists()
    path.write_bytes(b'{"slot": 0, "node": 1, "event": "x"}\n\xff\xfe\n')  # no NUL, still not text
    code, _, err = _main(capsys, "trace", str(path), "--node", "1")
    assert code == 2
    _one_line_error(err, "line 2 is not UTF-8")


@pytest.mark.parametrize("line, fragment", [
    ('{"slot": "3", "node": 5, "event": "sent"}', "'slot' must be an integer"),
    ('{"slot": 3.5, "node": 5, "event": "sent"}', "'slot' must be an integer"),
    ('{"slot": 3, "node": true, "event": "sent"}', "'node' must be an integer"),
    ('{"slot": 3, "node": -1, "event": "sent"}', "'node' must be an integer >= 0"),
    ('{"slot": 3, "node": 5, "event": 7}', "'event' must be a non-empty string"),
    ('{"slot": 3, "node": 5}', "needs slot, node and event"),
    ('{"slot": 3, "node": 5, "event": "x", "v": NaN}', "is not JSON"),
    ('[1, 2, 3]', "not a trace event"),
])
def test_hand_edited_trace_lines_are_checked(capsys, trace_file, tmp_path, line, fragment):
    """A wrongly typed line is refused (exit 2); the Perfetto target keeps its old content, no broken file."""
    lines = trace_file.read_text().splitlines()
    lines.insert(3, line)
    trace_file.write_text("\n".join(lines) + "\n")
    out = tmp_path / "p.json"
    out.write_text("old")
    code, _, err = _main(capsys, "trace", str(trace_file), "--perfetto", str(out))
    assert code == 2
    _one_line_error(err, fragment)
    assert "line 4" in err
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "t.jsonl"]
    code, _, err = _main(capsys, "trace", str(trace_file), "--node", "5")
    assert code == 2 and fragment in err


def test_perfetto_export_streams_a_valid_file(capsys, trace_file, tmp_path):
    """The streamed export is one valid JSON object with a track name per node."""
    out = tmp_path / "p.json"
    code, stdout, _ = _main(capsys, "trace", str(trace_file), "--perfetto", str(out))
    data = json.loads(out.read_text())
    n = len(trace_file.read_text().splitlines()) - 1  # the events: every line but the header
    assert code == 0 and len(data["traceEvents"]) == n + 1 and f"wrote {n + 1} events" in stdout
    assert data["traceEvents"][-1] == {"name": "thread_name", "ph": "M", "pid": 0, "tid": 5, "args": {"name": "node 5"}}
    assert _perfetto.to_perfetto(_trace_query.read_trace(trace_file)) == data


def test_trace_slot_filter(capsys, trace_file):
    """slotnet trace --slots A:B shows only A <= slot < B, as the README's example says."""
    code, out, _ = _main(capsys, "trace", str(trace_file), "--node", "5", "--slots", "10:21")
    slots = {int(line.split()[0]) for line in out.splitlines()}
    assert code == 0 and slots and min(slots) >= 10 and max(slots) <= 20
    code, _, err = _main(capsys, "trace", str(trace_file), "--node", "5", "--slots", "9:3")
    assert code == 2
    _one_line_error(err, "--slots must look like A:B")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_trace_on_a_full_device_is_refused_before_the_run(capsys):
    """A trace path whose first write fails is a bad input found before slot 0."""
    code, out, err = _main(capsys, *RUN, "--trace", "/dev/full")
    assert code == 2 and out == ""
    _one_line_error(err, "No space left on device")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_trace_in_a_read_only_directory(capsys, tmp_path):
    """A read-only directory gives exit 2 before the run."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    code, _, err = _main(capsys, *RUN, "--trace", str(ro / "t.jsonl"))
    assert code == 2
    _one_line_error(err, "cannot write trace")


class _FillsUp:
    """A text file that fails with ENOSPC once ``limit`` characters were written."""

    def __init__(self, fh, limit: int) -> None:
        self.fh, self.limit, self.n = fh, limit, 0

    def write(self, text: str) -> int:
        self.n += len(text)
        if self.n > self.limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.fh.write(text)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_trace_write_error_mid_run_keeps_the_results(capsys, monkeypatch, tmp_path):
    """The disk fills mid-run: the run goes on, its results are printed, then one error line and exit 1."""
    real_open = open
    monkeypatch.setattr(_trace, "open", lambda *a, **k: _FillsUp(real_open(*a, **k), 3000), raising=False)
    code, out, err = _main(capsys, *RUN, "--trace", str(tmp_path / "t.jsonl"), "--json")
    assert code == 1
    assert json.loads(out)["invariants"]["ok"] is True and json.loads(out)["slots_run"] == 30
    _one_line_error(err, "No space left on device")
    assert "the run went on without its trace" in err


def test_trace_write_error_through_the_api_warns(monkeypatch, tmp_path):
    """Without an on_error callback, the API warns and still returns the result."""
    real_open = open
    monkeypatch.setattr(_trace, "open", lambda *a, **k: _FillsUp(real_open(*a, **k), 3000), raising=False)
    spec = RunSpec("deflection", "hypercube:3", load={"offered": 1.0}, slots=30, trace=TraceSpec(str(tmp_path / "t")))
    with pytest.warns(RuntimeWarning, match="No space left"):
        r = run(spec)
    assert r.slots_run == 30


@pytest.mark.parametrize("entry", [
    {"kind": "crash", "slot": True, "node": 1},
    {"kind": "crash", "slot": 3.0, "node": 1},
    {"kind": "crash", "slot": "3", "node": 1},
    {"kind": "crash", "slot": 3, "node": 1.5},
    {"kind": "link-down", "slot": 3, "node": 1, "port": False},
    {"kind": "link-down", "slot": 3, "node": 1, "port": "0"},
    {"kind": "crash", "slot": 3, "node": 1, "port": 0},
    {"kind": "crash", "slot": 3, "nod": 1},
    {"kind": "crash", "slot": 3, "node": 1, "extra": 1},
    {"kind": "loss", "rate": "0.1"},
    {"kind": "loss", "rate": True},
    {"kind": "loss", "rate": None},
    {"kind": "loss", "rate": 0.1, "from": "5"},
    {"kind": "loss", "rate": 0.1, "from": 2.5},
    {"kind": "loss", "rate": 0.1, "until": False},
])
def test_faults_file_fields_have_json_types(capsys, tmp_path, entry):
    """Booleans, floats and strings where a faults file needs integers (or a number) are refused."""
    path = tmp_path / "f.json"
    path.write_text(json.dumps([entry]))
    code, _, err = _main(capsys, *RUN, "--faults", str(path))
    assert code == 2
    _one_line_error(err, "entry 0")


def test_faults_through_the_api_as_strings():
    """RunSpec(faults=[...]) takes the CLI syntax as a list or tuple, or a FaultSchedule."""
    base = dict(scheme="deflection", topology="hypercube:3", load={"offered": 1.0}, slots=40, seed=2)
    texts = ["crash@3:1", "recover@9:1", "loss=0.05"]
    a = run(RunSpec(**base, faults=texts))
    b = run(RunSpec(**base, faults=tuple(texts)))
    c = run(RunSpec(**base, faults=FaultSchedule.parse(texts)))
    assert a.faults == b.faults == c.faults == ["crash@3:1", "recover@9:1", "loss=0.05"]
    assert a.metrics == b.metrics == c.metrics
    assert a.invariants["conservation"]["dropped"]
    assert RunSpec(**base, faults="crash@3:1").faults == FaultSchedule.parse(["crash@3:1"])
    with pytest.raises(FaultSpecError, match="not understood"):
        RunSpec(**base, faults=["crash at 3"])
    with pytest.raises(SpecError, match="list of strings"):
        RunSpec(**base, faults=[("crash", 3, 1)]).prepare()  # type: ignore[list-item]


def _slotnet(*argv: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slotnet", *argv], capture_output=True, text=True, **kw)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_a_full_device():
    """Output to a full device: exit 1 and one line on stderr, no 'Exception ignored' at exit."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "slotnet", "schemes"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 1
    _one_line_error(proc.stderr, "cannot write output: No space left on device")


def test_stdout_closed_and_broken_pipe():
    """A closed stdout is reported (exit 1); a reader that goes away (| head) is not an error."""
    proc = subprocess.run(f"'{sys.executable}' -m slotnet schemes >&-", shell=True, capture_output=True, text=True)
    assert proc.returncode == 1
    _one_line_error(proc.stderr, "stdout is closed")
    big = "run deflection -t hypercube:3 --offered 1 --slots 4000 --series --no-progress"  # ~200 KB of table
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", f"'{sys.executable}' -m slotnet {big} | head -c 10"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == "scheme def"
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
