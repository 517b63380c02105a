"""The report and `slotnet repro --help` speak the reader's words: the paper cited, its claims, its symbols."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from slotnet.orchestrator.tools import report_html
from slotnet.orchestrator.tools._paper_run import PaperRun
from slotnet.schemes import EXPERIMENTS, Row
from tests.support.cli import call_main

#: Markup and words of the code, not of a reader: reST roles and literals, the runner's vocabulary.
INTERNAL = ("``", ":mod:", ":func:", ":data:", ":meth:", ":class:", "runner", "publish", "CENTRALISED", "report_pass")

PAPERS = sorted(name for name in EXPERIMENTS if not name.startswith("zz"))


class _Text(HTMLParser):
    """The text a reader sees (no attribute, so no embedded image), and the text of each h2."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.h2: list[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        self._in_h2 = tag == "h2"

    def handle_endtag(self, tag):
        self._in_h2 = False if tag == "h2" else self._in_h2

    def handle_data(self, data):
        self.text.append(data)
        if self._in_h2:
            self.h2.append(data)


def _rows() -> list[Row]:
    return [Row("T", f"rho={rho:g}", "mean_delay", None, 2.0 + rho, 0.1, 2.0 + rho) for rho in (0.1, 0.2, 0.3)]


def _page() -> _Text:
    runs = [PaperRun(name, 1, True, rows=_rows(), figures=[("", b"\x89PNG")]) for name in PAPERS]
    text = _Text()
    text.feed(report_html.render(runs, [("slotnet", "test")], figures=False))
    return text


def test_the_page_has_no_rest_markup_and_no_internal_words():
    """Every paper's text on the page (its description, claims, titles) is free of reST and the code's words."""
    words = " ".join(_page().text)
    for word in INTERNAL:
        assert word not in words, word


def test_repro_help_has_no_rest_markup_and_no_internal_words(capsys):
    """`slotnet repro --help` lists the papers in the reader's words."""
    code, out, _ = call_main(capsys, "repro", "--help")
    assert code == 0 and "stamoulis" in out
    for word in INTERNAL:
        assert word not in out, word


@pytest.mark.parametrize("paper", PAPERS)
def test_every_paper_is_cited_and_states_its_claims(paper):
    """Each experiment names its paper (authors and title) and what the paper claims, in sentences."""
    exp = EXPERIMENTS[paper]
    assert exp.citation and exp.citation != paper and ("&" in exp.citation or "," in exp.citation)
    assert exp.claims and all(c.endswith(".") and len(c) > 30 for c in exp.claims)
    for text in (exp.doc, exp.citation, *exp.claims):
        assert not any(word in text for word in INTERNAL), text


def test_sections_cite_the_paper_and_the_claims_box_holds_its_claims():
    """A paper's section is titled by its citation, not its name; the claims box lists the declared claims."""
    runs = [PaperRun(name, 1, True, rows=_rows(), figures=[("", b"\x89PNG")]) for name in PAPERS]
    page = report_html.render(runs, [], figures=False)
    parsed = _Text()
    parsed.feed(page)
    assert sorted(parsed.h2[2:]) == sorted(EXPERIMENTS[p].citation for p in PAPERS)  # after Summary and the slips
    for name in PAPERS:
        box = page.split(f"<h2>{html.escape(EXPERIMENTS[name].citation, quote=True)}</h2>", 1)[1].split("</section>")[0]
        claims = re.search(r"<div class=claim>(.*?)</div>", box, re.S)
        assert claims is not None
        assert [html.unescape(c) for c in re.findall(r"<li>(.*?)</li>", claims.group(1))] == list(EXPERIMENTS[name].claims)


def test_a_paper_without_figures_of_its_own_still_states_its_claims():
    """The claims box stands under the description when the reproduction drew no figure of its own."""
    page = report_html.render([PaperRun("greenberg-hajek", 1, True, rows=_rows())], [], figures=False)
    box = re.search(r"<div class=claim>(.*?)</div>", page, re.S)
    assert box is not None and box.group(1).count("<li>") == len(EXPERIMENTS["greenberg-hajek"].claims)


def _figure_axes(rows: list[Row]):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    cases = list(dict.fromkeys(r.case for r in rows))
    report_html._panel(ax, rows, rows[0].metric, report_html._x_variable(cases), cases, [])
    fig.canvas.draw()
    return fig, ax


def test_figure_axes_carry_the_papers_symbols():
    """A table drawn against rho is labelled ρ, against lam λ; the panel's title is the metric in words."""
    import matplotlib.pyplot as plt

    fig, ax = _figure_axes(_rows())
    try:
        assert ax.get_xlabel() == "ρ" and ax.get_title() == "mean delay"
    finally:
        plt.close(fig)
    assert report_html.SYMBOLS["lam"] == "λ" and report_html.SYMBOLS["v"].endswith("v")


def test_a_log_axis_over_a_small_range_has_plain_numbers():
    """Values from 1 to 200 (a log axis) are labelled 1, 2, 5, 10 ..., never as powers of ten."""
    import matplotlib.pyplot as plt

    rows = [Row("T", f"rho={x:g}", "mean_delay", None, y, 0.01, y) for x, y in ((0.1, 1.0), (0.5, 20.0), (0.9, 200.0))]
    fig, ax = _figure_axes(rows)
    try:
        assert ax.get_yscale() == "log"
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert len(labels) >= 3 and all(re.fullmatch(r"\d+(\.\d+)?", t) for t in labels), labels
    finally:
        plt.close(fig)
