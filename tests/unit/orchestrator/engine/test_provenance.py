"""Provenance (:mod:`slotnet.orchestrator.engine._provenance`): the command that reruns a run, the git
commit read from ``.git``, and a result's ``provenance`` kept out of its machine-independent part."""

from __future__ import annotations

import json

import pytest

import slotnet.orchestrator.engine._provenance as prov
from slotnet import RunSpec, run
from slotnet._build import build
from slotnet._version import version
from slotnet.orchestrator import WALL_CLOCK_FIELDS
from slotnet.orchestrator.engine._provenance import git_commit, run_command
from slotnet.orchestrator.tools._fuzz import canonical
from tests.support.cli import call_main as _main

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER = "89abcdef0123456789abcdef0123456789abcdef"


def _strip(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in WALL_CLOCK_FIELDS}


def test_the_command_is_canonical_whatever_the_spec_was_written_as():
    """Params, load, slots, faults (as a list or parsed), detection, backlog, series and shards, in one order."""
    spec = RunSpec("packing", "mesh:4x4", params={"rank": "given", "tp": 0.5}, slots=60, warmup=2, seed=9,
                   faults=["loss=0.1@3-9", "crash@5:2", "detect=never"], max_backlog_per_node=50.0, series=True,
                   shards=2)
    assert run_command(spec) == ("slotnet run packing -t mesh:4x4 --param rank=given --param tp=0.5 --slots 60 "
                                 "--warmup 2 --seed 9 --rng philox --fault crash@5:2 --fault loss=0.1@3-9 --fault detect=never "
                                 "--max-backlog 50 --series --shards 2")
    assert run_command(spec, shards=False).endswith("--series")
    assert run_command(RunSpec("deflection", "hypercube:3", load={"lam": 0.25})) == \
        "slotnet run deflection -t hypercube:3 --lam 0.25 --warmup 0 --seed 0 --rng philox"


def test_a_results_command_reruns_it_from_the_command_line(capsys):
    """A run started from Python: its provenance names slotnet, the build and a command whose --json result is
    the same, machine-dependent keys aside."""
    spec = RunSpec("bcast-simple", "hypercube:3", load={"rho": 0.2}, slots=30, seed=4, faults=["crash@9:3"])
    r = run(spec).to_dict()
    p = r["provenance"]
    assert p["slotnet"] == version() and p["build"] == build()
    assert p["command"] == run_command(spec)
    code, out, _ = _main(capsys, *p["command"].split()[1:], "--json")
    again = json.loads(out)
    # bcast-simple sends to the crashed node after it saw it dead: its verdict fails, and the CLI exits 1
    assert code == 1 and again["provenance"]["command"] == p["command"]
    # one verdict everywhere: the CLI's result is the Python API's, verdict included
    assert _strip(again) == _strip(r) and r["verdict"]["ok"] is False
    assert "provenance" not in json.loads(canonical(r))


def test_outside_a_checkout_there_is_no_commit(monkeypatch):
    """No git work tree above the sources: ``commit`` is absent, the rest is there."""
    monkeypatch.setattr(prov, "git_commit", lambda root=None: None)
    p = run(RunSpec("bcast-simple", "hypercube:2", load={"rho": 0.2}, slots=5)).provenance
    assert set(p) == {"slotnet", "build", "command"}


def _repo(tmp_path, head: str) -> object:
    git = tmp_path / "repo" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    return git


def test_the_commit_is_read_from_dot_git(tmp_path):
    """A branch ref, a packed ref, a detached HEAD, a worktree's gitdir file, and no .git at all."""
    git = _repo(tmp_path, "ref: refs/heads/main")
    (git / "refs" / "heads" / "main").write_text(SHA + "\n")
    assert git_commit(tmp_path / "repo") == SHA
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{OTHER} refs/heads/other\n{SHA} refs/heads/main\n")
    assert git_commit(tmp_path / "repo") == SHA
    (git / "HEAD").write_text(OTHER + "\n")
    assert git_commit(tmp_path / "repo") == OTHER
    # a worktree: .git is a file naming its gitdir, whose commondir is the main repository's .git
    wt = git / "worktrees" / "fix"
    wt.mkdir(parents=True)
    (wt / "HEAD").write_text("ref: refs/heads/main\n")
    (wt / "commondir").write_text("../..\n")
    tree = tmp_path / "fix"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {wt}\n")
    assert git_commit(tree) == SHA
    assert git_commit(tmp_path / "nowhere") is None
    (git / "HEAD").write_text("ref: refs/heads/gone\n")
    assert git_commit(tmp_path / "repo") is None


@pytest.mark.parametrize("head", ["garbage", "ref: refs/heads/main"])
def test_an_unreadable_head_gives_no_commit(tmp_path, head):
    """A HEAD that is neither a ref nor a sha, or a ref with no commit behind it: no commit, no error."""
    _repo(tmp_path, head)
    assert git_commit(tmp_path / "repo") is None
