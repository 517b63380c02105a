"""The ``slotnet`` command line.

    slotnet run SCHEME --topology SPEC [--param k=v ...] [--offered v | --lam λ | --rho ρ]
                       --slots N --warmup W --seed S [--json] [--per-node] [--series]
    slotnet theory SCHEME --topology SPEC [load flags] [--json]
    slotnet trace FILE [--node N ...] [--event KIND ...] [--slots A:B] [--packet ID] [--perfetto OUT] [--diagram OUT]
    slotnet repro PAPER|all [--quick] [--sweep-d D --plot FILE] [--dims A-B] [--json] [--html FILE] [--cache DIR | --no-cache]
    slotnet explore SCHEME --topology SPEC [load flags] --faults FAMILY|FILE [--samples K] [--shrink OUT] [--json]
    slotnet schemes [NAME]
    slotnet --version

Bad input exits with status 2 and one line on stderr; a scheme that breaks the slot
model (or raises) exits with status 1 and one line naming the node and slot; an output
that cannot be written (a trace or plot on a full disk, a closed or full stdout) exits
with status 1 and one line, after every result that could be printed.

Each command's ``--help`` is written here for people (a short description, the options,
examples in the epilog), never taken from a module docstring: text that comes from
elsewhere (scheme and paper descriptions) is stripped of reST markup by :func:`._help.plain`.
Every ``--json`` object is :func:`~.engine._result.json_ready` data: a number that is not
finite is null, its JSON Pointer listed under the top-level ``non_finite``.
"""

from __future__ import annotations

from ._main import main
from ._parser import build_parser
from .describe import describe_scheme, scheme_example, scheme_faults, scheme_theory

__all__ = ["build_parser", "describe_scheme", "main", "scheme_example", "scheme_faults", "scheme_theory"]
