"""Contract 1.4 end to end: a task its table puts in none of the six categories
(`uncategorised`) counts in its model's overall score and in no category, in every table,
scope and view; a model all of whose tasks are in none is scored all the same. Every
expected value is computed here from the table imported."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.importers.scores import import_scores
from schemas.contract import UNCATEGORISED
from tests.tables import read_table

FIRST, SECOND = "2026-12-01", "2026-12-02"
# Three models on two associative, two runtime RL and two `unknown` tasks, a fourth on the
# unknown tasks alone; on the second night m1 re-runs an unknown task only.
SCORES = {
    "m1": [0.9, 0.8, 0.7, 0.95, 0.6, 0.4],
    "m2": [0.5, 0.45, 0.4, 0.6, 0.9, 0.85],
    "m3": [0.2, 0.3, 0.25, 0.1, 0.05, 0.3],
}
TASKS = [
    ("a1", "assoc-learning"),
    ("a2", "assoc-learning"),
    ("r1", "rf-learning"),
    ("r2", "rf-learning"),
    ("u1", "unknown"),
    ("u2", "unknown"),
]


def table() -> pl.DataFrame:
    rows = [
        (model, task, category, score, FIRST)
        for model, scores in SCORES.items()
        for (task, category), score in zip(TASKS, scores, strict=True)
    ]
    rows += [("solo", "u1", "unknown", 0.5, FIRST), ("solo", "u2", "unknown", 0.7, FIRST)]
    rows += [("m1", "u1", "unknown", 0.1, SECOND)]
    return pl.DataFrame(
        rows, schema=["model", "task", "category", "score", "dump_date"], orient="row"
    )


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("uncategorised")
    table().write_csv(root / "scores.csv")
    done = import_scores(root / "scores.csv", root / "dump")
    assert done.rows_imported == table().height and not done.rejected
    result = CliRunner().invoke(
        app, ["score", str(root / "dump"), "--out", str(root / "out"), "--engine", "local"]
    )
    assert result.exit_code == 0, result.output
    return root / "out"


def first_night(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("dump_date") == FIRST)


def test_the_overall_averages_every_task_and_no_category_holds_the_uncategorised(
    scored: Path,
) -> None:
    published = table().filter(pl.col("dump_date") == FIRST)
    overall = published.group_by("model").agg(pl.col("score").mean(), pl.len().alias("n"))
    models = first_night(read_table(scored, "model_scores")).join(overall, on="model")
    assert models.height == 4
    assert (models["score"] - models["score_right"]).abs().max() < 1e-12  # type: ignore[operator]
    assert (models["n_tasks"] == models["n"]).all()
    in_categories = (
        published.filter(pl.col("category") != "unknown")
        .group_by("model", "category")
        .agg(pl.col("score").mean())
        .group_by("model")
        .agg(pl.col("score").mean().alias("by_category"))
    )
    ranked = models.filter(pl.col("model") != "solo").join(in_categories, on="model")
    assert (ranked["score_by_category"] - ranked["by_category"]).abs().max() < 1e-12  # type: ignore[operator]
    tasks = first_night(read_table(scored, "task_scores"))
    assert set(tasks.filter(category=UNCATEGORISED)["task"]) == {"u1", "u2"}
    for name in ("category_scores", "category_standings", "category_health"):
        assert UNCATEGORISED not in set(read_table(scored, name)["category"]), name
    assert set(read_table(scored, "category_scores")["category"]) == {
        "associative_learning",
        "runtime_rl",
    }
    assert UNCATEGORISED in set(read_table(scored, "task_health")["category"])


def test_a_model_whose_every_task_is_in_no_category_is_ranked_among_its_like(
    scored: Path,
) -> None:
    solo = first_night(read_table(scored, "model_scores")).filter(model="solo").row(0, named=True)
    assert (solo["score"], solo["n_tasks"]) == (pytest.approx(0.6), 2)
    assert (solo["categories_covered"], solo["ranked_among"]) == (0, "")
    assert solo["score_by_category"] is None and solo["rank_by_category"] is None
    assert (solo["rank"], solo["n_ranked"]) == (1, 1)  # compared with no model of other coverage


def test_no_scope_is_the_uncategorised_one_and_the_overall_pairs_every_task(
    scored: Path,
) -> None:
    for name in ("model_comparisons", "standing_comparisons", "regressions", "standing_changes"):
        scopes = set(read_table(scored, name)["scope"])
        assert UNCATEGORISED not in scopes, (name, scopes)
    pairs = first_night(read_table(scored, "model_comparisons"))
    row = pairs.filter(scope="overall", model_a="m1", model_b="m2").row(0, named=True)
    assert row["n_tasks"] == len(TASKS)
    by_category = pairs.filter(scope="overall_by_category", model_a="m1", model_b="m2")
    assert by_category["n_tasks"].item() == len(TASKS) - 2  # the categories' tasks alone
    # Tasks won: every task overall; the categories' tasks alone by category.
    pairs_of = zip(SCORES["m1"], SCORES["m2"], TASKS, strict=True)
    won = [(a > b, a < b, category == "unknown") for a, b, (_, category) in pairs_of]
    assert (row["n_tasks_a_better"], row["n_tasks_b_better"]) == (
        sum(a for a, _, _ in won),
        sum(b for _, b, _ in won),
    )
    assert by_category.select("n_tasks_a_better", "n_tasks_b_better").row(0) == (
        sum(a for a, _, u in won if not u),
        sum(b for _, b, u in won if not u),
    )


def test_a_rerun_of_a_task_in_no_category_moves_the_overall_standing_alone(scored: Path) -> None:
    changes = read_table(scored, "standing_changes").filter(as_of=SECOND, model="m1")
    assert changes["scope"].to_list() == ["overall"]
    assert changes["moved_by"].item().startswith("u1 ")
    categories = read_table(scored, "category_standings").filter(as_of=SECOND, model="m1")
    before = read_table(scored, "category_standings").filter(as_of=FIRST, model="m1")
    assert categories.sort("category")["score"].equals(before.sort("category")["score"])


def test_the_leaderboards_show_the_categories_without_it(scored: Path) -> None:
    runner = CliRunner()
    overall = runner.invoke(app, ["leaderboard", str(scored), "--format", "csv"])
    assert overall.exit_code == 0, overall.output
    board = pl.read_csv(overall.stdout.encode())
    assert set(board["model"]) == {"m1", "m2", "m3", "solo"}
    refused = runner.invoke(app, ["leaderboard", str(scored), "--scope", UNCATEGORISED])
    assert refused.exit_code == 2 and "overall, associative_learning" in refused.output
