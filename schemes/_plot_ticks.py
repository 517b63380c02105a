"""Readable ticks on a logarithmic axis of a reproduction's figure: plain numbers (2, 5, 10, 20, 50)."""

from __future__ import annotations

from typing import Any

__all__ = ["plain_log_ticks"]


def plain_log_ticks(axis: Any, base: float = 10.0) -> None:
    """Label a matplotlib log ``axis`` (``ax.xaxis``/``ax.yaxis``) with plain numbers, not ``10^x``.

    Base 10: ticks at 1, 2 and 5 times each power of ten, so that a range of one or two
    decades still has several labels; another base: its powers (2: 16, 32, 64).
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=base, subs=(1.0, 2.0, 5.0) if base == 10.0 else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())
