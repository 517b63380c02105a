"""Will a run fit in memory? An estimate made before anything is built per node.

A run holds, per node, a Trio task with its coroutine frame, the node object and its
context, its outlet (a msgpack packer) and ports in the transport, and the reporter's
per-node counters; per slot, the stability monitor's backlog sample (and, when the series
is asked for, the reporter's per-slot row and its output record).

Calibration (Python 3.11, 30-slot runs from a fresh process). ``tracemalloc`` reports
about 280 KiB per node for every scheme, but 256 KiB of it is the three msgpack
packers' preallocated buffers, whose pages are never touched: the process's resident
size (``ru_maxrss`` growth, what exhausts a machine) is the measure that matters:

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
"""

from __future__ import annotations

import os
from pathlib import Path

from slotnet.errors import SpecError
from slotnet.fabric import Topology

__all__ = ["BYTES_PER_NODE", "BYTES_PER_SLOT", "BYTES_PER_SERIES_SLOT", "available_memory", "check_fits", "estimate"]

#: Resident bytes per node of a running network (see the module docstring).
BYTES_PER_NODE = 64 * 1024
#: Bytes per slot the run keeps whatever it is asked (the stability monitor's sample).
BYTES_PER_SLOT = 64
#: Extra bytes per slot when the per-slot series is kept (a reporter row, its output record).
BYTES_PER_SERIES_SLOT = 1024
#: What the interpreter, the libraries and the scheme registry take before any node exists.
BASE_BYTES = 64 * 1024 * 1024


def estimate(topology: Topology, slots: int, *, series: bool = False) -> int:
    """Estimated peak resident bytes of a run on ``topology`` for ``slots`` slots."""
    per_slot = BYTES_PER_SLOT + (BYTES_PER_SERIES_SLOT if series else 0)
    return BASE_BYTES + topology.n_nodes * BYTES_PER_NODE + slots * per_slot


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


def check_fits(topology: Topology, slots: int, *, series: bool = False, available: int | None = None) -> None:
    """Refuse a run that cannot fit in the memory available.

    Args:
        available: bytes available (default: read from the machine now).

    Raises:
        SpecError: with the estimate and the memory available.
    """
    need = estimate(topology, slots, series=series)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        what = f"{topology.n_nodes:,} nodes" + (f" and {slots:,} slots" if slots * BYTES_PER_SLOT > need / 4 else "")
        raise SpecError(f"{topology.spec} for {slots:,} slots needs about {_human(need)} ({what}, "
                        f"~{BYTES_PER_NODE // 1024} KiB per node) but this machine has {_human(have)} available")
