"""The pmnb family's scan driver (:class:`slotnet.schemes.pmnb._scan.ScanPhase`): sends after a stall."""

from __future__ import annotations

from typing import Any

from slotnet.schemes.pmnb._scan import ScanPhase


class _Ctx:
    """What ScanPhase asks of a node's context: ports always alive and free; sends and records kept."""

    node = 0

    def __init__(self) -> None:
        self.sent: list[tuple[int, Any]] = []
        self.records: list[tuple[Any, ...]] = []

    def port(self, dim: int, direction: int) -> int:
        return 0

    def port_alive(self, port: int) -> bool:
        return True

    def capacity_left(self, port: int) -> float:
        return 1.0

    def send(self, port: int, message: Any, size: float) -> None:
        self.sent.append((port, message))

    def record(self, kind: str, *values: Any) -> None:
        self.records.append((kind, *values))


class _Scan:
    """A scan that sends one message per step (its payload the step) and expects nothing."""

    done = False

    def outgoing(self, step: int) -> list[tuple[int, int, Any]]:
        return [(0, 1, step)]

    def incoming(self, step: int, dim: int, direction: int, payload: Any) -> None:
        pass

    def miss(self, step: int) -> int:
        return 0


def test_a_node_woken_after_a_stall_makes_no_sends_for_steps_already_past():
    """Steps 0..4 fell while the node was stalled: at tick 5 it sends step 5's message only, the rest ``late send``."""
    ctx = _Ctx()
    phase = ScanPhase(ctx, {0: _Scan()}, 0, 1, 8, 1.0, {0: 4})  # type: ignore[arg-type]
    phase.send_due(5)
    assert ctx.sent == [(0, ["s", 0, 5])]
    assert ctx.records == [("off_schedule", "scan", "late send")] * 5


def test_a_node_woken_off_the_step_grid_sends_nothing_for_the_step_it_missed():
    """Steps of 2 ticks: woken at tick 3 (step 1 began at tick 2), it makes no send until step 2 at tick 4."""
    ctx = _Ctx()
    phase = ScanPhase(ctx, {0: _Scan()}, 0, 2, 4, 0.5, {0: 2})  # type: ignore[arg-type]
    phase.send_due(0)
    phase.send_due(3)
    phase.send_due(4)
    assert ctx.sent == [(0, ["s", 0, 0]), (0, ["s", 0, 2])]
    assert ctx.records == [("off_schedule", "scan", "late send")]
