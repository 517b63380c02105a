"""A scheme described for people: what ``slotnet schemes NAME`` prints, and the commands that run it.

The documentation's scheme reference (``docs/hooks/reference.py``) is built from the same functions.
"""

from __future__ import annotations

import shlex

from slotnet.errors import SlotnetError
from slotnet.fabric import FAULT_KINDS
from slotnet.schemes import Scheme

from ..engine._spec import RunSpec
from ._help import listing, para

__all__ = ["describe_scheme", "scheme_example", "scheme_faults", "scheme_theory"]


#: Small topologies of each kind a scheme's example command tries, in order: the first its spec accepts.
EXAMPLE_TOPOLOGIES = {"hypercube": ("hypercube:4", "hypercube:3"), "torus": ("torus:4x4", "torus:8", "torus:4x4x4"),
                       "mesh": ("mesh:4x4", "mesh:8", "mesh:4x4x4")}
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
    for kind in scheme.topologies:
        for topology in EXAMPLE_TOPOLOGIES.get(kind, ()):
            try:
                RunSpec(scheme.name, topology, load=load, slots=EXAMPLE_SLOTS).prepare()
            except SlotnetError:
                continue
            run = ["run", scheme.name, "-t", topology, *flags]
            if scheme.until == "slots":
                run += ["--slots", str(EXAMPLE_SLOTS)]
            return [run] + ([["theory", scheme.name, "-t", topology, *flags]] if scheme.theory is not None else [])
    return []


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
    parts = [para(f"{scheme.name}: {scheme.summary}"), listing("about", facts)]
    if scheme.loads:
        parts.append(listing("load flags", [(f"--{ld.name} {ld.metavar}", ld.help) for ld in scheme.loads]))
    else:
        parts.append("load flags: none")
    if scheme.params:
        params = []
        for p in scheme.params:
            choices = f"; one of {', '.join(map(str, p.choices))}" if p.choices else ""
            params.append((f"--param {p.name}=...", f"{p.help}{choices}; default {p.default}"))
        parts.append(listing("parameters", params))
    else:
        parts.append("parameters: none")
    examples = scheme_example(scheme)
    if examples:
        parts.append("\n".join(["example:", *("  slotnet " + shlex.join(argv) for argv in examples)]))
    return "\n\n".join(parts)
