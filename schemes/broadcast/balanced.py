"""``bcast-balanced``: placeholder until the scheme lands (registered so the name is reserved)."""

from __future__ import annotations

from typing import Any

from ._common import BroadcastNode, make_scheme

__all__ = ["SCHEME"]


class _Pending(BroadcastNode):
    async def run(self) -> None:
        raise NotImplementedError("bcast-balanced is not implemented yet")


SCHEME: Any = make_scheme("bcast-balanced", "not implemented yet", _Pending)
