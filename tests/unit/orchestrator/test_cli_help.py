"""The command line's help is written for people, and what it promises works.

* No ``--help`` (the top level's or any command's) and no ``slotnet schemes`` output holds
  reST markup: no double backticks, no ``:role:`` references.
* Every command has a short description and examples in its epilog; every example parses,
  and the run, theory and explore examples name a spec that prepares.
* ``slotnet schemes NAME`` shows one scheme in full, and the command it prints runs.
* ``slotnet theory`` is never refused for memory: it builds no network.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex

import pytest

from slotnet.orchestrator.cli import build_parser, main
from slotnet.orchestrator.cli.describe import param_choices, param_default
from slotnet.orchestrator.engine import _memory
from slotnet.orchestrator.engine._spec import RunSpec
from slotnet.schemes import SCHEMES

#: reST markup that must never reach a terminal: ``literal`` and :role:`target`.
MARKUP = re.compile(r"``|:[\w.-]+:`")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # --help, and argparse's own errors
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _example_lines(epilog: str) -> list[list[str]]:
    """The ``slotnet`` command lines of an epilog, as argv without ``slotnet``."""
    out = []
    for line in epilog.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                if command[:1] == ["slotnet"]:
                    out.append(command[1:])
                command = []
            else:
                command.append(word)
    return out


@pytest.mark.parametrize("command", [None, *_commands()])
def test_help_is_plain_text_without_rest_markup(command):
    """`slotnet --help` and `slotnet COMMAND --help` print no double backticks and no :role: references."""
    code, out, err = _cli(*([command] if command else []), "--help")
    assert code == 0 and not err
    assert out.startswith("usage: slotnet")
    hits = sorted({m.group(0) for m in MARKUP.finditer(out)})
    assert not hits, f"reST markup {hits} in slotnet {command or ''} --help:\n{out}"


def test_schemes_output_has_no_rest_markup():
    """Neither the list nor any scheme's full view prints reST markup."""
    code, out, _ = _cli("schemes")
    assert code == 0 and not MARKUP.search(out)
    for name in SCHEMES:
        code, out, _ = _cli("schemes", name)
        assert code == 0 and not MARKUP.search(out), (name, out)


@pytest.mark.parametrize("command", list(_commands()))
def test_every_command_has_a_description_and_two_or_three_examples(command):
    """A short plain description, then 'examples:' with two or three commands, each under a comment."""
    p = _commands()[command]
    assert p.description, command
    first = p.description.split("\n\n", 1)[0]
    assert 40 <= len(first) <= 500, (command, first)  # what the command does, in a few lines
    assert p.formatter_class is argparse.RawDescriptionHelpFormatter
    assert p.epilog and p.epilog.startswith("examples:\n"), command
    examples = _example_lines(p.epilog)
    assert 2 <= len(examples) <= 3, (command, examples)
    comments = [line for line in p.epilog.splitlines() if line.strip().startswith("#")]
    assert len(comments) == len(examples)
    assert any(argv[0] == command for argv in examples), f"no example of slotnet {command}"
    help_text = p.format_help()
    assert "examples:" in help_text and all(shlex.join(argv) in help_text for argv in examples)


def test_every_example_parses_and_names_a_spec_that_prepares():
    """Each example of every epilog parses; run/explore specs prepare, theory specs prepare without the memory check."""
    parser = build_parser()
    examples = _example_lines(parser.epilog or "")
    for p in _commands().values():
        examples += _example_lines(p.epilog or "")
    assert len(examples) >= 15
    for argv in examples:
        if "--help" in argv:
            assert _cli(*argv)[0] == 0
            continue
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                args = parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"slotnet {shlex.join(argv)}: {err.getvalue().strip()}")
        if args.command not in ("run", "theory", "explore"):
            continue
        load = {ld.name: getattr(args, ld.name) for ld in SCHEMES[args.scheme].loads if getattr(args, ld.name) is not None}
        spec = RunSpec(args.scheme, args.topology, params=dict(p.split("=", 1) for p in args.param), load=load,
                       slots=args.slots, warmup=getattr(args, "warmup", 0), seed=getattr(args, "seed", 0),
                       faults=list(getattr(args, "fault", [])))
        spec.prepare(check_memory=args.command != "theory")


def test_repro_and_explore_help_describe_every_paper_and_family():
    """repro --help names each paper with what it reruns; explore --help each fault family."""
    from slotnet.orchestrator.tools._explore import FAMILIES
    from slotnet.schemes import EXPERIMENTS

    _, out, _ = _cli("repro", "--help")
    papers = out.split("papers:", 1)[1]
    for name in EXPERIMENTS:
        assert re.search(rf"^  {re.escape(name)}  +\S", papers, re.M), name
    _, out, _ = _cli("explore", "--help")
    families = out.split("families", 1)[1]
    for family in FAMILIES:
        assert re.search(rf"^  {re.escape(family)}  +\S", families, re.M), family


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_schemes_name_shows_the_scheme_in_full(name):
    """slotnet schemes NAME: summary, source, topologies, loads, params with defaults and choices, theory, faults."""
    s = SCHEMES[name]
    code, out, err = _cli("schemes", name)
    assert code == 0 and not err
    flat = " ".join(out.split())
    assert out.startswith(f"{name}: ")
    for text in (s.summary, s.source, ", ".join(s.topologies)):
        assert " ".join(text.split()) in flat, text
    for ld in s.loads:
        assert f"--{ld.name} {ld.metavar}" in out and " ".join(ld.help.split()) in flat
    if not s.loads:
        assert "load flags: none" in out
    for p in s.params:
        assert f"--param {p.name}=" in out and param_default(p) in flat
        assert flat.count(f"--param {p.name}=") == 1
        if p.default is None:  # one default: the one the help states, or "unset by default"
            assert "default None" not in flat
        if p.choices:
            assert param_choices(p) in flat
            assert "True" not in param_choices(p) and "False" not in param_choices(p)
    theory = re.search(r"^  theory +(.*)$", out, re.M)
    assert theory is not None
    if s.theory is None:
        assert theory.group(1).startswith("none")
    else:
        assert theory.group(1).startswith(f"yes, headed {s.theory_label!r}")
    if s.faults is None:
        assert re.search(r"^  faults +every kind", out, re.M)
    else:
        refused = [k for k in re.search(r"^  refuses +(.*)", out, re.M).group(1).split(":")[0].split(", ")]
        assert set(refused) and not set(refused) & set(s.faults)
        assert " ".join(s.faults_why.split()) in flat


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_the_example_command_of_every_scheme_runs(name):
    """The commands `slotnet schemes NAME` prints run (the run with a small --slots): exit 0, or 1 where the
    small --slots leaves a one-shot task incomplete, its verdict's only reason."""
    _, out, _ = _cli("schemes", name)
    examples = _example_lines(out.split("\nexample:\n", 1)[1])
    assert examples and examples[0][:2] == ["run", name]
    assert (SCHEMES[name].theory is not None) == any(argv[0] == "theory" for argv in examples)
    for argv in examples:
        if argv[0] == "run":
            argv = [*argv, "--slots", "30", "--no-progress", "--json"]
        code, printed, err = _cli(*argv)
        if argv[0] != "run":
            assert code == 0, (argv, err)
            continue
        data = json.loads(printed)
        assert data["scheme"] == name
        assert code == (0 if data["verdict"]["ok"] else 1), (argv, err)
        assert all(r.startswith("task incomplete: its slots ended the run") for r in data["verdict"]["reasons"]), err


def test_schemes_with_an_unknown_name_exits_2_listing_the_known_ones():
    """slotnet schemes NOPE: status 2, one line on stderr naming every known scheme."""
    code, out, err = _cli("schemes", "nope")
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and "nope" in err
    assert all(name in err for name in SCHEMES)


def test_schemes_list_still_lists_every_scheme():
    """Without NAME, every scheme and its parameters, and how to see one in full."""
    code, out, _ = _cli("schemes")
    assert code == 0
    for name, s in SCHEMES.items():
        assert f"\n{name}: " in "\n" + out
        assert all(f"--param {p.name}=..." in out for p in s.params)
    assert "slotnet schemes NAME" in out


@pytest.fixture
def small_machine(monkeypatch):
    """A machine with 256 MiB available: any run of a million nodes is refused."""
    monkeypatch.setattr(_memory, "available_memory", lambda *a, **k: 256 * 1024 * 1024)


def test_theory_of_a_million_node_cube_is_never_refused_for_memory(small_machine):
    """slotnet theory deflection -t hypercube:20 answers where the run is refused by the memory pre-check."""
    code, _, err = _cli("run", "deflection", "--topology", "hypercube:20", "--offered", "1.0", "--slots", "10")
    assert code == 2 and "needs about" in err
    code, out, err = _cli("theory", "deflection", "--topology", "hypercube:20", "--offered", "1.0", "--json")
    assert code == 0 and not err
    d = json.loads(out)
    assert d["topology"]["n_nodes"] == 1 << 20
    assert 0 < d["theory"]["link_utilization"] < 1 and d["theory"]["mean_delay"] > 10
    code, out, _ = _cli("theory", "deflection", "--topology", "hypercube:20", "--offered", "1.0", "--slots", "100000")
    assert code == 0 and "theory of deflection on hypercube:20" in out


def test_theory_of_a_large_torus_is_never_refused_for_memory(small_machine):
    """STAR's model on a 1024x1024 torus (a million nodes, four million links)."""
    code, _, err = _cli("run", "star", "-t", "torus:1024x1024", "--rho", "0.5", "--slots", "10")
    assert code == 2 and "needs about" in err
    code, out, err = _cli("theory", "star", "-t", "torus:1024x1024", "--rho", "0.5", "--json")
    assert code == 0 and not err
    d = json.loads(out)
    assert d["topology"]["n_nodes"] == 1024 * 1024
    assert d["theory"]["throughput_factor"] == pytest.approx(0.5) and d["theory"]["stable"] is True


def test_theory_still_refuses_bad_input():
    """Only the memory check is skipped: a bad topology or a missing load is still exit 2."""
    code, _, err = _cli("theory", "deflection", "-t", "hypercube:30", "--offered", "1")
    assert code == 2 and "too large" in err
    code, _, err = _cli("theory", "deflection", "-t", "hypercube:20")
    assert code == 2 and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("spec", ["torus:2", "torus:8", "torus:2x2", "torus:3x5", "torus:2x3x7", "mesh:2", "mesh:8",
                                  "mesh:2x2", "mesh:3x5", "mesh:2x3x7", "hypercube:1", "hypercube:5"])
def test_link_counts_in_closed_form_match_counting_every_port(spec):
    """The topology's n_links (a closed form, so a theory on a million nodes answers at once) counts every port."""
    from slotnet.fabric import Topology, parse_topology

    topology = parse_topology(spec)
    assert topology.n_links == Topology.__dict__["n_links"].func(topology) == len(topology.links())
