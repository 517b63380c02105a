"""The reproductions' own log axes are labelled with plain numbers."""

from __future__ import annotations

import re

import pytest

from slotnet.schemes._plot_ticks import plain_log_ticks


@pytest.mark.parametrize(("base", "top", "expected"), [(10.0, 300.0, {"1", "2", "5", "10", "20", "50", "100", "200"}),
                                                     (2.0, 64.0, {"2", "4", "8", "16", "32", "64"})])
def test_plain_log_ticks(base, top, expected):
    """Base 10 over two decades: 1, 2, 5, 10, ...; base 2: its powers written out (16, not 2^4)."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([1.0 if base == 10.0 else 2.0, top], [1.0, 2.0])
        ax.set_xscale("log", base=base)
        plain_log_ticks(ax.xaxis, base=base)
        fig.canvas.draw()
        labels = {t.get_text() for t in ax.get_xticklabels() if t.get_text()}
        assert all(re.fullmatch(r"\d+(\.\d+)?", t) for t in labels), labels
        assert expected <= labels
    finally:
        plt.close(fig)
