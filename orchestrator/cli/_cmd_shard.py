"""``slotnet shard``: host one shard of a sharded run."""

from __future__ import annotations

import argparse

import trio

from ..engine._spec import SpecError
from ._common import broker_arg

__all__ = ["cmd_shard"]


def cmd_shard(args: argparse.Namespace) -> int:
    """``slotnet shard``."""
    from ..shard._shard import run_shard

    index, sep, total = args.shard.partition("/")
    if not (sep and index.isdigit() and total.isdigit() and int(index) < int(total)):
        raise SpecError(f"--shard must look like I/K with 0 <= I < K, got {args.shard!r}")
    broker = broker_arg(args)
    assert broker is not None  # --broker is required
    trio.run(run_shard, broker, args.run, int(index), int(total))
    return 0
