"""The report's Results section (``flows.present.report.results``): the model × task matrix of the
standing, which reproduces LearningBench's ``leaderboard_score_matrix.csv`` from its published
table, and whose every cell opens its episodes' explanation in the page, drawn in headless
Chromium: on the published table (1,890 imported scores), on the 13 real runs (12 episodes
with their transcripts), on a simulated dump (many episodes a cell, names and transcripts
holding markup) and on a synthetic benchmark of the real size with long transcripts, whose
page size and load time are measured here (``docs/simulator-and-report.md``)."""

from __future__ import annotations

import csv
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from flows import runs
from flows.importers.score_categories import CATEGORY_NAMES
from flows.importers.scores import import_scores
from flows.present.explain import Which, explain
from flows.present.report import read_warehouse, render
from flows.present.report.results import (
    CELL_EPISODES,
    CELL_MORE_IDS,
    EPISODE_MAX_CHARS,
    EPISODE_MIN_CHARS,
    EXPLANATIONS_BUDGET,
    FOLD_CHARS,
    ROW_COST,
    budget,
    fold,
)
from flows.store.output import Output
from schemas.views import View
from simulator import simulate
from tests.learningbench import LEADERBOARD, TASKS, scored_real_runs
from tests.report.browser import Browser, find_chromium
from tests.report.stress import MARKUP, MODELS, stress_dump
from tests.tables import read_table
from transforms.names import task_by_rule

EVIL_MODEL = "<script>alert(1)</script>\"q'"
EVIL_TASK = "<img src=x onerror=alert(2)>'t\""
EVIL_TEXT = "</script><script>alert(3)</script><img src=x onerror=alert(4)><!-- &amp;"
NIGHT = "2026-12-01"


def _json_script(page: str, element_id: str) -> Any:
    found = re.search(rf"id='{element_id}'>(.*?)</script>", page, re.S)
    assert found is not None, element_id
    return json.loads(found.group(1))  # \u003c and the like are JSON's own escapes


def matrix_of(page: str) -> dict[str, Any]:
    return dict(_json_script(page, "cogscore-matrix"))


def explanations_of(page: str) -> dict[str, Any]:
    return dict(_json_script(page, "cogscore-explanations"))


def _write(out: Path, target: Path, view: View = View.STANDING) -> tuple[Path, float]:
    t0 = time.perf_counter()
    page = render(read_warehouse(out), view=view)
    seconds = time.perf_counter() - t0
    target.write_text(page, encoding="utf-8")
    return target, seconds


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LearningBench's published table as it is (each score on the day it ran: ten
    nights), imported and scored: the report's standing is as of the last day."""
    root = tmp_path_factory.mktemp("published")
    done = import_scores(LEADERBOARD / "leaderboard_flat.csv", root / "dump", tasks=TASKS)
    assert done.rows_imported == 1890 and not done.rejected
    runs.score(root / "dump", root / "out")
    return root


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 13 real runs, imported (12 episodes: one run has no task file) and scored."""
    return scored_real_runs(tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated night (many episodes a cell), one model and one task renamed to markup
    and every message holding markup."""
    root = tmp_path_factory.mktemp("simulated")
    for path in simulate(root / "dump", date=NIGHT, episodes=400, seed=3):
        frame = pl.read_parquet(path).with_columns(
            pl.col("model").replace("random-xs", EVIL_MODEL),
            pl.col("task").replace("mastermind_classic", EVIL_TASK),
            pl.when(pl.col("kind") == "message")
            .then(pl.concat_str("content", pl.lit(EVIL_TEXT)))
            .otherwise(pl.col("content"))
            .alias("content"),
        )
        frame.write_parquet(path)
    runs.score(root / "dump", root / "out")
    return root


@pytest.fixture(scope="module")
def stress(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stress")
    stress_dump(root / "dump", NIGHT)
    runs.score(root / "dump", root / "out")
    return root


# --- the matrix against the published one ------------------------------------------------


def test_the_matrix_is_the_published_score_matrix(published: Path) -> None:
    """Values and layout read from ``leaderboard_score_matrix.csv``: every task and model,
    each score equal, the tasks grouped by category in the CSV's order (its three
    ``unknown`` tasks, uncategorised, last as there), the models in the published rank
    order."""
    matrix = matrix_of(render(read_warehouse(published / "out")))
    with (LEADERBOARD / "leaderboard_score_matrix.csv").open(newline="") as file:
        header, *rows = list(csv.reader(file))
    models = header[2:]
    assert len(rows) == 135 and len(models) == 14
    assert sorted(matrix["models"]) == sorted(models)
    # A task by the name cogscore shows it (its slug, - as _: the harness's name of it).
    assert sorted(matrix["tasks"]) == sorted(task_by_rule(row[0]) for row in rows)
    at = {task: r for r, task in enumerate(matrix["tasks"])}
    column = {model: c for c, model in enumerate(matrix["models"])}
    for task, category, *values in rows:
        r = at[task_by_rule(task)]
        assert matrix["categories"][r] == CATEGORY_NAMES[category], task
        for model, value in zip(models, values, strict=True):
            assert matrix["scores"][r][column[model]] == float(value), (task, model)
    # Grouped: each category's rows together, in the CSV's order of its tasks.
    categories = matrix["categories"]
    runs_of = [c for i, c in enumerate(categories) if i == 0 or categories[i - 1] != c]
    assert len(runs_of) == len(set(categories)) == 7
    assert runs_of == [CATEGORY_NAMES[c] for c in dict.fromkeys(r[1] for r in rows)]
    for category in set(categories):
        csv_order = [task_by_rule(t) for t, c, *_ in rows if CATEGORY_NAMES.get(c) == category]
        page_order = [t for t, c in zip(matrix["tasks"], categories, strict=True) if c == category]
        # By name, as the CSV orders its slugs: the names shown (- as _) order alike but
        # where a - met a digit (kripke2 before kripke_ as shown, after kripke- as published).
        assert page_order == sorted(page_order) and set(page_order) == set(csv_order)
    ranks = pl.read_csv(LEADERBOARD / "leaderboard_model_ranks.csv").sort("rank")
    assert matrix["models"] == ranks["model_name"].to_list()


def test_the_night_view_is_the_nights_own_task_scores(published: Path) -> None:
    wh = read_warehouse(published / "out")
    matrix = matrix_of(render(wh, view=View.NIGHT))
    tasks = read_table(published / "out", "task_scores").filter(
        pl.col("dump_date") == matrix["night"]
    )
    assert matrix["view"] == "night"
    cells = {
        (matrix["tasks"][r], model): score
        for r, row in enumerate(matrix["scores"])
        for model, score in zip(matrix["models"], row, strict=True)
        if score is not None
    }
    assert cells == {(r["task"], r["model"]): r["score"] for r in tasks.iter_rows(named=True)}


# --- every cell opens its episodes --------------------------------------------------------

OPEN_EVERY_CELL = """JSON.stringify(Array.from(document.querySelectorAll('#matrix td.score'))
  .map(function (td) {
    td.click();
    var panel = document.getElementById('explain-panel');
    var more = panel.textContent.match(/([0-9,]+) more episode\\(s\\)/);
    return {
      cell: [+td.getAttribute('data-r'), +td.getAttribute('data-c')],
      open: !panel.hidden && panel.getAttribute('data-cell'),
      more: more ? +more[1].replace(/,/g, '') : 0,
      commands: panel.querySelectorAll('.more pre.command').length,
      episodes: Array.from(panel.querySelectorAll('.episode[data-episode]')).map(function (e) {
        var items = e.querySelector('table.items');
        return {id: e.getAttribute('data-episode'),
                turns: e.querySelectorAll('div.turn').length,
                items: items ? items.tBodies[0].rows.length : 0,
                components: !!e.querySelector('table.components'),
                why: (e.querySelector('p.why') || {}).textContent || null,
                folded: e.querySelectorAll('.folded').length};
      })};
  }))"""


@pytest.fixture
def chromium() -> None:
    if find_chromium() is None:
        pytest.fail(
            "chromium is not installed: the report's browser test needs it "
            "(apt-get install -y chromium; .ci/run installs it)"
        )


def _loaded(browser: Browser, page: Path) -> float:
    """Open ``page``; the milliseconds until its charts and its matrix were drawn."""
    browser.open(page.as_uri(), timeout=120)
    browser.wait_until(
        "document.body.getAttribute('data-matrix') === 'drawn' && "
        "document.body.getAttribute('data-charts') !== 'pending'",
        timeout=120,
    )
    assert browser.evaluate("document.body.getAttribute('data-charts')") == "drawn"
    return float(browser.evaluate("Math.max(window.cogscoreChartsMs, window.cogscoreMatrixMs)"))


@pytest.fixture
def browser(chromium: None, tmp_path: Path) -> Iterator[Browser]:
    with Browser(tmp_path / "profile", width=1400, height=1000) as opened:
        yield opened


def _cells(out: Path) -> pl.DataFrame:
    """Each cell's episodes (the standing's cell: its model and task on its night)."""
    standing = read_table(out, "task_standings")
    latest = standing.filter(pl.col("as_of") == standing["as_of"].max())
    return (
        read_table(out, "episode_scores")
        .join(latest.select("model", "task", "dump_date"), on=["model", "task", "dump_date"])
        .group_by("model", "task")
        .agg(pl.col("episode_id").sort())
    )


def _opened(browser: Browser, page: Path, out: Path) -> tuple[list[dict[str, Any]], float]:
    """Every cell clicked: what its panel showed, checked against the cell's episodes."""
    load_ms = _loaded(browser, page)
    shown = json.loads(browser.evaluate(OPEN_EVERY_CELL))
    matrix = matrix_of(page.read_text(encoding="utf-8"))
    expected = {(r["model"], r["task"]): r["episode_id"] for r in _cells(out).iter_rows(named=True)}
    assert len(shown) == len(expected) > 0  # a cell for every result of the standing
    for cell in shown:
        r, c = cell["cell"]
        ids = expected[(matrix["models"][c], matrix["tasks"][r])]
        assert cell["open"] == f"{r},{c}"
        assert [e["id"] for e in cell["episodes"]] == ids[:CELL_EPISODES]
        assert cell["more"] == max(0, len(ids) - CELL_EPISODES)
        listed = min(CELL_MORE_IDS, max(0, len(ids) - CELL_EPISODES))
        assert cell["commands"] == listed  # one explain command per episode listed
    assert browser.errors() == []
    return shown, load_ms


def test_every_cell_of_the_real_runs_opens_its_transcript(
    real: Path, browser: Browser, tmp_path: Path
) -> None:
    page, seconds = _write(real / "out", tmp_path / "real.html")
    shown, load_ms = _opened(browser, page, real / "out")
    output = Output.at(real / "out")
    assert len(shown) == 12
    for cell in shown:
        (episode,) = cell["episodes"]
        found = explain(output, Which(episode["id"]))
        assert episode["why"] is None and episode["components"]
        assert episode["turns"] == len(found["turns"])  # every turn (long ones folded)
        assert episode["items"] == len(found["items"])
    assert any(e["folded"] for cell in shown for e in cell["episodes"])  # a 114 kB turn
    size = page.stat().st_size / 1e6
    print(f"real runs: page {size:.1f} MB, written in {seconds:.1f} s, drawn in {load_ms:.0f} ms")
    assert size < 10  # its load time is printed, never asserted (a loaded machine is slow)


def test_every_cell_of_the_published_table_says_it_has_no_transcript(
    published: Path, browser: Browser, tmp_path: Path
) -> None:
    page, seconds = _write(published / "out", tmp_path / "published.html")
    shown, load_ms = _opened(browser, page, published / "out")
    assert len(shown) == 1890
    for cell in shown:
        (episode,) = cell["episodes"]
        assert episode["why"] and "imported score" in episode["why"] and not episode["turns"]
    size = page.stat().st_size / 1e6
    print(f"published: page {size:.1f} MB, written in {seconds:.1f} s, drawn in {load_ms:.0f} ms")
    assert size < 10  # its load time is printed, never asserted (a loaded machine is slow)


def test_a_cell_of_many_episodes_shows_a_few_and_names_the_rest(
    simulated: Path, browser: Browser, tmp_path: Path
) -> None:
    page, _ = _write(simulated / "out", tmp_path / "simulated.html")
    shown, _ = _opened(browser, page, simulated / "out")
    assert max(cell["more"] for cell in shown) > CELL_MORE_IDS  # the sql command too
    assert all(len(cell["episodes"]) == CELL_EPISODES for cell in shown)


# --- names and transcripts are text ---------------------------------------------------------


def test_names_and_transcripts_with_markup_are_shown_as_text(
    simulated: Path, browser: Browser, tmp_path: Path
) -> None:
    page, _ = _write(simulated / "out", tmp_path / "simulated.html")
    text = page.read_text(encoding="utf-8")
    for evil in (EVIL_MODEL, EVIL_TASK, EVIL_TEXT, "alert(3)</script>", "<img src=x"):
        assert evil not in text
    # The page's own scripts only: plotly.js, the figures, the matrix, the explanations and
    # the two that draw.
    assert len(re.findall(r"<script\b", text, flags=re.IGNORECASE)) == 6
    assert len(re.findall(r"</script", text, flags=re.IGNORECASE)) == 6
    _loaded(browser, page)
    matrix = matrix_of(text)
    r, c = matrix["tasks"].index(EVIL_TASK), matrix["models"].index(EVIL_MODEL)
    browser.evaluate(f'document.querySelector(\'td[data-r="{r}"][data-c="{c}"]\').click()')
    panel = json.loads(
        browser.evaluate(
            "JSON.stringify({text: document.getElementById('explain-panel').innerText,"
            " markup: document.querySelectorAll('#explain-panel img, #explain-panel script,"
            " #explain-panel b').length, scripts: document.scripts.length,"
            " images: document.images.length,"
            " heads: Array.from(document.querySelectorAll('table.matrix th'))"
            ".map(function (th) { return th.textContent; }),"
            " tasks: Array.from(document.querySelectorAll('table.matrix td.task'))"
            ".map(function (td) { return td.textContent; })})"
        )
    )
    assert f"{EVIL_MODEL} on {EVIL_TASK}" in panel["text"]
    assert EVIL_TEXT in panel["text"]  # a message's content, as written
    assert panel["markup"] == 0 and panel["images"] == 0 and panel["scripts"] == 6
    assert EVIL_MODEL in panel["heads"] and EVIL_TASK in panel["tasks"]
    assert browser.errors() == []  # no alert opened, nothing failed


# --- transcripts that cannot be read -------------------------------------------------------


def test_a_transcript_gone_or_changed_is_said_and_the_page_written(real: Path) -> None:
    episodes = read_table(real / "out", "episode_scores").sort("episode_id")
    changed, gone = episodes.row(0, named=True), episodes.row(1, named=True)
    changed_file, gone_file = real / "dump" / changed["file"], real / "dump" / gone["file"]
    saved = changed_file.read_bytes()
    moved = gone_file.with_name(f".{gone_file.name}.away")
    try:
        changed_file.write_bytes(saved + b"\0")
        gone_file.rename(moved)
        found = explanations_of(render(read_warehouse(real / "out")))
    finally:
        changed_file.write_bytes(saved)
        moved.rename(gone_file)
    assert "changed since it was scored" in found[changed["episode_id"]]["transcript"]
    assert "cannot be read" in found[gone["episode_id"]]["transcript"]
    for episode_id in episodes["episode_id"][2:]:
        assert found[episode_id]["transcript"] is None and found[episode_id]["turns"]
    assert found[changed["episode_id"]]["head"]["score"] == changed["score"]


# --- the size of the real benchmark, with long transcripts ----------------------------------


def test_the_real_size_with_long_transcripts_is_folded_within_the_budget(
    stress: Path, browser: Browser, tmp_path: Path
) -> None:
    page, seconds = _write(stress / "out", tmp_path / "stress.html")
    text = page.read_text(encoding="utf-8")
    matrix, found = matrix_of(text), explanations_of(text)
    assert len(matrix["models"]) == len(MODELS) and len(matrix["tasks"]) == 135
    assert len(found) == 1890
    room = budget(len(found))
    embedded = [x for x in found.values() if x["transcript"] is None]
    assert len(embedded) == min(len(found), room.episodes)
    spent = 0
    for x in embedded:
        turns, items = x["turns"], x["items"]
        assert turns and all(len(t["content"] or "") <= FOLD_CHARS for t in turns)
        kept = sum(len(t["content"] or "") + len(t["expected"] or "") + ROW_COST for t in turns)
        kept += sum(len(i["expected"]) + len(i["answer"] or "") + ROW_COST for i in items)
        assert kept <= room.share
        assert x["left"]["turns_total"] == len(turns) + x["left"]["turns_left"]
        spent += kept
    assert spent <= EXPLANATIONS_BUDGET
    prompts = [t for x in embedded for t in x["turns"] if t["role"] == "user"]
    assert prompts and all(t["content_folded"] > 50_000 for t in prompts)  # the long prompt
    shown, load_ms = _opened(browser, page, stress / "out")
    assert all(e["folded"] for cell in shown for e in cell["episodes"])
    size = page.stat().st_size / 1e6
    print(f"stress: page {size:.1f} MB, written in {seconds:.1f} s, drawn in {load_ms:.0f} ms")
    assert MARKUP not in text
    assert size < 40  # times printed, never asserted


# --- the budget and the folding, alone -------------------------------------------------------


def test_the_budget_shares_the_page_among_the_episodes() -> None:
    for n in (1, 12, 1_890, 4_000, 5_670, 100_000):
        room = budget(n)
        assert EPISODE_MIN_CHARS <= room.share <= EPISODE_MAX_CHARS
        assert room.share * room.episodes <= EXPLANATIONS_BUDGET
        if n * EPISODE_MIN_CHARS <= EXPLANATIONS_BUDGET:
            assert room.episodes >= n  # every episode gets its share
        else:
            assert room.episodes < n and room.share == EPISODE_MIN_CHARS


def test_folding_keeps_the_first_characters_items_first_then_turns_in_order() -> None:
    long = "x" * (FOLD_CHARS + 250)
    turns = pl.DataFrame(
        {
            "episode_id": ["a"] * 4 + ["b"],
            "turn": [0, 1, 2, 3, 0],
            "role": ["user"] * 5,
            "kind": ["message"] * 5,
            "content": [long, "short", long, long, None],
            "expected": pl.Series([None] * 5, dtype=pl.String),
        }
    )
    items = pl.DataFrame(
        {"episode_id": ["a"], "item_id": ["1"], "expected": [long], "answer": ["no"]}
    )
    item_cost = FOLD_CHARS + 2 + ROW_COST
    share = item_cost + (FOLD_CHARS + ROW_COST) + (5 + ROW_COST)  # the item, two turns
    kept, kept_items, left = fold(turns, items, share)
    a = kept.filter(pl.col("episode_id") == "a")
    assert a["turn"].to_list() == [0, 1]  # then the share is spent
    assert a["content"].to_list() == ["x" * FOLD_CHARS, "short"]
    assert a["content_folded"].to_list() == [250, 0]
    assert kept_items["expected"].to_list() == ["x" * FOLD_CHARS]
    assert kept_items["expected_folded"].to_list() == [250]
    assert kept.filter(pl.col("episode_id") == "b")["turn"].to_list() == [0]
    counts = {r["episode_id"]: r for r in left.iter_rows(named=True)}
    assert (counts["a"]["turns_total"], counts["a"]["turns_left"]) == (4, 2)
    assert counts["a"]["chars_left"] == 2 * len(long)
    assert counts["a"]["items_left"] == 0 and counts["b"]["items_total"] is None


# --- sorting and folding the matrix ---------------------------------------------------------

SORTED = """JSON.stringify(Array.from(document.querySelectorAll('table.matrix tbody'))
  .map(function (body) {
    return Array.from(body.querySelectorAll('tr.task-row')).map(function (tr) {
      var cell = tr.cells[COLUMN];
      return {task: tr.cells[0].textContent, score: cell.textContent,
              shown: tr.offsetParent !== null};
    });
  }))"""


def test_the_matrix_sorts_by_any_column_and_folds_a_category(
    published: Path, browser: Browser, tmp_path: Path
) -> None:
    page, _ = _write(published / "out", tmp_path / "published.html")
    _loaded(browser, page)

    def rows(column: int) -> list[list[dict[str, Any]]]:
        return list(json.loads(browser.evaluate(SORTED.replace("COLUMN", str(column)))))

    def scores(group: list[dict[str, Any]]) -> list[float]:
        return [float(r["score"]) for r in group if r["score"] != "-"]

    browser.evaluate("document.querySelectorAll('table.matrix thead th')[3].click()")
    for group in rows(3):
        assert scores(group) == sorted(scores(group), reverse=True)  # best first
    browser.evaluate("document.querySelectorAll('table.matrix thead th')[3].click()")
    for group in rows(3):
        assert scores(group) == sorted(scores(group))
    browser.evaluate("document.querySelectorAll('table.matrix thead th')[0].click()")
    for group in rows(0):
        assert [r["task"] for r in group] == sorted(r["task"] for r in group)
    browser.evaluate("document.querySelector('table.matrix tbody th.category').click()")
    first, *others = rows(0)
    assert not any(r["shown"] for r in first) and all(r["shown"] for g in others for r in g)
    assert browser.errors() == []
