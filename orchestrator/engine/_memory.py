"""Will a run fit in memory? An estimate made before anything is built per node.

A run holds, per node, a Trio task with its coroutine frame, the node object and its
context, its outlet and ports in the transport, and the reporter's
per-node counters; per slot, the stability monitor's backlog sample (and, when the series
is asked for, the reporter's per-slot row and its output record).

Calibration (Python 3.11, 30-slot runs from a fresh process, when each outlet still had
its own msgpack packer: now the transport's outlets share one, so these are upper
bounds). ``tracemalloc`` reported about 280 KiB per node for every scheme, but 256 KiB
of it was packers' preallocated buffers, whose pages are never touched: the process's
resident size (``ru_maxrss`` growth, what exhausts a machine) is the measure that matters:

=================================  ======================  ======================
scheme (load)                      d = 10 / 11             d = 12 / 13
=================================  ======================  ======================
deflection (``--offered 1``)       25.4 KiB per node       24.8 KiB per node
bcast-dtree (``--rho 0.2``)        33.7 KiB                36.2 / 35.7 KiB
bcast-simple (``--rho 0.1``)       30.4 KiB
bcast-balanced (``--rho 0.2``)     32.5 KiB
bcast-periodic (``--rho 0.2``)     19.8 KiB
bcast-indirect (``--rho 0.2``)     60.3 KiB (the largest)
=================================  ======================  ======================

:data:`BYTES_PER_NODE` is the largest figure rounded up, 64 KiB, so that no scheme is
let through that then exhausts the machine (the README's d = 13 deflection run peaks at
247 MiB, 30 KiB per node). A run whose estimate exceeds the memory the machine has
available now (``MemAvailable`` of ``/proc/meminfo``, or the free physical pages where
that file does not exist) is refused before it starts; where neither can be read,
nothing is refused.

A sharded run started here (``--shards K``) counts every process it starts: the
coordinator (one interpreter and the reporter's per-node figures) and K shards, each an
interpreter with its block of nodes. A shard started by hand (``slotnet shard``, maybe on
another machine) checks its own block against its own machine.
"""

from __future__ import annotations

import os
from pathlib import Path

from slotnet.errors import SpecError
from slotnet.fabric import Topology

__all__ = ["BYTES_PER_NODE", "BYTES_PER_REPORTED_NODE", "BYTES_PER_SLOT", "BYTES_PER_SERIES_SLOT", "available_memory",
           "check_fits", "estimate"]

#: Resident bytes per node of a running network (see the module docstring).
BYTES_PER_NODE = 64 * 1024
#: Bytes per slot the run keeps whatever it is asked (the stability monitor's sample).
BYTES_PER_SLOT = 64
#: Extra bytes per slot when the per-slot series is kept (a reporter row, its output record).
BYTES_PER_SERIES_SLOT = 1024
#: What the interpreter, the libraries and the scheme registry take before any node exists.
BASE_BYTES = 64 * 1024 * 1024


#: Resident bytes per node the coordinator of a sharded run keeps (its reporter's per-node
#: figures; the nodes themselves live in the shards).
BYTES_PER_REPORTED_NODE = 4 * 1024


def estimate(topology: Topology, slots: int, *, series: bool = False, shards: int = 1, hosted: int | None = None) -> int:
    """Estimated peak resident bytes, on this machine, of a run on ``topology`` for ``slots`` slots.

    Args:
        shards: a sharded run (``--shards K``, K > 1) started here: the coordinator (the
            reporter, no nodes) plus K shard processes, each with its block of nodes and
            its own interpreter.
        hosted: one shard process by itself (``slotnet shard``): the nodes it hosts.
    """
    per_slot = BYTES_PER_SLOT + (BYTES_PER_SERIES_SLOT if series else 0)
    n = topology.n_nodes
    if hosted is not None:
        return BASE_BYTES + hosted * BYTES_PER_NODE + slots * BYTES_PER_SLOT
    if shards <= 1:
        return BASE_BYTES + n * BYTES_PER_NODE + slots * per_slot
    block = -(-n // shards)
    coordinator = BASE_BYTES + n * BYTES_PER_REPORTED_NODE + slots * per_slot
    return coordinator + shards * (BASE_BYTES + block * BYTES_PER_NODE + slots * BYTES_PER_SLOT)


def available_memory(meminfo: str | Path = "/proc/meminfo") -> int | None:
    """Bytes of memory available to a new process now, or None where it cannot be told."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"  # pragma: no cover


def check_fits(topology: Topology, slots: int, *, series: bool = False, available: int | None = None,
               shards: int = 1, hosted: int | None = None) -> None:
    """Refuse a run (or one shard of it) that cannot fit in the memory available.

    Args:
        available: bytes available (default: read from the machine now).
        shards, hosted: as :func:`estimate`.

    Raises:
        SpecError: with the estimate and the memory available.
    """
    need = estimate(topology, slots, series=series, shards=shards, hosted=hosted)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        nodes = topology.n_nodes if hosted is None else hosted
        what = f"{nodes:,} nodes" + (f" and {slots:,} slots" if slots * BYTES_PER_SLOT > need / 4 else "")
        where = ("this shard of " if hosted is not None else "") + topology.spec
        how = f" over {shards} shard processes here" if hosted is None and shards > 1 else ""
        raise SpecError(f"{where} for {slots:,} slots needs about {_human(need)}{how} ({what}, "
                        f"~{BYTES_PER_NODE // 1024} KiB per node) but this machine has {_human(have)} available")
