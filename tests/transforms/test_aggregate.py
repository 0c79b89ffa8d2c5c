"""Aggregates: the component means a night's reduction makes from per-file sums; the
bootstrap's options, task replicates and intervals; task, category and model scores."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats as scipy_stats

from schemas.columns import EPISODE_SCORES_DTYPES
from transforms import aggregate
from transforms.aggregate import (
    Bootstrap,
    category_scores,
    component_means,
    component_sums,
    model_scores,
    task_replicates,
    task_scores,
)

KEY = {"dump_date": "d", "model": "m", "category": "c", "task": "t"}


@st.composite
def episodes(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(1, 30))
    value = st.one_of(st.none(), st.floats(0, 1, allow_nan=False))
    return pl.DataFrame(
        {
            **{k: [v] * n for k, v in KEY.items()},
            "file": draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n)),
            "episode_id": [f"e{i:03d}" for i in range(n)],
            "accuracy": draw(st.lists(value, min_size=n, max_size=n)),
            "success": draw(st.lists(st.one_of(st.none(), st.booleans()), min_size=n, max_size=n)),
        },
        schema_overrides={"accuracy": pl.Float64, "success": pl.Boolean},
    )


@settings(max_examples=60, deadline=None)
@given(episodes())
def test_component_means_are_the_means_of_the_episodes(frame: pl.DataFrame) -> None:
    means = component_means(component_sums(frame.lazy())).collect().row(0, named=True)
    for column in ("accuracy", "success"):
        values = [float(v) for v in frame[column].to_list() if v is not None]
        expected = math.fsum(values) / len(values) if values else None
        got = means[f"mean_{column}"]
        assert (got is None) == (expected is None)
        if expected is not None:
            assert math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=30, deadline=None)
@given(episodes())
def test_files_summed_apart_or_together_give_the_same_bits(frame: pl.DataFrame) -> None:
    """A worker sums its own file; the driver adds the files' sums in file order: the same
    bits as the sums of the whole night's rows, grouped by file, in any row order."""
    apart = pl.concat(
        [component_sums(part.lazy()).collect() for part in frame.partition_by("file")]
    )
    together = component_sums(frame.sample(fraction=1.0, shuffle=True, seed=1).lazy()).collect()
    a = component_means(apart.lazy()).collect()
    b = component_means(together.lazy()).collect()
    assert a.rows() == b.rows()


def test_a_files_sums_sort_its_episodes_once_not_each_measure_in_each_group() -> None:
    """The left-to-right order of a file's sums is its episodes' (the test above): the rows
    are sorted by episode once, not each component's and usage measure's values again in
    each group (19 sorts: a 98,518-episode night's sums took 47 ms of CPU, now 35)."""
    plan = component_sums(pl.LazyFrame(schema=EPISODE_SCORES_DTYPES)).explain()
    assert "sort_by" not in plan
    assert plan.count("SORT BY") == 1, plan


# ---------------------------------------------------------------------------------------
# Bootstrap options, task replicates and intervals, the scores of an undated dump


def _night(scores: dict[tuple[str, str, str], list[float]], date: str | None = "d") -> pl.DataFrame:
    """Episode scores per (model, category, task), ids in order, one formula version."""
    rows = [
        (date, model, category, task, f"{model}-{task}-{i:03d}", value, "v1")
        for (model, category, task), values in scores.items()
        for i, value in enumerate(values)
    ]
    return pl.DataFrame(
        rows,
        schema=["dump_date", "model", "category", "task", "episode_id", "score", "formula_version"],
        orient="row",
    )


def test_a_bootstraps_level_is_a_share_strictly_between_0_and_1_and_fixed() -> None:
    for level in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="level"):
            Bootstrap(level=level)
    for level in (0.001, 0.5, 0.995, 0.999):
        assert Bootstrap(level=level).level == level
    with pytest.raises(dataclasses.FrozenInstanceError):
        Bootstrap().level = 2.0  # type: ignore[misc]  # validated once: never changed after


@pytest.mark.parametrize("n, distinct", [(20, 2), (40, 2)])
def test_task_replicates_draw_each_episode_with_probability_1_over_n(n: int, distinct: int) -> None:
    """n episodes, one of them (the last by id) scoring 1, the others 0: a replicate's mean
    times n is how often that episode was drawn, binomial(n, 1/n) (chi-square on 0, 1, 2, 3,
    4+), whichever way the draws are made (20 episodes of 2 distinct values draw indices;
    40 draw counts per distinct value)."""
    frame = _night({("a", "c", "t"): [0.0] * (n - 1) + [1.0]})
    replicates = task_replicates(frame.lazy(), Bootstrap(resamples=4000)).collect()
    times = replicates["score"].to_numpy() * n
    np.testing.assert_allclose(times, np.rint(times), atol=1e-9)
    binomial = scipy_stats.binom(n, 1 / n)
    expected = np.append(binomial.pmf(range(4)), binomial.sf(3)) * len(times)
    observed = [int((np.rint(times) == k).sum()) for k in range(4)]
    observed.append(int((np.rint(times) >= 4).sum()))
    assert scipy_stats.chisquare(observed, expected).pvalue > 1e-4, (observed, expected)


def test_each_task_draws_from_a_stream_of_its_own() -> None:
    """Two tasks (and two models) with the same episode scores: their replicates differ;
    the same task again gives the same replicates."""
    values = [float(v) for v in np.random.default_rng(4).uniform(0, 1, 12)]
    frame = _night({key: values for key in [("a", "c", "t1"), ("a", "c", "t2"), ("b", "c", "t1")]})
    replicates = task_replicates(frame.lazy(), Bootstrap(resamples=50)).collect()
    by_group = replicates.partition_by("model", "task", as_dict=True)
    draws = {key: group.sort("replicate")["score"].to_list() for key, group in by_group.items()}
    assert len(draws) == 3 and len({tuple(d) for d in draws.values()}) == 3
    again = task_replicates(frame.lazy(), Bootstrap(resamples=50)).collect()
    assert_frame_equal(again, replicates)


def test_a_task_of_one_episode_draws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """One episode: every resample is that episode, so its replicates are its score (0.0
    for -0.0, as a sum of draws gives) and no generator is made for it (a benchmark of one
    episode a cell has thousands: 0.2 ms each, issue 48); the groups that draw beside it
    give the replicates they give alone."""
    drawn = [0.1, 0.7, 0.4]
    frame = _night({("a", "c", "t1"): [0.3], ("a", "c", "t2"): [-0.0], ("b", "c", "t1"): drawn})
    boot = Bootstrap(resamples=40)
    alone = task_replicates(_night({("b", "c", "t1"): drawn}).lazy(), boot).collect()
    seeded: list[object] = []
    original = aggregate.group_seed

    def counted(seed: int, key: object) -> np.random.Generator:
        seeded.append(key)
        return original(seed, key)  # type: ignore[arg-type]

    monkeypatch.setattr(aggregate, "group_seed", counted)
    replicates = task_replicates(frame.lazy(), boot).collect()
    assert len(seeded) == 1  # the group of three episodes alone
    by_group = replicates.partition_by("model", "task", as_dict=True, include_key=False)
    for (model, task), score in [(("a", "t1"), 0.3), (("a", "t2"), 0.0)]:
        values = by_group[(model, task)].sort("replicate")["score"].to_numpy()
        assert (values == score).all() and not np.signbit(values).any()
    assert_frame_equal(replicates.filter(pl.col("model") == "b"), alone, check_row_order=False)


def test_no_episodes_give_no_replicates() -> None:
    empty = _night({}).cast({"score": pl.Float64, "dump_date": pl.String})
    assert task_replicates(empty.lazy(), Bootstrap(resamples=10)).collect().height == 0


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_a_task_interval_is_the_levels_percentiles_of_its_replicates(level: float) -> None:
    """The task interval's ends are the replicate means' linear quantiles at (1 - level)/2
    and 1 - (1 - level)/2 (the replicates of many distinct values: every quantile moves
    with its probability)."""
    values = [float(v) for v in np.random.default_rng(5).uniform(0, 1, 30)]
    frame = _night({("a", "c", "t"): values})
    boot = Bootstrap(resamples=1001, level=level)
    replicates = task_replicates(frame.lazy(), boot)
    row = task_scores(frame.lazy(), replicates, boot).collect().row(0, named=True)
    means = replicates.collect()["score"].to_numpy()
    tail = (1 - level) / 2
    assert row["ci_low"] == pytest.approx(np.quantile(means, tail), abs=1e-15)
    assert row["ci_high"] == pytest.approx(np.quantile(means, 1 - tail), abs=1e-15)


def test_replicates_that_vary_at_all_give_an_interval() -> None:
    """Two episodes (0 and 1) and four replicates, seeds chosen where the replicates take
    exactly two values: an interval (only replicates all the same give none); one episode
    gives none."""
    frame = _night({("a", "c", "t"): [0.0, 1.0]})
    for seed in range(50):
        boot = Bootstrap(resamples=4, seed=seed)
        replicates = task_replicates(frame.lazy(), boot)
        if replicates.collect()["score"].n_unique() == 2:
            break
    else:
        pytest.fail("no seed gives replicates of exactly two values")
    row = task_scores(frame.lazy(), replicates, boot).collect().row(0, named=True)
    assert row["ci_low"] is not None and row["ci_high"] > row["ci_low"]
    one = _night({("a", "c", "t"): [0.5]})
    alone = task_scores(one.lazy(), task_replicates(one.lazy(), boot), boot).collect()
    assert alone.select("ci_low", "ci_high").row(0) == (None, None)


def _aggregates(frame: pl.DataFrame, boot: Bootstrap) -> dict[str, pl.DataFrame]:
    lazy = frame.lazy()
    tasks = task_scores(lazy, task_replicates(lazy, boot), boot).collect()
    categories = category_scores(tasks.lazy()).collect()
    models = model_scores(tasks.lazy(), categories.lazy()).collect()
    keys = ["dump_date", "model", "category", "task"]
    return {
        "tasks": tasks.sort(keys),
        "categories": categories.sort(keys[:3]),
        "models": models.sort(keys[:2]),
    }


def test_an_undated_dump_aggregates_like_the_same_scores_dated() -> None:
    """A dump without ``dump_date`` (null) is a night of its own: its task, category and
    model scores (and the tasks' component means) are those of the same scores dated."""
    rng = np.random.default_rng(6)
    scores = {
        (model, category, task): [float(v) for v in rng.uniform(0, 1, 5)]
        for model in ("a", "b")
        for category, task in (("c1", "t1"), ("c1", "t2"), ("c2", "t3"))
    }
    boot = Bootstrap(resamples=20)
    accuracy = pl.col("score").alias("accuracy")  # a component: its task means too
    dated = _aggregates(_night(scores).with_columns(accuracy), boot)
    undated = _aggregates(_night(scores, date=None).with_columns(accuracy), boot)
    assert undated["tasks"]["mean_accuracy"].null_count() == 0
    # (The task intervals draw from streams keyed by the night too: other draws.)
    interval = ["ci_low", "ci_high"]
    assert undated["tasks"].select(interval).null_count().row(0) == (0, 0)
    for name, table in dated.items():
        assert undated[name]["dump_date"].is_null().all(), name
        drop = ["dump_date", *(interval if name == "tasks" else [])]
        assert_frame_equal(undated[name].drop(drop), table.drop(drop))


def test_models_rank_by_either_score_best_first() -> None:
    """b is better than a in each category, c worse: ranks 1, 2, 3 by both scores."""
    scores = {
        (model, category, "t" + category): [base + shift, base + shift + 0.1]
        for model, shift in (("a", 0.0), ("b", 0.2), ("c", -0.2))
        for category, base in (("c1", 0.3), ("c2", 0.5))
    }
    models = _aggregates(_night(scores), Bootstrap(resamples=10))["models"]
    for rank in ("rank", "rank_by_category"):
        assert dict(zip(models["model"], models[rank], strict=True)) == {"b": 1, "a": 2, "c": 3}
