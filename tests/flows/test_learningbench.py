"""LearningBench's published leaderboard through cogscore (``import-scores``, then a run):
its ranks and mean scores reproduced, every interval of positive width, the verdicts the
benchmark's own analysis states, and a rescore that leaves the imported scores as they are.

Expected values are read from the published files (``leaderboard_model_ranks.csv``,
``hypothesis_tests.json``), never typed in."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from scipy import stats as scipy_stats
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.importers.score_categories import CATEGORY_NAMES, UNKNOWN
from flows.importers.scores import import_scores
from schemas.contract import UNCATEGORISED
from tests.learningbench import LEADERBOARD, LEARNINGBENCH, TASKS
from tests.tables import read_table

NIGHT = "2026-04-16"  # the last day of the published runs


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("learningbench")
    done = import_scores(LEADERBOARD / "leaderboard_flat.csv", root / "dump", NIGHT, TASKS)
    assert done.rows_imported == 1890 and not done.rejected
    runs.score(root / "dump", root / "out")
    return root


def test_ranks_and_mean_scores_equal_the_published_ones(scored: Path) -> None:
    published = pl.read_csv(LEADERBOARD / "leaderboard_model_ranks.csv")
    models = read_table(scored / "out", "model_scores")
    joined = models.join(published, left_on="model", right_on="model_name", how="full")
    assert joined.height == published.height == 14
    assert (joined["score"] - joined["mean_score"]).abs().max() < 1e-12  # type: ignore[operator]
    assert joined["rank"].to_list() == joined["rank_right"].to_list()
    assert set(models["categories_covered"]) == {6} and set(models["n_ranked"]) == {14}


@pytest.fixture(scope="module")
def as_published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The table as an operator imports it: no task files, each score on its own night (ten
    nights), through the command line; scored into the standing as of the last day."""
    root = tmp_path_factory.mktemp("as-published")
    runner = CliRunner()
    flat = str(LEADERBOARD / "leaderboard_flat.csv")
    imported = runner.invoke(app, ["import-scores", flat, "--out", str(root / "dump"), "--json"])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout.splitlines()[-1])["rows_not_imported"] == 0
    scored = runner.invoke(app, ["score", str(root / "dump"), "--out", str(root / "out")])
    assert scored.exit_code == 0, scored.output
    return root


def published_categories() -> pl.DataFrame:
    """Each model's mean score per category of ``leaderboard_flat.csv`` (its ``category``
    column, in the contract's names), the tasks it calls ``unknown`` in none: LearningBench's
    own category figures."""
    flat = pl.read_csv(LEADERBOARD / "leaderboard_flat.csv")
    return (
        flat.filter(pl.col("category") != UNKNOWN)
        .with_columns(pl.col("category").replace_strict(CATEGORY_NAMES, return_dtype=pl.String))
        .group_by("model_name", "category")
        .agg(pl.col("score").mean().alias("published"), pl.len().alias("published_tasks"))
    )


def upstream_best_and_worst(sub_ability: str) -> tuple[float, float]:
    """The best and worst model of a sub-ability as ``UPSTREAM_README.md``'s table of
    baselines prints them (two places)."""
    lines = (LEARNINGBENCH / "UPSTREAM_README.md").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "| Best model |" in " ".join(line.split()))

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(lines[at])
    rows = [cells(line) for line in lines[at + 2 :] if line.startswith("|")]
    row = dict(zip(header, next(r for r in rows if r[0] == sub_ability), strict=True))
    return float(row["Best model"]), float(row["Worst model"])


def assert_categories_are_the_published_ones(categories: pl.DataFrame) -> None:
    published = published_categories()
    joined = categories.join(
        published,
        left_on=["model", "category"],
        right_on=["model_name", "category"],
        how="full",
    )
    assert joined.height == categories.height == published.height == 14 * 6
    assert (joined["score"] - joined["published"]).abs().max() < 1e-12  # type: ignore[operator]
    assert (joined["n_tasks"] == joined["published_tasks"]).all()
    associative = categories.filter(category="associative_learning")["score"]
    best, worst = upstream_best_and_worst("Associative")
    assert (round(associative.max(), 2), round(associative.min(), 2)) == (best, worst)  # type: ignore[arg-type]


def test_every_category_mean_equals_the_published_ones(scored: Path) -> None:
    """The table's categories as it publishes them, task files given or not: each category's
    mean per model is LearningBench's (17 associative tasks: its pages' best 0.95 and worst
    0.43); the three `unknown` tasks count in the overall mean alone."""
    assert_categories_are_the_published_ones(read_table(scored / "out", "category_scores"))
    tasks = read_table(scored / "out", "task_scores")
    assert tasks.filter(category=UNCATEGORISED)["task"].unique().sort().to_list() == [
        "10000",
        "10001",
        "10002",
    ]


def test_as_an_operator_runs_it_the_overall_and_every_category_are_published(
    as_published: Path,
) -> None:
    """Imported without task files, each score on its night: the standing as of the last
    day has the 14 published means and ranks, and every category's published means."""
    out = as_published / "out"
    standings = read_table(out, "standings")
    latest = standings.filter(pl.col("as_of") == standings["as_of"].max())
    published = pl.read_csv(LEADERBOARD / "leaderboard_model_ranks.csv")
    joined = latest.join(published, left_on="model", right_on="model_name", how="full")
    assert joined.height == 14
    assert (joined["score"] - joined["mean_score"]).abs().max() < 1e-12  # type: ignore[operator]
    assert joined["rank"].to_list() == joined["rank_right"].to_list()
    categories = read_table(out, "category_standings")
    assert_categories_are_the_published_ones(
        categories.filter(pl.col("as_of") == categories["as_of"].max())
    )


def test_every_interval_has_positive_width(scored: Path) -> None:
    """One score per model and task: the tasks carry the uncertainty (design two_level).
    Task intervals are null (one episode: no spread to resample), never of zero width."""
    out = scored / "out"
    models = read_table(out, "model_scores")
    for low, high in (("ci_low", "ci_high"), ("ci_low_by_category", "ci_high_by_category")):
        assert (models[high] - models[low] > 0).all(), low
    assert (models["rank_low"] <= models["rank"]).all()
    assert (models["rank"] <= models["rank_high"]).all()
    categories = read_table(out, "category_scores")
    assert categories.height == 14 * 6 and (categories["ci_high"] > categories["ci_low"]).all()
    comparisons = read_table(out, "model_comparisons")
    assert comparisons["se"].null_count() == 0 and (comparisons["se"] > 0).all()
    assert set(comparisons["design"]) == {"two_level"}
    assert (comparisons["ci_high"] > comparisons["ci_low"]).all()
    tasks = read_table(out, "task_scores")
    assert set(tasks["n_episodes"]) == {1} and tasks["ci_low"].null_count() == tasks.height


def test_the_best_model_is_better_than_the_weakest_overall(scored: Path) -> None:
    comparisons = read_table(scored / "out", "model_comparisons")
    row = comparisons.filter(
        scope="overall", model_a="Gemini 3.1 Pro Preview", model_b="GPT-5.4 nano"
    ).row(0, named=True)
    assert row["verdict"] == "a_better"
    assert (row["n_tasks"], row["paired"]) == (135, "full")  # paired over every task
    models = read_table(scored / "out", "model_scores").sort("rank")
    assert models["tier"][0] == 1 and models["tier"][-1] > models["tier"][0]


def test_the_leaderboards_claims_are_the_holm_verdicts(scored: Path) -> None:
    """Every model's rank bound is 1 + the models the overall verdicts call better, and its
    rank interval runs from there (the default level: the verdicts' own) to the group's size
    minus the models called worse: no claim beyond the verdicts (the greedy tiers made 8).
    The MDE shown is the verdict's: at the level Holm tested the pair at, never below the
    unadjusted test's."""
    models = read_table(scored / "out", "model_scores")
    overall = read_table(scored / "out", "model_comparisons").filter(scope="overall")
    counts = overall.group_by("model_a").agg(
        (pl.col("verdict") == "b_better").sum().alias("above"),
        (pl.col("verdict") == "a_better").sum().alias("below"),
    )
    joined = models.join(counts, left_on="model", right_on="model_a")
    assert joined.height == 14
    assert (joined["rank_ub"] == 1 + joined["above"]).all()
    assert (joined["rank_low"] == joined["rank_ub"]).all()
    assert (joined["rank_high"] == 14 - joined["below"]).all()
    tier = dict(zip(models["model"], models["tier"], strict=True))
    worse_tier = overall.filter(
        pl.col("model_a").replace_strict(tier) < pl.col("model_b").replace_strict(tier)
    )
    assert (worse_tier["verdict"] != "a_better").sum() == 8  # the tiers' unsupported orders
    unadjusted = (
        scipy_stats.t.ppf(0.975, overall["df"].to_numpy())
        + scipy_stats.t.ppf(0.8, overall["df"].to_numpy())
    ) * overall["se"].to_numpy()
    assert (overall["mde"].to_numpy() >= unadjusted - 1e-12).all()
    assert (overall["mde"].to_numpy() > unadjusted).any()


def test_each_categorys_leaderboard_is_its_own_holm_verdicts(scored: Path) -> None:
    """Each category ranks its 14 models by its own score (ties share the better rank), and
    each rank interval runs from 1 + the models the category's verdicts call better to 14
    less those called worse (the default level: the verdicts' own)."""
    categories = read_table(scored / "out", "category_scores")
    comparisons = read_table(scored / "out", "model_comparisons")
    counts = comparisons.group_by("scope", "model_a").agg(
        (pl.col("verdict") == "b_better").sum().alias("above"),
        (pl.col("verdict") == "a_better").sum().alias("below"),
    )
    joined = categories.join(
        counts, left_on=["category", "model"], right_on=["scope", "model_a"], how="left"
    ).with_columns(
        pl.col("score").rank("min", descending=True).over("category").alias("expected_rank")
    )
    assert joined.height == 14 * 6 and joined["above"].null_count() == 0
    assert (joined["rank"] == joined["expected_rank"]).all()
    assert (joined["rank_low"] == 1 + joined["above"]).all()
    assert (joined["rank_high"] == 14 - joined["below"]).all()
    assert (joined["rank_high"] > joined["rank_low"]).any()


def test_the_benchmarks_own_concept_formation_test(scored: Path) -> None:
    """H4 of the benchmark's analysis: concept formation, Qwen 3 Next 80B Thinking against
    Instruct, a Wilcoxon signed-rank test over 18 matched tasks, 14 won, 1 lost."""
    analysis = json.loads((LEARNINGBENCH / "hypothesis_tests.json").read_text())
    h4 = next(h for h in analysis["hypotheses"] if h["id"] == "H4")["statistic"]
    comparisons = read_table(scored / "out", "model_comparisons")
    row = comparisons.filter(
        scope="concept_formation",
        model_a="Qwen 3 Next 80B Thinking",
        model_b="Qwen 3 Next 80B Instruct",
    ).row(0, named=True)
    assert row["n_tasks"] == h4["n_pairs"]
    assert (row["n_tasks_a_better"], row["n_tasks_b_better"]) == (
        h4["wins_thinking"],
        h4["wins_instruct"],
    )
    assert row["p_wilcoxon"] == pytest.approx(h4["p"], rel=1e-12)
    assert row["p_value"] < 0.01 and row["p_wilcoxon"] < 0.01
    assert row["diff"] == pytest.approx(h4["thinking_mean"] - h4["instruct_mean"], abs=1e-12)


def test_a_rescore_leaves_the_imported_scores_as_they_are(scored: Path) -> None:
    before = read_table(scored / "out", "model_scores").select("model", "score")
    outcome = runs.rescore(
        scored / "dump", scored / "out", ["procedural_learning=v1"], dry_run=True
    )
    assert outcome.not_rescored == 1890
    assert outcome.diff is not None and (outcome.diff["delta"] == 0).all()
    after = read_table(scored / "out", "model_scores").select("model", "score")
    assert after.sort("model").equals(before.sort("model"))
