"""Issue 47's report, as an operator read it on the real benchmark: captions name the table
each section draws, one legend entry per model across nights on a date axis, no "-0.000",
the cost chart's names in a legend, coverage groups named where the ranks restart, and
tables that keep to the page with no name broken inside a word (drawn in Chromium)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from flows import runs
from flows.importers.scores import import_scores
from flows.present.report import read_warehouse, render
from flows.present.report.nights import over_time_section
from flows.present.report.page import build_sections
from flows.present.report.sections import comparisons_section, cost_section
from schemas.views import View
from tests.report.browser import Browser, find_chromium

# Names as long as the real benchmark's: display names and provider slugs.
LONG_NAMES = (
    "Gemini 3.1 Flash-Lite Preview",
    "Qwen 3 Next 80B Thinking",
    "anthropic/claude-haiku-4-5@20251001",
    "openai/gpt-5.4-mini-2026-03-17",
    "qwen/qwen3-next-80b-a3b-thinking",
    "google/gemini-3.1-pro-preview",
    "deepseek-ai/deepseek-v3.2",
    "anthropic/claude-sonnet-4-6@default",
    "Claude Sonnet 4.6",
    "Gemma 4 26B A4B",
    "Qwen 3 Next 80B Instruct",
    "GPT-5.4 nano",
    "openai/gpt-5.4-nano-2026-03-17",
    "qwen/qwen3-next-80b-a3b-instruct",
)
RL_ONLY = ("rl-only/a", "rl-only/b")  # a second coverage group


def _rows() -> list[tuple[str, str, str, str, float]]:
    """14 models on three associative tasks the first night and two runtime RL tasks the
    second (their coverage grows: another formula_versions, the same versions), and two
    models on runtime RL alone the second night."""
    rows = []
    for i, model in enumerate(LONG_NAMES):
        for t in range(3):
            rows.append(
                ("2026-04-09", model, f"a{t}", "associative_learning", (i * 7 + t) % 10 / 9)
            )
        for t in range(2):
            rows.append(("2026-04-12", model, f"r{t}", "runtime_rl", (i * 3 + t) % 10 / 9))
    for i, model in enumerate(RL_ONLY):
        rows += [("2026-04-12", model, f"r{t}", "runtime_rl", (i + t) / 3) for t in range(2)]
    return rows


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("presentation")
    table = root / "scores.csv"
    pl.DataFrame(
        _rows(), schema=["dump_date", "model", "task", "category", "score"], orient="row"
    ).write_csv(table)
    import_scores(table, root / "dump")
    runs.score(root / "dump", root / "out")
    return root / "out"


def test_captions_name_the_tables_each_section_draws(out: Path) -> None:
    wh = read_warehouse(out)
    names = {
        View.STANDING: ("standing_comparisons", "category_standings"),
        View.NIGHT: ("model_comparisons", "category_scores"),
    }
    for view, (comparisons, categories) in names.items():
        (other_comparisons, other_categories) = names[
            View.NIGHT if view is View.STANDING else View.STANDING
        ]
        by_key = {s.key: s for s in build_sections(wh, None, view)[1]}
        for key in ("leaderboard", "comparisons"):
            assert f"<code>{comparisons}</code>" in by_key[key].text, (view, key)
            assert other_comparisons not in by_key[key].text, (view, key)
        assert f"<code>{categories}</code>" in by_key["profile"].text, view
        assert other_categories not in by_key["profile"].text, view


def test_across_nights_each_model_is_one_legend_entry_on_a_date_axis(out: Path) -> None:
    """Every model's coverage grows on the second night (another formula_versions, the same
    versions): still one line and one legend entry per model, on a date axis."""
    by_key = {s.key: s for s in build_sections(read_warehouse(out), None)[1]}
    for key in ("standings", "nights"):
        (figure,) = by_key[key].figures
        names = [trace.name for trace in figure.data]
        assert len(names) == len(set(names)), (key, names)
        assert figure.layout.xaxis.type == "date"
    standings = by_key["standings"].figures[0]
    assert len(standings.data) == len(LONG_NAMES) + len(RL_ONLY)
    for trace in standings.data:
        assert None not in trace.x  # no version changed: no gap


def test_a_line_breaks_where_a_categorys_formula_version_changes() -> None:
    history = pl.DataFrame(
        {
            "dump_date": ["2026-04-01", "2026-04-02", "2026-04-05", "2026-04-09"],
            "model": ["m"] * 4,
            "score": [0.5, 0.6, 0.7, 0.8],
            "ci_low": [0.4, None, 0.6, 0.7],
            "ci_high": [0.6, None, 0.8, 0.9],
            "rank": [1] * 4,
            "formula_versions": ["a=v1", "a=v1,b=v2", "a=v3,b=v2", "a=v3"],
        }
    )
    section = over_time_section(history, {"m": "#000"}, {}, {"2026-04-05": "a=v3"})
    (trace,) = section.figures[0].data
    assert list(trace.x) == ["2026-04-01", "2026-04-02", None, "2026-04-05", "2026-04-09"]
    assert list(trace.y) == [0.5, 0.6, None, 0.7, 0.8]
    assert list(trace.marker.symbol) == ["circle", "circle", "circle", "x", "circle"]


def _pairs(diff: float) -> pl.DataFrame:
    row = {
        "ci_low": None,
        "ci_high": None,
        "p_holm": None,
        "verdict": "unresolved",
        "paired": "none",
        "design": "none",
        "p_wilcoxon": None,
        "n_tasks_a_better": 0,
        "n_tasks_b_better": 0,
    }
    return pl.DataFrame(
        [
            {"model_a": "x", "model_b": "y", "diff": diff, **row},
            {"model_a": "y", "model_b": "x", "diff": -diff, **row},
        ]
    )


def test_a_difference_of_zero_is_never_minus_zero() -> None:
    board = pl.DataFrame({"model": ["x", "y"]})
    section = comparisons_section(_pairs(0.0), board, "2026-04-12", 0.95)
    assert "≈ 0.000" in section.after and "-0.000" not in section.after
    assert "-0.000" not in json.dumps(section.figures[0].data[0].text)
    tiny = comparisons_section(_pairs(-0.0002), board, "2026-04-12", 0.95)
    assert "≈ -0.0002" in tiny.after and "≈ +0.0002" in tiny.after


def test_the_pairwise_tables_columns_are_numbered_as_its_rows(out: Path) -> None:
    by_key = {s.key: s for s in build_sections(read_warehouse(out), None)[1]}
    table = by_key["comparisons"].after
    for n in range(1, len(LONG_NAMES) + 1):
        assert f">{n}</th>" in table
    assert "title='Gemini 3.1 Flash-Lite Preview'" in table


def test_the_cost_chart_names_its_models_in_a_legend() -> None:
    costs = pl.DataFrame(
        {
            "model": ["a/long-name-one", "a/long-name-two"],
            "score": [0.0, 0.0],
            "ci_low": [None, None],
            "ci_high": [None, None],
            "n_episodes": [1, 1],
            "usage_episodes": [1, 1],
            "usage_incomplete": [0, 0],
            "cost_usd": [0.0016, 0.0021],
            "cost_usd_per_episode": [0.0016, 0.0021],
            "input_tokens_per_episode": [10.0, 10.0],
            "output_tokens_per_episode": [1.0, 1.0],
            "latency_ms_per_episode": [1.0, 1.0],
            "calls_per_episode": [8.0, 24.0],
            "wall_ms_per_episode": [1_824_800.0, None],
        },
        schema_overrides={"ci_low": pl.Float64, "ci_high": pl.Float64},
    )
    section = cost_section(costs, {}, "2026-04-12", 0.95)
    (figure,) = section.figures
    assert "<th>model calls per episode</th>" in section.after
    assert "<td>8.0</td>" in section.after and "<td>24.0</td>" in section.after
    assert "<th>wall seconds per episode</th>" in section.after
    assert "<td>1,824.8</td>" in section.after  # the wall time in seconds; none: a dash
    assert [t.mode for t in figure.data] == ["markers", "markers"]  # no labels to overlap
    assert figure.layout.showlegend is not False
    assert figure.layout.yaxis.range[0] < 0  # a point at 0 is drawn whole


def test_the_leaderboard_names_each_coverage_group_where_its_ranks_restart(out: Path) -> None:
    board = build_sections(read_warehouse(out), None)[1][0]
    assert board.after.count("<tr class='group'>") == 2
    assert "coverage group: all 6" not in board.after
    assert "runtime rl only (2 models); ranks count within it" in board.after
    assert "A <b>coverage group</b> is the models with results in the same categories" in (
        board.text
    )


WORDS_BROKEN = r"""JSON.stringify((function () {
  var broken = [];
  var cells = document.querySelectorAll(
    "table.matrix thead th, table.pairs th, table.board td.name");
  cells.forEach(function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), top = null, prev = "";
    while (walker.nextNode()) {
      var node = walker.currentNode;
      for (var i = 0; i < node.length; i++) {
        var ch = node.data[i], range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        var boxes = range.getClientRects();
        if (ch === " " || !boxes.length) { prev = ch; continue; }
        // A new line may start after a space, a hyphen or a "/", or at a "@": not elsewhere.
        if (top !== null && boxes[0].top > top + 2 && !/[ \-\/]/.test(prev) && ch !== "@") {
          broken.push(cell.textContent);
        }
        top = boxes[0].top;
        prev = ch;
      }
    }
  });
  return broken;
})())"""


def test_tables_keep_to_the_page_and_break_no_name_inside_a_word(out: Path, tmp_path: Path) -> None:
    if find_chromium() is None:
        pytest.fail("chromium is not installed: `make browser` installs it")
    page = tmp_path / "report.html"
    page.write_text(render(read_warehouse(out)), encoding="utf-8")
    with Browser(tmp_path / "profile", width=1400, height=1000) as browser:
        browser.open(page.as_uri())
        browser.wait_until("document.body.getAttribute('data-charts') !== 'pending'")
        widths = json.loads(
            browser.evaluate(
                "JSON.stringify({body: document.body.clientWidth, tables: Array.from("
                "document.querySelectorAll('section > table')).map(function (t) {"
                "return [t.closest('section').id, t.getBoundingClientRect().width]; })})"
            )
        )
        broken = json.loads(browser.evaluate(WORDS_BROKEN))
        shot = browser.screenshot(tmp_path / "report.png")
    print(f"screenshot {shot}: tables {widths}")
    wide = [(key, width) for key, width in widths["tables"] if width > widths["body"]]
    assert wide == []
    assert "comparisons" in {key for key, _ in widths["tables"]}
    assert broken == []
