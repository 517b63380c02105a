"""Numbers that are not finite have one JSON representation, the same in every output.

JSON has no infinity and no NaN: such a number is null where it stands, and the object's
top-level ``non_finite`` lists it by its JSON Pointer with ``"inf"``, ``"-inf"`` or
``"nan"``. ``slotnet run --json`` prints exactly ``Result.to_dict()``, and every ``--json``
output is strict JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import math

import jsonschema
import pytest
from docs_snippets import DOCS

from slotnet.orchestrator import cli
from slotnet.orchestrator.cli import _cmd_run
from slotnet.orchestrator.engine._result import NON_FINITE, Result, json_ready
from slotnet.orchestrator.engine._spec import RunSpec

SCHEMA = json.loads((DOCS / "reference" / "result.schema.json").read_text(encoding="utf-8"))

#: STAR above saturation (ρ = 1.2): its model's waits and delay bounds are infinite.
SATURATED = ("star", "torus:4x4", {"rho": 1.2})


def _strict(text: str):
    """json.loads that refuses the non-standard Infinity, -Infinity and NaN."""
    def refuse(name: str):
        raise AssertionError(f"non-standard JSON constant {name} in the output")

    return json.loads(text, parse_constant=refuse)


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


def test_json_ready_nulls_non_finite_numbers_and_lists_their_pointers():
    """inf, -inf and nan anywhere become None, each listed by its JSON Pointer; finite numbers stay."""
    value = {"theory": {"mean_wait": math.inf, "rho": 1.2, "bounds": (0.5, -math.inf)},
             "series": [{"slot": 0, "x": math.nan}], "a/b~c": {"k": math.inf}, "ok": True, "n": 3, "none": None}
    out = json_ready(value)
    assert out == {"theory": {"mean_wait": None, "rho": 1.2, "bounds": [0.5, None]},
                   "series": [{"slot": 0, "x": None}], "a/b~c": {"k": None}, "ok": True, "n": 3, "none": None,
                   NON_FINITE: {"/theory/mean_wait": "inf", "/theory/bounds/1": "-inf", "/series/0/x": "nan",
                                "/a~1b~0c/k": "inf"}}
    assert _strict(json.dumps(out, allow_nan=False)) == out
    assert value["theory"]["mean_wait"] == math.inf  # the input is left as it was


def test_json_ready_leaves_finite_data_alone_and_adds_no_note():
    """No non_finite key when every number is finite; tuples, sets and numpy values become plain JSON data."""
    np = pytest.importorskip("numpy")
    out = json_ready({"t": (1, 2.5), "s": {3, 1, 2}, 4: "four", "np": [np.float64(0.25), np.int64(7), np.bool_(True)],
                      "arr": np.array([1.0, 2.0])})
    assert out == {"t": [1, 2.5], "s": [1, 2, 3], "4": "four", "np": [0.25, 7, True], "arr": [1.0, 2.0]}
    assert NON_FINITE not in out
    assert [type(x) for x in out["np"]] == [float, int, bool]
    nested = json_ready({"x": [np.float64("inf"), np.array([np.nan])]})
    assert nested == {"x": [None, [None]], NON_FINITE: {"/x/0": "inf", "/x/1/0": "nan"}}


def test_run_json_is_result_to_dict_for_a_run_with_an_infinite_theory(monkeypatch):
    """For a saturated STAR run: json.loads(slotnet run --json) == result.to_dict(), the infinities noted in both."""
    results: list[Result] = []
    real_run = _cmd_run.run

    def keep(spec, **kwargs):
        results.append(real_run(spec, **kwargs))
        return results[-1]

    monkeypatch.setattr(_cmd_run, "run", keep)
    scheme, topology, load = SATURATED
    code, out = _cli("run", scheme, "-t", topology, "--rho", str(load["rho"]), "--slots", "40", "--seed", "3",
                     "--json", "--no-progress")
    assert code == 0 and len(results) == 1
    printed = _strict(out)
    result = results[0]
    assert printed == result.to_dict()
    assert result.theory is not None and result.theory["mean_wait"] == math.inf  # the attribute keeps the float
    assert printed["theory"]["mean_wait"] is None and printed[NON_FINITE]["/theory/mean_wait"] == "inf"
    for pointer, what in printed[NON_FINITE].items():
        parts = pointer.split("/")[1:]
        node = result.to_dict()
        original = {"theory": result.theory, "metrics": result.metrics}[parts[0]]
        for part in parts:
            node = node[int(part) if isinstance(node, list) else part]
        for part in parts[1:]:
            original = original[int(part) if isinstance(original, list) else part]
        assert node is None and str(original) == what, pointer
    jsonschema.Draft202012Validator(SCHEMA).validate(printed)


def test_to_dict_with_per_node_and_series_is_what_the_cli_prints(monkeypatch):
    """The same holds with --per-node and --series (their keys included)."""
    results: list[Result] = []
    real_run = _cmd_run.run
    monkeypatch.setattr(_cmd_run, "run", lambda spec, **kw: results.append(real_run(spec, **kw)) or results[-1])
    code, out = _cli("run", "star", "-t", "torus:4x4", "--rho", "1.2", "--slots", "30", "--json", "--per-node", "--series",
                     "--no-progress")
    assert code == 0
    printed = _strict(out)
    assert printed == results[0].to_dict(per_node=True, series=True)
    assert {"per_node", "series", NON_FINITE} <= printed.keys()
    jsonschema.Draft202012Validator(SCHEMA).validate(printed)


def test_a_finite_result_has_no_non_finite_key():
    """A run whose numbers are all finite prints no non_finite, and to_dict() has none either."""
    from slotnet.orchestrator import run

    result = run(RunSpec("deflection", "hypercube:3", load={"offered": 0.5}, slots=40, seed=1))
    d = result.to_dict()
    assert NON_FINITE not in d and _strict(json.dumps(d, allow_nan=False)) == d


def test_theory_json_uses_the_same_representation():
    """slotnet theory --json above saturation: strict JSON, null values, and their pointers under non_finite."""
    scheme, topology, load = SATURATED
    code, out = _cli("theory", scheme, "-t", topology, "--rho", str(load["rho"]), "--json")
    assert code == 0
    printed = _strict(out)
    assert printed["theory"]["mean_wait"] is None and printed["theory"]["stable"] is False
    assert printed[NON_FINITE] == {f"/theory/{k}": "inf" for k, v in printed["theory"].items() if v is None}
    assert "/theory/mean_wait" in printed[NON_FINITE]


def test_schema_documents_non_finite():
    """result.schema.json describes the key, and refuses a note that is not inf, -inf or nan."""
    assert NON_FINITE in SCHEMA["properties"]
    validator = jsonschema.Draft202012Validator(SCHEMA["properties"][NON_FINITE])
    validator.validate({"/theory/mean_wait": "inf"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"/theory/mean_wait": "Infinity"})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"theory.mean_wait": "inf"})
