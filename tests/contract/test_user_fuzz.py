"""Property-based bad input: CLI flags, fault specs and files, trace files. Never a traceback.

Each case runs ``main()`` in-process and requires an exit status of 0, 1 or 2 and no
traceback on stderr (an unexpected exception fails the test by propagating).
"""

from __future__ import annotations

import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet.orchestrator.cli import main

#: SLOTNET_FUZZ_EXAMPLES=5000 for a deep search; the everyday suite tries 40 cases per family.
FUZZ = settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_number = st.one_of(st.integers(-5, 40).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str), _text)
# Load flags: any junk, but finite magnitudes a run can take in a test (--rho 1e300 makes a
# broadcast scheme draw births forever: the schemes' load bounds are their own to check).
_load = st.one_of(st.integers(-5, 20).map(str), st.floats(-1, 20).map(str),
                  st.sampled_from(["nan", "inf", "-inf", "1e-300", "", "1,5", "0x1"]), _text)


def _run_main(capsys, argv: list[str]) -> int:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own one-line errors
        code = exc.code if isinstance(exc.code, int) else 2
    _, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code:
        assert err.strip(), argv  # a failure always says why
    return code


_FLAG = st.one_of(
    st.tuples(st.just("--topology"), st.one_of(st.sampled_from(["hypercube:2", "hypercube:3", "torus:3x3", "mesh:2x3",
                                                                 "hypercube:0", "torus:1x4", "hypercube:", "mesh:"]),
                                                _text)),
    st.tuples(st.just("--offered"), _load),
    st.tuples(st.just("--lam"), _load),
    st.tuples(st.just("--rho"), _load),
    st.tuples(st.just("--slots"), st.one_of(st.integers(-2, 25).map(str), _text)),
    st.tuples(st.just("--warmup"), st.one_of(st.integers(-2, 25).map(str), _text)),
    st.tuples(st.just("--seed"), _number),
    st.tuples(st.just("--param"), st.one_of(st.sampled_from(["order=random", "order=oldest", "order", "=1", "x=1",
                                                             "schedule=2:1,0", "schedule=x"]), _text)),
    st.tuples(st.just("--max-backlog"), _number),
    st.tuples(st.just("--trace-nodes"), _text),
    st.tuples(st.just("--trace-slots"), _text),
    st.tuples(st.just("--trace-events"), st.one_of(st.sampled_from(["step", "sent,received", "nope"]), _text)),
)


@FUZZ
@given(scheme=st.sampled_from(["deflection", "bcast-simple", "bcast-dtree", "nosuch"]),
       flags=st.lists(_FLAG, max_size=5), extra=st.lists(st.sampled_from(["--json", "--per-node", "--series"]), max_size=2))
def test_cli_flags_never_trace_back(capsys, scheme, flags, extra):
    """Any mix of run flags: a result or a one-line error."""
    argv = ["run", scheme, "-t", "hypercube:2", "--slots", "8", "--no-progress"]
    with tempfile.TemporaryDirectory() as tmp:
        for flag, value in flags:
            if flag.startswith("--trace-"):
                argv += ["--trace", os.path.join(tmp, "t.jsonl")]
            argv += [flag, value]
        _run_main(capsys, argv + extra)


_FAULT_TEXT = st.one_of(
    st.builds(lambda k, s, n, p: f"{k}@{s}:{n}" + (f":{p}" if p is not None else ""),
              st.sampled_from(["crash", "recover", "link-down", "link-up", "bogus"]), st.integers(-1, 12),
              st.integers(-1, 9), st.one_of(st.none(), st.integers(-1, 4))),
    st.builds(lambda r, a, b: f"loss={r}" + (f"@{a}" if a is not None else "") + (f"-{b}" if b is not None else ""),
              _number, st.one_of(st.none(), st.integers(-1, 12)), st.one_of(st.none(), st.integers(-1, 12))),
    _text,
)


@FUZZ
@given(faults=st.lists(_FAULT_TEXT, max_size=4))
def test_fault_specs_never_trace_back(capsys, faults):
    """Any list of --fault texts, contradictory or malformed ones included."""
    argv = ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "12", "--no-progress"]
    for f in faults:
        argv += ["--fault", f]
    _run_main(capsys, argv)


_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(), _text),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
                     max_leaves=8)
_fault_object = st.fixed_dictionaries(
    {"kind": st.one_of(st.sampled_from(["crash", "recover", "link-down", "link-up", "loss", "nope"]), _json)},
    optional={"slot": _json | st.integers(0, 12), "node": _json | st.integers(0, 8), "port": _json | st.integers(0, 3),
              "rate": _json | st.floats(0, 1), "from": _json | st.integers(0, 12), "until": _json | st.integers(0, 12),
              "extra": _json})


@FUZZ
@given(content=st.one_of(st.lists(_fault_object, max_size=4), _json), raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_fault_files_never_trace_back(capsys, content, raw):
    """Any --faults file: JSON of any shape, fault-like objects with wrong types, or raw bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "faults.json")
        with open(path, "wb") as fh:
            fh.write(raw if raw is not None else json.dumps(content).encode())
        _run_main(capsys, ["run", "deflection", "-t", "hypercube:3", "--offered", "1", "--slots", "12", "--no-progress",
                           "--faults", path])


_event = st.fixed_dictionaries({"slot": _json | st.integers(0, 30), "node": _json | st.integers(0, 3),
                                "event": _json | st.sampled_from(["sent", "step"])},
                               optional={"port": _json, "message": _json})
_line = st.one_of(_event.map(json.dumps), _json.map(json.dumps), _text, st.just(""))


@FUZZ
@given(lines=st.lists(_line, max_size=6), raw=st.one_of(st.none(), st.binary(max_size=60)),
       args=st.lists(st.sampled_from([("--node", "1"), ("--node", "x"), ("--slots", "0:5"), ("--slots", "5:x"),
                                      ("--event", "sent"), ("--perfetto", "OUT")]), max_size=3))
def test_trace_files_never_trace_back(capsys, lines, raw, args):
    """Any trace file (hand-edited lines, wrong types, binary) and any trace flags; a failed export leaves nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        with open(path, "wb") as fh:
            fh.write(raw if raw is not None else ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
        argv = ["trace", path]
        for flag, value in args:
            argv += [flag, os.path.join(tmp, "p.json") if value == "OUT" else value]
        code = _run_main(capsys, argv)
        if code and ("--perfetto", "OUT") in args:
            assert sorted(os.listdir(tmp)) == ["t.jsonl"]  # no partial export, no temporary file left
        if code == 0 and ("--perfetto", "OUT") in args:
            with open(os.path.join(tmp, "p.json")) as fh:
                assert isinstance(json.load(fh)["traceEvents"], list)
