"""Will a run fit in memory? An estimate made before anything is built per node.

A run holds, per node, a Trio task with its coroutine frame, the node object and its
context, its outlet and ports in the transport, and the reporter's
per-node counters; per slot, the stability monitor's backlog sample (and, when the series
is asked for, the reporter's per-slot row and its output record).

Calibration (Python 3.11, compiled build, 30-slot runs from a fresh process, seed 1,
measured 2026-11-26): the growth of the process's peak resident size (``ru_maxrss``, what
exhausts a machine) per added node, between the two sizes named.
``benchmarks/memory_per_node.py`` measures the deflection figure and shows where a node's
bytes go (at v = 1, d = 12, 2026-11-29: 2.5 KiB its random stream, about 1.6 KiB its Trio
task and coroutine frames, 0.45 KiB the messages in flight, the rest its context, outlet
and the run's tables). Deflection was re-measured on 2026-11-29, after the cuts of that
day (a message in flight is one bytes object; timers are ints; one int object per node
id; the end of a run no longer its peak): 6.25 / 6.79 KiB per node at d = 12 / 13,
compiled (6.2 / 6.9 / 6.5 at d = 12 / 13 / 14 before the last of those cuts); the pure
build 6.40 / 6.59 against 7.28 / 7.49 before them, measured back to back. The other
rows are from before those cuts, which shrink every scheme's messages in flight and
timers: they are upper bounds:

=================================  ======================  ======================
scheme (load)                      d = 10 / 11             d = 12 / 13
=================================  ======================  ======================
deflection (``--offered 1``)       6.25 KiB per node (12)  6.79 KiB (13)
bcast-dtree (``--rho 0.2``)        24.5 KiB                25.3 KiB
bcast-simple (``--rho 0.1``)       18.7 KiB                20.3 KiB
bcast-balanced (``--rho 0.2``)     21.3 KiB                23.9 KiB
bcast-periodic (``--rho 0.2``)     6.6 KiB                 6.6 KiB
bcast-indirect (``--rho 0.2``)     51.4 KiB                56.3 KiB
=================================  ======================  ======================

star (``--rho 0.5 --param lam_unicast=0.05``) takes 39.3 KiB per node from torus:32x32
to 32x64; m2o-greedy (``--param workload=uniform``) 60.5 KiB from mesh:32x32 to 32x64,
but 22.8 from 16x16 to 16x32 and 11.5 from 32x64 to 64x64 (what it holds depends on how
far its packets got in the 30 slots; measured 2026-11-24). The broadcasts' and star's
figures include the entry stamps behind ``invariants.littles_law``; at d = 10 / 11 and on
the torus they are within 0.9 KiB of the figures measured before the stamps (24.5, 19.0,
21.6, 6.7 and 51.2 KiB; star 38.4). The run's end is not its peak (the messages still on the
links are decoded as they are read, not all at once). Before a node's own memory was cut,
the same runs took 19.8 / 20.7 KiB (deflection), 32.8 / 33.6 (bcast-dtree), 27.5, 29.8,
15.6 and 60.0 (the other broadcasts, in the table's order), 45.6 (star) and 69.0
(m2o-greedy).

:data:`SCHEME_BYTES_PER_NODE` gives each measured scheme its figure with a margin of about
a quarter on top. A node's messages in flight grow with the cube's dimension (about half
a packet per node and dimension at v = 1, some 60 bytes each): deflection's 6.8 KiB at
d = 13 is about 7.3 at d = 21, so it is allowed 9 KiB, and 2^21 nodes (about 18 GiB)
are admitted in one process on a machine with 24 GiB (before those cuts it took 7.1 KiB
at d = 12 to 16 and 9.3 at d = 20 in a 2-shard run whose end was its peak, and was
allowed 12). A scheme
not measured, one whose figure swings with how far its packets got (m2o-greedy, up to
60.5 KiB), or one within a quarter of the default (bcast-indirect, 56.3 KiB) is allowed
:data:`BYTES_PER_NODE`, 64 KiB, the largest figure rounded up, so that no scheme is let
through that then exhausts the machine. Measure a scheme with
``python benchmarks/memory_per_node.py --scheme NAME ...`` before adding it to the table.
A run whose estimate exceeds the memory the machine has available now
(``MemAvailable`` of ``/proc/meminfo``, or the free physical pages where that file does
not exist) is refused before it starts; where neither can be read, nothing is refused.

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

__all__ = ["BYTES_PER_NODE", "BYTES_PER_REPORTED_NODE", "BYTES_PER_SERIES_SLOT", "BYTES_PER_SLOT", "SCHEME_BYTES_PER_NODE",
           "available_memory", "bytes_per_node", "check_fits", "estimate"]

#: Resident bytes per node of a running network of a scheme not in SCHEME_BYTES_PER_NODE.
BYTES_PER_NODE = 64 * 1024

#: Resident bytes per node allowed for the schemes measured (the module docstring's table,
#: with a margin of about a quarter, rounded up to a whole KiB).
SCHEME_BYTES_PER_NODE: dict[str, int] = {
    "deflection": 9 * 1024,
    "bcast-periodic": 9 * 1024,
    "bcast-simple": 24 * 1024,
    "bcast-balanced": 28 * 1024,
    "bcast-dtree": 32 * 1024,
    "star": 48 * 1024,
}
#: Bytes per slot the run keeps whatever it is asked (the stability monitor's sample).
BYTES_PER_SLOT = 64
#: Extra bytes per slot when the per-slot series is kept (a reporter row, its output record).
BYTES_PER_SERIES_SLOT = 1024
#: What the interpreter, the libraries and the scheme registry take before any node exists.
BASE_BYTES = 64 * 1024 * 1024


#: Resident bytes per node the coordinator of a sharded run keeps (its reporter's per-node
#: figures; the nodes themselves live in the shards).
BYTES_PER_REPORTED_NODE = 4 * 1024


def bytes_per_node(scheme: str | None) -> int:
    """Resident bytes per node allowed for ``scheme`` (None or a scheme not measured: the most any takes)."""
    return SCHEME_BYTES_PER_NODE.get(scheme, BYTES_PER_NODE) if scheme is not None else BYTES_PER_NODE


def estimate(topology: Topology, slots: int, *, series: bool = False, shards: int = 1, hosted: int | None = None,
             scheme: str | None = None) -> int:
    """Estimated peak resident bytes, on this machine, of a run on ``topology`` for ``slots`` slots.

    Args:
        scheme: the scheme's name: its bytes per node (:func:`bytes_per_node`).
        shards: a sharded run (``--shards K``, K > 1) started here: the coordinator (the
            reporter, no nodes) plus K shard processes, each with its block of nodes and
            its own interpreter.
        hosted: one shard process by itself (``slotnet shard``): the nodes it hosts.
    """
    per_slot = BYTES_PER_SLOT + (BYTES_PER_SERIES_SLOT if series else 0)
    per_node = bytes_per_node(scheme)
    n = topology.n_nodes
    if hosted is not None:
        return BASE_BYTES + hosted * per_node + slots * BYTES_PER_SLOT
    if shards <= 1:
        return BASE_BYTES + n * per_node + slots * per_slot
    block = -(-n // shards)
    coordinator = BASE_BYTES + n * BYTES_PER_REPORTED_NODE + slots * per_slot
    return coordinator + shards * (BASE_BYTES + block * per_node + slots * BYTES_PER_SLOT)


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
               shards: int = 1, hosted: int | None = None, scheme: str | None = None) -> None:
    """Refuse a run (or one shard of it) that cannot fit in the memory available.

    Args:
        available: bytes available (default: read from the machine now).
        shards, hosted, scheme: as :func:`estimate`.

    Raises:
        SpecError: with the estimate and the memory available.
    """
    need = estimate(topology, slots, series=series, shards=shards, hosted=hosted, scheme=scheme)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        nodes = topology.n_nodes if hosted is None else hosted
        what = f"{nodes:,} nodes" + (f" and {slots:,} slots" if slots * BYTES_PER_SLOT > need / 4 else "")
        where = ("this shard of " if hosted is not None else "") + topology.spec
        how = f" over {shards} shard processes here" if hosted is None and shards > 1 else ""
        raise SpecError(f"{where} for {slots:,} slots needs about {_human(need)}{how} ({what}, "
                        f"~{bytes_per_node(scheme) // 1024} KiB per node) but this machine has {_human(have)} available")
