"""The report of a harness benchmark run on different days: its first sections show the
benchmark as it stands, the nights run across in date order, and categories with nothing to
draw say so instead of an empty chart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from flows import runs
from flows.importers.scores import import_scores
from flows.present.report import read_warehouse, render
from flows.present.report.page import build_sections
from schemas.views import View
from tests.tables import read_table

# Nights given out of date order in the table: the page must put them in order.
ROWS = [
    ("2026-04-12", "m1", "t1", "runtime_rl", 0.5),
    ("2026-04-09", "m1", "t2", "associative_learning", 0.25),
    ("2026-04-09", "m2", "t2", "associative_learning", 0.75),
    ("2026-04-16", "m2", "t1", "runtime_rl", 1.0),
    ("2026-04-12", "m2", "t2", "associative_learning", 0.5),
]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("standings-page")
    table = root / "scores.csv"
    pl.DataFrame(
        ROWS, schema=["dump_date", "model", "task", "category", "score"], orient="row"
    ).write_csv(table)
    import_scores(table, root / "dump")
    runs.score(root / "dump", root / "out")
    return root / "out"


def _figures(page: str) -> dict[str, dict]:
    blob = re.search(r"id='cogscore-figures'>(.*?)</script>", page, re.S)
    assert blob is not None
    return json.loads(blob.group(1).replace("\\u003c", "<").replace("\\u003e", ">"))


def test_the_leaderboard_is_the_standing_and_the_night_one_option_away(out: Path) -> None:
    wh = read_warehouse(out)
    _, sections = build_sections(wh, None)
    keys = [s.key for s in sections]
    assert keys[:5] == ["leaderboard", "category-leaderboards", "results", "comparisons", "changes"]
    assert "standings" in keys and "nights" in keys
    board = sections[0]
    # Both models stand as of the last night, though only m2 ran that night.
    assert "as it stands as of 2026-04-16" in board.text
    assert ">m1<" in board.after and ">m2<" in board.after
    _, night = build_sections(wh, None, View.NIGHT)
    assert ">m1<" not in night[0].after and "changes" not in [s.key for s in night]


def test_each_category_has_its_own_leaderboard_as_it_stands(out: Path) -> None:
    """After the leaderboard, each category's (``category_standings`` as of the last night):
    its models in rank order with their rank intervals; the night's own one option away."""
    wh = read_warehouse(out)
    by_key = {s.key: s for s in build_sections(wh, None)[1]}
    shown = by_key["category-leaderboards"].after
    rows = read_table(out, "category_standings").filter(as_of="2026-04-16")
    assert set(rows["category"]) == {"associative_learning", "runtime_rl"}
    for category in ("associative_learning", "runtime_rl"):
        part = shown.split(f"<h3>{category.replace('_', ' ')}</h3>", 1)[1].split("</table>")[0]
        got = re.findall(r"<tr><td>(\d+)</td><td>(\d+)–(\d+)</td><td>([^<]+)</td>", part)
        want = rows.filter(category=category).sort("rank", "model")
        assert got == [
            (str(r), str(low), str(high), m)
            for r, low, high, m in want.select("rank", "rank_low", "rank_high", "model").rows()
        ]
    night = {s.key: s for s in build_sections(wh, None, View.NIGHT)[1]}
    assert "of the night 2026-04-16 alone" in night["category-leaderboards"].text
    assert "associative learning" not in night["category-leaderboards"].after  # not run then


def test_the_nights_are_drawn_in_date_order(out: Path) -> None:
    figures = _figures(render(read_warehouse(out)))
    across = [
        f
        for f in figures.values()
        if "across" in json.dumps(f["layout"].get("title", "")).lower()
        or "each night" in json.dumps(f["layout"].get("title", ""))
    ]
    assert across, "no chart across nights"
    for figure in across:  # a date axis: in date order, the days between to scale
        assert figure["layout"]["xaxis"]["type"] == "date"
        for trace in figure["data"]:
            nights = [n for n in trace["x"] if n is not None]
            assert nights == sorted(nights) and set(nights) <= {night for night, *_ in ROWS}


def test_a_category_with_nothing_to_draw_says_so(out: Path) -> None:
    _, sections = build_sections(read_warehouse(out), None)
    by_key = {s.key: s for s in sections}
    for key in ("procedural", "runtime-rl", "examples"):  # reported scores: no components
        assert by_key[key].text.startswith("No data") and not by_key[key].figures
    # nor usage (contract 1.3): no score against cost
    assert by_key["cost"].text.startswith("No data") and not by_key["cost"].figures
