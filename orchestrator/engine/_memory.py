"""Will a run fit in memory? An estimate made before anything is built per node.

A run holds, per node, a Trio task with its coroutine frame, the node object and its
context, its outlet and ports in the transport, and the reporter's
per-node counters; per slot, the stability monitor's backlog sample (and, when the series
is asked for, the reporter's per-slot row and its output record).

Calibration (Python 3.11, compiled build, 30-slot runs from a fresh process, seed 1,
measured 2026-11-29 with ``benchmarks/memory_per_node.py --no-breakdown``; the first
table with the Mersenne Twister, ``--rng mt``, the second with the default philox): the growth of
the process's peak resident size (``ru_maxrss``, what exhausts a machine) per added node,
between the two sizes named (``--dims 11 13``: from d = 10 to 11 and from 12 to 13;
deflection ``--dims 12 13``), in KiB, without faults and with
``--fault loss=0.01 --fault dup=0.01 --fault crash@10:17``. A run with faults takes more a
node: each node's task has a cancel scope, each receiver a list of its messages for the
fault pipeline to judge (without faults, one packed bytearray), and the reporter keeps
the faults' books. Where a node's bytes go (deflection, v = 1, d = 13, no faults, the
breakdown of that benchmark): 2.5 KiB its random stream, about 1.3 KiB its Trio task
and coroutines, 0.75 KiB its context and node object, 0.15 KiB its messages in flight,
about 1.2 KiB the allocator's share. A figure moves by a few tenths of a KiB with where
the allocator's arenas fall:

=================================  ===========  ===========  =============  =============
scheme (load), ``--rng mt``        d = 11       d = 13       faults, d = 11 faults, d = 13
=================================  ===========  ===========  =============  =============
deflection (``--offered 1``)       5.92 (12)    6.41         7.44 (12)      7.93
bcast-dtree (``--rho 0.2``)        16.01        15.70        19.13          19.13
bcast-simple (``--rho 0.1``)       10.08        9.80         12.98          12.68
bcast-balanced (``--rho 0.2``)     13.44        14.17        16.82          17.83
bcast-periodic (``--rho 0.2``)     6.95         6.58         7.72           7.28
bcast-indirect (``--rho 0.2``)     16.18        15.45        17.11          16.21
=================================  ===========  ===========  =============  =============

Deflection with faults took 7.74 and 8.09 KiB at d = 14 and 15. star
(``--rho 0.5 --param lam_unicast=0.05``) takes 9.93 KiB per node from torus:32x32 to
32x64 (10.32 with faults) and 10.02 from 64x64 to 64x128 (with ``lam_unicast=0.02``:
0.05 alone exceeds ``--rho 0.5`` there): flat in the network's size. m2o-greedy
(``--param workload=uniform``) takes 11.75 KiB per node from mesh:32x64 to 64x64 and
7.77 from 64x64 to 64x128 (8.38 with faults); its figure falls as the mesh grows because
the peak of a small run is the end of the run, where the reporter's lower bound scans the
mesh's boxes in numpy chunks of at most 2^20 boxes (``manytoone.theory``), some 60 MiB
however big the mesh (60.5 KiB a node from 32x32 to 32x64). It is allowed 15 KiB: a run
small enough for that transient to matter is far below any machine's memory. The
broadcasts' and star's figures include the entry stamps behind ``invariants.littles_law``.
The run's end is not its peak (the messages still on the links are decoded as they are
read, not all at once).

:data:`SCHEME_BYTES_PER_NODE` (without faults) and :data:`FAULTED_BYTES_PER_NODE` (with
them) give each measured scheme its largest figure with a margin of about a quarter on
top, rounded up to a whole KiB: a run is allowed the figure of its own kind. A node's
messages in flight grow a little with the cube's dimension (about half a packet per node
and dimension at v = 1), which the margin covers: with faults, where a message is an
object of its own, deflection's figure went from 7.44 KiB at d = 12 to 8.09 at d = 15,
and it is allowed 11. 2^21 deflection nodes with the Twister's streams and without faults
(about 18 GiB at 9 KiB) are admitted in one process on a machine with 24 GiB. With the
default generator (philox: about 80 bytes of stream a node instead of the Twister's
2.5 KiB) deflection takes 3.48, 3.84, 3.68, 3.92,
3.67 and 3.83 KiB per node at d = 12 to 17 without faults (``--rng philox --dims 12 13 14
15 16 17``), and 4.98, 5.49, 5.14, 5.59, 5.20 and 5.45 with them. The other schemes with
philox, the same runs as the first table's (d = 11 / 13, then with faults d = 11 / 13):

=================================  ===========  ===========  =============  =============
scheme (load), ``--rng philox``    d = 11       d = 13       faults, d = 11 faults, d = 13
=================================  ===========  ===========  =============  =============
bcast-dtree (``--rho 0.2``)        13.69        13.40        17.86          16.57
bcast-simple (``--rho 0.1``)       8.25         7.94         11.66          10.53
bcast-balanced (``--rho 0.2``)     12.01        11.85        15.55          15.48
bcast-periodic (``--rho 0.2``)     4.44         4.08         5.22           4.86
bcast-indirect (``--rho 0.2``)     13.80        12.96        14.63          14.03
=================================  ===========  ===========  =============  =============

star 8.25 KiB (32x32 to 32x64; 8.95 with faults) and 7.15 (64x64 to 64x128); m2o-greedy
11.21 (32x64 to 64x64), 7.80 (64x64 to 64x128; 8.08 with faults).
:data:`PHILOX_BYTES_PER_NODE` and :data:`PHILOX_FAULTED_BYTES_PER_NODE` allow these with
the same margin: 2^21 deflection nodes take about 10 GiB in one process, and 2^21 over 2
shards (refused with the Twister's streams on a 24 GiB machine) fit. A scheme not
measured with philox keeps its Twister figure (the compact stream never takes more).
Where the Twister's streams would be refused but philox's fit, the refusal says so.
A scheme not measured (the one-shot schemes of the PMNB and many-to-one families other
than m2o-greedy, and dynamic-broadcast: what they hold depends on the task given, not
only on the network) is allowed :data:`BYTES_PER_NODE`, 64 KiB, the largest figure ever
measured rounded up, so that no scheme is let through that then exhausts the machine.
Measure a scheme with ``python benchmarks/memory_per_node.py --scheme NAME ...`` before
adding it to the table.
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
from slotnet.nodes.runtime import DEFAULT_RNG

__all__ = ["BYTES_PER_NODE", "BYTES_PER_REPORTED_NODE", "BYTES_PER_SERIES_SLOT", "BYTES_PER_SLOT",
           "FAULTED_BYTES_PER_NODE", "PHILOX_BYTES_PER_NODE", "PHILOX_FAULTED_BYTES_PER_NODE", "SCHEME_BYTES_PER_NODE",
           "available_memory", "bytes_per_node", "check_fits", "estimate"]

#: Resident bytes per node of a running network of a scheme not in SCHEME_BYTES_PER_NODE.
BYTES_PER_NODE = 64 * 1024

#: Resident bytes per node allowed for the schemes measured with the Twister's streams
#: (``--rng mt``; the module docstring's first table, with a margin of about a quarter,
#: rounded up to a whole KiB).
SCHEME_BYTES_PER_NODE: dict[str, int] = {
    "deflection": 9 * 1024,
    "bcast-periodic": 9 * 1024,
    "bcast-simple": 13 * 1024,
    "bcast-balanced": 19 * 1024,
    "bcast-dtree": 20 * 1024,
    "bcast-indirect": 21 * 1024,
    "star": 13 * 1024,
    "m2o-greedy": 15 * 1024,
}
#: Resident bytes per node allowed for the schemes measured with the default, compact
#: generator (``--rng philox``), with the same margin; a scheme not measured so is allowed its
#: SCHEME_BYTES_PER_NODE figure (the compact generator never takes more than the Twister).
PHILOX_BYTES_PER_NODE: dict[str, int] = {
    "deflection": 5 * 1024,
    "bcast-periodic": 6 * 1024,
    "bcast-simple": 11 * 1024,
    "bcast-balanced": 16 * 1024,
    "bcast-dtree": 18 * 1024,
    "bcast-indirect": 18 * 1024,
    "star": 11 * 1024,
    "m2o-greedy": 15 * 1024,
}
#: Resident bytes per node allowed for a run with faults and the Twister's streams (the
#: module docstring's first table, its columns with faults, with the same margin): its
#: tasks each have a cancel scope, its receivers a list of messages for the fault pipeline
#: to judge, its reporter the faults' books. A scheme
#: measured only without faults is allowed BYTES_PER_NODE with them.
FAULTED_BYTES_PER_NODE: dict[str, int] = {
    "deflection": 11 * 1024,
    "bcast-periodic": 10 * 1024,
    "bcast-simple": 17 * 1024,
    "bcast-balanced": 23 * 1024,
    "bcast-dtree": 24 * 1024,
    "bcast-indirect": 22 * 1024,
    "star": 13 * 1024,
    "m2o-greedy": 15 * 1024,
}
#: ... and with faults and the compact generator (a scheme not measured so: its
#: FAULTED_BYTES_PER_NODE figure).
PHILOX_FAULTED_BYTES_PER_NODE: dict[str, int] = {
    "deflection": 7 * 1024,
    "bcast-periodic": 7 * 1024,
    "bcast-simple": 15 * 1024,
    "bcast-balanced": 20 * 1024,
    "bcast-dtree": 23 * 1024,
    "bcast-indirect": 19 * 1024,
    "star": 12 * 1024,
    "m2o-greedy": 15 * 1024,
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


def bytes_per_node(scheme: str | None, rng: str = DEFAULT_RNG, faulted: bool = False) -> int:
    """Resident bytes per node allowed for ``scheme`` (None or a scheme not measured: the most
    any takes) with the nodes' generator ``rng`` (``"mt"`` or ``"philox"``), in a run with
    faults where ``faulted``."""
    if scheme is None:
        return BYTES_PER_NODE
    mt_table, philox_table = ((FAULTED_BYTES_PER_NODE, PHILOX_FAULTED_BYTES_PER_NODE) if faulted
                              else (SCHEME_BYTES_PER_NODE, PHILOX_BYTES_PER_NODE))
    mt = mt_table.get(scheme, BYTES_PER_NODE)
    return philox_table.get(scheme, mt) if rng == "philox" else mt


def estimate(topology: Topology, slots: int, *, series: bool = False, shards: int = 1, hosted: int | None = None,
             scheme: str | None = None, rng: str = DEFAULT_RNG, faulted: bool = False) -> int:
    """Estimated peak resident bytes, on this machine, of a run on ``topology`` for ``slots`` slots.

    Args:
        scheme: the scheme's name: its bytes per node (:func:`bytes_per_node`).
        rng: the nodes' generator, ``"mt"`` or ``"philox"`` (:func:`bytes_per_node`).
        faulted: the run has faults (:func:`bytes_per_node`).
        shards: a sharded run (``--shards K``, K > 1) started here: the coordinator (the
            reporter, no nodes) plus K shard processes, each with its block of nodes and
            its own interpreter.
        hosted: one shard process by itself (``slotnet shard``): the nodes it hosts.
    """
    per_slot = BYTES_PER_SLOT + (BYTES_PER_SERIES_SLOT if series else 0)
    per_node = bytes_per_node(scheme, rng, faulted)
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
               shards: int = 1, hosted: int | None = None, scheme: str | None = None, rng: str = DEFAULT_RNG,
               faulted: bool = False) -> None:
    """Refuse a run (or one shard of it) that cannot fit in the memory available.

    Args:
        available: bytes available (default: read from the machine now).
        shards, hosted, scheme, rng, faulted: as :func:`estimate`.

    Raises:
        SpecError: with the estimate and the memory available (and, where the run would fit
            with the compact generator, that ``--rng philox`` would).
    """
    need = estimate(topology, slots, series=series, shards=shards, hosted=hosted, scheme=scheme, rng=rng,
                    faulted=faulted)
    have = available_memory() if available is None else available
    if have is not None and need > have:
        nodes = topology.n_nodes if hosted is None else hosted
        what = f"{nodes:,} nodes" + (f" and {slots:,} slots" if slots * BYTES_PER_SLOT > need / 4 else "")
        where = ("this shard of " if hosted is not None else "") + topology.spec
        how = f" over {shards} shard processes here" if hosted is None and shards > 1 else ""
        compact = ""
        if rng != "philox":
            small = estimate(topology, slots, series=series, shards=shards, hosted=hosted, scheme=scheme, rng="philox",
                             faulted=faulted)
            if small <= have:
                kib = bytes_per_node(scheme, "philox", faulted) // 1024
                compact = (f"; with --rng philox (a compact random stream per node, ~{kib} "
                           f"KiB per node) it needs about {_human(small)} and fits")
        per_node = f"~{bytes_per_node(scheme, rng, faulted) // 1024} KiB per node" + (" with faults" if faulted else "")
        raise SpecError(f"{where} for {slots:,} slots needs about {_human(need)}{how} ({what}, {per_node}) "
                        f"but this machine has {_human(have)} available{compact}")
