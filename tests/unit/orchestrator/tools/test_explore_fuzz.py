"""Property-based bad input for slotnet explore: its flags, the faults files it judges, --shrink. Never a traceback.

Each case runs ``main()`` in-process: an exit status of 0, 1 or 2, no traceback, one line
on stderr when it fails; when it succeeds, its JSON loads and a file ``--shrink`` wrote
is a faults file ``slotnet run --faults`` accepts.
"""

from __future__ import annotations

import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet import FaultSchedule
from slotnet.orchestrator.cli import main

FUZZ = settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10)
_int = st.one_of(st.integers(-2, 30).map(str), _text)

_FLAG = st.one_of(
    st.tuples(st.just("--faults"), st.one_of(st.sampled_from(["single-link", "single-node", "double-link",
                                                               "crash-points", "FILE", "nosuch"]), _text)),
    st.tuples(st.just("--samples"), _int),
    st.tuples(st.just("--crash-slots"), st.one_of(st.sampled_from(["3", "0,10", "5,5", "99", "-1", ","]), _text)),
    st.tuples(st.just("--jobs"), st.sampled_from(["1", "0", "-3", "x"])),
    st.tuples(st.just("--detect"), st.one_of(st.sampled_from(["0", "1", "3", "never", "-1", "1.5"]), _text)),
    st.tuples(st.just("--slots"), st.one_of(st.integers(-1, 30).map(str), _text)),
    st.tuples(st.just("--warmup"), st.integers(-1, 30).map(str)),
    st.tuples(st.just("--seed"), _int),
    st.tuples(st.just("--shrink"), st.sampled_from(["OUT", "FILE", "/nonexistent/x.json"])),
    st.tuples(st.just("--param"), st.sampled_from(["order=random", "nope=1", "order"])),
)

_value = st.one_of(st.integers(-2, 40), st.booleans(), st.none(), st.floats(0, 1), _text)
_fault = st.fixed_dictionaries(
    {"kind": st.sampled_from(["crash", "recover", "link-down", "link-up", "loss", "dup", "partition", "stall",
                              "detect", "bogus"])},
    optional={"slot": _value, "node": st.one_of(st.integers(0, 9), _value), "port": st.one_of(st.integers(0, 3), _value),
              "rate": st.one_of(st.floats(0, 1), _value), "from": _value, "until": _value, "to": _value,
              "nodes": st.one_of(st.sampled_from(["0-3", "1,2"]), _value), "slots": _value})
_good = st.lists(st.one_of(
    st.builds(lambda s, n: {"kind": "crash", "slot": s, "node": n}, st.integers(0, 15), st.integers(0, 3)),
    st.builds(lambda s, n, p: {"kind": "link-down", "slot": s, "node": n, "port": p}, st.integers(0, 15),
              st.integers(0, 3), st.integers(0, 1)),
    st.builds(lambda r, a: {"kind": "loss", "rate": r, "from": a}, st.floats(0, 0.5), st.integers(0, 15)),
    st.builds(lambda a, n: {"kind": "stall", "from": a, "to": a + 2, "node": n}, st.integers(0, 12), st.integers(0, 3))),
    min_size=1, max_size=3, unique_by=lambda o: (o["kind"], o.get("node"), o.get("port")))
_file = st.one_of(_good.map(json.dumps), _good.map(json.dumps), st.lists(_fault, max_size=4).map(json.dumps), _text,
                  st.just("[]"), st.just("{}"))


def _run_main(capsys, argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code:
        assert len(err.strip().splitlines()) == 1, (argv, err)
    return code, out


@FUZZ
@given(scheme=st.sampled_from(["deflection", "bcast-simple", "deflection", "nosuch"]),
       family=st.sampled_from(["single-link", "single-node", "double-link", "crash-points", "FILE", "FILE"]),
       flags=st.lists(_FLAG, max_size=4), content=_file)
def test_explore_flags_and_files_never_trace_back(capsys, scheme, family, flags, content):
    """Any mix of explore flags and any faults file: a report or a one-line error; a shrink file replays."""
    load = {"deflection": ["--offered", "1"], "bcast-simple": ["--rho", "0.3"]}.get(scheme, [])
    with tempfile.TemporaryDirectory() as tmp:
        faults_file, out = os.path.join(tmp, "f.json"), os.path.join(tmp, "min.json")
        with open(faults_file, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(content)
        argv = ["explore", scheme, "-t", "hypercube:2", *load, "--slots", "16", "--samples", "2", "--jobs", "1", "--json"]
        for flag, value in [("--faults", family), *flags]:
            argv += [flag, {"FILE": faults_file, "OUT": out}.get(value, value)]
        code, stdout = _run_main(capsys, argv)
        if code == 0 or stdout.strip():  # exit 1 with a report: scenarios failed
            report = json.loads(stdout)
            assert {"scenarios", "summary", "baseline"} <= report.keys()
            if "shrunk" in report:
                FaultSchedule.parse(file=report["shrunk"]["file"])  # a valid faults file


_REQUEST = {"scheme": "bcast-simple", "topology": "hypercube:2", "params": {}, "load": {"rho": 0.3}, "slots": 16,
            "warmup": 0, "seed": 2, "max_backlog_per_node": None}




@settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "40")) // 2, deadline=None)
@given(schedule=_good)
def test_shrunk_schedules_still_fail_and_are_no_larger(schedule):
    """Whatever failing schedule it starts from, shrinking returns one that fails on replay, with no more faults."""
    from slotnet.fabric import parse_topology
    from slotnet.orchestrator.tools._explore import judge
    from slotnet.orchestrator.tools._shrink import faults, shrink

    try:
        first = judge({**_REQUEST, "faults": schedule, "label": "start"})
    except ValueError:  # a schedule the run refuses (two crashes of one node ...): nothing to shrink
        return
    if first["ok"]:
        return
    cube = parse_topology("hypercube:2")
    key = cube.link_key
    out, _ = shrink(schedule, lambda objs: not judge({**_REQUEST, "faults": objs, "label": "x"})["ok"], slots=16,
                    link_key=key)
    assert not judge({**_REQUEST, "faults": out, "label": "replay"})["ok"]
    assert len(faults(out, key)) <= len(faults(schedule, key))
