"""Every registered scheme's reporter keeps the Reporter contract the engine relies on.

The engine (one process or the shard coordinator) calls a reporter only through
:class:`slotnet.schemes.Reporter`: ``handlers`` for the events ``events`` declares,
``on_lost``, ``end_slot``, ``backlog``, ``holdings``, ``metrics``, ``per_node``, ``series``,
``invariants``, and, when a reporter has them, ``run_ended(slot, complete)`` and
``crash_losses(losses)``. For each scheme in the registry: every one of those methods takes
the arguments the contract gives it, each declared event's handler takes
``(node, slot, *fields)``, a fresh reporter has nothing queued, and a tiny run's report
has the contract's shapes (per-node lists one entry per node, invariants each a dict with
a boolean ``ok``). (Not checked: a handler for a kind that ``events`` does not declare;
``dynamic-broadcast``'s reporter has one, ``disorder``, inherited from the kit.)
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import pytest

from slotnet import RunSpec, run
from slotnet.orchestrator.cli import scheme_example
from slotnet.schemes import SCHEMES, Reporter

#: the methods of the contract, read off the Protocol itself (a method added there is checked here too)
CONTRACT = sorted(name for name, fn in vars(Reporter).items() if inspect.isfunction(fn) and not name.startswith("_"))
#: optional methods the engine calls when a reporter has them: name -> arguments it passes
OPTIONAL: dict[str, tuple[Any, ...]] = {"run_ended": (19, True), "crash_losses": ([],)}


def _tiny(name: str) -> RunSpec:
    """The scheme's example run (``slotnet schemes NAME``), cut to 20 slots without warm-up."""
    scheme = SCHEMES[name]
    argv = scheme_example(scheme)[0]
    load = {ld.name: float(argv[argv.index(f"--{ld.name}") + 1]) for ld in scheme.loads if f"--{ld.name}" in argv}
    return RunSpec(name, argv[argv.index("-t") + 1], load=load, slots=20, warmup=0, seed=1)


def _fresh(name: str) -> tuple[Any, int]:
    prep = _tiny(name).prepare()
    return prep.scheme.reporter(prep.setup), prep.topology.n_nodes


def test_the_contract_is_the_protocols_methods():
    """The contract read off the Protocol is the twelve methods the engine calls (this test's premise), the
    end hooks (run_ended, crash_losses, packet_books) among them since the typed contract."""
    assert CONTRACT == ["backlog", "crash_losses", "end_slot", "handlers", "holdings", "invariants", "metrics", "on_lost",
                        "packet_books", "per_node", "run_ended", "series"]


def test_every_scheme_has_an_example_to_run():
    """Each registered scheme gives an example run (the tests below run each one)."""
    assert SCHEMES and all(scheme_example(s) for s in SCHEMES.values())


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_reporter_takes_every_call_of_the_contract(name):
    """Each contract method (and each optional one it has) binds the arguments the Protocol's
    signature names, as the engine passes them."""
    reporter, _ = _fresh(name)
    for method in CONTRACT:
        fn = getattr(reporter, method, None)
        assert callable(fn), f"{name}: reporter has no {method}()"
        wanted = [p for p in inspect.signature(getattr(Reporter, method)).parameters if p != "self"]
        try:
            inspect.signature(fn).bind(*([None] * len(wanted)))
        except TypeError as e:
            pytest.fail(f"{name}: {method} does not take ({', '.join(wanted)}): {e}")
    for method, args in OPTIONAL.items():
        if hasattr(reporter, method):
            inspect.signature(getattr(reporter, method)).bind(*args)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_every_declared_event_has_a_handler_that_takes_its_fields(name):
    """``events`` maps each kind to its field names, and ``handlers()`` has a function for every
    declared kind taking ``(node, slot, *fields)``."""
    reporter, _ = _fresh(name)
    assert isinstance(reporter.events, Mapping) and reporter.events, f"{name}: no events declared"
    handlers = reporter.handlers()
    for kind, fields in reporter.events.items():
        assert isinstance(kind, str) and all(isinstance(f, str) for f in fields), (name, kind, fields)
        assert kind in handlers, f"{name}: event {kind!r} declared without a handler"
        inspect.signature(handlers[kind]).bind(0, 0, *fields)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_fresh_reporter_has_nothing_queued(name):
    """Before any event a reporter's backlog is the integer 0, before and after closing slot 0."""
    reporter, _ = _fresh(name)
    assert reporter.backlog() == 0 and isinstance(reporter.backlog(), int)
    reporter.end_slot(0)
    assert reporter.backlog() == 0


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_a_tiny_run_reports_in_the_contracts_shapes(name):
    """A 20-slot run's metrics are keyed by name, its per-node lists have one entry per node, its
    series is a list of rows, and each scheme invariant is a dict with a boolean ``ok``."""
    _, n = _fresh(name)
    r = run(_tiny(name))
    assert r.metrics and all(isinstance(k, str) for k in r.metrics), name
    assert all(isinstance(v, list) and len(v) == n for v in r.per_node.values()), (name, {k: len(v) for k, v in r.per_node.items()})
    assert isinstance(r.series, list) and all(isinstance(row, dict) for row in r.series), name
    named = {k: v for k, v in r.invariants.items() if k != "ok"}  # "ok": the verdict over them all
    assert isinstance(r.invariants["ok"], bool) and named, name
    assert all(isinstance(v, dict) and isinstance(v.get("ok"), bool) for v in named.values()), (name, named)
