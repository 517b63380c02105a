"""Driving a transport by hand in a test: one slot's exchange, every inbox decoded."""

from __future__ import annotations

from typing import Any

import trio


def deliver(transport: Any, slot: int) -> list[tuple[int, list[tuple[int, Any]]]]:
    """What ``transport`` hands over at ``slot``: ``(receiver, [(in_port, message), ...])`` by receiver
    (the transport's own ``exchange``, run in a Trio run of its own, each inbox decoded)."""
    return [(r, frames.decode()) for r, frames in trio.run(transport.exchange, slot)]
