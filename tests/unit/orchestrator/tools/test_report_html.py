"""`slotnet repro ... --html FILE`: one self-contained page, verdicts from the rows, loaded by a browser."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from slotnet.errors import SchemeError
from slotnet.orchestrator import cli as cli_mod
from slotnet.orchestrator.tools import _repro, report_html, repro_all
from slotnet.orchestrator.tools.repro_all import PaperRun
from slotnet.orchestrator.tools.results_cache import ResultsCache, file_mode
from slotnet.schemes import Experiment, Row
from slotnet.schemes._verdict import Explanation

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _need_matplotlib() -> None:
    if IN_CI:  # CI installs the report extra: missing there is a failure, not a skip
        import matplotlib  # noqa: F401
    else:
        pytest.importorskip("matplotlib", reason="the HTML report draws with matplotlib: pip install '.[report]'")


class _Page(HTMLParser):
    """What a self-containment check needs: every tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data):
        self.text.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def assert_self_contained(text: str) -> _Page:
    """No script; nothing a browser would fetch: every src and href is a data: URI or an anchor on the page."""
    page = _parse(text)
    tags = [t for t, _ in page.tags]
    assert "script" not in tags and "link" not in tags and "iframe" not in tags and "object" not in tags
    for tag, attrs in page.tags:
        for key in ("src", "href", "srcset", "data", "poster"):
            if key in attrs:
                value = attrs[key]
                assert value.startswith("data:") or value.startswith("#"), f"<{tag} {key}={value[:60]!r}>"
    ids = [a["id"] for _, a in page.tags if "id" in a]
    assert len(ids) == len(set(ids)), "an id used twice"
    for _, attrs in page.tags:
        if attrs.get("href", "").startswith("#"):
            assert attrs["href"][1:] in ids, f"a link to nothing: {attrs['href']}"
    style = "".join(re.findall(r"<style>(.*?)</style>", text, re.S))
    assert "@import" not in style and "url(" not in style and "@font-face" not in style
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    return page


def _pngs(page: _Page) -> list[bytes]:
    out = []
    for tag, attrs in page.tags:
        if tag == "img":
            head, _, data = attrs["src"].partition(",")
            assert head == "data:image/png;base64"
            out.append(base64.b64decode(data))
    return out


ROWS = [
    Row("Table A", "rho=0.1", "delay", 2.0, 2.01, 0.05, 2.0),
    Row("Table A", "rho=0.2", "delay", 3.0, 3.02, 0.05, 3.0),
    Row("Table A", "rho=0.3", "delay", 4.0, 5.0, 0.05, 4.0),  # OUTSIDE
    Row("Table B", "d=6 rho=0.3", "D", None, 26.0, 0.1, 27.5, note=Explanation("Prop. 5 counts 3 slots for one", corrected=26.0)),  # known
    Row("Table B", "d=7 rho=0.3", "D", None, 30.0, 0.1, 30.05),
    Row("Table C", "x", "m", None, None, None, None, note="past the limit"),  # not run
    Row("Table C", "y", "m", None, 1.0, None, None),  # -
]


def _synthetic_runs() -> list[PaperRun]:
    run = PaperRun("fakepaper", 3, True, rows=list(ROWS), wall_s=1.5,
                   runs=[(dict(scheme="deflection", topology="hypercube:6", load={"offered": 0.2}, slots=1100, warmup=100,
                               seed=3), 0.4, False),
                         (dict(scheme="m2o-rec", topology="mesh:16x16", params={"workload": "all-to-one"}), 0.2, True)])
    broken = PaperRun("brokenpaper", 3, True, rows=[Row("T", "c", "m", 1.0, 1.0, 0.01, 1.0)], error="--plot: cannot save")
    return [run, broken]


def test_report_of_rows_is_honest_and_self_contained():
    """Counts, every OUTSIDE row, the slips (known rows only, with their notes), a failed paper, and no fetch."""
    _need_matplotlib()
    runs = _synthetic_runs()
    text = report_html.render(runs, [("slotnet", "0.1.0"), ("hot path", "pure")])
    page = assert_self_contained(text)
    words = " ".join(" ".join(page.text).split())
    assert "1 row OUTSIDE the paper's agreement" in words and "1 paper failed: brokenpaper" in words
    slips = text[text.index('id="slips"'):text.index('id="paper-fakepaper"')]
    assert "Prop. 5 counts 3 slots for one" in slips and slips.count("<tr class=known>") == 1
    assert "past the limit" not in slips and "Table A" not in slips
    summary = text[text.index('id="summary"'):text.index('id="slips"')]
    assert "rho=0.3" in summary and "OUTSIDE: off the paper by 1" in summary  # the OUTSIDE row, named
    assert "slotnet repro fakepaper --quick --seed 3" in text
    assert "slotnet run deflection --topology hypercube:6 --offered 0.2 --slots 1100 --warmup 100 --seed 3" in text
    assert "FAILED: --plot: cannot save" in words
    # every row's verdict is the row's own
    rows_html = re.findall(r"<table class=rows>.*?</table>", text, re.S)
    assert len(rows_html) == 4  # tables A, B, C of fakepaper and T of brokenpaper
    assert sum(t.count("<tr class=") for t in rows_html) == len(ROWS) + 1
    for word, css in (("within", "within"), ("known", "known"), ("OUTSIDE", "outside"), ("not run", "notrun")):
        assert f'<td class="{css}">{word}' in text
    pngs = _pngs(page)
    assert len(pngs) >= 2 and all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in pngs)  # tables A and B drawn


def test_x_variable_of_a_table():
    """The varying quantity of a table's cases is drawn along x; the rest of the case names the series."""
    assert report_html._x_variable(["rho=0.1", "rho=0.2"]) == "rho"
    assert report_html._x_variable(["torus:6x6 M=1 split", "torus:6x6 M=9 split"]) == "M"
    assert report_html._x_variable(["d=5 rho=0.3", "d=5 rho=0.7"]) == "rho"
    assert report_html._x_variable(["slot 1", "slot 2", "slot 3"]) == "slot"
    assert report_html._x_variable(["16x16 all-to-one", "32x32 hotspots:k=4"]) is None
    assert report_html._x_variable(["rho=0.5 x of eq. (2)", "rho=0.5 ending=2"]) is None
    assert report_html._series("torus:6x6 M=9 split", "M") == ("torus:6x6 split", 9.0)


def test_repro_all_refuses_one_paper_options(capsys):
    """repro all takes no per-paper option; --html with --plot is refused; both before any run."""
    assert cli_mod.main(["repro", "all", "--sweep-d", "4"]) == 2
    assert "repro all takes no --sweep-d" in capsys.readouterr().err
    assert cli_mod.main(["repro", "stamoulis", "--html", "x.html", "--plot", "y.png"]) == 2
    assert "leave out --plot" in capsys.readouterr().err


def test_html_to_an_unwritable_path_is_refused_before_any_run(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(_repro, "get_experiment", lambda paper: pytest.fail("ran"))
    assert cli_mod.main(["repro", "all", "--html", str(tmp_path / "no" / "r.html")]) == 2
    assert "--html: cannot write" in capsys.readouterr().err


def test_progress_names_the_paper_and_what_is_left():
    import io

    out = io.StringIO()
    bar = repro_all.ReportProgress(2, 5, "stamoulis", ["varvarigos", "yeh", "mansour"], {"yeh": 60.0, "mansour": 30.0},
                                   stream=out, enabled=True)
    bar.add(4)
    bar.done()
    line = out.getvalue()
    assert line.lstrip("\r").startswith("paper 2/5 stamoulis: [")
    assert "runs 1/4" in line and "then about 1:30 for 2 more papers, 1 more paper not yet timed" in line


def test_the_estimate_for_later_papers_comes_from_their_last_computation(monkeypatch, tmp_path):
    """A paper computed with nothing from the cache leaves its wall time for the next estimate; a
    paper answered from the cache does not overwrite it."""
    req = dict(scheme="deflection", topology="hypercube:2", load={"offered": 0.5}, slots=5, seed=1)

    def run_it(runner, *, seed, quick, **options):
        runner([req])
        return [Row("T", "c", "m", None, 1.0, None, None)]

    monkeypatch.setattr(_repro, "get_experiment", lambda paper: Experiment(paper, "doc", run_it))
    cache = ResultsCache(tmp_path, version="v")
    (first,) = repro_all.run_papers(["p"], seed=1, quick=True, jobs=1, cache=cache, figures=False)
    walls = repro_all._walls(cache, quick=True)
    assert first.cached == 0 and walls == {"p": round(first.wall_s, 1)} and repro_all._walls(cache, quick=False) == {}
    (path,) = tmp_path.glob("walls.json")
    path.write_text(json.dumps({"quick": {"p": 1234.0}}))
    (again,) = repro_all.run_papers(["p"], seed=1, quick=True, jobs=1, cache=cache, figures=False)
    assert again.cached == 1 and repro_all._walls(cache, quick=True) == {"p": 1234.0}
    path.write_text("{not json")
    assert repro_all._walls(cache, quick=True) == {}


def test_a_failing_paper_does_not_stop_the_others(capsys, monkeypatch, tmp_path):
    """repro all: a paper that fails is reported (exit 1) and the next one still runs and is in the report."""
    _need_matplotlib()

    def good(runner, *, seed, quick, **options):
        if options.get("plot"):
            raise SchemeError("takes no --plot")
        return [Row("Good table", f"v={v}", "m", v, v, 0.01, v) for v in (1.0, 2.0)]

    def bad(runner, *, seed, quick, **options):
        runner.publish([Row("Bad table", "c", "m", 1.0, 1.0, 0.01, 1.0)])
        raise SchemeError("broke after a row")

    experiments = {"a-bad": Experiment("a-bad", "a bad paper", bad), "b-good": Experiment("b-good", "a good one", good)}
    monkeypatch.setattr(_repro, "get_experiment", experiments.__getitem__)
    monkeypatch.setattr(_repro, "papers", lambda: sorted(experiments))
    out = tmp_path / "r.html"
    code = cli_mod.main(["repro", "all", "--html", str(out), "--jobs", "1"])
    captured = capsys.readouterr()
    assert code == 1 and "a-bad: broke after a row" in captured.err
    text = out.read_text()
    assert out.stat().st_mode & 0o777 == file_mode()  # an ordinary file, not the temporary file's 0o600
    assert "Bad table" in text and "Good table" in text and "1 paper failed: a-bad" in text
    assert "=== a-bad ===" in captured.out and "=== b-good ===" in captured.out


# --- a real --quick report of one paper (the fastest: greenberg-hajek, 7 runs) -----------


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """`slotnet repro greenberg-hajek --quick --html FILE`, then the same again (from the cache)."""
    _need_matplotlib()
    folder = tmp_path_factory.mktemp("report")
    path, cache = folder / "report.html", folder / "cache"
    argv = ["repro", "greenberg-hajek", "--quick", "--html", str(path), "--cache", str(cache)]
    t0 = time.perf_counter()
    assert cli_mod.main(argv) == 0
    first_s = time.perf_counter() - t0
    first = path.read_text()
    t0 = time.perf_counter()
    assert cli_mod.main(argv) == 0
    again_s = time.perf_counter() - t0
    return {"path": path, "first": first, "again": path.read_text(), "first_s": first_s, "again_s": again_s}


@pytest.mark.slow
def test_quick_report_of_one_paper(quick_report, capsys):
    """Self-contained, the paper's tables as tables with every row's verdict, figures, metadata, then the
    pass its figures need (the delay against d, --dims 2-7); a second report of the same code comes from the
    cache, with the same rows."""
    text = quick_report["first"]
    page = assert_self_contained(text)
    cache = ResultsCache(quick_report["path"].parent / "cache")
    rows, _ = _repro.repro("greenberg-hajek", quick=True, jobs=1, cache=cache)
    column, _ = _repro.repro("greenberg-hajek", quick=True, jobs=1, cache=cache, dims="2-7")
    tables = re.findall(r"<table class=rows>.*?</table>", text, re.S)
    assert len(tables) == len({r.experiment for r in rows}) + 2 == 4 + 2  # Tables II, III, I, II against VI; the column
    assert sum(t.count("<tr class=") for t in tables) == len(rows) + len(column)
    for r in rows + column:
        assert f">{r.experiment}</h3>" in text
    assert text.count(">within</td>") == sum(r.verdict() == "within" for r in rows + column)
    assert '<h2>Greenberg &amp; Hajek (1992), Deflection routing in hypercube networks (--dims 2-7)</h2>' in text
    assert "slotnet repro greenberg-hajek --quick --seed 1 --dims 2-7" in text
    assert len(_pngs(page)) >= 5  # a figure per table with two rows or more, the column's among them
    for label in ("slotnet", "hot path", "git commit", "seeds", "machine", "wall time"):
        assert f"<th>{label}</th>" in text
    again = quick_report["again"]
    assert "(7 runs, 7 from the results cache" in again and "(7 runs, 0 from the results cache" in text
    assert "(6 runs, 6 from the results cache" in again and "(6 runs, 0 from the results cache" in text
    # the same rows, verdicts included (the column's last row is the pass's own wall time: not compared)
    assert re.findall(r"<table class=rows>.*?</table>", again, re.S)[:4] == tables[:4]
    assert quick_report["again_s"] < quick_report["first_s"]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _load(browser: str, page: Path, tmp: Path) -> tuple[str, list[str], Path]:
    """(the DOM after load, URLs the page asked the network for, screenshot) from headless Chromium."""
    netlog, shot = tmp / f"{page.stem}.netlog.json", tmp / f"{page.stem}.png"
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
              f"--user-data-dir={tmp / 'profile'}"]
    dom = subprocess.run([*common, f"--log-net-log={netlog}", "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    data = json.loads(netlog.read_text())
    kinds = {v: k for k, v in data["constants"]["logEventTypes"].items()}
    asked = sorted({e["params"]["url"] for e in data["events"]
                    if kinds.get(e["type"]) == "URL_REQUEST_START_JOB"
                    and "file://" in str(e.get("params", {}).get("network_isolation_key", ""))
                    and not e["params"]["url"].startswith(("file:", "data:"))})
    snap = subprocess.run([*common, "--window-size=1400,2000", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert snap.returncode == 0 and shot.exists(), snap.stderr[-2000:]
    return dom.stdout, asked, shot


@pytest.mark.slow
def test_report_loads_in_headless_chromium(quick_report, tmp_path):
    """Chromium loads the page without error, fetches nothing, and the DOM shows the tables and figures."""
    browser = _chromium()
    if browser is None:
        if IN_CI:
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium")
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium); CI installs it")
    page = tmp_path / "report.html"
    page.write_text(quick_report["first"])
    dom, asked, shot = _load(browser, page, tmp_path)
    assert asked == []
    loaded = _parse(dom)
    tables = [a for t, a in loaded.tags if t == "table" and a.get("class") == "rows"]
    assert len(tables) == 6 and "Table II (sim)" in dom and "Where the papers slip" in dom  # 4 tables, then the column's 2
    assert "Table II against Table VI (d = 6, v = 1)" in dom and "Delay vs d, v = 1" in dom
    assert sum(1 for t, a in loaded.tags if t == "img" and a["src"].startswith("data:image/png;base64,")) >= 1
    from matplotlib.image import imread

    pixels = imread(str(shot))
    assert pixels.shape[0] == 2000 and pixels.shape[1] == 1400 and pixels.std() > 0.05  # drawn, not blank
    # the check itself: a page that does fetch is caught
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png"></body></html>')
    _, asked, _ = _load(browser, control, tmp_path)
    assert asked == ["http://example.invalid/x.png"]
