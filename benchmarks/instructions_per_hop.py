"""Machine instructions per packet-hop of deflection routing: a cost figure the host's speed does not move.

Wall-clock timings on a shared host move by 10 to 40 % from one minute to the next
(see the README's performance section), more than most changes to the hot path are
worth. This script counts instructions instead: it runs one deflection job under
valgrind's callgrind at two lengths, ``--slots`` and twice that, and divides the extra
instructions by the extra packet-hops. Set-up, imports and tear-down cancel out; what is
left is the cost of one hop in the slot loop, the same on every run of the same build
to about 0.2 % (11,959 and 11,984 for two runs of the compiled build at d = 9; the child
runs with one OpenBLAS thread, see ``count``).

Use it to judge a change to the hot path: run it before and after, with the same
``--dims`` and ``--slots``. Instructions are not time (cache misses are not counted,
and the run takes about 50 times as long as without valgrind), so report both.

It also counts the msgpack floor the same way: the instructions to encode and decode one
packet of deflection's shape, ``(dest, entered_slot, origin)``, with msgpack's packer and
``unpackb`` (the loop ``deflection_throughput.py`` times), and prints a hop's cost as a
multiple of it. In instructions that multiple does not move with the host; in wall time it
does, because the two run at very different rates: the floor's loop is a few small
functions over a few bytes, a hop runs through the emulator's code and its nodes' state
(on 2026-11-30, d = 12, the default generator: a hop 6.3 to 6.9 instructions a nanosecond, the floor's loop about
17; 5.9 to 6.5 times the floor in wall time, 2.42 times in instructions).

    python benchmarks/instructions_per_hop.py                     # d = 9, installed build
    python benchmarks/instructions_per_hop.py --build both        # compiled against pure Python
    python benchmarks/instructions_per_hop.py --dims 8 10 --slots 20
    python benchmarks/instructions_per_hop.py --rng mt           # the Mersenne Twister's node streams

Needs valgrind (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

import msgpack

from slotnet._build import child_env
from slotnet.nodes.runtime import DEFAULT_RNG, RNG_KINDS

#: one run, in a child process: prints "hops build" for the main process to read
_CHILD = """
import sys, slotnet
spec = slotnet.RunSpec("deflection", f"hypercube:{sys.argv[1]}", load={"offered": float(sys.argv[3])},
                       slots=int(sys.argv[2]), warmup=0, seed=int(sys.argv[4]), rng=sys.argv[5])
r = slotnet.run(spec)
print(r.performance["messages"], r.performance["build"])
"""


#: the floor: encode and decode the first n of `total` packets (making them costs the same in both runs)
_FLOOR_CHILD = """
import random, sys, msgpack
n, total = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(1)
pkts = [(rnd.randrange(4096), rnd.randrange(200), rnd.randrange(4096)) for _ in range(total)]
pack, unpackb = msgpack.Packer().pack, msgpack.unpackb
for p in pkts[:n]:
    unpackb(pack(p), use_list=False, strict_map_key=False)
"""


def _callgrind(args: list[str], pure: bool = False) -> tuple[int, str]:
    """(instructions, stdout) of ``python -c ARGS`` under callgrind, with one OpenBLAS thread
    (``pure``: slotnet's pure-Python build)."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", *args]
    # numpy's OpenBLAS starts a worker thread per core at import; slotnet never calls BLAS,
    # but under callgrind (which runs one thread at a time) that idle thread's spin-wait is
    # counted too, a few hundred thousand instructions or none depending on the schedule.
    # One BLAS thread means no worker thread: the count is then the run's own. A fixed hash
    # seed keeps the dicts' layouts, and so the count, the same from one run to the next.
    env = {**child_env(pure), "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    collected = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or collected is None:
        raise SystemExit(f"instructions_per_hop: the run under valgrind failed:\n{done.stderr[-2000:]}")
    return int(collected.group(1)), done.stdout


def floor(samples: int = 50_000) -> float:
    """Instructions to msgpack-encode and decode one packet: ``samples`` more against none."""
    base, _ = _callgrind([_FLOOR_CHILD, "0", str(samples)])
    more, _ = _callgrind([_FLOOR_CHILD, str(samples), str(samples)])
    return (more - base) / samples


def count(d: int, slots: int, v: float, seed: int, pure: bool, rng: str = DEFAULT_RNG) -> tuple[int, int, str]:
    """(instructions, packet-hops, build) of one run under callgrind (the nodes' generator ``rng``)."""
    instructions, out = _callgrind([_CHILD, str(d), str(slots), str(v), str(seed), rng], pure)
    hops, build = out.split()[-2:]
    return instructions, int(hops), build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, nargs="+", default=[9])
    ap.add_argument("--slots", type=int, default=30, help="the shorter run's slots (the longer has twice as many)")
    ap.add_argument("--v", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", choices=("installed", "pure", "both"), default="installed",
                    help="installed: whatever `pip install` built; pure: SLOTNET_PURE_PYTHON=1; both: one then the other")
    ap.add_argument("--rng", choices=RNG_KINDS, default=DEFAULT_RNG,
                    help=f"the nodes' random generator (RunSpec.rng; default {DEFAULT_RNG})")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("instructions_per_hop: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        sys.exit(2)
    builds = {"installed": [False], "pure": [True], "both": [False, True]}[args.build]
    per_floor = floor()
    print(f"msgpack floor: {per_floor:,.0f} instructions to encode and decode one packet (msgpack {'.'.join(map(str, msgpack.version))})")
    print(f"{'d':>3} {'build':>9} {'extra hops':>11} {'instructions/hop':>17} {'x floor':>8}")
    for d in args.dims:
        for pure in builds:
            i1, h1, build = count(d, args.slots, args.v, args.seed, pure, args.rng)
            i2, h2, _ = count(d, 2 * args.slots, args.v, args.seed, pure, args.rng)
            per_hop = (i2 - i1) / (h2 - h1)
            print(f"{d:>3} {build:>9} {h2 - h1:>11} {per_hop:>17,.0f} {per_hop / per_floor:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
