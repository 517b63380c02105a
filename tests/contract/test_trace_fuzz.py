"""Property-based bad input for trace queries, packet ids, Perfetto and diagram requests. Never a traceback.

Each case runs ``main()`` in-process and requires an exit status of 0, 1 or 2, no
traceback, one line on stderr when it fails, and, when it succeeds, outputs that load.
"""

from __future__ import annotations

import json
import os
import tempfile
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slotnet.orchestrator.cli import main

#: SLOTNET_FUZZ_EXAMPLES=5000 for a deep search; the everyday suite tries 40 cases per family.
FUZZ = settings(max_examples=int(os.environ.get("SLOTNET_FUZZ_EXAMPLES", "40")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 12), st.floats(allow_nan=False,
                                                                                           allow_infinity=False), _text),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
                     max_leaves=8)
_message = st.one_of(st.lists(st.integers(0, 7), min_size=1, max_size=3), _json)
_event = st.fixed_dictionaries(
    {"slot": st.integers(0, 45), "node": st.integers(0, 20),
     "event": st.sampled_from(["sent", "received", "lost", "fault", "step", "born", "other"])},
    optional={"port": st.one_of(st.integers(-1, 4), _json), "message": _message, "from": st.one_of(st.integers(-1, 8), _json),
              "to": st.one_of(st.integers(0, 8), _json), "cause": _json, "fault": st.one_of(st.sampled_from(["crash", "recover"]), _json),
              "births": st.one_of(st.lists(st.lists(st.one_of(st.integers(0, 3), _json), max_size=3), max_size=2), _json),
              "received": st.one_of(st.lists(st.lists(st.integers(0, 7), min_size=2, max_size=2), max_size=3), _json),
              "count": _json})
_line = st.one_of(_event.map(json.dumps), _json.map(json.dumps), _text, st.just(""))

_ARG = st.one_of(
    st.tuples(st.just("--node"), st.one_of(st.integers(-1, 20).map(str), _text)),
    st.tuples(st.just("--event"), st.one_of(st.sampled_from(["sent", "received", "lost", "step"]), _text)),
    st.tuples(st.just("--slots"), st.one_of(st.sampled_from(["0:5", "3:44", "0:41", "7:7", "5:2", ":", "2:"]), _text)),
    st.tuples(st.just("--packet"), st.one_of(st.sampled_from(["0,1", "1,2,3", "p,0", "", ",", "7"]), _text)),
    st.tuples(st.just("--topology"), st.one_of(st.sampled_from(["hypercube:3", "hypercube:2", "torus:3x3", "mesh:2x4",
                                                                 "hypercube:0", "cube:3"]), _text)),
    st.tuples(st.just("--diagram"), st.just("SVG")),
    st.tuples(st.just("--perfetto"), st.just("JSON")),
)


def _run_main(capsys, argv: list[str]) -> int:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own one-line errors
        code = exc.code if isinstance(exc.code, int) else 2
    _, err = capsys.readouterr()
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code:
        assert len(err.strip().splitlines()) == 1, (argv, err)
    return code


@FUZZ
@given(lines=st.lists(_line, max_size=12), args=st.lists(_ARG, max_size=4))
def test_trace_queries_never_trace_back(capsys, lines, args):
    """Any trace lines (well-formed or not) with any mix of query, packet, topology and output flags."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write("\n".join(lines) + "\n")
        argv = ["trace", path]
        outs = {"SVG": os.path.join(tmp, "d.svg"), "JSON": os.path.join(tmp, "p.json")}
        for flag, value in args:
            argv += [flag, outs.get(value, value)]
        code = _run_main(capsys, argv)
        if code == 0 and ("--diagram", "SVG") in args:
            assert ET.parse(outs["SVG"]).getroot().tag.endswith("svg")
        if code == 0 and ("--perfetto", "JSON") in args:
            with open(outs["JSON"]) as fh:
                events = json.load(fh)["traceEvents"]
            starts = {e["id"] for e in events if e["ph"] == "s"}
            assert starts == {e["id"] for e in events if e["ph"] == "f"}  # every flow has both ends


@FUZZ
@given(seed=st.integers(0, 5), args=st.lists(_ARG.filter(lambda a: a[0] not in ("--perfetto",)), max_size=4))
def test_queries_on_real_traces_never_trace_back(capsys, seed, args):
    """Real traces (a crash in a broadcast run) under any query flags: a result or a one-line error."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.jsonl")
        # exit 1: the crash may fail the run's verdict; the trace is written either way
        assert _run_main(capsys, ["run", "bcast-simple", "-t", "hypercube:3", "--rho", "0.3", "--slots", "25",
                                  "--seed", str(seed), "--fault", "crash@9:2", "--trace", path, "--no-progress"]) in (0, 1)
        argv = ["trace", path]
        for flag, value in args:
            argv += [flag, os.path.join(tmp, "d.svg") if value == "SVG" else value]
        _run_main(capsys, argv)
