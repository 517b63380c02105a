"""The compiled hot path against its pure-Python source: the same results, bit for bit.

``slotnet/_build.py`` names the modules setup.py compiles with Cython from their own
``.py`` files. These tests prove the two builds identical, function by function on
random inputs and run by run on whole JSON results and traces, for every scheme family
(one process and sharded). Where the modules are not compiled (no C compiler) there is
nothing to compare and the comparisons skip; CI sets ``SLOTNET_REQUIRE_COMPILED=1``, so
there a missing build fails instead of skipping.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import random
import subprocess
import sys
from collections import deque
from pathlib import Path
from types import ModuleType

import pytest

from slotnet import _build
from tests.support.deliver import deliver

COMPILED = _build.build() == "compiled"
needs_compiled = pytest.mark.skipif(not COMPILED, reason="the hot path is not compiled here (no C compiler at install)")


def _pure(name: str) -> ModuleType:
    """A fresh, pure-Python copy of module ``name``, loaded from its .py source."""
    module = importlib.import_module(name)
    source = Path(module.__file__).with_name(name.rpartition(".")[2] + ".py")
    package, _, leaf = name.rpartition(".")
    # a name inside the module's package, so that its relative imports resolve (to the installed siblings)
    spec = importlib.util.spec_from_file_location(f"{package}._pure_{leaf}", source)
    assert spec is not None and spec.loader is not None
    pure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pure)
    return pure


def test_every_compiled_module_has_its_python_source():
    for name in _build.COMPILED_MODULES:
        module = importlib.import_module(name)
        assert Path(module.__file__).with_name(name.rpartition(".")[2] + ".py").is_file(), name


def test_ci_runs_the_compiled_build():
    if os.environ.get("SLOTNET_REQUIRE_COMPILED") != "1":
        pytest.skip("only CI requires the compiled build (SLOTNET_REQUIRE_COMPILED=1)")
    loaders = {m: type(importlib.import_module(m).__loader__).__name__ for m in _build.COMPILED_MODULES}
    assert _build.build() == "compiled", loaders


def test_an_extension_older_than_its_source_is_never_loaded(tmp_path, monkeypatch):
    """An edited file runs as edited until the next install compiles it; SLOTNET_PURE_PYTHON=1 always runs sources."""
    source = tmp_path / "mod.py"
    source.write_text("X = 1\n")
    ext = tmp_path / ("mod" + importlib.machinery.EXTENSION_SUFFIXES[0])
    ext.write_bytes(b"")
    monkeypatch.setattr(_build, "COMPILED_MODULES", ("pkg.mod",))
    monkeypatch.delenv(_build.PURE_ENV, raising=False)
    finder = _build._SourceFirst()
    assert finder.find_spec("pkg.other", [str(tmp_path)]) is None  # not a compiled module: not its business
    os.utime(ext, (1_000_000, 1_000_000))
    os.utime(source, (1_000_000, 1_000_001))  # written by the same install
    assert finder.find_spec("pkg.mod", [str(tmp_path)]) is None  # the ordinary finder loads the extension
    os.utime(source, (1_000_000, 1_000_100))  # edited since
    spec = finder.find_spec("pkg.mod", [str(tmp_path)])
    assert spec is not None and spec.origin == str(source)
    os.utime(source, (1_000_000, 1_000_000))
    monkeypatch.setenv(_build.PURE_ENV, "1")
    spec = finder.find_spec("pkg.mod", [str(tmp_path)])
    assert spec is not None and spec.origin == str(source)


@needs_compiled
def test_the_modules_really_are_compiled_and_the_copies_are_not():
    for name in _build.COMPILED_MODULES:
        assert isinstance(importlib.import_module(name).__loader__, importlib.machinery.ExtensionFileLoader), name
    assert isinstance(_pure("slotnet.schemes.deflection._rule").__loader__, importlib.machinery.SourceFileLoader)


def _outcome(fn, *args):
    """What a call gives: its value, or its exception's type and message."""
    try:
        return ("value", fn(*args))
    except Exception as exc:  # the two builds must fail alike too
        return ("raises", type(exc).__name__, str(exc))


def _sender(log: list):
    return lambda port, message: log.append((port, message))


@needs_compiled
@pytest.mark.parametrize("d", [1, 2, 5, 12, 24])
def test_one_pass_transmit_absorb_equal_the_source(d):
    """Ports, deflections, hop statistics, sends, and the random draws consumed."""
    fast = importlib.import_module("slotnet.schemes.deflection._rule")
    slow = _pure("slotnet.schemes.deflection._rule")
    gen = random.Random(d)
    for _ in range(1500):
        node = gen.randrange(1 << d)
        n = gen.randrange(0, d + 2)  # one more than d ports: the error path
        dests = [node ^ gen.randrange(0 if gen.random() < 0.02 else 1, 1 << d) for _ in range(n)]  # some for node itself
        first = gen.choice([0, 0, gen.randrange(0, n + 1)])
        live = gen.choice([None, None, gen.randrange(1 << d)])
        seed = gen.random()
        a, b = random.Random(seed), random.Random(seed)
        assert _outcome(fast.one_pass, node, dests, d, a.random, first, live) == \
            _outcome(slow.one_pass, node, dests, d, b.random, first, live)
        assert a.random() == b.random()
        pkts = [(dest, gen.randrange(100), gen.randrange(1 << d)) for dest in dests]
        sent_a: list = []
        sent_b: list = []
        assert _outcome(fast.transmit, node, pkts, d, a.random, _sender(sent_a), first, live) == \
            _outcome(slow.transmit, node, pkts, d, b.random, _sender(sent_b), first, live)
        assert sent_a == sent_b and a.random() == b.random()
        inbox = [(p, (dest, 1, 2, 3)) for p, dest in enumerate(dests)]
        queueing = gen.random() < 0.5
        assert fast.absorb(node, inbox, queueing) == slow.absorb(node, inbox, queueing)
        count, slot, queue = gen.randrange(d + 1), gen.randrange(1000), None
        if queueing:
            queue = deque(gen.randrange(slot + 1) for _ in range(count + gen.randrange(3)))
        got_a, got_b = list(pkts), list(pkts)
        qa, qb = (None, None) if queue is None else (deque(queue), deque(queue))
        fast.admit(node, 1 << d, slot, count, a.random, got_a, qa)
        slow.admit(node, 1 << d, slot, count, b.random, got_b, qb)
        assert got_a == got_b and qa == qb and a.random() == b.random()


@needs_compiled
def test_arrivals_equal_the_source():
    fast = importlib.import_module("slotnet.schemes.deflection._arrivals")
    slow = _pure("slotnet.schemes.deflection._arrivals")
    for seed, segments in enumerate([[(0, fast.binomial_pmf(12, 1 / 12))], [(0, fast.poisson_pmf(1.5))],
                                     [(0, fast.binomial_pmf(6, 0.5)), (40, [1.0]), (90, fast.binomial_pmf(6, 0.1))]]):
        a = fast.ArrivalProcess(random.Random(seed), segments)
        b = slow.ArrivalProcess(random.Random(seed), segments)
        slot = -1
        for _ in range(3000):
            got = a.next_after(slot)
            assert got == b.next_after(slot)
            if got is None:
                break
            slot = got[0] + seed % 2
        assert a.counts(slot + 5) == b.counts(slot + 5)


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set for classes a class statement made, clear for C types

#: Classes a ``.pxd`` beside their module declares C types (cdef classes) when compiled.
_DECLARED = [("slotnet.fabric._transport", "Outlet"), ("slotnet.fabric._transport", "TimedOutlet"),
             ("slotnet.nodes._context", "NodeContext"), ("slotnet.nodes._context", "TracedContext"),
             ("slotnet.nodes._philox", "PhiloxStream"),
             ("slotnet.schemes.deflection.reporter", "StepSums")]


@needs_compiled
@pytest.mark.parametrize(("module", "name"), _DECLARED)
def test_the_declarations_took_effect(module, name):
    """The compiled class is a C type (setup.py found its .pxd); its source is an ordinary class."""
    assert not getattr(importlib.import_module(module), name).__flags__ & _HEAPTYPE
    assert getattr(_pure(module), name).__flags__ & _HEAPTYPE


_SUMS = ("created", "offered_total", "absorbed_total", "backlog", "offered", "accepted", "sent", "deflected",
         "absorbed", "delay_sum", "delay_sq", "qdelay_sum", "qdelay_sq", "slot_delay", "slot_absorbed", "hist",
         "series", "node_accepted", "node_absorbed", "node_sent", "node_deflected", "queue")


@needs_compiled
@pytest.mark.parametrize("queueing", [False, True])
def test_step_sums_equal_the_source(queueing):
    """The deflection observer's sums (C integers when compiled) after random step events."""
    fast = importlib.import_module("slotnet.schemes.deflection.reporter").StepSums
    slow = _pure("slotnet.schemes.deflection.reporter").StepSums
    gen = random.Random(queueing)
    n, d, slots = 16, 4, 60
    a, b = fast(n, d, 10, queueing, slots), slow(n, d, 10, queueing, slots)
    for slot in range(slots):
        for node in gen.sample(range(n), 8):
            k = gen.randrange(d + 1)
            entered = [slot - gen.randrange(1, 12) for _ in range(k)]
            event = (node, slot, gen.randrange(4), gen.randrange(3), gen.randrange(d + 1), gen.randrange(3),
                     gen.randrange(20), gen.randrange(5), [gen.randrange(d + 1) for _ in range(gen.randrange(3))],
                     entered, [e - gen.randrange(5) for e in entered] if queueing else [], gen.randrange(9))
            a.step(*event)
            b.step(*event)
        for name in _SUMS:
            assert getattr(a, name) == getattr(b, name), (slot, name)


@needs_compiled
def test_step_sums_hold_delays_past_64_bits():
    """A delay's square can pass 2**63 in a long enough run: the compiled sums must not wrap."""
    sums = [importlib.import_module("slotnet.schemes.deflection.reporter").StepSums(1, 1, 0, True, 0),
            _pure("slotnet.schemes.deflection.reporter").StepSums(1, 1, 0, True, 0)]
    for s in sums:
        s.step(0, 9_000_000_000, 1, 1, 0, 0, 0, 0, [], [4_000_000_000] * 2, [0] * 2, 0)
        assert s.delay_sq == 2 * 5_000_000_000 ** 2 > 2**63 and s.qdelay_sq == 2 * 4_000_000_000 ** 2
        assert s.delay_sum == 10_000_000_000 and s.slot_delay == 18_000_000_000


@needs_compiled
@pytest.mark.parametrize("quantum", [1, 4])
def test_outlet_sends_equal_the_source(quantum):
    """What a typed outlet parks, and how it refuses a bad port, size or a full link."""
    from slotnet.fabric import SlotClock, parse_topology

    fast = importlib.import_module("slotnet.fabric._transport").InProcessTransport
    slow = _pure("slotnet.fabric._transport").InProcessTransport
    gen = random.Random(quantum)
    topo = parse_topology("mesh:3x3")
    calls = [(gen.choice([0, 1, 2, 3, -1, 7, "x", None, 1.0, True, 2**70, -2**70]), [gen.randrange(99)],
              gen.choice([1.0, 1.0, 0.5, 0.25, 0.0, 1.5, 2.0, 0.75])) for _ in range(400)]
    got = []
    for transport in (fast, slow):
        clock = SlotClock()
        net = transport(topo, clock, quantum=quantum)
        outlets = [net.outlet(v) for v in range(topo.n_nodes)]
        log = []
        for i, (port, message, size) in enumerate(calls):
            clock.slot = i // 40
            v = i % topo.n_nodes
            log.append(_outcome(outlets[v].send, port, message, size))
            log.append(_outcome(outlets[v].capacity_left, port))
            if i % 40 == 39:
                log.append(deliver(net, clock.slot + 1))
        got.append(log)
    assert got[0] == got[1]
    assert any(x[0] == "raises" for x in got[0] if isinstance(x, tuple)) and any(x == ("value", None) for x in got[0])


# -- whole runs: the CLI in a subprocess, once per build ---------------------------------

#: Every scheme family, with faults and variants that take the less travelled paths.
RUNS = {
    "deflection-blocking": "deflection -t hypercube:6 --offered 1 --slots 300 --warmup 50 --seed 1",
    "deflection-queue": "deflection -t hypercube:5 --lam 1.2 --slots 300 --warmup 50 --seed 2 --param order=continuing-first",
    "deflection-faults": ("deflection -t hypercube:6 --offered 1 --slots 250 --warmup 50 --seed 4 --fault link-down@60:3:2 "
                          "--fault link-up@120:3:2 --fault crash@100:17 --fault recover@160:17 --fault loss=0.02 "
                          "--fault dup=0.01 --fault stall@80:90:5 --fault corrupt=0.01"),
    "deflection-transient": "deflection -t hypercube:6 --param schedule=6:1,0 --slots 20 --seed 1",
    "bcast-dtree": "bcast-dtree -t hypercube:5 --rho 0.4 --slots 400 --warmup 50 --seed 5 --fault loss=0.02",
    "bcast-indirect": "bcast-indirect -t hypercube:5 --rho 0.4 --slots 400 --warmup 50 --seed 5",
    "bcast-periodic": "bcast-periodic -t hypercube:4 --rho 0.3 --slots 300 --warmup 50 --seed 5 --fault delay=0.02:3",
    "star": "star -t torus:4x4 --rho 0.6 --slots 300 --warmup 50 --seed 2 --fault crash@100:5",
    "m2o-rec": "m2o-rec -t mesh:4x4 --seed 3",
    "m2o-greedy": "m2o-greedy -t mesh:4x4 --seed 3 --fault loss=0.05",
    "m2o-bfs": "m2o-bfs -t mesh:4x4 --seed 3",
    "pmnb": "pmnb -t torus:4x4 --seed 3",
    "array-broadcast": "array-broadcast -t torus:8 --seed 3",
    "partial-exchange": "partial-exchange -t torus:4x4 --seed 3",
    "prefix-scan": "prefix-scan -t mesh:4x4 --seed 3",
    "dynamic-broadcast": "dynamic-broadcast -t torus:4x4 --rho 0.3 --slots 300 --warmup 50 --seed 3",
}


def _run(argv: str, tmp: Path, pure: bool, extra: tuple[str, ...] = ()) -> tuple[dict, bytes]:
    env = _build.child_env(pure)
    trace = tmp / f"trace-{'pure' if pure else 'compiled'}.jsonl"
    cmd = [sys.executable, "-m", "slotnet", "run", *argv.split(), "--json", "--per-node", "--series",
           "--trace", str(trace), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.stdout, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert proc.returncode == (0 if result["verdict"]["ok"] else 1), proc.stderr[-2000:]  # a fault may fail the verdict
    assert result["timing"]["performance"]["build"] == ("pure" if pure else "compiled")
    assert result["provenance"]["build"] == result["timing"]["performance"]["build"]
    del result["timing"], result["provenance"]
    result["transport"].pop("broker", None)  # a private broker's port and run id differ from run to run
    return result, trace.read_bytes()


def _assert_same(argv: str, tmp: Path, extra: tuple[str, ...] = ()) -> None:
    fast, fast_trace = _run(argv, tmp, pure=False, extra=extra)
    slow, slow_trace = _run(argv, tmp, pure=True, extra=extra)
    assert fast == slow
    assert fast_trace == slow_trace and fast_trace


@needs_compiled
@pytest.mark.parametrize("name", ["deflection-blocking", "deflection-faults"])
def test_whole_deflection_runs_are_identical(name, tmp_path):
    _assert_same(RUNS[name], tmp_path)


@needs_compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(RUNS) - {"deflection-blocking", "deflection-faults"}))
def test_whole_runs_of_every_family_are_identical(name, tmp_path):
    _assert_same(RUNS[name], tmp_path)


@needs_compiled
@pytest.mark.slow
@pytest.mark.parametrize("name", ["deflection-faults", "bcast-dtree"])
def test_sharded_runs_are_identical(name, tmp_path):
    """Two shards through a private broker: shards and coordinator all compiled, or all pure."""
    _assert_same(RUNS[name], tmp_path, extra=("--shards", "2"))
