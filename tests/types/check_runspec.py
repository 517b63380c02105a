"""Type tests of the public API, checked by mypy (``devtools/typecheck.py``), never run.

Each line is what a user's typed script writes; ``assert_type`` pins what mypy infers, and
a ``type: ignore[code]`` pins an error mypy must report (``warn_unused_ignores`` fails the
check where it reports none).
"""

from typing import assert_type

import slotnet
from slotnet.fabric import FaultSchedule, parse_topology

# faults in the CLI syntax, as the tutorial writes them, kept as a FaultSchedule
spec = slotnet.RunSpec("flood", "mesh:4x4", slots=100, faults=["crash@0:5", "link-down@0:1:0"])
assert_type(spec.faults, FaultSchedule)
assert_type(slotnet.RunSpec("flood", "ring:8", faults="loss=0.1").faults, FaultSchedule)
assert_type(slotnet.RunSpec("flood", "ring:8", faults=FaultSchedule.parse(["loss=0.1"])).faults, FaultSchedule)
# a topology built in Python, kept as its spec
assert_type(slotnet.RunSpec("flood", parse_topology("ring:8")).topology, str)

slotnet.RunSpec("flood", 8)  # type: ignore[arg-type]
slotnet.RunSpec("flood", "ring:8", faults=3)  # type: ignore[arg-type]
slotnet.RunSpec("flood", "ring:8", faults=[1, 2])  # type: ignore[list-item]
