"""``cogscore report`` (``flows.present.report.page``): the page of a simulated two-night warehouse
(with a rescore), drawn in headless Chromium; names that hold markup are shown as text."""

from __future__ import annotations

import html
import json
import re
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.present.report import read_warehouse, render, round_rows, script_json
from schemas.comparisons import HOLM_FAMILY_NOTE
from simulator import simulate
from tests.report.browser import Browser, find_chromium
from tests.tables import read_table

EVIL_MODEL = "<script>alert(1)</script>\"q'"
EVIL_TASK = "<img src=x onerror=alert(2)>'t\""
NIGHTS = ("2026-11-30", "2026-12-01")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two simulated nights (one model and one runtime RL task renamed to markup), scored
    night by night, the second rescored with procedural_learning=v1."""
    root = tmp_path_factory.mktemp("report")
    dump, out = root / "dump", root / "out"
    for seed, night in enumerate(NIGHTS, start=1):
        for path in simulate(dump, date=night, episodes=300, seed=seed):
            frame = pl.read_parquet(path).with_columns(
                pl.col("model").replace("random-xs", EVIL_MODEL),
                pl.col("task").replace("mastermind_classic", EVIL_TASK),
            )
            frame.write_parquet(path)
    runs.nightly(dump, out)
    runs.rescore(dump, out, ["procedural_learning=v1"], since=date(2026, 12, 1))
    return out


@pytest.fixture(scope="module")
def page(warehouse: Path) -> str:
    return render(read_warehouse(warehouse))


def test_names_with_markup_are_escaped(page: str) -> None:
    assert EVIL_MODEL not in page and EVIL_TASK not in page
    assert "alert(1)</script>" not in page and "<img src=x" not in page
    assert html.escape(EVIL_MODEL) in page  # the leaderboard table
    # In the figures' JSON, as plotly.js text: entities, and no "<" that could end the script.
    assert script_json("&lt;script&gt;alert(1)") in page
    # Only the page's own scripts: plotly.js, the figures, the matrix, the explanations and
    # the two that draw.
    assert len(re.findall(r"<script\b", page, flags=re.IGNORECASE)) == 6
    assert len(re.findall(r"</script", page, flags=re.IGNORECASE)) == 6


def test_the_verdicts_say_what_holm_covers_and_each_cell_why_it_is_null_or_approximate(
    warehouse: Path, page: str
) -> None:
    """Issue 46: beside the matrix of verdicts, what Holm's family covers (one night's
    scope); in each cell's tooltip, the row's ``reason`` (eight tasks: every interval
    approximate); beside leaving one task out, the task bootstrap."""
    note = HOLM_FAMILY_NOTE.removeprefix("verdicts: ")
    assert html.escape(note[0].upper() + note[1:]) in page
    pairs = read_table(warehouse, "standing_comparisons").filter(
        (pl.col("as_of") == max(NIGHTS)) & (pl.col("scope") == "overall")
    )
    reasons = pairs["reason"].drop_nulls()
    assert reasons.len() > 0
    assert html.escape(reasons[0], quote=True) in page
    assert "That is not a settled ranking" in page


def test_nothing_is_loaded_from_elsewhere(page: str) -> None:
    external = re.compile(
        r"<(script|link|img|iframe|source|embed|object)\b[^>]*?\b(src|href|data)\s*=\s*"
        r"[\"']?\s*(https?:)?//",
        re.IGNORECASE,
    )
    assert external.search(page) is None
    assert "@import" not in page.split("<script>")[0]


def test_the_page_states_versions_fingerprints_and_sources(warehouse: Path, page: str) -> None:
    manifest = read_warehouse(warehouse).manifest
    for night in NIGHTS:
        assert manifest.nights[night].input_fingerprint in page
    default = read_warehouse(warehouse).manifest.formula_set["procedural_learning"]
    assert default != "v1" and f"procedural_learning={default}" in page  # the first night
    assert "procedural_learning=v1" in page  # the rescored one
    assert "round_end rows of 1 input file(s)" in page
    for section in (
        "leaderboard",
        "profile",
        "procedural",
        "runtime-rl",
        "examples",
        "nights",
        "quality",
        "rescore",
    ):
        assert f"<section id='{section}'>" in page


def test_without_the_input_the_page_shows_the_procedural_components(warehouse: Path) -> None:
    wh = read_warehouse(warehouse)
    gone = str(warehouse / "gone")
    nights = {n: replace(e, input=gone) for n, e in wh.manifest.nights.items()}
    wh.manifest = replace(wh.manifest, input=gone, nights=nights)
    assert round_rows(wh.manifest, "2026-12-01")[0] is None
    page = render(wh)
    assert "No learning curve: the input file" in page
    assert "Procedural learning components per model" in page


def test_the_command_prints_the_path(warehouse: Path, tmp_path: Path) -> None:
    target = tmp_path / "sub" / "report.html"
    result = CliRunner().invoke(app, ["report", str(warehouse), "--html", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(target) and target.stat().st_size > 1_000_000
    empty = CliRunner().invoke(app, ["report", str(tmp_path), "--html", str(target)])
    assert empty.exit_code == 2 and "no cogscore output at" in empty.output
    night = CliRunner().invoke(
        app, ["report", str(warehouse), "--html", str(target), "--night", "2026-11-30"]
    )
    assert night.exit_code == 0 and "Night shown: <b>2026-11-30</b>" in target.read_text()


CHARTS = """JSON.stringify(Array.from(document.querySelectorAll('.chart')).map(function (d) {
  var svg = d.querySelector('svg.main-svg'), r = svg ? svg.getBoundingClientRect() : null;
  return {id: d.id, svg: !!svg, width: r ? r.width : 0, height: r ? r.height : 0,
          traces: d.querySelectorAll('g.trace, g.hm').length,  // a heatmap draws g.hm
          title: (d.querySelector('.gtitle') || {}).textContent || ''};
}))"""


def test_every_chart_draws_offline_in_chromium(warehouse: Path, tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.fail(
            "chromium is not installed: the report's browser test needs it "
            "(apt-get install -y chromium; .ci/run installs it)"
        )
    report = tmp_path / "report.html"
    report.write_text(render(read_warehouse(warehouse)), encoding="utf-8")
    t0 = time.monotonic()
    with Browser(tmp_path / "profile", width=1400, height=1000) as browser:
        browser.open(report.as_uri())
        state = browser.wait_until(
            "document.body.getAttribute('data-charts') !== 'pending' && "
            "document.body.getAttribute('data-charts')"
        )
        charts = json.loads(browser.evaluate(CHARTS))
        texts = browser.evaluate(
            "JSON.stringify({cells: Array.from(document.querySelectorAll('td'))"
            ".map(function (c) { return c.textContent; }),"
            " svg: Array.from(document.querySelectorAll('svg text'))"
            ".map(function (t) { return t.textContent; })})"
        )
        scripts = browser.evaluate("document.scripts.length")
        shot = browser.screenshot(tmp_path / "report.png")
        requests, errors = browser.requests(), browser.errors()
    print(f"browser: {time.monotonic() - t0:.1f} s, screenshot {shot}")
    assert state == "drawn"
    assert errors == []
    # The page itself is the only request that is not inline data.
    assert [u for u in requests if not u.startswith(("data:", "blob:"))] == [report.as_uri()]
    assert len(charts) >= 12
    for chart in charts:
        assert chart["svg"] and chart["width"] > 100 and chart["height"] > 100, chart
        assert chart["traces"] > 0 and chart["title"], chart
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    shown = json.loads(texts)
    assert EVIL_MODEL in shown["cells"]  # the leaderboard table: as text
    assert EVIL_MODEL in shown["svg"] and EVIL_TASK in shown["svg"]  # legends and axes
    assert scripts == 6


def test_a_nights_page_reads_that_nights_rows_only(
    warehouse: Path, page: str, tmp_path: Path
) -> None:
    """An output of months of history is not read whole for one night's page: with every
    episode, comparison and category file of the other night gone, the latest night's page
    is the same (model scores and harness errors are shown across nights: read whole)."""
    import shutil

    copy = tmp_path / "out"
    shutil.copytree(warehouse, copy)
    for table in ("episode_scores", "model_comparisons", "category_scores", "regressions"):
        for night_files in (copy / table).glob(f"dump_date={NIGHTS[0]}"):
            shutil.rmtree(night_files)

    def undated(text: str) -> str:  # the page says when it was made and where OUT is
        when = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d"
        return re.sub(when, "(when)", text).replace(str(copy), str(warehouse))

    assert undated(render(read_warehouse(copy))) == undated(page)


def test_score_against_cost_is_drawn_per_model_from_the_standing(warehouse: Path) -> None:
    """The simulated dumps record usage: one point per model, at its standing's cost per
    episode that records usage (cost_usd / usage_episodes) and its score; the table lists
    the same."""
    from flows.present.report.page import build_sections
    from tests.tables import read_table

    _, sections = build_sections(read_warehouse(warehouse), None)
    cost = next(s for s in sections if s.key == "cost")
    assert len(cost.figures) == 1
    standing = read_table(warehouse, "standings").filter(pl.col("as_of") == NIGHTS[-1])
    want = {
        html.escape(r["model"], quote=False): (r["cost_usd"] / r["usage_episodes"], r["score"])
        for r in standing.to_dicts()
    }
    drawn = {t.name: (t.x[0], t.y[0]) for t in cost.figures[0].data}
    assert drawn == want
    assert cost.figures[0].layout.xaxis.type == "log"
    assert cost.after.count("<tr>") == 1 + len(want)  # the header and a row per model
