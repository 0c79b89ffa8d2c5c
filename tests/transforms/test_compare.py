"""``transforms.compare``: the comparison statistics equal trusted libraries (statsmodels'
cluster-robust least squares, scipy's normal and t distributions, t-tests and Wilcoxon
signed-rank test, statsmodels' multipletests), are calibrated (simulated A/A comparisons
reject at the nominal rate, a planted difference equal to the reported MDE is detected with
80% power, A/A nights raise no more alerts than nominal; on LearningBench's own shape:
``test_calibration.py``) and have the properties a difference must have (swapping the models
negates it and keeps its p-value; shifting a model's scores shifts it).

Both sampling designs are tested: ``two_level`` (the default: tasks a sample, episodes within
them) and ``within_tasks`` (the tasks fixed, the previous default). The simulated shape of
this file (two categories of two tasks, many episodes) is the one where fixing the tasks
serves; its calibration tests run with ``within_tasks``."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

from flows.options import RegressionOptions
from schemas.comparisons import Work
from tests.multitest import adjusted, rejected
from transforms import aggregate
from transforms.compare import (
    A_BETTER,
    B_BETTER,
    INSTANCE_ID,
    LEVEL_ALERT,
    LEVEL_NONE,
    LEVEL_NOT_COMPARABLE,
    LEVEL_WATCH,
    OVERALL,
    OVERALL_BY_CATEGORY,
    PAIRED_FULL,
    PAIRED_NONE,
    PAIRED_PARTIAL,
    UNRESOLVED,
    model_comparisons,
    rank_intervals,
    regressions,
    rescore_rank_changes,
    rescore_significance,
    score_intervals,
    significance_tiers,
)
from transforms.compare.inference import inference
from transforms.compare.preparation import Prepared, prepare

WITHIN = "within_tasks"  # the tasks fixed: the previous default design
COLUMNS = ["dump_date", "model", "category", "task", "episode_id", "score", INSTANCE_ID]
TASKS = (("c1", "t1"), ("c1", "t2"), ("c2", "t3"), ("c2", "t4"))


def simulate(
    rng: np.random.Generator,
    nights: int,
    models: tuple[str, ...] = ("a", "b"),
    tasks: tuple[tuple[str, str], ...] = TASKS,
    shared: int = 20,
    alone: int = 10,
    shift: dict[str, float] | None = None,
    instance_sd: float = 0.15,
    noise_sd: float = 0.15,
) -> pl.DataFrame:
    """Episode scores of ``nights`` nights, drawn at once: per night, model and task,
    ``shared`` episodes on the task's instances (the same instances, with the same
    difficulty, for every model and night) and ``alone`` episodes without an instance id
    (a difficulty of their own). score = 0.5 + difficulty + shift[model] + noise."""
    shift = shift or {}
    n_models, n_tasks, per = len(models), len(tasks), shared + alone
    shape = (nights, n_models, n_tasks, per)
    difficulty = np.concatenate(
        [
            np.broadcast_to(
                rng.normal(0, instance_sd, (1, 1, n_tasks, shared)),
                (nights, n_models, n_tasks, shared),
            ),
            rng.normal(0, instance_sd, (nights, n_models, n_tasks, alone)),
        ],
        axis=-1,
    )
    offsets = np.array([shift.get(m, 0.0) for m in models])[None, :, None, None]
    score = 0.5 + difficulty + offsets + rng.normal(0, noise_sd, shape)
    night, model, task, episode = (a.ravel() for a in np.indices(shape))
    frame = pl.DataFrame(
        {
            "night": night,
            "model": np.array(models)[model],
            "category": np.array([c for c, _ in tasks])[task],
            "task": np.array([t for _, t in tasks])[task],
            "episode_id": np.arange(night.size),
            "score": score.ravel(),
            "slot": episode,
        }
    )
    return frame.select(
        pl.format("2026-{}", pl.col("night").cast(pl.String).str.zfill(4)).alias("dump_date"),
        "model",
        "category",
        "task",
        pl.col("episode_id").cast(pl.String).str.zfill(9),
        "score",
        pl.when(pl.col("slot") < shared)
        .then(pl.format("{}-{}", pl.col("task"), pl.col("slot")))
        .otherwise(None)
        .alias(INSTANCE_ID),
    )


def rows_frame(rows: list[tuple[object, ...]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "dump_date": pl.String,
            "model": pl.String,
            "category": pl.String,
            "task": pl.String,
            "episode_id": pl.String,
            "score": pl.Float64,
            INSTANCE_ID: pl.String,
        },
        orient="row",
    )


def one_row(table: pl.DataFrame, **where: str) -> dict[str, object]:
    rows = table.filter(*(pl.col(k) == v for k, v in where.items())).to_dicts()
    assert len(rows) == 1, (where, rows)
    return rows[0]


def mixed_design(seed: int) -> pl.DataFrame:
    """Two categories (2 and 3 tasks), three models, model c missing task t5; per task some
    instances shared (several episodes per instance and model), some episodes alone."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[object, ...]] = []
    tasks = [("c1", "t1"), ("c1", "t2"), ("c2", "t3"), ("c2", "t4"), ("c2", "t5")]
    episode = 0
    for model, offset in [("a", 0.05), ("b", 0.0), ("c", -0.02)]:
        for category, task in tasks:
            if model == "c" and task == "t5":
                continue
            for instance in range(8):
                for _ in range(int(rng.integers(1, 4))):
                    value = 0.5 + offset + 0.1 * math.sin(instance + len(task)) + rng.normal(0, 0.1)
                    rows.append(("d1", model, category, task, f"e{episode}", value, f"i{instance}"))
                    episode += 1
            for _ in range(int(rng.integers(2, 6))):
                value = 0.5 + offset + rng.normal(0, 0.15)
                rows.append(("d1", model, category, task, f"e{episode}", value, None))
                episode += 1
    return rows_frame(rows)


# ---------------------------------------------------------------------------------------
# Scores and the standard errors equal the libraries


def test_scores_are_those_of_aggregate_bit_for_bit() -> None:
    frame = mixed_design(0).with_columns(pl.lit("v1").alias("formula_version"))
    boot = aggregate.Bootstrap(resamples=4)
    lazy = frame.lazy()
    reps = aggregate.task_replicates(lazy, boot)
    tasks = aggregate.task_scores(lazy, reps, boot)
    categories = aggregate.category_scores(tasks).collect()
    models = aggregate.model_scores(tasks, categories.lazy()).collect()
    table = model_comparisons(frame)
    assert set(table["scope"].to_list()) == {"c1", "c2", OVERALL, OVERALL_BY_CATEGORY}
    for row in table.iter_rows(named=True):
        for side in ("a", "b"):
            model = row[f"model_{side}"]
            if row["scope"] == OVERALL:  # each task weighs the same
                expected = one_row(models, model=model)["score"]
            elif row["scope"] == OVERALL_BY_CATEGORY:
                expected = one_row(models, model=model)["score_by_category"]
            else:
                expected = one_row(categories, model=model, category=row["scope"])["score"]
            assert row[f"score_{side}"] == expected  # the same bits
        assert row["diff"] == row["score_a"] - row["score_b"]


def _cells(frame: pl.DataFrame) -> pl.DataFrame:
    """Per model and task: the episodes, the task mean and √(G/(G-1)), G the clusters."""
    cluster = pl.coalesce(
        pl.format("i:{}", INSTANCE_ID), pl.format("e:{}:{}", "model", "episode_id")
    )
    with_cluster = frame.with_columns(
        pl.format("{}/{}/", "category", "task").add(cluster).alias("cluster")
    )
    return with_cluster.with_columns(
        pl.col("score").mean().over("model", "task").alias("cell_mean"),
        pl.col("cluster").n_unique().over("model", "task").alias("g"),
    )


@pytest.mark.parametrize("seed", range(4))
def test_se_within_equals_statsmodels_cluster_robust_ols(seed: int) -> None:
    """Tasks fixed (``se_within``; ``se`` with ``design="within_tasks"``): the diff is a
    contrast of the (model, task) cell means; its variance is the cluster-robust (instance
    clusters) variance of that contrast in the OLS fit of the scores on one dummy per cell.
    statsmodels runs without its small-sample correction (``use_correction=False``) on
    scores whose residuals are scaled by each cell's own factor √(G/(G-1)), the correction
    the comparison applies (docs/comparisons.md)."""
    frame = mixed_design(seed)
    table = model_comparisons(frame)
    fixed = model_comparisons(frame, design=WITHIN)
    assert_frame_equal(table.select("se_within"), fixed.select("se_within"))
    assert_frame_equal(fixed.select(pl.col("se").alias("se_within")), fixed.select("se_within"))
    assert set(fixed["design"].to_list()) == {WITHIN}
    data = _cells(frame).with_columns(
        (
            pl.col("cell_mean")
            + (pl.col("score") - pl.col("cell_mean")) * (pl.col("g") / (pl.col("g") - 1)).sqrt()
        ).alias("scaled"),
        pl.format("{}|{}", "model", "task").alias("cell"),
    )
    cells = sorted(set(data["cell"].to_list()))
    exog = np.stack([(data["cell"] == c).to_numpy().astype(float) for c in cells], axis=1)
    groups = np.unique(data["cluster"].to_numpy(), return_inverse=True)[1]
    fit = sm.OLS(data["scaled"].to_numpy(), exog).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
    )
    cov = fit.cov_params()
    tasks_of = {
        (m, c): sorted(set(data.filter(model=m, category=c)["task"].to_list()))
        for m in "abc"
        for c in ("c1", "c2")
    }
    checked = 0
    for row in table.filter(pl.col("model_a") < pl.col("model_b")).iter_rows(named=True):
        weights = np.zeros(len(cells))
        for model, sign in ((row["model_a"], 1.0), (row["model_b"], -1.0)):
            overall = row["scope"] in (OVERALL, OVERALL_BY_CATEGORY)
            scope = ("c1", "c2") if overall else (row["scope"],)
            n_tasks = sum(len(tasks_of[(model, c)]) for c in scope)
            for category in scope:
                for task in tasks_of[(model, category)]:
                    weights[cells.index(f"{model}|{task}")] += (
                        sign / n_tasks  # each task weighs the same
                        if row["scope"] == OVERALL
                        else sign / len(scope) / len(tasks_of[(model, category)])
                    )
        expected = math.sqrt(weights @ cov @ weights)
        assert row["se_within"] == pytest.approx(expected, rel=1e-10, abs=1e-14)
        assert weights @ fit.params == pytest.approx(row["diff"], abs=1e-12)
        checked += 1
    assert checked == 12  # 3 pairs x (c1, c2, overall, overall_by_category)


def _wls_task_clustered(part: pl.DataFrame, a: str) -> tuple[float, float]:
    """(coefficient of model a, its variance): the WLS fit of the scores on (1, model a)
    with weights 1/(tasks of the model x episodes of the cell) and task clusters, CR0 times
    G/(G-1), G the tasks."""
    n_tasks = part.group_by("model").agg(pl.col("task").n_unique().alias("n_t"))
    part = part.join(n_tasks, on="model").with_columns(
        pl.len().over("model", "task").alias("n_cell")
    )
    weights = 1.0 / (part["n_t"] * part["n_cell"]).cast(pl.Float64).to_numpy()
    exog = sm.add_constant((part["model"] == a).to_numpy().astype(float))
    task_ids = np.unique(part["task"].to_numpy(), return_inverse=True)[1]
    fit = sm.WLS(part["score"].to_numpy(), exog, weights=weights).fit(
        cov_type="cluster", cov_kwds={"groups": task_ids, "use_correction": False}
    )
    g = len(np.unique(task_ids))
    return float(fit.params[1]), float(fit.bse[1] ** 2 * g / (g - 1))


def _coverage_patterns(x: dict[str, float], y: dict[str, float]) -> list[tuple[float, float]]:
    """The two-level variance of ``mean(x) - mean(y)`` over one stratum (task scores by
    task), as docs/comparisons.md states it, in pieces (variance, degrees of freedom): the
    tasks both ran, those only x ran and those only y ran are each a sample of their own
    (ψ = x/n_x - y/n_y, x/n_x or -y/n_y: k · its sample variance, k - 1 df); a pattern of
    one task borrows its models' own variance over their tasks (both models: each one's,
    the covariance left out)."""
    wx, wy = 1.0 / len(x), 1.0 / len(y)
    own = {
        "x": (np.var([wx * v for v in x.values()], ddof=1), len(x) - 1),
        "y": (np.var([wy * v for v in y.values()], ddof=1), len(y) - 1),
    }
    pieces: list[tuple[float, float]] = []
    borrowed = {"x": 0, "y": 0}
    for tasks, psi, members in (
        (sorted(x.keys() & y.keys()), lambda t: wx * x[t] - wy * y[t], "xy"),
        (sorted(x.keys() - y.keys()), lambda t: wx * x[t], "x"),
        (sorted(y.keys() - x.keys()), lambda t: -wy * y[t], "y"),
    ):
        if len(tasks) > 1:
            pieces.append((len(tasks) * np.var([psi(t) for t in tasks], ddof=1), len(tasks) - 1))
        elif tasks:
            for member in members:
                borrowed[member] += 1
    pieces += [(uses * own[m][0], own[m][1]) for m, uses in borrowed.items() if uses]
    return pieces


def _satterthwaite(pieces: list[tuple[float, float]]) -> tuple[float, float]:
    variance = sum(v for v, _ in pieces)
    return variance, variance**2 / sum(v**2 / df for v, df in pieces)


@pytest.mark.parametrize("seed", range(3))
def test_se_tasks_equals_statsmodels_wls_clustered_by_task(seed: int) -> None:
    """Tasks a sample (the two-level design, ``se_tasks``): within a category, and for the
    task-weighted ``overall`` over every task (one pool), where both models ran the same
    tasks, the WLS fit of the scores on (1, model a) with weights 1/(tasks x episodes of the
    cell) and task clusters, CR0 times G/(G-1); ``overall_by_category``, the sum over
    categories (strata) of (1/C)² times each category's. Where they did not (model c lacks
    t5), the coverage patterns of the documented decomposition (``_coverage_patterns``),
    with Satterthwaite's degrees of freedom."""
    frame = mixed_design(seed)
    table = model_comparisons(frame)
    data = _cells(frame)
    means = data.group_by("model", "category", "task").agg(pl.col("cell_mean").first())

    def scores(model: str, categories: tuple[str, ...]) -> dict[str, float]:
        chosen = means.filter(pl.col("category").is_in(categories), model=model)
        return dict(zip(chosen["task"].to_list(), chosen["cell_mean"].to_list(), strict=True))

    patterned = 0
    for a, b in [("a", "b"), ("a", "c"), ("b", "c")]:
        strata: list[tuple[float, float]] = []
        for category in ("c1", "c2"):
            row = one_row(table, scope=category, model_a=a, model_b=b)
            x, y = scores(a, (category,)), scores(b, (category,))
            if x.keys() == y.keys():
                part = data.filter(pl.col("model").is_in([a, b]), category=category)
                diff, variance = _wls_task_clustered(part, a)
                assert diff == pytest.approx(row["diff"], abs=1e-12)
                df = len(x) - 1.0
            else:
                variance, df = _satterthwaite(_coverage_patterns(x, y))
                patterned += 1
            assert row["se_tasks"] == pytest.approx(math.sqrt(variance), rel=1e-10)
            assert row["df"] == pytest.approx(df, rel=1e-10)
            strata.append((variance / 4, df))
        overall = one_row(table, scope=OVERALL_BY_CATEGORY, model_a=a, model_b=b)
        variance, df = _satterthwaite(strata)
        assert overall["se_tasks"] == pytest.approx(math.sqrt(variance), rel=1e-10)
        assert overall["df"] == pytest.approx(df, rel=1e-10)
        x, y = scores(a, ("c1", "c2")), scores(b, ("c1", "c2"))
        overall = one_row(table, scope=OVERALL, model_a=a, model_b=b)
        if x.keys() == y.keys():
            diff, pooled = _wls_task_clustered(data.filter(pl.col("model").is_in([a, b])), a)
            assert diff == pytest.approx(overall["diff"], abs=1e-12)
        else:
            pooled, df = _satterthwaite(_coverage_patterns(x, y))
            assert overall["df"] == pytest.approx(df, rel=1e-10)
            patterned += 1
        assert overall["se_tasks"] == pytest.approx(math.sqrt(pooled), rel=1e-10)
    assert patterned == 4  # (a, c) and (b, c): in c2 and overall
    # Every category has two tasks or more: the default design's se is the two-level one.
    assert table["design"].unique().to_list() == ["two_level"]
    assert_frame_equal(table.select(pl.col("se").alias("se_tasks")), table.select("se_tasks"))


@pytest.mark.parametrize(("tasks", "episodes"), [(2, 1), (3, 1), (5, 1), (4, 3)])
def test_models_on_disjoint_tasks_are_welchs_two_sample_test(tasks: int, episodes: int) -> None:
    """Two models that ran no task in common: their task scores are two independent
    samples, and the comparison is Welch's t-test of them (``scipy.stats.ttest_ind``,
    ``equal_var=False``): its standard error, degrees of freedom and p-value, in every
    scope (a single category here). Before, the stratum's task count stood in for each
    model's own: a smaller standard error and more degrees of freedom."""
    rng = np.random.default_rng(tasks * 10 + episodes)
    rows = [
        ("d", model, "c", f"{model}{t}", f"{model}{t}-{e}", float(rng.uniform(0, 1)), None)
        for model in ("a", "b")
        for t in range(tasks)
        for e in range(episodes)
    ]
    frame = rows_frame(rows)
    task_means = frame.group_by("model", "task").agg(pl.col("score").mean()).sort("task")
    a, b = (task_means.filter(model=m)["score"].to_numpy() for m in ("a", "b"))
    welch = scipy_stats.ttest_ind(a, b, equal_var=False)
    table = model_comparisons(frame)
    for scope in ("c", OVERALL, OVERALL_BY_CATEGORY):
        row = one_row(table, scope=scope, model_a="a")
        assert (row["n_tasks"], row["design"]) == (0, "two_level")
        assert row["diff"] / row["se"] == pytest.approx(welch.statistic, rel=1e-12)
        assert row["df"] == pytest.approx(welch.df, rel=1e-12)
        assert row["p_value"] == pytest.approx(welch.pvalue, rel=1e-12)


def test_partial_coverage_gives_the_same_bits_in_any_row_order() -> None:
    """Models missing different tasks (coverage patterns of one task and of several, and a
    night missing a task against its baseline): the variance is summed pattern by pattern in
    a fixed order, so any order of the rows gives the same bits."""
    frame = mixed_design(7).filter(
        ~((pl.col("model") == "a") & (pl.col("task") == "t1")),
        ~((pl.col("model") == "b") & (pl.col("task") == "t3")),
    )
    nights = simulate(np.random.default_rng(2), 3, models=("a", "b", "c")).filter(
        ~((pl.col("dump_date") == "2026-0002") & (pl.col("task") == "t1"))
    )
    assert model_comparisons(frame).filter(pl.col("n_tasks") < 5).height > 0
    for function, scores in (
        (model_comparisons, frame),
        (score_intervals, frame),
        (rank_intervals, frame),
        (regressions, nights),
    ):
        once = function(scores)
        for seed in range(3):
            shuffled = scores.sample(fraction=1.0, shuffle=True, seed=seed)
            assert_frame_equal(function(shuffled), once, check_exact=True)


def test_a_comparison_nothing_can_estimate_is_null_and_unresolved() -> None:
    """Two models with one task each, on different tasks: nothing says how either model's
    task scores vary (the README's promise: ``se``, p and the interval null, the verdict
    ``unresolved``; never a zero-width interval, an MDE of 0 or a verdict), in every scope
    and whatever the episodes within the tasks. The same for a night against a baseline
    night on another task, and for a formula change that swaps two such models."""
    rows = [("d", "a", "c", "t1", f"a{i}", 0.9 - 0.01 * i, None) for i in range(4)]
    rows += [("d", "b", "c", "t2", f"b{i}", 0.2 + 0.01 * i, None) for i in range(4)]
    frame = rows_frame(rows)
    table = model_comparisons(frame)
    assert table.height == 6  # both orders of c, overall, overall_by_category
    for row in table.iter_rows(named=True):
        assert row["design"] == "none", row
        for column in ("se", "se_tasks", "df", "ci_low", "ci_high", "p_value", "p_holm", "mde"):
            assert row[column] is None, (column, row)
        assert row["verdict"] == UNRESOLVED
    tiers = significance_tiers(table)
    assert tiers["tier"].to_list() == [1, 1]  # not set apart
    night = pl.concat([frame, frame.with_columns(pl.lit("e").alias("dump_date"))])
    night = night.with_columns(
        pl.when(pl.col("dump_date") == "e").then(pl.lit("t3")).otherwise("task").alias("task"),
        pl.format("{}{}", "dump_date", "episode_id").alias("episode_id"),
    )
    for row in regressions(night).iter_rows(named=True):
        assert (row["se"], row["p_value"], row["ci_low"], row["mde"]) == (None,) * 4, row
        assert (row["design"], row["level"]) == ("none", LEVEL_NOT_COMPARABLE)
    swapped = frame.with_columns(
        pl.when(pl.col("model") == "a").then(0.1).otherwise(0.95).alias("score")
    )
    changes = rescore_rank_changes(frame, swapped)
    assert changes.height == 1
    change = changes.row(0, named=True)
    assert (change["se"], change["p_value"], change["significant"]) == (None, None, False)


def test_se_is_the_paired_t_and_the_welch_standard_error() -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, 30)
    b = np.clip(a - 0.1 + rng.normal(0, 0.1, 30), 0, 1)
    rows = [("d", "a", "c", "t", f"a{i}", float(a[i]), f"i{i}") for i in range(30)]
    rows += [("d", "b", "c", "t", f"b{i}", float(b[i]), f"i{i}") for i in range(30)]
    row = one_row(model_comparisons(rows_frame(rows)), scope=OVERALL, model_a="a")
    t = scipy_stats.ttest_rel(a, b)
    assert row["se"] == pytest.approx(float(np.mean(a - b)) / t.statistic, rel=1e-12)
    assert (row["paired"], row["n_pairs"], row["n_tasks"]) == (PAIRED_FULL, 30, 1)
    assert row["se_tasks"] is None  # one task: no spread of tasks to measure
    # ... so its within-task variance stands in, with the paired t's own reference
    assert row["design"] == WITHIN
    assert row["df"] == pytest.approx(29.0, rel=1e-12)
    assert row["p_value"] == pytest.approx(t.pvalue, rel=1e-12)
    c = rng.uniform(0, 1, 17)
    rows = [("d", "a", "c", "t", f"a{i}", float(a[i]), None) for i in range(30)]
    rows += [("d", "c", "c", "t", f"c{i}", float(c[i]), None) for i in range(17)]
    row = one_row(model_comparisons(rows_frame(rows)), scope="c", model_a="a")
    t = scipy_stats.ttest_ind(a, c, equal_var=False)
    assert row["se"] == pytest.approx((a.mean() - c.mean()) / t.statistic, rel=1e-12)
    assert (row["paired"], row["n_pairs"]) == (PAIRED_NONE, 0)


def holm_steps(table: pl.DataFrame, alpha: float = 0.05) -> np.ndarray:
    """Per row of ``model_comparisons``, the level Holm's step-down procedure tests its
    p-value at, from statsmodels' ``multipletests`` over the night and scope's unordered
    pairs: ``alpha / (m - k)``, ``k`` the pairs rejected before its step."""
    level = np.full(table.height, np.nan)
    keyed = table.with_row_index("row").with_columns(
        pl.min_horizontal("model_a", "model_b").alias("first"),
        pl.max_horizontal("model_a", "model_b").alias("second"),
    )
    for _, family in keyed.group_by("dump_date", "scope"):
        pairs = family.unique(["first", "second"]).sort("first", "second")
        p = pairs["p_value"].to_numpy()
        reject = rejected(p, "holm", alpha)
        order = np.argsort(p, kind="stable")
        before = {}
        for place, i in enumerate(order):
            before[i] = place if reject[i] else int(reject.sum())
        for i, (first, second) in enumerate(pairs.select("first", "second").iter_rows()):
            rows = family.filter(first=first, second=second)["row"].to_list()
            level[rows] = alpha / (len(p) - before[i])
    return level


def test_p_value_interval_and_mde_equal_scipy_t_with_the_design_df() -> None:
    """Two-level: Student's t with Satterthwaite's degrees of freedom over the strata; the
    MDE at the level Holm tests the pair at (``holm_steps``): the verdict's."""
    table = model_comparisons(mixed_design(5), design="two_level")
    diff, se, df = (table[c].to_numpy() for c in ("diff", "se", "df"))
    np.testing.assert_allclose(
        table["p_value"].to_numpy(), 2 * scipy_stats.t.sf(np.abs(diff / se), df), atol=1e-12
    )
    # (held to [-1, 1], the differences two scores in [0, 1] can have)
    low, high = np.clip(scipy_stats.t.interval(0.95, df, loc=diff, scale=se), -1.0, 1.0)
    np.testing.assert_allclose(table["ci_low"].to_numpy(), low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(table["ci_high"].to_numpy(), high, rtol=0, atol=1e-12)
    level = holm_steps(table)
    mde = (scipy_stats.t.ppf(1 - level / 2, df) + scipy_stats.t.ppf(0.8, df)) * se
    mde[mde > 1.0] = np.nan  # past the scores' range: not shown (test_unestimable.py)
    assert np.isnan(mde).any() and not np.isnan(mde).all()
    np.testing.assert_allclose(table["mde"].to_numpy(), mde, rtol=1e-12)
    ninety = model_comparisons(mixed_design(5), level=0.9)  # the interval's level, not the test's
    low, high = np.clip(scipy_stats.t.interval(0.9, df, loc=diff, scale=se), -1.0, 1.0)
    np.testing.assert_allclose(ninety["ci_low"].to_numpy(), low, rtol=0, atol=1e-12)
    assert_frame_equal(ninety.select("p_value", "verdict"), table.select("p_value", "verdict"))
    # Satterthwaite: (Σ v_c)² / Σ v_c² / (G_c - 1), v_c each category's part of se_tasks².
    row = one_row(table, scope=OVERALL_BY_CATEGORY, model_a="a", model_b="b")
    parts = [one_row(table, scope=c, model_a="a", model_b="b")["se"] ** 2 / 4 for c in ("c1", "c2")]
    expected = sum(parts) ** 2 / (parts[0] ** 2 / 1 + parts[1] ** 2 / 2)
    assert row["df"] == pytest.approx(expected, rel=1e-12)


def test_p_value_interval_and_mde_equal_scipy() -> None:
    """Tasks fixed (the previous choice, kept): the normal."""
    table = model_comparisons(mixed_design(5), design=WITHIN)
    assert table["df"].null_count() == table.height
    diff, se = table["diff"].to_numpy(), table["se"].to_numpy()
    z80 = scipy_stats.norm.ppf(0.8)
    np.testing.assert_allclose(
        table["p_value"].to_numpy(), 2 * scipy_stats.norm.sf(np.abs(diff / se)), rtol=0, atol=1e-12
    )
    low, high = scipy_stats.norm.interval(0.95, loc=diff, scale=se)
    np.testing.assert_allclose(table["ci_low"].to_numpy(), low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(table["ci_high"].to_numpy(), high, rtol=0, atol=1e-12)
    z = scipy_stats.norm.ppf(1 - holm_steps(table) / 2)
    np.testing.assert_allclose(table["mde"].to_numpy(), (z + z80) * se, rtol=1e-12)
    assert set(table["paired"].to_list()) == {PAIRED_PARTIAL}


def test_holm_runs_over_the_unordered_pairs_of_a_night_and_scope() -> None:
    rng = np.random.default_rng(2)
    frame = simulate(
        rng, 2, models=("a", "b", "c", "d"), shared=10, alone=5, shift={"a": 0.08, "d": -0.04}
    )
    # (the verdict asserted below needs the tasks-fixed design: two tasks a category
    # cannot tell a 0.12 difference from how tasks vary)
    table = model_comparisons(frame, design=WITHIN)
    assert table.height == 2 * 4 * 12  # nights x scopes x ordered pairs
    for (_, _), group in table.group_by("dump_date", "scope"):
        half = group.filter(pl.col("model_a") < pl.col("model_b")).sort("model_a", "model_b")
        assert half.height == 6
        expected = adjusted(half["p_value"].to_numpy(), "holm")
        np.testing.assert_array_equal(half["p_holm"].to_numpy(), expected)
        for row in half.iter_rows(named=True):
            mirror = one_row(group, model_a=row["model_b"], model_b=row["model_a"])
            assert mirror["p_holm"] == row["p_holm"]
            verdict = (
                UNRESOLVED if row["p_holm"] >= 0.05 else (A_BETTER if row["diff"] > 0 else B_BETTER)
            )
            assert row["verdict"] == verdict
            assert mirror["verdict"] == {A_BETTER: B_BETTER, B_BETTER: A_BETTER}.get(
                verdict, verdict
            )
    assert one_row(table, dump_date="2026-0000", scope=OVERALL, model_a="a", model_b="d")[
        "verdict"
    ] == (A_BETTER)
    # A significant pair whose first model is the worse one: b better, on either row.
    worse_first = model_comparisons(
        simulate(np.random.default_rng(2), 1, models=("a", "b"), shift={"b": 0.3}), design=WITHIN
    )
    row = one_row(worse_first, scope=OVERALL, model_a="a", model_b="b")
    assert row["diff"] < 0 and row["p_holm"] < 0.05 and row["verdict"] == B_BETTER
    assert one_row(worse_first, scope=OVERALL, model_a="b", model_b="a")["verdict"] == A_BETTER
    # Strictly below alpha: a Holm p-value equal to alpha leaves the pair unresolved.
    key = {"dump_date": "2026-0000", "scope": OVERALL, "model_a": "a", "model_b": "d"}
    at = one_row(table, **key)["p_holm"]
    assert one_row(model_comparisons(frame, alpha=at, design=WITHIN), **key)["verdict"] == (
        UNRESOLVED
    )


def test_an_undated_dump_is_compared_like_a_dated_night_and_sorted_last() -> None:
    """A dump without ``dump_date`` (null) is one night of its own: its comparisons and
    score intervals are those of the same scores dated, listed after the dated nights."""
    frame = simulate(np.random.default_rng(3), 2, models=("a", "b", "c"), shared=8, alone=4)
    undated = pl.col("dump_date") == "2026-0001"
    table = model_comparisons(
        frame.with_columns(pl.when(undated).then(None).otherwise("dump_date").alias("dump_date"))
    )
    dated = model_comparisons(frame)
    assert table["dump_date"].is_null().sum() == dated.filter(undated).height > 0
    assert table["dump_date"].is_null().to_list() == sorted(table["dump_date"].is_null())
    assert_frame_equal(
        table.filter(pl.col("dump_date").is_null()).drop("dump_date"),
        dated.filter(undated).drop("dump_date"),
    )
    moved = frame.with_columns(
        pl.when(undated).then(None).otherwise("dump_date").alias("dump_date")
    )
    ranked = (
        (rank_intervals(moved), rank_intervals(frame)),
        (significance_tiers(table), significance_tiers(dated)),
    )
    for got, want in ranked:
        assert got["dump_date"].is_null().to_list() == sorted(got["dump_date"].is_null())
        assert_frame_equal(
            got.filter(pl.col("dump_date").is_null()).drop("dump_date"),
            want.filter(undated).drop("dump_date"),
        )
    intervals, dated_intervals = score_intervals(moved), score_intervals(frame)
    assert intervals["dump_date"].is_null().to_list() == sorted(intervals["dump_date"].is_null())
    assert_frame_equal(
        intervals.filter(pl.col("dump_date").is_null()).drop("dump_date"),
        dated_intervals.filter(undated).drop("dump_date"),
    )


def test_rows_of_a_pair_mirror_each_other_exactly() -> None:
    table = model_comparisons(mixed_design(1))
    for row in table.iter_rows(named=True):
        mirror = one_row(table, scope=row["scope"], model_a=row["model_b"], model_b=row["model_a"])
        assert mirror["diff"] == -row["diff"]
        assert (mirror["ci_low"], mirror["ci_high"]) == (-row["ci_high"], -row["ci_low"])
        same = ("se", "se_tasks", "se_within", "df", "design", "p_value", "p_holm", "mde")
        for column in (*same, "n_pairs", "n_tasks", "p_wilcoxon"):
            assert mirror[column] == row[column]
        assert (mirror["n_tasks_a_better"], mirror["n_tasks_b_better"]) == (
            row["n_tasks_b_better"],
            row["n_tasks_a_better"],
        )
        assert (mirror["n_episodes_a"], mirror["score_a"]) == (
            row["n_episodes_b"],
            row["score_b"],
        )


def test_overall_compares_only_models_covering_the_same_categories() -> None:
    rng = np.random.default_rng(4)
    frame = simulate(rng, 1, models=("a", "b", "c"), shared=6, alone=2)
    frame = frame.filter((pl.col("model") != "c") | (pl.col("category") == "c1"))
    table = model_comparisons(frame)
    overall = table.filter(scope=OVERALL)
    assert sorted(zip(overall["model_a"], overall["model_b"], strict=True)) == [
        ("a", "b"),
        ("b", "a"),
    ]
    assert table.filter(scope="c1").height == 6
    assert table.filter(scope="c2").height == 2
    ranks = rank_intervals(frame)
    c = one_row(ranks, model="c")
    assert (c["ranked_among"], c["n_ranked"], c["rank_low"], c["rank_high"], c["rank_ub"]) == (
        "c1",
        1,
        1,
        1,
        1,
    )
    assert set(ranks.filter(pl.col("model") != "c")["ranked_among"].to_list()) == {"c1,c2"}
    tiers = significance_tiers(table)
    assert sorted(tiers["model"].to_list()) == ["a", "b"]  # c has nobody to be compared with


def test_a_single_episode_or_instance_leaves_the_variance_unknown() -> None:
    rows = [("d", "a", "c", "t", "a1", 0.5, None), ("d", "a", "c", "t", "a2", 0.7, None)]
    rows += [("d", "b", "c", "t", "b1", 0.4, None)]
    row = one_row(model_comparisons(rows_frame(rows)), scope="c", model_a="a")
    assert row["diff"] == pytest.approx(0.2)
    assert (row["se"], row["p_value"], row["p_holm"], row["verdict"]) == (
        None,
        None,
        None,
        UNRESOLVED,
    )
    assert row["design"] == "none"  # said, not silent: no variance can be estimated


def test_p_wilcoxon_is_scipys_test_of_the_task_differences_of_each_pair() -> None:
    """Over the tasks of the scope both models ran, the differences of their task scores
    (each task's mean over its episodes): ``scipy.stats.wilcoxon`` of them, and the tasks
    each model won."""
    frame = mixed_design(2)
    table = model_comparisons(frame)
    tasks = frame.group_by("model", "category", "task").agg(pl.col("score").mean())
    checked = 0
    for row in table.iter_rows(named=True):
        scope = row["scope"]
        chosen = tasks if scope in (OVERALL, OVERALL_BY_CATEGORY) else tasks.filter(category=scope)
        a = chosen.filter(model=row["model_a"]).drop("model")
        b = chosen.filter(model=row["model_b"]).drop("model")
        both = a.join(b, on=["category", "task"], suffix="_b").sort("category", "task")
        d = (both["score"] - both["score_b"]).to_numpy()
        assert row["n_tasks"] == len(d)
        assert (row["n_tasks_a_better"], row["n_tasks_b_better"]) == (
            int((d > 0).sum()),
            int((d < 0).sum()),
        )
        # (the task means of the table and of this test agree to rounding, not in every bit)
        assert row["p_wilcoxon"] == pytest.approx(scipy_stats.wilcoxon(d).pvalue, abs=1e-12)
        checked += 1
    assert checked == table.height == 24


def test_tasks_won_count_strict_wins_of_either_side_and_no_ties() -> None:
    """Models of equal ability (task wins on both sides) and one task where b's episodes
    are a's (a tie): the tasks each side won, over the tasks both ran, from the task means;
    a pair without a common task won none and has no Wilcoxon test."""
    frame = simulate(np.random.default_rng(15), 1, models=("a", "b"), shared=6, alone=0)
    tie = (pl.col("task") == "t1") & (pl.col("model") == "b")
    a_t1 = frame.filter(model="a", task="t1").sort("instance_id")["score"]
    frame = pl.concat(
        [frame.filter(~tie), frame.filter(tie).sort("instance_id").with_columns(score=a_t1)]
    )
    table = model_comparisons(frame)
    means = frame.group_by("model", "category", "task").agg(pl.col("score").mean())
    d = (
        means.filter(model="a")
        .join(means.filter(model="b"), on=["category", "task"])
        .select(pl.col("score") - pl.col("score_right"))
        .to_series()
    )
    row = one_row(table, scope=OVERALL, model_a="a", model_b="b")
    assert (d == 0).sum() == 1 and (d > 0).any() and (d < 0).any()
    assert (row["n_tasks_a_better"], row["n_tasks_b_better"]) == ((d > 0).sum(), (d < 0).sum())
    # c1: a ran t1 only, b t2 only
    apart = frame.filter(
        ~((pl.col("model") == "a") & (pl.col("task") == "t2"))
        & ~((pl.col("model") == "b") & (pl.col("task") == "t1"))
    )
    row = one_row(model_comparisons(apart), scope="c1", model_a="a", model_b="b")
    assert (row["n_tasks"], row["n_tasks_a_better"], row["n_tasks_b_better"]) == (0, 0, 0)
    assert row["p_wilcoxon"] is None


def test_score_intervals_stay_in_the_score_range_unless_a_score_left_it() -> None:
    """Three tasks (2 df, t = 4.30): the t interval ``score ± t · se`` reaches past 0 and 1.
    A score of values in [0, 1] (``SCORE_RANGE``) gets Korn and Graubard's interval
    instead (statsmodels' Clopper-Pearson interval of its effective sample, shrunk for
    the degrees of freedom), inside the range; on a side an episode of the scope scored past
    (a runtime RL ``floor`` above 1 can give 1.3) the t interval stays, held to the bound
    no episode left."""
    rows = [
        ("d", model, "c", f"t{i}", f"{model}{i}", score, None)
        for model, scores in (("inside", (0.05, 0.9, 1.0)), ("past", (0.05, 0.9, 1.3)))
        for i, score in enumerate(scores)
    ]
    table = score_intervals(rows_frame(rows))
    for scope in ("c", OVERALL, OVERALL_BY_CATEGORY):
        for model in ("inside", "past"):
            row = one_row(table, model=model, scope=scope)
            half = scipy_stats.t.ppf(0.975, 2) * row["se"]
            assert row["score"] - half < 0 and row["score"] + half > 1  # the t interval
            if model == "past":
                assert row["ci_low"] == 0.0
                assert row["ci_high"] == pytest.approx(row["score"] + half, rel=1e-12)
                continue
            p, variance = row["score"], row["se"] ** 2
            shrink = (scipy_stats.norm.ppf(0.975) / scipy_stats.t.ppf(0.975, 2)) ** 2
            n = p * (1 - p) / variance * shrink
            low, high = proportion_confint(p * n, n, 0.05, method="beta")
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-10)
            assert 0.0 < row["ci_low"] < row["score"] < row["ci_high"] < 1.0


def test_a_category_of_one_task_lends_its_within_task_variance() -> None:
    """c1 has one task (how tasks vary cannot be measured there), c2 two: the two-level
    variance of the overall difference is c1's within-task part plus c2's task part, said
    in ``design`` (``mixed``); c1's own comparison is the within-task one."""
    frame = mixed_design(4).filter(pl.col("task") != "t2", pl.col("task") != "t5")
    table = model_comparisons(frame)
    c1 = one_row(table, scope="c1", model_a="a", model_b="b")
    c2 = one_row(table, scope="c2", model_a="a", model_b="b")
    overall = one_row(table, scope=OVERALL_BY_CATEGORY, model_a="a", model_b="b")
    assert (c1["design"], c2["design"], overall["design"]) == (WITHIN, "two_level", "mixed")
    assert c1["se"] == c1["se_within"] and c1["se_tasks"] is None and overall["se_tasks"] is None
    expected = (c1["se_within"] ** 2 + c2["se_tasks"] ** 2) / 4
    assert overall["se"] == pytest.approx(math.sqrt(expected), rel=1e-12)
    fixed = one_row(
        model_comparisons(frame, design=WITHIN), scope=OVERALL_BY_CATEGORY, model_a="a", model_b="b"
    )
    assert fixed["se"] == pytest.approx(overall["se_within"], rel=1e-12)


# ---------------------------------------------------------------------------------------
# Properties


@st.composite
def small_frames(draw: st.DrawFn) -> pl.DataFrame:
    rows: list[tuple[object, ...]] = []
    n = 0
    for model in ("a", "b", "c")[: draw(st.integers(2, 3))]:
        for category, task in (("c1", "t1"), ("c1", "t2"), ("c2", "t3")):
            for _ in range(draw(st.integers(2, 5))):
                instance = draw(st.one_of(st.none(), st.sampled_from(["i1", "i2", "i3", "i4"])))
                score = draw(st.floats(0.0, 1.0))
                rows.append(("d", model, category, task, f"e{n}", score, instance))
                n += 1
    return rows_frame(rows)


@settings(max_examples=40, deadline=None)
@given(small_frames())
def test_swapping_models_negates_diff_and_keeps_p(frame: pl.DataFrame) -> None:
    table = model_comparisons(frame)
    swapped = model_comparisons(frame.with_columns(pl.col("model").replace({"a": "b", "b": "a"})))
    for row in table.filter(model_a="a", model_b="b").iter_rows(named=True):
        other = one_row(swapped, scope=row["scope"], model_a="a", model_b="b")
        assert other["diff"] == -row["diff"]
        if row["p_value"] is None:
            assert other["p_value"] is None
        else:
            assert other["p_value"] == pytest.approx(row["p_value"], rel=1e-12, abs=1e-15)
            assert other["se"] == pytest.approx(row["se"], rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(small_frames(), st.floats(-2.0, 2.0))
def test_shifting_a_model_shifts_diff_by_the_constant(frame: pl.DataFrame, c: float) -> None:
    table = model_comparisons(frame)
    moved = model_comparisons(
        frame.with_columns(
            pl.when(pl.col("model") == "a")
            .then(pl.col("score") + c)
            .otherwise(pl.col("score"))
            .alias("score")
        )
    )
    for row in table.filter(model_a="a").iter_rows(named=True):
        other = one_row(moved, scope=row["scope"], model_a="a", model_b=row["model_b"])
        assert other["diff"] == pytest.approx(row["diff"] + c, abs=1e-12)
        if row["se"] is not None:
            assert other["se"] == pytest.approx(row["se"], abs=1e-12)


# ---------------------------------------------------------------------------------------
# Calibration by simulation (seeded: the figures are those of these draws)


def _overall_ab(table: pl.DataFrame) -> pl.DataFrame:
    return table.filter(scope=OVERALL, model_a="a", model_b="b")


def test_aa_comparisons_reject_at_the_nominal_rate_and_the_mde_has_80_percent_power() -> None:
    """Tasks fixed, on the shape where that design serves (four tasks, 30 episodes each):
    2,000 nights of two models from one distribution (instances partly shared): 5% ± 1.5%
    rejected at α = 0.05 (after Holm, which is a no-op for one pair). Then 2,000 fresh
    nights with a planted difference equal to the MDE the A/A nights report: 80% ± 5%
    detected. (The two-level design on LearningBench's shape: ``test_calibration.py``.)"""
    nights = simulate(np.random.default_rng(20261202), 2000)
    aa = _overall_ab(model_comparisons(nights, design=WITHIN))
    assert aa.height == 2000
    assert set(aa["paired"].to_list()) == {PAIRED_PARTIAL}
    rejected = (aa["verdict"] != UNRESOLVED).mean()
    assert rejected == pytest.approx(0.05, abs=0.015), rejected
    mde = float(aa["mde"].mean())
    planted = _overall_ab(
        model_comparisons(simulate(np.random.default_rng(7), 2000, shift={"a": mde}), design=WITHIN)
    )
    detected = (planted["verdict"] == A_BETTER).mean()
    assert detected == pytest.approx(0.80, abs=0.05), (mde, detected)


def test_aa_comparisons_without_pairing_reject_at_the_nominal_rate() -> None:
    frame = simulate(np.random.default_rng(99), 2000, shared=0, alone=25)
    aa = _overall_ab(model_comparisons(frame, design=WITHIN))
    assert set(aa["paired"].to_list()) == {PAIRED_NONE}
    rejected = (aa["p_value"] < 0.05).mean()
    assert rejected == pytest.approx(0.05, abs=0.015), rejected


@pytest.mark.parametrize("baseline", ["previous", "mean"])
def test_aa_nights_raise_no_more_alerts_than_nominal(baseline: str) -> None:
    """200 nights of three unchanged models: alerts (BH q < 0.05 and a drop beyond the
    MDE) and watches (a drop with raw p < 0.05) at no more than the nominal 5% (tasks
    fixed, as the nightly simulator's four tasks call for; the two-level design is also
    at most nominal, below)."""
    frame = simulate(np.random.default_rng(3), 200, models=("a", "b", "c"), shared=20, alone=5)
    table = regressions(frame, baseline=baseline, k=7, design=WITHIN)  # type: ignore[arg-type]
    assert table.height == 199 * 3 * 3
    assert table["level"].is_in([LEVEL_NONE, LEVEL_WATCH, LEVEL_ALERT]).all()
    alert = (table["level"] == LEVEL_ALERT).mean()
    watch = (table["level"] == LEVEL_WATCH).mean()
    assert alert <= 0.05, alert
    assert watch <= 0.05, watch
    two_sided = (table["p_value"] < 0.05).mean()  # the test itself: about nominal
    assert two_sided == pytest.approx(0.05, abs=0.025), two_sided


# ---------------------------------------------------------------------------------------
# Regressions


def planted_drop() -> pl.DataFrame:
    """Four nights of three models; model b's scores drop by 0.1 on the third night."""
    frame = simulate(np.random.default_rng(8), 4, models=("a", "b", "c"), shared=40, alone=0)
    return frame.with_columns(
        pl.when((pl.col("model") == "b") & (pl.col("dump_date") == "2026-0003"))
        .then(pl.col("score") - 0.1)
        .otherwise(pl.col("score"))
        .alias("score")
    )


def test_a_planted_drop_is_an_alert_and_bh_runs_over_the_night() -> None:
    frame = planted_drop()
    table = regressions(frame)
    row = one_row(table, dump_date="2026-0003", model="b", scope=OVERALL)
    assert row["level"] == LEVEL_ALERT
    assert row["baseline_dates"] == "2026-0002"
    assert row["change"] == pytest.approx(row["score"] - row["baseline_score"])
    assert row["paired"] == PAIRED_FULL  # the same instances every night
    for _, night in table.group_by("dump_date"):
        expected = adjusted(night["p_value"].to_numpy(), "fdr_bh")
        np.testing.assert_array_equal(night["q_bh"].to_numpy(), expected)
    rises = table.filter(pl.col("change") > 0)
    assert not rises["level"].is_in([LEVEL_ALERT, LEVEL_WATCH]).any()
    high_margin = regressions(frame, margin=0.5)
    assert one_row(high_margin, dump_date="2026-0003", model="b", scope=OVERALL)["level"] == (
        LEVEL_WATCH
    )


def test_an_alert_needs_a_drop_beyond_the_whole_margin() -> None:
    """README "Comparisons": an alert is a drop with ``q_bh < alpha`` larger than the
    margin (default: the row's own ``mde``). A margin between the drop and twice the drop
    leaves the same significant drop a watch; a margin under the drop makes it an alert."""
    frame = planted_drop()
    table = regressions(frame)
    # The default margin is each row's mde, as computed (not a share of it).
    assert table["margin"].null_count() == table["mde"].null_count()
    assert (table["margin"] == table["mde"]).all()
    key = {"dump_date": "2026-0003", "model": "b", "scope": OVERALL}
    row = one_row(table, **key)
    assert row["change"] < 0 and row["q_bh"] < 0.05  # significant after BH, so margin decides
    drop = -row["change"]
    assert drop > row["margin"] and row["level"] == LEVEL_ALERT
    # q_bh does not depend on the margin: only the size of the drop against it does.
    watch = one_row(regressions(frame, margin=drop * 1.5), **key)
    assert (watch["q_bh"], watch["margin"]) == (row["q_bh"], drop * 1.5)
    assert watch["level"] == LEVEL_WATCH
    alert = one_row(regressions(frame, margin=drop / 1.5), **key)
    assert alert["level"] == LEVEL_ALERT
    # The same change upwards is significant and no regression at all.
    risen = frame.with_columns(
        pl.when((pl.col("model") == "b") & (pl.col("dump_date") == "2026-0003"))
        .then(pl.col("score") + 2 * drop)
        .otherwise(pl.col("score"))
        .alias("score")
    )
    rise = one_row(regressions(risen), **key)
    assert rise["change"] > 0 and rise["q_bh"] < 0.05 and rise["level"] == LEVEL_NONE
    # Every row: the README's rule applied to the row's own columns.
    for r in table.iter_rows(named=True):
        if r["reason"] is not None:
            expected = LEVEL_NOT_COMPARABLE
        elif r["change"] < 0 and r["q_bh"] < 0.05 and -r["change"] > r["margin"]:
            expected = LEVEL_ALERT
        elif r["change"] < 0 and r["p_value"] < 0.05:
            expected = LEVEL_WATCH
        else:
            expected = LEVEL_NONE
        assert r["level"] == expected, r


def test_mean_baseline_uses_the_last_k_nights() -> None:
    frame = simulate(np.random.default_rng(9), 5, models=("a",), shared=10, alone=0)
    table = regressions(frame, baseline="mean", k=3)
    row = one_row(table, dump_date="2026-0004", model="a", scope=OVERALL)
    assert row["baseline_dates"] == "2026-0001,2026-0002,2026-0003"
    assert row["n_baseline_nights"] == 3
    nightly = model_comparisons(frame)  # no pairs, but the scores are per night
    assert nightly.is_empty()
    scores = (
        frame.group_by("dump_date", "task")
        .agg(pl.col("score").mean())
        .group_by("dump_date")
        .agg(pl.col("score").mean())
    )
    base = scores.filter(pl.col("dump_date").is_in(["2026-0001", "2026-0002", "2026-0003"]))
    assert row["baseline_score"] == pytest.approx(base["score"].mean(), abs=1e-12)
    assert one_row(table, dump_date="2026-0001", model="a", scope=OVERALL)["n_baseline_nights"] == 1


def test_formula_coverage_and_harness_changes_are_not_regressions() -> None:
    frame = simulate(np.random.default_rng(10), 3, models=("a", "b"), shared=30, alone=0)
    frame = frame.with_columns(
        pl.when((pl.col("model") == "a") & (pl.col("dump_date") == "2026-0002"))
        .then(pl.col("score") - 0.3)
        .otherwise(pl.col("score"))
        .alias("score"),
        pl.when((pl.col("model") == "a") & (pl.col("dump_date") == "2026-0002"))
        .then(pl.lit("v2"))
        .otherwise(pl.lit("v1"))
        .alias("formula_version"),
    )
    # b loses task t4 on the last night: c2 and the overall score change their definition
    frame = frame.filter(
        ~(
            (pl.col("model") == "b")
            & (pl.col("dump_date") == "2026-0002")
            & (pl.col("task") == "t4")
        )
    )
    metadata = pl.DataFrame(
        {
            "dump_date": ["2026-0000", "2026-0001", "2026-0002"] * 2,
            "model": ["a"] * 3 + ["b"] * 3,
            "harness_errors": [0, 0, 0, 0, 3, 3],
        }
    )
    table = regressions(frame, metadata=metadata)
    for scope in ("c1", "c2", OVERALL):
        a = one_row(table, dump_date="2026-0002", model="a", scope=scope)
        assert a["level"] == LEVEL_NOT_COMPARABLE
        assert "formula versions changed" in a["reason"]
        assert a["q_bh"] is None
    assert (
        "tasks covered changed"
        in one_row(table, dump_date="2026-0002", model="b", scope="c2")["reason"]
    )
    assert one_row(table, dump_date="2026-0002", model="b", scope="c1")["level"] != (
        LEVEL_NOT_COMPARABLE
    )
    harness = one_row(table, dump_date="2026-0001", model="b", scope="c1")
    assert harness["level"] == LEVEL_NOT_COMPARABLE
    assert "harness errors changed: 0" in harness["reason"]
    tolerant = regressions(frame, metadata=metadata, harness_error_tolerance=5)
    assert one_row(tolerant, dump_date="2026-0001", model="b", scope="c1")["reason"] is None


def test_a_regressions_interval_p_value_and_mde_equal_scipy_at_the_documented_defaults() -> None:
    """README "Comparisons": a 95% interval, tests at alpha = 0.05 and an mde at 80% power,
    with the design's degrees of freedom (two-level: Student's t; tasks fixed: the normal)."""
    frame = planted_drop()
    for design in ("two_level", WITHIN):
        table = regressions(frame, design=design).filter(pl.col("se") > 0)
        change, se = table["change"].to_numpy(), table["se"].to_numpy()
        if design == WITHIN:
            assert table["df"].null_count() == table.height
            dist = scipy_stats.norm()
        else:
            dist = scipy_stats.t(table["df"].to_numpy())
        np.testing.assert_allclose(
            table["p_value"].to_numpy(), 2 * dist.sf(np.abs(change / se)), rtol=0, atol=1e-12
        )
        low, high = dist.interval(0.95)
        np.testing.assert_allclose(table["ci_low"].to_numpy(), change + low * se, atol=1e-12)
        np.testing.assert_allclose(table["ci_high"].to_numpy(), change + high * se, atol=1e-12)
        mde = (dist.ppf(0.975) + dist.ppf(0.8)) * se
        np.testing.assert_allclose(table["mde"].to_numpy(), mde, rtol=1e-12)
        watched = (table["change"] < 0) & (table["p_value"] < 0.05) & (table["level"] == "none")
        assert not watched.any()


def test_the_regressions_defaults_are_the_run_options_defaults() -> None:
    """``regressions``' own defaults (a library call without options) are the run's: the
    mean baseline's nights and the harness error share tolerance (flows.options), and no
    tolerance for a changed count of harness errors (docs/comparisons.md)."""
    defaults = RegressionOptions()
    nights = defaults.baseline_nights + 2
    frame = simulate(np.random.default_rng(11), nights, models=("a",), shared=10, alone=0)
    last = f"2026-{nights - 1:04d}"
    row = one_row(regressions(frame, baseline="mean"), dump_date=last, model="a", scope=OVERALL)
    assert row["n_baseline_nights"] == defaults.baseline_nights
    tolerance = defaults.harness_error_tolerance
    # From 0: a share moved by exactly the tolerance is within it.
    shares = ((tolerance * 0.75, True), (tolerance, True), (tolerance * 1.25, False))
    # From a nonzero share (0.3 on every night before): what counts is the change.
    shares += ((0.3, True), (0.3 + tolerance * 0.75, True), (0.3 + tolerance * 1.25, False))
    for moved, comparable in shares:
        before = 0.3 if moved >= 0.3 else 0.0
        metadata = pl.DataFrame(
            {
                "dump_date": [f"2026-{n:04d}" for n in range(nights)],
                "model": ["a"] * nights,
                "harness_error_share": [before] * (nights - 1) + [moved],
            }
        )
        row = one_row(regressions(frame, metadata=metadata), dump_date=last, model="a", scope="c1")
        assert (row["reason"] is None) == comparable, (moved, row["reason"])
    counts = pl.DataFrame(
        {
            "dump_date": [f"2026-{n:04d}" for n in range(nights)],
            "model": ["a"] * nights,
            "harness_errors": [0] * (nights - 1) + [1],
        }
    )
    row = one_row(regressions(frame, metadata=counts), dump_date=last, model="a", scope="c1")
    assert row["level"] == LEVEL_NOT_COMPARABLE and "harness errors changed" in row["reason"]
    unknown = counts.with_columns(  # a count on one side only: changed too
        pl.when(pl.col("dump_date") == last).then(None).otherwise(1).alias("harness_errors")
    )
    row = one_row(regressions(frame, metadata=unknown), dump_date=last, model="a", scope="c1")
    assert row["level"] == LEVEL_NOT_COMPARABLE and "harness errors changed" in row["reason"]
    # The bounds: a mean of one night is the previous night; no nights is refused.
    one = regressions(frame, baseline="mean", k=1).drop("baseline")
    assert_frame_equal(one, regressions(frame).drop("baseline"))
    with pytest.raises(ValueError, match="at least 1"):
        regressions(frame, baseline="mean", k=0)


def test_formula_versions_from_metadata_are_compared_scope_by_scope() -> None:
    """``metadata``'s ``formula_versions`` (``category=version,…``): a category is not
    comparable where its own version changed or appeared; the overall score where any did."""
    frame = simulate(np.random.default_rng(12), 3, models=("a",), shared=10, alone=0)
    metadata = pl.DataFrame(
        {
            "dump_date": ["2026-0000", "2026-0001", "2026-0002"],
            "model": ["a"] * 3,
            "formula_versions": [None, "c1=v1,c2=v1", "c1=v1,c2=v2"],
        }
    )
    table = regressions(frame, metadata=metadata)
    for scope in ("c1", "c2", OVERALL):  # night 1: the versions appeared
        row = one_row(table, dump_date="2026-0001", model="a", scope=scope)
        assert row["level"] == LEVEL_NOT_COMPARABLE and "formula versions" in row["reason"]
    assert one_row(table, dump_date="2026-0002", model="a", scope="c1")["reason"] is None
    for scope in ("c2", OVERALL):  # night 2: c2's version changed
        row = one_row(table, dump_date="2026-0002", model="a", scope=scope)
        assert row["level"] == LEVEL_NOT_COMPARABLE and "formula versions" in row["reason"]
    # A night without a metadata row at all is a night without versions.
    for present in (["2026-0001"], ["2026-0000"]):
        one_sided = regressions(
            frame,
            metadata=metadata.with_columns(pl.lit("c1=v1,c2=v1").alias("formula_versions")).filter(
                pl.col("dump_date").is_in(present)
            ),
        )
        row = one_row(one_sided, dump_date="2026-0001", model="a", scope="c1")
        assert row["level"] == LEVEL_NOT_COMPARABLE and "formula versions" in row["reason"]
    # The categories covered (metadata) define the overall score only.
    covered = metadata.select(
        "dump_date", "model", pl.Series("categories_covered", ["c1,c2", "c1,c2", "c1"])
    )
    table = regressions(frame, metadata=covered)
    row = one_row(table, dump_date="2026-0002", model="a", scope=OVERALL)
    assert row["level"] == LEVEL_NOT_COMPARABLE and "categories covered" in row["reason"]
    for scope in ("c1", "c2"):
        assert one_row(table, dump_date="2026-0002", model="a", scope=scope)["reason"] is None


@pytest.mark.parametrize("design", ["two_level", WITHIN])
def test_a_night_against_the_previous_is_a_comparison_of_two_models(design: str) -> None:
    """One night of models a and b, relabelled as two nights of one model (a the later):
    the regression's change, standard error, degrees of freedom and pairing are the
    comparison's of a with b."""
    frame = simulate(np.random.default_rng(13), 1, models=("a", "b"), shared=12, alone=5)
    compared = model_comparisons(frame, design=design)
    nights = frame.with_columns(
        pl.when(pl.col("model") == "a")
        .then(pl.lit("2026-0001"))
        .otherwise(pl.lit("2026-0000"))
        .alias("dump_date"),
        pl.lit("m").alias("model"),
    )
    table = regressions(nights, design=design)
    for scope in ("c1", "c2", OVERALL):
        pair = one_row(compared, model_a="a", model_b="b", scope=scope)
        night = one_row(table, dump_date="2026-0001", model="m", scope=scope)
        assert night["change"] == pytest.approx(pair["diff"], rel=1e-12)
        assert night["se"] == pytest.approx(pair["se"], rel=1e-12)
        assert (night["df"], night["n_pairs"], night["paired"]) == (
            pair["df"],
            pair["n_pairs"],
            pair["paired"],
        )
    unpaired = simulate(np.random.default_rng(13), 2, models=("a",), shared=0, alone=6)
    counted = regressions(unpaired)
    assert counted["n_pairs"].to_list() == [0] * counted.height


def test_the_levels_thresholds_are_strict() -> None:
    """README "Comparisons": an alert is ``q_bh < alpha`` and a drop *larger* than the
    margin, a watch ``p_value < alpha``: at equality, the weaker level."""
    frame = planted_drop()
    key = {"dump_date": "2026-0003", "model": "b", "scope": OVERALL}
    row = one_row(regressions(frame), **key)
    assert row["level"] == LEVEL_ALERT and row["p_value"] < row["q_bh"]
    assert one_row(regressions(frame, margin=-row["change"]), **key)["level"] == LEVEL_WATCH
    assert one_row(regressions(frame, alpha=row["q_bh"]), **key)["level"] == LEVEL_WATCH
    assert one_row(regressions(frame, alpha=row["p_value"]), **key)["level"] == LEVEL_NONE


def test_a_reason_names_the_latest_baseline_night_that_differs() -> None:
    """A mean baseline of three nights; model a's coverage of c2 (t4 on night 0, t3 and
    t4 on night 1, t3 from night 2) and formula (v0, v1, then v2) differ from nights 0 and 1
    and not from night 2: night 3's reasons cite night 1 and what it had."""
    frame = simulate(np.random.default_rng(14), 4, models=("a",), shared=10, alone=0)
    night = pl.col("dump_date").str.slice(-1).cast(pl.Int64)
    gone = ((night == 0) & (pl.col("task") == "t3")) | ((night >= 2) & (pl.col("task") == "t4"))
    frame = frame.filter(~gone).with_columns(
        pl.format("v{}", pl.min_horizontal(night, 2)).alias("formula_version")
    )
    table = regressions(frame, baseline="mean", k=3)
    reason = one_row(table, dump_date="2026-0003", model="a", scope="c2")["reason"]
    assert "tasks covered changed: 2 then, 1 now (gone: t4) since 2026-0001" in reason
    assert "formula versions changed: v1 on 2026-0001, v2 now" in reason


def test_inference_of_a_zero_standard_error_is_p_1_for_no_difference_else_0() -> None:
    """``inference``: a zero standard error gives p = 1 for an estimate of 0 and p = 0
    otherwise; a positive one, Student's t (df given) or the normal (df null)."""
    frame = pl.DataFrame(
        {
            "estimate": [0.0, 0.1, 0.0, 0.1, 0.1],
            Work.VAR: [0.0, 0.0, 0.01, 0.01, 0.01],
            Work.VAR_WITHIN: [0.0, 0.0, 0.01, 0.01, 0.01],
            Work.VAR_TASKS: [None, None, None, None, None],
            "df": [None, 4.0, None, None, 5.0],
        },
        schema_overrides={Work.VAR_TASKS: pl.Float64, "df": pl.Float64},
    )
    p = inference(frame, "estimate")["p_value"].to_list()
    assert p[:3] == [1.0, 0.0, 1.0]
    assert p[3] == pytest.approx(2 * scipy_stats.norm.sf(1.0), rel=1e-12)
    assert p[4] == pytest.approx(2 * scipy_stats.t.sf(1.0, 5), rel=1e-12)


def test_a_change_without_spread_keeps_the_degrees_of_freedom_of_its_tasks() -> None:
    """Two-level, a formula that moves every episode of three tasks by the same amount: the
    change's variance is 0 (a rescore scores the same episodes: the 0 stays, unlike a
    comparison of models, test_unestimable.py) and its degrees of freedom those of the task
    sample (3 - 1), by Satterthwaite's rule for a sum of zero variances (the sum of their
    df)."""
    rows = [
        ("d", "a", "c", task, f"a{task}{i}", 0.25, None)
        for task in ("t1", "t2", "t3")
        for i in range(3)
    ]
    old = rows_frame(rows)
    new = old.with_columns(pl.col("score") + 0.5)
    row = one_row(rescore_significance(old, new), scope=OVERALL)
    assert (row["se"], row["df"], row["p_value"]) == (0.0, 2.0, 0.0)


# ---------------------------------------------------------------------------------------
# Preparation: units, clusters, episodes kept


def _clusters_shared(prep: Prepared) -> int:
    """How many (task, cluster) of ``prep`` hold episodes of more than one unit."""
    units = prep.atoms.group_by(Work.TASK, Work.CLUSTER).agg(pl.col(Work.UNIT).n_unique())
    return units.filter(pl.col(Work.UNIT) > 1).height


@pytest.mark.parametrize("seed", range(6))
def test_clusters_are_the_shared_instances_and_each_episode_alone(seed: int) -> None:
    """Three models, two tasks; per model and task three episodes on the task's three
    instances and three without one, episode ids shuffled but for the smallest and the
    largest, on lone episodes of one task of two models in turn. Each episode without an
    instance is a cluster of its own: a unit's clusters in a task are its instances and its
    lone episodes, and only the instances are shared between models; in a rescore, a lone
    episode is shared only by itself under the other formula."""
    rng = np.random.default_rng(seed)
    rows = [
        (model, task, instance)
        for model in ("a", "b", "c")
        for task in ("t1", "t2")
        for instance in (*(f"{task}-{i}" for i in range(3)), None, None, None)
    ]
    ids = rng.permutation(len(rows))
    # The smallest id on a lone episode of a, b or c (by seed), the largest on one of the
    # model before it (in name order, c before a), in t1 (seeds 0-2) or t2 (3-5).
    owner, before, task = "abc"[seed % 3], "abc"[(seed - 1) % 3], "t1" if seed < 3 else "t2"
    smallest, largest = rows.index((owner, task, None)), rows.index((before, task, None)) + 2
    for row, wanted in ((smallest, 0), (largest, len(rows) - 1)):
        other = int(np.flatnonzero(ids == wanted)[0])
        ids[other], ids[row] = ids[row], wanted
    frame = rows_frame(
        [
            ("d", model, "c", task, f"e{ids[i]:02d}", float(rng.uniform()), instance)
            for i, (model, task, instance) in enumerate(rows)
        ]
    )
    prep = prepare(frame, ["dump_date", "model"])
    assert prep.cells[Work.G].to_list() == [6] * 6
    assert _clusters_shared(prep) == 2 * 3
    both = pl.concat([frame.with_columns(v=pl.lit(v)) for v in ("old", "new")])
    rescore = prepare(both, ["dump_date", "model", "v"])
    assert rescore.cells[Work.G].to_list() == [6] * 12
    assert _clusters_shared(rescore) == 2 * 3 + 3 * 2 * 3  # instances; lone episodes
    lone = rescore.atoms.group_by(Work.TASK, Work.CLUSTER).agg(pl.col(Work.UNIT).n_unique())
    assert sorted(lone[Work.UNIT].unique().to_list()) == [2, 6]  # old + new; 3 models x 2


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_within_task_standard_error_of_two_models_alone_is_welchs(n: int) -> None:
    """Tasks fixed, n episodes per model without instances (clusters of one episode): the
    standard error of the difference is Welch's, the small-sample factor applying from two
    clusters on; one episode each has none."""
    rng = np.random.default_rng(n)
    a, b = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    rows = [("d", "a", "c", "t", f"a{i}", float(s), None) for i, s in enumerate(a)]
    rows += [("d", "b", "c", "t", f"b{i}", float(s), None) for i, s in enumerate(b)]
    row = one_row(model_comparisons(rows_frame(rows), design=WITHIN), scope=OVERALL, model_a="a")
    if n == 1:
        assert row["se"] is None
        return
    t = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert row["se"] == pytest.approx((a.mean() - b.mean()) / t.statistic, rel=1e-12)


def test_episodes_without_a_score_are_left_out() -> None:
    """A null or NaN score is no score: comparisons and intervals of the night with such
    episodes added are those of the night without them."""
    frame = simulate(np.random.default_rng(23), 1, models=("a", "b"), shared=4, alone=2)
    extra = frame.head(2).with_columns(
        pl.Series("score", [None, float("nan")], pl.Float64),
        pl.format("x{}", "episode_id").alias("episode_id"),
    )
    padded = pl.concat([frame, extra])
    assert_frame_equal(model_comparisons(padded), model_comparisons(frame))
    assert_frame_equal(score_intervals(padded), score_intervals(frame))
    assert_frame_equal(score_intervals(padded.lazy()), score_intervals(frame))


# ---------------------------------------------------------------------------------------
# Rescore


def test_rescore_is_paired_episode_by_episode() -> None:
    rng = np.random.default_rng(12)
    old_scores = rng.uniform(0, 1, 40)
    new_scores = np.clip(old_scores + rng.normal(0.02, 0.05, 40), 0, 1)
    old = rows_frame(
        [("d", "a", "c", "t", f"e{i}", float(s), None) for i, s in enumerate(old_scores)]
    )
    new = old.with_columns(pl.Series("score", new_scores))
    table = rescore_significance(old, new)
    row = one_row(table, scope=OVERALL)
    t = scipy_stats.ttest_rel(new_scores, old_scores)
    assert row["delta"] == pytest.approx(float(np.mean(new_scores - old_scores)), abs=1e-12)
    assert row["se"] == pytest.approx(row["delta"] / t.statistic, rel=1e-12)
    # one task: its within-task variance, the paired t's reference (39 degrees of freedom)
    assert row["p_value"] == pytest.approx(t.pvalue, rel=1e-12)
    assert (row["paired"], row["n_pairs"], row["design"]) == (PAIRED_FULL, 40, WITHIN)
    fixed = one_row(rescore_significance(old, new, design=WITHIN), scope=OVERALL)
    assert fixed["p_value"] == pytest.approx(
        2 * scipy_stats.norm.sf(abs(fixed["delta"] / fixed["se"])), abs=1e-12
    )


def test_rank_change_significance() -> None:
    """c passes b by a wobble of its episodes that averages out (a change of 0.004 against
    a standard error of about 0.014: not significant); d passes everybody, every episode
    moved by 0.6 (significant)."""
    base = np.random.default_rng(13).uniform(0.2, 0.8, 50)
    wobble = np.where(np.arange(50) % 2 == 0, 0.1, -0.1)
    old_offsets = {"a": 0.2, "b": 0.0, "c": -0.002, "d": -0.3}
    new_offsets = {
        "a": 0.2 + 0 * wobble,
        "b": 0 * wobble,
        "c": 0.002 + wobble,
        "d": 0.3 + 0 * wobble,
    }
    rows_old, rows_new = [], []
    for model, offset in old_offsets.items():
        for i in range(50):
            key = ("d", model, "c", "t", f"{model}{i}")
            rows_old.append((*key, float(base[i] + offset), f"i{i}"))
            rows_new.append((*key, float(base[i] + new_offsets[model][i]), f"i{i}"))
    frame, new = rows_frame(rows_old), rows_frame(rows_new)
    changes = rescore_rank_changes(frame, new)
    pairs = {(r["model_a"], r["model_b"]): r for r in changes.iter_rows(named=True)}
    assert set(pairs) == {("c", "b"), ("d", "a"), ("d", "b"), ("d", "c")}
    assert not pairs[("c", "b")]["significant"]
    assert pairs[("c", "b")]["change"] == pytest.approx(0.004, abs=1e-12)
    assert pairs[("c", "b")]["se"] == pytest.approx(0.1 / math.sqrt(49), rel=1e-9)
    assert all(pairs[("d", m)]["significant"] for m in "abc")
    holm = adjusted(changes["p_value"].to_numpy(), "holm")
    np.testing.assert_array_equal(changes["p_holm"].to_numpy(), holm)
    per_model = rescore_significance(frame, new).filter(scope=OVERALL)
    significant = dict(zip(per_model["model"], per_model["rank_change_significant"], strict=True))
    assert significant == {"a": True, "b": True, "c": True, "d": True}
    assert one_row(per_model, model="d")["delta"] == pytest.approx(0.6, abs=1e-12)
    wobbled = rescore_rank_changes(frame, new.filter(pl.col("model") != "d"))
    assert wobbled["significant"].to_list() == [False]
    only_wobble = rescore_significance(frame, new.filter(pl.col("model") != "d"))
    flags = only_wobble.filter(scope=OVERALL)["rank_change_significant"].to_list()
    assert flags == [None, False, False]  # a's order is unchanged


def test_a_rescore_pairs_by_instance_where_both_sides_give_instances() -> None:
    """Three episodes per instance, the new formula moving each instance by its own shift:
    tasks fixed, the rescore's standard error is that of the two formulas compared as two
    models on the same instances (instance by instance), with the instances as its pairs;
    where one side lacks ``instance_id`` (history scored before contract 1.1), the
    episodes pair one by one, as where neither has it."""
    rng = np.random.default_rng(21)
    rows = [
        ("d", "a", "c", t, f"{t}-{i}-{e}", float(rng.uniform(0, 1)), f"{t}-i{i}")
        for t in ("t1", "t2", "t3")
        for i in range(6)
        for e in range(3)
    ]
    old = rows_frame(rows)
    shift = {instance: float(rng.normal(0, 0.2)) for instance in old[INSTANCE_ID].unique()}
    moved = pl.col("score") + pl.col(INSTANCE_ID).replace_strict(shift)
    new = old.with_columns(moved + pl.Series(rng.normal(0, 0.01, old.height)))
    two_models = pl.concat(
        [
            old.with_columns(model=pl.lit("old")),
            new.with_columns(model=pl.lit("new"), episode_id=pl.format("n{}", "episode_id")),
        ]
    )
    compared = one_row(model_comparisons(two_models, design=WITHIN), scope=OVERALL, model_a="new")
    by_instance = one_row(rescore_significance(old, new, design=WITHIN), scope=OVERALL)
    assert by_instance["delta"] == pytest.approx(compared["diff"], abs=1e-12)
    assert by_instance["se"] == pytest.approx(compared["se"], rel=1e-9)
    assert by_instance["n_pairs"] == 18
    by_episode = one_row(
        rescore_significance(old.drop(INSTANCE_ID), new.drop(INSTANCE_ID), design=WITHIN),
        scope=OVERALL,
    )
    assert by_episode["n_pairs"] == 54
    assert by_episode["se"] < 0.6 * by_instance["se"]  # the instances' shifts are paired out
    for one_side in ((old.drop(INSTANCE_ID), new), (old, new.drop(INSTANCE_ID))):
        row = one_row(rescore_significance(*one_side, design=WITHIN), scope=OVERALL)
        assert (row["se"], row["n_pairs"]) == (by_episode["se"], by_episode["n_pairs"])


def test_a_rescore_of_an_undated_dump_is_that_of_the_same_scores_dated_listed_last() -> None:
    frame = simulate(np.random.default_rng(22), 2, models=("a", "b", "c"), shared=8, alone=4)
    new = frame.with_columns(
        pl.col("score") + pl.col("model").replace_strict({"a": 0.0, "b": 0.0, "c": 0.3})
    )
    undated = pl.col("dump_date") == "2026-0001"
    no_date = pl.when(undated).then(None).otherwise("dump_date").alias("dump_date")
    for rescore in (rescore_significance, rescore_rank_changes):
        dated = rescore(frame, new)
        table = rescore(frame.with_columns(no_date), new.with_columns(no_date))
        assert table["dump_date"].is_null().sum() == dated.filter(undated).height > 0
        assert table["dump_date"].is_null().to_list() == sorted(table["dump_date"].is_null())
        assert_frame_equal(
            table.filter(pl.col("dump_date").is_null()).drop("dump_date"),
            dated.filter(undated).drop("dump_date"),
        )
    flags = rescore_significance(frame.with_columns(no_date), new.with_columns(no_date))
    assert flags.filter(pl.col("dump_date").is_null())["rank_change_significant"].any()


def test_rank_changes_are_of_pairs_comparable_under_both_formulas_a_tie_counted_once() -> None:
    """Two categories, instances of two episodes. a is unchanged; b, 0.125 behind a, ties
    with it under the new formula (the same scores); c passes from ahead of both to behind
    them, but the new formula scores none of its category c2 (its coverage changed: no
    longer comparable with a and b). Overall, the one change is a's tie with b: listed once,
    a first by name; the categories' rows are not pairs of the overall order."""
    rows_old, rows_new = [], []
    for category, task in (("c1", "t1"), ("c2", "t2")):
        for i in range(8):
            for model, old_offset, new_offset in (
                ("a", 0, 0),
                ("b", -0.125, 0),
                ("c", 0.25, -0.25),
            ):
                key = ("d", model, category, task, f"{model}{task}{i}")
                instance = f"{task}-{i % 4}"
                rows_old.append((*key, i / 16 + old_offset, instance))
                if not (model == "c" and category == "c2"):
                    rows_new.append((*key, i / 16 + new_offset, instance))
    changes = rescore_rank_changes(rows_frame(rows_old), rows_frame(rows_new))
    assert changes.select("model_a", "model_b", "old_diff", "new_diff").rows() == [
        ("a", "b", 0.125, 0.0)
    ]


def test_a_changed_order_without_a_standard_error_is_not_significant() -> None:
    """One episode per model: the change has no standard error, no p-value, and is not
    called significant (nor is either model's rank change)."""
    old = rows_frame(
        [("d", "a", "c", "t", "a0", 0.75, None), ("d", "b", "c", "t", "b0", 0.25, None)]
    )
    new = old.with_columns(pl.Series("score", [0.25, 0.75]))
    for design in ("two_level", WITHIN):
        change = rescore_rank_changes(old, new, design=design)
        assert change.select("model_a", "se", "p_holm", "significant").rows() == [
            ("b", None, None, False)
        ]
        flags = rescore_significance(old, new, design=design).filter(scope=OVERALL)
        assert flags["rank_change_significant"].to_list() == [False, False]


# ---------------------------------------------------------------------------------------
# Rank intervals and tiers


def test_rank_intervals_pair_instances_and_tasks() -> None:
    """b is a minus about 0.01 on every instance (give or take 0.002: a spread measured,
    not none, which says nothing: test_unestimable.py), with instances that differ a lot:
    paired (one task, its instances) a is certainly ahead, and the ranks are certain;
    without instance ids the episodes are two independent samples and the ranks overlap.
    The same with one episode on each of 60 tasks of very different difficulty: paired over
    the tasks."""
    rng = np.random.default_rng(14)
    base = rng.uniform(0, 1, 30)
    gap = 0.01 + rng.normal(0, 0.002, 60)
    rows = [("d", "a", "c", "t", f"a{i}", float(base[i]), f"i{i}") for i in range(30)]
    rows += [("d", "b", "c", "t", f"b{i}", float(base[i] - gap[i]), f"i{i}") for i in range(30)]

    def ranks_of(frame: pl.DataFrame) -> list[tuple[str, int, int, int]]:
        table = rank_intervals(frame)
        return [
            (r["model"], r["rank_low"], r["rank_high"], r["rank_ub"])
            for r in table.iter_rows(named=True)
        ]

    assert ranks_of(rows_frame(rows)) == [("a", 1, 1, 1), ("b", 2, 2, 2)]
    unpaired = rows_frame([(*r[:6], None) for r in rows])
    assert ranks_of(unpaired) == [("a", 1, 2, 1), ("b", 1, 2, 1)]
    base = np.random.default_rng(17).uniform(0, 1, 60)
    rows = [("d", "a", f"c{i % 3}", f"t{i}", f"a{i}", float(base[i]), None) for i in range(60)]
    rows += [
        ("d", "b", f"c{i % 3}", f"t{i}", f"b{i}", float(base[i] - gap[i]), None) for i in range(60)
    ]
    assert ranks_of(rows_frame(rows)) == [("a", 1, 1, 1), ("b", 2, 2, 2)]
    # ... and the overall scores' own intervals overlap: the pairing is what separates them
    intervals = score_intervals(rows_frame(rows)).filter(scope=OVERALL)
    assert intervals["ci_low"].max() < intervals["ci_high"].min()  # type: ignore[operator]


def close_models(seed: int) -> pl.DataFrame:
    """Six models of close ability (two pairs of equals), four tasks, 30 episodes each,
    partly on shared instances; model f lacks task t4 (the same categories all the same)."""
    shift = {"a": 0.12, "b": 0.1, "c": 0.05, "d": 0.05, "e": 0.0, "f": -0.1}
    frame = simulate(np.random.default_rng(seed), 1, models=tuple(shift), shift=shift)
    return frame.filter(~((pl.col("model") == "f") & (pl.col("task") == "t4")))


@pytest.mark.parametrize("design", ["two_level", WITHIN])
@pytest.mark.parametrize("level", [0.95, 0.8])
def test_rank_intervals_are_the_rank_sets_of_the_holm_verdicts(design: str, level: float) -> None:
    """From the night's overall comparisons, Holm's adjustment redone by statsmodels
    (``multipletests``) over the unordered pairs: ``rank_low`` = 1 + the models
    significantly better at ``1 - level``, ``rank_high`` = the models ranked - those
    significantly worse; ``rank_ub`` = 1 + the models the verdicts (Holm at 0.05) call
    better, whatever the level. Every interval holds the point rank."""
    frame = close_models(21)
    comparisons = model_comparisons(frame, design=design, level=level).filter(scope=OVERALL)
    ranks = rank_intervals(frame, design=design, level=level)  # type: ignore[arg-type]
    pairs = comparisons.filter(pl.col("model_a") < pl.col("model_b"))
    p_holm = adjusted(pairs["p_value"].to_numpy(), "holm")
    ahead: dict[tuple[str, str], float] = {}  # (better, worse): Holm's p of the pair
    for (a, b, diff), q in zip(
        pairs.select("model_a", "model_b", "diff").iter_rows(), p_holm, strict=True
    ):
        ahead[(a, b) if diff > 0 else (b, a)] = q
    n = ranks.height
    assert n == 6 and set(ranks["n_ranked"].to_list()) == {6}
    for row in ranks.iter_rows(named=True):
        model = row["model"]
        above = sum(q < 1 - level for (_, worse), q in ahead.items() if worse == model)
        below = sum(q < 1 - level for (better, _), q in ahead.items() if better == model)
        verdicts = sum(q < 0.05 for (_, worse), q in ahead.items() if worse == model)
        assert (row["rank_low"], row["rank_high"], row["rank_ub"]) == (
            1 + above,
            n - below,
            1 + verdicts,
        )
        assert row["rank_low"] <= row["group_rank"] <= row["rank_high"]
    spans = (ranks["rank_high"] - ranks["rank_low"]).to_list()
    assert min(spans) < n - 1 and max(spans) > 0, spans  # some statements, not all
    if level == 0.95:
        assert_frame_equal(
            ranks.select(pl.col("rank_low").alias("rank_ub")), ranks.select("rank_ub")
        )


@pytest.mark.parametrize("design", ["two_level", WITHIN])
def test_a_categorys_ranks_are_the_overall_ranks_of_its_episodes_alone(design: str) -> None:
    """Each category's rank and rank interval (``category_rank_intervals``) are what the
    overall ranks (``rank_intervals``: the same statements) give the category's episodes
    alone: its own Holm family, every model with a score in it (model f lacks a task of
    c2, and is ranked there all the same)."""
    from transforms.compare.pairs import comparisons_of
    from transforms.compare.ranks import category_rank_intervals

    frame = close_models(21)
    prep = prepare(frame, ["dump_date", "model"])
    comparisons = comparisons_of(prep, design=design)  # type: ignore[arg-type]
    per_category = category_rank_intervals(prep, comparisons)
    columns = ["model", "rank", "rank_low", "rank_high"]
    spans = 0
    for category in ("c1", "c2"):
        alone = rank_intervals(frame.filter(category=category), design=design)  # type: ignore[arg-type]
        want = alone.select("model", pl.col("group_rank").alias("rank"), "rank_low", "rank_high")
        got = per_category.filter(category=category).select(columns)
        assert_frame_equal(got.sort("model"), want.sort("model"))
        assert got.height == 6
        spans += int((got["rank_high"] > got["rank_low"]).sum())
    assert spans > 0  # some ranks uncertain: the statements are not all made


def test_rank_intervals_say_nothing_where_no_comparison_can() -> None:
    """One episode per task: with the tasks fixed no variance can be estimated and no
    model is significantly ahead: every rank interval is the whole group (the bootstrap of
    before drew nothing and reported every point rank as certain). The two-level design
    measures the tasks' spread: far-apart models are ranked."""
    rng = np.random.default_rng(18)
    rows = [
        ("d", m, f"c{t % 2}", f"t{t}", f"{m}{t}", float(rng.uniform(0, 1)) + shift, None)
        for m, shift in (("a", 0.6), ("b", 0.0), ("c", -0.6))
        for t in range(12)
    ]
    fixed = rank_intervals(rows_frame(rows), design=WITHIN)
    assert set(fixed.select("rank_low", "rank_high", "rank_ub").iter_rows()) == {(1, 3, 1)}
    sampled = rank_intervals(rows_frame(rows), design="two_level")
    assert sampled["rank_low"].to_list() == sampled["rank_high"].to_list() == [1, 2, 3]
    assert_frame_equal(
        sampled.select("model", "group_rank", "n_ranked"),
        fixed.select("model", "group_rank", "n_ranked"),
    )


def test_rank_intervals_of_two_nights_are_each_nights() -> None:
    frame = simulate(np.random.default_rng(17), 2, models=("a", "b", "c"), shared=3, alone=2)
    both = rank_intervals(frame)
    apart = pl.concat(
        rank_intervals(frame.filter(dump_date=night)) for night in ("2026-0000", "2026-0001")
    )
    assert_frame_equal(both, apart)


def test_rank_intervals_follow_the_score_weighting() -> None:
    frame = simulate(
        np.random.default_rng(15), 1, models=("a", "b", "c"), shift={"a": 0.3, "c": -0.3}
    )
    ranks = rank_intervals(frame)
    assert [
        (r["model"], r["group_rank"], r["rank_low"], r["rank_high"])
        for r in ranks.iter_rows(named=True)
    ] == [
        ("a", 1, 1, 1),
        ("b", 2, 2, 2),
        ("c", 3, 3, 3),
    ]


def test_significance_tiers() -> None:
    frame = simulate(
        np.random.default_rng(16),
        1,
        models=("a", "b", "c", "d"),
        shared=40,
        alone=0,
        shift={"a": 0.3, "b": 0.29, "c": 0.0, "d": -0.3},
    )
    # (two tasks a category: with the tasks fixed, where the verdicts these tiers need hold)
    tiers = significance_tiers(model_comparisons(frame, design=WITHIN))
    assert dict(zip(tiers["model"], tiers["tier"], strict=True)) == {"a": 1, "b": 1, "c": 2, "d": 3}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_two_unit_shortcut_equals_the_sum_over_clusters(seed: int) -> None:
    """Contrasts a - b take per-task sums (linear in the models); every other contrast the
    sum over clusters of the definition. Both on the same contrasts: the same variances."""
    from transforms.compare import pairs as pairing
    from transforms.compare import variance, variance_within
    from transforms.compare.preparation import prepare
    from transforms.exact import exactly

    frame = mixed_design(seed)
    prep = prepare(frame, ["dump_date", "model"])
    pairs = pairing.unordered_pairs(prep.scope_table(), ["dump_date"])
    contrasts = pairing.two_unit_contrasts(pairs, "__unit", "__unit_b")
    rows = contrasts.lazy().join(prep.weights.lazy(), on=["__unit", "scope"])
    assert variance._shapes(prep, contrasts)[:2] == (False, True)
    key = ["__cid", "__stratum"]
    fast = exactly(variance_within._pair_within(prep, rows).sort(key))[0]
    slow = exactly(variance_within._within(prep, rows).sort(key))[0].select(fast.columns)
    assert fast.height == slow.height >= pairs.height
    assert_frame_equal(fast, slow, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    assert fast["__var_within"].null_count() < fast.height and fast["n_pairs"].max() > 0  # type: ignore[operator]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_one_unit_shortcut_equals_the_sum_over_clusters(seed: int) -> None:
    """A score's own interval takes each unit's per-task sums of squares; the same variances
    as the sum over clusters of the definition."""
    from transforms.compare import variance, variance_within
    from transforms.compare.preparation import prepare
    from transforms.exact import exactly

    prep = prepare(mixed_design(seed), ["dump_date", "model"])
    table = prep.scope_table().with_row_index("__cid")
    contrasts = table.select("__cid", "__unit", pl.lit(1.0).alias("__coef"), "scope")
    rows = contrasts.lazy().join(prep.weights.lazy(), on=["__unit", "scope"])
    assert variance._shapes(prep, contrasts)[0]
    assert not variance._shapes(prep, pl.concat([contrasts, contrasts]))[0]
    key = ["__cid", "__stratum"]
    fast = exactly(variance_within._own_within(prep, rows).sort(key))[0]
    slow = exactly(variance_within._within(prep, rows).sort(key))[0].select(fast.columns)
    assert_frame_equal(
        fast, slow, check_exact=False, rel_tol=1e-12, abs_tol=1e-15, check_dtypes=False
    )


def test_comparisons_and_rank_intervals_prepared_once_equal_each_alone() -> None:
    from transforms.compare import comparisons_and_rank_intervals, rank_intervals, score_intervals

    frame = mixed_design(3)
    both = comparisons_and_rank_intervals(frame, level=0.9)
    assert_frame_equal(both.comparisons, model_comparisons(frame, level=0.9))
    assert_frame_equal(both.ranks, rank_intervals(frame, level=0.9))
    assert_frame_equal(both.intervals, score_intervals(frame, level=0.9))


def _large_night_cases() -> dict[str, object]:
    """Every entry point that prepares episodes, on nights with shared and lone episodes,
    several models, nights and tasks (one model missing a task)."""
    from transforms.compare import comparisons_and_rank_intervals

    rng = np.random.default_rng(31)
    nights = simulate(rng, nights=3, models=("a", "b", "c"), shared=6, alone=4)
    nights = nights.filter(~((pl.col("model") == "c") & (pl.col("task") == "t2")))
    last = nights.filter(pl.col("dump_date") == nights["dump_date"].max())
    # Every score moved a little, and a (last) enough to pass the others: ranks change.
    lift = pl.when(pl.col("model") == "a").then(0.3).otherwise(0.0)
    moved = last.with_columns(
        (pl.col("score") + 0.01 * pl.col("score").sin() + lift).alias("score")
    )
    return {
        "comparisons_and_rank_intervals": lambda: comparisons_and_rank_intervals(mixed_design(5)),
        "regressions": lambda: regressions(nights, baseline="mean", k=2),
        "rescore_significance": lambda: rescore_significance(last, moved),
        "rescore_rank_changes": lambda: rescore_rank_changes(last, moved),
    }


@pytest.mark.parametrize("entry", list(_large_night_cases()))
def test_a_large_night_digested_a_task_at_a_time_equals_one_pass(
    entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large night is prepared and its clusters paired a task at a time; a small one at
    once. The same bits either way."""
    from transforms.compare import preparation, variance_within

    at_once = _large_night_cases()[entry]()  # type: ignore[operator]
    monkeypatch.setattr(preparation, "ATOMS_AT_ONCE", 0)
    monkeypatch.setattr(variance_within, "ATOMS_AT_ONCE", 0)
    piecewise = _large_night_cases()[entry]()  # type: ignore[operator]
    tables = at_once if isinstance(at_once, tuple) else (at_once,)
    pieces = piecewise if isinstance(piecewise, tuple) else (piecewise,)
    assert all(table.height > 0 for table in tables)
    for table, piece in zip(tables, pieces, strict=True):
        assert_frame_equal(table, piece, check_exact=True)
