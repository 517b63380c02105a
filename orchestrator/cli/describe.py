"""A scheme described for people: what ``slotnet schemes NAME`` prints, and the commands that run it.

The documentation's scheme reference (``docs/hooks/reference.py``) is built from the same functions.
"""

from __future__ import annotations

import shlex
from typing import Any

from slotnet.errors import SlotnetError
from slotnet.fabric import FAULT_KINDS
from slotnet.schemes import Param, Scheme, parse_bool  # noqa: F401  (parse_bool: a docstring example)

from ..engine._spec import RunSpec
from ._help import listing, para

__all__ = ["describe_scheme", "param_choices", "param_default", "param_default_cell", "scheme_choices", "scheme_example",
           "scheme_faults", "scheme_theory", "value_text"]


#: Small topologies of each kind a scheme's example command tries, in order: the first its spec accepts.
EXAMPLE_TOPOLOGIES = {"hypercube": ("hypercube:4", "hypercube:3"), "torus": ("torus:4x4", "torus:8", "torus:4x4x4"),
                       "mesh": ("mesh:4x4", "mesh:8", "mesh:4x4x4"), "ring": ("ring:8",),
                       "graph": ("edges:0-1,1-2,2-3,3-0,0-2",),
                       "any": ("hypercube:4", "torus:4x4", "mesh:4x4", "ring:8", "edges:0-1,1-2,2-3,3-0,0-2")}
#: The value of a scheme's first load flag in its example command.
EXAMPLE_LOAD = 0.5
#: Slots of a slot-bound scheme's example run (a one-shot run stops when the network is quiet).
EXAMPLE_SLOTS = 500


def scheme_example(scheme: Scheme) -> list[list[str]]:
    """Commands (argv without ``slotnet``) that run ``scheme`` small, and evaluate its theory if it has one.

    The topology is the first small one of the scheme's kinds that its spec accepts (with
    the first load flag at 0.5 and the default parameters); no command if none is.
    """
    load = {scheme.loads[0].name: EXAMPLE_LOAD} if scheme.loads else {}
    flags = [word for k, v in load.items() for word in (f"--{k}", f"{v:g}")]
    found = _example(scheme)
    if found is None:
        return []
    topology = found[0]
    run = ["run", scheme.name, "-t", topology, *flags]
    if scheme.until == "slots":
        run += ["--slots", str(EXAMPLE_SLOTS)]
    return [run] + ([["theory", scheme.name, "-t", topology, *flags]] if scheme.theory is not None else [])


def _example(scheme: Scheme) -> tuple[str, Any] | None:
    """The example's topology and its prepared run (:func:`scheme_example`), or None."""
    load = {scheme.loads[0].name: EXAMPLE_LOAD} if scheme.loads else {}
    for kind in scheme.topologies:
        for topology in EXAMPLE_TOPOLOGIES.get(kind, ()):
            try:
                return topology, RunSpec(scheme.name, topology, load=load, slots=EXAMPLE_SLOTS).prepare()
            except SlotnetError:
                continue
    return None


def scheme_choices(scheme: Scheme) -> str:
    """The random choices a scheme declares (``Scheme.choices``), as its example run declares
    them ("" for none): each choice's name and distribution."""
    found = _example(scheme) if scheme.choices is not None else None
    if found is None:
        return ""
    assert scheme.choices is not None
    dists = scheme.choices(found[1].setup)
    return "; ".join(f"{name}: {dist.describe()}" for name, dist in dists.items())


def scheme_theory(scheme: Scheme) -> str:
    """One line: whether the scheme has a theory, what a run heads it, and where ``slotnet theory`` stands."""
    if scheme.theory is None:
        return "none: `slotnet theory` refuses this scheme, and a run shows the simulation alone"
    what = ("the paper's formulas and bounds" if scheme.theory_label == "theory"
            else "computed by executing the paper's algorithm centrally, not a formula")
    return (f"yes, headed {scheme.theory_label!r} beside a run's simulation ({what}); "
            f"`slotnet theory {scheme.name}` prints it alone, under the run's metric names")


def scheme_faults(scheme: Scheme) -> tuple[str, str | None]:
    """The fault kinds the scheme runs under, and (if it refuses some) which and why."""
    if scheme.faults is None:
        return f"every kind ({', '.join(sorted(FAULT_KINDS))})", None
    refused = sorted(k for k in FAULT_KINDS if k not in scheme.faults)
    return ", ".join(sorted(scheme.faults)) or "none", f"{', '.join(refused)}: {scheme.faults_why}" if refused else None


def describe_scheme(scheme: Scheme) -> str:
    """What ``slotnet schemes NAME`` prints: one scheme in full, with commands that run it."""
    runs = "the given --slots" if scheme.until == "slots" else "until the network is quiet (--slots is an upper bound)"
    takes, refuses = scheme_faults(scheme)
    facts = [("source", scheme.source), ("topologies", ", ".join(scheme.topologies)), ("runs", runs),
             ("theory", scheme_theory(scheme)), ("faults", takes)]
    if refuses is not None:
        facts.append(("refuses", refuses))
    choices = scheme_choices(scheme)
    if choices:
        facts.append(("random choices", f"{choices} (in the example run; tested, invariants.choices)"))
    parts = [para(f"{scheme.name}: {scheme.summary}"), listing("about", facts)]
    if scheme.loads:
        parts.append(listing("load flags", [(f"--{ld.name} {ld.metavar}", ld.help) for ld in scheme.loads]))
    else:
        parts.append("load flags: none")
    if scheme.params:
        params = []
        for p in scheme.params:
            params.append((f"--param {p.name}=...", "; ".join(x for x in (p.help, param_choices(p), param_default(p)) if x)))
        parts.append(listing("parameters", params))
    else:
        parts.append("parameters: none")
    examples = scheme_example(scheme)
    if examples:
        parts.append("\n".join(["example:", *("  slotnet " + shlex.join(argv) for argv in examples)]))
    return "\n\n".join(parts)


def value_text(value: Any) -> str:
    """A parameter value as a user types it: ``true``/``false`` for a yes/no value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def param_choices(p: Param) -> str:
    """What a parameter accepts, in a user's words ("" for any value of its type).

    Example:
        >>> param_choices(Param("split", parse_bool, True, "split", (True, False)))
        'true or false'
    """
    if not p.choices:
        return ""
    if all(isinstance(c, bool) for c in p.choices):
        return "true or false"
    return "one of " + ", ".join(value_text(c) for c in p.choices)


def param_default(p: Param) -> str:
    """``default X``; "" where the help states a default computed from the run (no second default).

    Example:
        >>> param_default(Param("packets", int, None, "K, the number of packets (default p)"))
        ''
    """
    if p.default is None:
        return "" if "default" in p.help else "unset by default"
    return f"default {value_text(p.default)}"


def param_default_cell(p: Param) -> str:
    """The default as a table cell: the value, "computed" (the help says how) or "unset"."""
    if p.default is None:
        return "computed" if "default" in p.help else "unset"
    return value_text(p.default)
