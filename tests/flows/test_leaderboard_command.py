"""``cogscore leaderboard``: the standing of an existing output, overall or of one category,
without scoring: the score command's leaderboard (the same renderer, the same lines), or the
rows of ``standings`` / ``category_standings`` as CSV or JSON; as a run left the tables
(``--as-of``); OUT read, nothing written. And the leaderboard per category a run prints."""

from __future__ import annotations

import io
import itertools
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.present.ranking import SCOPES
from schemas.contract import Category
from tests.tables import read_table

EXAMPLE_DUMP = Path(__file__).parents[2] / "examples" / "dump"


def cli(*args: str | Path, code: int = 0) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.stdout


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The example dump's two nights scored: OUT, and what the score command printed."""
    root = tmp_path_factory.mktemp("leaderboard")
    printed = cli("score", EXAMPLE_DUMP, "--out", root / "out", "--engine", "local")
    return root / "out", printed


def files_of(out: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in out.rglob("*")}


def latest(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("as_of") == frame["as_of"].max())


def test_a_run_prints_each_categorys_leaderboard_after_the_overall_one(
    scored: tuple[Path, str],
) -> None:
    out, printed = scored
    categories = latest(read_table(out, "category_standings"))
    titles = [line for line in printed.splitlines() if "score: the mean of its task scores" in line]
    assert [t.split(" ")[0] for t in titles] == [str(c) for c in Category]
    for category in Category:
        rows = categories.filter(category=category).sort("rank", "model")
        section = printed.split(f"{category} (", 1)[1].splitlines()[3:]  # title, header, rule
        table = itertools.takewhile(lambda line: line.startswith(" "), section)
        shown = [line.split()[:2] for line in table if line.split()[0].isdigit()]
        assert shown == [
            [str(rank), model] for rank, model in rows.select("rank", "model").iter_rows()
        ]


def test_the_table_is_what_the_score_command_printed(scored: tuple[Path, str]) -> None:
    out, printed = scored
    before = files_of(out)
    overall = cli("leaderboard", out, "--format", "table")
    assert overall.strip() and overall.strip() in printed  # the same lines, the same renderer
    assert "associative_learning (" not in overall  # the overall one alone
    board = cli("leaderboard", out, "--scope", "runtime_rl", "--format", "table")
    table = board.split("\n", 1)[1].strip()  # after its title line
    assert table.startswith("runtime_rl (") and table in printed
    assert files_of(out) == before  # nothing written


@pytest.mark.parametrize("scope", SCOPES)
def test_csv_and_json_are_the_standings_rows_in_rank_order(
    scored: tuple[Path, str], scope: str
) -> None:
    out, _ = scored
    if scope == "overall":
        want = latest(read_table(out, "standings")).sort("ranked_among", "rank", "model")
    else:
        rows = latest(read_table(out, "category_standings")).filter(category=scope)
        want = rows.sort("rank", "model")
    as_csv = pl.read_csv(io.StringIO(cli("leaderboard", out, "--scope", scope)))  # piped: CSV
    assert as_csv.select("model", "rank", "rank_low", "rank_high").rows() == (
        want.select("model", "rank", "rank_low", "rank_high").rows()
    )
    as_json = json.loads(cli("leaderboard", out, "--scope", scope, "--format", "json"))
    assert [(r["model"], r["score"]) for r in as_json] == want.select("model", "score").rows()


def test_as_of_shows_the_tables_as_that_run_left_them(tmp_path: Path) -> None:
    dump, out = tmp_path / "dump", tmp_path / "out"
    shutil.copytree(EXAMPLE_DUMP, dump)
    shutil.rmtree(dump / "dump_date=2026-12-01")
    cli("nightly", dump, "--out", out, "--engine", "local")
    first = json.loads(cli("history", out, "--json"))[0]["run_id"]
    then = cli("leaderboard", out, "--format", "json")
    shutil.copytree(EXAMPLE_DUMP / "dump_date=2026-12-01", dump / "dump_date=2026-12-01")
    cli("nightly", dump, "--out", out, "--engine", "local")
    now = cli("leaderboard", out, "--format", "json")
    assert {r["as_of"] for r in json.loads(then)} == {"2026-11-30"}
    assert {r["as_of"] for r in json.loads(now)} == {"2026-12-01"}
    assert cli("leaderboard", out, "--format", "json", "--as-of", first) == then


def test_category_rows_an_earlier_cogscore_wrote_show_no_rank() -> None:
    """Rows written before categories were ranked read their ranks as null (``conform``):
    their leaderboard lists the models by score, each rank ``-``."""
    from flows.present.leaderboard import category_table
    from flows.store.catalog import conform, empty_table

    given = {"model": ["low", "high"], "category": ["runtime_rl"] * 2, "score": [0.2, 0.9]}
    model = empty_table("category_standings").drop("rank", "rank_low", "rank_high")
    old = pl.DataFrame({c: given.get(c, [None] * 2) for c in model.columns}, schema=model.schema)
    read = conform("category_standings", old.lazy()).collect()
    assert read["rank"].null_count() == 2
    lines = category_table(read, 0.95, width=100)
    assert [line.split()[:2] for line in lines[2:]] == [["-", "high"], ["-", "low"]]
