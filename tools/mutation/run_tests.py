"""The test command of a mutation run: the fast tests that guard one mutated module.

``mutmut`` runs this once per mutant, with the mutated file as its argument (the hook in
``mutmut_config.py`` appends it); without an argument (mutmut's baseline run) it runs the
default selection. A whole suite per mutant is far too slow, so each module has its own
selection below: the test files that exercise it and finish in seconds. Exit status 1 when
a test fails or cannot even be collected (the mutant is killed), 0 when all pass (it
survived): mutmut reads any other status as "survived", which would hide a mutant that
breaks an import.

Usage (from the repository root; ``tools/mutation.sh`` does this):
    python tools/mutation/run_tests.py [FILE]        # run FILE's selection
    python tools/mutation/run_tests.py --show FILE   # print it
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys

#: a mutant that makes the tests hang (a slot barrier that never opens) is killed after this
TIMEOUT_S = 300


def _die_with_parent() -> None:
    """Linux: the test process is killed when this runner is (mutmut's own timeout kills
    the runner; without this the tests of a hung mutant would run on as an orphan)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

#: Run whatever is mutated: quick end-to-end runs of every scheme family and the core contracts.
DEFAULT = ["tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"]

#: Path prefix -> the test files (or node ids) that guard it; the longest matching prefix wins.
SELECTION: dict[str, list[str]] = {
    "schemes/kit/_stats.py": ["tests/test_kit_units.py"],
    "schemes/kit/_births.py": ["tests/test_kit_units.py"],
    "schemes/kit/_labels.py": ["tests/test_kit_units.py"],
    "schemes/kit/_reporter.py": ["tests/test_reporter_units.py", "tests/test_kit_units.py", "tests/test_core_contracts.py",
                                 "tests/test_pinned_behaviour.py", "tests/test_oneshot_completion.py"],
    "schemes/kit/_broadcast_node.py": ["tests/test_broadcast_node_units.py", "tests/test_kit_units.py", "tests/test_littles_law.py",
                                       "tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"],
    "schemes/kit/_queues.py": ["tests/test_kit_queue_units.py", "tests/test_kit_units.py", "tests/test_littles_law.py",
                               "tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"],
    "schemes/kit/_little.py": ["tests/test_little_units.py", "tests/test_littles_law.py", "tests/test_planted_bugs.py"],
    "schemes/kit/_checks.py": ["tests/test_checks_units.py", "tests/test_validator_checks.py",
                               "tests/test_planted_bugs.py", "tests/test_validator_witness.py",
                               "tests/test_kit_units.py"],
    "schemes/kit/_broadcast_reporter.py": ["tests/test_broadcast_node_units.py", "tests/test_kit_units.py", "tests/test_littles_law.py",
                                           "tests/test_pinned_behaviour.py", "tests/test_planted_bugs.py"],
    "schemes/kit/_unicast_reporter.py": ["tests/test_unicast_reporter_units.py", "tests/test_kit_units.py",
                                         "tests/test_oneshot_completion.py",
                                         "tests/test_pinned_behaviour.py", "tests/test_planted_bugs.py"],
    "schemes/kit/_validate.py": ["tests/test_reporter_units.py", "tests/test_kit_units.py", "tests/test_user_checkers.py"],
    "schemes/kit/": ["tests/test_kit_units.py", "tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"],
    "fabric/_codec.py": ["tests/test_codec.py", "tests/test_fabric_units.py"],
    "fabric/_ledger.py": ["tests/test_fabric_units.py", "tests/test_sharded_memory.py::test_the_ledger_travels_as_its_books"],
    "fabric/_clock.py": ["tests/test_fabric_runtime.py", "tests/test_fabric_units.py"],
    "fabric/_protocol.py": ["tests/test_fabric_runtime.py", "tests/test_fabric_units.py"],
    "fabric/_topology.py": ["tests/test_topology_units.py", "tests/test_topology.py", "tests/test_fabric_units.py",
                            "tests/test_fabric_runtime.py"],
    "fabric/_in_flight.py": ["tests/test_in_flight.py"],
    "fabric/_fault": ["tests/test_fault_schedule_units.py", "tests/test_fault_kinds_units.py",
                      "tests/test_fabric_units.py", "tests/test_faults_catalogue.py", "tests/test_faults_books.py",
                      "tests/test_faults_detection.py", "tests/test_faults_restarts.py"],
    "fabric/_transport.py": ["tests/test_transport_units.py", "tests/test_fabric_runtime.py", "tests/test_fabric_units.py",
                             "tests/test_in_flight.py", "tests/test_faults_catalogue.py", "tests/test_send_witness_paths.py"],
    "fabric/_sharded.py": ["tests/test_shard_units.py", "tests/test_sharded_memory.py", "tests/test_fabric_runtime.py"],
    "fabric/": ["tests/test_fabric_runtime.py", "tests/test_fabric_units.py", "tests/test_codec.py",
                "tests/test_core_contracts.py"],
    "nodes/_context.py": ["tests/test_context_units.py", "tests/test_fabric_runtime.py"],
    "nodes/_rng.py": ["tests/test_context_units.py"],
    "nodes/_runtime.py": ["tests/test_parking.py", "tests/test_context_units.py", "tests/test_fabric_runtime.py",
                          "tests/test_core_contracts.py"],
    "nodes/": ["tests/test_fabric_runtime.py", "tests/test_core_contracts.py"],
    "orchestrator/shard/": ["tests/test_shard_units.py", "tests/test_pinned_shards.py", "tests/test_sharded_memory.py"],
    "orchestrator/engine/_collect.py": ["tests/test_engine_collect_units.py", "tests/test_engine_units.py",
                                        "tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"],
    "orchestrator/engine/_result.py": ["tests/test_engine_units.py", "tests/test_json_numbers.py", "tests/test_core_contracts.py"],
    "orchestrator/engine/_progress.py": ["tests/test_engine_units.py"],
    "orchestrator/engine/_invariants.py": ["tests/test_engine_units.py", "tests/test_engine_collect_units.py",
                                           "tests/test_theory_claims.py"],
    "orchestrator/engine/_stability.py": ["tests/test_engine_units.py", "tests/test_pinned_behaviour.py",
                                          "tests/test_user_early_stop.py"],
    "orchestrator/engine/_gc.py": ["tests/test_engine_units.py", "tests/test_core_contracts.py"],
    "orchestrator/engine/_spec.py": ["tests/test_engine_spec_units.py", "tests/test_core_contracts.py",
                                     "tests/test_pinned_behaviour.py"],
    "orchestrator/engine/_memory.py": ["tests/test_engine_spec_units.py", "tests/test_memory_precheck.py"],
    "orchestrator/engine/_trace.py": ["tests/test_engine_spec_units.py", "tests/test_pinned_trace_order.py",
                                      "tests/test_trace_query.py"],
    "orchestrator/engine/_observer.py": ["tests/test_engine_spec_units.py", "tests/test_observer.py",
                                         "tests/test_core_contracts.py"],
    "orchestrator/engine/_network.py": ["tests/test_engine_network_units.py", "tests/test_core_contracts.py",
                                        "tests/test_pinned_behaviour.py"],
    "orchestrator/engine/_driver.py": ["tests/test_engine_network_units.py", "tests/test_core_contracts.py",
                                       "tests/test_pinned_behaviour.py"],
    "orchestrator/tools/_explore.py": ["tests/test_explore_units.py", "tests/test_explore.py", "tests/test_explore_random.py"],
    "orchestrator/tools/_fuzz.py": ["tests/test_fuzz_units.py", "tests/test_explore_random.py"],
    "orchestrator/tools/_shrink.py": ["tests/test_shrink_units.py",
                                      "tests/test_explore.py::test_ddmin_keeps_exactly_the_culprits",
                                      "tests/test_explore.py::test_shrink_finds_fewest_faults_then_the_shortest_window"],
    "orchestrator/tools/_report.py": ["tests/test_report_units.py", "tests/test_user_output.py"],
    "orchestrator/tools/_trace_query.py": ["tests/test_trace_tools_units.py", "tests/test_trace_query.py"],
    "orchestrator/tools/_perfetto.py": ["tests/test_trace_tools_units.py", "tests/test_trace_query.py"],
    "orchestrator/tools/_diagram.py": ["tests/test_trace_tools_units.py", "tests/test_trace_views.py"],
    "orchestrator/cli/": ["tests/test_cli_units.py", "tests/test_docs_reference.py::test_generated_reference_pages_are_current",
                          "tests/test_cli.py"],
    "orchestrator/tools/_repro.py": ["tests/test_cli_units.py", "tests/test_results_cache.py", "tests/test_report_progress.py"],
    "orchestrator/tools/_paper_run.py": ["tests/test_cli_units.py", "tests/test_report_progress.py"],
    "orchestrator/tools/results_cache.py": ["tests/test_repro_tools_units.py", "tests/test_results_cache.py"],
    "orchestrator/tools/repro_all.py": ["tests/test_repro_tools_units.py", "tests/test_report_progress.py",
                                        "tests/test_report_html.py"],
    "orchestrator/tools/report_html.py": ["tests/test_repro_tools_units.py", "tests/test_report_html.py",
                                          "tests/test_report_slips.py"],
    "orchestrator/": ["tests/test_core_contracts.py", "tests/test_pinned_behaviour.py"],
}


def selection(path: str | None) -> list[str]:
    """The tests that guard ``path`` (the default selection for none or an unlisted path)."""
    if path is None:
        return DEFAULT
    path = path.removeprefix("./")
    best = max((p for p in SELECTION if path.startswith(p)), key=len, default=None)
    return DEFAULT if best is None else SELECTION[best]


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
