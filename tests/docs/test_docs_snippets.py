"""The code in README.md and docs/ works as printed.

* The tutorial (docs/tutorial.md) runs from top to bottom: every Python block, in order,
  in one namespace, and every ``slotnet`` command of its shell blocks, in a scratch folder.
* Every other page's Python blocks run, in order, in one namespace per page.
* Shell blocks marked ``<!-- run -->`` run, in order, one scratch folder per page.
* Every ``slotnet`` command line anywhere (README.md, docs/) parses with the current
  parser, and a ``run``/``theory``/``explore`` line names a real scheme, topology,
  parameters, load and faults (its spec is prepared, not run).
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

import pytest

import slotnet
from slotnet.orchestrator.cli import build_parser, main
from slotnet.schemes import SCHEMES
from tests.support.docs_snippets import DOCS, ROOT, Block, blocks, pages

TUTORIAL = DOCS / "tutorial.md"


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _exec(block: Block, namespace: dict[str, object]) -> None:
    code = compile(block.body, f"{block.page}:{block.line}", "exec")
    exec(code, namespace)


def _slotnet(block: Block, argv: list[str], status: int = 0) -> str:
    """Run ``slotnet ARGV`` in this process; its standard output (it must exit with ``status``)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 1
    assert code == status, (f"{block.page}:{block.line}: slotnet {' '.join(argv)} exited {code}, not {status}: "
                            f"{err.getvalue()[-2000:]}")
    return out.getvalue()


def _run_commands(block: Block) -> None:
    for argv, status in block.commands_with_status():
        _slotnet(block, argv, status)


def _run_transcript(block: Block) -> None:
    """Run a console block's commands; every output line it prints (but ``...`` elisions) must be printed, and each
    exits with the status its line states (0 unless ``# exit status N``)."""
    statuses = dict((tuple(argv), status) for argv, status in block.commands_with_status())
    for argv, expected in block.transcript():
        printed = {line.rstrip() for line in _slotnet(block, argv, statuses.get(tuple(argv), 0)).splitlines()}
        missing = [line for line in expected if line.strip() and "..." not in line and line not in printed]
        assert not missing, f"{block.page}:{block.line}: slotnet {' '.join(argv)} no longer prints {missing}"


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch working folder, and the scheme registry restored afterwards."""
    monkeypatch.chdir(tmp_path)
    saved = dict(SCHEMES)
    yield tmp_path
    SCHEMES.clear()
    SCHEMES.update(saved)


def test_tutorial_runs_from_top_to_bottom(scratch):
    """Every Python block and every slotnet command of the tutorial, in the order printed."""
    namespace: dict[str, object] = {"__name__": "tutorial"}
    ran = {"python": 0, "commands": 0}
    for block in blocks(TUTORIAL):
        if block.lang == "python":
            _exec(block, namespace)
            ran["python"] += 1
        elif block.commands():
            _run_commands(block)
            ran["commands"] += len(block.commands())
    assert ran["python"] >= 8 and ran["commands"] >= 5, ran
    for out in ("flood.jsonl", "flood.svg", "flood.json"):
        assert (scratch / out).stat().st_size > 0, out


_PYTHON_PAGES = [p for p in pages() if p != TUTORIAL and any(b.lang == "python" for b in blocks(p))]


@pytest.mark.parametrize("page", _PYTHON_PAGES, ids=_rel)
def test_python_blocks_run(page, scratch):
    """The Python blocks of a page run in order, in one namespace (a scratch folder as working folder)."""
    namespace: dict[str, object] = {"__name__": "docs"}
    for block in blocks(page):
        if block.lang == "python":
            _exec(block, namespace)


#: pages whose marked commands take more than a few seconds (slow: CI runs them, everyday runs skip them)
_SLOW_PAGES = {"docs/how-to/faults.md"}
_RUN_PAGES = [pytest.param(p, id=_rel(p), marks=[pytest.mark.slow] if _rel(p) in _SLOW_PAGES else [])
              for p in pages() if any(b.marked_run for b in blocks(p))]


@pytest.mark.parametrize("page", _RUN_PAGES)
def test_marked_commands_run(page, scratch):
    """The shell blocks marked ``<!-- run -->`` run in order and every command exits 0 (or the status its line states)."""
    marked = [b for b in blocks(page) if b.marked_run]
    assert all(b.commands() for b in marked), [f"{b.page}:{b.line}" for b in marked if not b.commands()]
    for block in marked:
        if block.lang == "console":
            _run_transcript(block)
        else:
            _run_commands(block)


def _all_commands() -> list[tuple[str, list[str]]]:
    out = []
    for page in pages():
        for block in blocks(page):
            out += [(f"{block.page}:{block.line}", argv) for argv in block.commands()]
    return out


def _spec(args: argparse.Namespace) -> slotnet.RunSpec:
    """The run spec a ``run``/``theory``/``explore`` line describes (not run)."""
    params = dict(item.split("=", 1) for item in args.param)
    load = {ld.name: getattr(args, ld.name) for ld in SCHEMES[args.scheme].loads if getattr(args, ld.name, None) is not None}
    faults = list(getattr(args, "fault", []) or [])
    return slotnet.RunSpec(args.scheme, args.topology, params=params, load=load, slots=args.slots,
                           warmup=getattr(args, "warmup", 0), seed=getattr(args, "seed", 0), faults=faults,
                           shards=getattr(args, "shards", 1))


def test_every_command_line_parses_and_names_real_things():
    """Each ``slotnet`` line of the README and the docs parses; run/theory/explore specs prepare."""
    commands = _all_commands()
    assert len(commands) >= 40, len(commands)
    parser = build_parser()
    for where, argv in commands:
        if argv in (["--version"], ["--help"]) or "--help" in argv:
            continue
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                args = parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"{where}: slotnet {' '.join(argv)}: {err.getvalue().strip()}")
        if args.command in ("run", "theory", "explore"):
            try:
                _spec(args).prepare()
            except (slotnet.SlotnetError, KeyError) as exc:
                pytest.fail(f"{where}: slotnet {' '.join(argv)}: {exc}")
