"""The reference pages stay true to the code.

* docs/reference/cli.md and docs/reference/schemes.md are what ``docs/hooks/reference.py``
  renders from ``slotnet.orchestrator.cli.build_parser()`` and the scheme registry today.
* docs/reference/result.schema.json is a valid JSON Schema, and real ``slotnet run ...
  --json`` output validates against it: several schemes, one-shot and slot-bound, with
  and without faults, traced, per-node and series, stopped early, and sharded.
* docs/reference/faults.md lists every registered fault kind.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys

import jsonschema
import pytest

from slotnet.fabric import FAULT_KINDS
from slotnet.orchestrator.cli import main
from tests.support.docs_snippets import DOCS

SCHEMA = json.loads((DOCS / "reference" / "result.schema.json").read_text(encoding="utf-8"))


def _reference():
    spec = importlib.util.spec_from_file_location("slotnet_docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_generated_reference_pages_are_current():
    """The committed CLI and scheme pages are what the generator writes from today's code."""
    stale = _reference().stale(DOCS)
    assert not stale, f"{', '.join(stale)} out of date: run `python docs/hooks/reference.py` and commit the pages"


def test_cli_page_documents_every_command_and_option():
    """Belt and braces: every sub-command and every long option of the parser is on the page."""
    import argparse

    from slotnet.orchestrator.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        assert f"## slotnet {name}\n" in page, name
        for action in p._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert f"`{option}" in page, (name, option)


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def _run_json(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--json", "--no-progress"])
    result = json.loads(out.getvalue())
    assert code == (0 if result["verdict"]["ok"] else 1), err.getvalue()  # a failed verdict exits 1, printed in full
    return result


def _validate(result: dict) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(result), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:10])


RUNS = {
    "deflection-per-node-series": ["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "60", "--warmup", "10",
                                   "--seed", "1", "--per-node", "--series"],
    "bcast-simple-crash-traced": ["run", "bcast-simple", "-t", "hypercube:3", "--rho", "0.15", "--slots", "40", "--seed", "2",
                                  "--fault", "crash@12:5", "--trace", "{tmp}/b.jsonl"],
    "pmnb-one-shot": ["run", "pmnb", "-t", "torus:4x4", "--param", "active=5", "--seed", "1"],
    "m2o-greedy-loss": ["run", "m2o-greedy", "-t", "mesh:4x4", "--fault", "loss=0.05", "--seed", "1"],
    "star-message-faults-detect-never": ["run", "star", "-t", "torus:4x4", "--rho", "0.4", "--slots", "100",
                                         "--fault", "link-down@10:0:0", "--fault", "dup=0.05", "--fault", "dup=0.01@50",
                                         "--fault", "corrupt=0.02:undetected", "--detect", "never"],
    "bcast-periodic-stall-delay": ["run", "bcast-periodic", "-t", "hypercube:3", "--rho", "0.2", "--slots", "80",
                                   "--fault", "stall@10:20:3", "--fault", "delay=0.05:2", "--per-node"],
    "prefix-scan-series": ["run", "prefix-scan", "-t", "mesh:4x4", "--seed", "2", "--series"],
    "dynamic-broadcast-philox": ["run", "dynamic-broadcast", "-t", "mesh:4x4", "--rho", "0.3", "--slots", "120", "--seed", "1",
                                "--rng", "philox"],
    "deflection-stopped-in-warmup": ["run", "deflection", "-t", "hypercube:4", "--lam", "3", "--slots", "400", "--warmup", "300",
                                     "--max-backlog", "2"],
    "deflection-partition-corrupt": ["run", "deflection", "-t", "hypercube:4", "--offered", "1", "--slots", "100",
                                     "--fault", "partition@10:30:0-7", "--fault", "corrupt=0.05", "--fault", "recover@50:3",
                                     "--fault", "crash@20:3"],
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_run_json_validates_against_the_schema(name, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in RUNS[name]]
    result = _run_json(argv)
    _validate(result)
    assert ("fault_impact" in result) == any(a.startswith("--fault") for a in argv)
    if name == "deflection-stopped-in-warmup":
        assert "note" in result and not result["stability"]["stable"], result.get("note")
        assert result["metrics"]["mean_delay"] is None and result["metrics"]["link_utilization"] is None
    if name == "bcast-simple-crash-traced":
        assert "trace_fingerprint" in result


@pytest.mark.slow
def test_sharded_run_json_validates_against_the_schema():
    """A run over 2 shards (a private mosquitto) reports its MQTT transport in the published shape."""
    result = _run_json(["run", "deflection", "-t", "hypercube:5", "--offered", "1", "--slots", "30", "--seed", "1",
                        "--shards", "2", "--fault", "loss=0.01"])
    _validate(result)
    assert result["transport"]["kind"] == "mqtt" and result["transport"]["shards"] == 2


def test_schema_refuses_what_the_result_never_holds():
    """The schema is strict where the result is: an unknown top-level key or a bad transport fails."""
    result = _run_json(["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "20"])
    _validate(result)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert not validator.is_valid({**result, "surprise": 1})
    assert not validator.is_valid({**result, "transport": {"kind": "carrier-pigeon"}})
    assert not validator.is_valid({**result, "invariants": {"link_capacity": {"ok": True}}})


def test_fault_reference_lists_every_kind():
    """Every registered fault kind has a row in the fault entry reference."""
    page = (DOCS / "reference" / "faults.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for kind in FAULT_KINDS:
        assert any(f"`{kind}@" in row or f"`{kind}=" in row for row in rows), kind
