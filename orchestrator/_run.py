"""Running a spec: in this process, or over shard processes when it asks for them.

:func:`run_async` prepares the spec (every input error surfaces before a slot runs) and
hands it to the one-process driver (``engine._driver``) or, for ``shards > 1``, to the
shard coordinator (``shard._coordinator``). This is the one place that knows both.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from slotnet.errors import SpecError

from .engine._driver import run_local
from .engine._progress import Progress
from .engine._result import Result
from .engine._spec import RunSpec

__all__ = ["run", "run_async"]


async def run_async(spec: RunSpec, *, progress: Progress | None = None,
                    on_slot: Callable[[int], None] | None = None) -> Result:
    """Run ``spec`` inside the caller's Trio loop and return its :class:`Result`.

    Raises:
        SpecError, TopologyError, FaultSpecError: bad input (before any slot runs).
        NodeFailure: a node's rule raised.
        CapacityError: a node oversent a port.
    """
    _check_spec(spec)
    prep = spec.prepare()
    if spec.shards > 1:
        from .shard._coordinator import run_sharded  # the broker machinery, loaded only when asked for

        return await run_sharded(prep, progress=progress, on_slot=on_slot)
    return await run_local(prep, progress=progress, on_slot=on_slot)


def run(spec: RunSpec, *, progress: Progress | None = None) -> Result:
    """Run ``spec`` to completion (starts its own Trio loop).

    Raises:
        SpecError: ``spec`` is no :class:`RunSpec`, or any input error (before a slot runs).
    """
    _check_spec(spec)
    return trio.run(lambda: run_async(spec, progress=progress))


def _check_spec(spec: object) -> None:
    if not isinstance(spec, RunSpec):
        raise SpecError(f"run() takes a RunSpec, e.g. slotnet.run(slotnet.RunSpec('deflection', 'hypercube:6', "
                        f"load={{'offered': 1.0}})); got {type(spec).__name__} {spec!r:.60}")
