"""``slotnet schemes``: every scheme with its parameters, or one in full."""

from __future__ import annotations

import argparse
import sys

from slotnet.schemes import SCHEMES, get_scheme

from ._help import plain
from .describe import describe_scheme, scheme_faults

__all__ = ["cmd_schemes"]


def cmd_schemes(args: argparse.Namespace) -> int:
    """``slotnet schemes``."""
    if args.name is not None:
        print(describe_scheme(get_scheme(args.name)))
        return 0
    for name in sorted(SCHEMES):
        s = SCHEMES[name]
        print(f"{name}: {plain(s.summary)}")
        print(f"    source: {plain(s.source)}")
        print(f"    topologies: {', '.join(s.topologies)}; load: {', '.join('--' + k for k in s.load_names) or 'none'}")
        takes, refuses = scheme_faults(s)
        print(f"    faults: {takes}" + (f"; refuses {plain(refuses)}" if refuses else ""))
        for p in s.params:
            choices = f" (one of {', '.join(map(str, p.choices))})" if p.choices else ""
            print(f"    --param {p.name}=...  {plain(p.help)}{choices}; default {p.default}")
    print("\n(`slotnet schemes NAME` shows one scheme in full, with a command that runs it)")
    from slotnet.schemes._registry import FAILED

    for pkg, why in sorted(FAILED.items()):
        print(f"(scheme package {pkg} failed to load: {why})", file=sys.stderr)
    return 0
