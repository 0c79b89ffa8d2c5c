"""The comparison tables through the runs: model_comparisons, the rank columns of
model_scores, regressions (with --fail-on-regression) and the rescore diff's significance.

Expected values come from the statistics of ``transforms.compare`` applied to the episode
scores read back from the output (those functions are held to statsmodels and scipy in
``tests/transforms/test_compare.py``), and from the score tables' own differences."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from flows import runs
from flows.cli import app
from flows.options import run_options
from flows.present.status import comparison_lines
from flows.records import RunContext
from flows.store.catalog import conform
from schemas.comparisons import HOLM_FAMILY_NOTE
from schemas.exits import ExitCode
from simulator.dump import simulate_dump
from simulator.models import DEFAULT_MODELS, Model, Skill
from simulator.tasks import TASKS
from tests.tables import read_table, run_rows
from transforms.compare import model_comparisons, regressions, rescore_significance

NIGHTS = ("2026-11-01", "2026-11-02", "2026-11-03")
PROVENANCE = ["scorer_version", "input_fingerprint"]


def _night(root: Path, night: str, seed: int, **kwargs: object) -> None:
    simulate_dump(root, date=night, episodes=720, seed=seed, episodes_per_file=400, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dump")
    for i, night in enumerate(NIGHTS):
        _night(root, night, seed=i)
    return root


@pytest.fixture(scope="module")
def scored(three_nights: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("out") / "out"
    runs.nightly(three_nights, out)
    return out


def _sorted(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return frame.select(sorted(frame.columns)).sort(by, nulls_last=True)


def test_every_night_holds_the_comparisons_of_its_episode_scores(scored: Path) -> None:
    table = read_table(scored, "model_comparisons").drop(PROVENANCE)
    expected = model_comparisons(read_table(scored, "episode_scores"))
    key = ["dump_date", "scope", "model_a", "model_b"]
    assert sorted(table["dump_date"].unique()) == list(NIGHTS)
    assert_frame_equal(_sorted(table, key), _sorted(expected, key))
    # Instances are shared (the simulator writes contract 1.1 ids): pairs are paired.
    assert set(table["paired"]) <= {"full", "partial"} and table["n_pairs"].min() > 0  # type: ignore[operator]


def test_compare_prints_the_raw_p_value_beside_holms(scored: Path) -> None:
    """A comparison planned alone reads the raw p; the verdict is Holm's: both are shown,
    each row's own, in that order."""
    wide = {"COLUMNS": "300"}  # a row a line: model names are not folded
    result = CliRunner().invoke(app, ["compare", str(scored), "--scope", "overall"], env=wide)
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "p (Holm)" in line)
    assert header.split().index("p") < header.split().index("(Holm)")
    table = read_table(scored, "model_comparisons")
    latest = table.filter((pl.col("dump_date") == max(NIGHTS)) & (pl.col("scope") == "overall"))
    assert latest.height > 0
    for row in latest.iter_rows(named=True):
        line = next(line for line in result.output.splitlines() if row["model_a"] in line and
                    row["model_b"] in line)  # fmt: skip
        cells = line.split()
        raw = cells.index(f"{row['p_value']:.3g}")
        assert f"{row['p_holm']:.3g}" in cells[raw + 1 :]


def test_compare_says_why_a_row_is_null_or_approximate_and_what_holm_covers(
    scored: Path,
) -> None:
    """Each row with a ``reason`` points to a note under the table that gives it (here:
    eight tasks, 7 degrees of freedom, every interval approximate), and the table ends by
    saying that Holm's correction covers this night's scope only. A table written before
    ``reason`` existed reads with it null (``conform``) and prints without notes."""
    wide = {"COLUMNS": "300"}
    result = CliRunner().invoke(app, ["compare", str(scored), "--scope", "overall"], env=wide)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    table = read_table(scored, "standing_comparisons")
    latest = table.filter((pl.col("as_of") == max(NIGHTS)) & (pl.col("scope") == "overall"))
    reasons = sorted(set(latest["reason"].drop_nulls()))
    assert reasons and all("approximate interval" in r for r in reasons)
    for n, reason in enumerate(reasons, 1):
        assert f"[{n}] {reason}" in lines
        assert (
            sum(line.endswith(f" [{n}]") for line in lines)
            # each pair printed once: the table holds it in both orders
            == latest.filter(pl.col("reason") == reason).height // 2
        )
    assert lines[-1] == HOLM_FAMILY_NOTE
    old = latest.drop("reason")
    read = conform("standing_comparisons", old.lazy()).collect()
    assert read["reason"].null_count() == read.height
    printed = comparison_lines(old, 0.95)
    assert not any(line.startswith("[1]") for line in printed) and printed[-1] == HOLM_FAMILY_NOTE


def test_diff_is_the_difference_of_the_published_scores(scored: Path) -> None:
    table = read_table(scored, "model_comparisons")
    published = read_table(scored, "model_scores")
    models = published.select("dump_date", "model", pl.lit("overall").alias("scope"), "score")
    by_category = published.select(
        "dump_date",
        "model",
        pl.lit("overall_by_category").alias("scope"),
        pl.col("score_by_category").alias("score"),
    )
    categories = read_table(scored, "category_scores").select(
        "dump_date", "model", pl.col("category").alias("scope"), "score"
    )
    scores = pl.concat([models, by_category, categories])
    joined = table.join(
        scores.rename({"model": "model_a", "score": "published_a"}),
        on=["dump_date", "model_a", "scope"],
    ).join(
        scores.rename({"model": "model_b", "score": "published_b"}),
        on=["dump_date", "model_b", "scope"],
    )
    assert joined.height == table.height
    assert (joined["diff"] - (joined["published_a"] - joined["published_b"])).abs().max() < 1e-12  # type: ignore[operator]


def test_model_scores_carry_rank_intervals_bounds_and_tiers(scored: Path) -> None:
    models = read_table(scored, "model_scores")
    # The rank bound is the night's Holm verdicts: 1 + the models called better.
    verdicts = read_table(scored, "model_comparisons").filter(scope="overall")
    better = verdicts.group_by("dump_date", "model_b").agg(
        (pl.col("verdict") == "a_better").sum().alias("better")
    )
    bounds = models.join(
        better, left_on=["dump_date", "model"], right_on=["dump_date", "model_b"], how="left"
    )
    assert (bounds["rank_ub"] == 1 + bounds["better"].fill_null(0)).all()
    assert models["n_ranked"].unique().to_list() == [len(DEFAULT_MODELS)]
    assert (models["rank_low"] <= models["rank"]).all() and (
        models["rank"] <= models["rank_high"]
    ).all()
    # The simulated skills are far apart: every rank is certain and every tier its own.
    night = models.filter(pl.col("dump_date") == NIGHTS[-1]).sort("rank")
    assert night["model"].to_list() == [m.name for m in DEFAULT_MODELS]
    assert night["tier"].to_list() == night["rank"].to_list() == [1, 2, 3, 4]
    assert night["rank_ub"].to_list() == night["rank_low"].to_list() == [1, 2, 3, 4]


def test_a_model_covering_fewer_categories_is_ranked_apart(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    _night(dump, "2026-11-01", seed=0)
    narrow_tasks = [t for t in TASKS if t.category.value == "associative_learning"]
    other = tmp_path / "narrow"
    simulate_dump(
        other,
        date="2026-11-01",
        episodes=120,
        seed=9,
        models=[Model("narrow-s", Skill.NEAR_ORACLE)],
        tasks=narrow_tasks,
    )
    for path in (other / "dump_date=2026-11-01").glob("part-*.parquet"):
        shutil.copy(path, dump / "dump_date=2026-11-01" / f"narrow-{path.name}")
    out = tmp_path / "out"
    runs.score(dump, out)
    models = read_table(out, "model_scores")
    narrow = models.filter(pl.col("model") == "narrow-s").row(0, named=True)
    assert narrow["ranked_among"] == "associative_learning"
    assert (
        narrow["n_ranked"],
        narrow["rank"],
        narrow["rank_low"],
        narrow["rank_high"],
        narrow["rank_ub"],
    ) == (1, 1, 1, 1, 1)
    assert narrow["tier"] is None  # nothing to be compared with overall
    full = models.filter(pl.col("model") != "narrow-s")
    assert sorted(full["rank"]) == [1, 2, 3, 4] and set(full["n_ranked"]) == {4}
    comparisons = read_table(out, "model_comparisons")
    with_narrow = comparisons.filter(pl.col("model_a") == "narrow-s")
    assert set(with_narrow["scope"]) == {"associative_learning"}  # never overall
    assert with_narrow.height == len(DEFAULT_MODELS)


def test_regressions_are_the_nights_against_their_previous_night(scored: Path) -> None:
    table = read_table(scored, "regressions").drop(PROVENANCE)
    episodes = read_table(scored, "episode_scores")
    rejects = read_table(scored, "rejects")
    from transforms.compare.night import harness_shares

    expected = regressions(episodes, metadata=harness_shares(episodes, rejects))
    key = ["dump_date", "model", "scope"]
    assert_frame_equal(_sorted(table, key), _sorted(expected, key))
    assert sorted(table["dump_date"].unique()) == list(NIGHTS[1:])  # the first has no baseline
    assert set(table["baseline_dates"]) == set(NIGHTS[:-1])


def _drop(tmp_path: Path) -> Path:
    """Two nights; on the second, learner-m plays as the random model."""
    dump = tmp_path / "dump"
    _night(dump, "2026-11-01", seed=0)
    worse = [Model(m.name, Skill.RANDOM) if m.name == "learner-m" else m for m in DEFAULT_MODELS]
    _night(dump, "2026-11-02", seed=1, models=worse)
    return dump


def test_a_planted_drop_alerts_and_fails_the_run_only_when_asked(tmp_path: Path) -> None:
    dump = _drop(tmp_path)
    runner = CliRunner()
    asked = runner.invoke(
        app,
        [
            "nightly",
            str(dump),
            "--out",
            str(tmp_path / "a"),
            "--quiet",
            "--json",
            "--fail-on-regression",
        ],
    )
    assert asked.exit_code == ExitCode.REGRESSION, asked.output
    record = json.loads(asked.stdout.strip().splitlines()[-1])
    assert record["exit_code"] == 6 and record["status"] == "failed"
    alerted = {(r["model"], r["scope"]) for r in record["regressions"] if r["level"] == "alert"}
    assert ("learner-m", "overall") in alerted
    assert {m for m, _ in alerted} == {"learner-m"}
    # The tables are written all the same, and say the same.
    table = read_table(tmp_path / "a", "regressions")
    alerts = table.filter(pl.col("level") == "alert")
    assert set(zip(alerts["model"], alerts["scope"], strict=True)) == alerted
    assert run_rows(tmp_path / "a")["status"].to_list() == ["succeeded", "succeeded"]
    lenient = runner.invoke(app, ["nightly", str(dump), "--out", str(tmp_path / "b"), "--quiet"])
    assert lenient.exit_code == 0, lenient.output
    assert "alert 2026-11-02 learner-m overall" in lenient.output


def test_fail_on_regression_ends_the_prefect_flow_failed(
    prefect_home: Path, tmp_path: Path
) -> None:
    from flows.prefect_flows import nightly_flow

    dump = _drop(tmp_path)
    state = nightly_flow(
        dump_root=str(dump), out=str(tmp_path / "out"), fail_on_regression=True, return_state=True
    )
    assert state.is_failed() and "regression alert" in (state.message or "")
    calm = nightly_flow(dump_root=str(dump), out=str(tmp_path / "calm"), return_state=True)
    assert calm.is_completed()


def test_a_change_in_harness_errors_is_not_a_regression(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    _night(dump, "2026-11-01", seed=0, rejects=0.0, harness_errors=0.0)
    _night(dump, "2026-11-02", seed=1, rejects=0.0, harness_errors=0.25)
    runs.nightly(dump, tmp_path / "out")
    table = read_table(tmp_path / "out", "regressions")
    assert set(table["level"]) == {"not_comparable"}
    assert all("harness errors changed" in r for r in table["reason"])


def test_a_baseline_of_the_mean_of_k_nights(three_nights: Path, tmp_path: Path) -> None:
    context = RunContext(options=run_options(baseline="mean", baseline_nights=2))
    runs.nightly(three_nights, tmp_path / "out", context=context)
    table = read_table(tmp_path / "out", "regressions")
    last = table.filter(pl.col("dump_date") == NIGHTS[-1])
    assert set(last["baseline"]) == {"mean"} and set(last["n_baseline_nights"]) == {2}
    assert set(last["baseline_dates"]) == {f"{NIGHTS[0]},{NIGHTS[1]}"}


def test_the_rescore_diff_says_how_sure_each_change_is(
    three_nights: Path, scored: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(scored, out)
    before = read_table(out, "episode_scores")
    outcome = runs.rescore(three_nights, out, ["procedural_learning=v1"])
    after = read_table(out, "episode_scores")
    diff = read_table(out, "rescore_diff")
    significance = rescore_significance(before, after)
    joined = diff.join(
        significance.rename({"scope": "category"}),
        on=["dump_date", "model", "category"],
        suffix="_expected",
    )
    assert joined.height == diff.height
    for column in ("se", "ci_low", "ci_high", "p_value", "mde", "n_pairs", "paired"):
        assert joined[column].equals(joined[f"{column}_expected"]), column
    unchanged = diff.filter(pl.col("category").is_in(["associative_learning", "runtime_rl"]))
    assert (unchanged["delta"] == 0).all() and (unchanged["p_value"] == 1).all()
    moved = diff.filter(pl.col("category") == "procedural_learning")
    assert (moved["se"] > 0).all() and (moved["paired"] == "full").all()
    assert outcome.diff is not None and outcome.diff.height == diff.height
