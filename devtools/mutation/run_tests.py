"""The test command of a mutation run: the fast tests that guard one mutated module.

``mutmut`` runs this once per mutant, with the mutated file as its argument (the hook in
``mutmut_config.py`` appends it); without an argument (mutmut's baseline run) it runs the
default selection. A whole suite per mutant is far too slow, so each module has its own
selection, derived from its path (its unit tests mirror it under ``tests/unit/``) with a
short list of extra pairs: the test files that exercise it and finish in seconds. Exit status 1 when
a test fails or cannot even be collected (the mutant is killed), 0 when all pass (it
survived): mutmut reads any other status as "survived", which would hide a mutant that
breaks an import.

Usage (from the repository root; ``devtools/mutation.sh`` does this):
    python devtools/mutation/run_tests.py [FILE]        # run FILE's selection
    python devtools/mutation/run_tests.py --show FILE   # print it
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from pathlib import Path

#: a mutant that makes the tests hang (a slot barrier that never opens) is killed after this
TIMEOUT_S = 300


def _die_with_parent() -> None:
    """Linux: the test process is killed when this runner is (mutmut's own timeout kills
    the runner; without this the tests of a hung mutant would run on as an orphan)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

#: the tests of a file that has none of its own, and of mutmut's baseline run: quick end-to-end
#: runs of every scheme family and the core contracts
DEFAULT = ["tests/unit/schemes/test_core_contracts.py", "tests/unit/orchestrator/test_pinned_behaviour.py"]

ROOT = Path(__file__).resolve().parents[2]

#: Tests that guard a module beyond the ones its path names (see :func:`own_tests`): path
#: prefix -> test files, folders or node ids under tests/; every prefix that matches adds its tests.
EXTRA: dict[str, list[str]] = {
    "fabric/": ["contract/test_fabric_runtime.py"],
    "fabric/_fault": ["unit/fabric/test_faults.py", "unit/fabric/test_fault_kinds.py",
                      "contract/test_faults_catalogue.py", "contract/test_faults_restarts.py",
                      "unit/orchestrator/engine/test_collect_books.py", "unit/nodes/test_context_detect.py"],
    "fabric/_ledger.py": ["unit/orchestrator/shard/test_wire.py::test_the_ledger_travels_as_its_books"],
    "fabric/_sharded.py": ["unit/orchestrator/shard/"],
    "fabric/_transport.py": ["unit/fabric/test_in_flight.py", "contract/test_faults_catalogue.py",
                             "contract/test_send_witness_paths.py"],
    "nodes/": ["unit/nodes/test_context.py", "contract/test_fabric_runtime.py"],
    "orchestrator/shard/": ["unit/orchestrator/shard/", "broker/test_pinned_shards.py"],
    "orchestrator/engine/": ["unit/schemes/test_core_contracts.py", "unit/orchestrator/test_pinned_behaviour.py"],
    "orchestrator/engine/_driver.py": ["unit/orchestrator/engine/test_network.py"],
    "orchestrator/engine/_invariants.py": ["unit/orchestrator/engine/test_collect.py", "contract/test_theory_claims.py"],
    "orchestrator/engine/_memory.py": ["unit/orchestrator/engine/test_spec.py"],
    "orchestrator/engine/_observer.py": ["unit/orchestrator/engine/test_spec.py", "contract/test_observer.py"],
    "orchestrator/engine/_trace.py": ["unit/orchestrator/engine/test_spec.py", "unit/orchestrator/tools/test_trace_query.py"],
    "orchestrator/cli/": ["unit/orchestrator/test_cli.py", "unit/orchestrator/test_cli_commands.py",
                          "unit/orchestrator/test_cli_help.py", "unit/orchestrator/test_cli_io.py",
                          "unit/orchestrator/test_cli_output.py", "unit/orchestrator/test_cli_validation.py",
                          "docs/test_docs_reference.py::test_generated_reference_pages_are_current"],
    "orchestrator/tools/_diagram.py": ["unit/orchestrator/tools/test_trace_tools.py", "unit/orchestrator/tools/test_trace_views.py"],
    "orchestrator/tools/_perfetto.py": ["unit/orchestrator/tools/test_trace_tools.py", "unit/orchestrator/tools/test_trace_query.py"],
    "orchestrator/tools/_trace_query.py": ["unit/orchestrator/tools/test_trace_tools.py"],
    "orchestrator/tools/_fuzz.py": ["unit/orchestrator/tools/test_explore_random.py"],
    "orchestrator/tools/_shrink.py": ["unit/orchestrator/tools/test_explore_runs.py::test_ddmin_keeps_exactly_the_culprits",
                                      "unit/orchestrator/tools/test_explore_runs.py::test_shrink_finds_fewest_faults_then_the_shortest_window"],
    "orchestrator/tools/_report.py": ["unit/orchestrator/test_cli_output.py"],
    "orchestrator/tools/_repro.py": ["unit/orchestrator/test_cli.py", "unit/orchestrator/tools/test_results_cache.py",
                                     "unit/orchestrator/tools/test_paper_run.py"],
    "orchestrator/tools/_paper_run.py": ["unit/orchestrator/test_cli.py"],
    "orchestrator/tools/re": ["unit/orchestrator/tools/test_repro_all.py", "unit/orchestrator/tools/test_paper_run.py",
                              "unit/orchestrator/tools/test_report_html.py"],  # repro_all, report_html, results_cache
    "schemes/kit/": ["unit/schemes/test_core_contracts.py", "unit/orchestrator/test_pinned_behaviour.py"],
    "schemes/kit/_broadcast": ["unit/schemes/kit/test_broadcast_node.py", "unit/schemes/kit/test_little_queues.py"],
    "schemes/kit/_queues.py": ["unit/schemes/kit/test_little_queues.py"],
    "schemes/kit/_little.py": ["unit/schemes/test_planted_bugs.py"],
    "schemes/kit/_checks.py": ["unit/schemes/test_planted_bugs.py"],
    "schemes/kit/_reporter.py": ["contract/test_oneshot_completion.py"],
    "schemes/kit/_unicast_reporter.py": ["contract/test_oneshot_completion.py", "unit/schemes/test_planted_bugs.py"],
    "schemes/kit/_validate.py": ["unit/schemes/kit/test_reporter.py", "unit/orchestrator/engine/test_invariants_checkers.py"],
}


def own_tests(path: str) -> list[str]:
    """The unit tests a source file's path names: for ``DIR/NAME.py`` (``NAME`` without its
    leading underscores), ``tests/unit/DIR/test_NAME*.py`` -- ``test_PAPER_NAME*.py`` in a
    paper's package ``schemes/PAPER/`` -- and the folder's ``test_FOLDER_parts.py`` (its
    small pieces, several modules to a file)."""
    folder, _, name = path.rpartition("/")
    if name == "__init__.py":  # a package's face: the tests of what it re-exports, under EXTRA's prefixes
        return []
    stem = name.removesuffix(".py").lstrip("_")
    parts = folder.split("/")
    paper = f"{parts[1]}_" if parts[0] == "schemes" and len(parts) > 1 and parts[1] != "kit" else ""
    unit = ROOT / "tests" / "unit" / folder
    found = sorted(unit.glob(f"test_{paper}{stem}*.py")) + sorted(unit.glob(f"test_{parts[-1]}_parts.py"))
    return [str(p.relative_to(ROOT)) for p in dict.fromkeys(found)]


def selection(path: str | None) -> list[str]:
    """The tests that guard ``path``: its own (:func:`own_tests`) and every matching
    :data:`EXTRA`'s, or :data:`DEFAULT` when none does (and for no path)."""
    if path is None:
        return DEFAULT
    path = path.removeprefix("./")
    chosen = own_tests(path) + [f"tests/{t}" for prefix, tests in EXTRA.items() if path.startswith(prefix) for t in tests]
    return list(dict.fromkeys(chosen)) or DEFAULT


def main(argv: list[str]) -> int:
    if argv[:1] == ["--show"]:
        print(" ".join(selection(argv[1] if len(argv) > 1 else None)))
        return 0
    tests = selection(argv[0] if argv else None)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", "-m", "not slow", *tests]
    try:
        return 0 if subprocess.run(cmd, timeout=TIMEOUT_S, preexec_fn=_die_with_parent).returncode == 0 else 1
    except subprocess.TimeoutExpired:  # run() has killed it: a hang is a behaviour the tests noticed
        print(f"killed after {TIMEOUT_S} s (the mutant hangs the tests)")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
