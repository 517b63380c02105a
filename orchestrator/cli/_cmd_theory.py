"""``slotnet theory``: the scheme's analytic model alone, no network built."""

from __future__ import annotations

import argparse

from slotnet.schemes import get_scheme

from ..engine._spec import RunSpec, SpecError
from ..tools._report import format_theory
from ._common import load_args, params, print_json

__all__ = ["cmd_theory"]


def cmd_theory(args: argparse.Namespace) -> int:
    """``slotnet theory``."""
    scheme = get_scheme(args.scheme)
    if scheme.theory is None:
        raise SpecError(f"scheme {scheme.name!r} has no analytic model")
    if args.slots < 1:
        raise SpecError(f"--slots must be at least 1 (the slots of a transient prediction), got {args.slots}")
    spec = RunSpec(scheme=args.scheme, topology=args.topology, params=params(args.param), load=load_args(args),
                   slots=args.slots, warmup=0)
    prep = spec.prepare(check_memory=False)  # the model only: no network is built, whatever its size
    theory = scheme.theory(prep.setup)
    if args.json:
        print_json({"scheme": scheme.name, "topology": prep.topology.describe(), "load": prep.setup.load,
                    "params": prep.params, "theory": theory})
    else:
        print(format_theory(scheme.name, prep.topology.spec, theory, scheme.columns))
    return 0
