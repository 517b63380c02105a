"""``main``: parse, dispatch to the sub-command, and turn every failure into one line and an exit status."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from slotnet.errors import ForeignAwait, NodeFailure, NodeTimeout, SlotnetError, Stopped

from ._cmd_check import cmd_check
from ._cmd_explore import cmd_explore
from ._cmd_repro import cmd_repro
from ._cmd_run import cmd_run
from ._cmd_schemes import cmd_schemes
from ._cmd_shard import cmd_shard
from ._cmd_sweep import cmd_sweep
from ._cmd_theory import cmd_theory
from ._cmd_trace import cmd_trace
from ._parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``slotnet`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {"run": cmd_run, "theory": cmd_theory, "trace": cmd_trace, "repro": cmd_repro, "explore": cmd_explore,
               "check": cmd_check, "schemes": cmd_schemes, "shard": cmd_shard, "sweep": cmd_sweep}[args.command]
    if sys.stdout is None:  # started with stdout closed (``>&-``)
        print(f"slotnet {args.command}: error: stdout is closed: nothing can be printed", file=sys.stderr)
        return 1
    try:
        code = handler(args)
        sys.stdout.flush()  # a full device fails here, not silently at exit
        return code
    except (NodeFailure, NodeTimeout, ForeignAwait) as exc:
        _node_error(args, exc)
        return 1
    except Stopped as exc:  # a signal stopped the run (after what it started): the shell's status for it
        print(f"slotnet {args.command}: {exc}", file=sys.stderr)
        return 128 + exc.signum
    except SlotnetError as exc:
        code = 2 if isinstance(exc, ValueError) else 1
        print(f"slotnet {args.command}: error: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(f"slotnet {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): not an error
        _drop_stdout()
        return 0
    except OSError as exc:  # stdout on a full device or otherwise unwritable, or another I/O failure
        if exc.filename is None:
            _drop_stdout()
            what = f"cannot write output: {exc.strerror or exc}"
        else:
            what = f"{exc.filename}: {exc.strerror or exc}"
        print(f"slotnet {args.command}: error: {what}", file=sys.stderr)
        return 1


def _node_error(args: argparse.Namespace, exc: NodeFailure | NodeTimeout | ForeignAwait) -> None:
    """A node's failure: one line on stderr naming the node, the slot and the rule's line;
    the whole traceback too with ``--debug``; with ``--json``, ``{"error": ...}`` on stdout
    (its ``traceback`` the rule's)."""
    print(f"slotnet {args.command}: failed: {exc}", file=sys.stderr)
    if getattr(args, "debug", False) and exc.traceback:
        print(exc.traceback.rstrip(), file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps({"error": exc.to_dict()}, indent=2))


def _drop_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
